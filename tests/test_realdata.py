"""Loaders on the real data samples in ../shared/realdata (skipped when absent). Expected values
come from the files themselves by independent means (the authors' own derived columns, raw JSON)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from seam_repro.datasets import load_dataset

REAL = Path(__file__).resolve().parents[2] / "shared" / "realdata"


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} not present")
    return path


def test_fusereviews_authors_layout_matches_their_clustered_alignments() -> None:
    path = _need(REAL / "fusereviews" / "dev_highlights_first8.csv")
    data = load_dataset("FuseReviews", path)
    assert list(data.splits) == ["validation"]
    csv.field_size_limit(1 << 30)
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(data.split("validation")) == len(rows) == 8
    for inst, row in zip(data.split("validation"), rows, strict=True):
        # the authors' clustered_alignments spell out each review span's text ("a ... b" for gaps)
        theirs = {a["review_span_text"] for cluster in json.loads(row["clustered_alignments"]) for a in cluster
                  if a.get("review_span_text")}
        assert set(inst.review_alignments) == theirs, row["summary_name"]
        assert list(inst.review_alignments) == sorted(inst.review_alignments)
        for i, doc in enumerate(inst.documents):
            assert doc.text == row[f"review_{i}_text"]
            assert [list(h) for h in doc.highlights] == json.loads(row[f"review_{i}_highlight_spans"])
        assert inst.target == row["summary_text"]


def test_musique_real_records() -> None:
    folder = _need(REAL / "musique")
    data = load_dataset("MusiQue", folder)
    [(split, rows)] = data.splits.items()
    assert split == "musique_train_first10" and len(rows) == 10
    raw = [json.loads(line) for line in (folder / "musique_train_first10.jsonl").read_text().splitlines() if line.strip()]
    for inst, rec in zip(rows, raw, strict=True):
        assert inst.instance_id == rec["id"] and inst.question == rec["question"]
        assert [d.text for d in inst.documents] == [p["paragraph_text"] for p in rec["paragraphs"]]
        assert inst.target == {"is_answerable": rec.get("answerable", True), "answer_content": rec["answer"]}
        assert inst.answer_aliases == tuple(rec["answer_aliases"])
