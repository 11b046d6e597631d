"""Score a run directory: predictions + prompt records -> per-instance scores and per-run summaries.

Replaces upstream SEAM ``scripts/evaluate_dataset.py`` + ``evaluation_classes/*`` and the per-run
means of ``scripts/evaluation/statistical_analysis.py``. Formats: docs/ARCHITECTURE.md ("Scores");
every score is on the 0-100 scale. Two variants are always computed and written side by side:

* ``upstream``: upstream's extraction (``extract.extract_upstream`` on prompt + continuation) and
  metrics (ROUGE geo, str-dict MuSiQue F1, CoNLL-F1 with the scorer's line-position matching, FIC F1);
* ``corrected``: clean extraction of the continuation (``extract.extract_clean``), MuSiQue scored on
  answer + aliases and answerability, coreference matched by mention id.

The profile names which is the score. Coreference has a third: upstream *as published* (perl read
only the part of the unflushed gold file CPython had written, ``metrics.unflushed``; the ``upstream``
profile's score, since it produced the paper's numbers) and *as intended* (the whole gold file).

One loop scores every suite, with no branch on a dataset or task: each record's metrics come from
the registry (``metrics.registry.record_metrics``), and each metric says its gold target, its
extraction, its output validity, its instance score and its run aggregation (mean, or CoNLL micro).

Model output is untrusted: undecodable bytes, lone surrogates, empty or absurd text are format
failures (``valid_format: false``) and still get a score, never a crash.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from seam_repro import __version__
from seam_repro.config import PROFILES
from seam_repro.errors import InputError, PredictionsError, PrerequisiteError, SeamReproError
from seam_repro.files.guard import guard_outputs
from seam_repro.hashing import digest_of_hashes
from seam_repro.metrics import registry
from seam_repro.metrics.registry import ScoringContext
from seam_repro.metrics.unflushed import DEFAULT_BLOCK_SIZE
from seam_repro.run.progress import close_bar, progress_bar
from seam_repro.run.store import (
    Coverage,
    Key,
    RunRecords,
    ScoresWriter,
    check_run_prompts,
    model_dirs,
    model_run_file,
    prediction_files,
    predictions_root,
    prompts_path,
    read_lines,
    read_prediction_file,
    read_prompts,
    require_run_json,
    run_json_path,
    run_manifest_path,
    scores_root,
)
from seam_repro.scoring.extract import cap_output, extract, extract_clean


# --- reading (through run/store.py, the run folder's one reader) ------------------------------------
def load_prompts(path: Path) -> dict[Key, dict[str, Any]]:
    """Prompt records keyed by (dataset, run, instance_id), in file order, hashes re-checked and each
    target checked as its metric expects (``seam-repro view`` reads them so)."""
    return dict(read_prompts(path, registry.check_record))


def _clean_text(text: str, decodable: bool) -> tuple[str, bool]:
    """Replace lone surrogates (valid JSON escapes, invalid Unicode) so every later step can encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8"), False
    return text, decodable


def _read_predictions(path: Path, hashes: Mapping[Key, str], model: dict[str, Any] | None,
                      ) -> tuple[dict[Key, dict[str, Any]], dict[str, Any] | None]:
    """One predictions file (``store.read_prediction_file``), its texts made encodable for scoring;
    returns them and the model."""
    found = read_prediction_file(path, hashes, model=model)
    for key, rec in found.records.items():
        rec["output"], rec["_decodable"] = _clean_text(rec["output"], key not in found.undecodable)
        if "upstream_prompt_text" in rec:
            rec["upstream_prompt_text"] = _clean_text(rec["upstream_prompt_text"], True)[0]
    return found.records, found.model


def _check_complete(model_dir: Path, model: dict[str, Any] | None) -> dict[str, Any]:
    """The model of the predictions read; none at all is an error. A missing instance (an interrupted
    replay, a torn last line) is not: it is listed as unscored (``store.Coverage``), the summary partial."""
    if model is None:
        raise PredictionsError(f"{model_dir}: no predictions found (expected <dataset>/run_<k>.jsonl files)")
    return model


