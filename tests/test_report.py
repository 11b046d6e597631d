"""Reports: Table-3-shaped rows from hand-made runs, reference models from summary statistics
(checked against the paper's own ranks), written files, and the CLI with bundles."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from test_aggregate import write_scores
from test_diff import PAPER_PROTOCOL
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
        "ECB": {"metric": "conll_f1", "runs": {r: 10.0 + r for r in range(10)}, "instances": [(0, "t", None, True)]}},
        protocol=PAPER_PROTOCOL)
    rep = build_report(load_inputs([tmp_path]), load_reference("paper"), FAST)
    mn = rep["datasets"]["MultiNews"]["rows"]
    assert mn[0]["model"] == "org/new" and len(mn) == 8
    assert all(r["from_summary_stats"] for r in mn[1:]) and mn[1]["model"] == "Mixtral-8x7B"
    ecb = [r["model"] for r in rep["datasets"]["ECB"]["rows"]]
    assert "Gemma-7B" not in ecb and len(ecb) == 7                       # NA in the paper ...
    assert {"model": "Gemma-7B", "cell": "NA", "reason": "NA in the paper", "from_summary_stats": True} \
        in rep["datasets"]["ECB"]["absent"]                              # ... shown as an explicit NA cell
    md = render_markdown(rep)
    assert "| 2 (paper: 1) | Mixtral-8x7B † | 21.4 ± 0.7 |" in md and "surrogate" in md
    assert "| – | Gemma-7B † | NA (NA in the paper) | – |" in md
    # old main: columns no input model scored disappeared and the paper models' AR was recomputed
    # over the remaining datasets; now every Table 3 column stays, with explicit cells
    assert list(rep["datasets"]) == ["MultiNews", "OpenASP", "FuseReviews", "MusiQue", "SciCo", "ECB"]
    assert {"model": "org/new", "cell": "not scored", "reason": "no scores for this dataset in the input",
            "from_summary_stats": False} in rep["datasets"]["OpenASP"]["absent"]
    assert len(rep["stability"]["ranked_in"]["Llama-3-8B"]) == 6
    assert rep["stability"]["ranked_in"]["org/new"] == ["MultiNews", "ECB"]
    assert "AR over (datasets)" in md and "| 2: MultiNews, ECB |" in md
    [spans] = [n for n in rep["notes"] if n.startswith("Average ranks are over different datasets")]
    assert "org/new over 2 (MultiNews, ECB)" in spans and "Gemma-7B over 5" in spans
    assert "Llama-3-8B" not in spans and spans.endswith("every other model over 6 (MultiNews, OpenASP, "
                                                        "FuseReviews, MusiQue, SciCo, ECB).")


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


# --- reports people can read (issue 26) ----------------------------------------------------------
PACKAGED = Path(__file__).resolve().parents[1] / "seam_repro" / "data" / "reference" / "paper_table3.json"
SHARED_TABLE = Path(__file__).resolve().parents[2] / "shared" / "seam" / "reference" / "paper_table3.json"
LONG_REASON = ("FIC faithfulness model google/flan-t5-xxl@ae7c9136adc7555eeccc78cdd960dfd60fb346ce is not available "
               "(not in the local cache; pass --fic-download to fetch it): We couldn't connect to "
               "'https://huggingface.co' to load the files, and couldn't find them in the cached files.")


def _paper_cells(path: Path) -> dict[tuple[str, str], dict]:
    """(kit dataset name, model) -> the row exactly as the JSON file states it (read without the kit)."""
    names = {"OpenAsp": "OpenASP", "MuSiQue": "MusiQue", "ECB+": "ECB"}
    data = json.loads(path.read_text("utf-8"))
    return {(names.get(d, d), r["model"]): r for d, ds in data["datasets"].items() for r in ds["rows"]}


def _unmatched_protocol_run(root: Path, model: str = "org/echo", unscored: str | None = None) -> Path:
    """A run scored under another protocol (none stated, like a smoke run), on every Table 3 dataset."""
    spec = {d: {"metric": m, "instances": [(r, "i", v + r, True) for r in range(3)]}
            for d, m, v in (("MultiNews", "rouge_geo", 21.0), ("MusiQue", "musique_f1", 11.0),
                            ("ECB", "conll_f1", 1.0))}
    if unscored:
        spec[unscored] = {"metric": "fic_f1", "runs": {0: None, 1: None}, "instances": [(0, "f", None, True)]}
    sdir = write_scores(root, model, spec)
    if unscored:
        summary = json.loads((sdir / "summary.json").read_text())
        summary["datasets"][unscored]["reason"] = LONG_REASON
        (sdir / "summary.json").write_text(json.dumps(summary))
    return root


@pytest.mark.parametrize("with_run", [False, True])
def test_paper_rows_show_the_papers_own_numbers(tmp_path: Path, with_run: bool) -> None:
    """Old main printed dominance values recomputed from surrogate runs for the paper's own rows:
    8 of the 35 cells differed from Table 3. Checked against the JSON read directly (and against the
    shared third-party transcription where present), with and without a ‡ run in the report."""
    models = load_inputs([_unmatched_protocol_run(tmp_path)]) if with_run else []
    rep = build_report(models, load_reference("paper"), FAST)
    md = render_markdown(rep)
    sources = [PACKAGED] + ([SHARED_TABLE] if SHARED_TABLE.is_file() else [])
    for src in sources:
        cells = _paper_cells(src)
        seen = 0
        for name, ds in rep["datasets"].items():
            for r in ds["rows"]:
                paper = cells[(name, r["model"])]
                assert (r["rank"], r["mean"], r["std"], r["dominance_over_next"]) == \
                    (paper["rank"], paper["mean"], paper["std"], paper["dominance_over_next"]), (src, name, r["model"])
                dom = "–" if paper["dominance_over_next"] is None else f"{paper['dominance_over_next']:.2f}"
                assert f"| {paper['rank']} | {r['model']} † | {paper['mean']:.1f} ± {paper['std']:.1f} | {dom} |" in md
                seen += 1
        assert seen == sum(c["mean"] is not None for c in cells.values()) == 41
    assert "≈" not in "\n".join(ln for ln in md.splitlines() if ln.startswith("| "))  # nothing recomputed shown


def test_recomputed_dominance_is_marked(tmp_path: Path) -> None:
    """A comparable new model between two paper models: the paper row above it shows a value
    computed here (marked ≈, source 'surrogate'); every other paper row keeps the paper's value."""
    write_scores(tmp_path, "org/new", {"MultiNews": {"metric": "rouge_geo", "instances": [
        (r, "i", 20.6 + 0.01 * r, True) for r in range(10)]}}, protocol=PAPER_PROTOCOL)
    rep = build_report(load_inputs([tmp_path]), load_reference("paper"), FAST)
    rows = rep["datasets"]["MultiNews"]["rows"]
    cells = _paper_cells(PACKAGED)
    i = [r["model"] for r in rows].index("org/new")
    assert 0 < i < len(rows) - 1
    for j, r in enumerate(rows[:-1]):
        if j in (i - 1, i):
            assert r["dominance_source"] == "surrogate"
        else:
            assert r["dominance_source"] == "paper" and r["dominance_over_next"] == \
                cells[("MultiNews", r["model"])]["dominance_over_next"]
    md = render_markdown(rep)
    above = rows[i - 1]
    assert f"| {above['model']} † | {above['mean']:.1f} ± {above['std']:.1f} | ≈ {above['dominance_over_next']:.2f} |" in md
    assert "marked ≈ is recomputed here" in md


