"""Stage *manifest*: freeze every choice and hash of a sampled benchmark into one JSON file.

Format (``data/manifest.schema.json``, ``schema_version`` 2): profile, config (the protocol),
sources (sha256 of every prompt and data file read), and per (dataset, run) the paraphrase, demos,
document order, instance ids, mention-id maps, generation seeds and per-instance prompt/target
sha256, plus a digest over all prompt hashes. That is the *sealed* content: ``digest`` = sha256 of
its canonical JSON. Everything that depends on where and how a manifest was made (kit version,
command line, host, the paths of data and prompt files relative to the manifest, the prompt
store) lives in the unsealed ``provenance`` object, so two independent freezes of the same inputs
give the same digest in any folder. The file is written with sorted keys and a fixed indent.
"""

from __future__ import annotations

import gzip
import json
import platform
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seam_repro import __version__
from seam_repro.config import SeamConfig, parse_config
from seam_repro.errors import InputError, ManifestError, SeamReproError
from seam_repro.files import atomic_write_bytes, atomic_write_text, iter_jsonl, read_json
from seam_repro.hashing import canonical_json, digest_of_hashes, sha256_bytes, sha256_json, sha256_text
from seam_repro.instances import Instance
from seam_repro.render import few_shots, render_instance
from seam_repro.render.context import RunContext
from seam_repro.sample import RunChoices
from seam_repro.sourcing import Sources

SCHEMA_VERSION = 2
UNSEALED = ("digest", "provenance")
"""Top-level keys outside the sealed content: the digest itself and the where/when/how record."""
SCHEMA_PATH = Path(__file__).parent / "data" / "manifest.schema.json"


def _run_context(run: dict[str, Any], profile: str, prompt_file: dict[str, Any], suite: str) -> RunContext:
    return RunContext(
        dataset=run["dataset"], profile=profile, prompt_file=prompt_file,
        paraphrase_index=run["paraphrase_index"], demo_indices=tuple(run["demo_indices"]),
        max_num_docs=run["max_num_docs"], doc_order=tuple(run["doc_order"]), suite=suite,
    )


def choices_to_run(choice: RunChoices) -> dict[str, Any]:
    """The recorded form of one (dataset, run) without hashes (filled by rendering)."""
    return {
        "dataset": choice.dataset, "run": choice.run, "split": choice.split,
        "sample_seed": choice.sample_seed, "paraphrase_index": choice.paraphrase_index,
        "demo_indices": list(choice.demo_indices), "max_num_docs": choice.max_num_docs,
        "doc_order": list(choice.doc_order),
        "instances": [
            {"id": iid, "gen_seed": choice.gen_seeds[iid],
             **({"mention_ids": list(choice.mention_ids[iid])} if iid in choice.mention_ids else {})}
            for iid in choice.instance_ids
        ],
    }


@dataclass(frozen=True)
class Rendered:
    """One rendered instance: the prompt record of docs/ARCHITECTURE.md, as a dict."""

    record: dict[str, Any]


