"""IGCS-style content-selection loader: source documents plus reference selections (spans copied
verbatim from the sources), optionally with a query that the instruction refers to.

Replicates the sample content of IGCS-Bench (Amar et al., "A Unifying Scheme for Extractive
Content Selection Tasks": source documents, an instruction, one or more reference selections
scored by token F1 max over references) in a JSON Lines form the project documents itself.

Input: a folder of ``<split>.jsonl`` files (split = file name before the first ``.``). One
record per line::

    {"id": "asp-001",
     "query": "battery life",                   # optional / null; fills {query} in the instruction
     "documents": ["Review text ...", {"id": "r2", "text": "..."}],
     "references": [["span copied from a document", "another span"], ["a second annotator's spans"]]}

``references`` is a non-empty list of selections; each selection is a list of strings (possibly
empty: "nothing to select") and every span must occur in some document, exactly or ignoring case
and whitespace kind (checked here, so a bad fixture fails at load time with its line named).

Targets: ``{"references": [[...], ...], "documents": [text, ...]}`` with the documents in source
order (grounding needs them; the prompt shows them in the run's permuted order).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from seam_repro.datasets import load_jsonl_folder, require
from seam_repro.datasets.zeroscrolls import RECORDS, read_documents, read_id, read_query
from seam_repro.errors import InputError
from seam_repro.instances import Instance, LoadedDataset

DEFAULT_NAME = "IGCS"
REFERENCES_FORM = "a non-empty list of selections, each a list of span strings copied from the documents"


def fold(text: str) -> str:
    """Lowercase and map each whitespace character to a space, one for one (offsets stay valid): the
    second grounding stage of ``metrics/igcs.py`` (references must ground without fuzzy matching)."""
    return "".join(" " if ch.isspace() else (ch.lower() if len(ch.lower()) == 1 else ch) for ch in text)


def _references(row: dict[str, Any], texts: list[str], path: Path, rec: str) -> list[list[str]]:
    refs = require(row, "references", list, path, rec, REFERENCES_FORM)
    if not refs or not all(isinstance(sel, list) and all(isinstance(s, str) for s in sel) for sel in refs):
        raise InputError(path, f"expected {REFERENCES_FORM}", record=rec, field="references")
    loose = [fold(t) for t in texts]
    for i, sel in enumerate(refs):
        for j, span in enumerate(sel):
            if not span.strip():
                raise InputError(path, f"selection {i} span {j} is empty", record=rec, field="references")
            if not any(span in t for t in texts) and not any(fold(span) in t for t in loose):
                raise InputError(path, f"selection {i} span {j} ({span[:50]!r}) occurs in no document; "
                                 "reference spans must be copied from the sources", record=rec, field="references")
    return [list(sel) for sel in refs]


def _instance(name: str, path: Path, rec: str, row: dict[str, Any], split: str) -> Instance:
    rid = read_id(row, path, rec)
    documents = read_documents(row, path, rec)
    texts = [d.text for d in documents]
    target = {"references": _references(row, texts, path, rec), "documents": texts}
    return Instance(dataset=name, split=split, instance_id=rid, raw_id=rid, documents=documents,
                    question=read_query(row, path, rec), target=target)


def load(path: Path, name: str = DEFAULT_NAME) -> LoadedDataset:
    """Every ``<split>.jsonl`` of an IGCS-style folder; ``name`` is the suite's dataset name."""
    return load_jsonl_folder(path, name, RECORDS, partial(_instance, name))


def document_units(data: LoadedDataset) -> LoadedDataset:
    """One unit per (instance, document) for the suite's ``"units": "document"`` (IGCS §5.3
    document-level inference), in instance then document order: id ``<id>#doc<k>`` (``k`` = 0-based
    source position), its only document document ``k``, its target with ``"doc_index": k`` and
    ``"parent": <id>`` added; scoring concatenates the units' selections. Source files are unchanged."""
    splits = {split: [inst._replace(instance_id=f"{inst.instance_id}#doc{k}", documents=(doc,),
                                    target={**inst.target, "doc_index": k, "parent": inst.instance_id},
                                    extra={**inst.extra, "group": inst.instance_id})
                      for inst in insts for k, doc in enumerate(inst.documents)]
              for split, insts in data.splits.items()}
    return data._replace(splits=splits)
