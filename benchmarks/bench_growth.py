"""How the cost of each user-visible stage grows with the work: wall time, CPU time and peak RSS of
``sample`` + ``prompts``, ``replay`` (echo backend), ``score`` and ``report`` at multiples of the bench
data (benchmarks/synth.py: 680 prompts at 1x, 6 datasets, 10 runs).

Each stage runs as its own process in the checkout (``-m`` puts the working folder first on the
path: another checkout there would be measured instead), so peak RSS is that stage's alone, read
from ``wait4``, with
the Hugging Face hub offline (the FIC models are then unavailable, as on most machines). Per-item
figures divide by the number of prompts: a stage that streams shows a flat per-prompt time and a
flat peak RSS.

Usage: python benchmarks/bench_growth.py [--scales 1,10,100] [--work DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]
from synth import scaled_seam_data, seam_config  # noqa: E402

PROMPTS = REPO / "manifests" / "fixtures" / "prompts"
COPIES_AT_1X = 4  # scaled_seam_data's default: 680 prompts over 10 runs


@dataclass
class Stage:
    name: str
    wall: float
    cpu: float
    rss_mib: float


def run_stage(name: str, cmds: list[list[str]]) -> Stage:
    """Run ``cmds`` one after the other; wall and CPU time summed, peak RSS the largest of them."""
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TQDM_DISABLE="1")
    wall = cpu = rss = 0.0
    for cmd in cmds:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall += time.perf_counter() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.decode(errors='replace')[-2000:]}")
        cpu += usage.ru_utime + usage.ru_stime
        rss = max(rss, usage.ru_maxrss / 1024)  # KiB on Linux
    return Stage(name, wall, cpu, rss)


def kit(*args: str) -> list[str]:
    return [sys.executable, "-m", "seam_repro", *args]


def measure(work: Path, scale: int) -> tuple[int, list[Stage]]:
    data = scaled_seam_data(work / "data", copies=COPIES_AT_1X * scale)
    config = work / "config.json"
    config.write_text(json.dumps(seam_config(data)), encoding="utf-8")
    manifest, run, report = work / "m.json", work / "run", work / "report"
    stages = [run_stage("sample + prompts", [kit("sample", str(config), "-o", str(manifest), "--prompts-dir", str(PROMPTS)),
                                             kit("prompts", str(manifest), "-o", str(work / "p.jsonl"))])]
    n = sum(1 for _ in (work / "p.jsonl").open(encoding="utf-8"))
    stages.append(run_stage("replay (echo)", [kit("replay", str(manifest), "--backend", "echo", "--out", str(run),
                                                  "--prompts-dir", str(PROMPTS), "--no-score")]))
    stages.append(run_stage("score", [kit("score", str(run))]))
    stages.append(run_stage("report", [kit("report", str(run), "--out", str(report))]))
    return n, stages


def table(results: dict[int, tuple[int, list[Stage]]]) -> str:
    scales = sorted(results)
    head = "| stage | " + " | ".join(f"{s}x ({results[s][0]:,} prompts)" for s in scales) + " |"
    out = [head, "|---" * (len(scales) + 1) + "|"]
    for i, name in enumerate(s.name for s in results[scales[0]][1]):
        cells = []
        for s in scales:
            n, stages = results[s]
            st = stages[i]
            cells.append(f"{st.wall:.1f} s wall, {st.cpu:.1f} s CPU ({1000 * st.cpu / n:.2f} ms/prompt), "
                         f"{st.rss_mib:.0f} MiB")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", default="1,10", help="comma-separated multiples of the bench data (100x takes minutes)")
    ap.add_argument("--work", type=Path, default=None, help="keep the work folders here (default: a temporary one)")
    args = ap.parse_args()
    scales = [int(s) for s in args.scales.split(",") if s.strip()]
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = args.work or Path(tmp)
        for s in scales:
            work = root / f"x{s}"
            work.mkdir(parents=True, exist_ok=False)
            results[s] = measure(work, s)
            print(f"# {s}x done", file=sys.stderr, flush=True)
    print(table(results))
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
