"""Score a run directory: predictions + prompt records -> per-instance scores and per-run summaries.

Replaces upstream SEAM ``scripts/evaluate_dataset.py`` + ``evaluation_classes/*`` (scores per run)
and the per-run means of ``scripts/evaluation/statistical_analysis.py``. Formats are those of
docs/ARCHITECTURE.md ("Scores"). Every score is on the 0-100 scale.

Two variants are always computed and written side by side:

* the profile's metric — ``upstream``: upstream's extraction (``parse.extract_upstream`` on prompt +
  continuation) and upstream's metrics (ROUGE geo, str-dict MuSiQue F1, CoNLL-F1 with the scorer's
  line-position matching, FIC F1); ``seam-repro-1``: the corrected variant below;
* ``corrected`` — clean extraction of the continuation (``parse.extract_clean``), MuSiQue scored on
  answer + aliases and answerability (``musique_combined``), coreference matched by mention id.

Scoring dispatches on each prompt record's ``task``: SEAM's four tasks as above; any other task
(ZeroSCROLLS-, IGCS-style suites) through ``suite_scoring`` with the metric the record names.

Model output is untrusted: undecodable bytes, lone surrogates, empty or absurd text are format
failures (``valid_format: false``) and still get a score, never a crash.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seam_repro import __version__
from seam_repro.errors import InputError, PredictionsError, SeamReproError
from seam_repro.files import atomic_write_bytes, ensure_dir, guard_outputs, parse_json_text, read_bytes
from seam_repro.hashing import digest_of_hashes, sha256_json, sha256_text
from seam_repro.parse import extract, extract_clean
from seam_repro.score import musique, rouge
from seam_repro.score.validity import is_valid
from seam_repro.suite_scoring import check_record, is_suite_task, score_records, summarise
from seam_repro.trust import check_run_prompts

PROFILES: tuple[str, ...] = ("upstream", "seam-repro-1")
COREF_MODES = {"upstream": "upstream", "seam-repro-1": "corrected"}
"""Mode passed to ``score.coref_parse.score_run``: the scorer's line-position matching vs. mention ids."""
Key = tuple[str, int, str]
MAX_MISSING_LISTED = 5


# --- reading --------------------------------------------------------------------------------------
def _jsonl(path: Path) -> list[tuple[int, dict[str, Any], bool]]:
    """(line number, object, decodable) for each complete line. A torn (unterminated, unparseable)
    last line is skipped; bytes that are not UTF-8 are replaced and flagged instead of failing."""
    out = []
    data = read_bytes(path)
    lines = data.split(b"\n")
    for lineno, raw in enumerate(lines, start=1):
        last = lineno == len(lines)
        if not raw.strip():
            continue
        try:
            text, decodable = raw.decode("utf-8"), True
        except UnicodeDecodeError:
            text, decodable = raw.decode("utf-8", errors="replace"), False
        try:
            obj = parse_json_text(text, path, record=f"line {lineno}")
        except InputError:
            if last:
                continue  # torn write at the end of an append-only file
            raise
        if not isinstance(obj, dict):
            raise InputError(path, "expected a JSON object", record=f"line {lineno}")
        out.append((lineno, obj, decodable))
    return out


def _require(path: Path, where: str, rec: dict[str, Any], fields: dict[str, type | tuple[type, ...]]) -> None:
    for name, typ in fields.items():
        value = rec.get(name)
        if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
            names = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
            raise InputError(path, f"missing or not a {names}", record=where, field=name)


