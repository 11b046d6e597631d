"""Answer parsers on 10 MB adversarial model outputs: seconds per output for each parser.

The shapes are the ones that made the old backtracking regexes quadratic (``{`` with no ``}``, an
unclosed ``[1 1 1 ...x``) plus long realistic ones; every parser must stay linear, so a 10 MB
output takes well under a second or so each. ``--mb`` scales the size; ``--regex`` also times the
regexes the scanners replaced on a 200 KB slice (minutes: 42 s and 173 s measured; at 10 MB, days).
Run: python benchmarks/bench_parsers.py [--mb 10] [--regex]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seam_repro.metrics import (
    musique,  # noqa: E402
    validity,  # noqa: E402
)
from seam_repro.metrics.coref_parse import parse_clusters  # noqa: E402
from seam_repro.scoring.extract import extract_clean, extract_upstream  # noqa: E402

GOLD = {"is_answerable": True, "answer_content": "x"}


def shapes(size: int) -> dict[str, str]:
    return {
        "braces": "{" * size,
        "open-list": "[" + "1 " * (size // 2) + "x",
        "open-dict": "{'a': " + "1 " * (size // 2),
        "dict-per-line": "{'is_answerable': True}\n" * (size // 24),
        "clusters": "[" + ", ".join(f"[{i}, {i + 1}]" for i in range(size // 12)) + "]",
        "prose": "The answer is in document 3 and it is {'is_answerable': True} maybe. " * (size // 72),
    }


PARSERS: dict[str, Callable[[str], object]] = {
    "musique upstream": lambda t: musique.upstream_f1(t, GOLD),
    "musique corrected": lambda t: musique.corrected(t, GOLD),
    "validity qa": lambda t: validity.is_valid("qa", t),
    "validity coreference": lambda t: validity.is_valid("coreference", t),
    "coref clusters": parse_clusters,
    "extract upstream+clean": lambda t: (extract_upstream(t), extract_clean(t)),
}
OLD_REGEXES = {"\\{.*\\}": re.compile(r"\{.*\}"), "\\[[\\d, ]*\\d[\\d, ]*\\]": re.compile(r"\[[\d, ]*\d[\d, ]*\]")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=10.0)
    ap.add_argument("--regex", action="store_true")
    args = ap.parse_args()
    size = int(args.mb * 1_000_000)
    texts = shapes(size)
    print(f"{'parser':<24}" + "".join(f"{name:>15}" for name in texts) + f"   (seconds per {args.mb:g} MB output)")
    for pname, fn in PARSERS.items():
        cells = []
        for text in texts.values():
            start = time.perf_counter()
            fn(text)
            cells.append(time.perf_counter() - start)
        print(f"{pname:<24}" + "".join(f"{c:>15.3f}" for c in cells))
    if args.regex:
        small = shapes(200_000)
        for rname, rx in OLD_REGEXES.items():
            for sname in ("braces", "open-list"):
                start = time.perf_counter()
                rx.search(small[sname])
                print(f"old regex {rname} on 200 KB {sname}: {time.perf_counter() - start:.1f}s")


if __name__ == "__main__":
    main()
