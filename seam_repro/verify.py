"""``seam-repro verify``: regenerate a manifest from its seed and compare every choice and hash.

Two independent checks: (1) the choices re-derived from the root seed equal the recorded ones
(the sampler did not drift); (2) prompts rendered from the recorded choices hash to the recorded
values (the renderer and the data did not drift). Nothing is written.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError, ManifestError
from seam_repro.hashing import digest_of_hashes
from seam_repro.manifest import (
    choices_to_run,
    iter_rendered,
    load_manifest,
    manifest_config,
    read_prompt_store,
)
from seam_repro.sample import draw_all
from seam_repro.sourcing import load_sources

CHOICE_FIELDS = ("split", "sample_seed", "paraphrase_index", "demo_indices", "max_num_docs", "doc_order")


@dataclass(frozen=True)
class Mismatch:
    dataset: str
    run: int
    instance_id: str | None
    what: str

    def __str__(self) -> str:
        where = f"{self.dataset} run {self.run}" + (f" instance {self.instance_id}" if self.instance_id else "")
        return f"{where}: {self.what}"


@dataclass
class VerifyReport:
    manifest: str
    n_runs: int = 0
    n_instances: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    first_diff: str | None = None

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def summary(self) -> str:
        if self.ok:
            return (f"OK {self.manifest}: {self.n_instances} prompts in {self.n_runs} (dataset, run) pairs "
                    "match their recorded hashes and re-derived choices")
        return f"FAILED {self.manifest}: {len(self.mismatches)} mismatches in {self.n_instances} prompts"


def _compare_choices(recorded: dict[str, Any], derived: dict[str, Any], out: list[Mismatch]) -> None:
    ds, run = recorded["dataset"], recorded["run"]
    for key in CHOICE_FIELDS:
        if recorded.get(key) != derived.get(key):
            out.append(Mismatch(ds, run, None, f"{key}: recorded {recorded.get(key)} re-derived {derived.get(key)}"))
    rec_ids = [r["id"] for r in recorded["instances"]]
    der_ids = [r["id"] for r in derived["instances"]]
    if rec_ids != der_ids:
        out.append(Mismatch(ds, run, None, f"instance ids differ (recorded {len(rec_ids)}, re-derived "
                                           f"{len(der_ids)}; first recorded {rec_ids[:3]}, re-derived {der_ids[:3]})"))
        return
    for rec, der in zip(recorded["instances"], derived["instances"], strict=True):
        for key in ("gen_seed", "mention_ids"):
            if rec.get(key) != der.get(key):
                out.append(Mismatch(ds, run, rec["id"], f"{key} differs from the re-derived value"))


def verify_manifest(path: str | Path, data_dir: Any = None, prompts_dir: Any = None) -> VerifyReport:
    path = Path(path)
    manifest = load_manifest(path)
    if not manifest["frozen"]:
        raise ManifestError(f"{path}: not frozen (no recorded choices); run `seam-repro freeze {path}`")
    report = VerifyReport(str(path))
    cfg = manifest_config(manifest)
    profile = manifest["profile"]
    sources = load_sources(cfg, profile, data_dir=data_dir, prompts_dir=prompts_dir, base_dir=path.parent,
                           recorded=manifest["sources"])
    derived = {(c.dataset, c.run): choices_to_run(c) for c in draw_all(cfg, profile, sources.data,
                                                                       sources.prompt_files)}
    runs = manifest["runs"]
    report.n_runs = len(runs)
    for run in runs:
        der = derived.get((run["dataset"], run["run"]))
        if der is None:
            report.mismatches.append(Mismatch(run["dataset"], run["run"], None, "not produced by the config"))
        else:
            _compare_choices(run, der, report.mismatches)
    if len(derived) != len(runs):
        report.mismatches.append(Mismatch("*", -1, None, f"config yields {len(derived)} runs, manifest has {len(runs)}"))
    recorded = {(r["dataset"], r["run"], i["id"]): i for r in runs for i in r["instances"]}
    store: dict[tuple[str, int, str], str] | str | None = None
    if manifest.get("prompt_store"):
        store_path = path.parent / manifest["prompt_store"]["path"]
        if store_path.exists():
            try:
                store = read_prompt_store(store_path)
            except InputError as exc:  # the hashes still decide; only the diff is lost
                store = f"(no diff: the prompt store is unreadable: {exc})"
    hashes = []
    for rec in iter_rendered(runs, profile, sources, cfg.suite, where=str(path)):
        report.n_instances += 1
        key = (rec["dataset"], rec["run"], rec["instance_id"])
        want = recorded[key]
        hashes.append(rec["prompt_sha256"])
        if rec["prompt_sha256"] != want["prompt_sha256"]:
            report.mismatches.append(Mismatch(key[0], key[1], key[2], "prompt_sha256 differs"))
            if report.first_diff is None:
                report.first_diff = _diff(store, key, rec["prompt"])
        if rec["target_sha256"] != want["target_sha256"]:
            report.mismatches.append(Mismatch(key[0], key[1], key[2], "target_sha256 differs"))
    if digest_of_hashes(hashes) != manifest["prompt_digest"] and not report.mismatches:
        report.mismatches.append(Mismatch("*", -1, None, "prompt_digest differs"))
    return report


def _diff(store: dict[tuple[str, int, str], str] | str | None, key: tuple[str, int, str], actual: str) -> str:
    if isinstance(store, str):
        return store
    if store is None or key not in store:
        return ("(no stored prompt text to diff against: the manifest has no prompt_store; "
                "re-run `seam-repro sample --store-prompts` on a trusted checkout to get one)")
    lines = difflib.unified_diff(store[key].splitlines(keepends=True), actual.splitlines(keepends=True),
                                 fromfile=f"recorded {key[0]} run {key[1]} {key[2]}", tofile="regenerated", n=2)
    return "".join(lines)