def load_prompts(path: Path) -> dict[Key, dict[str, Any]]:
    """Prompt records keyed by (dataset, run, instance_id), in file order, hashes re-checked."""
    if not path.is_file():
        raise InputError(path, "prompts file not found (expected RUN_DIR/prompts.jsonl from `seam-repro replay`)")
    out: dict[Key, dict[str, Any]] = {}
    for lineno, rec, _ in _jsonl(path):
        where = f"line {lineno}"
        _require(path, where, rec, {"dataset": str, "run": int, "instance_id": str, "prompt": str,
                                    "prompt_sha256": str, "task": str})
        if sha256_text(rec["prompt"]) != rec["prompt_sha256"]:
            raise InputError(path, "prompt_sha256 does not match the prompt text", record=where, field="prompt_sha256")
        target = rec.get("target")
        if "target_sha256" in rec and rec["target_sha256"] not in (
                sha256_json(target), sha256_text(target) if isinstance(target, str) else None):
            raise InputError(path, "target_sha256 does not match the target", record=where, field="target_sha256")
        if is_suite_task(rec["task"]):
            check_record(path, where, rec)
        else:
            _check_target(path, where, rec["task"], target)
        key = (rec["dataset"], rec["run"], rec["instance_id"])
        if key in out:
            raise InputError(path, f"duplicate prompt record for {key}", record=where)
        out[key] = rec
    return out


def _check_target(path: Path, where: str, task: str, target: Any) -> None:
    ok = {"summarization": isinstance(target, str),
          "qa": isinstance(target, dict) and isinstance(target.get("is_answerable"), bool)
          and isinstance(target.get("answer_content"), str),
          "fic": isinstance(target, dict) and isinstance(target.get("highlights_concat"), str)
          and isinstance(target.get("review_side_alignments"), list),
          "coreference": isinstance(target, list) and all(isinstance(c, list) for c in target)}[task]
    if not ok:
        form = {"summarization": "a summary string", "qa": '{"is_answerable": bool, "answer_content": str}',
                "fic": '{"highlights_concat": str, "review_side_alignments": [str, ...]}',
                "coreference": "a list of clusters (lists of int mention ids)"}[task]
        raise InputError(path, f"expected {form}", record=where, field="target")


def _clean_text(text: str, decodable: bool) -> tuple[str, bool]:
    """Replace lone surrogates (valid JSON escapes, invalid Unicode) so every later step can encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace").decode("utf-8"), False
    return text, decodable


def load_predictions(model_dir: Path, prompts: dict[Key, dict[str, Any]]) -> tuple[dict[Key, dict[str, Any]], dict[str, Any]]:
    """All predictions of one model directory, checked against the prompts; returns them and the
    model's ``{"id", "revision"}``. Missing instances of a predicted dataset are an error."""
    preds: dict[Key, dict[str, Any]] = {}
    model: dict[str, Any] | None = None
    datasets = sorted(p.name for p in model_dir.iterdir() if p.is_dir())
    for ds in datasets:
        for path in sorted((model_dir / ds).glob("run_*.jsonl")):
            for lineno, rec, decodable in _jsonl(path):
                where = f"line {lineno}"
                _require(path, where, rec, {"dataset": str, "run": int, "instance_id": str, "output": str,
                                            "prompt_sha256": str, "model": dict})
                if rec["dataset"] != ds or path.name != f"run_{rec['run']}.jsonl":
                    raise InputError(path, f"record of {rec['dataset']} run {rec['run']} filed under {ds}/{path.name}",
                                     record=where)
                key = (rec["dataset"], rec["run"], rec["instance_id"])
                if key not in prompts:
                    raise PredictionsError(f"{path}: {where}: instance {key} is not in prompts.jsonl")
                if rec["prompt_sha256"] != prompts[key]["prompt_sha256"]:
                    raise PredictionsError(f"{path}: {where}: prompt_sha256 of {key} differs from prompts.jsonl "
                                           "(predictions were made for other prompts)")
                if key in preds:
                    raise PredictionsError(f"{path}: {where}: duplicate prediction for {key}")
                got = {"id": rec["model"].get("id"), "revision": rec["model"].get("revision")}
                if model is None:
                    model = got
                elif got != model:
                    raise PredictionsError(f"{path}: {where}: model {got} differs from {model} in the same directory")
                rec["output"], rec["_decodable"] = _clean_text(rec["output"], decodable)
                preds[key] = rec
    if model is None:
        raise PredictionsError(f"{model_dir}: no predictions found (expected <dataset>/run_<k>.jsonl files)")
    present = {k[0] for k in preds}
    missing = [k for k in prompts if k[0] in present and k not in preds]
    if missing:
        listed = ", ".join(f"{d} run {r} instance {i}" for d, r, i in missing[:MAX_MISSING_LISTED])
        raise PredictionsError(f"{model_dir}: {len(missing)} prompt(s) have no prediction; first: {listed}")
    return preds, model


