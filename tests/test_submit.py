"""Results bundles: digest recomputed independently with hashlib, tampering and manifest
mismatches refused, round trip equal to the run directory's scores."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from test_aggregate import write_scores

from seam_repro.aggregate import load_run_dir
from seam_repro.cli import main
from seam_repro.errors import InputError
from seam_repro.submit import load_inputs, make_bundle, read_bundle, resolve_manifest_digest, write_bundle


def _run(tmp_path: Path, model: str = "org/new", digest: str = "a" * 64) -> Path:
    write_scores(tmp_path, model, {
        "MusiQue": {"metric": "musique_f1", "instances": [(0, "q1", 50.0, True), (0, "q2", 0.0, False),
                                                          (1, "q1", 100.0, True)]},
        "SciCo": {"metric": "conll_f1", "runs": {0: 12.5, 1: 13.0}, "instances": [(0, "t", None, True)]},
    }, manifest_digest=digest)
    return tmp_path


def test_bundle_top_level_and_digest(tmp_path: Path) -> None:
    b = make_bundle(_run(tmp_path))
    assert b["manifest_digest"] == "a" * 64 and b["prompt_digest"] == "b" * 64
    assert b["model"] == {"id": "org/new", "revision": "r1"}
    assert b["chat_template_sha256"] == "c" * 64 and b["environment"] == {"python": "3.11"}
    assert b["datasets"]["MusiQue"]["runs"] == {"0": 25.0, "1": 100.0}
    assert len(b["datasets"]["MusiQue"]["instances"]) == 3
    body = {k: v for k, v in b.items() if k != "bundle_digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert b["bundle_digest"] == hashlib.sha256(canonical).hexdigest()


def test_round_trip_equals_run_dir(tmp_path: Path) -> None:
    run = _run(tmp_path / "run")
    out = tmp_path / "b.json"
    write_bundle(make_bundle(run), out)
    got, want = read_bundle(out), load_run_dir(run)[0]
    assert got.datasets == want.datasets
    assert (got.model_id, got.revision, got.manifest_digest) == (want.model_id, want.revision, want.manifest_digest)
    assert got.extra["chat_template_sha256"] == "c" * 64


def test_tampered_bundle_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    write_bundle(make_bundle(_run(tmp_path / "run")), out)
    data = json.loads(out.read_text())
    data["datasets"]["MusiQue"]["runs"]["0"] = 99.0
    out.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"b.json: field 'bundle_digest': is .* the bundle was edited"):
        read_bundle(out)
    out.write_text(json.dumps({"kind": "something-else"}))
    with pytest.raises(InputError, match="not a results bundle"):
        read_bundle(out)


def test_bundle_with_inconsistent_scores_is_refused_even_with_valid_digest(tmp_path: Path) -> None:
    from seam_repro.hashing import sha256_json

    b = make_bundle(_run(tmp_path / "run"))
    b["datasets"]["MusiQue"]["instances"][0]["score"] = 70.0        # run 0 no longer averages 25.0
    b["bundle_digest"] = sha256_json({k: v for k, v in b.items() if k != "bundle_digest"})
    out = tmp_path / "b.json"
    write_bundle(b, out)
    with pytest.raises(InputError, match=r"field 'runs.0': run 0 is 25.0 but its instance scores average 35.0"):
        read_bundle(out)


def test_manifest_mismatch_is_refused(tmp_path: Path) -> None:
    b1, b2 = tmp_path / "one.json", tmp_path / "two.json"
    write_bundle(make_bundle(_run(tmp_path / "r1", "org/one", "a" * 64)), b1)
    write_bundle(make_bundle(_run(tmp_path / "r2", "org/two", "f" * 64)), b2)
    with pytest.raises(InputError, match=r"two.json: field 'manifest_digest': is f{64} but .*one.json has a{64}"):
        load_inputs([b1, b2])
    with pytest.raises(InputError, match=r"one.json: field 'manifest_digest': is a{64} but --manifest has e{64}"):
        load_inputs([b1], manifest="e" * 64)
    assert len(load_inputs([b1], manifest=resolve_manifest_digest("A" * 64))) == 1
    with pytest.raises(InputError, match="also given by"):
        load_inputs([b1, b1])


def test_run_json_must_match_scores(tmp_path: Path) -> None:
    run = _run(tmp_path)
    info = json.loads((run / "run.json").read_text())
    info["manifest_digest"] = "9" * 64
    (run / "run.json").write_text(json.dumps(info))
    with pytest.raises(InputError, match="the scores are from another manifest"):
        make_bundle(run)
    (run / "run.json").unlink()
    with pytest.raises(InputError, match=r"run.json: not found"):
        make_bundle(run)


def test_several_models_need_model_option(tmp_path: Path) -> None:
    _run(tmp_path, "org/one")
    _run(tmp_path, "org/two")
    with pytest.raises(InputError, match="choose one with --model ID"):
        make_bundle(tmp_path)
    assert make_bundle(tmp_path, "org/two")["model"]["id"] == "org/two"


def test_submit_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path / "run")
    out = tmp_path / "out" / "b.json"
    monkeypatch.setattr(sys, "argv", ["seam-repro", "submit", str(run), "--out", str(out)])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 0
    assert read_bundle(out).model_id == "org/new"
    assert "bundle_digest=" in capsys.readouterr().out
