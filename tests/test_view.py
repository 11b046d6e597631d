"""``seam-repro view`` without a browser: the data files the pages read hold exactly what the run's
files hold (scores, predictions, gold, sampled factors), the paraphrase text only from a prompt file
with the pinned hash, and the output folder rules (refuse a foreign folder, replace an earlier site).
The browser side is tests/test_view_browser.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from trust_helpers import echo_runs  # noqa: F401 - session fixture

from seam_repro.cli import main
from seam_repro.files.reading import read_jsonl

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "seam_repro" / "view" / "assets"
ODD = "line\u2028sep </script><!-- \u00e9\U0001f600"


def _view(*args: str) -> int:
    with pytest.raises(SystemExit) as exc:
        main(["view", *args])
    return int(exc.value.code or 0)


def _data(site: Path, name: str) -> Any:
    raw = (site / "data" / f"{name}.js").read_bytes()
    assert raw.isascii()  # no charset can garble it; U+2028 and friends are escaped
    text = raw.decode("ascii")
    prefix = f"SEAMVIEW.put({json.dumps(name)},JSON.parse("
    assert text.startswith(prefix) and text.endswith("));\n")
    return json.loads(json.loads(text[len(prefix):-4]))


@pytest.fixture(scope="module")
def viewed(echo_runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:  # noqa: F811
    from seam_repro.scoring.loop import score_run_dir

    root = tmp_path_factory.mktemp("view")
    run = root / "run"
    shutil.copytree(echo_runs["full"], run)
    shutil.rmtree(run / "scores")
    pred = run / "predictions" / "echo" / "MultiNews" / "run_0.jsonl"
    lines = read_jsonl(pred)
    lines[0]["output"] = ODD
    pred.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    score_run_dir(run, fic=False)
    site = root / "site"
    assert _view(str(run), "--out", str(site)) == 0
    return run, site


def test_grid_and_cells_hold_the_run_files(viewed: tuple[Path, Path]) -> None:
    from seam_repro.scoring.extract import extract

    run, site = viewed
    index = _data(site, "index")
    scores = {(ln["dataset"], ln["run"], ln["instance_id"]): ln
              for ln in read_jsonl(run / "scores" / "echo" / "instance_scores.jsonl")}
    prompts = {(r["dataset"], r["run"], r["instance_id"]): r for r in read_jsonl(run / "prompts.jsonl")}
    preds = {(r["dataset"], r["run"], r["instance_id"]): r
             for f in sorted((run / "predictions" / "echo").glob("*/run_*.jsonl")) for r in read_jsonl(f)}
    summary = json.loads((run / "scores" / "echo" / "summary.json").read_text("utf-8"))
    assert index["models"][0]["runs"] == {ds: e["runs"] for ds, e in summary["datasets"].items()
                                          if any(v is not None for v in e["runs"].values())}
    assert set(index["models"][0]["unscored"]) == {"FuseReviews"}  # no FIC model here: said, not zeroed
    manifest = json.loads((run / "manifest.json").read_text("utf-8"))
    choices = {(r["dataset"], r["run"]): r for r in manifest["runs"]}
    seen = set()
    for entry in index["datasets"]:
        grid = _data(site, entry["grid"])
        for col in grid["cols"]:
            cells, prompt_file = _data(site, col["pred"]), _data(site, col["prompt"])
            choice = choices[(grid["dataset"], col["run"])]
            assert prompt_file["factors"]["paraphrase_index"] == choice["paraphrase_index"]
            assert prompt_file["factors"]["doc_order"] == choice["doc_order"]
            assert prompt_file["factors"]["demo_indices"] == choice["demo_indices"]
            fixture = json.loads((REPO / "manifests" / "fixtures" / "prompts" / f"{grid['dataset']}.json").read_text())
            assert prompt_file["factors"]["paraphrase_text"] == fixture["prompts"][choice["paraphrase_index"]]["instructions"]
            for i, iid in enumerate(grid["instances"]):
                key = (grid["dataset"], col["run"], iid)
                if key not in preds:
                    assert col["v"][i] is None
                    continue
                seen.add(key)
                line, cell = scores[key], cells[str(col["run"])][iid]
                assert (col["s"][i], col["v"][i]) == (line["score"], line["valid_format"])
                assert (cell["o"], cell["s"], cell["v"]) == (preds[key]["output"], line["score"], line["valid_format"])
                assert cell["p"] == extract("upstream", prompt=prompts[key]["prompt"], output=preds[key]["output"],
                                            model_id="echo", upstream_prompt_text=preds[key].get("upstream_prompt_text"))
                assert prompt_file["instances"][iid]["prompt"] == prompts[key]["prompt"]
                assert prompt_file["instances"][iid]["gold"] == prompts[key]["target"]
    assert seen == set(preds)
    assert ODD in {p["output"] for p in preds.values()}  # checked above, character for character, through ASCII
    coref = next(ln for k, ln in scores.items() if k[0] == "ECB")
    cell = _data(site, next(c["pred"] for e in index["datasets"] if e["name"] == "ECB"
                            for c in _data(site, e["grid"])["cols"]))[str(coref["run"])][coref["instance_id"]]
    assert cell["alt"]["as intended"]["score"] == coref["details"]["upstream_intended"]["score"]


def test_assets_never_parse_data_as_html() -> None:
    js = (ASSETS / "view.js").read_text("utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert sink not in js, sink
    html = (ASSETS / "index.html").read_text("utf-8")
    assert not re.search(r"(src|href)=\"(https?:)?//", html)  # no CDN, nothing from the network


def test_paraphrase_text_needs_the_pinned_prompt_file(viewed: tuple[Path, Path], tmp_path: Path) -> None:
    run, _ = viewed
    prompts = tmp_path / "prompts"
    shutil.copytree(REPO / "manifests" / "fixtures" / "prompts", prompts)
    doc = json.loads((prompts / "MusiQue.json").read_text())
    doc["prompts"][0]["instructions"] = "EDITED"
    (prompts / "MusiQue.json").write_text(json.dumps(doc))
    site = tmp_path / "site"
    assert _view(str(run), "--out", str(site), "--prompts-dir", str(prompts)) == 0
    index = _data(site, "index")
    texts = {}
    for entry in index["datasets"]:
        col = _data(site, entry["grid"])["cols"][0]
        texts[entry["name"]] = _data(site, col["prompt"])["factors"]["paraphrase_text"]
    assert "EDITED" not in texts["MusiQue"] and "the manifest pins" in texts["MusiQue"]
    assert "the manifest pins" not in texts["MultiNews"]


def test_out_rules(viewed: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, _ = viewed
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    capsys.readouterr()
    assert _view(str(run), "--out", str(foreign)) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(foreign) in err and "not a site written by" in err
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    site = tmp_path / "site"
    assert _view(str(run), "--out", str(site)) == 0
    (site / "data" / "stale.js").write_text("old")
    assert _view(str(run), "--out", str(site)) == 0  # an earlier site is replaced whole
    assert not (site / "data" / "stale.js").exists() and (site / "index.html").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert _view(str(run), "--out", str(run / "site")) == 2  # never written into the run folder it reads
    assert not (run / "site").exists()


def test_a_bundle_shows_in_the_summary_only(echo_runs: dict[str, Path], tmp_path: Path) -> None:  # noqa: F811
    from seam_repro.analysis.submit import make_bundle, write_bundle

    bundle = tmp_path / "echo.bundle.json"
    write_bundle(make_bundle(echo_runs["full"]), bundle)
    site = tmp_path / "site"
    assert _view(str(bundle), "--out", str(site)) == 0
    index = _data(site, "index")
    assert [m["browsable"] for m in index["models"]] == [False] and index["datasets"] == []
    summary = json.loads((echo_runs["full"] / "scores" / "echo" / "summary.json").read_text("utf-8"))
    assert index["models"][0]["runs"]["MusiQue"] == summary["datasets"]["MusiQue"]["runs"]
    assert index["report"]["datasets"]["MusiQue"]["rows"][0]["model"] == "echo"


def test_report_view_links_the_site(viewed: tuple[Path, Path], tmp_path: Path) -> None:
    from seam_repro.cli import main as cli_main

    run, _ = viewed
    out = tmp_path / "report"
    with pytest.raises(SystemExit) as exc:
        cli_main(["report", str(run), "--view", "--out", str(out)])
    assert exc.value.code == 0
    assert "[run explorer](view/index.html)" in (out / "report.md").read_text("utf-8")
    assert json.loads((out / "report.json").read_text("utf-8"))["view"] == "view/index.html"
    index = _data(out / "view", "index")
    assert index["report"]["datasets"]["MusiQue"]["rows"][0]["model"] == "echo"


def test_a_run_folder_without_its_manifest_is_refused(viewed: tuple[Path, Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    run, _ = viewed
    bare = tmp_path / "run"
    shutil.copytree(run, bare)
    (bare / "manifest.json").unlink()
    capsys.readouterr()
    assert _view(str(bare), "--out", str(tmp_path / "site")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(bare) in err and "manifest.json" in err
    assert not (tmp_path / "site").exists()
