"""replay: kill -9 mid-run then resume equals an uninterrupted run; limit, frozen check, CLI wiring."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError, ManifestError
from seam_repro.generate.base import EchoBackend
from seam_repro.hashing import sha256_text
from seam_repro.manifest.prompts import check_prompt_records
from seam_repro.run.replay import iter_limit, run_generation

MANIFEST = {"digest": "a" * 64, "prompt_digest": "b" * 64, "frozen": True,
            "config": {"generation": {"temperature": 0.8, "max_new_tokens": 6, "do_sample": True, "top_p": None}}}
REPO = Path(__file__).resolve().parents[1]


def records(n: int = 20) -> list[dict]:
    out = []
    for ds, run in (("MultiNews", 0), ("MultiNews", 1), ("ECB", 0)):
        for i in range(n):
            prompt = f"{ds} {run} document {i} alpha beta gamma delta epsilon"
            out.append({"dataset": ds, "task": "x", "run": run, "instance_id": str(i), "prompt": prompt,
                        "prompt_sha256": sha256_text(prompt), "gen_seed": 7 * i + run})
    return out


def store_bytes(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes() for p in sorted((run_dir / "predictions").rglob("*.jsonl"))}


def count_lines(run_dir: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in (run_dir / "predictions").rglob("*.jsonl"))


CHILD = """
import json, sys
from pathlib import Path
from seam_repro.config import GenerationSettings
from seam_repro.generate.base import EchoBackend
from seam_repro.run.replay import run_generation
recs, manifest = json.loads(Path(sys.argv[1]).read_text())
run_generation(recs, EchoBackend(delay=float(sys.argv[3])), GenerationSettings(max_new_tokens=6), Path(sys.argv[2]),
               manifest, batch_size=2, progress=False)
"""


@pytest.mark.slow
def test_sigkill_then_resume_equals_uninterrupted(tmp_path: Path) -> None:
    recs = records()
    settings = GenerationSettings(max_new_tokens=6)
    reference = tmp_path / "reference"
    run_generation(recs, EchoBackend(), settings, reference, MANIFEST, batch_size=5, progress=False)
    inputs = tmp_path / "inputs.json"
    inputs.write_text(json.dumps([recs, MANIFEST]))
    killed = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(inputs), str(killed), "0.05"], env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (killed / "predictions").exists() and count_lines(killed) >= 8:
                break
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    done_before = count_lines(killed)
    assert 8 <= done_before < len(recs), "the child must have been killed mid-way"
    summary = run_generation(recs, EchoBackend(), settings, killed, MANIFEST, batch_size=3, progress=False)
    assert summary.already_done == done_before and summary.generated == len(recs) - done_before
    assert store_bytes(killed) == store_bytes(reference)
    again = run_generation(recs, EchoBackend(), settings, killed, MANIFEST, progress=False)
    assert again.generated == 0 and store_bytes(killed) == store_bytes(reference)
    assert len(json.loads((killed / "run.json").read_text())["sessions"]) == 3


def test_echo_output_depends_only_on_seed_and_prompt(tmp_path: Path) -> None:
    recs = records(5)
    a, b = tmp_path / "a", tmp_path / "b"
    run_generation(recs, EchoBackend(), GenerationSettings(max_new_tokens=6), a, MANIFEST, batch_size=1, progress=False)
    run_generation(list(reversed(recs)), EchoBackend(), GenerationSettings(max_new_tokens=6), b, MANIFEST,
                   batch_size=4, progress=False)
    lines_a = sorted(x for v in store_bytes(a).values() for x in v.splitlines())
    lines_b = sorted(x for v in store_bytes(b).values() for x in v.splitlines())
    assert lines_a == lines_b and len(lines_a) == 15


def test_limit_takes_first_n_of_every_dataset_run() -> None:
    limited = list(iter_limit(records(5), 2))
    assert [(r["dataset"], r["run"], r["instance_id"]) for r in limited] == [
        ("MultiNews", 0, "0"), ("MultiNews", 0, "1"), ("MultiNews", 1, "0"), ("MultiNews", 1, "1"),
        ("ECB", 0, "0"), ("ECB", 0, "1")]
    assert list(iter_limit(records(2), None)) == records(2)


def test_bad_prompt_records_are_named() -> None:
    recs = records(2)
    recs[1] = {**recs[1], "gen_seed": "7"}
    with pytest.raises(InputError, match="record 1: field 'gen_seed': missing or not a int"):
        check_prompt_records(recs)
    recs = records(2)
    recs[0] = {**recs[0], "prompt": "edited"}
    with pytest.raises(InputError, match="record 0: field 'prompt_sha256'"):
        check_prompt_records(recs)
    with pytest.raises(InputError, match="duplicate instance"):
        check_prompt_records(records(2) + records(2)[:1])


def test_generation_settings_validation() -> None:
    assert GenerationSettings.from_manifest(None) == GenerationSettings(0.8, 500, True, None, None, 3)
    smoke = {"temperature": 0.8, "do_sample": True, "max_new_tokens": 48, "top_p": None, "truncation": "max",
             "batch_size": 4}
    assert GenerationSettings.from_manifest(smoke) == GenerationSettings(0.8, 48, True, None, None, 4)
    assert GenerationSettings.from_manifest({"truncation": "2048"}).context_window == 2048
    assert "batch_size" not in GenerationSettings().as_dict()
    with pytest.raises(InputError, match="field 'config.generation.truncation'"):
        GenerationSettings.from_manifest({"truncation": "min"})
    assert GenerationSettings.from_manifest({"max_new_tokens": 8}).max_new_tokens == 8
    with pytest.raises(InputError, match="field 'config.generation.top_p'"):
        GenerationSettings.from_manifest({"top_p": 1.5}, source="m.json")
    with pytest.raises(InputError, match="unknown keys"):
        GenerationSettings.from_manifest({"top_k": 5})


@pytest.fixture
def fake_stages(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Stand-ins for the manifest/render stages, following their documented contract."""
    runs: dict[tuple[str, int], list] = {}
    for r in records(3):
        runs.setdefault((r["dataset"], r["run"]), []).append(
            {"id": r["instance_id"], "gen_seed": r["gen_seed"], "prompt_sha256": r["prompt_sha256"]})
    from seam_repro.hashing import digest_of_hashes

    run_list = [{"dataset": d, "run": k, "instances": v, "prompt_digest": digest_of_hashes(i["prompt_sha256"] for i in v)}
                for (d, k), v in runs.items()]
    every = digest_of_hashes(i["prompt_sha256"] for r in run_list for i in r["instances"])
    state = {"manifest": {**MANIFEST, "runs": run_list, "prompt_digest": every, "sources": {"prompts": {}, "data": {}}}}
    import seam_repro.manifest.format
    import seam_repro.manifest.prompts

    monkeypatch.setattr(seam_repro.manifest.format, "load_manifest", lambda path: state["manifest"])
    monkeypatch.setattr(seam_repro.manifest.format, "manifest_config", lambda m, where="": None)
    monkeypatch.setattr(seam_repro.manifest.prompts, "render_records", lambda m, **kw: records(3))
    return state


