"""MultiNews loader: port of upstream SEAM ``datasets_classes/mds/multi_news.py``
(``load_dataset("multi_news")``; ``document.split('|||||')``; id = DataFrame row index).

Two layouts are accepted:

* HF tables: ``train``, ``validation``, ``test`` as ``.jsonl``/``.jsonl.gz``/``.parquet`` with
  ``{"document": "Article one ... |||||Article two ...", "summary": "– The summary ..."}``.
* The canonical release: ``{train,val,test}.src.cleaned`` + ``{train,val,test}.tgt``, one
  instance per line. They are mapped the way the HF ``multi_news`` builder turns its source files
  into ``document``/``summary``: ``document = line.strip()`` with ``NEWLINE_CHAR`` replaced by
  ``"\\n"`` and ``story_separator_special_tag`` replaced by ``"|||||"``; ``summary =
  line.strip().lstrip("- ")`` (ASCII hyphen/space only, so the en dash that opens newser
  summaries stays, as in the HF data). ``val`` becomes split ``validation``. This mapping is
  inferred from the HF builder script, not checked byte-for-byte against the HF parquet files.

Documents are ``document.split('|||||')`` **not stripped**: a trailing separator leaves an empty
last document, exactly as upstream renders it.
"""

from __future__ import annotations

from pathlib import Path

from seam_repro.datasets import file_hashes, open_text, read_rows, require, require_dir, split_files
from seam_repro.errors import InputError
from seam_repro.instances import Instance, LoadedDataset, plain_documents

DATASET = "MultiNews"
SPLITS: tuple[str, ...] = ("train", "validation", "test")
RAW_NAMES: dict[str, str] = {"train": "train", "validation": "val", "test": "test"}
SEPARATOR = "|||||"


def _instance(split: str, index: int, document: str, summary: str) -> Instance:
    return Instance(DATASET, split, str(index), index, plain_documents(document.split(SEPARATOR)), target=summary)


def _raw_split(folder: Path, split: str) -> tuple[list[Instance], list[Path]]:
    """Read one split of the canonical ``.src.cleaned``/``.tgt`` release."""
    stem = RAW_NAMES[split]
    src, tgt = folder / f"{stem}.src.cleaned", folder / f"{stem}.tgt"
    for f in (src, tgt):
        if not f.is_file():
            raise InputError(f, f"missing; the raw MultiNews layout needs {stem}.src.cleaned and {stem}.tgt")
    with open_text(src) as fs, open_text(tgt) as ft:
        # iterate like the HF builder does (file lines split on "\n" only, not str.splitlines)
        src_lines, tgt_lines = list(fs), list(ft)
    if len(src_lines) != len(tgt_lines):
        raise InputError(src, f"has {len(src_lines)} lines but {tgt.name} has {len(tgt_lines)}; expected one summary per source line")
    out = []
    for i, (s, t) in enumerate(zip(src_lines, tgt_lines, strict=True)):
        document = s.strip().replace("NEWLINE_CHAR", "\n").replace("story_separator_special_tag", SEPARATOR)
        out.append(_instance(split, i, document, t.strip().lstrip("- ")))
    return out, [src, tgt]


def load(path: Path) -> LoadedDataset:
    """Load train/validation/test of MultiNews from HF tables or the raw release files."""
    folder = require_dir(Path(path), DATASET, "train/validation/test tables or {train,val,test}.src.cleaned + .tgt")
    raw = (folder / "test.src.cleaned").is_file() or (folder / "train.src.cleaned").is_file()
    splits: dict[str, list[Instance]] = {}
    read: list[Path] = []
    for split in SPLITS:
        if raw:
            splits[split], files = _raw_split(folder, split)
        else:
            files = split_files(folder, split)
            if not files:
                raise InputError(folder, f"no file for split '{split}'; expected {split}.jsonl, {split}.jsonl.gz, {split}.parquet or {RAW_NAMES[split]}.src.cleaned")
            pairs = [(require(row, "document", str, f, rec, "a string of articles joined by '|||||'"),
                      require(row, "summary", str, f, rec, "the summary string")) for f in files for rec, row in read_rows(f)]
            splits[split] = [_instance(split, i, document, summary) for i, (document, summary) in enumerate(pairs)]
        read.extend(files)
    return LoadedDataset(name=DATASET, splits=splits, files=file_hashes(folder, read))
