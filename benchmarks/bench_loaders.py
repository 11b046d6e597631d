"""Loader throughput on synthetic inputs sized like the real splits SEAM reads (prints figures).

Run: python benchmarks/bench_loaders.py [--scale 1.0]. Sizes at scale 1: MultiNews test 5,622
rows x ~2.5 kB per article; SciCo test 200 topics x 40 paragraphs; MuSiQue val 4,834 questions
x 20 paragraphs; ECB+ converted from ../shared/realdata/ecbplus when present.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from seam_repro.datasets import load_dataset

WORDS = "the model reads several documents and writes a short summary of their shared facts".split()


def _text(n: int, seed: int) -> str:
    return " ".join(WORDS[(seed + i * 7) % len(WORDS)] for i in range(n))


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def _time(label: str, name: str, folder: Path, unit: str) -> None:
    t0 = time.perf_counter()
    data = load_dataset(name, folder)
    dt = time.perf_counter() - t0
    n = sum(len(v) for v in data.splits.values())
    mb = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6
    print(f"{label:<28} {n:>7} {unit:<10} {mb:8.1f} MB  {dt:7.2f} s  {n / dt:9.0f} {unit}/s  {mb / dt:6.1f} MB/s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        n = int(5622 * args.scale)
        for split in ("train", "validation", "test"):
            rows = [{"document": "|||||".join(_text(400, i + k) for k in range(3)), "summary": _text(60, i)} for i in range(n if split == "test" else n // 10)]
            _write_jsonl(root / "mn" / f"{split}.jsonl", rows)
        _time("MultiNews (jsonl)", "MultiNews", root / "mn", "rows")
        t = int(200 * args.scale)
        for split in ("train", "validation", "test"):
            rows = []
            for i in range(t):
                toks = [_text(30, i + p).split() for p in range(40)]
                rows.append({"id": i, "tokens": toks, "doc_ids": [p // 2 for p in range(40)],
                             "mentions": [[p, 0, 1, p % 9] for p in range(0, 40, 2)]})
            _write_jsonl(root / "scico" / f"{split}.jsonl", rows)
        _time("SciCo (jsonl)", "SciCo", root / "scico", "topics")
        q = int(4834 * args.scale)
        paragraphs = [{"idx": k, "title": f"T{k}", "paragraph_text": _text(90, k), "is_supporting": k < 2} for k in range(20)]
        _write_jsonl(root / "musique" / "val.jsonl", [{"id": f"2hop__{i}_{i + 1}", "paragraphs": paragraphs, "question": _text(12, i) + "?",
                                                       "answer": "x", "answer_aliases": [], "answerable": i % 2 == 0} for i in range(q)])
        _time("MuSiQue val (jsonl)", "MusiQue", root / "musique", "questions")
        real = Path(__file__).resolve().parents[2] / "shared" / "realdata" / "ecbplus"
        if real.is_dir():
            from seam_repro.datasets.ecb_xml import convert

            t0 = time.perf_counter()
            stats = convert(real, real / "ECBplus_coreference_sentences.csv", root / "ecb")
            dt = time.perf_counter() - t0
            docs = sum(stats.documents.values())
            print(f"{'ECB+ XML -> JSON (8 topics)':<28} {docs:>7} {'docs':<10} {'':>11}  {dt:7.2f} s  {docs / dt:9.0f} docs/s")
            _time("ECB (converted JSON)", "ECB", root / "ecb", "topics")


if __name__ == "__main__":
    main()
