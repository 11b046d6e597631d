"""Every metric of every suite (SEAM, ZeroSCROLLS, IGCS): one table used by ``seam-repro metric``
and by the scoring loop (``seam_repro.scoring.loop``).

Each entry (``MetricSpec``) declares what scoring needs to know about it: the response extraction
of each variant of a run, the per-instance computation (``record_scorer`` from a prompt record,
else the generic ``adapter`` on the record's ``target.references`` and ``target.documents``), the
run aggregation, the gold target's form and the output-form validity check.

A prompt record names its metric; the scoring loop asks the registry which metrics score it
(``record_metrics``) and never branches on a dataset or task.

SEAM's implementations live in ``seam_repro.metrics.*`` and are imported only when used, so the list
always shows them and a module that cannot be imported yields a clear error naming it.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

from seam_repro.errors import InputError, PrerequisiteError
from seam_repro.files.reading import parse_json_text


@dataclass(frozen=True)
class MetricResult:
    score: float | None
    valid_format: bool
    details: dict[str, Any] = field(default_factory=dict)
    version: str | None = None
    """Set by scorers whose version is known only once loaded (the FIC models' pins)."""


Adapter = Callable[[Any, str, list[str], list[str] | None], MetricResult]
"""(implementation module, prediction, references, source documents) -> result."""


@dataclass
class ScoringContext:
    """What per-record scoring may need besides the response: the FIC models, loaded once on first
    use (``get()`` returns the scorer or None, ``reason`` says why not)."""

    fic: Any = None


RecordScorer = Callable[[Any, str, dict[str, Any], ScoringContext], MetricResult]
"""(implementation module, extracted response, prompt record, context) -> result."""


@dataclass(frozen=True)
class TargetShape:
    """The form of a prompt record's gold target that a metric scores."""

    form: str
    """What it must look like, for the error message."""
    ok: Callable[[Any], bool]


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
    extraction: tuple[str, str] = ("clean", "clean")
    """Response extraction for the (upstream, corrected) variant of a run: ``"upstream"`` (upstream
    SEAM's ``get_only_response`` on prompt + continuation) or ``"clean"``
    (``scoring.extract.extract_clean`` on the continuation)."""
    record_scorer: RecordScorer | None = field(default=None, repr=False)
    aggregation: str = "mean"
    """``"mean"`` of the instance scores, or ``"conll_micro"``: the CoNLL scorer's micro-average over
    the run's documents (the instances are scored inside it)."""
    run_extras: Callable[[list[dict[str, Any]]], dict[str, float | None]] | None = field(default=None, repr=False)
    """Extra run-level values from the run's instance details (reported with the corrected variant)."""
    version: Callable[[Any], str] | None = field(default=None, repr=False)
    """Metric version from the loaded module; default ``name/module@seam-repro==VERSION``."""
    target: TargetShape | None = field(default=None, repr=False)
    """The gold target's form in a prompt record; None: ``{"references": [...]}`` (``check_record``)."""
    valid_output: Callable[[str], bool] | None = field(default=None, repr=False)
    """Output-format validity of an extracted response; None: the metric result's ``valid_format``."""

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


def _json_ref(text: str, name: str, i: int, expected: type, form: str,
              item_ok: Callable[[Any], bool] = lambda _: True) -> Any:
    """REFERENCE ``i`` parsed as JSON of type ``expected`` whose every item passes ``item_ok``."""
    try:
        value = parse_json_text(text, f"reference {i}")
    except InputError as exc:
        problem = str(exc).split(": ", 1)[-1]
        raise InputError(f"reference {i}", f"{problem}; expected {form}", field=name) from None
    if not isinstance(value, expected):
        raise InputError(f"reference {i}", f"expected {form}, got JSON {type(value).__name__}", field=name)
    if not all(map(item_ok, value)):
        raise InputError(f"reference {i}", f"expected {form}", field=name)
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
    return _qa_result(mod.corrected(pred, _musique_target(refs[0]), tuple(refs[1:])))


def _qa_result(q: Any) -> MetricResult:
    """A corrected MuSiQue score (``musique.QAScore``) as a metric result."""
    return MetricResult(q.combined, q.pred_answerable is not None,
                        {"answer_f1": q.answer_f1, "answer_em": q.answer_em, "pred_answerable": q.pred_answerable,
                         "gold_answerable": q.gold_answerable})


def _conll_f1(mod: Any, pred: str, refs: list[str], _src: list[str] | None, mode: str = "upstream") -> MetricResult:
    form = "a JSON list of gold clusters (lists of int mention ids, singletons included)"
    clusters = _json_ref(refs[0], "clusters", 0, list, form,
                         lambda c: isinstance(c, list) and all(isinstance(m, int) for m in c))
    run = mod.score_run([("instance", clusters)], [("instance", pred)], mode)
    inst = run.instances[0]
    valid = bool(inst.parsed and inst.parsed.valid)
    return MetricResult(float(run.conll_f1), valid, {"mode": mode, "predicted_clusters": inst.parsed.clusters
                                                      if inst.parsed else []})


def _fic_f1(mod: Any, pred: str, refs: list[str], _src: list[str] | None) -> MetricResult:
    alignments = _json_ref(refs[1], "review_side_alignments", 1, list, "a JSON list of review-side spans")
    res = mod.FicScorer.from_pins().score(pred, {"highlights_concat": refs[0], "review_side_alignments": alignments})
    return MetricResult(res.f1, bool(pred.strip()), res.details())


# --------------------------------------------------------------------------- SEAM record scorers


def _rouge_record(mod: Any, resp: str, rec: dict[str, Any], _ctx: ScoringContext) -> MetricResult:
    return _rouge_geo(mod, resp, [rec["target"]], None)


def _musique_f1_record(mod: Any, resp: str, rec: dict[str, Any], _ctx: ScoringContext) -> MetricResult:
    f1, details = mod.upstream_score(resp, rec["target"])
    return MetricResult(f1, bool(details["parsed_dict"]), details)


def _musique_corrected_record(mod: Any, resp: str, rec: dict[str, Any], _ctx: ScoringContext) -> MetricResult:
    return _qa_result(mod.corrected(resp, rec["target"], rec.get("answer_aliases") or ()))


def _musique_extras(details: list[dict[str, Any]]) -> dict[str, float | None]:
    """Answer F1/EM over gold-answerable instances, answerability accuracy and F1 (0-100)."""
    from seam_repro.metrics.musique import answerability_f1

    def mean(values: list[float]) -> float | None:
        return sum(values) / len(values) if values else None

    answerable = [d for d in details if d["gold_answerable"]]
    return {"answer_f1": mean([d["answer_f1"] for d in answerable]),
            "answer_em": mean([d["answer_em"] for d in answerable]),
            "answerability_accuracy": 100.0 * sum(d["pred_answerable"] is not None
                                                  and d["pred_answerable"] == d["gold_answerable"]
                                                  for d in details) / len(details),
            "answerability_f1": answerability_f1([(d["gold_answerable"], d["pred_answerable"]) for d in details])}


def _fic_record(mod: Any, resp: str, rec: dict[str, Any], ctx: ScoringContext) -> MetricResult:
    scorer = ctx.fic.get() if ctx.fic is not None else None
    if scorer is None:
        reason = getattr(ctx.fic, "reason", None) or "FIC scoring disabled"
        return MetricResult(None, bool(resp.strip()), {"reason": reason}, "fic_f1/unavailable")
    res = scorer.score(resp, rec["target"])
    return MetricResult(res.f1, bool(resp.strip()), res.details(), scorer.version())


# --------------------------------------------------------------------------- ZeroSCROLLS adapters


def _zs(fn_name: str, valid: Callable[[Any, str], bool]) -> Adapter:
    def run(mod: Any, pred: str, refs: list[str], _src: list[str] | None) -> MetricResult:
        out = getattr(mod, fn_name)(pred, refs)
        score, details = (out["score"], {k: v for k, v in out.items() if k != "score"}) if isinstance(out, dict) else (out, {})
        return MetricResult(float(score), valid(mod, pred), details)

    return run


def _igcs_token_f1(mod: Any, pred: str, refs: list[str], src: list[str] | None) -> MetricResult:
    form = "a JSON array of source spans (strings)"
    references = [_json_ref(text, "spans", i, list, form, lambda s: isinstance(s, str)) for i, text in enumerate(refs)]
    assert src is not None
    s = mod.score_instance(pred, references, mod.SourceIndex(src))
    return MetricResult(s.f1, s.valid_format, s.details())


# --------------------------------------------------------------------------- SEAM target and output forms

_SUMMARY = TargetShape("a summary string", lambda t: isinstance(t, str))
_ANSWER = TargetShape('{"is_answerable": bool, "answer_content": str}',
                      lambda t: isinstance(t, dict) and isinstance(t.get("is_answerable"), bool)
                      and isinstance(t.get("answer_content"), str))
_CLUSTERS = TargetShape("a list of clusters (lists of int mention ids)",
                        lambda t: isinstance(t, list) and all(isinstance(c, list) for c in t))
_FUSION = TargetShape('{"highlights_concat": str, "review_side_alignments": [str, ...]}',
                      lambda t: isinstance(t, dict) and isinstance(t.get("highlights_concat"), str)
                      and isinstance(t.get("review_side_alignments"), list))


def _output_form(form: str) -> Callable[[str], bool]:
    """``metrics.validity.is_valid`` for one output form (imported when first used)."""
    def valid(response: str) -> bool:
        from seam_repro.metrics.validity import is_valid

        return is_valid(form, response)

    return valid


# --------------------------------------------------------------------------- the table

_ZS = "seam_repro.metrics.zeroscrolls"
_SEAM_EXTRACTION = ("upstream", "clean")
_TEXT = "a plain string (repeat REFERENCE for several references; the best is kept)"

METRICS: dict[str, MetricSpec] = {
    s.name: s
    for s in (
        MetricSpec("rouge_geo", "seam", "seam_repro.metrics.rouge", "SEAM summarization: stemmed R1/R2/RL F geometric "
                   "mean x100 (MultiNews, OpenASP)", "the gold summary (exactly one)", _rouge_geo, max_references=1,
                   extraction=_SEAM_EXTRACTION, record_scorer=_rouge_record, version=lambda m: m.version(),
                   target=_SUMMARY, valid_output=_output_form("summarization")),
        MetricSpec("musique_f1", "seam", "seam_repro.metrics.musique", "SEAM MuSiQue, upstream parity: SQuAD F1 of "
                   "str(parsed answer) vs str(gold dict)", _MUSIQUE_FORM, _musique_f1, max_references=1,
                   extraction=_SEAM_EXTRACTION, record_scorer=_musique_f1_record,
                   version=lambda m: m.version("upstream"), target=_ANSWER, valid_output=_output_form("qa")),
        MetricSpec("musique_corrected", "seam", "seam_repro.metrics.musique", "MuSiQue corrected: answer F1 (aliases) "
                   "gated by answerability", f"{_MUSIQUE_FORM}, then answer aliases as plain strings",
                   _musique_corrected, extraction=_SEAM_EXTRACTION, record_scorer=_musique_corrected_record,
                   run_extras=_musique_extras, version=lambda m: m.version("corrected"), target=_ANSWER,
                   valid_output=_output_form("qa")),
        MetricSpec("conll_f1", "seam", "seam_repro.metrics.coref_parse", "SEAM coreference (ECB, SciCo): CoNLL-F1 of "
                   "the parsed clusters, upstream scorer semantics", "a JSON list of gold clusters (exactly one)",
                   _conll_f1, max_references=1, extraction=_SEAM_EXTRACTION, aggregation="conll_micro",
                   target=_CLUSTERS, valid_output=_output_form("coreference")),
        MetricSpec("conll_f1_corrected", "seam", "seam_repro.metrics.coref_parse", "Coreference corrected: CoNLL-F1 "
                   "with mentions matched by id (not by line position)", "a JSON list of gold clusters (exactly one)",
                   partial(_conll_f1, mode="corrected"), max_references=1, extraction=_SEAM_EXTRACTION,
                   aggregation="conll_micro", target=_CLUSTERS, valid_output=_output_form("coreference")),
        MetricSpec("fic_f1", "seam", "seam_repro.metrics.fic", "SEAM FuseReviews: harmonic mean of flan-t5-xxl "
                   "faithfulness and the coverage model (needs the pinned models)",
                   "the concatenated highlights, then a JSON list of review-side alignments", _fic_f1,
                   max_references=2, extraction=_SEAM_EXTRACTION, record_scorer=_fic_record,
                   version=lambda m: "fic_f1", target=_FUSION, valid_output=_output_form("fic")),
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
        MetricSpec("igcs_token_f1", "igcs", "seam_repro.metrics.igcs", "IGCS content selection: token-level F1 of "
                   "grounded spans over source tokens; max over references (needs --source)",
                   "a JSON array of source spans (strings)", _igcs_token_f1, needs_source=True),
    )
}


def score_record(name: str, response: str, record: dict[str, Any], ctx: ScoringContext) -> tuple[MetricResult, str]:
    """One instance of a prompt record scored with metric ``name``: (result, metric version)."""
    from seam_repro import __version__

    spec = get(name)
    mod = spec.load()
    target = record["target"]
    if spec.record_scorer is not None:
        result = spec.record_scorer(mod, response, record, ctx)
    elif spec.needs_source:  # the generic adapter: span lists as JSON arrays, plus the sources
        result = spec.adapter(mod, response, [json.dumps(s, ensure_ascii=False) for s in target["references"]],
                              list(target["documents"]))
    else:
        result = spec.adapter(mod, response, [str(r) for r in target["references"]], None)
    return result, result.version or metric_version(spec, mod, __version__)


def metric_version(spec: MetricSpec, mod: Any, kit_version: str) -> str:
    """The version string of an instance's metric (before the ``/extract=...`` suffix)."""
    if spec.version is None:
        return f"{spec.name}/{spec.module}@seam-repro=={kit_version}"
    return spec.version(mod)


def record_metrics(rec: dict[str, Any]) -> dict[str, str]:
    """The (upstream, corrected) metrics that score a prompt record. A record names the metric of
    the profile it was rendered under; its pair is the suite dataset's (``upstream``,
    ``seam-repro-1``) metrics of the same task that include it, so an upstream run's corrected
    variant is scored with the corrected metric (MuSiQue: ``musique_corrected``) and a
    ``seam-repro-1`` run's upstream variant with the published one. A metric no suite pairs scores
    both variants. A record that names none (written before records named their metric) takes its
    task's pair from the paper's suite, ``data/suites/seam.json``."""
    metric = rec.get("metric")
    paired = _suite_pairs("seam" if metric is None else None).get((rec.get("task"), metric))
    return dict(paired) if paired is not None else {"upstream": metric, "corrected": metric}


@lru_cache(maxsize=2)
def _suite_pairs(only: str | None) -> dict[tuple[str, str | None], dict[str, str]]:
    """(task, metric) -> the (upstream, corrected) pair of every suite dataset scored by that metric;
    ``(task, None)`` -> the first pair of the task in suite ``only``. The shipped suites are read
    first and their pairs stand: a suite of one's own in ``$SEAM_REPRO_SUITES`` adds pairs but cannot
    re-pair a shipped metric (which would change how the paper's records are scored). Where two
    datasets of one's own suites pair a metric differently, the metric is left unpaired."""
    from seam_repro.specs import load_suite, shipped_suites, suite_names

    shipped = shipped_suites()
    names = [only] if only else [*shipped, *(n for n in suite_names() if n not in shipped)]
    out: dict[tuple[str, str | None], dict[str, str]] = {}
    settled: set[tuple[str, str | None]] = set()
    clashes: set[tuple[str, str | None]] = set()
    for name in names:
        try:
            suite = load_suite(name)
        except InputError:  # a JSON file beside the suites that is not one (its own command says so)
            continue
        for spec in suite.datasets.values():
            pair = {"upstream": spec.metrics["upstream"], "corrected": spec.metrics["seam-repro-1"]}
            out.setdefault((spec.task, None), pair)
            for metric in pair.values():
                if out.setdefault((spec.task, metric), pair) != pair and (spec.task, metric) not in settled:
                    clashes.add((spec.task, metric))
        if name in shipped:
            settled = set(out) - clashes
    for key in clashes - settled:
        del out[key]
    return out


def check_record(path: object, where: str, rec: dict[str, Any]) -> None:
    """A prompt record's metrics are known and its gold target has the form each scores: the
    metric's ``target`` shape, else ``{"references": [...]}`` (plus the source documents for
    metrics that ground in them)."""
    for metric in dict.fromkeys(record_metrics(rec).values()):
        if not isinstance(metric, str) or metric not in METRICS:
            raise InputError(path, f"task '{rec['task']}' is scored by the record's metric; expected one of "
                             f"{', '.join(sorted(METRICS))}, got {metric!r}", record=where, field="metric")
        _check_target(path, where, METRICS[metric], rec.get("target"))


def _check_target(path: object, where: str, spec: MetricSpec, target: Any) -> None:
    if spec.target is not None:
        if not spec.target.ok(target):
            raise InputError(path, f"expected {spec.target.form}", record=where, field="target")
        return
    refs = target.get("references") if isinstance(target, dict) else None
    if not isinstance(refs, list) or not refs:
        raise InputError(path, 'expected {"references": [...]} with at least one reference', record=where,
                         field="target")
    if spec.needs_source:
        docs = target.get("documents")
        if not isinstance(docs, list) or not docs or not all(isinstance(d, str) for d in docs):
            raise InputError(path, f"metric {spec.name} grounds in the sources; expected target.documents as a "
                             "non-empty list of strings", record=where, field="target")
    if "doc_index" in target and spec.name != DOC_LEVEL_METRIC:
        raise InputError(path, f"document units are scored with {DOC_LEVEL_METRIC}, not {spec.name}", record=where,
                         field="metric")


DOC_LEVEL_METRIC = "igcs_token_f1"
"""The metric of document-level units (IGCS §5.3): one prompt per document, one score per instance."""


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
