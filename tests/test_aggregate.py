"""Aggregation checked against hand-computed means / population stds and numpy's corrcoef."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seam_repro.analysis.aggregate import (
    build_model_scores,
    load_run_dir,
    load_scores_dir,
    read_instance_scores,
    summarize,
)
from seam_repro.errors import InputError

DIGEST = "a" * 64


def write_scores(run_dir: Path, model_id: str, datasets: dict[str, dict[str, Any]], *,
                 manifest_digest: str = DIGEST, revision: str = "r1", run_json: bool = True,
                 chat_template: str | None = "c" * 64, protocol: dict[str, Any] | None = None) -> Path:
    """Write scores/<slug>/{summary.json,instance_scores.jsonl} (+ run.json) from hand-made rows.

    ``datasets[name] = {"metric": str, "instances": [(run, instance_id, score, valid_format)],
    "runs": {run: score}}``; ``runs`` defaults to the per-run instance means."""
    slug = model_id.replace("/", "__").replace("@", "__")
    sdir = run_dir / "scores" / slug
    sdir.mkdir(parents=True, exist_ok=True)
    lines, summary_ds = [], {}
    for name, spec in datasets.items():
        per_run: dict[int, list[float]] = {}
        for run, iid, score, valid in spec["instances"]:
            lines.append({"dataset": name, "run": run, "instance_id": iid, "metric": spec["metric"],
                          "score": score, "valid_format": valid, "metric_version": "t", "details": {}})
            if score is not None:
                per_run.setdefault(run, []).append(score)
        runs = spec.get("runs") or {r: sum(v) / len(v) for r, v in per_run.items()}
        summary_ds[name] = {"metric": spec["metric"], "runs": {str(k): v for k, v in runs.items()}}
    summary = {"model": {"id": model_id, "revision": revision}, "manifest_digest": manifest_digest,
               "prompt_digest": "b" * 64, "datasets": summary_ds}
    if protocol is not None:
        summary["protocol"] = protocol
    (sdir / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    (sdir / "instance_scores.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    if run_json:
        info_path = run_dir / "run.json"
        info = json.loads(info_path.read_text()) if info_path.exists() else {
            "schema_version": 1, "manifest_digest": manifest_digest, "prompt_digest": "b" * 64,
            "fingerprint": {"python": "3.11"}, "models": {}}
        info["models"][slug] = {"id": model_id, "revision": revision,
                                "backend": {"chat_template_sha256": chat_template}}
        info_path.write_text(json.dumps(info), encoding="utf-8")
    return sdir


def _mixed(tmp_path: Path) -> Path:
    return write_scores(tmp_path, "org/m", {
        "MultiNews": {"metric": "rouge_geo", "instances": [(0, "a", 10.0, True), (0, "b", 20.0, True),
                                                           (0, "c", 30.0, False), (1, "a", 40.0, True),
                                                           (1, "d", 50.0, True)]},
        "ECB": {"metric": "conll_f1", "runs": {0: 30.0, 1: 20.0},
                "instances": [(0, "t1", None, True), (0, "t2", None, False), (1, "t1", None, True)]},
    })


def test_run_means_and_population_std_by_hand(tmp_path: Path) -> None:
    ms = load_scores_dir(_mixed(tmp_path))
    mn = summarize(ms.datasets["MultiNews"])
    assert mn.runs == {0: 20.0, 1: 45.0}          # (10+20+30)/3, (40+50)/2
    assert mn.mean == pytest.approx(32.5)
    assert mn.std == pytest.approx(12.5)          # population std; the sample std would be 17.68
    ecb = summarize(ms.datasets["ECB"])           # coreference: the run score given, not instance means
    assert ecb.runs == {0: 30.0, 1: 20.0}
    assert (ecb.mean, ecb.std) == (pytest.approx(25.0), pytest.approx(5.0))
    assert ecb.format_rate == pytest.approx(2 / 3)
    assert mn.format_rate == pytest.approx(4 / 5)


def test_format_correlation_matches_numpy(tmp_path: Path) -> None:
    ms = load_scores_dir(_mixed(tmp_path))
    corr = summarize(ms.datasets["MultiNews"]).format_correlation
    x, y = [1, 1, 0, 1, 1], [10, 20, 30, 40, 50]
    assert corr["level"] == "instance" and corr["n"] == 5
    assert corr["r"] == pytest.approx(np.corrcoef(x, y)[0, 1])
    ecb = summarize(ms.datasets["ECB"]).format_correlation   # per run: rates (0.5, 1.0) vs scores (30, 20)
    assert ecb["level"] == "run" and ecb["r"] == pytest.approx(-1.0)


def test_constant_format_gives_reason_not_nan(tmp_path: Path) -> None:
    sdir = write_scores(tmp_path, "m", {"MusiQue": {"metric": "musique_f1", "instances": [
        (0, "a", 1.0, True), (0, "b", 3.0, True)]}})
    corr = summarize(load_scores_dir(sdir).datasets["MusiQue"]).format_correlation
    assert corr["r"] is None and corr["reason"] == "constant format validity"


def test_summary_disagreeing_with_instances_is_refused(tmp_path: Path) -> None:
    sdir = write_scores(tmp_path, "m", {"MultiNews": {"metric": "rouge_geo", "runs": {0: 99.0},
                                                      "instances": [(0, "a", 10.0, True)]}})
    with pytest.raises(InputError, match=r"summary.json: record datasets.MultiNews: field 'runs.0': run 0 is 99.0"):
        load_scores_dir(sdir)


def test_bad_instance_line_names_line_and_field(tmp_path: Path) -> None:
    p = tmp_path / "instance_scores.jsonl"
    p.write_text('{"dataset": "ECB", "run": 0, "instance_id": "a", "metric": "m", "score": 1, "valid_format": true}\n'
                 '{"dataset": "ECB", "run": 0, "instance_id": "b", "metric": "m", "score": "x", "valid_format": true}\n')
    with pytest.raises(InputError, match=r"record line 2: field 'score': expected a finite number or null"):
        read_instance_scores(p)
    p.write_text('{"dataset": "ECB", "run": -1}\n')
    with pytest.raises(InputError, match="field 'instance_id'"):
        read_instance_scores(p)
    p.write_text("{not json\n")
    with pytest.raises(InputError, match="line 1: not valid JSON"):
        read_instance_scores(p)


def test_summary_shape_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="field 'model'"):
        build_model_scores({"datasets": {}}, [], "s.json")
    base = {"model": {"id": "m"}, "manifest_digest": "x", "prompt_digest": "y"}
    with pytest.raises(InputError, match="field 'runs': run key 'first'"):
        build_model_scores({**base, "datasets": {"ECB": {"metric": "conll_f1", "runs": {"first": 1}}}}, [], "s.json")
    with pytest.raises(InputError, match="field 'runs.0': expected a finite number"):
        build_model_scores({**base, "datasets": {"ECB": {"metric": "conll_f1", "runs": {"0": float("nan")}}}},
                           [], "s.json")


def test_missing_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no scored models"):
        load_run_dir(tmp_path)
    (tmp_path / "scores" / "m").mkdir(parents=True)
    with pytest.raises(InputError, match=r"summary.json: missing; run `seam-repro score"):
        load_run_dir(tmp_path)


def test_unscored_dataset_is_reported_not_counted(tmp_path: Path) -> None:
    sdir = write_scores(tmp_path, "org/m", {
        "MultiNews": {"metric": "rouge_geo", "instances": [(0, "a", 10.0, True), (1, "a", 30.0, True)]},
        "FuseReviews": {"metric": "fic_f1", "runs": {0: None, 1: None},
                        "instances": [(0, "x", None, True), (1, "x", None, True)]},
    })
    summary = json.loads((sdir / "summary.json").read_text())
    summary["datasets"]["FuseReviews"]["reason"] = "FIC models unavailable"
    (sdir / "summary.json").write_text(json.dumps(summary))
    ms = load_scores_dir(sdir)
    assert list(ms.datasets) == ["MultiNews"]
    assert ms.unscored == {"FuseReviews": "FIC models unavailable"}


def test_a_failed_run_is_missing_not_fatal(tmp_path: Path) -> None:
    """One run without a score (null): the dataset keeps the runs present and lists the missing one
    with the scorer's reason (before, the whole model was refused). Instance scores that contradict
    the null, or a run value that is not a number, are still refused."""
    sdir = write_scores(tmp_path, "org/m", {
        "ECB": {"metric": "conll_f1", "runs": {0: 30.0, 1: 20.0, 2: 10.0},
                "instances": [(r, "t", None, True) for r in range(3)]},
        "MultiNews": {"metric": "rouge_geo", "instances": [(0, "a", 10.0, True), (1, "a", 30.0, True)]}})
    summary = json.loads((sdir / "summary.json").read_text())
    summary["datasets"]["ECB"].update(runs={"0": 30.0, "1": None, "2": 10.0}, reason="scorer.pl failed")
    summary["datasets"]["ECB"]["intended"] = {"metric": "conll_f1", "runs": {"0": 31.0, "1": None, "2": 11.0}}
    (sdir / "summary.json").write_text(json.dumps(summary))
    ds = load_scores_dir(sdir).datasets["ECB"]
    assert ds.runs == {0: 30.0, 2: 10.0} and ds.missing_runs == {1: "scorer.pl failed"}
    s = summarize(ds)
    assert (s.mean, s.std) == (20.0, 10.0) and s.intended == {"metric": "conll_f1", "mean": 21.0, "std": 10.0}
    assert s.missing_runs == {1: "scorer.pl failed"} and len(s.runs) == 2
    summary["datasets"]["MultiNews"]["runs"] = {"0": 10.0, "1": None}   # instances say run 1 scored 30.0
    (sdir / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(InputError, match=r"runs \[0\] differ from runs with instance scores \[0, 1\]"):
        load_scores_dir(sdir)
    summary["datasets"]["MultiNews"]["runs"] = {"0": 10.0, "1": "n/a"}
    (sdir / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(InputError, match=r"runs.1.*expected a finite number or null, got 'n/a'"):
        load_scores_dir(sdir)