# --- scoring ---------------------------------------------------------------------------------------
class _Fic:
    """Loads the FIC models once, on first use; remembers why they are unavailable."""

    def __init__(self, enabled: bool, factory: Callable[[], Any] | None):
        self.enabled, self.factory = enabled, factory
        self.scorer: Any = None
        self.reason: str | None = None if enabled else "FIC scoring disabled (--no-fic)"

    def get(self) -> Any:
        if self.scorer is None and self.reason is None:
            try:
                if self.factory is None:
                    from seam_repro.score.fic import FicScorer

                    self.factory = FicScorer.from_pins
                self.scorer = self.factory()
            except SeamReproError as exc:
                self.reason = str(exc)
        return self.scorer


def _metric_score(task: str, variant: str, response: str, rec: dict[str, Any], fic: _Fic) -> tuple[float | None, str, dict[str, Any], str]:
    """(score, metric name, details, version) of one non-coreference instance."""
    target = rec["target"]
    if task == "summarization":
        r = rouge.rouge_geo(response, target)
        return r.geo, "rouge_geo", r.details(), rouge.version()
    if task == "qa":
        if variant == "upstream":
            f1, is_dict = musique.upstream_f1(response, target)
            return f1, "musique_f1", {"parsed_dict": is_dict}, musique.version("upstream")
        q = musique.corrected(response, target, rec.get("answer_aliases") or ())
        return q.combined, "musique_combined", {"answer_f1": q.answer_f1, "answer_em": q.answer_em,
                                                "pred_answerable": q.pred_answerable,
                                                "gold_answerable": q.gold_answerable}, musique.version("corrected")
    scorer = fic.get()
    if scorer is None:
        return None, "fic_f1", {"reason": fic.reason}, "fic_f1/unavailable"
    res = scorer.score(response, target)
    return res.f1, "fic_f1", res.details(), scorer.version()


def _coref_run(gold: list[tuple[str, Any]], responses: list[tuple[str, str]], mode: str) -> tuple[Any, str | None]:
    """``score.coref_parse.score_run`` (imported lazily): the run's micro CoNLL result, or a reason."""
    try:
        from seam_repro.score.coref_parse import score_run
    except ImportError as exc:
        return None, f"coreference scorer not available ({exc})"
    return score_run(gold, responses, mode), None


