"""Predictions store: line format, torn-tail repair, refusal of foreign or duplicate lines, run.json checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seam_repro.errors import InputError, PredictionsError
from seam_repro.generate.base import GenerationRequest, GenerationResult
from seam_repro.hashing import sha256_text
from seam_repro.run.store import (
    PredictionStore,
    model_slug,
    predictions_path,
    prepare_run_dir,
    read_prediction_file,
    repair_torn_tail,
)


def req(i: int, dataset: str = "MusiQue", run: int = 0) -> GenerationRequest:
    prompt = f"question {i}"
    return GenerationRequest(dataset, run, f"id{i}", prompt, sha256_text(prompt), 100 + i)


def res(i: int) -> GenerationResult:
    return GenerationResult(output=f"answer {i}", templated_prompt_sha256="t" * 64, n_prompt_tokens=3,
                            n_output_tokens=2)


def hashes(n: int) -> dict:
    return {r.key: r.prompt_sha256 for r in (req(i) for i in range(n))}


def test_model_slug_replaces_slash_and_at() -> None:
    assert model_slug("meta-llama/Meta-Llama-3-8B-Instruct") == "meta-llama__Meta-Llama-3-8B-Instruct"
    assert model_slug("org/m@abc") == "org__m__abc"


def test_record_has_documented_fields_in_order(tmp_path: Path) -> None:
    store = PredictionStore(tmp_path, "org/m", "rev1", hashes(1))
    store.append(req(0), res(0), {"temperature": 0.8})
    store.close()
    path = predictions_path(tmp_path, "org/m", "MusiQue", 0)
    assert path == tmp_path / "predictions" / "org__m" / "MusiQue" / "run_0.jsonl"
    line = path.read_bytes()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    rec = json.loads(line)
    assert list(rec)[:12] == ["dataset", "run", "instance_id", "prompt_sha256", "templated_prompt_sha256", "seed",
                              "generation", "model", "output", "truncated", "n_prompt_tokens", "n_output_tokens"]
    assert rec["model"] == {"id": "org/m", "revision": "rev1"} and rec["seed"] == 100
    assert rec["prompt_sha256"] == sha256_text("question 0") and rec["output"] == "answer 0"


def test_torn_last_line_is_truncated_and_resumed(tmp_path: Path) -> None:
    store = PredictionStore(tmp_path, "org/m", "rev1", hashes(3))
    store.append(req(0), res(0), {})
    store.append(req(1), res(1), {})
    store.close()
    path = predictions_path(tmp_path, "org/m", "MusiQue", 0)
    intact = path.read_bytes()
    torn = b'{"dataset": "MusiQue", "run": 0, "instance_id": "id2", "outp'  # a write cut by a kill
    with open(path, "ab") as fh:
        fh.write(torn)
    resumed = PredictionStore(tmp_path, "org/m", "rev1", hashes(3))
    assert path.read_bytes() == intact
    assert resumed.repaired == [(path, len(torn))]
    assert resumed.done == {req(0).key, req(1).key}
    resumed.append(req(2), res(2), {})
    resumed.close()
    assert [json.loads(x)["instance_id"] for x in path.read_text().splitlines()] == ["id0", "id1", "id2"]


def test_repair_when_file_has_no_newline_at_all(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1')
    assert repair_torn_tail(p) == 7 and p.read_bytes() == b""
    p.write_bytes(b"{}\n")
    assert repair_torn_tail(p) == 0 and p.read_bytes() == b"{}\n"


def test_never_writes_an_instance_twice(tmp_path: Path) -> None:
    store = PredictionStore(tmp_path, "org/m", "rev1", hashes(1))
    store.append(req(0), res(0), {})
    with pytest.raises(PredictionsError, match="twice"):
        store.append(req(0), res(0), {})
    store.close()
    again = PredictionStore(tmp_path, "org/m", "rev1", hashes(1))
    with pytest.raises(PredictionsError, match="twice"):
        again.append(req(0), res(0), {})


def test_duplicate_lines_in_a_file_are_refused(tmp_path: Path) -> None:
    store = PredictionStore(tmp_path, "org/m", "rev1", hashes(1))
    store.append(req(0), res(0), {})
    store.close()
    path = predictions_path(tmp_path, "org/m", "MusiQue", 0)
    path.write_bytes(path.read_bytes() * 2)
    with pytest.raises(PredictionsError, match="line 2: duplicate"):
        PredictionStore(tmp_path, "org/m", "rev1", hashes(1))


def test_other_revision_or_changed_prompt_is_refused(tmp_path: Path) -> None:
    store = PredictionStore(tmp_path, "org/m", "rev1", hashes(1))
    store.append(req(0), res(0), {})
    store.close()
    with pytest.raises(PredictionsError, match="org/m@rev1, not org/m@rev2"):
        PredictionStore(tmp_path, "org/m", "rev2", hashes(1))
    changed = {req(0).key: sha256_text("another prompt")}
    with pytest.raises(PredictionsError, match="prompt_sha256"):
        PredictionStore(tmp_path, "org/m", "rev1", changed)
    with pytest.raises(PredictionsError, match="not among"):
        PredictionStore(tmp_path, "org/m", "rev1", {})


def test_malformed_complete_line_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "run_0.jsonl"
    p.write_text('{"dataset": "A", "run": 0, "instance_id": "x", "output": "", "model": {}}\nnot json\n')
    with pytest.raises(InputError, match=r"run_0.jsonl: record line 2: not valid JSON"):
        read_prediction_file(p)
    p.write_text('{"dataset": "A", "run": "0", "instance_id": "x", "output": "", "model": {}}\n')
    with pytest.raises(InputError, match=r"record line 1: field 'run': missing or not a int"):
        read_prediction_file(p)


def _prepare(tmp_path: Path, digest: str = "d1", revision: str = "r1", generation: dict | None = None,
             shard: str | None = None) -> dict:
    prompts = [{"dataset": "A", "run": 0, "instance_id": "x", "prompt": "p", "prompt_sha256": sha256_text("p"),
                "gen_seed": 1}]
    return prepare_run_dir(tmp_path, manifest={"digest": digest, "prompt_digest": "pd"}, prompts=prompts,
                           model_entry={"id": "org/m", "revision": revision, "backend_name": "echo",
                                        "generation": generation or {"t": 1}},
                           session={"fingerprint": {"python": "3"}}, extra={"shard": shard, "limit": None})


def test_run_json_created_then_checked_on_resume(tmp_path: Path) -> None:
    first = _prepare(tmp_path)
    assert first["manifest_digest"] == "d1" and list(first["models"]) == ["org__m"]
    assert (tmp_path / "prompts.jsonl").read_text().count("\n") == 1
    # a stored prediction: from now on the run is held to its settings (a run with none starts over,
    # tests/test_model_folder.py)
    stored = tmp_path / "predictions" / "org__m" / "A" / "run_0.jsonl"
    stored.parent.mkdir(parents=True)
    stored.write_text('{"x": 1}\n')
    second = _prepare(tmp_path)
    assert len(second["sessions"]) == 2
    with pytest.raises(PredictionsError, match="manifest_digest is 'd1', this replay has 'd2'"):
        _prepare(tmp_path, digest="d2")
    with pytest.raises(PredictionsError, match="revision was 'r1', now 'r2'"):
        _prepare(tmp_path, revision="r2")
    with pytest.raises(PredictionsError, match="generation"):
        _prepare(tmp_path, generation={"t": 2})
    with pytest.raises(PredictionsError, match="shard"):
        _prepare(tmp_path, shard="1/2")
    assert not (tmp_path / "prompts.jsonl.new").exists()
    assert json.loads((tmp_path / "run.json").read_text())["models"]["org__m"]["revision"] == "r1"


def test_one_fsync_per_file_per_sync_and_sigkill_keeps_every_written_line(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The crash guarantee: lines reach the kernel as they are appended (a SIGKILL of the writer
    loses none), and ``sync`` (once per batch in replay) is the only fsync."""
    import os
    import signal

    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    store = PredictionStore(tmp_path, "org/m", "rev1", hashes(6))
    for i in range(3):
        store.append(req(i), res(i), {})
    assert synced == []
    store.sync()
    assert len(synced) == 1
    store.sync()  # nothing new: no fsync
    assert len(synced) == 1
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child dies by SIGKILL
        for i in range(3, 6):
            store.append(req(i), res(i), {})
        os.kill(os.getpid(), signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    lines = predictions_path(tmp_path, "org/m", "MusiQue", 0).read_text("utf-8").splitlines()
    assert [json.loads(x)["instance_id"] for x in lines] == [f"id{i}" for i in range(6)]
    store.close()