def load_predictions(model_dir: Path, prompts: dict[Key, dict[str, Any]]) -> tuple[dict[Key, dict[str, Any]], dict[str, Any]]:
    """All predictions of one model directory, checked against the prompts; returns them and the
    model's ``{"id", "revision"}``. Instances without a prediction are left out (see ``_check_complete``)."""
    hashes = {k: r["prompt_sha256"] for k, r in prompts.items()}
    preds: dict[Key, dict[str, Any]] = {}
    model: dict[str, Any] | None = None
    for path in prediction_files(model_dir):
        got, model = _read_predictions(path, hashes, model)
        preds.update(got)
    return preds, _check_complete(model_dir, model)


# --- scoring ---------------------------------------------------------------------------------------
class _Fic:
    """Loads the FIC models once, on first use (the pinned ones unless a factory is given);
    remembers why they are unavailable."""

    def __init__(self, enabled: bool, factory: Callable[[], Any] | None, download: bool = False):
        self.factory, self.download = factory, download
        self.scorer: Any = None
        self.reason: str | None = None if enabled else "FIC scoring disabled (--no-fic)"

    def get(self) -> Any:
        if self.scorer is None and self.reason is None:
            try:
                if self.factory is None:
                    from seam_repro.metrics.fic import FicScorer

                    self.factory = partial(FicScorer.from_pins, allow_download=self.download)
                self.scorer = self.factory()
            except SeamReproError as exc:
                self.reason = str(exc)
        return self.scorer


VARIANTS: tuple[str, ...] = ("upstream", "corrected")
"""The two scorings of every instance (module docstring); the profile's is its score (``primary_variant``)."""
EXTRACTION_LABEL = {"upstream": "upstream-port", "clean": "clean"}


def _extract(how: str, rec: dict[str, Any], pred: dict[str, Any], model: dict[str, Any]) -> str:
    """The response extraction ``how`` (``upstream`` or ``clean``) gives for one prediction."""
    return extract(how, prompt=rec["prompt"], output=pred["output"], model_id=str(model["id"]),
                   upstream_prompt_text=pred.get("upstream_prompt_text"))


def primary_variant(profile: str) -> str:
    """The variant a profile reports as its score: as published under ``upstream``, else as intended."""
    return "upstream" if profile == "upstream" else "corrected"


def _capped(pred: dict[str, Any], rec: dict[str, Any], details: dict[str, Any]) -> dict[str, Any]:
    """``pred`` with its output (and recorded prompt text) cut to what is scored (``cap_output``);
    the cut is recorded in the instance line's ``details``."""
    capped: dict[str, str] = {}
    for name in ("output", "upstream_prompt_text"):
        if isinstance(pred.get(name), str):
            text, cut = cap_output(pred[name], rec["prompt"])
            if cut is not None:
                capped[name] = text
                details[f"{name}_capped"] = cut
    return {**pred, **capped} if capped else pred  # copied only where something was cut


def _new_line(key: Key, profile: str, pred: dict[str, Any], decodable: bool) -> dict[str, Any]:
    line: dict[str, Any] = {"dataset": key[0], "run": key[1], "instance_id": key[2], "metric": None, "score": None,
                            "valid_format": False, "metric_version": None, "details": {"profile": profile}}
    if not decodable:
        line["details"]["undecodable_output"] = True
    if pred.get("truncated"):
        line["details"]["prompt_truncated"] = True
    # upstream extracted from the decoded (possibly truncated) prompt + continuation; without the
    # recorded text (chat prompt path, other backends) the full prompt stands in for it
    if pred.get("upstream_prompt_text") is not None:
        line["details"]["upstream_text"] = "recorded prompt text"
    elif pred.get("truncated"):
        line["details"]["upstream_text"] = "full prompt (truncated prompt text not recorded)"
    return line


