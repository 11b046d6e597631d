"""The trust chain: every stage checks what it consumes against the sealed manifest.

    manifest (digest over content) ─replay─▶ rendered prompts hash to the manifest, else refused
        └─ copied to RUN_DIR/manifest.json (same digest as run.json)
    RUN_DIR/prompts.jsonl ─score─▶ every record and gold target hashes to the manifest; every
        (dataset, run, instance) the manifest lists but the run lacks is reported as unscored
    predictions ─score─▶ predictions digest in summary.json ─submit─▶ store re-validated, scores
        re-derived and compared, bundle sealed with a digest
    bundle ─report/diff─▶ bundle digest, and for a shipped manifest its seeds and prompt digests
        against ``seeds/``; protocol fields compared before any two results are ranked or diffed

Here: the manifest loaded and checked once (``load_trusted``), rendered prompts, protocol
comparison, seeds/ and bundles. What reads a run folder (its manifest copy, prompts.jsonl,
predictions digest, scores against run.json) is ``run/store.py``, the one module that touches a
run folder's files, using the checks here. Each refusal is one line naming the file, the record
and what was expected.
"""

from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from seam_repro.config import SeamConfig
from seam_repro.errors import InputError, ManifestError
from seam_repro.files.reading import read_json
from seam_repro.hashing import sha256_json, sha256_text

Key = tuple[str, int, str]
MAX_LISTED = 20
PROTOCOL_FIELDS = ("manifest_digest", "protocol_digest", "profile", "runs", "instances", "limit", "temperature",
                   "max_new_tokens", "prompt_path")
"""Fields that must agree before two results are compared (``protocol_differences``)."""


class TrustedManifest(NamedTuple):
    """A manifest read and checked once, with its parsed config and per-instance expectations."""

    path: str
    manifest: dict[str, Any]
    config: SeamConfig
    expected: dict[Key, dict[str, Any]]

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


def trusted(manifest: dict[str, Any], path: str, *, check_digests: bool = True) -> TrustedManifest:
    """Wrap a validated manifest dict (``format.load_manifest``), its config parsed (once) and its prompt
    digests recomputed from its instances (``check_digests=False``: ``verify``, which reports drift)."""
    from seam_repro.manifest.format import check_prompt_digests, manifest_config

    config = manifest_config(manifest, where=path)  # the same semantic checks `sample` applied
    if check_digests:
        check_prompt_digests(manifest, path)
    expected = {(r["dataset"], r["run"], i["id"]): i for r in manifest.get("runs", []) for i in r["instances"]}
    return TrustedManifest(path, manifest, config, expected)


def load_trusted(path: str | Path, *, allow_unfrozen: bool = False, purpose: str = "run",
                 check_digests: bool = True) -> TrustedManifest:
    """Read and check a manifest once; consumers pass the result along instead of re-reading.
    ``purpose`` names what an unfrozen manifest would make (a throwaway run, import, ...)."""
    from seam_repro.manifest.format import load_manifest

    tm = trusted(load_manifest(path), str(path), check_digests=check_digests)
    if not tm.frozen and not allow_unfrozen:
        raise ManifestError(f"{path}: field 'frozen': the manifest is not frozen; run `seam-repro freeze {path}` "
                            f"first or pass --allow-unfrozen for a throwaway {purpose}")
    return tm


def record_problems(tm: TrustedManifest, rec: dict[str, Any]) -> str | None:
    """Why a prompt record does not match the manifest (``None`` when it does)."""
    key = (rec["dataset"], rec["run"], rec["instance_id"])
    want = tm.expected.get(key)
    if want is None:
        return "not an instance of the manifest"
    got = sha256_text(rec["prompt"])
    if got != want["prompt_sha256"]:
        return f"prompt hashes to {got}, the manifest expects prompt_sha256 {want['prompt_sha256']}"
    target = rec.get("target")  # hashed as canonical JSON (as rendered), or as the text of a string target
    if "target" in rec and want["target_sha256"] not in (
            sha256_json(target), sha256_text(target) if isinstance(target, str) else None):
        return f"gold target hashes to {sha256_json(target)}, the manifest expects target_sha256 " \
               f"{want['target_sha256']}"
    if "gen_seed" in rec and rec["gen_seed"] != want["gen_seed"]:
        return f"gen_seed {rec['gen_seed']}, the manifest expects {want['gen_seed']}"
    return None


def check_rendered(tm: TrustedManifest, records: Iterable[dict[str, Any]]) -> None:
    """Refuse rendered prompt records that do not hash to the manifest (before any model is loaded),
    listing every drifting (dataset, run, instance) as ``verify`` does."""
    deque(iter_checked(tm, records), maxlen=0)


