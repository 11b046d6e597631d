"""OpenASP loader: port of upstream SEAM ``datasets_classes/mds/aspect_based.py``
(``AspectBasedSummarizationDataset.load`` + ``pre_process``).

Input: a folder of ``*.jsonl`` (and ``*.jsonl.gz``) files, split name = file name before the
first ``.`` (so the evaluated split must be ``test.jsonl``). One record per line::

    {"guid": "Ron Paul comments/KROG/mnews-train.135533.A", "aspect_label": "Ron Paul comments",
     "documents": [{"filename": "...", "text": ["Sentence one.", "Sentence two."]}, ...],
     "summary_text": ["Summary sentence one.", ...], "topic_id": "mnews-train/135533", ...}

Documents are ``' '.join(doc["text"])``; the target is ``'\\n'.join(summary_text)``.
Upstream takes split order from ``glob()``, which is filesystem order; that order only matters
for upstream's (disabled at HEAD) per-split subsampling, so we use sorted file-name order, which
is reproducible. Two files giving the same split name are rejected (upstream silently keeps one).
"""

from __future__ import annotations

from pathlib import Path

from seam_repro.datasets import load_jsonl_folder, require, str_list
from seam_repro.errors import InputError
from seam_repro.instances import Document, Instance, LoadedDataset

DATASET = "OpenASP"


def _instance(path: Path, rec: str, row: dict, split: str) -> Instance:
    guid = require(row, "guid", str, path, rec, "a string id")
    label = require(row, "aspect_label", str, path, rec, "the aspect label string")
    docs = require(row, "documents", list, path, rec, 'a list of {"text": [sentences]} objects')
    documents = []
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict) or "text" not in doc:
            raise InputError(path, f"document {i}: expected an object with a 'text' list of sentences", record=rec, field="documents")
        sentences = str_list(doc["text"], path, rec, f"documents[{i}].text", "a list of sentence strings")
        name = doc.get("filename", str(i))
        documents.append(Document(doc_id=str(name), text=" ".join(sentences)))
    summary = str_list(require(row, "summary_text", list, path, rec, "a list of summary sentences"), path, rec, "summary_text")
    return Instance(DATASET, split, guid, guid, tuple(documents), aspect_label=label, target="\n".join(summary),
                    extra={k: row[k] for k in ("topic_id", "title") if k in row})


def load(path: Path) -> LoadedDataset:
    """Load every ``*.jsonl``/``*.jsonl.gz`` split of an OpenASP folder."""
    return load_jsonl_folder(path, DATASET, "<split>.jsonl files (test.jsonl is evaluated)", _instance)
