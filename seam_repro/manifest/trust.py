"""The trust chain: every stage checks what it consumes against the sealed manifest, here and only here.

    manifest (digest over content) ─replay─▶ rendered prompts hash to the manifest, else refused
        └─ copied to RUN_DIR/manifest.json (same digest as run.json)
    RUN_DIR/prompts.jsonl ─score─▶ every record and gold target hashes to the manifest; every
        (dataset, run, instance) the manifest lists but the run lacks is reported as unscored
    predictions ─score─▶ predictions digest in summary.json ─submit─▶ store re-validated, scores
        re-derived and compared, bundle sealed with a digest
    bundle ─report/diff─▶ bundle digest, and for a shipped manifest its seeds and prompt digests
        against ``seeds/``; protocol fields compared before any two results are ranked or diffed

Each refusal is one line naming the file, the record and what was expected.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError, ManifestError, PredictionsError, SeamReproError
from seam_repro.files import atomic_write_text, read_json
from seam_repro.hashing import digest_of_hashes, sha256_bytes, sha256_json, sha256_text

Key = tuple[str, int, str]
RUN_MANIFEST = "manifest.json"
"""Copy of the replayed manifest inside a run folder: what ``score`` checks the run against."""
SEEDS_DIR = Path(__file__).resolve().parents[2] / "seeds"
MAX_LISTED = 20
PROTOCOL_FIELDS = ("manifest_digest", "protocol_digest", "profile", "runs", "instances", "limit", "temperature",
                   "max_new_tokens", "prompt_path")
"""Fields that must agree before two results are compared (``protocol_differences``)."""


@dataclass(frozen=True)
class TrustedManifest:
    """A manifest read once, schema- and digest-checked, with its per-instance expectations."""

    path: str
    manifest: dict[str, Any]
    expected: dict[Key, dict[str, Any]] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        return str(self.manifest["digest"])

    @property
    def frozen(self) -> bool:
        return bool(self.manifest["frozen"])

    def dataset_runs(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for run in self.manifest["runs"]:
            out.setdefault(run["dataset"], []).append(run["run"])
        return out


def trusted(manifest: dict[str, Any], path: str) -> TrustedManifest:
    """Wrap an already validated manifest dict."""
    expected = {(r["dataset"], r["run"], i["id"]): i for r in manifest.get("runs", []) for i in r["instances"]}
    return TrustedManifest(path, manifest, expected)


def load_trusted(path: str | Path, *, allow_unfrozen: bool = False) -> TrustedManifest:
    """Read and check a manifest once; consumers pass the result along instead of re-reading."""
    from seam_repro.manifest.format import load_manifest

    manifest = load_manifest(path)
    if not manifest["frozen"] and not allow_unfrozen:
        raise ManifestError(f"{path}: field 'frozen': the manifest is not frozen; run `seam-repro freeze {path}` "
                            "first or pass --allow-unfrozen for a throwaway run")
    return trusted(manifest, str(path))


def _target_hash(target: Any) -> set[str]:
    """Accepted hashes of a gold target: canonical JSON (as rendered), or the text of a string target."""
    out = {sha256_json(target)}
    if isinstance(target, str):
        out.add(sha256_text(target))
    return out


def _record_problems(tm: TrustedManifest, rec: dict[str, Any]) -> str | None:
    key = (rec["dataset"], rec["run"], rec["instance_id"])
    want = tm.expected.get(key)
    if want is None:
        return "not an instance of the manifest"
    got = sha256_text(rec["prompt"])
    if got != want["prompt_sha256"]:
        return f"prompt hashes to {got}, the manifest expects prompt_sha256 {want['prompt_sha256']}"
    if "target" in rec and want["target_sha256"] not in _target_hash(rec["target"]):
        return f"gold target hashes to {sha256_json(rec['target'])}, the manifest expects target_sha256 " \
               f"{want['target_sha256']}"
    if "gen_seed" in rec and rec["gen_seed"] != want["gen_seed"]:
        return f"gen_seed {rec['gen_seed']}, the manifest expects {want['gen_seed']}"
    return None


def check_rendered(tm: TrustedManifest, records: Iterable[dict[str, Any]]) -> None:
    """Refuse rendered prompt records that do not hash to the manifest (``replay``, before any model
    is loaded). Lists every drifting (dataset, run, instance) as ``verify`` does."""
    if not tm.frozen:
        return  # choices drawn now: nothing recorded to compare with (uncitable by construction)
    bad = []
    seen = set()
    for rec in records:
        key = (rec["dataset"], rec["run"], rec["instance_id"])
        seen.add(key)
        problem = _record_problems(tm, rec)
        if problem:
            bad.append(f"{key[0]} run {key[1]} instance {key[2]}: {problem}")
    bad += [f"{k[0]} run {k[1]} instance {k[2]}: in the manifest but not rendered" for k in tm.expected
            if k not in seen]
    if bad:
        listed = "\n".join(f"  {b}" for b in bad[:MAX_LISTED])
        more = f"\n  … and {len(bad) - MAX_LISTED} more" if len(bad) > MAX_LISTED else ""
        raise ManifestError(f"{tm.path}: {len(bad)} rendered prompt(s) do not match the manifest's hashes "
                            f"(expected every prompt/target to hash to its recorded value; run `seam-repro verify "
                            f"{tm.path}` for diffs); nothing was generated:\n{listed}{more}")


# --- run folders ------------------------------------------------------------------------------------
def write_run_manifest(run_dir: Path, tm: TrustedManifest) -> None:
    """Copy the manifest into ``RUN_DIR/manifest.json``; an existing copy must have the same digest."""
    from seam_repro.manifest.format import dump_manifest, load_manifest

    path = Path(run_dir) / RUN_MANIFEST
    if path.exists():
        have = load_manifest(path)["digest"]
        if have != tm.digest:
            raise PredictionsError(f"{path}: field 'digest': this run folder belongs to manifest {have}, not "
                                   f"{tm.digest}; use a new --out directory")
        return
    atomic_write_text(path, dump_manifest(tm.manifest))


def load_run_manifest(run_dir: Path, run_json: dict[str, Any]) -> TrustedManifest:
    """``RUN_DIR/manifest.json``, checked, and the same manifest run.json names."""
    from seam_repro.manifest.format import load_manifest

    path = Path(run_dir) / RUN_MANIFEST
    if not path.is_file():
        raise InputError(path, "missing: score checks every prompt and gold target against the replayed manifest; "
                         "re-run `seam-repro replay MANIFEST --out RUN_DIR` (it resumes and writes it; a run made "
                         "from a schema_version 1 manifest must be replayed into a new --out)")
    tm = trusted(load_manifest(path), str(path))
    if run_json.get("manifest_digest") != tm.digest:
        raise InputError(Path(run_dir) / "run.json", f"is {run_json.get('manifest_digest')!r} but {path} has digest "
                         f"{tm.digest}", field="manifest_digest")
    return tm


@dataclass
class Coverage:
    """What a run folder holds relative to its manifest; built by :func:`check_run_prompts`."""

    tm: TrustedManifest
    run_json: dict[str, Any]
    present: set[Key]
    metrics: dict[str, str]
    tasks: dict[str, str]

    def _missing_entries(self, preds: dict[Key, Any]) -> list[dict[str, Any]]:
        """One entry per (dataset, run) with instances the manifest lists but this model has no score for."""
        limit = self.run_json.get("limit")
        by_run: dict[tuple[str, int], list[str]] = {}
        totals: dict[tuple[str, int], int] = {}
        for key in self.tm.expected:
            dr = (key[0], key[1])
            totals[dr] = totals.get(dr, 0) + 1
            if key not in preds:
                by_run.setdefault(dr, []).append(key[2])
        predicted = {k[0] for k in preds}
        out = []
        for (ds, run), ids in by_run.items():
            if ds not in predicted:
                reason = "no predictions for this dataset (predictions/<model>/" + ds + "/ is missing or empty)"
            elif all((ds, run, i) not in self.present for i in ids):
                reason = (f"not replayed (--limit {limit})" if limit else "no prompt records in prompts.jsonl")
            else:
                reason = "no prediction"
            out.append({"dataset": ds, "run": run, "missing": len(ids), "of": totals[(ds, run)],
                        "first": ids[:5], "reason": reason})
        return out

    def complete(self, datasets: dict[str, Any], preds: dict[Key, Any]) -> dict[str, Any]:
        """summary.json fields: every manifest dataset in ``datasets`` (null runs with a reason when
        it has no score at all), the unscored (dataset, run, instance) groups, coverage and protocol."""
        unscored = self._missing_entries(preds)
        out = dict(datasets)
        for ds, runs in self.tm.dataset_runs().items():
            if ds in out:
                continue
            reasons = sorted({u["reason"] for u in unscored if u["dataset"] == ds}) or ["no scores"]
            out[ds] = {"task": self.tasks.get(ds), "metric": self.metrics.get(ds, "unknown"),
                       "runs": {str(r): None for r in runs}, "reason": "; ".join(reasons)}
        order = list(self.tm.dataset_runs())
        ordered = {ds: out[ds] for ds in order if ds in out}
        ordered.update({k: v for k, v in out.items() if k not in ordered})
        n_expected = len(self.tm.expected)
        n_scored = sum(1 for k in self.tm.expected if k in preds)
        return {"datasets": ordered, "unscored": unscored,
                "coverage": {"instances": n_expected, "scored": n_scored, "partial": n_scored < n_expected}}

    def summary_fields(self, model_dir: Path, datasets: dict[str, Any], preds: dict[Key, Any]) -> dict[str, Any]:
        """Everything ``score`` adds to a model's summary.json: all manifest datasets (unscored ones
        with a reason), the unscored groups, coverage, the protocol and the predictions digest."""
        fields = self.complete(datasets, preds)
        fields["protocol"] = run_protocol(self.tm, self.run_json, Path(model_dir).name, fields["coverage"]["scored"])
        fields["predictions_digest"] = predictions_digest(model_dir, self.tm.expected)
        return fields


def check_run_prompts(run_dir: Path, prompts: dict[Key, dict[str, Any]], run_json: dict[str, Any]) -> Coverage:
    """Check every prompt record and gold target of ``RUN_DIR/prompts.jsonl`` against the manifest
    the run was replayed from (``score``); refuse the first that differs."""
    tm = load_run_manifest(run_dir, run_json)
    where = Path(run_dir) / "prompts.jsonl"
    metrics: dict[str, str] = {}
    tasks: dict[str, str] = {}
    for n, (key, rec) in enumerate(prompts.items(), start=1):
        if tm.frozen:
            problem = _record_problems(tm, rec)
            if problem is None and "target" not in rec:
                problem = f"no gold target; the manifest expects one hashing to {tm.expected[key]['target_sha256']}"
            if problem:
                raise InputError(where, problem, record=f"{key[0]} run {key[1]} instance {key[2]} (record {n})")
        if isinstance(rec.get("metric"), str):
            metrics.setdefault(key[0], rec["metric"])
        tasks.setdefault(key[0], rec.get("task"))
    if not tm.frozen:  # an --allow-unfrozen run: the prompts it holds are all there is to expect
        tm = TrustedManifest(tm.path, tm.manifest, {k: {} for k in prompts})
    _fill_metrics(tm, metrics, tasks)
    return Coverage(tm, run_json, set(prompts), metrics, tasks)


def _fill_metrics(tm: TrustedManifest, metrics: dict[str, str], tasks: dict[str, str]) -> None:
    """Metric and task of datasets with no prompt record at all, from the manifest's suite."""
    from seam_repro.suite import load_suite

    try:
        suite = load_suite(tm.manifest["config"].get("suite", "seam"))
        for ds in tm.dataset_runs():
            spec = suite.spec(ds)
            metrics.setdefault(ds, spec.metrics.get(tm.manifest["profile"], "unknown"))
            tasks.setdefault(ds, spec.task)
    except (SeamReproError, KeyError):  # an unknown suite or dataset only loses the metric name
        return