def _mean(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def score_model(prompts: dict[Key, dict[str, Any]], preds: dict[Key, dict[str, Any]], model: dict[str, Any],
                profile: str, fic: _Fic) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Instance lines (prompt order) and the ``datasets`` block of summary.json."""
    primary_variant = "upstream" if profile == "upstream" else "corrected"
    lines: list[dict[str, Any]] = []
    per: dict[str, dict[int, list[dict[str, Any]]]] = {}
    tasks: dict[str, str] = {}
    suite_items = []
    for key, rec in prompts.items():
        if key not in preds:
            continue
        pred, task = preds[key], rec["task"]
        if tasks.setdefault(key[0], task) != task:
            raise InputError("prompts.jsonl", f"dataset {key[0]} has records of tasks '{tasks[key[0]]}' and '{task}'",
                             record=f"{key}", field="task")
        if is_suite_task(task):
            suite_items.append((key, rec, pred))
            continue
        output, decodable = pred["output"], pred["_decodable"]
        resp = {"upstream": extract("upstream", prompt=rec["prompt"], output=output, model_id=str(model["id"])),
                "corrected": extract_clean(output)}
        line: dict[str, Any] = {"dataset": key[0], "run": key[1], "instance_id": key[2], "metric": None,
                                "score": None, "valid_format": is_valid(task, resp[primary_variant], decodable=decodable),
                                "metric_version": None, "details": {"profile": profile}}
        if not decodable:
            line["details"]["undecodable_output"] = True
        if pred.get("truncated"):
            line["details"]["prompt_truncated"] = True
        if task != "coreference":
            for variant in ("upstream", "corrected"):
                score, name, details, version = _metric_score(task, variant, resp[variant], rec, fic)
                extraction = "upstream-port" if variant == "upstream" else "clean"
                entry = {"metric": name, "score": score, "metric_version": f"{version}/extract={extraction}", **details}
                if variant == primary_variant:
                    line.update(metric=name, score=score, metric_version=entry["metric_version"])
                    line["details"].update(details)
                line["details"][variant] = entry
        else:
            line["metric"], line["metric_version"] = "conll_f1", None
        line["_resp"] = resp
        lines.append(line)
        per.setdefault(key[0], {}).setdefault(key[1], []).append(line)
    for line in score_records(suite_items, profile):
        lines.append(line)
        per.setdefault(line["dataset"], {}).setdefault(line["run"], []).append(line)
    datasets = {ds: summarise(tasks[ds], runs) if is_suite_task(tasks[ds])
                else _summarise(ds, tasks[ds], runs, prompts, primary_variant, profile) for ds, runs in per.items()}
    for line in lines:
        line.pop("_resp", None)
    return lines, datasets


def _summarise(ds: str, task: str, runs: dict[int, list[dict[str, Any]]], prompts: dict[Key, dict[str, Any]],
               primary_variant: str, profile: str) -> dict[str, Any]:
    out: dict[str, Any] = {"task": task, "runs": {}, "format_rate": {}, "n_instances": {}}
    corrected: dict[str, Any] = {"runs": {}}
    if task == "qa":
        corrected["extra"] = {"answer_f1": {}, "answer_em": {}, "answerability_accuracy": {}, "answerability_f1": {}}
    for run, lines in sorted(runs.items()):
        k = str(run)
        out["format_rate"][k] = sum(ln["valid_format"] for ln in lines) / len(lines)
        out["n_instances"][k] = len(lines)
        if task == "coreference":
            gold = [(ln["instance_id"], prompts[(ds, run, ln["instance_id"])]["target"]) for ln in lines]
            for variant, mode in (("upstream", COREF_MODES["upstream"]), ("corrected", COREF_MODES["seam-repro-1"])):
                result, reason = _coref_run(gold, [(ln["instance_id"], ln["_resp"][variant]) for ln in lines], mode)
                # upstream reads CoNLL-F1 from the perl scorer's printed (truncated) percentages
                value = None if result is None else (result.conll_f1_printed if variant == "upstream" else result.conll_f1)
                if variant == "corrected":
                    corrected["runs"][k] = value
                if variant == primary_variant:
                    out["runs"][k] = value
                if reason:
                    out["reason"] = reason
                version = f"conll_f1/coref-port/mode={mode}" + ("/perl-printed" if variant == "upstream" else "")
                for i, ln in enumerate(lines):
                    inst = None if result is None else result.instances[i].conll_f1
                    ln["details"][variant] = {"metric": "conll_f1", "score": inst, "metric_version": version}
                    if variant == primary_variant:
                        ln["score"], ln["metric_version"] = inst, version
            out["metric"] = corrected["metric"] = "conll_f1"
            continue
        out["metric"] = lines[0]["metric"]
        out["runs"][k] = _mean([ln["score"] for ln in lines])
        corrected["metric"] = lines[0]["details"]["corrected"]["metric"]
        corrected["runs"][k] = _mean([ln["details"]["corrected"]["score"] for ln in lines])
        if task == "qa":
            det = [ln["details"]["corrected"] for ln in lines]
            ans = [d for d in det if d["gold_answerable"]]
            extra = corrected["extra"]
            extra["answer_f1"][k] = _mean([d["answer_f1"] for d in ans])
            extra["answer_em"][k] = _mean([d["answer_em"] for d in ans])
            extra["answerability_accuracy"][k] = 100.0 * sum(
                d["pred_answerable"] is not None and d["pred_answerable"] == d["gold_answerable"] for d in det) / len(det)
            extra["answerability_f1"][k] = musique.answerability_f1([(d["gold_answerable"], d["pred_answerable"]) for d in det])
        reasons = {ln["details"].get("reason") for ln in lines if ln["score"] is None} - {None}
        if reasons:
            out["reason"] = sorted(reasons)[0]
    corrected["extraction"] = "clean"
    out["corrected"] = corrected
    out["extraction"] = "upstream-port" if primary_variant == "upstream" else "clean"
    return out


def _write_atomic(path: Path, data: bytes) -> None:
    atomic_write_bytes(path, data)


def score_run_dir(run_dir: Path, out_dir: Path | None = None, profile: str | None = None, *, fic: bool = True,
                  fic_factory: Callable[[], Any] | None = None, fic_download: bool = False) -> list[Path]:
    """Score every model under ``RUN_DIR/predictions``; returns the summary.json paths written."""
    from seam_repro.store import require_run_json

    run_dir = Path(run_dir)
    run_json: dict[str, Any] = require_run_json(run_dir)
    out_root = Path(out_dir) if out_dir is not None else run_dir / "scores"
    # Scores may go anywhere but over what is being scored.
    guard_outputs([("--out", out_root)], inputs=[run_dir, run_dir / "run.json", run_dir / "prompts.jsonl"],
                  read_dirs=[run_dir / "predictions"])
    profile = profile or run_json.get("profile") or "upstream"
    if profile not in PROFILES:
        raise InputError("--profile", f"unknown profile '{profile}'; expected one of {', '.join(PROFILES)}")
    prompts = load_prompts(run_dir / "prompts.jsonl")
    coverage = check_run_prompts(run_dir, prompts, run_json)  # trust chain: every record vs the manifest
    pred_root = run_dir / "predictions"
    models = sorted(p for p in pred_root.iterdir() if p.is_dir()) if pred_root.is_dir() else []
    if not models:
        raise PredictionsError(f"{pred_root}: no model directories (expected predictions/<model_slug>/<dataset>/run_<k>.jsonl)")
    if fic_factory is None and fic:
        from functools import partial

        from seam_repro.score.fic import FicScorer

        fic_factory = partial(FicScorer.from_pins, allow_download=fic_download)
    fic_state = _Fic(fic, fic_factory)
    written = []
    for model_dir in models:
        preds, model = load_predictions(model_dir, prompts)
        lines, datasets = score_model(prompts, preds, model, profile, fic_state)
        target = out_root / model_dir.name
        ensure_dir(target)
        body = "".join(json.dumps(ln, ensure_ascii=False, allow_nan=False) + "\n" for ln in lines)
        _write_atomic(target / "instance_scores.jsonl", body.encode("utf-8"))
        summary = {"model": model, "manifest_digest": run_json.get("manifest_digest"),
                   "prompt_digest": digest_of_hashes(r["prompt_sha256"] for r in prompts.values()),
                   "profile": profile, "kit_version": __version__, "datasets": datasets,
                   **coverage.summary_fields(model_dir, datasets, preds)}
        _write_atomic(target / "summary.json", (json.dumps(summary, indent=1, ensure_ascii=False, allow_nan=False)
                                                + "\n").encode("utf-8"))
        written.append(target / "summary.json")
    return written
