"""MuSiQue loader: port of upstream SEAM ``datasets_classes/qa/MuSiQue.py`` (``MusiQue.load`` +
``pre_process``).

Input: a folder of ``*.jsonl`` files (``*.jsonl.gz`` too), split = file name before the first
``.``; SEAM evaluates ``val.jsonl`` (the renamed ``musique_full_v1.0_dev.jsonl``). One record per
line::

    {"id": "2hop__150763_14904", "question": "Who founded the journal ...?",
     "paragraphs": [{"idx": 0, "title": "Journal of ...", "paragraph_text": "...", "is_supporting": false}, ...],
     "answer": "American Institute of Physics", "answer_aliases": ["AIP"], "answerable": true, ...}

Documents are the ``paragraph_text`` of every paragraph in file order (the title goes to
``Document.title``; upstream does not render it). The target is
``{"is_answerable": answerable, "answer_content": answer}``.

Deviations, on purpose: a record without ``answerable`` (the answerable-only ``musique_ans``
format) gets ``True``; upstream would put ``""`` there (``row.get('answerable', '')``). A record
without ``answer`` (test files) gets ``""`` as upstream does. Split order is sorted file-name
order rather than ``glob()`` order (see ``openasp.py``).
"""

from __future__ import annotations

from pathlib import Path

from seam_repro.datasets import load_jsonl_folder, require, str_list
from seam_repro.errors import InputError
from seam_repro.instances import Document, Instance, LoadedDataset

DATASET = "MusiQue"


def _instance(path: Path, rec: str, row: dict, split: str) -> Instance:
    qid = require(row, "id", str, path, rec, "a string id such as '2hop__1_2'")
    question = require(row, "question", str, path, rec, "the question string")
    paragraphs = require(row, "paragraphs", list, path, rec, 'a list of {"title", "paragraph_text"} objects')
    documents = []
    for i, p in enumerate(paragraphs):
        if not isinstance(p, dict) or not isinstance(p.get("paragraph_text"), str):
            raise InputError(path, f"paragraph {i}: expected an object with a 'paragraph_text' string", record=rec, field="paragraphs")
        title = p.get("title", "")
        documents.append(Document(doc_id=str(p.get("idx", i)), text=p["paragraph_text"], title=title if isinstance(title, str) else ""))
    answer = row.get("answer", "")
    if not isinstance(answer, str):
        raise InputError(path, f"got {type(answer).__name__}; expected the answer string", record=rec, field="answer")
    aliases = str_list(row.get("answer_aliases", []), path, rec, "answer_aliases")
    answerable = row.get("answerable", True)
    if not isinstance(answerable, bool):
        raise InputError(path, f"got {answerable!r}; expected true or false", record=rec, field="answerable")
    # MuSiQue-Full pairs each answerable question with an unanswerable contrast that has the SAME id;
    # the manifest needs unique keys, so the contrast version gets a suffix (raw_id keeps the id).
    # gold_documents: indices of the supporting paragraphs, for `sensitivity`'s gold-position effect.
    return Instance(DATASET, split, qid if answerable else f"{qid}#unanswerable", qid, tuple(documents),
                    question=question, target={"is_answerable": answerable, "answer_content": answer},
                    answer_aliases=tuple(aliases),
                    extra={"answerable_missing": "answerable" not in row,
                           "gold_documents": tuple(i for i, p in enumerate(paragraphs) if p.get("is_supporting") is True)})


def load(path: Path) -> LoadedDataset:
    """Load every ``*.jsonl`` split of a MuSiQue folder."""
    return load_jsonl_folder(path, DATASET, "<split>.jsonl files (val.jsonl is evaluated)", _instance)