def predictions_digest(model_dir: Path, keys: Iterable[Key]) -> str:
    """Digest over the raw bytes of each prediction line, in prompt order (ties scores to the exact
    predictions). A torn last line is refused: resume the replay to repair it first."""
    line_hash: dict[Key, str] = {}
    for path in sorted(Path(model_dir).glob("*/run_*.jsonl")):
        data = path.read_bytes()
        if data and not data.endswith(b"\n"):
            raise PredictionsError(f"{path}: last line is torn (no newline); resume `seam-repro replay` to repair "
                                   "it before scoring or submitting")
        from seam_repro.files import parse_json_text

        for lineno, raw in enumerate(data.split(b"\n")[:-1], start=1):
            if not raw.strip():
                continue
            obj = parse_json_text(raw.decode("utf-8", errors="replace"), path, record=f"line {lineno}")
            key = (obj.get("dataset"), obj.get("run"), obj.get("instance_id"))
            line_hash[key] = sha256_bytes(raw)  # type: ignore[index]
    return digest_of_hashes(line_hash[k] for k in keys if k in line_hash)


# --- protocol -------------------------------------------------------------------------------------
def run_protocol(tm: TrustedManifest, run_json: dict[str, Any], slug: str, n_scored: int) -> dict[str, Any]:
    """The facts two results must share to be compared (``PROTOCOL_FIELDS``)."""
    from seam_repro.manifest.format import protocol_digest

    models = run_json.get("models")
    entry = models.get(slug) if isinstance(models, dict) else None
    entry = entry if isinstance(entry, dict) else {}
    gen = entry.get("generation") if isinstance(entry.get("generation"), dict) else {}
    backend = entry.get("backend") if isinstance(entry.get("backend"), dict) else {}
    cfg_gen = tm.manifest["config"].get("generation") or {}
    return {
        "manifest_digest": tm.digest, "protocol_digest": protocol_digest(tm.manifest),
        "profile": tm.manifest["profile"], "runs": tm.manifest["config"]["num_different_runs"],
        "instances": len(tm.expected), "scored_instances": n_scored, "partial": n_scored < len(tm.expected),
        "limit": run_json.get("limit"),
        "temperature": gen.get("temperature", cfg_gen.get("temperature")),
        "max_new_tokens": gen.get("max_new_tokens", cfg_gen.get("max_new_tokens")),
        "prompt_path": gen.get("prompt_path"),
        "generation": {"backend": entry.get("backend_name"), "prompt_path": gen.get("prompt_path"),
                       "max_new_tokens": gen.get("max_new_tokens"), "temperature": gen.get("temperature"),
                       "do_sample": gen.get("do_sample"), "top_p": gen.get("top_p"),
                       "truncation": gen.get("truncation"), "dtype": backend.get("dtype"),
                       "batch_size": entry.get("batch_size"), "limit": run_json.get("limit"),
                       "shard": run_json.get("shard"),
                       # --model-args that can change the text (all of them: environment.model_args)
                       "model_args": gen.get("model_args") or {}},
    }


