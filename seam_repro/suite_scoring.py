"""Scoring of prompt records whose task is not one of SEAM's four: the metric named in the record
(``metric``, the suite's metric for the manifest's profile) computed through
``seam_repro.suites.metrics_registry``, one instance line per instance.

Replicates the per-instance scoring of ZeroSCROLLS (§3.3: max over references) and IGCS (§3.3
token F1 of grounded spans; §5.3 document-level inference: the selections made for each document
of an instance are concatenated, each span grounded hinted to its own document, then scored once
against the instance's references). Used by ``scoring.py``; formats are docs/ARCHITECTURE.md's.

Responses are extracted with ``parse.extract_clean`` under both profiles: SEAM's upstream
extraction looks for SEAM's answer markers, which these prompts do not have.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seam_repro import __version__
from seam_repro.errors import InputError, PrerequisiteError
from seam_repro.parse import extract_clean

SEAM_TASKS: tuple[str, ...] = ("coreference", "summarization", "qa", "fic")
DOC_LEVEL_METRIC = "igcs_token_f1"
Key = tuple[str, int, str]


def is_suite_task(task: str) -> bool:
    return task not in SEAM_TASKS


def check_record(path: Path, where: str, rec: dict[str, Any]) -> None:
    """A suite record names a known metric and carries ``{"references": [...]}`` (plus the source
    documents for metrics that ground in them)."""
    from seam_repro.suites.metrics_registry import METRICS

    metric = rec.get("metric")
    if not isinstance(metric, str) or metric not in METRICS:
        raise InputError(path, f"task '{rec['task']}' is scored by the record's metric; expected one of "
                         f"{', '.join(sorted(METRICS))}, got {metric!r}", record=where, field="metric")
    target = rec.get("target")
    refs = target.get("references") if isinstance(target, dict) else None
    if not isinstance(refs, list) or not refs:
        raise InputError(path, 'expected {"references": [...]} with at least one reference', record=where,
                         field="target")
    if METRICS[metric].needs_source:
        docs = target.get("documents")
        if not isinstance(docs, list) or not docs or not all(isinstance(d, str) for d in docs):
            raise InputError(path, f"metric {metric} grounds in the sources; expected target.documents as a "
                             "non-empty list of strings", record=where, field="target")
    if "doc_index" in target and metric != DOC_LEVEL_METRIC:
        raise InputError(path, f"document units are scored with {DOC_LEVEL_METRIC}, not {metric}", record=where,
                         field="metric")


def metric_version(metric: str) -> str:
    from seam_repro.suites.metrics_registry import get

    return f"{metric}/{get(metric).module}@seam-repro=={__version__}/extract=clean"


def _references(metric: str, target: dict[str, Any]) -> tuple[list[str], list[str] | None]:
    """Registry arguments: reference strings (span lists as JSON arrays) and the sources."""
    from seam_repro.suites.metrics_registry import get

    if get(metric).needs_source:
        return [json.dumps(sel, ensure_ascii=False) for sel in target["references"]], list(target["documents"])
    return [str(r) for r in target["references"]], None


def _line(key: Key, metric: str, score: float | None, valid: bool, details: dict[str, Any], profile: str) -> dict[str, Any]:
    version = metric_version(metric)
    entry = {"metric": metric, "score": score, "metric_version": version}
    return {"dataset": key[0], "run": key[1], "instance_id": key[2], "metric": metric, "score": score,
            "valid_format": valid, "metric_version": version,
            "details": {"profile": profile, **details, "upstream": entry, "corrected": entry}}


def _score_one(key: Key, rec: dict[str, Any], response: str, decodable: bool, profile: str) -> dict[str, Any]:
    from seam_repro.suites.metrics_registry import compute

    metric = rec["metric"]
    refs, sources = _references(metric, rec["target"])
    try:
        out = compute(metric, response, refs, sources)
    except PrerequisiteError as exc:
        return _line(key, metric, None, False, {"reason": str(exc)}, profile)
    except InputError as exc:
        raise InputError("prompts.jsonl", f"gold target cannot be scored ({exc})", record=f"{key}", field="target") from None
    return _line(key, metric, out["score"], bool(out["valid_format"]) and decodable, dict(out["details"]), profile)


def _score_units(parent: Key, units: Sequence[tuple[dict[str, Any], str, bool]], profile: str) -> dict[str, Any]:
    """One document-level instance: concatenate every unit's spans in document order, ground each
    hinted to its document, score once. An instance with a document never prompted (``--limit``,
    a subsample cap) gets no score, with the reason, rather than a recall-deflated one."""
    target = units[0][0]["target"]
    n_docs = len(target["documents"])
    seen = sorted(u[0]["target"]["doc_index"] for u in units)
    if seen != list(range(n_docs)):
        missing = sorted(set(range(n_docs)) - set(seen))
        return _line(parent, DOC_LEVEL_METRIC, None, all(u[2] for u in units),
                     {"reason": f"document-level instance incomplete: documents {missing} of {n_docs} have no "
                                "prediction (run without --limit and with max_num_samples -1)",
                      "documents_predicted": seen}, profile)
    try:
        from seam_repro.suites import igcs

        spans: list[tuple[str, int]] = []
        valid: list[bool] = []
        for rec, response, decodable in sorted(units, key=lambda u: u[0]["target"]["doc_index"]):
            parsed = igcs.parse_answer(response)
            spans += [(s, rec["target"]["doc_index"]) for s in parsed.spans]
            valid.append(parsed.valid and decodable)
        result = igcs.score_instance(spans, target["references"], igcs.SourceIndex(target["documents"]))  # type: ignore[arg-type]
    except PrerequisiteError as exc:
        return _line(parent, DOC_LEVEL_METRIC, None, False, {"reason": str(exc)}, profile)
    details = {**result.details(), "inference": "document", "units_valid": valid}
    return _line(parent, DOC_LEVEL_METRIC, result.f1, all(valid), details, profile)


def score_records(items: Sequence[tuple[Key, dict[str, Any], dict[str, Any]]], profile: str) -> list[dict[str, Any]]:
    """Instance lines for ``(key, prompt record, prediction)`` triples, in first-appearance order;
    document units of one instance become a single line keyed by the instance id."""
    order: list[Key] = []
    single: dict[Key, dict[str, Any]] = {}
    grouped: dict[Key, list[tuple[dict[str, Any], str, bool]]] = {}
    for key, rec, pred in items:
        response = extract_clean(pred["output"])
        decodable = bool(pred.get("_decodable", True))
        target = rec["target"]
        if "doc_index" in target:
            parent = (key[0], key[1], str(target.get("parent", key[2])))
            if parent not in grouped:
                grouped[parent] = []
                order.append(parent)
            grouped[parent].append((rec, response, decodable))
        else:
            line = _score_one(key, rec, response, decodable, profile)
            if pred.get("truncated"):
                line["details"]["prompt_truncated"] = True
            single[key] = line
            order.append(key)
    return [single[k] if k in single else _score_units(k, grouped[k], profile) for k in order]


def summarise(task: str, lines: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
    """The ``summary.json`` block of one dataset: run score = mean of its non-null instance scores."""
    out: dict[str, Any] = {"task": task, "runs": {}, "format_rate": {}, "n_instances": {}}
    metric = None
    reasons = set()
    for run, items in sorted(lines.items()):
        k = str(run)
        scores = [ln["score"] for ln in items if ln["score"] is not None]
        out["runs"][k] = sum(scores) / len(scores) if scores else None
        out["format_rate"][k] = sum(ln["valid_format"] for ln in items) / len(items)
        out["n_instances"][k] = len(items)
        metric = items[0]["metric"]
        reasons |= {ln["details"].get("reason") for ln in items if ln["score"] is None} - {None}
    out["metric"] = metric
    out["corrected"] = {"metric": metric, "runs": dict(out["runs"]), "extraction": "clean"}
    out["extraction"] = "clean"
    if reasons:
        out["reason"] = sorted(reasons)[0]
    return out
