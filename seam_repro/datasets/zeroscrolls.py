"""ZeroSCROLLS-style loader: long-context tasks given as instruction-free records (the instruction
comes from the prompt file, the layout from ``render/zeroscrolls.py``).

Replicates the record content of the ZeroSCROLLS test sets (Shaham et al., 2023, §3: a context,
an optional query, one or more reference outputs scored with max over references) in a JSON Lines
form the project documents itself, so fixtures and converted data share one reader.

Input: a folder of ``<split>.jsonl`` files (split = file name before the first ``.``). One
record per line::

    {"id": "qm-001",
     "query": "What did the group decide about the remote's buttons?",   # optional / null
     "documents": ["Meeting text ...", {"id": "m2", "title": "Design", "text": "..."}],
     "references": ["First reference output.", "Second reference output."]}

``documents`` is a non-empty list of strings or ``{"text"[, "id", "title"]}`` objects, in source
order (the sampler permutes them per run). ``references`` is a non-empty list of non-empty
strings (a percentage such as ``"40%"`` for SpaceDigest-style aggregation, a summary for
QMSum-style query-based summarization). The target is ``{"references": [...]}``.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from seam_repro.datasets import load_jsonl_folder, require
from seam_repro.errors import InputError
from seam_repro.instances import Document, Instance, LoadedDataset

DEFAULT_NAME = "ZeroSCROLLS"
DOCUMENTS_FORM = 'a non-empty list of strings or {"text": str[, "id", "title"]} objects'
RECORDS = "<split>.jsonl files of {id, query, documents, references} records"


def read_documents(row: dict[str, Any], path: Path, rec: str) -> tuple[Document, ...]:
    """The record's ``documents`` as typed documents (shared with the IGCS loader)."""
    docs = require(row, "documents", list, path, rec, DOCUMENTS_FORM)
    if not docs:
        raise InputError(path, f"empty; expected {DOCUMENTS_FORM}", record=rec, field="documents")
    out = []
    for i, doc in enumerate(docs):
        if isinstance(doc, str):
            out.append(Document(doc_id=str(i), text=doc))
        elif isinstance(doc, dict) and isinstance(doc.get("text"), str):
            title = doc.get("title", "")
            out.append(Document(doc_id=str(doc.get("id", i)), text=doc["text"], title=title if isinstance(title, str) else ""))
        else:
            raise InputError(path, f"document {i}: expected {DOCUMENTS_FORM}", record=rec, field="documents")
    return tuple(out)


def read_query(row: dict[str, Any], path: Path, rec: str) -> str | None:
    """Optional ``query``: a non-empty string, or absent/null for tasks without one."""
    query = row.get("query")
    if query is None:
        return None
    if not isinstance(query, str) or not query.strip():
        raise InputError(path, f"got {query!r}; expected a non-empty string or null", record=rec, field="query")
    return query


def read_id(row: dict[str, Any], path: Path, rec: str) -> str:
    rid = require(row, "id", str, path, rec, "a non-empty string id")
    if not rid.strip():
        raise InputError(path, "empty; expected a non-empty string id", record=rec, field="id")
    return rid


def _instance(name: str, path: Path, rec: str, row: dict[str, Any], split: str) -> Instance:
    rid = read_id(row, path, rec)
    refs = require(row, "references", list, path, rec, "a non-empty list of reference strings")
    if not refs or not all(isinstance(r, str) and r.strip() for r in refs):
        raise InputError(path, "expected a non-empty list of non-empty reference strings", record=rec, field="references")
    return Instance(dataset=name, split=split, instance_id=rid, raw_id=rid, documents=read_documents(row, path, rec),
                    question=read_query(row, path, rec), target={"references": list(refs)})


def load(path: Path, name: str = DEFAULT_NAME) -> LoadedDataset:
    """Every ``<split>.jsonl`` of a ZeroSCROLLS-style folder; ``name`` is the suite's dataset name."""
    return load_jsonl_folder(path, name, RECORDS, partial(_instance, name))
