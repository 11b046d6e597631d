"""Embedded smoke replay wall time: torch's default thread count against the kit's choice, on idle
cores and with two competing CPU jobs.

What it measures: ``seam-repro -q replay manifests/smoke.json`` on the embedded SmolLM2 (hf
backend, CPU) over a small part of the manifest (``--limit``/``--datasets``/``--runs``, fewer new
tokens), as wall seconds of the whole command (start-up, model load, generation; no scoring), in
four cells: {idle, 2 busy loops} x {torch's default = one thread per core (``--threads`` = the
machine's core count), the kit's choice (no flag: ``generate/threads.py``)}. The busy loops are
plain Python ``while True`` processes this script starts before a cell and kills after it. The
thread count each run chose is read back from its run.json. On a machine shared with other work,
"idle" means no job of this script's: the load average is printed with every cell.

Run: python benchmarks/bench_threads.py [--limit 1] [--datasets MultiNews,MuSiQue] [--runs 0]
         [--max-new-tokens 16] [--busy 2] [--repeats 1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUSY_LOOP = "while True:\n    pass\n"


def replay_seconds(out: Path, args: argparse.Namespace, threads: int | None) -> tuple[float, dict[str, object]]:
    """Wall seconds of one embedded replay and the thread choice its run.json records."""
    cmd = [sys.executable, "-m", "seam_repro", "-q", "replay", str(REPO / "manifests" / "smoke.json"),
           "--out", str(out), "--limit", str(args.limit), "--datasets", args.datasets, "--runs", args.runs,
           "--max-new-tokens", str(args.max_new_tokens), "--no-score"]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["PYTHONPATH"] = str(REPO)  # measure this checkout
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    session = json.loads((out / "run.json").read_text())["sessions"][-1]
    return seconds, session["threads"]


def start_busy(n: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(n)]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=1)
    ap.add_argument("--datasets", default="MultiNews,MuSiQue")
    ap.add_argument("--runs", default="0")
    ap.add_argument("--max-new-tokens", type=int, default=16)
    ap.add_argument("--busy", type=int, default=2, help="competing CPU jobs in the loaded cells")
    ap.add_argument("--repeats", type=int, default=1, help="best of N per cell")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    print(f"{cores} cores; embedded smoke replay: --limit {args.limit} --datasets {args.datasets} --runs {args.runs} "
          f"--max-new-tokens {args.max_new_tokens}; best of {args.repeats}")
    print("| competing jobs | threads | chosen by | wall s | load average before |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="bench-threads-") as tmp:
        for busy in (0, args.busy):
            for label, threads in (("torch default", cores), ("kit's choice", None)):
                procs = start_busy(busy)
                try:
                    time.sleep(2.0 if busy else 0.0)  # let the loops be running before the choice is made
                    load = "/".join(f"{x:.2f}" for x in os.getloadavg())
                    best, chosen = float("inf"), {}
                    for k in range(args.repeats):
                        out = Path(tmp) / f"b{busy}-{label.split()[0]}-{k}"
                        seconds, chosen = replay_seconds(out, args, threads)
                        best = min(best, seconds)
                finally:
                    stop(procs)
                who = "--threads (torch's default count)" if threads is not None else f"{chosen['source']}"
                print(f"| {busy} | {chosen['threads']} | {who} | {best:.1f} | {load} |", flush=True)


if __name__ == "__main__":
    main()