def iter_checked(tm: TrustedManifest, records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """``check_rendered`` as the records pass (replay spools them, never holding them all): each is
    yielded, and the refusal, listing every drift, is raised after the last."""
    if not tm.frozen:
        yield from records  # choices drawn now: nothing recorded to compare with (uncitable by construction)
        return
    bad, seen = [], set()
    for rec in records:
        key = (rec["dataset"], rec["run"], rec["instance_id"])
        seen.add(key)
        problem = record_problems(tm, rec)
        if problem:
            bad.append(f"{key[0]} run {key[1]} instance {key[2]}: {problem}")
        yield rec
    bad += [f"{k[0]} run {k[1]} instance {k[2]}: in the manifest but not rendered" for k in tm.expected
            if k not in seen]
    if bad:
        listed = "\n".join(f"  {b}" for b in bad[:MAX_LISTED])
        more = f"\n  … and {len(bad) - MAX_LISTED} more" if len(bad) > MAX_LISTED else ""
        raise ManifestError(f"{tm.path}: {len(bad)} rendered prompt(s) do not match the manifest's hashes "
                            f"(expected every prompt/target to hash to its recorded value; run `seam-repro verify "
                            f"{tm.path}` for diffs); nothing was generated:\n{listed}{more}")


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
        "generation_overrides": gen.get("overrides") or {},
        "generation": {"backend": entry.get("backend_name"), "prompt_path": gen.get("prompt_path"),
                       "max_new_tokens": gen.get("max_new_tokens"), "temperature": gen.get("temperature"),
                       "do_sample": gen.get("do_sample"), "top_p": gen.get("top_p"),
                       "truncation": gen.get("truncation"), "dtype": backend.get("dtype"),
                       "batch_size": entry.get("batch_size"), "limit": run_json.get("limit"),
                       "shard": run_json.get("shard"), "selection": run_json.get("selection"),
                       # --model-args that can change the text (all of them: environment.model_args)
                       "model_args": gen.get("model_args") or {},
                       # the generation layout: batch-invariant or not (run/invariance.py)
                       "kernels": gen.get("kernels")},
    }


def _overrides(protocol: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in (protocol.get("generation_overrides") or {}).items()) or "none"


def protocol_differences(mine: dict[str, Any] | None, ref: dict[str, Any] | None) -> list[str]:
    """``field: mine vs ref`` for each protocol field both sides state and that differs (``instances``
    also counts a partial run); a side with no protocol at all is one difference."""
    if ref is None:
        return []
    if mine is None:
        return ["protocol: unknown (scored by an older kit or by hand; re-run `seam-repro score`)"]
    out = [f"{name}: {mine.get(name)!r} vs {ref[name]!r}" for name in PROTOCOL_FIELDS
           if name in ref and mine.get(name) != ref[name]]
    if (mine.get("generation_overrides") or {}) != (ref.get("generation_overrides") or {}):
        out.append(f"generation overrides: {_overrides(mine)} vs {_overrides(ref)} (replay --max-new-tokens/--temperature/"
                   "--top-p leave the manifest's protocol)")
    if mine.get("partial") and not ref.get("partial"):
        out.append(f"instances: partial ({mine.get('scored_instances')} of {mine.get('instances')} scored)")
    return out


_UNIT = re.compile(r"#doc\d+$")


def score_keys(keys: Iterable[Key]) -> set[Key]:
    """Keys an instance score line may carry: every manifest instance, and for document-level units
    (``<id>#doc<k>``, scored as one line under ``<id>``) the parent instance too."""
    return {k for ds, run, iid in keys for k in ((ds, run, iid), (ds, run, _UNIT.sub("", iid)))}


# --- seeds/ -----------------------------------------------------------------------------------------
def seeds_read_dirs() -> list[Path]:
    """The seeds/ folder that bundle checks read (none when there is none): the first that exists of
    ``$SEAM_REPRO_SEEDS``, the seeds shipped in the package (``seam_repro/data/seeds``, which a
    clone's ``seeds/`` links to) and ``./seeds``. An input of ``report`` and ``diff``, guarded
    against their outputs."""
    from seam_repro.manifest.shipped import SEEDS_DIR

    env = os.environ.get("SEAM_REPRO_SEEDS")
    cands = ([Path(env)] if env else []) + [SEEDS_DIR, Path.cwd() / "seeds"]
    return [p for p in dict.fromkeys(c.resolve() for c in cands) if p.is_dir()][:1]


def shipped_seeds() -> dict[str, dict[str, Any]]:
    """``seeds/<name>.json`` records by manifest digest (empty when no seeds/ folder is found).

    Two files for one digest are refused unless they record the same seeds and digests (a copy
    under another name): which one checks a bundle must never depend on how the files sort."""
    out: dict[str, dict[str, Any]] = {}
    for p in (p for root in seeds_read_dirs() for p in sorted(root.glob("*.json"))):
        rec = read_json(p, what="seeds file")
        digest = rec.get("manifest_digest")
        if not isinstance(digest, str):
            continue
        first = out.get(digest)
        if first is not None and _seeds_content(first) != _seeds_content(rec):
            raise InputError(p, f"records manifest {digest[:16]}… like {first['_path']} but with other seeds or "
                             "prompt digests; keep one seeds file per manifest digest", field="manifest_digest")
        out.setdefault(digest, {**rec, "_path": str(p)})
    return out


def _seeds_content(rec: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in rec.items() if k not in ("manifest", "_path")}


def seeds_view(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a bundle carries of its manifest, in the shape of ``seeds/`` (less the file name)."""
    from seam_repro.manifest.seeds import seeds_record

    return _seeds_content(seeds_record(manifest, ""))


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
    if bundle.get("seeds") != _seeds_content(ship):
        raise InputError(path, f"differs from {src} (expected the shipped manifest's seeds and per-run prompt "
                         "digests)", field="seeds")
    known = score_keys((r["dataset"], r["run"], i) for r in ship["runs"] for i in r["gen_seeds"])
    for name, ds in (bundle.get("datasets") or {}).items():
        for i, it in enumerate(ds.get("instances") or []):
            if (it.get("dataset"), it.get("run"), it.get("instance_id")) not in known:
                raise InputError(path, f"instance {it.get('instance_id')!r} of run {it.get('run')} is not in {src}",
                                 record=f"datasets.{name}.instances[{i}]", field="instance_id")