def test_cli_replay_echo_then_merge(tmp_path: Path, fake_stages: dict) -> None:
    from seam_repro.cli import cli

    manifest = tmp_path / "m.json"
    manifest.write_text("{}")
    runner = CliRunner()
    for k in range(2):
        result = runner.invoke(cli, ["replay", str(manifest), "--backend", "echo", "--out", str(tmp_path / f"s{k}"),
                                     "--shard", f"{k}/2", "--limit", "2"])
        assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["merge", str(tmp_path / "s0"), str(tmp_path / "s1"), "--out", str(tmp_path / "all")])
    assert result.exit_code == 0, result.output
    assert "echo: 6 predictions merged" in result.output
    lines = [json.loads(x) for p in (tmp_path / "all" / "predictions" / "echo").rglob("*.jsonl")
             for x in p.read_text().splitlines()]
    assert len(lines) == 6 and all(rec["generation"]["max_new_tokens"] == 6 for rec in lines)
    rj = json.loads((tmp_path / "s0" / "run.json").read_text())
    assert rj["manifest_digest"] == "a" * 64 and rj["limit"] == 2 and rj["shard"] == "0/2"
    assert rj["fingerprint"]["seam_repro"] and "platform" in rj["fingerprint"]


def test_an_unfrozen_manifest_is_refused_unless_allowed(tmp_path: Path, fake_stages: dict) -> None:
    from seam_repro.manifest.trust import load_trusted
    from seam_repro.run.replay import ReplayOptions, replay

    fake_stages["manifest"] = {**MANIFEST, "frozen": False}
    with pytest.raises(ManifestError, match="not frozen"):
        load_trusted(tmp_path / "m.json")
    summary = replay(load_trusted(tmp_path / "m.json", allow_unfrozen=True), tmp_path / "out",
                     ReplayOptions(backend="echo", allow_unfrozen=True, progress=False))
    assert summary.generated == 9


