"""Stage *manifest*, format: the sealed JSON file that freezes every choice and hash of a benchmark.

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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seam_repro import __version__
from seam_repro.config import SeamConfig, parse_config
from seam_repro.errors import InputError, ManifestError, version_mismatch
from seam_repro.files.atomic import atomic_write_bytes, atomic_write_text
from seam_repro.files.reading import is_a, iter_jsonl, read_json
from seam_repro.hashing import canonical_json, digest_of_hashes, sha256_bytes, sha256_json

if TYPE_CHECKING:  # `prompts` reads a manifest and draws nothing: seam_repro.sample is not needed
    from seam_repro.instances import Instance
    from seam_repro.sample import RunChoices
    from seam_repro.specs import DatasetSpec

SCHEMA_VERSION = 2
UNSEALED = ("digest", "provenance")
"""Top-level keys outside the sealed content: the digest itself and the where/when/how record."""
SCHEMA_PATH = Path(__file__).parents[1] / "data" / "manifest.schema.json"


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


def content_config(config: dict[str, Any]) -> dict[str, Any]:
    """The protocol part of a config's JSON form: dataset paths are where, not what, so they go to
    provenance."""
    return {**config, "datasets": [{k: v for k, v in d.items() if k != "path"} for d in config["datasets"]]}


def split_sources(sources_json: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``Sources.as_json()`` -> (sealed hashes, provenance paths)."""
    sealed = {kind: {n: {k: v for k, v in e.items() if k != "path"} for n, e in sources_json[kind].items()}
              for kind in ("prompts", "data")}
    paths = {kind: {n: e.get("path") for n, e in sources_json[kind].items()} for kind in ("prompts", "data")}
    return sealed, paths


