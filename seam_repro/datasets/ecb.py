"""ECB+ loader: port of the data handling in upstream SEAM ``datasets_classes/cdcr/ecb.py``
(``ECB.load`` + ``_process_single_dataset``), without the random mention-id draw or rendering.

Input is the Cattan et al. preprocessed JSON (ariecattan/coref ``get_ecb_data.py``) that the SEAM
Drive zip ships (or that ``seam_repro.datasets.ecb_xml`` writes from the raw corpus)::

    test.json          {"36_1ecb.xml": [[0, 1, "2", true, true], [0, 2, "leaders", true, true], ...]}
    test_events.json   [{"doc_id": "36_1ecb.xml", "topic": "36", "cluster_id": 17642655532934542,
                         "tokens_ids": [6], "m_id": "16", "subtopic": "36_1", ...}, ...]

Splits are ``train_events, train_entities, dev_events, dev_entities, test_events, test_entities``
(upstream order). One instance per topic, topics in sorted order (pandas ``groupby`` sorts its
keys); ``Instance.mentions`` keep the mention file's row order because upstream assigns the drawn
mention ids in that order. ``Instance.documents`` are the topic's documents that carry a mention of
the category, in order of their first mention; upstream iterates a ``set`` there and then sorts the
*rendered* document strings, so renderers must sort by rendered text, not rely on this order.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seam_repro.datasets import file_hashes, require, require_dir
from seam_repro.errors import InputError
from seam_repro.files.reading import is_a, read_json
from seam_repro.instances import Document, Instance, LoadedDataset, Mention, Token

DATASET = "ECB"
SPLITS: tuple[str, ...] = ("train", "dev", "test")
CATEGORIES: tuple[str, ...] = ("events", "entities")
ROW_FORM = "a list [sent_id:int, token_id:int, token_text:str, is_annotated:bool, ...]"


def _row_ok(row: Any) -> bool:
    """A token row of the form ``ROW_FORM``; JSON values have exact types, so ``type(...) is``
    is ``isinstance`` here, except that a bool is no int token id."""
    return (type(row) is list and len(row) >= 4 and type(row[0]) in (int, bool) and type(row[1]) is int
            and type(row[2]) is str and type(row[3]) is bool)


def _tokens(path: Path, doc_id: str, rows: Any) -> tuple[tuple[Token, ...], set[int]]:
    """Validate one document's token rows; its ``Token`` objects and the set of its token ids
    (what mentions are checked against). The first bad row is named in the error."""
    if not isinstance(rows, list):
        raise InputError(path, f"expected a list of token rows ({ROW_FORM})", record=f"document '{doc_id}'")
    if not all(map(_row_ok, rows)):
        i, row = next((i, row) for i, row in enumerate(rows) if not _row_ok(row))
        raise InputError(path, f"token row {i}: expected {ROW_FORM}, got {str(row)[:80]}", record=f"document '{doc_id}'")
    out = tuple([Token(row[0], row[1], row[2], row[3]) for row in rows])
    if not any(row[3] for row in rows):
        # upstream cuts each document to its annotated span; without one it has no text at all
        raise InputError(path, "no token has is_annotated = true; expected at least one", record=f"document '{doc_id}'")
    return out, {t.token_id for t in out}


def _mention(path: Path, i: int, row: Any, docs: dict[str, Any], doc_tokens: dict[str, set[int]]) -> tuple[Any, Mention]:
    """Validate one mention dict; return ``(topic, Mention)``."""
    rec = f"mention {i}"
    if not isinstance(row, dict):
        raise InputError(path, "expected a JSON object with doc_id, topic, cluster_id, tokens_ids", record=rec)
    doc_id = require(row, "doc_id", str, path, rec, "a document id string present in the split's token file")
    topic = require(row, "topic", (str, int), path, rec, "a topic id (string or int)")
    cluster = require(row, "cluster_id", (str, int), path, rec, "a cluster id (int or string)")
    tids = require(row, "tokens_ids", list, path, rec, "a non-empty list of int token ids")
    if not tids or not all(is_a(t, int) for t in tids):
        raise InputError(path, "expected a non-empty list of int token ids", record=rec, field="tokens_ids")
    if doc_id not in docs:
        raise InputError(path, f"document '{doc_id}' is not in the split's token file", record=rec, field="doc_id")
    known = doc_tokens[doc_id]
    for t in (tids[0], tids[-1]):
        if t not in known:
            raise InputError(path, f"token id {t} does not exist in document '{doc_id}'", record=rec, field="tokens_ids")
    return topic, Mention(cluster_id=cluster, doc_id=doc_id, token_ids=tuple(tids))


def _split(folder: Path, split: str, category: str, docs: dict[str, Any], doc_tokens: dict[str, set[int]], tokens_path: Path) -> list[Instance]:
    """All topic instances of one ``{split}_{category}`` mention file."""
    path = folder / f"{split}_{category}.json"
    rows = read_json(path, what="dataset file", expect=None)
    if not isinstance(rows, list):
        raise InputError(path, "expected a JSON list of mention objects")
    by_topic: dict[Any, list[Mention]] = {}
    for i, row in enumerate(rows):
        topic, mention = _mention(path, i, row, docs, doc_tokens)
        by_topic.setdefault(topic, []).append(mention)
    if len({type(t) for t in by_topic}) > 1:
        raise InputError(path, "mixes string and int topics; expected one type (pandas cannot sort them)", field="topic")
    name = f"{split}_{category}"
    return [Instance(DATASET, name, str(topic), topic,  # documents in order of first mention:
                     tuple(Document(doc_id=d, tokens=docs[d]) for d in dict.fromkeys(m.doc_id for m in mentions)),
                     mentions=tuple(mentions), extra={"tokens_file": tokens_path.name})
            for topic, mentions in sorted(by_topic.items())]


def load(path: Path) -> LoadedDataset:
    """Load every ECB+ split from a folder of Cattan et al. JSON files."""
    folder = require_dir(Path(path), DATASET, "train/dev/test.json and {split}_{events,entities}.json")
    needed = [folder / f"{s}.json" for s in SPLITS] + [folder / f"{s}_{c}.json" for s in SPLITS for c in CATEGORIES]
    for f in needed:
        if not f.is_file():
            raise InputError(f, "missing; the ECB+ folder must hold train/dev/test.json and {split}_{events,entities}.json")
    splits: dict[str, list[Instance]] = {}
    for split in SPLITS:
        tokens_path = folder / f"{split}.json"
        raw = read_json(tokens_path, what="dataset file", expect=None)
        if not isinstance(raw, dict):
            raise InputError(tokens_path, "expected a JSON object mapping doc_id -> token rows")
        docs: dict[str, tuple[Token, ...]] = {}
        doc_tokens: dict[str, set[int]] = {}
        for doc_id, rows in raw.items():
            docs[doc_id], doc_tokens[doc_id] = _tokens(tokens_path, doc_id, rows)
        for category in CATEGORIES:
            splits[f"{split}_{category}"] = _split(folder, split, category, docs, doc_tokens, tokens_path)
    return LoadedDataset(name=DATASET, splits=splits, files=file_hashes(folder, needed))
