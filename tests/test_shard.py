"""--shard K/N partition and merge: hash-determined shards, completeness and duplicate checks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError, PredictionsError
from seam_repro.files.atomic import OutputError
from seam_repro.generate.base import EchoBackend
from seam_repro.hashing import sha256_text
from seam_repro.run.replay import run_generation, shard_indices
from seam_repro.run.shard import Shard, merge_run_dirs, parse_shard, shard_of
from seam_repro.run.spool import PromptSpool
from seam_repro.run.store import predictions_path

MANIFEST = {"digest": "m" * 64, "prompt_digest": "p" * 64}
SETTINGS = GenerationSettings(max_new_tokens=5)


def records(n_per: int = 6) -> list[dict]:
    out = []
    for ds in ("ECB", "MusiQue"):
        for run in (0, 1):
            for i in range(n_per):
                prompt = f"{ds} run {run} instance {i}: some words to echo back"
                out.append({"dataset": ds, "task": "qa", "run": run, "instance_id": f"{ds}-{i}", "prompt": prompt,
                            "prompt_sha256": sha256_text(prompt), "gen_seed": 1000 * run + i})
    return out


def test_parse_shard() -> None:
    assert parse_shard("0/4") == Shard(0, 4) and str(parse_shard("3/4")) == "3/4"
    for bad in ("4/4", "-1/4", "1/0", "a/b", "1", "1/2/3"):
        with pytest.raises(InputError, match="--shard"):
            parse_shard(bad)


def test_shard_of_matches_hand_computed_hash() -> None:
    digest = hashlib.sha256(b"MusiQue\x1f3\x1f2hop__1_2").hexdigest()
    assert shard_of("MusiQue", 3, "2hop__1_2", 7) == int(digest[:16], 16) % 7


def test_shards_partition_the_records_in_order(tmp_path: Path) -> None:
    recs = records(10)
    spool = PromptSpool.write(tmp_path / "run", recs)
    try:
        parts = [[recs[j] for j in shard_indices(spool, Shard(k, 3))] for k in range(3)]
        assert shard_indices(spool, None) == list(range(len(recs)))
    finally:
        spool.discard()
    keys = [(r["dataset"], r["run"], r["instance_id"]) for p in parts for r in p]
    assert sorted(keys) == sorted((r["dataset"], r["run"], r["instance_id"]) for r in recs)
    assert len(set(keys)) == len(keys) and all(parts)
    for p in parts:  # original relative order is kept
        assert p == [r for r in recs if r in p]


def run_shards(tmp_path: Path, n: int) -> list[Path]:
    dirs = []
    for k in range(n):
        d = tmp_path / f"s{k}"
        run_generation(records(), EchoBackend(), SETTINGS, d, MANIFEST, shard=Shard(k, n), batch_size=3,
                       progress=False)
        dirs.append(d)
    return dirs


def test_merge_equals_unsharded_run(tmp_path: Path) -> None:
    whole = tmp_path / "whole"
    run_generation(records(), EchoBackend(), SETTINGS, whole, MANIFEST, batch_size=4, progress=False)
    dirs = run_shards(tmp_path, 3)
    counts = merge_run_dirs(dirs, tmp_path / "merged")
    assert counts == {"echo": 24}
    for ds in ("ECB", "MusiQue"):
        for run in (0, 1):
            a = predictions_path(whole, "echo", ds, run).read_bytes()
            b = predictions_path(tmp_path / "merged", "echo", ds, run).read_bytes()
            assert a == b
    rj = json.loads((tmp_path / "merged" / "run.json").read_text())
    assert rj["shard"] is None and [m["shard"] for m in rj["merged_from"]] == ["0/3", "1/3", "2/3"]
    assert (tmp_path / "merged" / "prompts.jsonl").read_bytes() == (whole / "prompts.jsonl").read_bytes()


def test_merge_refuses_missing_shard(tmp_path: Path) -> None:
    dirs = run_shards(tmp_path, 3)
    with pytest.raises(PredictionsError, match=r"model echo: \d+ of 24 instances have no prediction"):
        merge_run_dirs(dirs[:2], tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


def test_merge_refuses_duplicates_and_conflicts(tmp_path: Path) -> None:
    dirs = run_shards(tmp_path, 2)
    with pytest.raises(PredictionsError, match="duplicate prediction"):
        merge_run_dirs([dirs[0], dirs[0], dirs[1]], tmp_path / "m1")
    # a shard dir whose line for one instance was produced differently -> conflict
    other = tmp_path / "other"
    run_generation(records(), EchoBackend(), SETTINGS, other, MANIFEST, progress=False)
    path = next((other / "predictions" / "echo").glob("*/run_*.jsonl"))
    lines = path.read_text().splitlines()
    rec = json.loads(lines[0])
    rec["output"] = "tampered"
    path.write_text("\n".join([json.dumps(rec)] + lines[1:]) + "\n")
    with pytest.raises(PredictionsError, match="conflicting prediction"):
        merge_run_dirs(dirs + [other], tmp_path / "m2")


def test_merge_refuses_other_manifest_and_existing_out(tmp_path: Path) -> None:
    dirs = run_shards(tmp_path, 2)
    foreign = tmp_path / "foreign"
    run_generation(records(), EchoBackend(), SETTINGS, foreign, {**MANIFEST, "digest": "x" * 64},
                   shard=Shard(1, 2), progress=False)
    with pytest.raises(PredictionsError, match="manifest_digest"):
        merge_run_dirs([dirs[0], foreign], tmp_path / "m")
    with pytest.raises(OutputError, match="is one of this command's inputs"):
        merge_run_dirs(dirs, dirs[0])
    with pytest.raises(OutputError, match="lies inside"):
        merge_run_dirs(dirs, dirs[1] / "merged")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PredictionsError, match="already exists"):
        merge_run_dirs(dirs, tmp_path / "empty")
    assert not (tmp_path / "m").exists()  # the refused merge above left nothing behind


def test_merge_reads_prompts_through_the_stores_one_reader(tmp_path: Path) -> None:
    """merge, recheck and import read prompts.jsonl as scoring does (store.read_prompts): the same
    line-numbered refusal, plus the gen_seed that regenerating needs."""
    dirs = run_shards(tmp_path, 2)
    prompts = dirs[0] / "prompts.jsonl"
    lines = prompts.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["prompt"] = "edited"
    prompts.write_text("\n".join([lines[0], json.dumps(rec), *lines[2:]]) + "\n")
    with pytest.raises(InputError, match=r"prompts\.jsonl: record line 2: field 'prompt_sha256'"):
        merge_run_dirs(dirs, tmp_path / "m1")
    rec = json.loads(lines[1])
    del rec["gen_seed"]
    prompts.write_text("\n".join([lines[0], json.dumps(rec), *lines[2:]]) + "\n")
    with pytest.raises(InputError, match=r"record line 2: field 'gen_seed': missing or not a int"):
        merge_run_dirs(dirs, tmp_path / "m2")
    prompts.unlink()
    with pytest.raises(InputError, match=r"prompts file not found \(expected RUN_DIR/prompts\.jsonl"):
        merge_run_dirs(dirs, tmp_path / "m3")
    assert not any((tmp_path / m).exists() for m in ("m1", "m2", "m3"))
