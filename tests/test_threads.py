"""torch's CPU thread count for local weights: chosen from the cores this process may use and what is
free, overridable (``--threads``, ``OMP_NUM_THREADS``), applied and recorded in run.json (issue 26:
on a shared 2-core machine torch's default made a smoke replay 3.4x slower than one thread)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tiny_models import save_tiny_llama

from seam_repro.generate.threads import busy_cores, cgroup_cpu_limit, choose_threads, usable_cores

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "manifests" / "smoke.json"


@pytest.mark.parametrize(("cores", "load", "expected"), [
    (2, 0.1, 2), (2, 0.6, 1), (2, 1.6, 1), (2, 7.0, 1), (16, 3.2, 13), (1, 0.0, 1)])
def test_auto_is_the_usable_cores_less_the_busy_ones(cores: int, load: float | None, expected: int) -> None:
    choice = choose_threads(environ={}, cores=cores, load=load)
    assert (choice.threads, choice.source, choice.usable_cores) == (expected, "auto", cores)


def test_an_explicit_count_wins_and_the_environment_is_respected() -> None:
    assert choose_threads(3, environ={"OMP_NUM_THREADS": "1"}, cores=2, load=0).threads == 3
    env = choose_threads(environ={"OMP_NUM_THREADS": "1"}, cores=16, load=0)
    assert (env.threads, env.source) == (1, "OMP_NUM_THREADS")
    assert choose_threads(environ={"MKL_NUM_THREADS": "4"}, cores=16, load=0).source == "MKL_NUM_THREADS"
    assert choose_threads(environ={"OMP_NUM_THREADS": "lots"}, cores=2, load=0).source == "auto"


@pytest.mark.parametrize(("files", "expected"), [
    ({"cpu.max": "150000 100000\n"}, 1.5),
    ({"cpu.max": "max 100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 3.0),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({}, None),
])
def test_cgroup_quota_v2_and_v1(tmp_path: Path, files: dict[str, str], expected: float | None) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert cgroup_cpu_limit(tmp_path) == expected


def test_the_quota_caps_the_affinity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5, 6, 7})
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert usable_cores(tmp_path) == 2
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert usable_cores(tmp_path) == 8


def test_busy_cores_sees_a_job_started_seconds_ago(tmp_path: Path) -> None:
    """The 1-minute average lags; the processes runnable now (less this one) do not."""
    (tmp_path / "loadavg").write_text("0.20 0.10 0.05 3/120 999\n")
    assert busy_cores(tmp_path / "loadavg") == 2.0
    (tmp_path / "loadavg").write_text("1.70 1.10 0.50 1/120 999\n")
    assert busy_cores(tmp_path / "loadavg") == 1.7


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    return save_tiny_llama(tmp_path_factory.mktemp("tiny") / "tiny-llama",
                           ["the answer is a summary of the documents", "question: who wrote it?"],
                           vocab=300, hidden=16, intermediate=32, layers=1, heads=2, kv_heads=1)


@pytest.mark.skipif(not SMOKE.is_file(), reason="shipped smoke manifest not in this checkout")
@pytest.mark.parametrize(("args", "env", "expected"), [
    (["--threads", "1"], {}, (1, "--threads")),
    ([], {"OMP_NUM_THREADS": "1"}, (1, "OMP_NUM_THREADS")),
])
def test_replay_applies_and_records_the_thread_count(tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     args: list[str], env: dict[str, str],
                                                     expected: tuple[int, str]) -> None:
    import torch

    from seam_repro.cli import cli

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    if not env:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        out = tmp_path / "run"
        result = CliRunner().invoke(cli, ["replay", str(SMOKE), "--model", str(tiny_model), "--out", str(out),
                                          "--limit", "1", "--datasets", "MuSiQue", "--runs", "0",
                                          "--max-new-tokens", "2", "--no-score", "--model-args",
                                          "max_length=512,device_map=cpu", *args])
        assert result.exit_code == 0, result.output + repr(result.exception)
        session = json.loads((out / "run.json").read_text())["sessions"][-1]
        assert (session["threads"]["threads"], session["threads"]["source"]) == expected
        if args:
            assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_threads_apply_to_local_weights_only(tmp_path: Path) -> None:
    from trust_helpers import smoke_copy

    from seam_repro.cli import cli

    result = CliRunner().invoke(cli, ["replay", str(smoke_copy(tmp_path)), "--backend", "echo", "--threads", "2",
                                      "--out", str(tmp_path / "r")])
    assert result.exit_code != 0 and "--threads: applies to local weights on CPU" in str(result.exception)


def test_the_step_hook_counts_steps_and_changes_no_token(tiny_model: Path) -> None:
    from seam_repro.config import GenerationSettings
    from seam_repro.generate.base import GenerationRequest
    from seam_repro.generate.hf import load_hf_backend
    from seam_repro.generate.local import resolve_local
    from seam_repro.hashing import sha256_text

    local = resolve_local(str(tiny_model))
    backend = load_hf_backend(local.model_id, local.revision, source=str(local.path), device_map="cpu",
                              local_info={"path": str(local.path), "files": local.files}, max_model_len=256)
    reqs = [GenerationRequest("X", 0, str(i), p, sha256_text(p), 40 + i)
            for i, p in enumerate(["the answer is", "question: who wrote it?"])]
    settings = GenerationSettings(max_new_tokens=6)
    plain = backend.generate(reqs, settings)
    steps: list[int] = []
    backend.step_hook = lambda: steps.append(1)
    hooked = backend.generate(reqs, settings)
    assert [r.output for r in hooked] == [r.output for r in plain]
    assert 1 <= len(steps) <= 6 and len(steps) >= max(r.n_output_tokens for r in plain) - 1