def iter_rendered(runs: list[dict[str, Any]], profile: str, sources: Sources,
                  suite: str = "seam", where: str = "manifest",
                  missing: list[tuple[str, int, str, str]] | None = None,
                  changed: frozenset[str] = frozenset()) -> Iterator[dict[str, Any]]:
    """Render every recorded instance from the recorded choices (never from a random generator).

    An instance the data no longer holds (or whose recorded choices no longer fit it) is an error,
    unless its dataset is in ``changed`` (its data or prompt file differs from the sealed hash) and
    ``missing`` is given: then ``(dataset, run, instance_id, reason)`` is appended to ``missing``
    and rendering goes on (``verify``). With unchanged sources it is the manifest that is wrong."""
    from seam_repro.sample import check_instance_choices, check_run_choices
    from seam_repro.suite import load_suite

    specs = load_suite(suite)
    index: dict[tuple[str, str], dict[str, Instance]] = {}
    for run in runs:
        name, split = run["dataset"], run["split"]
        if (name, split) not in index:
            index[(name, split)] = {inst.instance_id: inst for inst in sources.data[name].split(split)}
        by_id = index[(name, split)]
        try:
            check_run_choices(run, sources.prompt_files[name], specs.spec(name).sampling.demo_key, where)
            ctx = _run_context(run, profile, sources.prompt_files[name], suite)
            demos = few_shots(ctx)
        except SeamReproError as exc:
            if missing is None or name not in changed:
                raise
            missing += [(name, run["run"], rec["id"], f"run choices no longer fit the data ({exc})")
                        for rec in run["instances"]]
            continue
        for rec in run["instances"]:
            inst = by_id.get(rec["id"])
            if inst is None and missing is not None and name in changed:
                missing.append((name, run["run"], rec["id"], f"not in split '{split}' of the data given"))
                continue
            if inst is None:
                raise ManifestError(f"{name} run {run['run']}: instance '{rec['id']}' is not in split "
                                    f"'{split}' of the data given")
            mention_ids = rec.get("mention_ids")
            try:
                check_instance_choices(rec, inst, specs.spec(name), where)
                prompt, target = render_instance(inst, ctx, demos, mention_ids)
            except SeamReproError as exc:
                if missing is None or name not in changed:
                    raise
                missing.append((name, run["run"], rec["id"], f"recorded choices no longer fit the data ({exc})"))
                continue
            spec = specs.spec(name)
            record = {
                "dataset": name, "task": spec.task, "run": run["run"], "split": split,
                "instance_id": rec["id"], "prompt": prompt, "prompt_sha256": sha256_text(prompt),
                "target": target, "target_sha256": sha256_json(target), "gen_seed": rec["gen_seed"],
            }
            if profile in spec.metrics:  # the suite's metric for this profile; scoring dispatches on it
                record["metric"] = spec.metrics[profile]
            if inst.answer_aliases:
                record["answer_aliases"] = list(inst.answer_aliases)
            if mention_ids is not None:
                record["mention_ids"] = sorted(mention_ids)
            yield record


def content_config(config: dict[str, Any]) -> dict[str, Any]:
    """The protocol part of a config's JSON form: dataset paths are where, not what, so they go to
    provenance."""
    return {**config, "datasets": [{k: v for k, v in d.items() if k != "path"} for d in config["datasets"]]}