def provenance(command: str | None, paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """Unsealed record of how and where a manifest was written (never part of its digest). No clock
    time is recorded, so re-running the same command in the same place rewrites the same bytes."""
    return {"kit_version": __version__, "command": command or " ".join(["seam-repro", *sys.argv[1:]]),
            "host": platform.node(), "paths": paths, **{k: v for k, v in extra.items() if v is not None}}


def unfrozen_manifest(cfg: SeamConfig, profile: str, sources_lock: dict[str, Any]) -> dict[str, Any]:
    """A manifest with the protocol and pins but no choices yet (filled by ``freeze``).

    ``sources_lock``: ``{"prompts": {name: {"path", "sha256"?, "url"?}}, "data": {name: {"path", "files"}}}``.
    """
    sealed_sources, paths = split_sources(sources_lock)
    return seal({
        "schema_version": SCHEMA_VERSION, "profile": profile, "frozen": False,
        "config": content_config(cfg.as_json()), "sources": sealed_sources, "runs": [], "prompt_digest": None,
        "provenance": provenance(None, paths),
    })


def manifest_digest(manifest: dict[str, Any]) -> str:
    return sha256_bytes(canonical_json({k: v for k, v in manifest.items() if k not in UNSEALED}))


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
    """The file's text: sorted keys, one-space indent, UTF-8 text, and a newline."""
    return json.dumps(manifest, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def write_manifest(manifest: dict[str, Any], path: str | Path) -> None:
    """Atomic write (temp file + fsync + rename): a crash never leaves a half-written manifest."""
    atomic_write_text(path, dump_manifest(manifest))


def write_prompt_store(lines: bytes, path: str | Path) -> str:
    """Gzip the prompt records' JSONL (``manifest.prompts.records_jsonl``: the bytes ``prompts``
    writes) with deterministic bytes (mtime 0); returns its sha256."""
    data = gzip.compress(lines, mtime=0)
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


def check_prompt_digests(manifest: dict[str, Any], where: str) -> None:
    """Recompute the per-run and overall ``prompt_digest`` from the instances' ``prompt_sha256``: the
    seal alone cannot catch a forged digest sealed anew, and bundles and seeds/ carry the digest as
    the prompts' identity (``verify`` lists the drift instead)."""
    if not manifest["frozen"]:
        return
    runs = manifest["runs"]
    hashes = [[rec["prompt_sha256"] for rec in run["instances"]] for run in runs]
    checks = [(f"runs/{i}/prompt_digest", run, hashes[i], "the run's instance") for i, run in enumerate(runs)]
    checks.append(("prompt_digest", manifest, [h for run_hashes in hashes for h in run_hashes], "the instances'"))
    for field, holder, values, whose in checks:
        want = digest_of_hashes(values)
        if holder["prompt_digest"] != want:
            raise ManifestError(f"{where}: field '{field}': recorded {holder['prompt_digest']} but {whose} "
                                f"prompt_sha256 values digest to {want}; the manifest was forged or damaged "
                                "(re-create it with `seam-repro freeze`)")


def load_manifest(path: str | Path) -> dict[str, Any]:
    """Read a manifest and check its schema, its digest over the sealed content and that its instance
    keys are unique (one-line errors), never modifying it (``trust.trusted`` parses its config)."""
    from seam_repro.schema_check import conforms

    path = Path(path)
    where, manifest = str(path), read_json(path, what="manifest")
    if isinstance(manifest, dict) and manifest.get("schema_version") != SCHEMA_VERSION:
        prov = manifest.get("provenance")
        old = " (the old layout whose digest also covered paths and the command line)" \
            if manifest.get("schema_version") == 1 else ""
        raise ManifestError(f"{where}: field 'schema_version': " + version_mismatch(
            "schema_version", manifest.get("schema_version"), SCHEMA_VERSION,
            prov.get("kit_version") if isinstance(prov, dict) else None,
            f"re-create it{old} with `seam-repro sample` or `seam-repro freeze`"))
    if not conforms(manifest, SCHEMA_PATH):  # fast path; jsonschema names what is wrong
        import jsonschema

        validator = jsonschema.Draft202012Validator(read_json(SCHEMA_PATH))
        err = min(validator.iter_errors(manifest), key=lambda e: list(e.absolute_path), default=None)
        if err is not None:
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
    return manifest


def recorded_paths(manifest: dict[str, Any]) -> dict[str, dict[str, str | None]]:
    """Data and prompt-file paths from the unsealed provenance (hints where to look; hashes decide)."""
    paths = (manifest.get("provenance") or {}).get("paths") or {}
    return {"data": dict(paths.get("data") or {}), "prompts": dict(paths.get("prompts") or {})}


def recorded_sources(manifest: dict[str, Any]) -> dict[str, Any]:
    """Sealed hashes joined with provenance paths, in the form ``sources.resolve.load_sources`` reads."""
    paths = recorded_paths(manifest)
    src = manifest["sources"]
    return {kind: {n: {**e, "path": paths[kind].get(n)} for n, e in src.get(kind, {}).items()}
            for kind in ("prompts", "data")}


def manifest_config(manifest: dict[str, Any], where: str) -> SeamConfig:
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
    if "design" in c:
        raw["design"] = c["design"]
    return parse_config(raw, manifest["profile"], where=f"{where}: config")


# --- recorded choices: checked before rendering (here, not in sample.py: only `sample` draws) -------
MAX_DOC_SLOTS = 10_000
"""More document slots than any dataset has documents per instance (SEAM's largest: 20 in MuSiQue)."""


def check_run_choices(run: dict[str, Any], prompt_file: dict[str, Any], demo_key: str, where: str) -> None:
    """Refuse recorded choices that cannot come from ``sample.draw_all`` for this prompt file: an index
    past the paraphrase or demonstration pool, a document order that is not a permutation of the
    slots, or numbers of the wrong type (``1e30`` is a float, not an index). Shared by every command
    that renders a manifest, so what ``sample`` writes is exactly what the loaders accept."""
    field = f"runs[{run.get('dataset')} run {run.get('run')}]"
    n_prompts = len(prompt_file.get("prompts", []))
    pool = prompt_file.get(demo_key, [])
    p = run.get("paraphrase_index")
    if not is_a(p, int) or not -1 <= p < n_prompts:
        raise InputError(where, f"expected an integer in -1..{n_prompts - 1} (the prompt file has {n_prompts} "
                         f"paraphrases), got {p!r}", field=f"{field}.paraphrase_index")
    demos = run.get("demo_indices")
    if (not isinstance(demos, list) or not all(is_a(d, int) and 0 <= d < len(pool) for d in demos)
            or len(set(demos)) != len(demos)):
        raise InputError(where, f"expected distinct integers in 0..{len(pool) - 1} (the prompt file has "
                         f"{len(pool)} demonstrations), got {str(demos)[:80]}", field=f"{field}.demo_indices")
    m, order = run.get("max_num_docs"), run.get("doc_order")
    if not is_a(m, int) or not 0 <= m <= MAX_DOC_SLOTS:
        raise InputError(where, f"expected an integer in 0..{MAX_DOC_SLOTS}, got {str(m)[:40]}",
                         field=f"{field}.max_num_docs")
    if not isinstance(order, list) or len(order) != m or not all(is_a(d, int) for d in order) \
            or sorted(order) != list(range(m)):
        raise InputError(where, f"expected a permutation of 0..{m - 1} (max_num_docs {m}), got {str(order)[:80]}",
                         field=f"{field}.doc_order")


def check_instance_choices(rec: dict[str, Any], inst: Instance, spec: DatasetSpec, where: str) -> None:
    """A coreference instance needs one recorded mention id per gold mention, all distinct integers."""
    ids, n = rec.get("mention_ids"), len(inst.mentions)
    if spec.sampling.mention_population is None or (ids is None and n == 0):
        return
    if (not isinstance(ids, list) or len(ids) != n or not all(is_a(i, int) for i in ids)
            or len(set(ids)) != len(ids)):
        raise InputError(where, f"expected {n} distinct integer mention ids (one per gold mention), got "
                         f"{str(ids)[:80]}", record=rec.get("id"), field="mention_ids")
