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
from seam_repro.errors import InputError

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
    assert st["arsd"]["org/high"] == pytest.approx(2.9 / 24.5 * 100)  # std 2.87 and mean rounded to 0.1 first
    md = render_markdown(rep)
    assert "| 1 | org/high | 24.5 ± 2.9 | 1.00 |" in md and "## ECB+ (conll_f1)" in md


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


def _table_rows(md: str) -> list[str]:
    return [line for line in md.splitlines() if line.startswith("|")]


def test_names_cannot_inject_rows_into_report_md(tmp_path: Path) -> None:
    """Old main: a model id or display name holding a newline (or a table pipe) was written into
    report.md as is, so it added rows and cells of its own. Every input name is now one escaped cell."""
    dirs = _three_models(tmp_path / "plain")
    plain = _table_rows(render_markdown(build_report(load_inputs(dirs), None, FAST)))
    forged_id = "org/low\n| 1 | forged | 99.0 ± 0.0 | 1.00 |"
    write_scores(tmp_path / "forged", forged_id, {"MultiNews": {"metric": "rouge_geo", "instances": [
        (r, f"i{r}", float(r), r % 2 == 0) for r in range(10)]}})
    info = json.loads((dirs[2] / "run.json").read_text())
    info["models"]["org__mid"]["name"] = "Mid | v2"  # a pipe is a fine name: escaped in the cell
    (dirs[2] / "run.json").write_text(json.dumps(info))
    rep = build_report(load_inputs([dirs[1], dirs[2], tmp_path / "forged"]), None, FAST)
    md = render_markdown(rep)
    rows = _table_rows(md)
    assert len(rows) == len(plain) and not any("forged" in r and r.startswith("| 1 | forged") for r in rows)
    assert "| 3 | org/low\\n\\| 1 \\| forged \\| 99.0 ± 0.0 \\| 1.00 \\| | 4.5 ± 2.9 |" in md
    assert "| 2 | Mid \\| v2 | 14.5 ± 2.9 |" in md
    tables: list[list[str]] = [[]]
    for line in md.splitlines():  # every row of a table has as many cells as its header
        if line.startswith("|"):
            tables[-1].append(line.replace("\\|", ""))
        elif tables[-1]:
            tables.append([])
    for table in filter(None, tables):
        assert {row.count("|") for row in table} == {table[0].count("|")}, table


@pytest.mark.parametrize("name", ["two\nlines", "tab\there", "nul\x00", "sep\u2028", "rtl\u202eoverride", " ", "x" * 201])
def test_display_names_are_checked_at_input(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Old main: `replay --name` took any text (a newline made rows in report.md), and so did a
    display name edited into run.json or summary.json. Each is one line naming where, exit 2."""
    from trust_helpers import smoke_copy

    manifest = smoke_copy(tmp_path)
    monkeypatch.setattr(sys, "argv", ["seam-repro", "replay", str(manifest), "--backend", "echo", "--limit", "1",
                                      "--out", str(tmp_path / "run"), "--name", name])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and err.startswith("error: --name: expected ") and "\n" not in err, err
    assert not (tmp_path / "run").exists()
    (d,) = _three_models(tmp_path / "runs")[:1]
    info = json.loads((d / "run.json").read_text())
    info["models"]["org__low"]["name"] = name
    (d / "run.json").write_text(json.dumps(info))
    if name.strip():  # an empty name in run.json means "show the id", as before
        with pytest.raises(InputError, match=r"run\.json: field 'models\.org__low\.name': expected ") as err_info:
            load_inputs([d])
        assert "\n" not in str(err_info.value)
    summary = d / "scores" / "org__low" / "summary.json"
    s = json.loads(summary.read_text())
    s["model"]["name"] = name
    summary.write_text(json.dumps(s))
    if name.strip():
        with pytest.raises(InputError, match=r"summary\.json: field 'model\.name': expected "):
            load_inputs([d])