def test_dominance_column_is_explained() -> None:
    """Old main: the column was titled 'dominance over next' with no word on which way it reads."""
    md = render_markdown(build_report([], load_reference("paper"), FAST))
    assert "| rank | model | mean ± std | dominance over next (1 − ASO ε_min) |" in md
    assert "ε_min 0 = this model stochastically dominates the next, so 1.00 = dominates" in md


def test_protocol_mismatch_is_ranked_apart(tmp_path: Path) -> None:
    """Old main ranked a ‡ run among the paper's models (shifting their ranks and AR)."""
    rep = build_report(load_inputs([_unmatched_protocol_run(tmp_path)]), load_reference("paper"), FAST)
    paper_only = build_report([], load_reference("paper"), FAST)
    for name, ds in rep["datasets"].items():
        assert "org/echo" not in [r["model"] for r in ds["rows"]]
        assert ds["rows"] == paper_only["datasets"][name]["rows"]
    mn = rep["datasets"]["MultiNews"]["apart"]
    assert [(r["model"], r["rank"], r["rank_if_comparable"]) for r in mn] == [("org/echo", None, 1)]
    st = rep["stability"]
    assert "org/echo" not in st["average_rank"] and st["average_rank"] == paper_only["stability"]["average_rank"]
    assert st["apart"]["org/echo"]["ranked_in"] == ["MultiNews", "MusiQue", "ECB"]
    md = render_markdown(rep)
    assert "| – | org/echo ‡ | 22.0 ± 0.8 | – | 1 |" in md and "rank if comparable (‡)" in md
    assert "| org/echo ‡ (not comparable) |" in md