def protocol_differences(mine: dict[str, Any] | None, ref: dict[str, Any] | None) -> list[str]:
    """``field: mine vs ref`` for each protocol field both sides state and that differs (``instances``
    also counts a partial run); a side with no protocol at all is one difference."""
    if ref is None:
        return []
    if mine is None:
        return ["protocol: unknown (scored by an older kit or by hand; re-run `seam-repro score`)"]
    out = []
    for name in PROTOCOL_FIELDS:
        if name not in ref:
            continue
        a, b = mine.get(name), ref[name]
        if a != b:
            out.append(f"{name}: {a!r} vs {b!r}")
    if mine.get("partial") and not ref.get("partial"):
        out.append(f"instances: partial ({mine.get('scored_instances')} of {mine.get('instances')} scored)")
    return out


_UNIT = re.compile(r"#doc\d+$")


def score_keys(keys: Iterable[Key]) -> set[Key]:
    """Keys an instance score line may carry: every manifest instance, and for document-level units
    (``<id>#doc<k>``, scored as one line under ``<id>``) the parent instance too."""
    out = set()
    for ds, run, iid in keys:
        out.add((ds, run, iid))
        out.add((ds, run, _UNIT.sub("", iid)))
    return out


def check_scores_against_run(score_dir: Path, summary: Any, instances: Iterable[Any]) -> None:
    """``scores/<slug>/`` of a run folder with its manifest: every instance line must be one the
    manifest lists (an unknown line is refused, not averaged in), and the summary's protocol must
    be the one run.json and the manifest give (an edited protocol would dodge the comparisons)."""
    from seam_repro.manifest.format import load_manifest

    run_dir = Path(score_dir).parent.parent
    mpath = run_dir / RUN_MANIFEST
    if not mpath.is_file():
        return
    tm = trusted(load_manifest(mpath), str(mpath))
    inst_path = Path(score_dir) / "instance_scores.jsonl"
    if tm.frozen:
        known = score_keys(tm.expected)
        for n, it in enumerate(instances, start=1):
            if (it.dataset, it.run, it.instance_id) not in known:
                raise InputError(inst_path, f"{it.dataset} run {it.run} instance {it.instance_id} is not in {mpath} "
                                 "(expected only the manifest's instances)", f"instance {n}")
    stated = summary.get("protocol") if isinstance(summary, dict) else None
    run_json_path = run_dir / "run.json"
    if not isinstance(stated, dict) or not run_json_path.is_file():
        return
    run_json = read_json(run_json_path, what="run.json")
    if not isinstance(run_json.get("models"), dict):
        raise InputError(run_json_path, "expected an object {model_slug: {...}}", field="models")
    n_scored = stated.get("scored_instances")
    actual = run_protocol(tm, run_json, Path(score_dir).name, n_scored if isinstance(n_scored, int) else 0)
    for name in (*PROTOCOL_FIELDS, "generation"):
        if stated.get(name) != actual.get(name):
            raise InputError(Path(score_dir) / "summary.json", f"is {stated.get(name)!r} but run.json and {mpath} "
                             f"give {actual.get(name)!r}", field=f"protocol.{name}")


