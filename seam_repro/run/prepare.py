"""The whole job for an unfrozen manifest (``manifests/paper.json``): fetch, freeze, verify, then replay.

``seam-repro replay manifests/paper.json`` (also through ``docker run``) must work without a separate
``fetch`` / ``freeze`` step: the manifest carries only the protocol and the pinned prompt-file
hashes, so before generating this module

1. fetches the sources its datasets need (:mod:`seam_repro.sources.fetch`: every file checked against
   ``data/sources.lock.json``, a cached copy re-verified), unless ``--data-dir`` / ``--prompts-dir`` give them;
2. freezes the manifest into ``RUN_DIR/<stem>.frozen.json`` with what the ``freeze`` command runs,
   which enforces the manifest's prompt-file pins;
3. checks the frozen manifest against the unfrozen one's pins and re-verifies it
   (:func:`seam_repro.manifest.verify.verify_manifest`: choices re-derived, every prompt re-rendered);

and hands the frozen manifest, loaded once, to the replay. Offline, step 1 fails with one line naming
the routes that need no network (``--data-dir`` / ``fetch --data-dir`` / ``freeze`` with local data).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seam_repro.errors import HashMismatchError, ManifestError, MissingDataError
from seam_repro.files.atomic import owned_tempdir
from seam_repro.manifest.format import content_config
from seam_repro.manifest.trust import TrustedManifest, load_trusted
from seam_repro.run.store import frozen_manifest_path
from seam_repro.sources.lock import Lock, load_lock
from seam_repro.specs import load_suite

Echo = Callable[[str], None]


def offline_hint(manifest_path: Path, cause: str) -> str:
    """The one-line error for a missing network: what failed and the routes that need none."""
    m = str(manifest_path)
    return (f"{m}: not frozen, and its pinned sources cannot be fetched ({cause}); offline, give local copies: "
            f"`seam-repro replay {m} --data-dir DIR --prompts-dir DIR` (DIR/<dataset>, DIR/<dataset>.json), "
            f"or `seam-repro fetch --data-dir DIR` first, or `seam-repro freeze {m} --data-dir DIR -o FROZEN.json` "
            "and replay FROZEN.json")


def _fetch_needed(names: list[str], *, data: bool, prompts: bool, cache: Path, lock: Lock, progress: bool,
                  hf_download: Any, echo: Echo) -> tuple[dict[str, Path], dict[str, Path]]:
    """Fetch (or re-verify in the cache) the default sources of ``names``; return where each
    dataset folder and prompt file lies."""
    from seam_repro.sources.fetch import fetch_source

    wanted = []
    for name in names:
        for src in lock.select(name):
            if ((data and name in src.data) or (prompts and name in src.prompts)) and src not in wanted:
                wanted.append(src)
    data_paths: dict[str, Path] = {}
    prompt_paths: dict[str, Path] = {}
    for src in wanted:
        res = fetch_source(src, cache, hf_download=hf_download, progress=progress)
        echo(f"fetch: {res.source:<22} {res.status}")
        for key, rel in res.paths.items():
            kind, _, name = key.partition(":")
            (data_paths if kind == "data" else prompt_paths)[name] = cache / rel
    missing = [n for n in names if (data and n not in data_paths) or (prompts and n not in prompt_paths)]
    if missing:
        raise MissingDataError(f"{lock.path}: no default source provides {', '.join(missing)}; "
                               "pass --data-dir/--prompts-dir")
    return data_paths, prompt_paths


def _view(root: Path, links: dict[str, Path]) -> Path:
    """A folder of symbolic links ``root/<name> -> target``, the shape --data-dir/--prompts-dir read."""
    root.mkdir(parents=True, exist_ok=True)
    for name, target in links.items():
        os.symlink(Path(target).resolve(), root / name)
    return root


def check_against_pins(unfrozen: TrustedManifest, frozen: TrustedManifest, where: Path) -> None:
    """Every prompt-file hash the unfrozen manifest pins is the one the frozen manifest recorded, and
    the protocol (config minus data paths, profile) is unchanged."""
    pinned = (unfrozen.manifest.get("sources") or {}).get("prompts") or {}
    got = (frozen.manifest.get("sources") or {}).get("prompts") or {}
    for name, pin in pinned.items():
        want = (pin or {}).get("sha256")
        have = (got.get(name) or {}).get("sha256")
        if want and have != want:
            raise HashMismatchError(f"{name} prompt file (pinned by the unfrozen manifest)", where, want, str(have))
    # the config the sampler reads back from each manifest (parsed when it was loaded), data paths left out
    protocol = [(tm.manifest.get("profile"), content_config(tm.config.as_json())) for tm in (unfrozen, frozen)]
    if protocol[0] != protocol[1]:
        raise ManifestError(f"{where}: its protocol (profile/config) differs from the unfrozen manifest it was "
                            "frozen from")


def freeze_for_replay(manifest_path: Path, run_dir: Path, *, data_dir: Path | None = None,
                      prompts_dir: Path | None = None, cache: Path | None = None, lock: Lock | None = None,
                      hf_download: Any = None, progress: bool | None = None, echo: Echo = print) -> TrustedManifest:
    """The frozen manifest to replay, loaded once: ``manifest_path`` itself when it is frozen, else
    its frozen copy in ``run_dir`` made from fetched (or ``--data-dir``) sources and verified."""
    manifest_path = Path(manifest_path)
    loaded = load_trusted(manifest_path, allow_unfrozen=True)
    if loaded.frozen:
        return loaded
    # Only for the unfrozen case: a frozen manifest's replay loads none of this.
    from seam_repro.manifest.freeze import freeze_manifest
    from seam_repro.manifest.verify import verify_manifest
    from seam_repro.sources.fetch import DownloadError, cache_root

    progress = sys.stderr.isatty() if progress is None else progress
    names = [d.name for d in loaded.config.datasets]
    root = cache_root(cache)
    out = frozen_manifest_path(run_dir, manifest_path)
    with owned_tempdir("seam-repro-inputs-") as tmp:
        if data_dir is None or prompts_dir is None:
            try:
                data_paths, prompt_paths = _fetch_needed(
                    names, data=data_dir is None, prompts=prompts_dir is None, cache=root, lock=lock or load_lock(),
                    progress=progress, hf_download=hf_download, echo=echo)
            except DownloadError as exc:
                raise MissingDataError(offline_hint(manifest_path, str(exc).split("; nothing was saved")[0])) from None
            if data_dir is None:
                data_dir = _view(Path(tmp) / "data", data_paths)
            if prompts_dir is None:
                suite = load_suite(loaded.config.suite)
                prompts_dir = _view(Path(tmp) / "prompts",
                                    {suite.spec(n).prompt_file or f"{n}.json": p for n, p in prompt_paths.items()})
        # What `seam-repro freeze` runs, so the two can never drift apart; it enforces the
        # prompt-file pins as it reads them.
        written = freeze_manifest(loaded, out, data_dir, prompts_dir, False, lambda note: echo(f"note: {note}"))
        echo(f"froze {manifest_path} into {written.path}: {written.n_prompts} prompts in {written.n_runs} "
             f"(dataset, run) pairs, digest {written.manifest['digest']}")
    frozen = load_trusted(out)
    check_against_pins(loaded, frozen, out)
    report = verify_manifest(frozen)
    if not report.ok:
        raise ManifestError(f"{out}: freshly frozen but does not verify: {report.summary()}")
    echo(report.summary())
    return frozen
