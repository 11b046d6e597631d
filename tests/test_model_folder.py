"""Issue 34, real model folders and a new user's first minutes: a base model without a chat template
(refused in one line naming ``chat_template=``; with the shipped raw.jinja it runs and records it), a
folder missing its tokenizer (named before anything loads), a mistyped path (said first), a failed
first start that must not block a corrected retry (and a refusal that names the field), a second
model in one run folder (said at replay time), the replay progress bar (no clamp warning, no
negative ETA, one label) and Ctrl-C before anything was stored, and "did you mean" for datasets."""

from __future__ import annotations

import json
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
from tiny_models import save_tiny_llama

from seam_repro.cli import main
from seam_repro.errors import InputError, PredictionsError

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "manifests" / "smoke.json"


def _cli(*args: str) -> int:
    try:
        main(list(args))
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.fixture(scope="module")
def base_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama whose tokenizer has no chat template, as a base model's has none."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    torch.set_num_threads(1)
    folder = save_tiny_llama(tmp_path_factory.mktemp("base") / "tiny-base",
                             ["the answer is a summary of the documents", "question: who wrote it?"],
                             vocab=300, hidden=16, intermediate=32, layers=1, heads=2, kv_heads=1)
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    cfg = json.loads((folder / "tokenizer_config.json").read_text("utf-8"))
    cfg.pop("chat_template", None)
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg), "utf-8")
    return folder


def _replay_args(model: Path | str, out: Path, *extra: str) -> list[str]:
    return ["replay", str(SMOKE), "--model", str(model), "--out", str(out), "--datasets", "MusiQue", "--runs", "0",
            "--limit", "1", "--max-new-tokens", "3", "--no-fic", "--no-report", *extra]


