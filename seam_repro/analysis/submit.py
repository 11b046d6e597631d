"""Results bundles: one JSON file that ties a model's scores to a frozen manifest.

A bundle is what a model author hands in (``seam-repro submit RUN_DIR --out BUNDLE.json``) and what
``seam-repro report`` ranks against the reference. It carries provenance at the top level
(manifest digest, prompt digest, model id and revision, chat-template sha256, environment
fingerprint), the per-instance scores and per-run scores, and ``bundle_digest`` = sha256 of the
canonical JSON of every other field, so any edit is detected on read. Upstream SEAM has no
equivalent; the digest-upward habit follows lm-evaluation-harness (per-sample hashes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from seam_repro import __version__
from seam_repro.analysis.aggregate import (
    ModelScores,
    build_model_scores,
    load_run_dir,
    parse_instance_line,
)
from seam_repro.errors import InputError, version_mismatch
from seam_repro.files.atomic import atomic_write_text, owned_tempdir
from seam_repro.files.reading import read_json
from seam_repro.hashing import sha256_json
from seam_repro.run.store import (
    RunRecords,
    load_run_manifest,
    model_slug,
    partial_reason,
    read_run_records,
    run_json_path,
    scores_root,
)

BUNDLE_KIND = "seam-repro/results-bundle"
BUNDLE_VERSION = 2
"""2: adds seeds, protocol, generation settings, partial/coverage, unscored and predictions_digest."""
_INSTANCE_KEYS = ("dataset", "run", "instance_id", "metric", "score", "valid_format", "metric_version")
_BUNDLE_SHAPE: tuple[tuple[tuple[str, ...], type, str], ...] = (
    (("manifest_digest", "prompt_digest", "bundle_digest", "predictions_digest"), str,
     "expected a string digest"),
    (("model",), dict, 'expected {"id": str, "revision": str}'),
    (("chat_template_sha256", "environment"), object, "missing (may be null)"),
    (("protocol", "generation", "seeds"), dict, "expected an object"),
    (("partial",), bool, "expected true/false"))
"""``parse_bundle``'s top-level checks, in order: (fields, the type each must hold, what a failing field
should hold); every field must be present (``object``: null too)."""


def _dataset_payload(ms: ModelScores) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, ds in ms.datasets.items():
        out[name] = {
            "metric": ds.metric,
            # a missing run stays null, with the scorer's reason, so the bundle reads back the same
            "runs": {str(k): ds.runs.get(k) for k in sorted({*ds.runs, *ds.missing_runs})},
            **({"reason": next(iter(ds.missing_runs.values()))} if ds.missing_runs else {}),
            "format_rate": {str(k): v for k, v in ds.format_rate.items()},
            "instances": [{k: getattr(it, k) for k in _INSTANCE_KEYS} for it in ds.instances],
        }
        for key, value in (("corrected", ds.corrected), ("intended", ds.intended)):
            if value is not None:
                out[name][key] = {"metric": value["metric"], "runs": {str(k): v for k, v in value["runs"].items()}}
    return out


def rederive(run_dir: Path, ms: ModelScores, run: RunRecords) -> dict[str, Any]:
    """Score ``run_dir`` again into a temporary folder (re-validating prompts against the manifest and
    every prediction line) and refuse any difference from the scores on disk. Returns the notes of
    cells that could not be re-derived here (model-based FIC scores without the models cached).
    The fresh scores are checked against ``run`` (the run folder's manifest and run.json), not
    against whatever lies two folders above the temporary one."""
    from seam_repro.analysis.aggregate import load_scores_dir
    from seam_repro.scoring.loop import score_run_dir

    profile = (ms.extra.get("protocol") or {}).get("profile")
    src = Path(ms.source) / "instance_scores.jsonl"
    with owned_tempdir("seam-repro-submit-") as tmp:
        # FIC models are tried only when the disk holds FIC scores to re-derive (never downloaded)
        fic = any(it.metric.startswith("fic") and it.score is not None
                  for ds in ms.datasets.values() for it in ds.instances)
        score_run_dir(run_dir, Path(tmp), profile, fic=fic, fic_download=False)
        fresh = load_scores_dir(Path(tmp) / Path(ms.source).name, run)
    if fresh.extra.get("predictions_digest") != ms.extra.get("predictions_digest"):
        raise InputError(Path(ms.source) / "summary.json", f"is {ms.extra.get('predictions_digest')} but the "
                         f"predictions now hash to {fresh.extra.get('predictions_digest')}: predictions changed "
                         "after scoring; run `seam-repro score` again", field="predictions_digest")
    disk, new = ({(it.dataset, it.run, it.instance_id): it for ds in m.datasets.values() for it in ds.instances}
                 for m in (ms, fresh))
    not_rederived = []
    for key in sorted(set(disk) | set(new)):
        a, b = disk.get(key), new.get(key)
        if a is None or b is None:
            where = "on disk only" if b is None else "re-derived only"
            raise InputError(src, f"{key[0]} run {key[1]} instance {key[2]} is scored {where} (expected the "
                             "instances re-scoring the predictions gives)", field="instance_id")
        if b.score is None and a.score is not None and "unavailable" in b.metric_version:
            not_rederived.append(key)
            continue
        if (a.metric, a.valid_format) != (b.metric, b.valid_format) or not _same(a.score, b.score):
            raise InputError(src, f"{key[0]} run {key[1]} instance {key[2]}: score {a.score!r} ({a.metric}) but "
                             f"re-scoring the predictions gives {b.score!r} ({b.metric}); run `seam-repro score` again",
                             field="score")
    for name, ds in fresh.datasets.items():
        old = ms.datasets.get(name)
        if old is None or any(not _same(old.runs.get(r), v) for r, v in ds.runs.items()):
            if old is None and name in ms.unscored:
                continue
            raise InputError(Path(ms.source) / "summary.json", f"run scores {None if old is None else old.runs} but "
                             f"re-scoring gives {ds.runs}", record=f"datasets.{name}", field="runs")
    return {"not_rederived": len(not_rederived),
            "note": (f"{len(not_rederived)} model-based scores (FIC) could not be re-derived here (models not "
                     "cached); they are tied to the predictions by predictions_digest") if not_rederived else None}


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a - b) <= 1e-9 * max(1.0, abs(a))


def make_bundle(run_dir: Path, model_id: str | None = None, *, rescore: bool = True) -> dict[str, Any]:
    """Build the bundle of one scored model of ``run_dir`` (``model_id`` needed if several).

    The store and prompts are re-validated against ``RUN_DIR/manifest.json`` and the scores are
    re-derived from the predictions (``rescore``), so a bundle never packages scores of damaged
    or swapped predictions."""
    from seam_repro.manifest.trust import seeds_view

    run = read_run_records(run_dir)  # the run's manifest and run.json, read once for every check below
    models = load_run_dir(run_dir, run)
    if model_id is not None:
        models = [m for m in models if m.model_id == model_id]
        if not models:
            raise InputError(scores_root(run_dir), f"no scores for model {model_id!r}")
    if len(models) != 1:
        raise InputError(scores_root(run_dir), f"holds {len(models)} models {[m.model_id for m in models]}; "
                         "choose one with --model ID")
    ms = models[0]
    info, info_path = run.run_json, run_json_path(run.run_dir)
    slug = model_slug(ms.model_id)
    if info is None:
        raise InputError(info_path, "not found")
    if not isinstance(info.get("manifest_digest"), str):
        raise InputError(info_path, "expected a string digest", field="manifest_digest")
    entry = info["models"].get(slug)  # read_run_records checked models: an object of {id, revision, ...}
    if entry is None:
        raise InputError(info_path, f"no entry for model {ms.model_id!r} (expected models.{slug}); were these scores "
                         "produced in this run directory?", field="models")
    summary_path = Path(ms.source) / "summary.json"
    if entry["revision"] != ms.revision:
        raise InputError(summary_path, f"is {ms.revision!r} but run.json has {entry['revision']!r}",
                         field="model.revision")
    if ms.manifest_digest != info["manifest_digest"]:
        raise InputError(summary_path, f"is {ms.manifest_digest} but run.json has "
                         f"{info['manifest_digest']}: the scores are from another manifest", field="manifest_digest")
    tm = load_run_manifest(run_dir, info, run)
    protocol = ms.extra.get("protocol")
    if not isinstance(protocol, dict) or "predictions_digest" not in ms.extra:
        raise InputError(summary_path, "has no protocol/predictions_digest (scored by an older kit); run "
                         "`seam-repro score RUN_DIR` again", field="protocol")
    partial = bool(protocol.get("partial"))
    if not partial and ms.prompt_digest != tm.manifest["prompt_digest"]:
        raise InputError(summary_path, f"is {ms.prompt_digest} but the manifest's is {tm.manifest['prompt_digest']} "
                         "although every instance is scored: the prompts differ", field="prompt_digest")
    backend = entry.get("backend")  # no chat-template hash for backends without one
    checks = rederive(run_dir, ms, run) if rescore else {"not_rederived": None, "note": "scores not re-derived"}
    bundle: dict[str, Any] = {
        "kind": BUNDLE_KIND,
        "bundle_version": BUNDLE_VERSION,
        "kit_version": __version__,
        "manifest_digest": ms.manifest_digest,
        "prompt_digest": tm.manifest["prompt_digest"],
        "scored_prompt_digest": ms.prompt_digest,
        "seeds": seeds_view(tm.manifest),
        "protocol": {k: v for k, v in protocol.items() if k != "generation"},
        "generation": dict(protocol.get("generation") or {}),
        "partial": partial,
        "coverage": ms.extra.get("coverage"),
        "unscored": ms.extra.get("unscored", []),
        "unscored_datasets": dict(sorted(ms.unscored.items())),
        "predictions_digest": ms.extra["predictions_digest"],
        "checks": checks,
        "model": {"id": ms.model_id, "revision": ms.revision, **({"name": ms.name} if ms.name else {})},
        "chat_template_sha256": backend.get("chat_template_sha256") if isinstance(backend, dict) else None,
        "environment": info.get("fingerprint"),
        "datasets": _dataset_payload(ms),
    }
    bundle["bundle_digest"] = sha256_json(bundle)
    return bundle


def explain_partial(bundle: dict[str, Any]) -> str | None:
    """One sentence for ``submit`` when the run did not cover the whole manifest."""
    if not bundle.get("partial"):
        return None
    cov = bundle.get("coverage") or {}
    gen = bundle.get("generation") or {}
    why = partial_reason({"limit": gen.get("limit"), "selection": gen.get("selection")}) \
        or "instances without predictions"
    return (f"partial bundle: {cov.get('scored')} of {cov.get('instances')} instances of the manifest are scored "
            f"({why}); it is marked partial, and report/diff label it as not comparable with full runs")


def write_bundle(bundle: dict[str, Any], out: Path) -> None:
    text = json.dumps(bundle, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False)
    atomic_write_text(out, text + "\n")


def parse_bundle(data: Any, path: Path) -> ModelScores:
    """Validate a bundle (shape, digest, seeds of a shipped manifest, instance records) and return its scores."""
    from seam_repro.manifest.trust import check_bundle_seeds, shipped_seeds

    if not isinstance(data, dict) or data.get("kind") != BUNDLE_KIND:
        raise InputError(path, f"not a results bundle (expected \"kind\": \"{BUNDLE_KIND}\")", field="kind")
    if data.get("bundle_version") != BUNDLE_VERSION:
        raise InputError(path, version_mismatch("bundle_version", data.get("bundle_version"), BUNDLE_VERSION,
                                                data.get("kit_version"), "re-create it with `seam-repro submit RUN_DIR`"),
                         field="bundle_version")
    for keys, kind, expected in _BUNDLE_SHAPE:
        for key in keys:
            if key not in data or not isinstance(data[key], kind) or \
                    key == "model" and not all(isinstance(data[key].get(k), str) for k in ("id", "revision")):
                raise InputError(path, expected, field=key)
    try:
        actual = sha256_json({k: v for k, v in data.items() if k != "bundle_digest"})
    except ValueError as exc:
        raise InputError(path, f"contains a non-finite number: {exc}") from None
    if actual != data["bundle_digest"]:
        raise InputError(path, f"is {data['bundle_digest']} but the content hashes to {actual}: the bundle was "
                         "edited after `seam-repro submit`", field="bundle_digest")
    if any(data["seeds"].get(k) != data[k] for k in ("manifest_digest", "prompt_digest")):
        raise InputError(path, "names another manifest or prompt digest than the bundle's top level", field="seeds")
    if data["protocol"].get("manifest_digest") != data["manifest_digest"]:
        raise InputError(path, f"is {data['protocol'].get('manifest_digest')} but the bundle's is "
                         f"{data['manifest_digest']}", field="protocol.manifest_digest")
    seeds = shipped_seeds()
    check_bundle_seeds(path, data, seeds)
    datasets = data.get("datasets")
    if not isinstance(datasets, dict) or not datasets:
        raise InputError(path, "expected a non-empty object", field="datasets")
    instances = []
    for name, ds in datasets.items():
        if not isinstance(ds, dict) or not isinstance(ds.get("instances"), list):
            raise InputError(path, "expected an 'instances' list", f"datasets.{name}", "instances")
        for i, obj in enumerate(ds["instances"]):
            it = parse_instance_line(path, i + 1, obj, f"datasets.{name}.instances[{i}]")
            if it.dataset != name:
                raise InputError(path, f"instance of {it.dataset!r} listed under {name!r}", it.origin,
                                 "dataset")
            instances.append(it)
    summary = {"model": data["model"], **{k: data[k] for k in ("manifest_digest", "prompt_digest")},
               "datasets": {n: {k: v for k, v in ds.items() if k != "instances"} for n, ds in datasets.items()},
               "protocol": {**data["protocol"], "generation": data["generation"]},
               "coverage": data.get("coverage"), "unscored": data.get("unscored", []),
               "predictions_digest": data["predictions_digest"]}
    for name, reason in (data.get("unscored_datasets") or {}).items():
        summary["datasets"].setdefault(name, {"metric": "unknown", "runs": {"0": None}, "reason": reason})
    ms = build_model_scores(summary, instances, path, str(path))
    ms.extra.update({"chat_template_sha256": data["chat_template_sha256"], "environment": data["environment"],
                     "bundle_digest": data["bundle_digest"], "partial": data["partial"],
                     "seeds_checked": bool(seeds)})
    return ms


def read_bundle(path: Path) -> ModelScores:
    return parse_bundle(read_json(path, what="file", expect=None), path)


def load_inputs(paths: list[Path], manifest: str | None = None) -> list[ModelScores]:
    """Run directories and bundles, refused unless all share one manifest digest (or ``manifest``)."""
    models: list[ModelScores] = []
    for p in paths:
        if p.is_dir():
            found = load_run_dir(p)
            check_scores_current(p, found)
            models.extend(found)
        elif p.is_file():
            models.append(read_bundle(p))
        else:
            raise InputError(p, "not found; expected a run directory or a results bundle (.json)")
    expected, origin = (manifest, "--manifest") if manifest else (models[0].manifest_digest, models[0].source)
    for ms in models:
        if ms.manifest_digest != expected:
            raise InputError(ms.source, f"is {ms.manifest_digest} but {origin} has {expected}; results from "
                             "different manifests cannot be compared", field="manifest_digest")
    seen: dict[str, str] = {}
    for ms in models:
        key = f"{ms.model_id}@{ms.revision}"
        if key in seen:
            raise InputError(ms.source, f"model {key} is also given by {seen[key]}; pass each model once", field="model")
        seen[key] = ms.source
    return models


def check_scores_current(run_dir: Path, models: list[ModelScores]) -> None:
    """Refuse scores whose predictions changed after scoring (the ``predictions_digest`` that
    ``score`` recorded no longer matches the prediction files), as ``submit`` does: ``report`` and
    ``view`` would otherwise show a new prediction beside its old score."""
    from seam_repro.run.store import predictions_digest, predictions_root, prompts_path
    from seam_repro.scoring.loop import load_prompts

    tm = read_run_records(run_dir).manifest
    keys: Any = None
    for ms in models:
        recorded = ms.extra.get("predictions_digest")
        model_dir = predictions_root(run_dir) / Path(ms.source).name
        if tm is None or not isinstance(recorded, str) or not model_dir.is_dir():
            continue  # scores copied without their run folder: nothing to compare with
        if keys is None:
            keys = list(tm.expected) if tm.frozen else list(load_prompts(prompts_path(run_dir)))
        now = predictions_digest(model_dir, keys)
        if now != recorded:
            raise InputError(Path(ms.source) / "summary.json", f"stale scores: the predictions in {model_dir} changed "
                             f"after scoring (predictions_digest was {recorded[:16]}…, the files now hash to "
                             f"{now[:16]}…); run `seam-repro score {run_dir}` again", field="predictions_digest")


def resolve_manifest_digest(spec: str | None) -> str | None:
    """``--manifest`` as a 64-hex digest, or a manifest file whose top-level ``digest`` /
    ``manifest_digest`` field holds it."""
    if spec is None:
        return None
    s = spec.strip().lower()
    if len(s) == 64 and all(c in "0123456789abcdef" for c in s):
        return s
    path = Path(spec)
    data = read_json(path, what="file", expect=None)
    if isinstance(data, dict):
        for key in ("manifest_digest", "digest"):
            if isinstance(data.get(key), str):
                return data[key]
    raise InputError(path, "has no top-level 'digest' or 'manifest_digest'; pass the 64-hex digest instead",
                     field="digest")
