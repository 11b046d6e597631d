"""``seam-repro view`` at its edges, in a real browser (issue 34): names and ids that come from a run
are data, never keys of a plain object ("__proto__" as a display name); bidirectional controls in
run text are shown, not obeyed; and the pages say what their marks mean (legends, partial runs,
unscored datasets, per-run-only metrics, names and order as in Table 3, org prefixes on a clash,
a summary table that fits 1280x800).

Same browser and skip rules as tests/test_view_browser.py (whose ``driver`` fixture this reuses);
CI runs both with SEAM_REPRO_REQUIRE_BROWSER set (.ci/run).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from test_view_browser import _open, _severe, _wait_text, driver  # noqa: F401 - module fixture
from trust_helpers import echo_runs, smoke_copy  # noqa: F401 - session fixture

RLO = "\u202e"
BIDI_TEXT = f"abc{RLO}fed plantedbidi"


@pytest.fixture(scope="module")
def edge_site(echo_runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:  # noqa: F811
    """The smoke echo run plus ``a/echo-x`` and ``b/echo-x`` (one short name, two orgs) and a model
    displayed as ``__proto__`` replayed with ``--datasets MusiQue`` (a partial run); one MusiQue
    prediction holds U+202E; both run folders viewed with the paper beside it."""
    from seam_repro.cli import main
    from seam_repro.files.reading import read_jsonl
    from seam_repro.manifest.trust import load_trusted
    from seam_repro.run.replay import ReplayOptions, replay
    from seam_repro.scoring.loop import score_run_dir

    root = tmp_path_factory.mktemp("view-edges")
    run = root / "run"
    shutil.copytree(echo_runs["full"], run)
    shutil.rmtree(run / "scores")
    manifest = load_trusted(smoke_copy(root))
    for model in ("a/echo-x", "b/echo-x"):
        replay(manifest, run, ReplayOptions(model=model, backend="echo", progress=False))
    partial = root / "partial"  # a --datasets run is a run folder of its own
    replay(manifest, partial, ReplayOptions(model="echo-p", backend="echo", name="__proto__", datasets="MusiQue",
                                            progress=False))
    score_run_dir(partial, fic=False)
    pred_file = run / "predictions" / "echo" / "MusiQue" / "run_0.jsonl"
    lines = read_jsonl(pred_file)
    lines[0]["output"] = BIDI_TEXT
    pred_file.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    score_run_dir(run, fic=False)
    out = root / "site"
    with pytest.raises(SystemExit) as exc:
        main(["view", str(run), str(partial), "--out", str(out), "--reference", "paper"])
    assert exc.value.code == 0
    return {"url": (out / "index.html").as_uri(), "bidi": ("MusiQue", 0, lines[0]["instance_id"])}


def _no_prototype_writes(d: Any) -> None:
    assert d.execute_script("for (const k in {}) return k; return null;") is None


def _nav(d: Any) -> list[str]:
    from selenium.webdriver.common.by import By

    return [a.text for a in d.find_elements(By.CSS_SELECTOR, "#nav a")]


def test_proto_name_is_data(driver: Any, edge_site: dict[str, Any]) -> None:  # noqa: F811
    """A model displayed as "__proto__" is a row of its own; nothing lands on Object.prototype, the
    instance pages still work and its unreplayed datasets say "not scored", not another model's mean."""
    from selenium.webdriver.common.by import By

    _open(driver, edge_site["url"], "#table3")
    _no_prototype_writes(driver)
    row = driver.find_element(By.CSS_SELECTOR, '#table3 tr[data-model="__proto__"]')
    assert "partial:" in row.find_element(By.CSS_SELECTOR, "td.name").text  # the partial run says so in its row
    musique = row.find_element(By.CSS_SELECTOR, 'td[data-dataset="MusiQue"]')
    assert musique.find_elements(By.CSS_SELECTOR, ".mean-std")
    multinews = row.find_element(By.CSS_SELECTOR, 'td[data-dataset="MultiNews"]')
    assert not multinews.find_elements(By.CSS_SELECTOR, ".mean-std") and multinews.text in ("not scored", "–")
    names = _nav(driver)
    k = names.index("MusiQue") - 1
    _open(driver, edge_site["url"] + f"#page=ds&d={k}", "#grid")
    assert not driver.find_elements(By.ID, "error")
    _no_prototype_writes(driver)
    # the same short name under two orgs keeps its org prefix in the column headers
    heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#grid thead th")]
    assert any(h.startswith("a/echo-x") for h in heads) and any(h.startswith("b/echo-x") for h in heads), heads
    assert _severe(driver) == []


def test_bidi_controls_are_shown_not_obeyed(driver: Any, edge_site: dict[str, Any]) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    ds, run, iid = edge_site["bidi"]
    k = _nav(_open(driver, edge_site["url"], "#nav") and driver).index(ds) - 1
    _open(driver, edge_site["url"] + f"#page=ds&d={k}", "#grid")
    driver.find_element(By.CSS_SELECTOR, f'#grid tr[data-instance="{iid}"] td[data-model="echo"][data-run="{run}"]').click()
    _wait_text(driver, "#prediction", BIDI_TEXT.replace(RLO, "[U+202E]"))
    assert RLO not in driver.find_element(By.ID, "main").text


def test_pages_explain_their_marks(driver: Any, edge_site: dict[str, Any]) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    _open(driver, edge_site["url"], "#per-run")
    # the unscored FuseReviews shows as a row of "–" with its reason, not left out
    fuse = driver.find_element(By.CSS_SELECTOR, '#per-run tr[data-model="echo"][data-dataset="FuseReviews"]')
    assert "not scored" in fuse.get_attribute("title")
    assert {td.text for td in fuse.find_elements(By.CSS_SELECTOR, "td[data-run]")} == {"–"}
    # ‡ is explained under the table
    assert "not ranked" in driver.find_element(By.ID, "apart-legend").text
    # the nav names the datasets as Table 3 does, in its order
    heads = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#table3 thead th")][1:-2]
    nav = _nav(driver)[1:-2]
    assert nav and [h for h in heads if h in nav] == nav, (heads, nav)
    # the grid legend says what "·" and a dimmed cell are; a per-run-only metric (ECB+) says why its cells are "–"
    ecb = nav.index("ECB+")
    _open(driver, edge_site["url"] + f"#page=ds&d={ecb}", "#grid")
    assert "·" in driver.find_element(By.ID, "grid-legend").text
    assert "per run" in driver.find_element(By.ID, "per-run-only").text
    # across runs: an instance a run did not sample says so, not "no prediction"
    _open(driver, edge_site["url"] + f"#page=runs&d={ecb}&i=0&m=0", "#runs")
    text = driver.find_element(By.ID, "main").text
    assert "no prediction" not in text
    assert _severe(driver) == []


def test_summary_fits_1280x800(driver: Any, edge_site: dict[str, Any]) -> None:  # noqa: F811
    from selenium.webdriver.common.by import By

    size = driver.get_window_size()
    try:
        driver.set_window_size(1280, 800)
        _open(driver, edge_site["url"], "#table3")
        width = driver.execute_script("return document.documentElement.clientWidth")
        for th in driver.find_elements(By.CSS_SELECTOR, "#table3 thead th"):
            right = driver.execute_script("return arguments[0].getBoundingClientRect().right", th)
            assert right <= width, f"{th.text!r} ends at {right}px, past the {width}px window"
    finally:
        driver.set_window_size(size["width"], size["height"])
