"""What a user chooses at run time (issue 26): ``replay --datasets/--runs`` (a partial run, like
``--limit``), generation overrides (a protocol difference, like any other), ``--batch-size auto``,
``-q``/``-v``, the run's replay.log and ``--no-report``; and dataset names in any spelling."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import pytest
from trust_helpers import smoke_copy

from seam_repro.cli import main
from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError
from seam_repro.generate.base import EchoBackend, GenerationRequest
from seam_repro.hashing import sha256_text


class Result(NamedTuple):
    code: int
    out: str
    err: str


def run_cli(args: list[Any], capsys: pytest.CaptureFixture[str]) -> Result:
    capsys.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else int(exc.code) if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


@pytest.fixture()
def smoke(tmp_path: Path) -> Path:
    return smoke_copy(tmp_path)


def echo_replay(smoke: Path, out: Path, capsys: pytest.CaptureFixture[str], *extra: Any,
                before: tuple[str, ...] = ()) -> Result:
    return run_cli([*before, "replay", smoke, "--backend", "echo", "--out", out, "--no-fic", *extra], capsys)


# -- --datasets / --runs: a partial run, as --limit makes one ------------------------------------------
def test_datasets_and_runs_choose_what_runs_and_mark_the_run_partial(smoke: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "part"
    res = echo_replay(smoke, out, capsys, "--datasets", "MuSiQue,ecb", "--runs", "0,2-2")
    assert res.code == 0, res.err
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["selection"] == {"datasets": ["MusiQue", "ECB"], "runs": [0, 2]}
    stored = [json.loads(line) for p in sorted((out / "predictions").rglob("*.jsonl")) for line in p.open()]
    assert {(r["dataset"], r["run"]) for r in stored} == {("MusiQue", 0), ("MusiQue", 2), ("ECB", 0), ("ECB", 2)}
    summary = json.loads((out / "scores" / "echo" / "summary.json").read_text())
    assert summary["coverage"]["partial"] and summary["protocol"]["partial"]
    why = "not replayed (--datasets MusiQue,ECB --runs 0,2)"
    assert summary["datasets"]["SciCo"]["reason"] == why
    assert {u["reason"] for u in summary["unscored"]} == {why}
    assert "partial run" in res.out  # the results table says so, as for --limit
    bundle = run_cli(["submit", out, "--out", tmp_path / "b.json"], capsys)
    assert bundle.code == 0, bundle.err
    assert json.loads((tmp_path / "b.json").read_text())["partial"] is True
    assert "(--datasets MusiQue,ECB --runs 0,2)" in bundle.err
    diff = run_cli(["diff", out, "--reference", "paper"], capsys)
    assert diff.code == 3 and "instances: partial (8 of 36 scored)" in diff.out


def test_a_changed_selection_is_refused_on_resume(smoke: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "part"
    assert echo_replay(smoke, out, capsys, "--datasets", "SciCo", "--no-score").code == 0
    res = echo_replay(smoke, out, capsys, "--datasets", "SciCo,ECB", "--no-score")
    assert res.code == 2 and "use a new --out directory" in res.err


@pytest.mark.parametrize(("args", "expected"), [
    (["--datasets", "MuSiQu"], "--datasets: field 'datasets': unknown dataset 'MuSiQu' in suite 'seam'; did you mean "
                               "MuSiQue? expected one "
                               "of ECB+, FuseReviews, SciCo, MultiNews, MuSiQue, OpenASP (any case)"),
    (["--datasets", "MuSiQue,,ECB"], "expected comma-separated dataset names"),
    (["--runs", "0,5"], "--runs: expected comma-separated run indices or ranges in 0..2, such as 0,3-5, got '5'"),
    (["--runs", "2-1"], "got '2-1'"),
    (["--runs", "x"], "got 'x'"),
])
def test_a_bad_selection_is_one_line_and_writes_nothing(smoke: Path, tmp_path: Path, args: list[str], expected: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bad"
    res = echo_replay(smoke, out, capsys, *args)
    assert res.code == 2 and expected in res.err and res.err.count("\n") == 1, res.err
    assert not (out / "run.json").exists()


# -- generation overrides: recorded, and a protocol difference everywhere -------------------------------
def test_generation_overrides_are_recorded_and_marked_as_a_protocol_difference(
        smoke: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paper, mine = tmp_path / "paper", tmp_path / "mine"
    assert echo_replay(smoke, paper, capsys, "--limit", "1").code == 0
    res = echo_replay(smoke, mine, capsys, "--limit", "1", "--max-new-tokens", "8", "--temperature", "0",
                      "--top-p", "0.9", "--model", "greedy")
    assert res.code == 0, res.err
    entry = json.loads((mine / "run.json").read_text())["models"]["greedy"]
    assert entry["generation"]["overrides"] == {"do_sample": False, "max_new_tokens": 8, "temperature": 0.0,
                                                "top_p": 0.9}
    assert entry["generation"]["max_new_tokens"] == 8 and entry["generation"]["do_sample"] is False
    line = json.loads(next((mine / "predictions").rglob("*.jsonl")).open().readline())
    assert line["generation"]["overrides"]["max_new_tokens"] == 8  # travels with every prediction
    assert "overrides" not in json.loads((paper / "run.json").read_text())["models"]["echo"]["generation"]
    # report without a reference compares with the first input: the overridden run is marked ‡
    rep = run_cli(["report", paper, mine, "--out", tmp_path / "report"], capsys)
    assert rep.code == 0, rep.err
    text = (tmp_path / "report" / "report.md").read_text()
    assert "generation overrides: do_sample=False, max_new_tokens=8, temperature=0.0, top_p=0.9 vs none" in text
    diff = run_cli(["diff", mine, "--reference", "paper"], capsys)
    assert diff.code == 3 and "generation overrides: do_sample=False" in diff.out


def test_overrides_are_checked_by_the_manifests_rules() -> None:
    from seam_repro.run.replay import override_settings

    settings, given = override_settings({"temperature": 0.8, "max_new_tokens": 500}, {"top_p": None}, "m.json")
    assert given == {} and settings == GenerationSettings.from_manifest({"temperature": 0.8, "max_new_tokens": 500})
    with pytest.raises(InputError, match=r"m.json with --top-p 1.5: field 'config.generation.top_p'"):
        override_settings({}, {"top_p": 1.5}, "m.json")


# -- --batch-size auto ---------------------------------------------------------------------------------
def test_batch_size_auto_without_a_memory_probe_takes_the_backends_default_and_says_so(
        smoke: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "auto"
    res = echo_replay(smoke, out, capsys, "--limit", "1", "--batch-size", "auto", "--no-score")
    assert res.code == 0, res.err
    assert "--batch-size auto: 4 (echo: 4, the backend's default" in res.err
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["models"]["echo"]["batch_size"] == 4
    assert "the backend's default" in run_json["sessions"][-1]["batch_size_auto"]
    bad = echo_replay(smoke, tmp_path / "bad", capsys, "--batch-size", "most")
    assert bad.code == 2 and "expected an integer >= 1 or 'auto', got 'most'" in bad.err


class FakeTokenizer:
    pad_token_id, eos_token_id, padding_side, chat_template = 0, 2, "left", None

    def apply_chat_template(self, msgs: list[dict[str, str]], **_: Any) -> str:
        return msgs[0]["content"]

    def __call__(self, text: str, **_: Any) -> dict[str, list[int]]:
        return {"input_ids": [3] * len(text.split())}


def fake_backend(device: str, fits: int = 0) -> Any:
    """An HFBackend whose model reports ``device`` and, on a forward pass of more than ``fits`` rows,
    raises what torch raises when the GPU cannot hold them."""
    torch = pytest.importorskip("torch")
    from seam_repro.generate.hf import HFBackend

    class Model:
        config = SimpleNamespace(max_position_embeddings=4096)
        generation_config = SimpleNamespace(eos_token_id=2)
        tried: list[tuple[int, int]] = []

        def __init__(self) -> None:
            self.device = torch.device(device)

        def __call__(self, input_ids: Any, **_: Any) -> None:
            self.tried.append(tuple(input_ids.shape))
            if input_ids.shape[0] > fits:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    return HFBackend(Model(), FakeTokenizer(), "m", "r", deterministic=False)  # the default mode probes memory


def requests(n: int) -> list[GenerationRequest]:
    texts = [" ".join(["w"] * (10 + i)) for i in range(n)]
    return [GenerationRequest("X", 0, str(i), t, sha256_text(t), i) for i, t in enumerate(texts)]


def test_batch_size_auto_on_a_gpu_halves_from_the_cap_until_one_pass_fits() -> None:
    backend = fake_backend("meta", fits=5)  # the meta device allocates nothing: only shapes are real
    size, why = backend.auto_batch_size(requests(40), GenerationSettings(max_new_tokens=100))
    assert size == 5 and "GPU: 5 rows of 149 tokens" in why  # longest prompt 49 + 100 new tokens
    assert backend.model.tried == [(40, 149), (20, 149), (10, 149), (5, 149)]
    from seam_repro.errors import PrerequisiteError

    with pytest.raises(PrerequisiteError, match="out of accelerator memory"):
        fake_backend("meta", fits=0).auto_batch_size(requests(3), GenerationSettings(max_new_tokens=100))


def test_batch_size_auto_on_cpu_is_the_measured_fixed_choice() -> None:
    from seam_repro.generate.hf import CPU_BATCH_SIZE

    backend = fake_backend("cpu")
    assert backend.auto_batch_size(requests(40), GenerationSettings()) == (
        CPU_BATCH_SIZE, f"CPU: {CPU_BATCH_SIZE}, the measured best (benchmarks/bench_batch.py)")
    assert backend.model.tried == []


# -- -q / -v, replay.log, --no-report ----------------------------------------------------------------------
def test_quiet_prints_results_only_and_the_log_keeps_everything(smoke: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
    out = tmp_path / "q"
    res = echo_replay(smoke, out, capsys, "--limit", "1", before=("-q",))
    assert res.code == 0, res.err
    assert res.err == ""  # no progress bar, no notes
    assert os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") == "1"  # nor the model libraries' bars
    assert run_cli(["datasets", "list"], capsys).code == 0
    assert "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ  # the next command line chooses again
    assert "generated" not in res.out and "| MusiQue | echo |" in res.out  # the results table is the result
    log = (out / "replay.log").read_text()
    assert "DEBUG   command: seam-repro" in log or "command: seam-repro" in log
    assert "echo: 18 generated, 0 already stored" in log and "| MusiQue | echo |" in log


def test_verbose_shows_debug_detail_and_no_report_skips_the_table(smoke: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "v"
    res = echo_replay(smoke, out, capsys, "--limit", "1", "--no-report", before=("-v",))
    assert res.code == 0, res.err
    assert "command: seam-repro" in res.err
    assert "| MusiQue | echo |" not in res.out and "echo: 18 generated" in res.out
    assert "results table not printed (--no-report)" in res.out
    assert (out / "scores" / "echo" / "summary.json").is_file()  # scored all the same
    again = echo_replay(smoke, out, capsys, "--limit", "1", "--no-report")  # a resume appends to the log
    assert again.code == 0
    assert (out / "replay.log").read_text().count("command: seam-repro") == 2
    both = run_cli(["-q", "-v", "datasets", "list"], capsys)
    assert both.code == 2 and "at most one of -q/--quiet and -v/--verbose" in both.err


def test_a_refused_replay_leaves_no_folder_and_no_log(smoke: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "never"
    res = echo_replay(smoke, out, capsys, "--model-args", "nope=1")
    assert res.code == 2 and not out.exists()


# -- progress: an ETA within the first batch -----------------------------------------------------------------
def test_progress_moves_at_each_decoding_step_not_only_after_a_batch(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import tqdm

    from seam_repro.run.replay import run_generation

    class Stepping(EchoBackend):
        step_hook = None

        def generate(self, reqs: list[GenerationRequest], settings: GenerationSettings) -> list[Any]:
            for _ in range(settings.max_new_tokens // 2):  # rows end early: half the steps
                assert self.step_hook is not None
                self.step_hook()
            return super().generate(reqs, settings)

    updates: list[float] = []
    counts: list[float] = []
    real = tqdm.tqdm.update
    monkeypatch.setattr(tqdm.tqdm, "update",
                        lambda self, n=1: (updates.append(n), real(self, n), counts.append(self.n))[1])
    recs = []
    for i in range(6):
        prompt = f"prompt {i} alpha beta"
        recs.append({"dataset": "D", "task": "x", "run": 0, "instance_id": str(i), "prompt": prompt,
                     "prompt_sha256": sha256_text(prompt), "gen_seed": i})
    manifest = {"digest": "a" * 64, "prompt_digest": "b" * 64}
    run_generation(recs, Stepping(), GenerationSettings(max_new_tokens=10), tmp_path / "r", manifest, batch_size=3)
    first_batch = updates[:6]
    assert all(0 < u < 1 for u in first_batch[:5]), updates  # 5 steps of 3/10 of an instance each... capped
    assert counts[-1] == 6  # each stored batch snaps the count to whole instances, exactly


# -- dataset names in any spelling, one resolver --------------------------------------------------------------
@pytest.mark.parametrize("spelling", ["MuSiQue", "MusiQue", "musique", "Musique"])
def test_every_spelling_of_a_dataset_name_resolves(spelling: str) -> None:
    from seam_repro.specs import load_suite

    suite = load_suite("seam")
    assert suite.canonical_name(spelling, "x") == "MusiQue"
    assert suite.canonical_names(f"{spelling}, ecb ,ECB+", "x", "datasets") == ["MusiQue", "ECB"]


def test_import_takes_any_spelling_of_the_dataset(smoke: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from seam_repro.manifest.prompts import render_records
    from seam_repro.manifest.trust import load_trusted

    tm = load_trusted(smoke)
    recs = [r for r in render_records(tm) if r["dataset"] == "MusiQue" and r["run"] == 0]
    jsonl = tmp_path / "outputs.jsonl"
    jsonl.write_text("".join(json.dumps({"dataset": "musique", "run": 0, "instance_id": r["instance_id"],
                                         "output": "x"}) + "\n" for r in recs))
    res = run_cli(["import", smoke, "--jsonl", jsonl, "--model", "api/m@v1", "--out", tmp_path / "imp"], capsys)
    assert res.code == 0, res.err
    assert (tmp_path / "imp" / "predictions" / "api__m" / "MusiQue" / "run_0.jsonl").is_file()


def test_merge_keeps_the_selection_and_refuses_shards_of_different_ones(smoke: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    pick = ("--datasets", "SciCo", "--no-score")
    assert echo_replay(smoke, tmp_path / "s0", capsys, *pick, "--shard", "0/2").code == 0
    assert echo_replay(smoke, tmp_path / "s1", capsys, *pick, "--shard", "1/2").code == 0
    merged = run_cli(["merge", tmp_path / "s0", tmp_path / "s1", "--out", tmp_path / "all"], capsys)
    assert merged.code == 0, merged.err
    assert json.loads((tmp_path / "all" / "run.json").read_text())["selection"] == {"datasets": ["SciCo"],
                                                                                   "runs": None}
    assert echo_replay(smoke, tmp_path / "o1", capsys, "--datasets", "SciCo", "--runs", "0", "--no-score",
                       "--shard", "1/2").code == 0
    other = run_cli(["merge", tmp_path / "s0", tmp_path / "o1", "--out", tmp_path / "bad"], capsys)
    assert other.code == 2 and not (tmp_path / "bad").exists()
