"""Benchmark: `seam-repro view` at paper size, and how fast its pages open from file:// in Chromium.

The run is real, not hand-made files: benchmarks/synth.py's SEAM data at about real document size,
a manifest of 6 datasets x 10 runs x 100 instances (profile seam-repro-1, which honours
``max_num_samples``), replayed by ``--models`` echo-backend models (echo-0, echo-1, ...) into one run
folder and scored (no FIC model). Prints the time of each stage, the site's size, and the page
times Chromium reports: from navigation start to the summary drawn (the first page; the issue's
bound is 2 s), and from a click to a dataset's grid drawn and to one cell's detail drawn.

    python benchmarks/bench_view.py [--models 10] [--instances 100] [--runs 10] [--keep DIR]

Needs Debian's chromium + chromium-driver (apt) and selenium for the page times; without them the
build figures are still printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]  # measure this checkout, not another installed copy

from synth import scaled_seam_data, seam_config  # noqa: E402

PROMPTS = REPO / "manifests" / "fixtures" / "prompts"


def paper_sized_run(work: Path, models: int, instances: int, runs: int) -> Path:
    """A scored run folder: ``models`` echo models over 6 datasets x ``runs`` x ``instances``."""
    from seam_repro.cli import main
    from seam_repro.manifest.trust import load_trusted
    from seam_repro.run.replay import ReplayOptions, replay
    from seam_repro.scoring.loop import score_run_dir

    copies = instances // 2 + 1  # the fixtures hold 2-3 instances per dataset; the cap trims to `instances`
    data = scaled_seam_data(work / "data", copies=copies)
    config = dict(seam_config(data, runs=runs), max_num_samples=instances)
    (work / "config.json").write_text(json.dumps(config), encoding="utf-8")
    manifest = work / "m.json"
    try:
        main(["sample", str(work / "config.json"), "-o", str(manifest), "--profile", "seam-repro-1",
              "--prompts-dir", str(PROMPTS)])
    except SystemExit as exc:
        if exc.code:
            raise
    tm = load_trusted(manifest)
    run_dir = work / "run"
    for k in range(models):
        replay(tm, run_dir, ReplayOptions(model=f"echo-{k}", backend="echo", progress=False))
    score_run_dir(run_dir, fic=False)
    return run_dir


def page_times(site: Path, cell: tuple[int, int]) -> dict[str, float] | str:
    """Milliseconds Chromium takes to draw the summary (from navigation start), then a dataset's grid
    and a cell's detail (from the hash change), measured in the page with performance.now()."""
    chromium = os.environ.get("SEAM_REPRO_CHROMIUM", "/usr/bin/chromium")
    driver_path = os.environ.get("SEAM_REPRO_CHROMEDRIVER", "/usr/bin/chromedriver")
    if not (os.path.isfile(chromium) and os.path.isfile(driver_path)):
        return f"skipped: no {chromium} / {driver_path} (apt-get install chromium chromium-driver)"
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return "skipped: selenium is not installed"
    opts = Options()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900"):
        opts.add_argument(arg)
    d = webdriver.Chrome(service=Service(driver_path), options=opts)
    wait_for = """
        const [sel, hash, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
        const t0 = performance.now();
        if (hash) location.hash = hash;
        (function poll() {
          if (document.querySelector(sel)) done(performance.now() - (hash ? t0 : 0));
          else setTimeout(poll, 2);
        })();"""
    try:
        d.set_script_timeout(60)
        out: dict[str, float] = {}
        firsts, grids, cells = [], [], []
        for _ in range(3):  # cold start each time: a fresh document, the data files read again
            d.get("about:blank")
            d.get((site / "index.html").as_uri())
            firsts.append(d.execute_async_script(wait_for, "#table3", ""))
            grids.append(d.execute_async_script(wait_for, "#grid td.cell", "page=ds&d=2"))
            cells.append(d.execute_async_script(wait_for, "#prediction", f"page=cell&d=2&c={cell[0]}&i={cell[1]}"))
        search = """
            const done = arguments[arguments.length - 1];
            const count = document.getElementById("row-count"), box = document.getElementById("f-q");
            const t0 = performance.now();
            let seen = false;  // the page says "Searching…" while it loads the predictions, then the count
            box.value = "the"; box.dispatchEvent(new Event("input"));
            (function poll() {
              const searching = count.textContent.indexOf("Searching") >= 0;
              seen = seen || searching;
              if (seen && !searching) done(performance.now() - t0);
              else setTimeout(poll, 1);
            })();"""
        d.get((site / "index.html").as_uri() + "#page=ds&d=2")
        d.execute_async_script(wait_for, "#grid td.cell", "")
        out["search all models' predictions (150 ms debounce incl.)"] = d.execute_async_script(search)
        out["first page (summary), from navigation start"] = min(firsts)
        out["dataset grid, from click"] = min(grids)
        out["cell detail, from click"] = min(cells)
        return out
    finally:
        d.quit()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--instances", type=int, default=100)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--keep", type=Path, default=None, help="Keep the run folder and site here.")
    args = ap.parse_args()
    from seam_repro.analysis.reference import load_reference
    from seam_repro.view.build import build_site

    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        run_dir = paper_sized_run(work, args.models, args.instances, args.runs)
        t1 = time.perf_counter()
        site = work / "site"
        build_site([run_dir], site, load_reference("paper"))
        t2 = time.perf_counter()
        files = sorted((site / "data").glob("*.js"))
        sizes = {f.name: f.stat().st_size for f in files}
        n_pred = sum(1 for _ in (run_dir / "predictions").glob("*/*/run_*.jsonl"))
        print(f"models={args.models} datasets=6 runs={args.runs} instances/run={args.instances} "
              f"prediction files={n_pred}")
        print(f"replay+score (echo)  {t1 - t0:7.1f} s")
        print(f"seam-repro view      {t2 - t1:7.1f} s")
        print(f"site data: {len(files)} files, {sum(sizes.values()) / 1e6:.1f} MB; loaded by the first page: "
              f"index.js {sizes['index.js'] / 1e3:.0f} kB; largest: {max(sizes, key=sizes.get)} "
              f"{max(sizes.values()) / 1e6:.2f} MB")
        times = page_times(site, (args.models * args.runs // 2, args.instances // 2))
        if isinstance(times, str):
            print(f"page times: {times}")
        else:
            for name, ms in times.items():
                print(f"{name:48s} {ms:7.0f} ms  (best of 3, Chromium headless, file://)")


if __name__ == "__main__":
    main()
