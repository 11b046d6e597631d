"""SciCo loader: port of the data handling in upstream SEAM ``datasets_classes/cdcr/scico.py``
(``load_dataset("allenai/scico")`` then ``SciCo.pre_process``), without the mention-id draw.

Input: a folder with one table per HF split, ``train``, ``validation``, ``test`` (in that order,
as the HF DatasetDict iterates them), each ``<split>.jsonl``, ``<split>.jsonl.gz`` or parquet
(``<split>.parquet``, HF shards ``<split>-00000-of-00001.parquet`` or ``scico-<split>.parquet``).
One row is one topic::

    {"id": 1, "tokens": [["Deep", "learning", ...], ...], "doc_ids": [0, 0, 1, ...],
     "mentions": [[0, 0, 1, 3], [2, 4, 4, 3], ...], "source": "pwc", "hard_10": false, ...}

``mentions`` are ``[paragraph, start, end (inclusive), cluster_id]`` and keep row order (upstream
assigns its drawn ids in that order). ``Instance.documents`` holds each document's unmarked text
built the upstream way (paragraph tokens joined by spaces, each paragraph followed by ``\\n``);
the renderer rebuilds it with mention markers from ``paragraphs``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seam_repro.datasets import file_hashes, read_rows, require, require_dir, split_files
from seam_repro.errors import InputError
from seam_repro.files.reading import is_a
from seam_repro.instances import Instance, LoadedDataset, Mention, plain_documents

DATASET = "SciCo"
SPLITS: tuple[str, ...] = ("train", "validation", "test")
EXTRA_KEYS: tuple[str, ...] = ("source", "hard_10", "hard_20", "curated")


def _row(path: Path, rec: str, row: dict[str, Any], split: str) -> Instance:
    """Validate one topic row and build its Instance."""
    raw_id = require(row, "id", int, path, rec, "an int topic id")
    tokens = require(row, "tokens", list, path, rec, "a list of paragraphs, each a list of token strings")
    for p, par in enumerate(tokens):
        if not isinstance(par, list) or not all(isinstance(t, str) for t in par):
            raise InputError(path, f"paragraph {p}: expected a list of token strings", record=rec, field="tokens")
    doc_ids = require(row, "doc_ids", list, path, rec, "a list of int document indices, one per paragraph")
    if len(doc_ids) != len(tokens) or not all(is_a(d, int) for d in doc_ids):
        raise InputError(path, f"expected {len(tokens)} int document indices (one per paragraph)", record=rec, field="doc_ids")
    n_docs = 0
    for p, d in enumerate(doc_ids):
        # upstream appends a new document only when doc_id == number of documents so far
        if d < 0 or d > n_docs:
            raise InputError(path, f"paragraph {p} has document index {d}; expected 0..{n_docs} (indices introduced in order)", record=rec, field="doc_ids")
        n_docs = max(n_docs, d + 1)
    raw_mentions = require(row, "mentions", list, path, rec, "a list of [paragraph, start, end, cluster_id]")
    mentions = []
    for k, m in enumerate(raw_mentions):
        if not (isinstance(m, list) and len(m) == 4 and all(is_a(x, int) for x in m)):
            raise InputError(path, f"mention {k}: expected [paragraph, start, end, cluster_id] ints, got {str(m)[:60]}", record=rec, field="mentions")
        par, start, end, cluster = m
        if not 0 <= par < len(tokens) or not 0 <= start <= end < len(tokens[par]):
            raise InputError(path, f"mention {k}: span {m[:3]} is outside paragraph bounds", record=rec, field="mentions")
        mentions.append(Mention(cluster_id=cluster, paragraph=par, start=start, end=end))
    texts = [""] * n_docs
    for p, d in enumerate(doc_ids):
        texts[d] += " ".join(tokens[p]) + "\n"
    return Instance(DATASET, split, str(raw_id), raw_id, plain_documents(texts), mentions=tuple(mentions),
                    paragraphs=tuple(tuple(p) for p in tokens), paragraph_doc_ids=tuple(doc_ids),
                    extra={k: row[k] for k in EXTRA_KEYS if k in row})


def load(path: Path) -> LoadedDataset:
    """Load the train/validation/test splits of SciCo from a folder of JSONL or parquet tables."""
    folder = require_dir(Path(path), DATASET, "train/validation/test as .jsonl, .jsonl.gz or .parquet")
    splits: dict[str, list[Instance]] = {}
    read: list[Path] = []
    for split in SPLITS:
        files = split_files(folder, split)
        if not files:
            raise InputError(folder, f"no file for split '{split}'; expected {split}.jsonl, {split}.jsonl.gz or {split}.parquet")
        rows = [(f, rec, r) for f in files for rec, r in read_rows(f)]
        splits[split] = [_row(f, rec, r, split) for f, rec, r in rows]
        read.extend(files)
    return LoadedDataset(name=DATASET, splits=splits, files=file_hashes(folder, read))


def max_doc_index(data: LoadedDataset) -> int:
    """Upstream ``SciCo.get_max_num_docs``: the largest 0-based document index over all splits.

    Reproduced on purpose: it is one less than the largest document count, so (upstream quirk)
    the topics with the most documents lose their last document when rendered.
    """
    return max(max(i.paragraph_doc_ids) for rows in data.splits.values() for i in rows if i.paragraph_doc_ids)