@pytest.mark.slow
def test_echo_replay_of_a_real_smoke_manifest(tmp_path: Path) -> None:
    """Integration with the sample/manifest/render stages on the bundled fixtures."""
    from seam_repro.cli import cli

    config, prompts_dir = REPO / "manifests" / "smoke.config.json", REPO / "manifests" / "fixtures" / "prompts"
    if not config.is_file() or not prompts_dir.is_dir():
        pytest.skip("smoke config or fixture prompts not in this checkout")
    runner = CliRunner()
    manifest = tmp_path / "smoke.json"
    result = runner.invoke(cli, ["sample", str(config), "-o", str(manifest), "--prompts-dir", str(prompts_dir)])
    assert result.exit_code == 0, result.output
    out = tmp_path / "run"
    args = ["replay", str(manifest), "--backend", "echo", "--out", str(out), "--prompts-dir", str(prompts_dir),
            "--limit", "1", "--no-score"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    prompts = [json.loads(x) for x in (out / "prompts.jsonl").read_text().splitlines()]
    preds = {(r["dataset"], r["run"], r["instance_id"]): r for p in (out / "predictions" / "echo").rglob("*.jsonl")
             for r in map(json.loads, p.read_text().splitlines())}
    assert len(prompts) == len(preds) > 0
    for p in prompts:
        rec = preds[(p["dataset"], p["run"], p["instance_id"])]
        assert rec["prompt_sha256"] == p["prompt_sha256"] and rec["seed"] == p["gen_seed"]
    rj = json.loads((out / "run.json").read_text())
    assert rj["manifest_digest"] == json.loads(manifest.read_text())["digest"] and rj["profile"] == "upstream"
    again = runner.invoke(cli, args)
    assert again.exit_code == 0 and "0 generated" in again.output


def test_cli_replay_scores_the_run_and_prints_its_table(tmp_path: Path) -> None:
    """Scoring after generation is the command's orchestration (run/replay only generates): each
    model's summary is written and named, then the results table is printed."""
    from trust_helpers import smoke_copy

    from seam_repro.cli import cli

    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["replay", str(smoke_copy(tmp_path)), "--backend", "echo", "--out", str(out),
                                      "--limit", "1", "--no-fic"])
    assert result.exit_code == 0, result.output
    summary = out / "scores" / "echo" / "summary.json"
    assert f"scores: {summary}" in result.output and summary.is_file()
    assert "| MusiQue | echo |" in result.output and "partial run (18 of 36 instances scored)" in result.output


@pytest.mark.parametrize("preferred", [None, 5])
def test_default_batch_size_is_the_backends_measured_best(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          preferred: int | None) -> None:
    """Without --batch-size, replay uses the backend's measured best for its device (the hf backend
    on CPU: CPU_BATCH_SIZE); a backend without one gets the manifest's batch_size (smoke: 4)."""
    import seam_repro.generate as generate
    from seam_repro.manifest.trust import load_trusted
    from seam_repro.run.replay import ReplayOptions, replay

    class Measured(EchoBackend):
        def default_batch_size(self, settings: GenerationSettings) -> int:
            return preferred or super().default_batch_size(settings)

    monkeypatch.setattr(generate, "make_backend", lambda *a, **k: Measured())
    out = tmp_path / "run"
    replay(load_trusted(REPO / "manifests" / "smoke.json"), out, ReplayOptions(backend="echo", limit=1, progress=False))
    models = json.loads((out / "run.json").read_text())["models"]
    assert [m["batch_size"] for m in models.values()] == [preferred or 4]


def test_hf_backend_prefers_the_measured_cpu_batch_size() -> None:
    from types import SimpleNamespace

    from seam_repro.generate.hf import CPU_BATCH_SIZE, HFBackend

    def backend(device: str, deterministic: bool = False) -> HFBackend:
        model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=8192), device=device,
                                generation_config=SimpleNamespace(eos_token_id=2))
        if deterministic:
            model.set_attn_implementation = lambda name: None
        return HFBackend(model, SimpleNamespace(pad_token_id=None, eos_token_id=2), "m", "r",
                         deterministic=deterministic)

    settings = GenerationSettings(batch_size=3)
    assert backend("cpu").default_batch_size(settings) == CPU_BATCH_SIZE == 8
    assert backend("cuda:0").default_batch_size(settings) == 3
    # deterministic: one lane, whatever the manifest says (a larger batch changes nothing)
    assert backend("cpu", True).default_batch_size(settings) == 8
    assert backend("cuda:0", True).default_batch_size(settings) == 32


def test_every_backend_names_its_default_batch_size() -> None:
    """replay asks the backend (no duck typing): served backends send BATCH_WAVES waves of their
    concurrency per batch (the manifest's size if larger), vLLM and echo take the manifest's, import
    takes everything in one batch."""
    from seam_repro.generate.openai_compat import OpenAIBackend
    from seam_repro.generate.vllm import VLLMBackend
    from seam_repro.run.importer import ImportBackend

    settings = GenerationSettings(batch_size=3)
    served = OpenAIBackend("m", "r", "http://127.0.0.1:9", concurrency=8)
    assert served.default_batch_size(settings) == 8 * 4
    assert OpenAIBackend("m", "r", "http://127.0.0.1:9", concurrency=2).default_batch_size(settings) == 8
    assert OpenAIBackend("m", "r", "http://127.0.0.1:9", concurrency=2).default_batch_size(
        GenerationSettings(batch_size=9)) == 9
    assert EchoBackend().default_batch_size(settings) == 3
    assert VLLMBackend.default_batch_size(object.__new__(VLLMBackend), settings) == 3
    assert ImportBackend("m", "r", {("D", 0, str(i)): None for i in range(5)}).default_batch_size(settings) == 5