def _score_instance(key: Key, rec: dict[str, Any], pred: dict[str, Any], model: dict[str, Any], profile: str,
                    ctx: ScoringContext) -> dict[str, Any]:
    """One instance line: each variant's metric on the response its extraction gives; run-level
    metrics (``aggregation != "mean"``) only get their responses here and are scored per run."""
    primary = primary_variant(profile)
    decodable = bool(pred.get("_decodable", True))
    line = _new_line(key, profile, pred, decodable)
    pred = _capped(pred, rec, line["details"])
    names = registry.record_metrics(rec)
    responses: dict[str, str] = {}
    valid = None
    done: dict[tuple[str, str], tuple[registry.MetricResult, str]] = {}
    for i, variant in enumerate(VARIANTS):
        spec = registry.get(names[variant])
        how = spec.extraction[i]
        responses[variant] = _extract(how, rec, pred, model)
        if spec.aggregation != "mean":
            if variant == primary:
                line["metric"] = spec.name
            continue
        if (spec.name, how) not in done:  # a suite metric is the same under both variants: score once
            try:
                done[(spec.name, how)] = registry.score_record(spec.name, responses[variant], rec, ctx)
            except PrerequisiteError as exc:
                done[(spec.name, how)] = (registry.MetricResult(None, False, {"reason": str(exc)}),
                                          f"{spec.name}/unavailable")
            except InputError as exc:
                raise InputError("prompts.jsonl", f"gold target cannot be scored ({exc})", record=f"{key}",
                                 field="target") from None
        result, version = done[(spec.name, how)]
        entry = {"metric": spec.name, "score": result.score,
                 "metric_version": f"{version}/extract={EXTRACTION_LABEL[how]}", **result.details}
        line["details"][variant] = entry
        if variant == primary:
            line.update(metric=spec.name, score=result.score, metric_version=entry["metric_version"])
            line["details"].update(result.details)
            valid = result.valid_format
    check = registry.get(names[primary]).valid_output
    line["valid_format"] = decodable and (check(responses[primary]) if check is not None else bool(valid)) \
        and "output_capped" not in line["details"]  # cut short: its format is not the model's
    line["_resp"] = responses
    return line


def _score_units(parent: Key, units: list[tuple[dict[str, Any], dict[str, Any]]], profile: str) -> dict[str, Any]:
    """One document-level instance (IGCS §5.3): concatenate every unit's spans in document order,
    ground each hinted to its document, score once. An instance with a document never prompted
    (``--limit``, a subsample cap) gets no score, with the reason, rather than a recall-deflated one."""
    metric = registry.DOC_LEVEL_METRIC
    version = registry.metric_version(registry.get(metric), None, __version__) + "/extract=clean"
    line = _new_line(parent, profile, {}, True)
    line.update(metric=metric, metric_version=version)
    target = units[0][0]["target"]
    n_docs = len(target["documents"])
    seen = sorted(u[0]["target"]["doc_index"] for u in units)
    details: dict[str, Any]
    if seen != list(range(n_docs)):
        missing = sorted(set(range(n_docs)) - set(seen))
        details, score = {"reason": f"document-level instance incomplete: documents {missing} of {n_docs} have no "
                                    "prediction (run without --limit and with max_num_samples -1)",
                          "documents_predicted": seen}, None
        line["valid_format"] = all(bool(p.get("_decodable", True)) for _, p in units)
    else:
        try:
            from seam_repro.metrics import igcs

            spans: list[tuple[str, int]] = []
            valid: list[bool] = []
            for rec, pred in sorted(units, key=lambda u: u[0]["target"]["doc_index"]):
                parsed = igcs.parse_answer(extract_clean(_capped(pred, rec, line["details"])["output"]))
                spans += [(s, rec["target"]["doc_index"]) for s in parsed.spans]
                valid.append(parsed.valid and bool(pred.get("_decodable", True)))
            result = igcs.score_instance(spans, target["references"], igcs.SourceIndex(target["documents"]))  # type: ignore[arg-type]
            details, score = {**result.details(), "inference": "document", "units_valid": valid}, result.f1
            line["valid_format"] = all(valid)
        except PrerequisiteError as exc:
            details, score = {"reason": str(exc)}, None
    entry = {"metric": metric, "score": score, "metric_version": version}
    line["score"] = score
    line["details"].update({**details, "upstream": entry, "corrected": entry})
    return line


