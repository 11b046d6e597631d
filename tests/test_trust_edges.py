"""Issue 34, the command-line side of the explorer and report edges: an input inside the site that
``view --out`` replaces is refused (nothing deleted), stale scores (predictions edited after scoring)
are refused by ``view`` and ``report`` through the predictions digest as ``submit`` does, display
names reach figures as literal text (``$...$`` is not mathtext), and bidirectional controls are
shown, not obeyed, in report.md and on the terminal. The browser side: test_view_browser_edges.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from trust_helpers import echo_runs  # noqa: F401 - session fixture

from seam_repro.cli import main
from seam_repro.files.reading import read_jsonl


def _cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    return int(exc.value.code or 0)


@pytest.fixture
def run(echo_runs: dict[str, Path], tmp_path: Path) -> Path:  # noqa: F811
    dst = tmp_path / "run"
    shutil.copytree(echo_runs["limited"], dst)
    return dst


def test_view_refuses_inputs_inside_the_site_it_replaces(run: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "site"
    assert _cli("view", str(run), "--out", str(site)) == 0
    inside = site / "run"
    shutil.copytree(run, inside)
    prompts = site / "prompts"
    prompts.mkdir()
    capsys.readouterr()
    assert _cli("view", str(inside), "--out", str(site)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(inside) in err and "choose another output folder" in err
    assert (inside / "run.json").is_file()  # not deleted
    assert _cli("view", str(run), "--out", str(site), "--prompts-dir", str(prompts)) == 2
    assert prompts.is_dir()
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_stale_scores_are_refused_by_view_and_report(run: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    pred = next((run / "predictions" / "echo" / "MusiQue").glob("run_*.jsonl"))
    lines = read_jsonl(pred)
    lines[0]["output"] = "edited after scoring"
    pred.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    capsys.readouterr()
    for args in (("view", str(run), "--out", str(tmp_path / "site")),
                 ("report", str(run), "--out", str(tmp_path / "report"))):
        assert _cli(*args) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "stale scores" in err and "seam-repro score" in err, err
    assert not (tmp_path / "site").exists() and not (tmp_path / "report").exists()
    from seam_repro.scoring.loop import score_run_dir

    score_run_dir(run, fic=False)  # scored again: current
    assert _cli("report", str(run), "--out", str(tmp_path / "report")) == 0


def test_dollar_names_are_literal_in_figures(run: Path, tmp_path: Path) -> None:
    """One name holds every hazard (paired and odd dollars, a subscript, a TeX command): mathtext
    would read any of them as markup; the figures and the table must show them as typed."""
    name = "$\\frac{1}{$ price $5 and $x^$ a_$b"
    meta = json.loads((run / "run.json").read_text("utf-8"))
    meta["models"]["echo"]["name"] = name
    (run / "run.json").write_text(json.dumps(meta), "utf-8")
    out = tmp_path / "report"
    assert _cli("report", str(run), "--out", str(out), "--reference", "paper", "--view") == 0
    assert (out / "box_plots.png").stat().st_size > 0 and (out / "ar_arsd.png").stat().st_size > 0
    assert name.replace("|", "\\|") in (out / "report.md").read_text("utf-8")


def test_bidi_controls_are_visible_in_report_md_and_on_the_terminal(run: Path, capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    from seam_repro.analysis.report import md_cell
    from seam_repro.bidi import show_bidi
    from seam_repro.verbosity import say

    assert "\u202e" not in md_cell("gold \u202eevil") and "\\u202e" in md_cell("gold \u202eevil")
    assert show_bidi("a\u2066b\u202ec") == "a[U+2066]b[U+202E]c"
    say("prediction: \u202eabc")
    assert capsys.readouterr().out == "prediction: [U+202E]abc\n"
    bad = tmp_path / "ref\u202enosj.json"  # an error line naming it: shown, not reordered
    bad.write_text("{not json", "utf-8")
    assert _cli("report", str(run), "--out", str(tmp_path / "r"), "--reference", str(bad)) == 2
    err = capsys.readouterr().err
    assert "\u202e" not in err and "[U+202E]" in err


def test_view_finds_the_smoke_fixture_prompts_or_names_their_folder(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A run of the shipped smoke manifest records its prompt files relative to the manifest
    (fixtures/prompts/...): view reads them beside the shipped manifests; where a relative path is
    not there, the hint names --prompts-dir manifests/<folder>, not an upstream fetch."""
    from seam_repro.view.build import _paraphrases

    monkeypatch.setenv("SEAM_REPRO_CACHE", str(tmp_path / "empty-cache"))
    fixture = json.loads((Path(__file__).resolve().parents[1] / "manifests" / "fixtures" / "prompts"
                          / "MusiQue.json").read_text("utf-8"))
    manifest = {"config": {"suite": "seam"}, "sources": {"prompts": {}},
                "provenance": {"paths": {"prompts": {"MusiQue": "fixtures/prompts/MusiQue.json",
                                                     "ECB": "elsewhere/prompts/ECB.json"}}},
                "runs": [{"dataset": "MusiQue", "run": 0}, {"dataset": "ECB", "run": 0}]}
    got = _paraphrases(tmp_path, manifest, None)
    assert got["MusiQue"] == [p["instructions"] for p in fixture["prompts"]]
    assert "--prompts-dir manifests/elsewhere/prompts" in got["ECB"] and "fetch" not in got["ECB"]


def _docs() -> str:
    repo = Path(__file__).resolve().parents[1]
    return "\n".join(p.read_text("utf-8") for p in [repo / "README.md", *sorted((repo / "docs").glob("*.md"))])


def test_docs_say_how_a_new_model_meets_the_paper() -> None:
    """The README (or the docs/ pages it grows into) names the command that puts a new model beside
    the paper's (report), what freezing paper.json needs, and one story for the progress bar."""
    text = " ".join(_docs().split())
    assert "results against the same frozen seeds" not in text  # paper.json ships unfrozen
    assert "seam-repro report RUN_DIR --reference paper" in text
    assert "seam-repro freeze manifests/paper.json" in text and "ships unfrozen" in text
    assert "appears once the first batch is stored (a batch is generated as one unit" not in text
    assert "chat_templates/raw.jinja" in text
