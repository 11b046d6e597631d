"""``score`` streams one (dataset, run) at a time: the per-sample log against a join made by hand
over the three files it replaces, results independent of the prompt file's order, the FIC models'
absence decided without importing torch/transformers/spaCy, progress on stderr, and an error
mid-way that leaves earlier scores as they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from test_scoring import OUTPUTS, PROMPTS, SLUG, FakeFic, read_lines, write_run

from seam_repro.cli import cli
from seam_repro.errors import MissingDataError, PredictionsError
from seam_repro.metrics import fic
from seam_repro.scoring.loop import score_run_dir

REPO = Path(__file__).resolve().parents[1]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_samples_join_prompts_predictions_scores_and_factors(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    [summary] = score_run_dir(run, fic_factory=FakeFic)
    samples = _jsonl(summary.parent / "samples.jsonl")
    prompts = {(p["dataset"], p["run"], p["instance_id"]): p for p in _jsonl(run / "prompts.jsonl")}
    preds = {(p["dataset"], p["run"], p["instance_id"]): p
             for f in sorted((run / "predictions" / SLUG).glob("*/*.jsonl")) for p in _jsonl(f)}
    scores = read_lines(summary.parent / "instance_scores.jsonl")
    manifest = json.loads((run / "manifest.json").read_text("utf-8"))
    runs = {(r["dataset"], r["run"]): r for r in manifest["runs"]}
    assert [(s["dataset"], s["run"], s["instance_id"]) for s in samples] == list(scores)
    assert len(samples) == len(OUTPUTS)
    for s in samples:
        key = (s["dataset"], s["run"], s["instance_id"])
        entry = runs[key[:2]]
        instance = next(i for i in entry["instances"] if i["id"] == key[2])
        assert s["prompt_sha256"] == prompts[key]["prompt_sha256"] == preds[key]["prompt_sha256"]
        assert s["prediction"] == preds[key]["output"] == OUTPUTS[key]
        assert s["gold"] == prompts[key]["target"]
        assert s["score"] == scores[key]["score"] and s["valid_format"] == scores[key]["valid_format"]
        assert s["scores"]["corrected"] == scores[key]["details"]["corrected"]["score"]
        assert s["factors"] == {"paraphrase_index": entry["paraphrase_index"], "demo_indices": entry["demo_indices"],
                                "doc_order": entry["doc_order"], "max_num_docs": entry["max_num_docs"],
                                "sample_seed": entry["sample_seed"], "gen_seed": instance["gen_seed"]}
        assert set(s["parsed"]) == {"upstream", "corrected"}
    mn = next(s for s in samples if (s["dataset"], s["run"], s["instance_id"]) == ("MultiNews", 0, "1"))
    assert mn["parsed"]["corrected"] == "Storms hit the coast; thousands evacuated."  # clean extraction cuts the rest


def test_prompt_file_order_does_not_change_the_scores(tmp_path: Path) -> None:
    """Runs interleaved in prompts.jsonl: each run is still scored whole (one aggregate per run)."""
    a = write_run(tmp_path / "a")
    interleaved = [PROMPTS[i] for i in (0, 3, 2, 5, 1, 6, 4)]  # MultiNews run 0 and MusiQue run 0 split
    assert sorted(map(json.dumps, interleaved)) == sorted(map(json.dumps, PROMPTS))
    b = write_run(tmp_path / "b", prompts=interleaved)
    [sa] = score_run_dir(a, fic_factory=FakeFic)
    [sb] = score_run_dir(b, fic_factory=FakeFic)
    da, db = (json.loads(p.read_text("utf-8")) for p in (sa, sb))
    assert da["datasets"] == db["datasets"]
    assert read_lines(sa.parent / "instance_scores.jsonl") == read_lines(sb.parent / "instance_scores.jsonl")


def test_absent_fic_models_are_known_without_importing_the_libraries(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    code = ("import sys, json; from seam_repro.scoring.loop import score_run_dir; "
            f"[p] = score_run_dir({str(run)!r}); "
            "print(json.dumps({'heavy': sorted(m for m in ('torch', 'transformers', 'spacy') if m in sys.modules), "
            "'reason': json.load(open(p))['datasets']['FuseReviews']['reason']}))")
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1")
    env.pop("HF_HUB_CACHE", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["heavy"] == [], got
    assert "not in the local cache" in got["reason"] and "google/flan-t5-xxl" in got["reason"]


def test_availability_reads_the_hub_cache_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rev = "a" * 40
    pins = (fic.ModelPin("org/faith", rev), fic.ModelPin("org/cov", rev))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MissingDataError, match=r"faithfulness model org/faith@a{40} is not available .*--fic-download"):
        fic.check_available(pins)
    for name in ("faith", "cov"):
        snap = tmp_path / "hub" / f"models--org--{name}" / "snapshots" / rev
        snap.mkdir(parents=True)
        (snap / "config.json").write_text("{}", "utf-8")
    fic.check_available(pins)  # both cached: loading is left to transformers
    local = tmp_path / "local-model"
    local.mkdir()
    fic.check_available((fic.ModelPin(str(local), None), pins[1]))


def test_progress_goes_to_stderr(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    res = CliRunner().invoke(cli, ["score", str(run), "--no-fic"])
    assert res.exit_code == 0, res.output
    assert f"score:{SLUG}" in res.stderr and f"{len(OUTPUTS)}/{len(PROMPTS)}" in res.stderr
    assert "score:" not in res.stdout


def test_an_error_mid_way_keeps_the_previous_scores(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    [summary] = score_run_dir(run, fic_factory=FakeFic)
    before = {p.name: p.read_bytes() for p in summary.parent.iterdir()}
    ecb = run / "predictions" / SLUG / "ECB" / "run_0.jsonl"  # the last run scored
    rec = json.loads(ecb.read_text("utf-8"))
    ecb.write_text(json.dumps(dict(rec, prompt_sha256="0" * 64)) + "\n", "utf-8")
    with pytest.raises(PredictionsError, match="differs from prompts.jsonl"):
        score_run_dir(run, fic_factory=FakeFic)
    assert {p.name: p.read_bytes() for p in summary.parent.iterdir()} == before  # no temporary file left either
