"""Benchmark: loading the embedded SmolLM2 from the pinned GGUF vs from its cached conversion.

Every embedded replay (``make demo``, the CI smoke replays, the image check) starts by loading the
model. transformers reads the GGUF's metadata once each for the config, the tokenizer and the
weights; the kit keeps the converted checkpoint in its cache (``generate/embedded.py``) and loads
that. This prints, each in a fresh process: the first load (converts into an empty cache, then
loads), a later load (cache present, files hash-checked), and transformers' direct GGUF load.

    python benchmarks/bench_embedded_load.py [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHED = "from seam_repro.generate import make_backend; make_backend('hf', None)"
DIRECT = """
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from seam_repro.generate.embedded import find_gguf
g = find_gguf()
AutoTokenizer.from_pretrained(str(g.parent), gguf_file=g.name, local_files_only=True)
AutoModelForCausalLM.from_pretrained(str(g.parent), gguf_file=g.name, local_files_only=True, dtype=torch.float32)
"""


def timed(code: str, cache: Path) -> float:
    env = dict(os.environ, SEAM_REPRO_CACHE=str(cache), PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1",
               TQDM_DISABLE="1")
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    rows: dict[str, list[float]] = {"first load (converts into an empty cache)": [],
                                    "later load (cached conversion, hash-checked)": [],
                                    "transformers' direct GGUF load": []}
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            rows["first load (converts into an empty cache)"].append(timed(CACHED, Path(tmp)))
            rows["later load (cached conversion, hash-checked)"].append(timed(CACHED, Path(tmp)))
            rows["transformers' direct GGUF load"].append(timed(DIRECT, Path(tmp)))
    print(f"embedded SmolLM2-135M load, whole process, best of {args.repeat} (load average {os.getloadavg()[0]:.2f})")
    for what, times in rows.items():
        print(f"  {what:48s} {min(times):6.1f} s")


if __name__ == "__main__":
    main()