def test_unscored_dataset_is_said_once_in_one_short_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Old main put the library's ~300-character exception in the table cell, the notes and diff."""
    run = _unmatched_protocol_run(tmp_path / "run", unscored="FuseReviews")
    rep = build_report(load_inputs([run]), load_reference("paper"), FAST)
    md = render_markdown(rep)
    assert "couldn't connect" not in md and "ae7c9136" not in md
    [note] = [n for n in rep["notes"] if "FuseReviews not scored" in n]
    assert f"`seam-repro score {run} --fic-download`" in note and len(note) - len(str(run)) < 200
    assert md.count("FuseReviews not scored") == 1 and "| – | org/echo | not scored (see notes) | – |" in md
    monkeypatch.setattr(sys, "argv", ["seam-repro", "diff", str(run), "--allow-protocol-mismatch"])
    with pytest.raises(SystemExit):
        main()
    out = capsys.readouterr().out
    assert "couldn't connect" not in out and f"`seam-repro score {run} --fic-download`" in out


def _bar_colors(fig: object) -> dict[str, tuple]:
    """Model label -> face colour of its bar in Figure 4's AR panel."""
    ax = fig.axes[0]  # type: ignore[attr-defined]
    labels = {round(t.get_position()[1]): t.get_text() for t in ax.get_yticklabels()}
    return {labels[round(p.get_y() + p.get_height() / 2)]: p.get_facecolor() for p in ax.patches}


def test_a_model_keeps_its_colour_across_reports(tmp_path: Path) -> None:
    """Old main coloured by position in the report, so a model changed colour between reports."""
    from seam_repro.analysis.plots import draw_ar_arsd, draw_boxes, model_color

    dirs = _three_models(tmp_path)
    one = build_report(load_inputs(dirs), load_reference("paper"), FAST)
    two = build_report(load_inputs([dirs[2], dirs[0]]), None, FAST)  # other models, other order
    a, b = _bar_colors(draw_ar_arsd(one)), _bar_colors(draw_ar_arsd(two))
    from matplotlib.colors import to_rgba

    assert a["mid ‡"] == b["mid"] == to_rgba(model_color("org/mid"))
    assert a["low ‡"] == b["low"] == to_rgba(model_color("org/low"))
    boxes = draw_boxes(two)
    faces = {p.get_facecolor() for ax in boxes.axes for p in ax.patches}
    assert to_rgba(model_color("org/mid")) in faces
    paper = [a[k] for k in a if k.endswith("†")]
    assert len(set(paper)) == len(paper) == 7  # the paper's seven models never share a colour
    # a run of a paper model (same Hugging Face id, any display name) has that model's colour
    assert model_color("my-llama", "meta-llama/Meta-Llama-3-8B-Instruct") == model_color("Llama-3-8B") \
        != model_color("my-llama")


def test_figure_text_fits(tmp_path: Path) -> None:
    """Old main cut FuseReviews' axis title and notes off; the text of both figures (titles, tick
    labels, notes, legend) must lie inside the figure, and no two panels may overlap."""
    from matplotlib.transforms import Bbox

    from seam_repro.analysis.plots import draw_ar_arsd, draw_boxes

    run = _unmatched_protocol_run(tmp_path / "run", model="an-organisation/a-very-long-model-name-for-labels",
                                  unscored="FuseReviews")
    rep = build_report(load_inputs([run, *_three_models(tmp_path)]), load_reference("paper"), FAST)
    for fig in (draw_boxes(rep), draw_ar_arsd(rep)):
        renderer = fig.canvas.get_renderer()
        tight = fig.get_tightbbox(renderer)
        assert Bbox.from_bounds(-0.01, -0.01, fig.get_figwidth() + 0.02, fig.get_figheight() + 0.02).contains(
            tight.x0, tight.y0) and tight.x1 <= fig.get_figwidth() + 0.01 and tight.y1 <= fig.get_figheight() + 0.01
        boxes = [ax.get_tightbbox(renderer) for ax in fig.axes if ax.get_visible()]
        for i, b1 in enumerate(boxes):
            for b2 in boxes[i + 1:]:
                assert not b1.overlaps(b2)