def split_sources(sources_json: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``Sources.as_json()`` -> (sealed hashes, provenance paths)."""
    sealed = {
        "prompts": {n: {k: v for k, v in e.items() if k != "path"} for n, e in sources_json["prompts"].items()},
        "data": {n: {k: v for k, v in e.items() if k != "path"} for n, e in sources_json["data"].items()},
    }
    paths = {kind: {n: e.get("path") for n, e in sources_json[kind].items()} for kind in ("prompts", "data")}
    return sealed, paths


def provenance(command: str | None, paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """Unsealed record of how and where a manifest was written (never part of its digest). No clock
    time is recorded, so re-running the same command in the same place rewrites the same bytes."""
    return {"kit_version": __version__, "command": command or " ".join(["seam-repro", *sys.argv[1:]]),
            "host": platform.node(), "paths": paths, **{k: v for k, v in extra.items() if v is not None}}


def build_manifest(cfg: SeamConfig, profile: str, choices: list[RunChoices], sources: Sources,
                   command: str | None = None, progress: bool = False, relative_to: Path | None = None,
                   frozen_from: str | None = None, config_json: dict[str, Any] | None = None
                   ) -> tuple[dict[str, Any], list[dict]]:
    """Render every choice and return (sealed manifest, prompt records).

    ``relative_to``: folder the recorded data/prompt paths are made relative to (the manifest's
    folder), so the repository can move; they are provenance, not content. ``config_json``: the
    sealed config to keep (``freeze`` keeps the unfrozen manifest's, so the protocol digest of a
    freeze equals that of its unfrozen manifest).
    """
    runs = [choices_to_run(c) for c in choices]
    records = list(_progress(iter_rendered(runs, profile, sources, cfg.suite), sum(len(r["instances"]) for r in runs),
                             progress))
    by_key = {(r["dataset"], r["run"], r["instance_id"]): r for r in records}
    for run in runs:
        for rec in run["instances"]:
            rendered = by_key[(run["dataset"], run["run"], rec["id"])]
            rec["prompt_sha256"] = rendered["prompt_sha256"]
            rec["target_sha256"] = rendered["target_sha256"]
        run["prompt_digest"] = digest_of_hashes(r["prompt_sha256"] for r in run["instances"])
    sealed_sources, paths = split_sources(sources.as_json(relative_to=relative_to))
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "profile": profile,
        "frozen": True,
        "config": config_json if config_json is not None else content_config(cfg.as_json()),
        "sources": sealed_sources,
        "runs": runs,
        "prompt_digest": digest_of_hashes(r["prompt_sha256"] for r in records),
        "provenance": provenance(command, paths, frozen_from=frozen_from),
    }
    return seal(manifest), records


def unfrozen_manifest(cfg: SeamConfig, profile: str, sources_lock: dict[str, Any]) -> dict[str, Any]:
    """A manifest with the protocol and pins but no choices yet (filled by ``freeze``).

    ``sources_lock``: ``{"prompts": {name: {"path", "sha256"?, "url"?}}, "data": {name: {"path", "files"}}}``.
    """
    sealed_sources, paths = split_sources(sources_lock)
    manifest = {
        "schema_version": SCHEMA_VERSION, "profile": profile, "frozen": False,
        "config": content_config(cfg.as_json()), "sources": sealed_sources, "runs": [], "prompt_digest": None,
        "provenance": provenance(None, paths),
    }
    return seal(manifest)


def sealed_body(manifest: dict[str, Any]) -> dict[str, Any]:
    """The content the digest covers: everything but ``digest`` and ``provenance``."""
    return {k: v for k, v in manifest.items() if k not in UNSEALED}


def manifest_digest(manifest: dict[str, Any]) -> str:
    return sha256_bytes(canonical_json(sealed_body(manifest)))


def protocol_digest(manifest: dict[str, Any]) -> str:
    """Digest of the protocol alone (profile, config, pinned prompt-file hashes): equal for an
    unfrozen manifest and every freeze of it, so a frozen run can be matched to e.g. the paper's
    protocol whatever data folder it was frozen from."""
    prompts = {n: e.get("sha256") for n, e in (manifest.get("sources") or {}).get("prompts", {}).items()}
    return sha256_json({"schema_version": manifest["schema_version"], "profile": manifest["profile"],
                        "config": manifest["config"], "prompts": prompts})


def seal(manifest: dict[str, Any]) -> dict[str, Any]:
    """Set ``digest`` from the sealed content; provenance is carried along unsealed."""
    body = {k: v for k, v in manifest.items() if k != "digest"}
    return {**body, "digest": manifest_digest(body)}


def dump_manifest(manifest: dict[str, Any]) -> str:
    return json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def write_manifest(manifest: dict[str, Any], path: str | Path) -> None:
    """Atomic write (temp file + fsync + rename): a crash never leaves a half-written manifest."""
    atomic_write_text(path, dump_manifest(manifest))


def write_prompt_store(records: list[dict[str, Any]], path: str | Path) -> str:
    """Gzipped JSONL of prompt records (deterministic bytes: mtime 0); returns its sha256."""
    lines = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in records)
    data = gzip.compress(lines.encode("utf-8"), mtime=0)
    atomic_write_bytes(path, data)
    return sha256_bytes(data)


def read_prompt_store(path: str | Path) -> dict[tuple[str, int, str], str]:
    """Recorded prompt texts; a store that is not gzip, is cut short or has a malformed line is an
    InputError naming the file and line (never a bare EOFError)."""
    out: dict[tuple[str, int, str], str] = {}
    for n, r in iter_jsonl(path, what="prompt store"):
        key, prompt = (r.get("dataset"), r.get("run"), r.get("instance_id")), r.get("prompt")
        if not (isinstance(key[0], str) and isinstance(key[1], int) and isinstance(key[2], str)
                and isinstance(prompt, str)):
            raise InputError(path, "expected dataset, run, instance_id and prompt", record=f"line {n}")
        out[key] = prompt  # type: ignore[index]
    return out


def _schema() -> dict[str, Any]:
    return read_json(SCHEMA_PATH)


def validate_manifest(manifest: Any, where: str) -> None:
    """Schema, digest over the sealed content, and unique instance keys; one-line errors."""
    import jsonschema

    if isinstance(manifest, dict) and manifest.get("schema_version") == 1:
        raise ManifestError(f"{where}: field 'schema_version': 1 is the old layout whose digest also covered "
                            "paths and the command line; re-create it with `seam-repro sample` or `seam-repro "
                            f"freeze` (schema_version {SCHEMA_VERSION})")
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(manifest), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        field = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise ManifestError(f"{where}: field '{field}': {err.message} (schema_version {SCHEMA_VERSION})")
    actual = manifest_digest(manifest)
    if actual != manifest["digest"]:
        raise ManifestError(f"{where}: field 'digest': recorded {manifest['digest']} but content hashes to "
                            f"{actual}; the manifest was edited after it was sealed")
    seen: set[tuple[str, int, str]] = set()
    for run in manifest["runs"]:
        for rec in run["instances"]:
            key = (run["dataset"], run["run"], rec["id"])
            if key in seen:
                raise ManifestError(f"{where}: duplicate instance {key} in runs")
            seen.add(key)


def load_manifest(path: str | Path) -> dict[str, Any]:
    """Read, schema-check and digest-check a manifest; never modifies it."""
    path = Path(path)
    manifest = read_json(path, what="manifest")
    validate_manifest(manifest, str(path))
    manifest_config(manifest, where=str(path))  # the same semantic checks `sample` applied
    return manifest


def recorded_paths(manifest: dict[str, Any]) -> dict[str, dict[str, str | None]]:
    """Data and prompt-file paths from the unsealed provenance (hints where to look; hashes decide)."""
    paths = (manifest.get("provenance") or {}).get("paths") or {}
    return {"data": dict(paths.get("data") or {}), "prompts": dict(paths.get("prompts") or {})}


def recorded_sources(manifest: dict[str, Any]) -> dict[str, Any]:
    """Sealed hashes joined with provenance paths, in the form ``sourcing.load_sources`` reads."""
    paths = recorded_paths(manifest)
    src = manifest["sources"]
    return {kind: {n: {**e, "path": paths[kind].get(n)} for n, e in src.get(kind, {}).items()}
            for kind in ("prompts", "data")}


def manifest_config(manifest: dict[str, Any], where: str = "manifest config") -> SeamConfig:
    """Rebuild the validated config recorded in a manifest."""
    c = manifest["config"]
    raw = {
        "random_seed": c["random_seed"], "num_different_runs": c["num_different_runs"],
        "num_demonstrations": c["num_demonstrations"], "generation": c["generation"], "models": c["models"],
        "suite": c.get("suite", "seam"),
        "datasets": [{"name": d["name"], "split_name": d["split_name"],
                      "path": recorded_paths(manifest)["data"].get(d["name"])} for d in c["datasets"]],
    }
    if c["max_instances_key"]:
        raw[c["max_instances_key"]] = c["max_instances"]
    cfg = parse_config(raw, manifest["profile"], where=f"{where}: config" if where != "manifest config" else where)
    return cfg


def render_records(manifest: dict[str, Any], data_dir: Any = None, prompts_dir: Any = None,
                   base: Any = None, allow_unfrozen: bool = False) -> list[dict[str, Any]]:
    """Prompt records of a frozen manifest, rendered from its recorded choices.

    An unfrozen manifest has no recorded choices; with ``allow_unfrozen`` they are drawn now from
    its config (same code as ``freeze``), which gives a usable but uncitable run.
    """
    from seam_repro.sample import draw_all
    from seam_repro.sourcing import load_sources

    if not manifest["frozen"] and not allow_unfrozen:
        raise ManifestError("manifest is not frozen: run `seam-repro freeze MANIFEST` first")
    cfg = manifest_config(manifest)
    base_dir = Path(base).parent if base is not None else Path.cwd()
    sources = load_sources(cfg, manifest["profile"], data_dir=data_dir, prompts_dir=prompts_dir,
                           base_dir=base_dir, recorded=recorded_sources(manifest))
    runs = manifest["runs"]
    if not manifest["frozen"]:
        runs = [choices_to_run(c) for c in draw_all(cfg, manifest["profile"], sources.data, sources.prompt_files)]
    return list(iter_rendered(runs, manifest["profile"], sources, cfg.suite,
                              where=str(base) if base is not None else "manifest"))


def _progress(it: Iterator[dict[str, Any]], total: int, enabled: bool) -> Iterator[dict[str, Any]]:
    if not enabled:
        return it
    from tqdm import tqdm

    return iter(tqdm(it, total=total, desc="render", unit="prompt", file=sys.stderr))


def seeds_record(manifest: dict[str, Any], name: str) -> dict[str, Any]:
    """The frozen seeds and prompt digests of a shipped manifest (``seeds/<name>.json``).

    Submissions are checked against these: a bundle's manifest and prompt digests must equal them.
    """
    return {
        "manifest": name,
        "manifest_digest": manifest["digest"],
        "profile": manifest["profile"],
        "random_seed": manifest["config"]["random_seed"],
        "prompt_digest": manifest["prompt_digest"],
        "runs": [
            {"dataset": r["dataset"], "run": r["run"], "sample_seed": r.get("sample_seed"),
             "prompt_digest": r["prompt_digest"],
             "gen_seeds": {i["id"]: i["gen_seed"] for i in r["instances"]}}
            for r in manifest["runs"]
        ],
    }