# --- seeds/ -----------------------------------------------------------------------------------------
def seeds_dirs() -> list[Path]:
    """Where ``seeds/`` is looked for: ``$SEAM_REPRO_SEEDS``, the checkout's ``seeds/``, ``./seeds``."""
    import os

    env = os.environ.get("SEAM_REPRO_SEEDS")
    cands = ([Path(env)] if env else []) + [SEEDS_DIR, Path.cwd() / "seeds"]
    return [p for p in dict.fromkeys(c.resolve() for c in cands) if p.is_dir()]


def shipped_seeds(seeds_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """``seeds/<name>.json`` records by manifest digest (empty when no seeds/ folder is found)."""
    out: dict[str, dict[str, Any]] = {}
    for root in ([seeds_dir] if seeds_dir is not None else seeds_dirs()[:1]):
        for p in sorted(root.glob("*.json")):
            rec = read_json(p, what="seeds file")
            if isinstance(rec.get("manifest_digest"), str):
                out[rec["manifest_digest"]] = {**rec, "_path": str(p)}
    return out


def seeds_view(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a bundle carries of its manifest, in the shape of ``seeds/`` (less the file name)."""
    from seam_repro.manifest.seeds import seeds_record

    rec = seeds_record(manifest, "")
    rec.pop("manifest")
    return rec


def check_bundle_seeds(path: object, bundle: dict[str, Any], seeds: dict[str, dict[str, Any]]) -> None:
    """A bundle of a shipped manifest must carry exactly its seeds and prompt digests, and score only
    its instances; the bundle digest alone cannot catch a forged field sealed with a new digest."""
    ship = seeds.get(bundle.get("manifest_digest", ""))
    if ship is None:
        return
    src = ship["_path"]
    if bundle.get("prompt_digest") != ship["prompt_digest"]:
        raise InputError(path, f"is {bundle.get('prompt_digest')} but {src} has {ship['prompt_digest']} for manifest "
                         f"{ship['manifest_digest'][:16]}…", field="prompt_digest")
    carried = bundle.get("seeds")
    want = {k: v for k, v in ship.items() if k not in ("manifest", "_path")}
    if carried != want:
        raise InputError(path, f"differs from {src} (expected the shipped manifest's seeds and per-run prompt "
                         "digests)", field="seeds")
    known = score_keys((r["dataset"], r["run"], i) for r in ship["runs"] for i in r["gen_seeds"])
    for name, ds in (bundle.get("datasets") or {}).items():
        for i, it in enumerate(ds.get("instances") or []):
            if (it.get("dataset"), it.get("run"), it.get("instance_id")) not in known:
                raise InputError(path, f"instance {it.get('instance_id')!r} of run {it.get('run')} is not in {src}",
                                 record=f"datasets.{name}.instances[{i}]", field="instance_id")
