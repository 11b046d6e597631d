"""Reports: Table-3-shaped rows from hand-made runs, reference models from summary statistics
(checked against the paper's own ranks), written files, and the CLI with bundles."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from test_aggregate import write_scores
from trust_helpers import echo_runs  # noqa: F401 - session fixture

from seam_repro.analysis.aso import AsoParams
from seam_repro.analysis.reference import load_reference
from seam_repro.analysis.report import build_report, render_markdown, surrogate_runs, write_report
from seam_repro.analysis.submit import load_inputs, make_bundle, write_bundle
from seam_repro.cli import main

FAST = AsoParams(b=200)


def _three_models(root: Path) -> list[Path]:
    """Models with disjoint per-run scores on MultiNews (complete dominance) and one on ECB."""
    dirs = []
    for name, base in (("org/low", 0.0), ("org/high", 20.0), ("org/mid", 10.0)):
        d = root / name.split("/")[1]
        write_scores(d, name, {"MultiNews": {"metric": "rouge_geo", "instances": [
            (r, f"i{r}", base + r, r % 2 == 0) for r in range(10)]}})
        dirs.append(d)
    write_scores(dirs[1], "org/high", {
        "MultiNews": {"metric": "rouge_geo", "instances": [(r, f"i{r}", 20.0 + r, r % 2 == 0) for r in range(10)]},
        "ECB": {"metric": "conll_f1", "runs": {0: 0.0, 1: 0.0}, "instances": [(0, "t", None, True)]}})
    return dirs


def test_surrogate_runs_have_exact_mean_and_population_std() -> None:
    runs = surrogate_runs(21.4, 0.7)
    assert len(runs) == 10
    assert np.mean(runs) == pytest.approx(21.4) and np.std(runs) == pytest.approx(0.7)
    assert surrogate_runs(3.0, 0.0) == [3.0] * 10


def test_table_rows_by_hand(tmp_path: Path) -> None:
    rep = build_report(load_inputs(_three_models(tmp_path)), None, FAST)
    rows = rep["datasets"]["MultiNews"]["rows"]
    assert [r["model"] for r in rows] == ["org/high", "org/mid", "org/low"]
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert [r["dominance_over_next"] for r in rows] == [1.0, 1.0, None]
    assert rows[0]["mean"] == pytest.approx(24.5) and rows[0]["std"] == pytest.approx(np.std(range(10)))
    assert rows[0]["format_rate"] == 0.5 and not rows[0]["from_summary_stats"]
    st = rep["stability"]
    assert st["average_rank"] == {"org/high": 1.0, "org/mid": 2.0, "org/low": 3.0}
    assert st["ranked_in"]["org/high"] == ["MultiNews", "ECB"]
    assert st["arsd_excluded"] == {"org/high": ["ECB"]}          # ECB mean 0.0 is left out, not divided by
    # as published: upstream's csv holds ROUGE x100 again, (2450.0, 287.2), not (24.5, 2.9)
    assert st["arsd_rule"] == "as published"
    assert st["arsd"]["org/high"] == pytest.approx(287.2 / 2450.0 * 100, abs=1e-12)
    assert st["unrounded"]["arsd"]["org/high"] == pytest.approx(np.std(range(10)) / 24.5 * 100, abs=1e-12)
    md = render_markdown(rep)
    assert "| 1 | org/high | 24.5 ± 2.9 | 1.00 |" in md and "## ECB+ (conll_f1)" in md


def test_arsd_rule_follows_the_scoring_profile(tmp_path: Path) -> None:
    """The upstream profile reports ARSD as published with the unrounded one beside it (both in the
    Markdown); scores made under seam-repro-1 get the unrounded one alone."""
    dirs = _three_models(tmp_path)
    md = render_markdown(build_report(load_inputs(dirs), None, FAST))
    assert "| model | AR ↓ | ARSD ↓ (as published) | ARSD unrounded |" in md
    assert f"| org/high | 1.00 | {287.2 / 2450 * 100:.1f} | {np.std(range(10)) / 24.5 * 100:.1f} |" in md
    write_scores(tmp_path / "corrected", "org/new", {"MultiNews": {"metric": "rouge_geo", "instances": [
        (r, "i", 5.0 + r, True) for r in range(10)]}}, protocol={"profile": "seam-repro-1"})
    rep = build_report(load_inputs([*dirs, tmp_path / "corrected"]), None, FAST)
    st = rep["stability"]
    assert st["arsd_rule"] == "unrounded" and "unrounded" not in st
    assert st["arsd"]["org/high"] == pytest.approx(np.std(range(10)) / 24.5 * 100, abs=1e-12)
    assert "| model | AR ↓ | ARSD ↓ (unrounded) | AR over (datasets) |" in render_markdown(rep)


def test_failed_run_through_the_cli_is_ranked_over_the_runs_present(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """One run the scorer could not score (null in summary.json): report still ranks the dataset, over
    the 9 runs present, and says so in report.json (n_runs, missing_runs) and report.md's notes. Before,
    the command refused the whole input (exit 2)."""
    run_dir = tmp_path / "run"
    for model, base in (("org/a", 20.0), ("org/b", 10.0)):
        sdir = write_scores(run_dir, model, {"ECB": {"metric": "conll_f1", "runs": {r: base + r for r in range(10)},
                                                     "instances": [(r, "t", None, True) for r in range(10)]}})
    summary = json.loads((sdir / "summary.json").read_text())       # org/b: run 4 failed
    summary["datasets"]["ECB"]["runs"]["4"] = None
    summary["datasets"]["ECB"]["reason"] = "scorer.pl exited 2"
    (sdir / "summary.json").write_text(json.dumps(summary))
    monkeypatch.setattr(sys, "argv", ["seam-repro", "report", str(run_dir), "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 0, capsys.readouterr().err
    rep = json.loads((tmp_path / "o" / "report.json").read_text())
    rows = rep["datasets"]["ECB"]["rows"]
    assert [(r["model"], r["n_runs"], r.get("missing_runs")) for r in rows] == \
        [("org/a", 10, None), ("org/b", 9, {"4": "scorer.pl exited 2"})]
    present = [10.0 + r for r in range(10) if r != 4]
    assert rows[1]["runs"] == present and rows[1]["mean"] == pytest.approx(np.mean(present))
    assert rows[1]["std"] == pytest.approx(np.std(present))
    assert rep["stability"]["arsd"]["org/b"] == pytest.approx(round(np.std(present) * 100, 1)
                                                              / round(np.mean(present) * 100, 1) * 100, abs=1e-12)
    assert ("org/b: ECB run(s) 4 have no score (scorer.pl exited 2); its mean, std, rank and ARSD there are over "
            "the 9 runs present.") in (tmp_path / "o" / "report.md").read_text()


def test_reference_models_rank_like_the_paper() -> None:
    """Surrogate runs built from Table 3's mean ± std must give back the paper's own rank order."""
    from seam_repro.analysis.aso import rank_models

    ref = load_reference("paper")
    for name, ds in ref.datasets.items():
        rows = [r for r in ds.rows if r.mean is not None and r.std is not None]
        ranking = rank_models({r.model: surrogate_runs(r.mean, r.std) for r in rows}, name, AsoParams(b=300))
        assert ranking.order == [r.model for r in sorted(rows, key=lambda r: r.rank)], name
        paper_dom = [r.dominance_over_next for r in sorted(rows, key=lambda r: r.rank)]
        for ours, theirs in zip(ranking.dominance[:-1], paper_dom[:-1], strict=True):
            assert abs(ours - theirs) <= 0.2, (name, ours, theirs)   # surrogates only approximate the runs


def test_new_model_against_reference(tmp_path: Path) -> None:
    write_scores(tmp_path, "org/new", {"MultiNews": {"metric": "rouge_geo", "instances": [
        (r, "i", 25.0 + 0.1 * r, True) for r in range(10)]},
        "ECB": {"metric": "conll_f1", "runs": {r: 10.0 + r for r in range(10)}, "instances": [(0, "t", None, True)]}})
    rep = build_report(load_inputs([tmp_path]), load_reference("paper"), FAST)
    mn = rep["datasets"]["MultiNews"]["rows"]
    assert mn[0]["model"] == "org/new" and len(mn) == 8
    assert all(r["from_summary_stats"] for r in mn[1:]) and mn[1]["model"] == "Mixtral-8x7B"
    ecb = [r["model"] for r in rep["datasets"]["ECB"]["rows"]]
    assert "Gemma-7B" not in ecb and len(ecb) == 7                       # NA in the paper ...
    assert {"model": "Gemma-7B", "cell": "NA", "reason": "NA in the paper", "from_summary_stats": True} \
        in rep["datasets"]["ECB"]["absent"]                              # ... shown as an explicit NA cell
    md = render_markdown(rep)
    assert "| 2 | Mixtral-8x7B † | 21.4 ± 0.7 |" in md and "surrogate" in md
    assert "| – | Gemma-7B † | NA (NA in the paper) | – |" in md
    # old main: columns no input model scored disappeared and the paper models' AR was recomputed
    # over the remaining datasets; now every Table 3 column stays, with explicit cells
    assert list(rep["datasets"]) == ["MultiNews", "OpenASP", "FuseReviews", "MusiQue", "SciCo", "ECB"]
    assert {"model": "org/new", "cell": "not scored", "reason": "no scores for this dataset in the input",
            "from_summary_stats": False} in rep["datasets"]["OpenASP"]["absent"]
    assert len(rep["stability"]["ranked_in"]["Llama-3-8B"]) == 6
    assert rep["stability"]["ranked_in"]["org/new"] == ["MultiNews", "ECB"]
    assert "AR over (datasets)" in md and "| 2: MultiNews, ECB |" in md


def test_write_report_files(tmp_path: Path) -> None:
    rep = build_report(load_inputs(_three_models(tmp_path / "runs")), load_reference("paper"), FAST)
    paths = write_report(rep, tmp_path / "out")
    assert [p.name for p in paths] == ["report.json", "report.md", "box_plots.png", "ar_arsd.png"]
    assert json.loads(paths[0].read_text())["kind"] == "seam-repro/report"
    for png in paths[2:]:
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


def test_report_cli_with_bundles(echo_runs: dict[str, Path], tmp_path: Path,  # noqa: F811
                                 monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    bundle = tmp_path / "echo.json"
    write_bundle(make_bundle(echo_runs["full"]), bundle)
    monkeypatch.setattr(sys, "argv", ["seam-repro", "report", str(bundle), "--out", str(tmp_path / "o"),
                                      "--seed", "7"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 0
    rep = json.loads((tmp_path / "o" / "report.json").read_text())
    assert rep["aso"]["seed"] == 7 and [r["model"] for r in rep["datasets"]["MultiNews"]["rows"]] == ["echo"]
    other = tmp_path / "other"
    write_scores(other, "org/x", {"MusiQue": {"metric": "musique_f1", "instances": [(0, "q", 1.0, True)]}},
                 manifest_digest="f" * 64)
    monkeypatch.setattr(sys, "argv", ["seam-repro", "report", str(bundle), str(other), "--out", str(tmp_path / "o2")])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    assert "field 'manifest_digest'" in capsys.readouterr().err
