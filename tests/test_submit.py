"""Results bundles from real (echo) runs of the shipped smoke manifest: digest recomputed
independently with hashlib, generation settings and predictions digest carried, and every forge,
drop, duplicate, tamper and re-seal refused with one line naming the file and the record."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest
from test_aggregate import write_scores
from trust_helpers import REPO, echo_runs  # noqa: F401 - session fixture

from seam_repro.analysis.aggregate import load_run_dir
from seam_repro.analysis.submit import (
    _dataset_payload,
    load_inputs,
    make_bundle,
    read_bundle,
    resolve_manifest_digest,
    write_bundle,
)
from seam_repro.cli import main
from seam_repro.errors import InputError, PredictionsError, SeamReproError
from seam_repro.hashing import sha256_json


def _copy(src: Path, tmp_path: Path, name: str = "run") -> Path:
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def _reseal(bundle: dict) -> dict:
    """What a forger does after editing: recompute the bundle digest so it looks untouched."""
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    return {**body, "bundle_digest": sha256_json(body)}


@pytest.fixture(scope="module")
def bundle(echo_runs: dict[str, Path]) -> dict:  # noqa: F811
    return make_bundle(echo_runs["full"])


def test_bundle_fields_and_digest(bundle: dict) -> None:
    m = json.loads((REPO / "manifests" / "smoke.json").read_text())
    assert bundle["manifest_digest"] == m["digest"] and bundle["prompt_digest"] == m["prompt_digest"]
    assert bundle["model"]["id"] == "echo" and bundle["partial"] is False
    assert bundle["coverage"] == {"instances": 36, "scored": 36, "partial": False}
    gen = bundle["generation"]
    assert {"prompt_path", "max_new_tokens", "temperature", "dtype", "batch_size", "backend", "limit"} <= set(gen)
    assert (gen["backend"], gen["max_new_tokens"], gen["temperature"], gen["limit"]) == ("echo", 48, 0.8, None)
    assert len(bundle["predictions_digest"]) == 64
    seeds = json.loads((REPO / "seeds" / "smoke.json").read_text())
    seeds.pop("manifest")
    assert bundle["seeds"] == seeds
    assert sum(len(d["instances"]) for d in bundle["datasets"].values()) == 30  # FuseReviews unscored (no FIC)
    assert "FuseReviews" in bundle["unscored_datasets"]
    body = {k: v for k, v in bundle.items() if k != "bundle_digest"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert bundle["bundle_digest"] == hashlib.sha256(canonical).hexdigest()


def test_round_trip_equals_run_dir(bundle: dict, echo_runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    write_bundle(bundle, tmp_path / "b.json")
    got = read_bundle(tmp_path / "b.json")
    [ms] = load_run_dir(echo_runs["full"])
    assert got.datasets == ms.datasets and got.unscored == ms.unscored
    assert got.manifest_digest == ms.manifest_digest


def test_missing_run_round_trips_through_a_bundle(bundle: dict, tmp_path: Path) -> None:
    """A run without a score stays null (with the scorer's reason) in the bundle, so a report made
    from the bundle marks it as one made from the run folder does."""
    b = json.loads(json.dumps(bundle))
    ds = next(n for n, d in b["datasets"].items() if d["metric"].startswith("conll") and len(d["runs"]) > 1)
    run = sorted(b["datasets"][ds]["runs"])[0]
    b["datasets"][ds]["runs"][run] = None
    b["datasets"][ds]["reason"] = "scorer.pl failed"
    write_bundle(_reseal(b), tmp_path / "b.json")
    got = read_bundle(tmp_path / "b.json")
    assert got.datasets[ds].missing_runs == {int(run): "scorer.pl failed"} and int(run) not in got.datasets[ds].runs
    again = _dataset_payload(got)[ds]
    assert (again["runs"], again["reason"]) == (b["datasets"][ds]["runs"], "scorer.pl failed")


def test_tampered_bundle_is_refused(bundle: dict, tmp_path: Path) -> None:
    b = json.loads(json.dumps(bundle))
    b["datasets"]["MultiNews"]["runs"]["0"] += 1.0
    write_bundle(b, tmp_path / "b.json")
    with pytest.raises(InputError, match="field 'bundle_digest'.*edited after"):
        read_bundle(tmp_path / "b.json")


@pytest.mark.parametrize("forge", ["prompt_digest", "run_prompt_digest", "gen_seed", "unknown_instance"])
def test_resealed_forgeries_of_a_shipped_manifest_are_refused_against_seeds(bundle: dict, tmp_path: Path,
                                                                              forge: str) -> None:
    """Old main: a bundle whose prompt_digest was forged and whose digest was recomputed was ranked;
    nothing read seeds/. Now the shipped manifest's seeds and prompt digests are checked."""
    b = json.loads(json.dumps(bundle))
    if forge == "prompt_digest":
        b["prompt_digest"] = b["seeds"]["prompt_digest"] = "0" * 64
        field = "prompt_digest"
    elif forge == "run_prompt_digest":
        b["seeds"]["runs"][0]["prompt_digest"] = "0" * 64
        field = "seeds"
    elif forge == "gen_seed":
        first = b["seeds"]["runs"][0]["gen_seeds"]
        first[next(iter(first))] += 1
        field = "seeds"
    else:
        b["datasets"]["MultiNews"]["instances"][0]["instance_id"] = "not-in-the-manifest"
        field = "instance_id"
    write_bundle(_reseal(b), tmp_path / "b.json")
    with pytest.raises(InputError, match=rf"seeds/smoke.json|field '{field}'") as exc:
        read_bundle(tmp_path / "b.json")
    assert str(exc.value).startswith(str(tmp_path / "b.json")) and "\n" not in str(exc.value)


def test_resealed_duplicate_instance_is_refused(bundle: dict, tmp_path: Path) -> None:
    b = json.loads(json.dumps(bundle))
    inst = b["datasets"]["MultiNews"]["instances"]
    inst.append(dict(inst[0]))
    write_bundle(_reseal(b), tmp_path / "b.json")
    with pytest.raises(InputError, match="duplicate score for MultiNews run 0"):
        read_bundle(tmp_path / "b.json")


def _pred_file(run: Path, ds: str = "MultiNews", k: int = 0) -> Path:
    return run / "predictions" / "echo" / ds / f"run_{k}.jsonl"


def _damage(run: Path, how: str) -> None:
    f = _pred_file(run)
    lines = f.read_bytes().splitlines(keepends=True)
    rec = json.loads(lines[0])
    if how == "torn":
        f.write_bytes(b"".join(lines) + b'{"dataset": "MultiNews", "ru')
    elif how == "garbage":
        f.write_bytes(b"".join(lines) + b"\x00\xff not json\n")
    elif how == "unknown":
        f.write_bytes(b"".join(lines) + json.dumps({**rec, "instance_id": "nope"}).encode() + b"\n")
    elif how == "duplicate":
        f.write_bytes(b"".join(lines) + lines[0])
    elif how == "wrong_prompt_sha256":
        f.write_bytes(json.dumps({**rec, "prompt_sha256": "0" * 64}).encode() + b"\n" + b"".join(lines[1:]))
    elif how == "changed_output":
        f.write_bytes(json.dumps({**rec, "output": "a different answer"}).encode() + b"\n" + b"".join(lines[1:]))


@pytest.mark.parametrize("how", ["torn", "garbage", "unknown", "duplicate", "wrong_prompt_sha256", "changed_output"])
def test_submit_refuses_scores_of_damaged_predictions(echo_runs: dict[str, Path], tmp_path: Path,  # noqa: F811
                                                      how: str) -> None:
    """Old main packaged the scores on disk whatever happened to the predictions after scoring."""
    run = _copy(echo_runs["full"], tmp_path)
    _damage(run, how)
    with pytest.raises(SeamReproError) as exc:
        make_bundle(run)
    assert "\n" not in str(exc.value)


def test_submit_refuses_edited_scores(echo_runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """Scores edited consistently (instance line and summary) still differ from re-scoring the predictions."""
    run = _copy(echo_runs["full"], tmp_path)
    sdir = run / "scores" / "echo"
    lines = [json.loads(x) for x in (sdir / "instance_scores.jsonl").read_text().splitlines()]
    target = next(ln for ln in lines if ln["dataset"] == "MultiNews" and ln["run"] == 0)
    target["score"] = 100.0
    (sdir / "instance_scores.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    summary = json.loads((sdir / "summary.json").read_text())
    mine = [ln["score"] for ln in lines if ln["dataset"] == "MultiNews" and ln["run"] == 0]
    summary["datasets"]["MultiNews"]["runs"]["0"] = sum(mine) / len(mine)
    (sdir / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(InputError, match=r"instance_scores.jsonl: field 'score': MultiNews run 0 instance .* "
                                         r"re-scoring the predictions gives"):
        make_bundle(run)


def test_limited_run_gives_a_partial_bundle_with_an_explanation(echo_runs: dict[str, Path], tmp_path: Path,  # noqa: F811
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Old main: submit of any --limit run failed with an opaque prompt_digest mismatch."""
    out = tmp_path / "b.json"
    monkeypatch.setattr(sys, "argv", ["seam-repro", "submit", str(echo_runs["limited"]), "--out", str(out)])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err
    assert exc.value.code == 0, err
    assert "partial bundle: 18 of 36 instances" in err and "--limit 1" in err
    b = json.loads(out.read_text())
    assert b["partial"] is True and b["generation"]["limit"] == 1 and b["protocol"]["partial"] is True
    assert b["unscored"][0]["reason"] == "not replayed (--limit 1)"
    assert read_bundle(out).extra["partial"] is True


def test_manifest_mismatch_between_inputs_is_refused(bundle: dict, tmp_path: Path) -> None:
    write_bundle(bundle, tmp_path / "b.json")
    other = tmp_path / "other"
    write_scores(other, "org/x", {"MusiQue": {"metric": "musique_f1", "instances": [(0, "q", 1.0, True)]}},
                 manifest_digest="f" * 64)
    with pytest.raises(InputError, match="field 'manifest_digest'.*cannot be compared"):
        load_inputs([tmp_path / "b.json", other])
    with pytest.raises(InputError, match="cannot be compared"):
        load_inputs([tmp_path / "b.json"], manifest="e" * 64)


def test_run_json_must_match_scores(echo_runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    run = _copy(echo_runs["full"], tmp_path)
    rj = json.loads((run / "run.json").read_text())
    rj["manifest_digest"] = "9" * 64
    (run / "run.json").write_text(json.dumps(rj))
    with pytest.raises(InputError, match="field 'manifest_digest'"):
        make_bundle(run)


def test_several_models_need_model_option(echo_runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    run = _copy(echo_runs["full"], tmp_path)
    shutil.copytree(run / "scores" / "echo", run / "scores" / "org__other")
    s = json.loads((run / "scores" / "org__other" / "summary.json").read_text())
    s["model"]["id"] = "org/other"
    (run / "scores" / "org__other" / "summary.json").write_text(json.dumps(s))
    rj = json.loads((run / "run.json").read_text())
    rj["models"]["org__other"] = {**rj["models"]["echo"], "id": "org/other"}
    (run / "run.json").write_text(json.dumps(rj))
    with pytest.raises(InputError, match="choose one with --model ID"):
        make_bundle(run)
    with pytest.raises(InputError, match="no scores for model 'org/none'"):
        make_bundle(run, "org/none")


def test_resolve_manifest_digest(tmp_path: Path) -> None:
    assert resolve_manifest_digest("A" * 64) == "a" * 64
    assert resolve_manifest_digest(str(REPO / "manifests" / "smoke.json")) == \
        json.loads((REPO / "manifests" / "smoke.json").read_text())["digest"]
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(InputError, match="field 'digest'"):
        resolve_manifest_digest(str(tmp_path / "x.json"))


def test_scores_without_a_store_cannot_be_submitted(tmp_path: Path) -> None:
    write_scores(tmp_path, "org/new", {"MusiQue": {"metric": "musique_f1", "instances": [(0, "q1", 50.0, True)]}})
    with pytest.raises((InputError, PredictionsError)):
        make_bundle(tmp_path)


def test_seeds_folder_is_found_through_the_environment(bundle: dict, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The check reads the seeds/ it is pointed at (an installed kit has no checkout): a seeds file
    that disagrees with a genuine bundle makes it refused; no seeds/ at all is said in the report."""
    write_bundle(bundle, tmp_path / "b.json")
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    rec = json.loads((REPO / "seeds" / "smoke.json").read_text())
    rec["runs"][0]["prompt_digest"] = "1" * 64
    (seeds / "smoke.json").write_text(json.dumps(rec))
    monkeypatch.setenv("SEAM_REPRO_SEEDS", str(seeds))
    with pytest.raises(InputError, match=f"field 'seeds': differs from {seeds / 'smoke.json'}"):
        read_bundle(tmp_path / "b.json")
    (seeds / "smoke.json").unlink()
    from seam_repro.analysis.aso import AsoParams
    from seam_repro.analysis.report import build_report

    ms = read_bundle(tmp_path / "b.json")
    assert ms.extra["seeds_checked"] is False
    assert any("No seeds/ folder" in n for n in build_report([ms], None, AsoParams(b=100))["notes"])


def test_two_seeds_files_for_one_manifest_are_refused_unless_identical(bundle: dict, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Old main: two seeds files for one manifest digest were resolved by file name (the last in
    sort order won), so a genuine bundle passed or failed depending on what the files were called."""
    write_bundle(bundle, tmp_path / "b.json")
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    genuine = json.loads((REPO / "seeds" / "smoke.json").read_text())
    other = json.loads(json.dumps(genuine))
    other["runs"][0]["prompt_digest"] = "1" * 64
    (seeds / "a-other.json").write_text(json.dumps(other))
    (seeds / "z-smoke.json").write_text(json.dumps(genuine))  # sorts last: old main checked against it only
    monkeypatch.setenv("SEAM_REPRO_SEEDS", str(seeds))
    monkeypatch.setattr(sys, "argv", ["seam-repro", "diff", str(tmp_path / "b.json"), "--allow-protocol-mismatch"])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"error: {seeds / 'z-smoke.json'}: field 'manifest_digest'") and \
        str(seeds / "a-other.json") in err and "one seeds file per manifest digest" in err
    (seeds / "a-other.json").write_text(json.dumps({**genuine, "manifest": "a-other.json"}))  # a copy: fine
    assert read_bundle(tmp_path / "b.json").extra["seeds_checked"] is True