def test_figure4_draws_the_papers_three_bar_charts(tmp_path: Path) -> None:
    """Old main drew one AR-vs-ARSD scatter; the paper draws AR per model, ARSD per model and ARSD
    per dataset as bars. One outlier must not stretch the axis past the other bars."""
    from seam_repro.analysis.plots import draw_ar_arsd

    rep = build_report(load_inputs(_three_models(tmp_path)), load_reference("paper"), FAST)
    st = rep["stability"]
    fig = draw_ar_arsd(rep)
    ar_ax, arsd_ax, ds_ax = fig.axes
    n_models = len(st["average_rank"]) + len(st["apart"])
    assert len(ar_ax.patches) == n_models == 10
    assert sorted(round(p.get_width(), 6) for p in ar_ax.patches) == sorted(
        round(v, 6) for v in [*st["average_rank"].values(), *(a["average_rank"] for a in st["apart"].values())])
    assert len(ds_ax.patches) == len(st["arsd_by_dataset"]) == 6
    top_down = sorted(ds_ax.get_yticklabels(), key=lambda t: -t.get_position()[1])
    assert [t.get_text() for t in top_down] == ["MultiNews", "OpenASP", "FuseReviews", "MusiQue", "SciCo", "ECB+"]
    rep["stability"]["arsd"]["Gemma-7B"] = 400.0  # an outlier: the axis stays scaled to the others
    fig = draw_ar_arsd(rep)
    shown = {**rep["stability"]["arsd"], **{m: a["arsd"] for m, a in rep["stability"]["apart"].items()}}
    others = sorted(v for k, v in shown.items() if v is not None and k != "Gemma-7B")
    assert fig.axes[1].get_xlim()[1] < 3 * others[-1]
    assert any("400.0" in t.get_text() and "axis cut" in t.get_text() for t in fig.axes[1].texts)


def test_other_format_versions_say_what_was_found_and_which_kit_writes_the_expected_one(
        echo_runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    """Old main: 'expected a run.json object with schema_version 1' / 'unsupported version': neither
    said what the file held nor which seam-repro writes the expected version."""
    from seam_repro import __version__
    from seam_repro.errors import InputError, ManifestError
    from seam_repro.manifest.format import load_manifest

    run = tmp_path / "run"
    write_scores(run, "org/x", {"MultiNews": {"metric": "rouge_geo", "instances": [(0, "i", 1.0, True)]}})
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, "schema_version": 9, "fingerprint": {"seam_repro": "0.3.0"}}))
    with pytest.raises(InputError) as exc:
        load_inputs([run])
    assert (f"field 'schema_version': schema_version 9 found (written by seam-repro 0.3.0); seam-repro {__version__} "
            "(this kit) reads and writes schema_version 1; a newer seam-repro wrote this file: upgrade") in str(exc.value)

    bundle = tmp_path / "b.json"
    write_bundle(make_bundle(echo_runs["full"]), bundle)
    data = json.loads(bundle.read_text())
    bundle.write_text(json.dumps({**data, "bundle_version": 1}))
    with pytest.raises(InputError) as exc:
        load_inputs([bundle])
    assert (f"bundle_version 1 found (written by seam-repro {data['kit_version']}); seam-repro {__version__} (this kit) "
            "reads and writes bundle_version 2; re-create it with `seam-repro submit RUN_DIR`") in str(exc.value)

    manifest = json.loads((Path(__file__).resolve().parents[1] / "manifests" / "smoke.json").read_text())
    (tmp_path / "m.json").write_text(json.dumps({**manifest, "schema_version": 3}))
    with pytest.raises(ManifestError) as mexc:
        load_manifest(tmp_path / "m.json")
    assert (f"schema_version 3 found (written by seam-repro {manifest['provenance']['kit_version']}); "
            f"seam-repro {__version__} (this kit) reads and writes schema_version 2; a newer") in str(mexc.value)


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
