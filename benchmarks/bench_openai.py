"""Does the ``openai`` backend keep a server busy? ``replay --backend openai`` at concurrency N
against a local OpenAI-compatible server (tests/openai_fake.py) that answers every request after a
fixed latency L: the ideal throughput is N / L requests per second; the target is >= 90 % of it.

Throughput is measured at the server, from the arrival of the first request to the answer of the
last (so start-up, rendering and scoring are not counted), over the bench config's prompts
(benchmarks/synth.py, fixture-size data, 680 prompts at 10 runs). The server runs in this process,
the replay in a child process, as a real client and server would. Anchor: a bare httpx client with
N threads sending as many requests to the same server (what this machine allows any client).

Usage: python benchmarks/bench_openai.py [--latency 0.2] [--concurrency 4,16,64] [--runs 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks"), str(REPO / "tests")]
from openai_fake import FakeServer  # noqa: E402
from synth import scaled_seam_data, seam_config  # noqa: E402

PROMPTS = REPO / "manifests" / "fixtures" / "prompts"


class TimedServer(FakeServer):
    """The fake server, noting when each request arrived and when its answer was sent."""

    def __init__(self, latency: float):
        super().__init__(delay=latency)
        self.first: float | None = None
        self.last = 0.0
        self.answered = 0
        self._times = threading.Lock()
        handler = self.httpd.RequestHandlerClass
        timed = self

        class Timed(handler):  # type: ignore[misc, valid-type]
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers (every answer has a Content-Length)
            # headers and body go out in two writes: with Nagle's algorithm the body waits for the
            # client's delayed ACK of the headers (~40 ms a request), which real servers avoid
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                with timed._times:
                    if timed.first is None:
                        timed.first = time.perf_counter()
                super().do_POST()
                with timed._times:
                    timed.last = time.perf_counter()
                    timed.answered += 1

        self.httpd.RequestHandlerClass = Timed
        self.httpd.socket.listen(1024)  # socketserver's backlog of 5 drops connections beyond it (1 s SYN retry)


def measure(manifest: Path, out: Path, latency: float, concurrency: int) -> tuple[int, float]:
    """(requests answered, requests per second between the first arrival and the last answer)."""
    with TimedServer(latency) as srv:
        env = dict(os.environ, PYTHONPATH=str(REPO), TQDM_DISABLE="1", HF_HUB_OFFLINE="1")
        cmd = [sys.executable, "-m", "seam_repro", "replay", str(manifest), "--backend", "openai",
               "--model", "fake-model", "--out", str(out), "--prompts-dir", str(PROMPTS), "--no-score",
               "--model-args", f"base_url={srv.base_url},concurrency={concurrency},send_seed=true"]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO)
        if proc.returncode != 0:
            raise SystemExit(f"replay failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        assert srv.first is not None
        return srv.answered, srv.answered / (srv.last - srv.first)


RAW_CLIENT = """
import sys, httpx
from concurrent.futures import ThreadPoolExecutor
url, n, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
client = httpx.Client(limits=httpx.Limits(max_connections=n))
body = {"model": "fake-model", "messages": [{"role": "user", "content": "p" * 5000}], "max_tokens": 16, "seed": 1}
with ThreadPoolExecutor(n) as pool:
    list(pool.map(lambda i: client.post(url + "/chat/completions", json=body).json(), range(count)))
"""
"""The anchor: the same HTTP client (httpx), N threads, nothing else, in its own process."""


def measure_raw(latency: float, concurrency: int, count: int) -> float:
    """Requests per second a bare httpx client reaches against the same server on this machine."""
    with TimedServer(latency) as srv:
        subprocess.run([sys.executable, "-c", RAW_CLIENT, srv.base_url, str(concurrency), str(count)], check=True,
                       capture_output=True, cwd=REPO)
        assert srv.first is not None
        return srv.answered / (srv.last - srv.first)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per request")
    ap.add_argument("--concurrency", default="4,16,64", help="comma-separated N")
    ap.add_argument("--runs", type=int, default=10, help="runs of the bench config (10 = 680 prompts)")
    args = ap.parse_args()
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    print(f"# server latency {args.latency * 1000:.0f} ms per request")
    print("| concurrency N | requests | ideal N/L (req/s) | replay (req/s) | of ideal | bare httpx, N threads (req/s) "
          "| replay / bare | target |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = scaled_seam_data(work / "data", scale=0)
        config = work / "config.json"
        config.write_text(json.dumps(seam_config(data, runs=args.runs)), encoding="utf-8")
        manifest = work / "m.json"
        subprocess.run([sys.executable, "-m", "seam_repro", "sample", str(config), "-o", str(manifest),
                        "--prompts-dir", str(PROMPTS)], env=dict(os.environ, PYTHONPATH=str(REPO)), check=True,
                       capture_output=True, cwd=REPO)
        for n in (int(x) for x in args.concurrency.split(",")):
            answered, rate = measure(manifest, work / f"run{n}", args.latency, n)
            raw = measure_raw(args.latency, n, answered)
            ideal = n / args.latency
            print(f"| {n} | {answered} | {ideal:.0f} | {rate:.1f} | {100 * rate / ideal:.0f} % | {raw:.1f} | "
                  f"{100 * rate / raw:.0f} % | {'OK' if rate >= 0.9 * ideal else 'below'} (>= 90 % of N/L) |")
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
