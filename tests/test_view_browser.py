"""``seam-repro view`` in a real browser: Debian's chromium driven by Selenium, the site opened from
``file://`` as a reader would. What a user sees is compared with the run's own files (summary.json,
instance_scores.jsonl, the predictions), computed here independently of the page.

Skips, saying why, where no chromium/chromedriver is installed (``apt-get install chromium
chromium-driver``) or Selenium is missing; with ``SEAM_REPRO_REQUIRE_BROWSER`` set (CI) that is a
failure instead. ``SEAM_REPRO_VIEW_SCREENSHOTS=DIR`` keeps the page screenshots in DIR (docs/view.md's
come from ``DIR=docs``); otherwise they go to the test's temporary folder.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from trust_helpers import echo_runs, smoke_copy  # noqa: F401 - session fixture

XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> plantedword & </pre>'
CHROMIUM = os.environ.get("SEAM_REPRO_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SEAM_REPRO_CHROMEDRIVER", "/usr/bin/chromedriver")


def _unavailable(why: str) -> None:
    if os.environ.get("SEAM_REPRO_REQUIRE_BROWSER"):
        pytest.fail(f"{why} (SEAM_REPRO_REQUIRE_BROWSER is set: the CI stage installs the browser)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    for path, pkg in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            _unavailable(f"no browser: {path} not found (apt-get install {pkg})")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _unavailable("selenium is not installed (pip install -e '.[dev]')")
    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,760", "--hide-scrollbars"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)  # no Selenium Manager download
    try:
        yield d
    finally:
        d.quit()


@pytest.fixture(scope="module")
def site(echo_runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:  # noqa: F811
    """The smoke echo run plus a second echo model (``echo-b``: other seeded words), one MusiQue
    prediction replaced by an XSS payload (then re-scored), viewed with the paper beside it."""
    from seam_repro.cli import main
    from seam_repro.files.reading import read_jsonl
    from seam_repro.manifest.trust import load_trusted
    from seam_repro.run.replay import ReplayOptions, replay
    from seam_repro.scoring.loop import score_run_dir

    root = tmp_path_factory.mktemp("view-browser")
    run = root / "run"
    shutil.copytree(echo_runs["full"], run)
    shutil.rmtree(run / "scores")
    replay(load_trusted(smoke_copy(root)), run, ReplayOptions(model="echo-b", backend="echo", progress=False))
    pred_file = run / "predictions" / "echo" / "MusiQue" / "run_1.jsonl"
    lines = read_jsonl(pred_file)
    lines[0]["output"] = XSS
    pred_file.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    score_run_dir(run, fic=False)
    out = root / "site"
    with pytest.raises(SystemExit) as exc:
        main(["view", str(run), "--out", str(out), "--reference", "paper"])
    assert exc.value.code == 0
    scores = {m: read_jsonl(run / "scores" / m / "instance_scores.jsonl") for m in ("echo", "echo-b")}
    summary = json.loads((run / "scores" / "echo" / "summary.json").read_text("utf-8"))
    preds = {(m, "MusiQue", ln["run"], ln["instance_id"]): ln["output"] for m in ("echo", "echo-b")
             for f in (run / "predictions" / m / "MusiQue").glob("*.jsonl") for ln in read_jsonl(f)}
    return {"url": (out / "index.html").as_uri(), "planted": ("MusiQue", 1, lines[0]["instance_id"]),
            "scores": scores, "summary": summary, "preds": preds}


def _shots() -> Path | None:
    where = os.environ.get("SEAM_REPRO_VIEW_SCREENSHOTS")
    return Path(where) if where else None


def _shot(d: Any, name: str, tmp: Path) -> None:
    target = (_shots() or tmp) / f"view-{name}.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    assert d.save_screenshot(str(target))


def _open(d: Any, url: str, css: str) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    d.get(url)
    return WebDriverWait(d, 10).until(ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def _wait_text(d: Any, css: str, want: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(d, 10).until(lambda drv: drv.find_element(By.CSS_SELECTOR, css).text == want,
                               f"{css} never read {want!r}")


def _severe(d: Any) -> list[dict[str, Any]]:
    return [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]


def test_summary_shows_summary_json(driver: Any, site: dict[str, Any], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    _open(driver, site["url"], "#per-run")
    checked = 0
    for ds, entry in site["summary"]["datasets"].items():
        runs = entry["runs"]
        if all(v is None for v in runs.values()):  # FuseReviews here (no FIC model): said, not shown as 0
            cell = driver.find_element(By.CSS_SELECTOR, f'#table3 tr[data-model="echo"] td[data-dataset="{ds}"]')
            assert cell.text == "not scored" and entry["reason"] in cell.get_attribute("title")
            continue
        row = driver.find_element(By.CSS_SELECTOR, f'#per-run tr[data-model="echo"][data-dataset="{ds}"]')
        shown = {td.get_attribute("data-run"): td.text for td in row.find_elements(By.CSS_SELECTOR, "td[data-run]")}
        assert shown == {k: f"{v:.2f}" for k, v in runs.items()}
        values = list(runs.values())
        cell = driver.find_element(By.CSS_SELECTOR, f'#table3 tr[data-model="echo"] td[data-dataset="{ds}"] .mean-std')
        assert cell.text == f"{statistics.fmean(values):.1f} ± {statistics.pstdev(values):.1f}"
        checked += 1
    assert checked >= 4
    # the smoke protocol is not the paper's: its row says so and is not ranked among the paper's models
    echo_row = driver.find_element(By.CSS_SELECTOR, '#table3 tr[data-model="echo"]').text
    assert "‡" in echo_row and "not ranked" in driver.find_element(By.ID, "apart-legend").text
    # the paper's models sit beside, marked as the reference
    assert "Llama-3-8B (reference)" in driver.find_element(By.ID, "table3").text
    assert driver.find_elements(By.CSS_SELECTOR, "figure img")
    _shot(driver, "summary", tmp_path)
    assert _severe(driver) == []


def test_cell_shows_prediction_and_score_and_xss_stays_text(driver: Any, site: dict[str, Any], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    ds, run, iid = site["planted"]
    musique = [d.text for d in _open(driver, site["url"], "#nav").find_elements(By.TAG_NAME, "a")].index(ds) - 1
    _open(driver, site["url"] + f"#page=ds&d={musique}", "#grid")
    _shot(driver, "instances", tmp_path)
    driver.find_element(By.CSS_SELECTOR, f'#grid tr[data-instance="{iid}"] td[data-model="echo"][data-run="{run}"]').click()
    _wait_text(driver, "#prediction", XSS)  # the payload, character for character, as text
    line = next(ln for ln in site["scores"]["echo"] if (ln["dataset"], ln["run"], ln["instance_id"]) == (ds, run, iid))
    assert driver.find_element(By.ID, "score").text == f"{line['score']:.2f}"
    assert driver.find_element(By.ID, "validity").text == ("valid" if line["valid_format"] else "invalid")
    assert f"instance {iid}" in driver.find_element(By.ID, "cell-title").text
    assert driver.execute_script("return window.__xss === undefined")
    assert not driver.find_elements(By.CSS_SELECTOR, "main img, main script")
    _shot(driver, "detail", tmp_path)
    # one instance across all runs, from the same page
    driver.find_element(By.LINK_TEXT, "this instance across all runs").click()
    _open(driver, driver.current_url, "#runs .compare-side")
    assert driver.execute_script("return window.__xss === undefined")
    _shot(driver, "compare", tmp_path)
    assert _severe(driver) == []


def test_filters_change_the_rows(driver: Any, site: dict[str, Any]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    ds, _, iid = site["planted"]
    musique = [d.text for d in _open(driver, site["url"], "#nav").find_elements(By.TAG_NAME, "a")].index(ds) - 1
    _open(driver, site["url"] + f"#page=ds&d={musique}", "#grid")
    lines = [ln for m in ("echo", "echo-b") for ln in site["scores"][m] if ln["dataset"] == ds]
    ids = list(dict.fromkeys(ln["instance_id"] for ln in lines))
    _wait_text(driver, "#row-count", f"{len(ids)} of {len(ids)} instances")

    def expect(pred: Any) -> str:
        return f"{len({ln['instance_id'] for ln in lines if pred(ln)})} of {len(ids)} instances"

    Select(driver.find_element(By.ID, "f-run")).select_by_value("0")
    _wait_text(driver, "#row-count", expect(lambda ln: ln["run"] == 0))
    Select(driver.find_element(By.ID, "f-run")).select_by_value("")
    Select(driver.find_element(By.ID, "f-valid")).select_by_value("valid")
    _wait_text(driver, "#row-count", expect(lambda ln: ln["valid_format"]))
    Select(driver.find_element(By.ID, "f-valid")).select_by_value("")
    driver.find_element(By.ID, "f-min").send_keys("10")
    _wait_text(driver, "#row-count", expect(lambda ln: ln["score"] is not None and ln["score"] >= 10))
    driver.execute_script("const i = document.getElementById('f-min'); i.value = '';"
                          "i.dispatchEvent(new Event('input'));")
    _wait_text(driver, "#row-count", f"{len(ids)} of {len(ids)} instances")
    driver.find_element(By.ID, "f-q").send_keys("PLANTEDword")  # search is case-insensitive
    _wait_text(driver, "#row-count", f"1 of {len(ids)} instances")
    rows = driver.find_elements(By.CSS_SELECTOR, "#grid tbody tr")
    assert [r.get_attribute("data-instance") for r in rows] == [iid]
    from selenium.webdriver.common.keys import Keys

    run = site["planted"][1]  # a cell opens from the keyboard too
    rows[0].find_element(By.CSS_SELECTOR, f'td[data-model="echo"][data-run="{run}"]').send_keys(Keys.ENTER)
    _wait_text(driver, "#prediction", XSS)
    assert _severe(driver) == []


def test_two_models_side_by_side(driver: Any, site: dict[str, Any], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    ds, run, iid = site["planted"]
    names = [d.text for d in _open(driver, site["url"], "#nav").find_elements(By.TAG_NAME, "a")]
    musique = names.index(ds) - 1
    options = _open(driver, site["url"] + f"#page=pair&d={musique}", "#p-i").find_elements(By.TAG_NAME, "option")
    i = next(o.get_attribute("value") for o in options if o.text == iid)
    _open(driver, site["url"] + f"#page=pair&d={musique}&r={run}&i={i}&a=0&b=1", f'#pair .compare-side[data-run="{run}"]')
    sides = driver.find_elements(By.CSS_SELECTOR, "#pair .compare-side")
    assert [(s.get_attribute("data-model"), s.get_attribute("data-run")) for s in sides] == [
        ("echo", str(run)), ("echo-b", str(run))]
    want = [site["preds"][(m, ds, run, iid)] for m in ("echo", "echo-b")]
    assert want[0] != want[1]
    assert [s.find_element(By.CSS_SELECTOR, "pre.prediction").text for s in sides] == want
    assert driver.execute_script("return window.__xss === undefined")
    _shot(driver, "pair", tmp_path)
    assert _severe(driver) == []


def test_data_keys_stay_data_in_the_browser(driver: Any, site: dict[str, Any]) -> None:
    """An instance id "__proto__" in a data file is an own property once the browser reads it (an
    object literal would set the prototype instead), and U+2028 and "</script>" survive intact."""
    from seam_repro.view.build import _js

    probe = Path(site["url"].removeprefix("file://")).parent / "data" / "probe.js"
    value = {"__proto__": {"o": "x\u2028</script>\U0001f600"}, "constructor": 1}
    probe.write_bytes(_js("probe", value))
    _open(driver, site["url"], "#table3")
    got = driver.execute_async_script("""
        const done = arguments[arguments.length - 1], put = SEAMVIEW.put;
        SEAMVIEW.put = function (name, obj) {
          SEAMVIEW.put = put;
          done([Object.keys(obj), Object.getPrototypeOf(obj) === Object.prototype, obj["__proto__"].o]);
        };
        const s = document.createElement("script");
        s.src = "data/probe.js";
        document.head.appendChild(s);""")
    assert got == [["__proto__", "constructor"], True, value["__proto__"]["o"]]
