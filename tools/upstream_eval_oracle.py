"""Run the published SEAM evaluation code itself on prediction lists and print its results as JSONL.

An independent oracle for ``seam-repro score --profile upstream``: tests/test_upstream_eval_oracle.py
feeds it the same outputs. It needs a checkout of seam-benchmark/SEAM@6ad83f4 (never vendored
here) in $SEAM_UPSTREAM_SRC, ``rouge_score`` and ``numpy``, perl, and for coreference a
conll/reference-coreference-scorers checkout (``--scorer DIR``). Upstream's classes are called as
``scripts/evaluate_dataset.py`` builds them; their per-run ``_evaluate`` is called directly, since
``eval_all_in_dir`` only adds file globbing and tiktoken prompt lengths (tiktoken needs a download
and is replaced by a stub that is never called on this path).

Coreference: upstream writes ``/tmp/gold.conll`` and ``/tmp/predictions.conll`` (fixed paths) and
leaves the gold file open and unflushed while perl reads it. ``"gold": "published"`` runs that code
untouched (``open`` as upstream calls it, or with ``buffering=BLOCK`` to stand for another file
system block size); ``"gold": "flushed"`` gives upstream a line-buffered ``open`` for its files, so
perl reads the whole gold file: upstream as intended.

Input (stdin): one JSON object per line, ``{"key": any, "ds_name": "ECB"|"SciCo"|"MusiQue"|
"MultiNews"|"OpenASP", "gold": "published"|"flushed", "block": int|null, "predictions": [...]}``
where predictions are upstream's records (``prediction``, the id key, ``target``/``targets``).
Output (stdout): ``{"key": ..., "result": <what _evaluate returned>}`` per input line.
Usage: python tools/upstream_eval_oracle.py --scorer DIR < tasks.jsonl
"""

from __future__ import annotations

import argparse
import builtins
import json
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

ID_KEYS = {"ECB": "topic_id", "SciCo": "sample_id", "MusiQue": "id", "MultiNews": "id", "OpenASP": "guid"}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scorer", help="directory holding scorer.pl (reference-coreference-scorers)")
    args = ap.parse_args()
    sys.path.insert(0, os.environ["SEAM_UPSTREAM_SRC"])
    sys.modules.setdefault("tiktoken", types.ModuleType("tiktoken"))  # only eval_all_in_dir uses it
    work = Path(tempfile.mkdtemp(prefix="seam-eval-oracle-"))
    if args.scorer:
        (work / "reference-coreference-scorers").symlink_to(Path(args.scorer).resolve())
    (work / "SEAM").mkdir()
    os.chdir(work / "SEAM")  # upstream finds the scorer next to its own working directory

    from evaluation_classes import coreference  # type: ignore[import-not-found]
    from evaluation_classes.coreference import Coref  # type: ignore[import-not-found]
    from evaluation_classes.question_answering import QA  # type: ignore[import-not-found]
    from evaluation_classes.summarization import Summarization  # type: ignore[import-not-found]

    classes = {"ECB": Coref, "SciCo": Coref, "MusiQue": QA, "MultiNews": Summarization, "OpenASP": Summarization}
    for line in sys.stdin:
        task = json.loads(line)
        name = task["ds_name"]
        evaluator = classes[name](ID_KEYS[name], "unused", "unused")
        if task.get("gold") == "flushed":
            coreference.open = lambda path, mode="r": builtins.open(path, mode, buffering=1)  # type: ignore[attr-defined]
        elif task.get("block"):
            block = int(task["block"])
            coreference.open = lambda path, mode="r", b=block: builtins.open(path, mode, buffering=b)  # type: ignore[attr-defined]
        elif hasattr(coreference, "open"):
            del coreference.open  # back to the builtin, exactly as published
        result = evaluator._evaluate(task["predictions"], "model", 0)
        print(json.dumps({"key": task["key"], "result": _jsonable(result)}), flush=True)


if __name__ == "__main__":
    main()
