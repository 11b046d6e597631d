"""``seam-repro verify``: regenerate a manifest from its seed and compare every choice and hash.

Three checks, all reported together (never only the first): (0) every data and prompt file read
hashes to the value sealed in the manifest; (1) the choices re-derived from the root seed equal the
recorded ones (the sampler did not drift); (2) prompts rendered from the recorded choices hash to the
recorded values (the renderer and the data did not drift). A changed data or prompt file does not
stop verification: everything that can still be rendered is rendered, so the report names every
(dataset, run, instance) the change affects, with a unified diff of the first. Nothing is written.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError, SeamReproError
from seam_repro.hashing import digest_of_hashes, sha256_text
from seam_repro.manifest.format import choices_to_run, read_prompt_store, recorded_sources
from seam_repro.manifest.prompts import iter_rendered_parts, joined
from seam_repro.manifest.trust import TrustedManifest
from seam_repro.sample import draw_all
from seam_repro.sources.resolve import Sources, load_sources

CHOICE_FIELDS = ("split", "sample_seed", "paraphrase_index", "demo_indices", "max_num_docs", "doc_order")


@dataclass(frozen=True)
class Mismatch:
    dataset: str
    run: int
    instance_id: str | None
    what: str

    def __str__(self) -> str:
        if self.run < 0:
            return f"{self.dataset}: {self.what}"
        return f"{self.dataset} run {self.run}{f' instance {self.instance_id}' if self.instance_id else ''}: {self.what}"


@dataclass
class VerifyReport:
    manifest: str
    n_runs: int = 0
    n_instances: int = 0
    sources: list[Mismatch] = field(default_factory=list)
    """Data or prompt files whose sha256 differs from the sealed value (run -1)."""
    mismatches: list[Mismatch] = field(default_factory=list)
    first_diff: str | None = None

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.sources

    @property
    def affected(self) -> list[tuple[str, int, str]]:
        """Every (dataset, run, instance) whose prompt, target or seed no longer matches."""
        return list(dict.fromkeys((m.dataset, m.run, m.instance_id) for m in self.mismatches
                                  if m.instance_id is not None))

    def summary(self) -> str:
        if self.ok:
            return (f"OK {self.manifest}: {self.n_instances} prompts in {self.n_runs} (dataset, run) pairs "
                    "match their recorded hashes and re-derived choices")
        parts = [f"{len(self.mismatches)} mismatches", f"{len(self.affected)} affected instances"]
        if self.sources:
            parts.insert(0, f"{len(self.sources)} changed source files")
        return f"FAILED {self.manifest}: {', '.join(parts)} in {self.n_instances} prompts"

    def to_json(self) -> dict[str, Any]:
        return {"manifest": self.manifest, "ok": self.ok, "n_runs": self.n_runs, "n_instances": self.n_instances,
                "sources": [asdict(m) for m in self.sources], "mismatches": [asdict(m) for m in self.mismatches],
                "affected": [list(k) for k in self.affected], "first_diff": self.first_diff}


def _compare_choices(recorded: dict[str, Any], derived: dict[str, Any], out: list[Mismatch]) -> None:
    ds, run = recorded["dataset"], recorded["run"]
    out += [Mismatch(ds, run, None, f"{key}: recorded {recorded.get(key)} re-derived {derived.get(key)}")
            for key in CHOICE_FIELDS if recorded.get(key) != derived.get(key)]
    rec_ids, der_ids = [r["id"] for r in recorded["instances"]], [r["id"] for r in derived["instances"]]
    if rec_ids != der_ids:
        out.append(Mismatch(ds, run, None, f"instance ids differ (recorded {len(rec_ids)}, re-derived "
                                           f"{len(der_ids)}; first recorded {rec_ids[:3]}, re-derived {der_ids[:3]})"))
        return
    out += [Mismatch(ds, run, rec["id"], f"{key} differs from the re-derived value")
            for rec, der in zip(recorded["instances"], derived["instances"], strict=True)
            for key in ("gen_seed", "mention_ids") if rec.get(key) != der.get(key)]


def _compare_sources(manifest: dict[str, Any], sources: Sources, out: list[Mismatch]) -> None:
    for name, entry in manifest["sources"]["data"].items():
        if name not in sources.data:
            continue  # listed as not loaded
        files = sources.data[name].files
        for fname, want in sorted(entry.get("files", {}).items()):
            got = files.get(fname)
            if got is None:
                out.append(Mismatch(name, -1, None, f"data file {fname}: recorded but not read from "
                                                    f"{sources.data_paths.get(name)}"))
            elif got != want:
                out.append(Mismatch(name, -1, None, f"data file {fname}: sha256 {got}, recorded {want}"))
    for name, entry in manifest["sources"]["prompts"].items():
        want, got = entry.get("sha256"), sources.prompt_hashes.get(name)
        if want and got is not None and got != want:
            out.append(Mismatch(name, -1, None, f"prompt file {sources.prompt_paths.get(name)}: sha256 {got}, "
                                                f"recorded {want}"))


def verify_manifest(loaded: TrustedManifest, data_dir: Any = None, prompts_dir: Any = None) -> VerifyReport:
    """Re-derive and re-render a frozen manifest the caller loaded once (``load_trusted``)."""
    path, manifest, cfg = Path(loaded.path), loaded.manifest, loaded.config
    report = VerifyReport(str(path))
    profile = manifest["profile"]
    # Recorded paths without the hashes: changed files are read (and compared below) rather than
    # stopping the load at the first mismatch, and a dataset that cannot be loaded (a deleted or
    # unparsable file) is listed while the others are still verified.
    unchecked = {kind: {n: {"path": e.get("path")} for n, e in entries.items()}
                 for kind, entries in recorded_sources(manifest).items()}
    failed: list[tuple[str, SeamReproError]] = []
    sources = load_sources(cfg, data_dir=data_dir, prompts_dir=prompts_dir, base_dir=path.parent, recorded=unchecked,
                           failed=failed)
    report.sources += [Mismatch(name, -1, None, f"cannot be loaded: {exc}") for name, exc in failed]
    _compare_sources(manifest, sources, report.sources)
    runs = manifest["runs"]
    report.n_runs = len(runs)
    if len(sources.data) == len(cfg.datasets):
        derived = {(c.dataset, c.run): choices_to_run(c) for c in draw_all(cfg, profile, sources.data,
                                                                           sources.prompt_files)}
        for run in runs:
            der = derived.get((run["dataset"], run["run"]))
            if der is None:
                report.mismatches.append(Mismatch(run["dataset"], run["run"], None, "not produced by the config"))
            else:
                _compare_choices(run, der, report.mismatches)
        if len(derived) != len(runs):
            report.mismatches.append(Mismatch("*", -1, None,
                                              f"config yields {len(derived)} runs, manifest has {len(runs)}"))
    else:  # the draws need every dataset: compare what can be rendered, list the rest
        report.mismatches.append(Mismatch("*", -1, None, "choices not re-derived: a dataset could not be loaded"))
        report.mismatches += [Mismatch(run["dataset"], run["run"], i["id"], "cannot be rendered: the dataset could "
                                       "not be loaded") for run in runs if run["dataset"] not in sources.data
                              for i in run["instances"]]
        runs = [r for r in runs if r["dataset"] in sources.data]
    store = _prompt_store(loaded)
    hashes = []
    missing: list[tuple[str, int, str, str]] = []
    changed = frozenset(m.dataset for m in report.sources)
    for rec in joined(iter_rendered_parts(runs, profile, sources, cfg.suite, str(path), missing, changed)):
        report.n_instances += 1
        key = (rec["dataset"], rec["run"], rec["instance_id"])
        want = loaded.expected[key]
        hashes.append(rec["prompt_sha256"])
        if rec["prompt_sha256"] != want["prompt_sha256"]:
            report.mismatches.append(Mismatch(key[0], key[1], key[2], "prompt_sha256 differs"))
            if report.first_diff is None:
                report.first_diff = _diff(store, key, rec["prompt"])
        if rec["target_sha256"] != want["target_sha256"]:
            report.mismatches.append(Mismatch(key[0], key[1], key[2], "target_sha256 differs"))
    report.mismatches += [Mismatch(ds, run_k, iid, f"cannot be rendered: {reason}") for ds, run_k, iid, reason in missing]
    if digest_of_hashes(hashes) != manifest["prompt_digest"] and not report.mismatches:
        report.mismatches.append(Mismatch("*", -1, None, "prompt_digest differs"))
    for run in runs:  # a run's digest covers its recorded instance hashes (compared one by one above)
        if run["prompt_digest"] != digest_of_hashes(i["prompt_sha256"] for i in run["instances"]):
            report.mismatches.append(Mismatch(run["dataset"], run["run"], None,
                                              "prompt_digest differs from its instances' prompt_sha256"))
    return report


def _prompt_store(tm: TrustedManifest) -> dict[tuple[str, int, str], tuple[str, bool]] | str | None:
    """Stored prompt texts, each with whether it hashes to the sealed per-instance value (the store
    is provenance, not sealed: a text that does not is shown, but labelled). An unreadable store
    only loses the diff (the hashes still decide): its error is returned as the text to show."""
    info = (tm.manifest.get("provenance") or {}).get("prompt_store")
    store_path = Path(tm.path).parent / info["path"] if info else None
    if store_path is None or not store_path.is_file():
        return None
    try:
        texts = read_prompt_store(store_path)
    except InputError as exc:
        return f"(no diff: the prompt store is unreadable: {exc})"
    return {k: (text, sha256_text(text) == tm.expected[k]["prompt_sha256"]) for k, text in texts.items()
            if k in tm.expected}


def _diff(store: dict[tuple[str, int, str], tuple[str, bool]] | str | None, key: tuple[str, int, str],
          actual: str) -> str:
    if isinstance(store, str):
        return store
    if store is None or key not in store:
        return ("(no stored prompt text to diff against: the manifest has no prompt store; re-run "
                "`seam-repro sample --store-prompts` on a trusted checkout to get one)")
    text, trusted = store[key]
    label = f"recorded {key[0]} run {key[1]} {key[2]}" + ("" if trusted else " (stored text does NOT hash to "
                                                                             "the sealed prompt_sha256)")
    return "".join(difflib.unified_diff(text.splitlines(keepends=True), actual.splitlines(keepends=True),
                                        fromfile=label, tofile="regenerated", n=2))
