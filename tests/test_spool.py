"""Replay spools its prompts to disk: the batches it generates and the prompts.jsonl it writes are
those of the in-memory records, and its memory does not hold the prompts."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError, PredictionsError
from seam_repro.generate.base import EchoBackend, GenerationRequest
from seam_repro.hashing import sha256_text
from seam_repro.manifest.prompts import render_records
from seam_repro.manifest.trust import load_trusted
from seam_repro.run.shard import Shard, shard_of
from seam_repro.run.spool import PromptSpool

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "manifests" / "smoke.json"
MANIFEST = {"digest": "a" * 64, "prompt_digest": "b" * 64}


def in_memory_batches(records: list[dict], size: int, shard: Shard | None) -> list[list[tuple]]:
    """The batches replay made when it held every rendered record: the shard's records in record
    order, sorted by prompt length (longest first, ties in that order), cut every ``size``."""
    mine = [r for r in records if shard is None or shard_of(r["dataset"], r["run"], r["instance_id"],
                                                            shard.count) == shard.index]
    order = sorted(range(len(mine)), key=lambda j: (-len(mine[j]["prompt"]), j))
    keys = [(mine[j]["dataset"], mine[j]["run"], mine[j]["instance_id"]) for j in order]
    return [keys[i:i + size] for i in range(0, len(keys), size)]


@pytest.mark.parametrize("shard", [None, Shard(1, 3)])
def test_replay_batches_and_prompts_file_are_those_of_the_in_memory_records(
        shard: Shard | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from seam_repro.run.replay import ReplayOptions, replay

    records = list(render_records(load_trusted(SMOKE)))
    by_key = {(r["dataset"], r["run"], r["instance_id"]): r for r in records}
    seen: list[list[GenerationRequest]] = []

    class Recording(EchoBackend):
        def generate(self, requests: list[GenerationRequest], settings: GenerationSettings) -> list:
            seen.append(list(requests))
            return super().generate(requests, settings)

    import seam_repro.generate

    monkeypatch.setattr(seam_repro.generate, "make_backend", lambda *a, **k: Recording())
    out = tmp_path / "run"
    replay(load_trusted(SMOKE), out, ReplayOptions(backend="echo", batch_size=5, shard=shard, progress=False))
    assert [[r.key for r in batch] for batch in seen] == in_memory_batches(records, 5, shard)
    for req in (r for batch in seen for r in batch):  # each prompt read back whole, with its hash and seed
        rec = by_key[req.key]
        assert (req.prompt, req.prompt_sha256, req.seed) == (rec["prompt"], rec["prompt_sha256"], rec["gen_seed"])
    plain = b"".join((json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n").encode() for r in records)
    assert (out / "prompts.jsonl").read_bytes() == plain
    assert [p.name for p in tmp_path.iterdir()] == ["run"]  # no spool left beside the run folder


def big_records(n: int, size: int) -> Iterator[dict]:
    for i in range(n):
        prompt = f"{i} " + "x" * (size - (i % 7))
        yield {"dataset": "D", "run": i % 3, "instance_id": str(i), "prompt": prompt,
               "prompt_sha256": sha256_text(prompt), "gen_seed": i}


def test_replay_memory_does_not_hold_the_prompts(tmp_path: Path) -> None:
    """600 prompts of 20 kB (12 MB of text) given as a generator: replay's peak of traced memory stays
    well under the prompts' size (it held them all, and their list, before it spooled them)."""
    from seam_repro.run.replay import run_generation

    class Short(EchoBackend):  # an echo of the first characters only: the predictions stay small
        def generate(self, requests: list[GenerationRequest], settings: GenerationSettings) -> list:
            return super().generate([GenerationRequest(r.dataset, r.run, r.instance_id, r.prompt[:20],
                                                       r.prompt_sha256, r.seed) for r in requests], settings)

    tracemalloc.start()
    try:
        summary = run_generation(big_records(600, 20_000), Short(), GenerationSettings(max_new_tokens=4),
                                 tmp_path / "run", MANIFEST, batch_size=8, progress=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert summary.generated == 600
    assert peak < 3_000_000, f"peak {peak / 1e6:.1f} MB"


def test_spool_refuses_what_check_prompt_records_refuses_and_leaves_nothing(tmp_path: Path) -> None:
    recs = list(big_records(3, 10))
    with pytest.raises(InputError, match="duplicate instance"):
        PromptSpool.write(tmp_path / "run", [*recs, recs[0]])
    with pytest.raises(InputError, match="does not match sha256 of 'prompt'"):
        PromptSpool.write(tmp_path / "run", [{**recs[0], "prompt": "changed"}])
    assert list(tmp_path.iterdir()) == []


def test_a_prompts_file_changed_under_a_running_replay_is_refused(tmp_path: Path) -> None:
    spool = PromptSpool.write(tmp_path / "run", big_records(3, 10))
    try:
        assert spool.request(2).instance_id == "2"
        spool.path.write_bytes(spool.path.read_bytes()[5:])
        spool.close()
        with pytest.raises(PredictionsError, match="line 2 no longer holds"):
            spool.record(1)
    finally:
        spool.discard()
    assert list(tmp_path.iterdir()) == []


def replay_peak_rss_mib(work: Path, runs: int) -> float:
    """Peak RSS of an echo ``replay`` process over benchmarks/synth.py's bench data with ``runs`` runs
    per dataset (10: 680 prompts)."""
    import os
    import subprocess
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    from synth import scaled_seam_data, seam_config

    data = scaled_seam_data(work / "data")
    (work / "config.json").write_text(json.dumps(seam_config(data, runs=runs)), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TQDM_DISABLE="1")
    prompts = REPO / "manifests" / "fixtures" / "prompts"
    kit = [sys.executable, "-m", "seam_repro"]
    subprocess.run([*kit, "sample", str(work / "config.json"), "-o", str(work / "m.json"), "--prompts-dir",
                    str(prompts)], env=env, cwd=REPO, check=True, capture_output=True)
    replay = [*kit, "replay", str(work / "m.json"), "--backend", "echo", "--out", str(work / "run"),
              "--prompts-dir", str(prompts), "--no-score"]
    # Linux keeps a process's peak RSS across exec, and a child starts with its parent's memory, so
    # the replay is started from a small wrapper process, not from this (larger) test process
    wrapper = ("import os, subprocess, sys\n"
               "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
               "_, status, usage = os.wait4(p.pid, 0)\n"
               "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", wrapper, *replay], env=env, cwd=REPO, check=True,
                         capture_output=True, text=True).stdout.split()
    assert out[0] == "0"
    return int(out[1]) / 1024


@pytest.mark.slow
def test_replay_peak_memory_does_not_grow_with_the_prompts(tmp_path: Path) -> None:
    """Four times the prompts from the same data (10 -> 40 runs: 680 -> 2,720 prompts, 3.7 -> 15 MB
    of prompt text): replay's peak RSS grew by 15 MiB when it held them all (35 -> 50 MiB); spooled,
    only by the manifest's records and the per-prompt index (34 -> 37 MiB)."""
    small = replay_peak_rss_mib(tmp_path / "x1", 10)
    large = replay_peak_rss_mib(tmp_path / "x4", 40)
    prompt_mib = (tmp_path / "x4" / "run" / "prompts.jsonl").stat().st_size / 2**20
    assert prompt_mib > 12
    assert large - small < 8, f"{small:.0f} -> {large:.0f} MiB"
