"""Local model folders: content revision, pinning, resume check, --model-args, and a tiny random
transformers model that replays the shipped smoke manifest, scores, submits and shows up in a report
under its display name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from tiny_models import TEMPLATE, save_tiny_llama

from seam_repro.errors import InputError, PredictionsError
from seam_repro.generate.local import folder_revision, is_local_spec, resolve_local
from seam_repro.hashing import sha256_file, sha256_text

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "manifests" / "smoke.json"


def fake_folder(root: Path) -> Path:
    root.mkdir()
    (root / "config.json").write_text('{"model_type": "llama"}')
    (root / "model.safetensors").write_bytes(b"\x00" * 64)
    (root / "tokenizer.json").write_text("{}")
    (root / "README.md").write_text("notes")
    return root


def test_revision_covers_weights_config_tokenizer_only(tmp_path: Path) -> None:
    folder = fake_folder(tmp_path / "m")
    first = folder_revision(folder)
    assert set(first.files) == {"config.json", "model.safetensors", "tokenizer.json"}
    # independent recomputation of the documented rule
    lines = "".join(f"{n}\t{sha256_file(folder / n)}\n" for n in sorted(first.files))
    assert first.revision == "sha256:" + sha256_text(lines)
    assert first.model_id == "local/m"
    (folder / "README.md").write_text("other notes")
    assert folder_revision(folder).revision == first.revision
    (folder / "model.safetensors").write_bytes(b"\x01" + b"\x00" * 63)
    assert folder_revision(folder).revision != first.revision
    (folder / "model.safetensors").write_bytes(b"\x00" * 64)
    (folder / "tokenizer.json").write_text('{"x": 1}')
    assert folder_revision(folder).revision != first.revision


def test_specs_pins_and_bad_folders(tmp_path: Path) -> None:
    folder = fake_folder(tmp_path / "m")
    rev = folder_revision(folder).revision
    assert is_local_spec(str(folder)) and is_local_spec(f"{folder}@local") and not is_local_spec("org/model")
    assert resolve_local(f"{folder}@{rev}").revision == rev
    assert resolve_local(f"{folder}@local").revision == rev
    with pytest.raises(InputError, match="not the pinned sha256:00"):
        resolve_local(f"{folder}@sha256:{'0' * 64}")
    (folder / "model.safetensors").unlink()
    with pytest.raises(InputError, match="no weight files"):
        folder_revision(folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="expected a model folder with config.json"):
        folder_revision(empty)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 1-layer random Llama with a 300-token byte-level BPE tokenizer, saved like any fine-tune."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    torch.set_num_threads(1)  # 2 shared cores: intra-op threads oversubscribe
    return save_tiny_llama(tmp_path_factory.mktemp("tiny") / "tiny-llama",
                           ["the answer is a summary of the documents", "question: who wrote it?"],
                           vocab=300, hidden=16, intermediate=32, layers=1, heads=2, kv_heads=1)


@pytest.mark.slow
@pytest.mark.skipif(not SMOKE.is_file(), reason="shipped smoke manifest not in this checkout")
def test_local_folder_replays_scores_submits_and_reports_by_name(tiny_model: Path, tmp_path: Path) -> None:
    from seam_repro.cli import cli

    runner = CliRunner()
    out = tmp_path / "run"
    tpl = tmp_path / "template.jinja"
    tpl.write_text("Q: " + TEMPLATE)  # an override that differs from the folder's own template
    args = ["replay", str(SMOKE), "--model", str(tiny_model), "--name", "Tiny local model", "--out", str(out),
            "--no-fic", "--model-args", f"max_length=512,attn_implementation=eager,chat_template={tpl},device_map=cpu"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    rev = folder_revision(tiny_model).revision
    rj = json.loads((out / "run.json").read_text())
    entry = rj["models"]["local__tiny-llama"]
    assert entry["id"] == "local/tiny-llama" and entry["revision"] == rev and entry["name"] == "Tiny local model"
    assert entry["backend"]["local_folder"]["path"] == str(tiny_model.resolve())
    assert entry["backend"]["context_length"] == 512 and entry["backend"]["attn_implementation"] == "eager"
    assert entry["model_args"]["chat_template"] == {"file": str(tpl), "sha256": sha256_file(tpl)}
    assert entry["backend"]["chat_template_sha256"] == sha256_text(tpl.read_text())
    assert entry["generation"]["model_args"] == {"attn_implementation": "eager",
                                                 "chat_template": entry["model_args"]["chat_template"],
                                                 "max_model_len": 512}
    assert rj["fingerprint"]["model_args"]["device_map"] == "cpu"
    preds = [json.loads(x) for p in out.rglob("run_*.jsonl") for x in p.read_text().splitlines()]
    assert len(preds) == 36 and all(p["model"] == {"id": "local/tiny-llama", "revision": rev} for p in preds)
    assert all(p["truncated"] and p["n_prompt_tokens"] == 512 - p["generation"]["max_new_tokens"] for p in preds)

    bundle = tmp_path / "tiny.bundle.json"
    result = runner.invoke(cli, ["submit", str(out), "--out", str(bundle)])
    assert result.exit_code == 0, result.output
    assert json.loads(bundle.read_text())["model"]["name"] == "Tiny local model"
    for source in (out, bundle):
        rep = tmp_path / f"report-{source.name}"
        result = runner.invoke(cli, ["report", str(source), "--out", str(rep)])
        assert result.exit_code == 0, result.output
        md = "".join(p.read_text() for p in rep.glob("*.md"))
        assert "Tiny local model" in md and str(tiny_model) not in md

    # a protocol model arg is part of the generation settings: resuming with another one is refused
    other = runner.invoke(cli, [a.replace("max_length=512", "max_length=256") for a in args])
    assert isinstance(other.exception, PredictionsError) and \
        "generation.model_args.max_model_len was 512, now 256" in str(other.exception)
    # a changed folder is a different revision: resuming into the run dir is refused
    (tiny_model / "generation_config.json").write_text(json.dumps({"do_sample": True, "top_k": 5}))
    try:
        again = runner.invoke(cli, args)
    finally:
        (tiny_model / "generation_config.json").unlink()
    assert isinstance(again.exception, PredictionsError) and "revision" in str(again.exception)


@pytest.mark.slow(seconds=30)
def test_gguf_only_folder_loads_and_generates(tmp_path: Path) -> None:
    """A folder holding just a .gguf (here a link to the embedded SmolLM2 file) is a local model too."""
    pytest.importorskip("gguf")
    from seam_repro.config import GenerationSettings
    from seam_repro.errors import PrerequisiteError
    from seam_repro.generate import make_backend
    from seam_repro.generate.base import GenerationRequest
    from seam_repro.generate.embedded import PIN, find_gguf

    try:
        gguf = find_gguf()
    except PrerequisiteError as exc:
        pytest.skip(str(exc))
    folder = tmp_path / "smol-gguf"
    folder.mkdir()
    (folder / gguf.name).symlink_to(gguf)
    backend = make_backend("hf", str(folder), model_args="device_map=cpu,max_model_len=512")
    assert backend.model_id == "local/smol-gguf"
    assert folder_revision(folder).files == {gguf.name: PIN["gguf_sha256"]}
    out = backend.generate([GenerationRequest("D", 0, "0", "Say hi.", "", 7)], GenerationSettings(max_new_tokens=3))
    assert 0 < out[0].n_output_tokens <= 3 and backend.context_length == 512
    # the embedded backend reads the GGUF's cached conversion: the same weights, tokenizer and
    # template as transformers' direct GGUF load above (an independent path: no cache involved)
    import torch

    embedded = make_backend("hf", None)
    direct, cached = backend.model.state_dict(), embedded.model.state_dict()
    assert direct.keys() == cached.keys() and all(torch.equal(direct[k], cached[k]) for k in direct)
    assert embedded.model.lm_head.weight.data_ptr() == embedded.model.model.embed_tokens.weight.data_ptr()
    assert embedded.tokenizer.chat_template == backend.tokenizer.chat_template
    text = "Say hi <|im_start|> wörld \U0001F600\n\n\ttabs"
    assert embedded.tokenizer(text)["input_ids"] == backend.tokenizer(text)["input_ids"]
    assert embedded.model.generation_config.to_dict() == backend.model.generation_config.to_dict()


def test_a_damaged_or_foreign_conversion_is_not_used(tmp_path: Path) -> None:
    """The cached conversion is used only when its record names this GGUF and these library
    versions and every file still has its recorded sha256; anything else is converted again."""
    from seam_repro.files.atomic import atomic_write_json
    from seam_repro.generate.embedded import CONVERSION_FILE, _intact
    from seam_repro.hashing import sha256_file

    folder = tmp_path / "conv"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights")
    key = {"gguf_sha256": "ab" * 32, "transformers": "5", "gguf": "0.19"}
    atomic_write_json(folder / CONVERSION_FILE, {"key": key, "files": {"model.safetensors":
                                                                        sha256_file(folder / "model.safetensors")}})
    assert _intact(folder, key)
    assert not _intact(folder, {**key, "transformers": "6"})  # another converter
    (folder / "model.safetensors").write_bytes(b"weightz")
    assert not _intact(folder, key)  # damaged
    (folder / "model.safetensors").unlink()
    assert not _intact(folder, key)  # missing
    (folder / CONVERSION_FILE).write_text("{not json", "utf-8")
    assert not _intact(tmp_path / "conv", key)
    assert not _intact(tmp_path / "absent", key)


# -- damaged weights: one line naming the file, exit 2 (issue 28 part 3) -----------------------------------

def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def _main_exit(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from seam_repro.cli import main

    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else int(exc.code)
    return code, capsys.readouterr().err


def _damage(folder: Path, how: str) -> Path:
    weights = folder / "model.safetensors"
    if how == "truncated":
        data = weights.read_bytes()
        weights.write_bytes(data[: len(data) - 1000])
    elif how == "appended":
        with open(weights, "ab") as f:
            f.write(b"\0" * 16)
    elif how == "header-cut":
        weights.write_bytes(weights.read_bytes()[:100])
    elif how == "dangling":
        weights.unlink()
        weights.symlink_to(folder / "moved-away.safetensors")
    elif how == "loop":
        weights.unlink()
        weights.symlink_to(weights)
    elif how == "missing-shard":
        (folder / "model.safetensors.index.json").write_text(json.dumps(
            {"metadata": {}, "weight_map": {"lm_head.weight": "model-00002-of-00002.safetensors"}}))
    return weights


@pytest.mark.parametrize(("how", "problem"), [
    ("truncated", r"truncated: the file holds \d+ bytes, its header describes \d+"),
    ("appended", r"16 bytes follow the tensors its header describes"),
    ("header-cut", r"truncated or not safetensors \(100 bytes; its header length field reads \d+\)"),
    ("dangling", r"a symbolic link to '.*moved-away.safetensors', which does not exist"),
    ("loop", r"a symbolic link to '.*model.safetensors', which does not exist \(or is a loop\)"),
    ("missing-shard", r"names 1 shard\(s\) the folder lacks, first 'model-00002-of-00002.safetensors'"),
])
def test_damaged_safetensors_are_refused_before_loading(tiny_model: Path, tmp_path: Path, how: str,
                                                        problem: str) -> None:
    """Before: SafetensorError / a missing-shard OSError from deep inside the load (exit 70), or a
    dangling link silently skipped."""
    from seam_repro.generate import make_backend

    folder = _copy(tiny_model, tmp_path / "m")
    weights = _damage(folder, how)
    with pytest.raises(InputError) as err:
        make_backend("hf", str(folder), model_args="device_map=cpu")
    named = folder / "model.safetensors.index.json" if how == "missing-shard" else weights
    assert str(err.value).startswith(f"{named}: --model: ") and "\n" not in str(err.value)
    assert re.search(problem, str(err.value)), str(err.value)


@pytest.mark.skipif(not SMOKE.is_file(), reason="shipped smoke manifest not in this checkout")
def test_a_truncated_model_is_one_line_exit_2_on_the_command_line(tiny_model: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(tiny_model, tmp_path / "m")
    _damage(folder, "truncated")
    code, err = _main_exit(["replay", str(SMOKE), "--model", str(folder), "--out", str(tmp_path / "run"),
                            "--limit", "1", "--no-score"], capsys)
    assert code == 2 and err.startswith(f"error: {folder / 'model.safetensors'}: --model: truncated") and \
        err.count("\n") == 1, err


def test_a_folder_the_library_cannot_load_is_one_line(tiny_model: Path, tmp_path: Path) -> None:
    """What no header check catches (here a tokenizer.json cut short) fails inside transformers; for a
    local folder that is mapped to one line naming the folder, not an internal error."""
    from seam_repro.generate import make_backend

    folder = _copy(tiny_model, tmp_path / "m")
    tok = folder / "tokenizer.json"
    tok.write_text(tok.read_text()[:500])
    with pytest.raises(InputError, match=rf"^{re.escape(str(folder))}: --model: cannot load the model \(\w+: .*\); "
                                         r"expected complete files"):
        make_backend("hf", str(folder), model_args="device_map=cpu")


@pytest.mark.slow
def test_a_truncated_gguf_names_the_file(tmp_path: Path) -> None:
    """A GGUF file has no cheap header check; the library's failure is mapped to one line naming it."""
    pytest.importorskip("gguf")
    from seam_repro.errors import PrerequisiteError
    from seam_repro.generate import make_backend
    from seam_repro.generate.embedded import find_gguf

    try:
        gguf = find_gguf()
    except PrerequisiteError as exc:
        pytest.skip(str(exc))
    folder = tmp_path / "smol-gguf"
    folder.mkdir()
    with open(gguf, "rb") as src:
        (folder / gguf.name).write_bytes(src.read(gguf.stat().st_size // 2))
    with pytest.raises(InputError, match=rf"^{re.escape(str(folder / gguf.name))}: --model: cannot load the model"):
        make_backend("hf", str(folder), model_args="device_map=cpu")