class ModelScorer:
    """Scores one model's predictions one (dataset, run) at a time, so that only one run's prompts,
    predictions and instance lines are held at once; what the summary needs of each run is kept
    (its aggregates) and :meth:`datasets` assembles the ``datasets`` block of summary.json."""

    def __init__(self, model: dict[str, Any], profile: str, fic: _Fic, gold_block_size: int = DEFAULT_BLOCK_SIZE):
        self.model, self.profile, self.gold_block_size = model, profile, gold_block_size
        self.primary = primary_variant(profile)
        self.ctx = ScoringContext(fic=fic)
        self.tasks: dict[str, str] = {}
        self.first: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, dict[int, tuple[dict[str, Any], dict[str, Any]]]] = {}

    def score_group(self, items: Iterable[tuple[Key, dict[str, Any], dict[str, Any]]]) -> list[dict[str, Any]]:
        """Instance lines of one (dataset, run), given its (key, prompt record, prediction) triples in
        prompt order; each line keeps the responses its extractions gave under ``_resp``."""
        slots: dict[Key, dict[str, Any] | None] = {}  # prompt order; None: document-level
        grouped: dict[Key, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
        recs: dict[Key, dict[str, Any]] = {}
        for key, rec, pred in items:
            task = rec["task"]
            if self.tasks.setdefault(key[0], task) != task:
                raise InputError("prompts.jsonl", f"dataset {key[0]} has records of tasks '{self.tasks[key[0]]}' "
                                 f"and '{task}'", record=f"{key}", field="task")
            self.first.setdefault(key[0], rec)
            recs[key] = rec
            target = rec.get("target")
            if isinstance(target, dict) and "doc_index" in target:  # a document unit of a document-level instance
                parent = (key[0], key[1], str(target.get("parent", key[2])))
                slots.setdefault(parent, None)
                grouped.setdefault(parent, []).append((rec, pred))
                continue
            slots[key] = _score_instance(key, rec, pred, self.model, self.profile, self.ctx)
        lines = [_score_units(k, grouped[k], self.profile) if ln is None else ln for k, ln in slots.items()]
        if lines:
            ds, run = lines[0]["dataset"], lines[0]["run"]
            if run in self.runs.get(ds, {}):
                raise InputError("prompts.jsonl", f"dataset {ds} run {run} scored twice",
                                 record=f"{next(iter(slots))}")
            self.runs.setdefault(ds, {})[run] = self._summarise_run(ds, run, lines, recs)
        return lines

    def _summarise_run(self, ds: str, run: int, lines: list[dict[str, Any]], recs: dict[Key, dict[str, Any]],
                       ) -> tuple[dict[str, Any], dict[str, Any]]:
        """This run's entries of the dataset's summary block and of its ``corrected`` block: each
        variant's metric aggregated as the registry says, format rate and count."""
        specs = self._specs(ds)
        k = str(run)
        out: dict[str, Any] = {"runs": {}, "format_rate": {k: sum(ln["valid_format"] for ln in lines) / len(lines)},
                               "n_instances": {k: len(lines)}}
        corrected: dict[str, Any] = {"runs": {}}
        aggregate = AGGREGATIONS[specs[self.primary].aggregation]
        aggregate(ds, run, lines, recs, self.primary, self.gold_block_size, out, corrected)
        if specs["corrected"].run_extras is not None:
            corrected["extra"] = {name: {k: extra} for name, extra in
                                  specs["corrected"].run_extras([ln["details"]["corrected"] for ln in lines]).items()}
        return out, corrected

    def _specs(self, ds: str) -> dict[str, registry.MetricSpec]:
        names = registry.record_metrics(self.first[ds])
        return {v: registry.get(names[v]) for v in VARIANTS}

    def datasets(self) -> dict[str, Any]:
        """The ``datasets`` block of summary.json: runs in order, datasets in the order first scored."""
        blocks: dict[str, Any] = {}
        for ds, runs in self.runs.items():
            specs = self._specs(ds)
            out: dict[str, Any] = {"task": self.tasks[ds], "runs": {}, "format_rate": {}, "n_instances": {},
                                   "metric": specs[self.primary].name}
            corrected: dict[str, Any] = {"metric": specs["corrected"].name, "runs": {}}
            for run in sorted(runs):
                _merge(out, runs[run][0])
                _merge(corrected, runs[run][1])
            corrected["extraction"] = "clean"
            out["corrected"] = corrected
            out["extraction"] = EXTRACTION_LABEL[specs[self.primary].extraction[VARIANTS.index(self.primary)]]
            blocks[ds] = out
        return blocks


def _merge(into: dict[str, Any], part: dict[str, Any]) -> None:
    """Merge one run's summary entries (nested dicts keyed by run) into the dataset's block."""
    for key, value in part.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _coref_runs(ds: str, run: int, lines: list[dict[str, Any]], prompts: dict[Key, dict[str, Any]],
                primary_variant: str, gold_block_size: int, out: dict[str, Any], corrected: dict[str, Any]) -> None:
    """One run of a coreference dataset, scored three ways: upstream as published (the gold file
    perl could read, ``metrics.unflushed``), upstream as intended (the whole gold file) and corrected
    (mentions matched by id). Upstream values are what SEAM read from perl's printed output."""
    from seam_repro.metrics.coref_parse import score_run  # not at import: only coreference runs need it

    k = str(run)
    gold = [(ln["instance_id"], prompts[(ds, run, ln["instance_id"])]["target"]) for ln in lines]
    # (variant, scorer mode, gold block size, metric version: the as-published block size is part of it)
    up = "conll_f1/coref-port/mode=upstream/perl-printed/gold="
    variants = (("upstream", "upstream", gold_block_size, f"{up}as-published@block={gold_block_size}"),
                ("upstream_intended", "upstream", None, f"{up}as-intended"),
                ("corrected", "corrected", None, "conll_f1/coref-port/mode=corrected"))
    for variant, mode, block, version in variants:
        result = score_run(gold, [(ln["instance_id"], ln["_resp"][variant.split("_")[0]]) for ln in lines], mode,
                           gold_block_size=block)
        value = result.conll_f1 if mode == "corrected" else result.conll_f1_printed
        if variant == "corrected":
            corrected["runs"][k] = value
        elif variant == "upstream_intended":
            out.setdefault("intended", {"metric": "conll_f1", "gold": "as-intended", "runs": {}})["runs"][k] = value
        else:
            out.setdefault("gold_read", {})[k] = {
                "bytes": result.gold_bytes_read, "of_bytes": result.gold_bytes_total,
                "documents": result.gold_documents_read, "of_documents": len(gold), "block_size": block}
        if variant == primary_variant:
            out["runs"][k] = value
        name = "conll_f1_corrected" if mode == "corrected" else "conll_f1"
        for i, ln in enumerate(lines):
            inst = result.instances[i].conll_f1 if result.instances[i].scored else None
            entry: dict[str, Any] = {"metric": name, "score": inst, "metric_version": version}
            if variant == "upstream":
                entry["gold_read"] = result.instances[i].gold_read
            ln["details"][variant] = entry
            if variant == primary_variant:
                ln["score"], ln["metric_version"] = inst, version


def _mean_runs(ds: str, run: int, lines: list[dict[str, Any]], prompts: dict[Key, dict[str, Any]],
               primary_variant: str, gold_block_size: int, out: dict[str, Any], corrected: dict[str, Any]) -> None:
    """One run of a dataset whose metric averages instance scores (null scores left out, with the
    first reason recorded)."""
    k = str(run)
    for variant in VARIANTS:
        kept = [ln["details"][variant]["score"] for ln in lines if ln["details"][variant]["score"] is not None]
        value = sum(kept) / len(kept) if kept else None
        if variant == primary_variant:
            out["runs"][k] = value
        if variant == "corrected":
            corrected["runs"][k] = value
    reasons = {ln["details"].get("reason") for ln in lines if ln["score"] is None} - {None}
    if reasons:
        out["reason"] = sorted(reasons)[0]


AGGREGATIONS: dict[str, Callable[..., None]] = {"mean": _mean_runs, "conll_micro": _coref_runs}
"""Run-level aggregation named by a metric's registry entry (``MetricSpec.aggregation``)."""


# names and hashes of a manifest run entry (an instance entry), left out of samples.jsonl's factors
RUN_FACTORS_SKIPPED = frozenset({"dataset", "run", "instances", "prompt_digest", "split"})
INSTANCE_FACTORS_SKIPPED = frozenset({"id", "prompt_sha256", "target_sha256"})


def _sample(line: dict[str, Any], recs: dict[Key, dict[str, Any]], preds: dict[Key, dict[str, Any]],
            factors: dict[str, Any], expected: Mapping[Key, dict[str, Any]]) -> dict[str, Any]:
    """One line of ``samples.jsonl``: what a user joins by hand over predictions/, prompts.jsonl
    and instance_scores.jsonl. A document-level instance (IGCS) lists its units' prompts and outputs."""
    key = (line["dataset"], line["run"], line["instance_id"])
    out: dict[str, Any] = {"dataset": key[0], "run": key[1], "instance_id": key[2]}
    own = {k: v for k, v in expected.get(key, {}).items() if k not in INSTANCE_FACTORS_SKIPPED}
    if key in recs:
        out.update(prompt_sha256=recs[key]["prompt_sha256"], factors={**factors, **own},
                   prediction=preds[key]["output"], parsed=line["_resp"], gold=recs[key].get("target"))
    else:
        units = [k for k, r in recs.items() if isinstance(r.get("target"), dict)
                 and str(r["target"].get("parent", k[2])) == key[2] and "doc_index" in r["target"]]
        out.update(factors=factors, units=[{"instance_id": k[2], "prompt_sha256": recs[k]["prompt_sha256"],
                                            "prediction": preds[k]["output"]} for k in units],
                   gold=recs[units[0]]["target"].get("references") if units else None)
    variants = {v: line["details"][v]["score"] for v in ("upstream", "upstream_intended", "corrected")
                if isinstance(line["details"].get(v), dict)}
    out.update(metric=line["metric"], score=line["score"], scores=variants, valid_format=line["valid_format"])
    return out


def _prompt_groups(path: Path, sizes: dict[tuple[str, int], int], hashes: Mapping[Key, str],
                   ) -> Iterator[list[tuple[Key, dict[str, Any]]]]:
    """Prompt records (checked already) a whole (dataset, run) at a time, each group as soon as its
    last record is read: one group held at a time when the file lists runs one after another."""
    pending: dict[tuple[str, int], list[tuple[Key, dict[str, Any]]]] = {}
    for lineno, rec, _ in read_lines(path):
        key = (rec.get("dataset"), rec.get("run"), rec.get("instance_id"))
        if hashes.get(key) != rec.get("prompt_sha256"):  # type: ignore[arg-type]
            raise InputError(path, "changed while it was being scored; run `seam-repro score` again",
                             record=f"line {lineno}")
        group = pending.setdefault(key[:2], [])  # type: ignore[arg-type]
        group.append((key, rec))  # type: ignore[arg-type]
        if len(group) == sizes[key[:2]]:  # type: ignore[index]
            yield pending.pop(key[:2])  # type: ignore[arg-type]


def score_run_dir(run_dir: Path, out_dir: Path | None = None, profile: str | None = None, *, fic: bool = True,
                  fic_factory: Callable[[], Any] | None = None, fic_download: bool = False,
                  gold_block_size: int = DEFAULT_BLOCK_SIZE, progress: bool = False,
                  run: RunRecords | None = None) -> list[Path]:
    """Score every model under ``RUN_DIR/predictions``; returns the summary.json paths written.
    ``gold_block_size``: file system block size for the as-published coreference score. ``run``: the
    run folder's manifest copy and run.json if the caller has read them (``read_run_records``).

    Streams: prompts.jsonl is read twice (checked and indexed, then one (dataset, run) at a time
    beside that run's predictions file), so memory holds one run's records, not the run folder's."""
    run_dir = Path(run_dir)
    run_json: dict[str, Any] = (run.run_json if run is not None and run.run_json is not None
                                else require_run_json(run_dir))
    out_root = Path(out_dir) if out_dir is not None else scores_root(run_dir)
    # Scores may go anywhere but over what is being scored.
    guard_outputs([("--out", out_root)], inputs=[run_dir, run_json_path(run_dir), prompts_path(run_dir),
                                                 run_manifest_path(run_dir)],
                  read_dirs=[predictions_root(run_dir)], writes=[d.name for d in model_dirs(run_dir)])
    profile = profile or run_json.get("profile") or "upstream"
    if profile not in PROFILES:
        raise InputError("--profile", f"unknown profile '{profile}'; expected one of {', '.join(PROFILES)}")
    hashes: dict[Key, str] = {}
    sizes: dict[tuple[str, int], int] = {}

    def indexed() -> Iterator[tuple[Key, dict[str, Any]]]:
        for key, rec in read_prompts(prompts_path(run_dir), registry.check_record):
            hashes[key] = rec["prompt_sha256"]
            sizes[key[:2]] = sizes.get(key[:2], 0) + 1  # type: ignore[index]
            yield key, rec

    coverage = check_run_prompts(run_dir, indexed(), run_json, run)  # trust chain: each record vs the manifest
    models = model_dirs(run_dir)
    if not models:
        raise PredictionsError(f"{predictions_root(run_dir)}: no model directories "
                               "(expected predictions/<model_slug>/<dataset>/run_<k>.jsonl)")
    # what was sampled for each (dataset, run) (demonstrations, document order, paraphrase, ...)
    factors = {(r["dataset"], r["run"]): {k: v for k, v in r.items() if k not in RUN_FACTORS_SKIPPED}
               for r in coverage.tm.manifest.get("runs", []) if isinstance(r, dict) and "dataset" in r}
    head = {"manifest_digest": run_json.get("manifest_digest"),
            "prompt_digest": digest_of_hashes(hashes.values()),
            "profile": profile, "kit_version": __version__}
    new_scorer = partial(ModelScorer, profile=profile, fic=_Fic(fic, fic_factory, fic_download),
                         gold_block_size=gold_block_size)
    return [_score_model(run_dir, model_dir, out_root / model_dir.name, hashes, sizes, factors, coverage,
                         head, progress, new_scorer) for model_dir in models]


def _score_model(run_dir: Path, model_dir: Path, out_dir: Path, hashes: dict[Key, str],
                 sizes: dict[tuple[str, int], int], factors: dict[tuple[str, int], dict[str, Any]],
                 coverage: Coverage, head: dict[str, Any], progress: bool,
                 new_scorer: Callable[[dict[str, Any]], ModelScorer]) -> Path:
    """Score one model's predictions a (dataset, run) at a time into ``out_dir``; returns its
    summary.json. ``head``: the summary fields every model of the run shares."""
    model: dict[str, Any] | None = None
    scorer: ModelScorer | None = None
    scored: set[Key] = set()
    visited: set[Path] = set()
    bar = progress_bar(len(hashes), f"score:{model_dir.name}", "inst", progress)
    try:
        with ScoresWriter(out_dir) as out:
            for group in _prompt_groups(prompts_path(run_dir), sizes, hashes):
                ds, run = group[0][0][:2]
                path = model_run_file(model_dir, ds, run)
                preds: dict[Key, dict[str, Any]] = {}
                if path.is_file():
                    visited.add(path)
                    preds, model = _read_predictions(path, hashes, model)
                items = [(k, rec, preds[k]) for k, rec in group if k in preds]
                if items:
                    assert model is not None
                    scorer = scorer or new_scorer(model)
                    recs = dict(group)
                    for line in scorer.score_group(items):
                        sample = _sample(line, recs, preds, factors.get((ds, run), {}), coverage.tm.expected)
                        line.pop("_resp", None)
                        out.write(line, sample)
                    scored.update(preds)
                bar.update(len(group))
            for path in prediction_files(model_dir):  # files of no prompted run: refused unless empty
                if path not in visited:
                    model = _read_predictions(path, hashes, model)[1]
            _check_complete(model_dir, model)
            datasets = scorer.datasets() if scorer is not None else {}
            out.summary = {"model": model, **head, "datasets": datasets,
                           **coverage.summary_fields(model_dir, datasets, scored)}
    finally:
        close_bar(bar)
    return out.target / "summary.json"


def parsed_response(rec: dict[str, Any], pred: dict[str, Any], model: dict[str, Any], profile: str) -> str:
    """The response the profile's metric scored (its primary variant's extraction), recomputed the
    way ``_score_instance`` does so a reader of the run (``seam-repro view``) sees what was scored."""
    variant = primary_variant(profile)
    spec = registry.get(registry.record_metrics(rec)[variant])
    return _extract(spec.extraction[VARIANTS.index(variant)], rec, pred, model)