def test_base_model_without_chat_template(base_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from seam_repro.generate.model_folder import raw_template_path

    out = tmp_path / "run"
    capsys.readouterr()
    assert _cli(*_replay_args(base_model, out)) == 2  # a one-line refusal, not exit 70
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no chat template" in err and "chat_template=" in err, err
    assert str(raw_template_path()) in err
    assert not (out / "run.json").exists()  # nothing a retry would be held to
    # the corrected retry into the same --out: the raw template, recorded like any template
    raw = raw_template_path()
    assert _cli(*_replay_args(base_model, out, "--model-args", f"chat_template={raw},device_map=cpu")) == 0
    entry = json.loads((out / "run.json").read_text("utf-8"))["models"]["local__tiny-base"]
    assert entry["model_args"]["chat_template"]["file"] == str(raw)
    preds = [json.loads(x) for p in out.rglob("run_*.jsonl") for x in p.read_text().splitlines()]
    assert len(preds) == 1


def test_raw_template_passes_the_prompt_unchanged(base_model: Path) -> None:
    from transformers import AutoTokenizer

    from seam_repro.generate.model_folder import raw_template_path

    tok = AutoTokenizer.from_pretrained(base_model)
    tok.chat_template = raw_template_path().read_text("utf-8")
    text = tok.apply_chat_template([{"role": "user", "content": "Q: who?\nA:"}], tokenize=False,
                                   add_generation_prompt=True)
    assert text == "Q: who?\nA:"


def test_hub_tokenizer_without_template_is_refused_after_the_tokenizer_loads() -> None:
    from seam_repro.generate.model_folder import check_tokenizer_template

    class Tok:
        chat_template = None

    with pytest.raises(InputError, match="no chat template.*chat_template="):
        check_tokenizer_template(Tok(), "org/base", None)
    check_tokenizer_template(Tok(), "org/base", "x.jinja")  # an override is given: fine


def test_missing_tokenizer_named_before_loading(base_model: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "no-tok"
    shutil.copytree(base_model, folder)
    (folder / "tokenizer.json").unlink()
    capsys.readouterr()
    start = time.perf_counter()
    assert _cli(*_replay_args(folder, tmp_path / "run")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(folder / "tokenizer.json") in err and "missing" in err, err
    assert time.perf_counter() - start < 30
    bpe = tmp_path / "bpe"  # GPT-2 style: vocab.json without merges.txt names merges.txt
    shutil.copytree(folder, bpe)
    (bpe / "vocab.json").write_text("{}")
    assert _cli(*_replay_args(bpe, tmp_path / "run2")) == 2
    assert str(bpe / "merges.txt") in capsys.readouterr().err


def test_a_mistyped_path_is_said_first(base_model: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(base_model.parent)
    capsys.readouterr()
    assert _cli(*_replay_args("./tiny-bsae", tmp_path / "run")) == 2
    err = capsys.readouterr().err.strip()
    assert "no such folder" in err and "did you mean tiny-base" in err and "pinned revision" not in err, err
    from seam_repro.generate import parse_model_spec

    with pytest.raises(InputError, match="no such folder"):
        parse_model_spec("/nowhere/at/all")
    assert parse_model_spec("org/name@" + "a" * 40)[0] == "org/name"  # a Hub id is not a path


def test_a_run_with_no_prediction_does_not_block_a_corrected_retry(tmp_path: Path) -> None:
    from seam_repro.run.store import prepare_run_dir

    manifest = {"digest": "d" * 64, "prompt_digest": "p" * 64, "profile": "upstream"}
    prompts = [{"dataset": "MusiQue", "run": 0, "instance_id": "a", "prompt": "x", "prompt_sha256": "0" * 64}]

    def entry(temp: float) -> dict[str, Any]:
        return {"id": "m", "revision": "r", "backend_name": "hf", "generation": {"temperature": temp, "top_p": 1.0}}

    run = tmp_path / "run"
    prepare_run_dir(run, manifest=manifest, prompts=prompts, model_entry=entry(0.8), session={}, extra={"limit": 1})
    # the first start stored nothing: another --limit and other settings start it again
    got = prepare_run_dir(run, manifest=manifest, prompts=prompts, model_entry=entry(0.0), session={},
                          extra={"limit": 2})
    assert got["models"]["m"]["generation"]["temperature"] == 0.0 and got["limit"] == 2
    pred = run / "predictions" / "m" / "MusiQue" / "run_0.jsonl"
    pred.parent.mkdir(parents=True)
    pred.write_text('{"x": 1}\n')
    with pytest.raises(PredictionsError) as exc:
        prepare_run_dir(run, manifest=manifest, prompts=prompts, model_entry=entry(0.5), session={},
                        extra={"limit": 2})
    msg = str(exc.value)
    assert "generation.temperature was 0.0, now 0.5" in msg and "new --out" in msg and "top_p" not in msg


def test_second_model_in_one_run_folder_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    base = ["replay", str(SMOKE), "--backend", "echo", "--out", str(out), "--limit", "1", "--no-score"]
    assert _cli(*base) == 0
    first = capsys.readouterr()
    assert "holds" not in first.out + first.err
    assert _cli(*base, "--model", "other-echo") == 0
    second = capsys.readouterr()
    err = second.out + second.err
    assert "now holds 2 models" in err and "--model other-echo" in err, err


def test_progress_bar_counts_exactly_with_one_label(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend that moves the bar per decoding step (hf) over batches of 5 and 7 new tokens:
    fractions of 5/7 drift past the total without the snap at each batch."""
    import seam_repro.run.progress as progress
    from seam_repro.generate.base import EchoBackend
    from seam_repro.manifest.prompts import render_records
    from seam_repro.manifest.trust import load_trusted
    from seam_repro.run.replay import override_settings, run_generation

    class Stepping(EchoBackend):
        step_hook = None

        def generate(self, requests: Any, settings: Any) -> Any:
            for _ in range(settings.max_new_tokens):
                if self.step_hook is not None:
                    self.step_hook()
            return super().generate(requests, settings)

    monkeypatch.setattr(progress, "_tty", lambda: True)
    monkeypatch.setattr("seam_repro.verbosity.progress_wanted", lambda enabled: True)
    tm = load_trusted(SMOKE)
    settings, _ = override_settings(tm.manifest["config"]["generation"], {"max_new_tokens": 7}, "t")
    records = list(render_records(tm))
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_generation(records, Stepping(), settings, tmp_path / "run", tm.manifest, batch_size=5, progress=True)
    err = capsys.readouterr().err
    assert [str(w.message) for w in caught if "clamping" in str(w.message)] == []
    assert "<-" not in err and "echo:echo" not in err and "echo:" in err


def test_ctrl_c_before_the_first_batch_says_nothing_was_stored(tmp_path: Path) -> None:
    from seam_repro.commands.replay import interrupted_note

    note = interrupted_note(tmp_path / "never-created")
    assert "no prediction was stored yet" in note and "kept in" not in note
    pred = tmp_path / "run" / "predictions" / "m" / "MusiQue" / "run_0.jsonl"
    pred.parent.mkdir(parents=True)
    pred.write_text('{"a": 1}\n{"a": 2}\n')
    assert interrupted_note(tmp_path / "run").startswith("2 predictions kept in ")


def test_unknown_dataset_offers_did_you_mean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert _cli("replay", str(SMOKE), "--backend", "echo", "--out", str(tmp_path / "r"), "--datasets", "MuSiQeu") == 2
    err = capsys.readouterr().err
    assert "did you mean MuSiQue?" in err and "expected one of" in err
