"""Metric name → callable, over every suite (SEAM, ZeroSCROLLS, IGCS), for ``seam-repro metric``.

Every entry takes the same arguments — one prediction string, one or more reference strings and
optional source documents — and returns a :class:`MetricResult` on the kit's 0–100 scale. SEAM's
metrics live in ``seam_repro.score.*`` and are imported only when used, so the list always shows
them and a module that cannot be imported yields a clear error naming it instead of a crash.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from seam_repro.errors import InputError, PrerequisiteError
from seam_repro.files import parse_json_text


@dataclass(frozen=True)
class MetricResult:
    score: float | None
    valid_format: bool
    details: dict[str, Any] = field(default_factory=dict)


Adapter = Callable[[Any, str, list[str], list[str] | None], MetricResult]
"""(implementation module, prediction, references, source documents) -> result."""


@dataclass(frozen=True)
class MetricSpec:
    name: str
    suite: str
    module: str
    """Module holding the implementation (imported lazily)."""
    summary: str
    reference_form: str
    """What each REFERENCE argument must look like (shown by ``--list`` and in errors)."""
    adapter: Adapter = field(repr=False)
    needs_source: bool = False
    max_references: int | None = None

    def load(self) -> Any:
        """Import the implementation module, turning an import failure into a one-line error."""
        try:
            return importlib.import_module(self.module)
        except ImportError as exc:
            raise PrerequisiteError(
                f"metric '{self.name}' is implemented in {self.module}, which cannot be imported ({exc}); "
                "install the missing package or update the kit"
            ) from exc

    def available(self) -> str | None:
        """None when usable, else the reason (for ``--list``)."""
        try:
            self.load()
        except PrerequisiteError as exc:
            return str(exc)
        return None


def _json_ref(text: str, name: str, i: int, expected: type, form: str) -> Any:
    try:
        value = parse_json_text(text, f"reference {i}")
    except InputError as exc:
        problem = str(exc).split(": ", 1)[-1]
        raise InputError(f"reference {i}", f"{problem}; expected {form}", field=name) from None
    if not isinstance(value, expected):
        raise InputError(f"reference {i}", f"expected {form}, got JSON {type(value).__name__}", field=name)
    return value


# --------------------------------------------------------------------------- SEAM adapters


def _rouge_geo(mod: Any, pred: str, refs: list[str], _src: list[str] | None) -> MetricResult:
    r = mod.rouge_geo(pred, refs[0])
    return MetricResult(float(r.geo), bool(pred.strip()), r.details())


_MUSIQUE_FORM = 'a JSON object {"is_answerable": bool, "answer_content": str}'


def _musique_target(text: str) -> dict[str, Any]:
    target = _json_ref(text, "musique", 0, dict, _MUSIQUE_FORM)
    if not {"is_answerable", "answer_content"} <= set(target):
        raise InputError("reference 0", f"missing keys; expected {_MUSIQUE_FORM}", field="musique")
    return target


def _musique_f1(mod: Any, pred: str, refs: list[str], _src: list[str] | None) -> MetricResult:
    f1, parsed = mod.upstream_f1(pred, _musique_target(refs[0]))
    return MetricResult(float(f1), bool(parsed), {"parsed_dict": bool(parsed)})


def _musique_corrected(mod: Any, pred: str, refs: list[str], _src: list[str] | None) -> MetricResult:
    s = mod.corrected(pred, _musique_target(refs[0]), tuple(refs[1:]))
    return MetricResult(
        float(s.combined),
        s.pred_answerable is not None,
        {"answer_f1": s.answer_f1, "answer_em": s.answer_em, "pred_answerable": s.pred_answerable,
         "gold_answerable": s.gold_answerable},
    )


def _conll_f1(mod: Any, pred: str, refs: list[str], _src: list[str] | None, mode: str = "upstream") -> MetricResult:
    form = "a JSON list of gold clusters (lists of int mention ids, singletons included)"
    clusters = _json_ref(refs[0], "clusters", 0, list, form)
    if not all(isinstance(c, list) and all(isinstance(m, int) for m in c) for c in clusters):
        raise InputError("reference 0", f"expected {form}", field="clusters")
    run = mod.score_run([("instance", clusters)], [("instance", pred)], mode)
    inst = run.instances[0]
    valid = bool(inst.parsed and inst.parsed.valid)
    return MetricResult(float(run.conll_f1), valid, {"mode": mode, "predicted_clusters": inst.parsed.clusters
                                                      if inst.parsed else []})


def _conll_f1_corrected(mod: Any, pred: str, refs: list[str], src: list[str] | None) -> MetricResult:
    return _conll_f1(mod, pred, refs, src, "corrected")


# --------------------------------------------------------------------------- ZeroSCROLLS adapters


def _zs(fn_name: str, valid: Callable[[Any, str], bool]) -> Adapter:
    def run(mod: Any, pred: str, refs: list[str], _src: list[str] | None) -> MetricResult:
        out = getattr(mod, fn_name)(pred, refs)
        score, details = (out["score"], {k: v for k, v in out.items() if k != "score"}) if isinstance(out, dict) else (out, {})
        return MetricResult(float(score), valid(mod, pred), details)

    return run


def _igcs_token_f1(mod: Any, pred: str, refs: list[str], src: list[str] | None) -> MetricResult:
    form = "a JSON array of source spans (strings)"
    references = []
    for i, text in enumerate(refs):
        spans = _json_ref(text, "spans", i, list, form)
        if not all(isinstance(s, str) for s in spans):
            raise InputError(f"reference {i}", f"expected {form}", field="spans")
        references.append(spans)
    assert src is not None
    s = mod.score_instance(pred, references, mod.SourceIndex(src))
    return MetricResult(s.f1, s.valid_format, s.details())


# --------------------------------------------------------------------------- the table

_ZS = "seam_repro.suites.zeroscrolls"
_TEXT = "a plain string (repeat REFERENCE for several references; the best is kept)"

METRICS: dict[str, MetricSpec] = {
    s.name: s
    for s in (
        MetricSpec("rouge_geo", "seam", "seam_repro.score.rouge", "SEAM summarization: stemmed R1/R2/RL F geometric "
                   "mean x100 (MultiNews, OpenASP)", "the gold summary (exactly one)", _rouge_geo, max_references=1),
        MetricSpec("musique_f1", "seam", "seam_repro.score.musique", "SEAM MuSiQue, upstream parity: SQuAD F1 of "
                   "str(parsed answer) vs str(gold dict)", _MUSIQUE_FORM, _musique_f1, max_references=1),
        MetricSpec("musique_corrected", "seam", "seam_repro.score.musique", "MuSiQue corrected: answer F1 (aliases) "
                   "gated by answerability", f"{_MUSIQUE_FORM}, then answer aliases as plain strings",
                   _musique_corrected),
        MetricSpec("conll_f1", "seam", "seam_repro.score.coref_parse", "SEAM coreference (ECB, SciCo): CoNLL-F1 of "
                   "the parsed clusters, upstream scorer semantics", "a JSON list of gold clusters (exactly one)",
                   _conll_f1, max_references=1),
        MetricSpec("conll_f1_corrected", "seam", "seam_repro.score.coref_parse", "Coreference corrected: CoNLL-F1 "
                   "with mentions matched by id (not by line position)", "a JSON list of gold clusters (exactly one)",
                   _conll_f1_corrected, max_references=1),
        MetricSpec("zeroscrolls_rouge_geo", "zeroscrolls", _ZS, "ZeroSCROLLS summarization: per-type max over "
                   "references, then geometric mean of R1/R2/RL x100", _TEXT,
                   _zs("rouge_geometric_mean", lambda m, p: bool(p.strip()))),
        MetricSpec("zeroscrolls_f1", "zeroscrolls", _ZS, "ZeroSCROLLS QA: unigram F1 after lowercasing, punctuation/"
                   "article removal, ASCII transliteration; max over references", _TEXT,
                   _zs("f1", lambda m, p: bool(p.strip()))),
        MetricSpec("zeroscrolls_accuracy", "zeroscrolls", _ZS, "ZeroSCROLLS QuALITY: first option letter A-D "
                   "equals the gold letter", "text containing the gold letter A-D",
                   _zs("accuracy", lambda m, p: m.first_option_letter(p) is not None)),
        MetricSpec("zeroscrolls_exp_similarity", "zeroscrolls", _ZS, "ZeroSCROLLS SpaceDigest: 2^(-10|p-p^|) on the "
                   "first percentage x100", "the gold percentage, e.g. 40%",
                   _zs("exponential_similarity", lambda m, p: m.first_percentage(p) is not None)),
        MetricSpec("zeroscrolls_concordance_index", "zeroscrolls", _ZS, "ZeroSCROLLS BookSumSort: share of "
                   "correctly ordered summary pairs x100; 0 unless a permutation", "the gold order, e.g. 3, 1, 2",
                   _zs("concordance_index", lambda m, p: bool(m.summary_ids(p)))),
        MetricSpec("igcs_token_f1", "igcs", "seam_repro.suites.igcs", "IGCS content selection: token-level F1 of "
                   "grounded spans over source tokens; max over references (needs --source)",
                   "a JSON array of source spans (strings)", _igcs_token_f1, needs_source=True),
    )
}


def get(name: str) -> MetricSpec:
    try:
        return METRICS[name]
    except KeyError:
        raise InputError("metric", f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}", field="NAME") from None


def compute(name: str, prediction: str, references: Sequence[str], sources: Sequence[str] | None = None) -> dict[str, Any]:
    """Score one prediction with metric ``name``; the dict that ``seam-repro metric`` prints."""
    spec = get(name)
    refs = list(references)
    if not refs:
        raise InputError(name, f"at least one REFERENCE is required: {spec.reference_form}", field="REFERENCE")
    if spec.max_references is not None and len(refs) > spec.max_references:
        raise InputError(name, f"takes {spec.max_references} REFERENCE, got {len(refs)}: {spec.reference_form}",
                         field="REFERENCE")
    if spec.needs_source and not sources:
        raise InputError(name, "needs the source document(s): pass --source FILE (repeat for several)", field="--source")
    if sources and not spec.needs_source:
        raise InputError(name, "does not use --source", field="--source")
    result = spec.adapter(spec.load(), prediction, refs, list(sources) if sources else None)
    return {"metric": name, "suite": spec.suite, "score": result.score, "valid_format": result.valid_format,
            "details": result.details}
