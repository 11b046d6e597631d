"""Download (or copy from ``--data-dir``) every pinned source into the cache, verified.

Replaces upstream SEAM's unpinned inputs (``load_dataset(...)`` at whatever revision is current, a
hand-downloaded Drive zip) with the pins in ``data/sources.lock.json``. A file reaches its cache path
only after its hash matched (a temp file beside it, hashed, then renamed: an interrupted transfer or a
mismatch leaves nothing behind). sha256 is checked when pinned, git blob sha1 for files published only
inside a git tree (cltl/ecbPlus); files with no published hash are trusted on first use (sha256 kept
in ``<cache>/tofu.json``, reported as UNVERIFIED). Zip members that are absolute, escape with ``..`` or
are symlinks are refused. Cache: ``--cache DIR``, else ``$SEAM_REPRO_CACHE``, else ``~/.cache/seam-repro``.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import stat
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from seam_repro.errors import HashMismatchError, InputError, MissingDataError, SeamReproError
from seam_repro.files.atomic import atomic_write_json, ensure_dir, owner_token, sweep_leftovers
from seam_repro.files.reading import read_json
from seam_repro.hashing import sha256_file
from seam_repro.network import first_hop, hub_address, quiet_retries, unreachable_reason
from seam_repro.sources.lock import Lock, Source, SourceFile, load_lock

CHUNK = 1 << 16
HfDownload = Callable[..., str]


class DownloadError(SeamReproError):
    """A transfer that failed or ended early (nothing was written to the cache)."""


@dataclass
class FetchResult:
    """Outcome for one source (one line of ``seam-repro fetch`` output)."""

    source: str
    status: str
    """``verified``, ``UNVERIFIED`` (trust on first use) or ``verified (cached)``."""
    paths: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def cache_root(cache: str | Path | None = None) -> Path:
    """The cache folder: explicit argument, ``$SEAM_REPRO_CACHE``, or ``~/.cache/seam-repro``."""
    if cache is None:
        cache = os.environ.get("SEAM_REPRO_CACHE") or Path.home() / ".cache" / "seam-repro"
    return Path(cache).expanduser()


def git_blob_sha1(path: str | Path) -> str:
    """``git hash-object`` of a file: sha1 over ``b"blob <size>\\0"`` + content."""
    with open(path, "rb") as fh:
        header = f"blob {os.fstat(fh.fileno()).st_size}\0".encode()
        return hashlib.file_digest(fh, lambda: hashlib.sha1(header)).hexdigest()


# ------------------------------------------------------------------------------------- state files
def _read_state(cache: Path, name: str) -> dict[str, Any]:
    path = cache / name
    if not path.exists():
        return {}
    try:
        return read_json(path, what="fetch state file")  # type: ignore[no-any-return]
    except InputError as exc:
        raise InputError(path, f"{str(exc).removeprefix(f'{path}: ')}; delete it to start over") from None


def _write_state(cache: Path, name: str, obj: dict[str, Any]) -> None:
    ensure_dir(cache)
    atomic_write_json(cache / name, obj, indent=1, sort_keys=True)


# -------------------------------------------------------------------------------------- transfers
def _temp_beside(dest: Path, suffix: str = "") -> Path:
    """A name ``.<name>.<owner><suffix>`` beside ``dest`` for a download or extraction to go to first,
    after removing what a killed earlier one of ``dest`` left (``files.sweep_leftovers``)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    sweep_leftovers(dest.parent, f".{dest.name}.", suffix)
    return dest.parent / f".{dest.name}.{owner_token()}{suffix}"


def _stream(url: str, tmp: Path, artifact: str, progress: bool, timeout: float) -> None:
    """Stream ``url`` into ``tmp``; raise DownloadError if the body is shorter than announced."""
    from tqdm import tqdm

    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as out:
            length = resp.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            with tqdm(total=total, unit="B", unit_scale=True, desc=artifact, disable=not progress, leave=False) as bar:
                for chunk in iter(lambda: resp.read(CHUNK), b""):
                    bar.update(out.write(chunk))
            got = out.tell()
            if total is not None and got != total:
                raise DownloadError(f"{artifact}: transfer from {url} ended after {got} of {total} bytes; nothing was saved")
    except http.client.IncompleteRead as exc:
        raise DownloadError(f"{artifact}: transfer from {url} ended early ({len(exc.partial)} bytes read); nothing was saved") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise DownloadError(f"{artifact}: cannot download {url}: {exc}; nothing was saved") from None


def _check(tmp: Path, f: SourceFile, artifact: str, tofu: dict[str, Any], shown: Path) -> bool:
    """Verify ``tmp`` against the pin (or the trust-on-first-use record); True if pinned."""
    actual = sha256_file(tmp)
    if f.sha256 is not None and actual != f.sha256:
        raise HashMismatchError(artifact, shown, f.sha256, actual)
    if f.git_blob_sha1 is not None:
        blob = git_blob_sha1(tmp)
        if blob != f.git_blob_sha1:
            raise HashMismatchError(artifact, shown, f"git blob {f.git_blob_sha1}", f"git blob {blob}")
    if f.verified:
        return True
    seen = tofu.get(f.dest)
    if seen is not None and seen["sha256"] != actual:
        raise HashMismatchError(f"{artifact} (trusted on first use)", shown, seen["sha256"], actual)
    tofu[f.dest] = {"sha256": actual, "origin": f.url or f.filename}
    return False


def _local_copy(data_dir: Path, f: SourceFile, datasets: tuple[str, ...] | list[str] = ()) -> Path:
    """The offline copy of ``f`` in ``data_dir``: by cache path or file name at the top, or inside
    the dataset's own folder (``datasets/layout.py``: the same DIR/<Dataset>/ folders every command reads)."""
    from seam_repro.datasets.layout import find_dataset_dir

    names = [f.dest, PurePosixPath(f.dest).name]
    if f.filename:
        names += [f.filename, PurePosixPath(f.filename).name]
    if f.url:
        names.append(PurePosixPath(f.url.split("?")[0]).name)
    roots = [data_dir] + [d for d in (find_dataset_dir(data_dir, n) for n in datasets) if d is not None]
    found = next((root / n for root in roots for n in names if (root / n).is_file()), None)
    if found is not None:
        return found
    raise MissingDataError(f"--data-dir {data_dir}: no local copy of {f.dest} (looked for {', '.join(dict.fromkeys(names))}"
                           + (f" there and in its {'/'.join(datasets)} folder" if datasets else "") + ")")


def obtain(src: Source, f: SourceFile, cache: Path, tofu: dict[str, Any], *, data_dir: Path | None = None,
           hf_download: HfDownload | None = None, progress: bool = True, timeout: float = 60.0) -> bool:
    """Put one verified file at ``cache/f.dest``; return True if its hash is pinned."""
    dest = cache / f.dest
    artifact = f"{src.name}:{PurePosixPath(f.dest).name}"
    if dest.is_file():
        return _check(dest, f, artifact, tofu, dest)
    tmp = _temp_beside(dest, ".part")
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))  # private until verified
    try:
        if data_dir is not None:
            origin = _local_copy(data_dir, f, src.data)
            shutil.copyfile(origin, tmp)
        elif src.kind == "hf":
            if hf_download is None:
                _require_reachable(artifact, *hub_address())
                from huggingface_hub import hf_hub_download as hf_download

                quiet_retries()
            try:
                origin = Path(hf_download(repo_id=src.repo_id, filename=f.filename, revision=src.revision,
                                          repo_type="dataset"))
            except Exception as exc:  # huggingface_hub raises many types; report them uniformly
                raise DownloadError(f"{artifact}: cannot download {src.repo_id}@{src.revision}:{f.filename}: {exc}") from None
            shutil.copyfile(origin, tmp)
        else:
            origin = Path(str(f.url))
            _require_reachable(artifact, *first_hop(str(f.url)))
            _stream(str(f.url), tmp, artifact, progress, timeout)
        pinned = _check(tmp, f, artifact, tofu, origin)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; cached data is meant to be shared
        os.replace(tmp, dest)
        return pinned
    finally:
        tmp.unlink(missing_ok=True)


def _require_reachable(artifact: str, host: str, port: int) -> None:
    """One short probe of the first hop before a download (``network.unreachable_reason``): an
    offline machine is told in under 2 s instead of after the HTTP clients' retries and timeouts."""
    reason = unreachable_reason(host, port)
    if reason is not None:
        raise DownloadError(f"{artifact}: offline: {reason}; nothing was saved")


# ------------------------------------------------------------------------------------------- zips
def _unsafe_reason(info: zipfile.ZipInfo) -> str | None:
    name = info.filename.replace("\\", "/")
    parts = PurePosixPath(name).parts
    if name.startswith("/") or (parts and ":" in parts[0]):
        return "absolute path"
    if ".." in parts:
        return "'..' escapes the target folder"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "symbolic link"
    return None


def safe_extract(archive: Path, target: Path) -> list[str]:
    """Extract ``archive`` into ``target`` (replacing it) after checking every member name."""
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise InputError(archive, f"not a zip archive ({exc})") from None
    with zf:
        infos = zf.infolist()
        for info in infos:
            reason = _unsafe_reason(info)
            if reason is not None:
                raise InputError(archive, f"refusing to extract: {reason}", record=f"member {info.filename!r}")
        tmp = _temp_beside(target)
        tmp.mkdir(mode=0o700)
        try:
            names = []
            for info in infos:
                out = tmp.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
                if info.is_dir():
                    out.mkdir(parents=True, exist_ok=True)
                    continue
                out.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(out, "wb") as dst:
                    shutil.copyfileobj(src, dst, CHUNK)
                names.append(info.filename)
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)
    return names


def _find_member(root: Path, member: str) -> Path | None:
    exact = root / member
    if exact.is_file():
        return exact
    hits = sorted(p for p in root.rglob(PurePosixPath(member).name) if p.as_posix().endswith("/" + member))
    return hits[0] if len(hits) == 1 else None


def _locate(root: Path, dataset: str, rule: dict[str, str]) -> Path | None:
    """The folder under ``root`` that holds ``rule['marker']`` (preferring one named like the dataset)."""
    cands = [p.parent for p in sorted(root.rglob(rule["marker"]))]
    if "exclude_marker" in rule:
        cands = [c for c in cands if not (c / rule["exclude_marker"]).exists()]
    named = [c for c in cands if dataset.lower() in c.as_posix().lower()]
    return next(iter(named or cands), None)


# ---------------------------------------------------------------------------------- per source
def fetch_source(src: Source, cache: Path, *, data_dir: Path | None = None, hf_download: HfDownload | None = None,
                 progress: bool = True, timeout: float = 60.0) -> FetchResult:
    """Fetch, verify, extract and install one source; record where its datasets/prompts live."""
    tofu = _read_state(cache, "tofu.json")
    try:
        pinned = [obtain(src, f, cache, tofu, data_dir=data_dir, hf_download=hf_download, progress=progress, timeout=timeout)
                  for f in src.files]
    finally:
        _write_state(cache, "tofu.json", tofu)
    notes = [] if all(pinned) else ["no published hash: trusted on first use, sha256 recorded in tofu.json"]
    paths = {f"prompts:{name}": next(f.dest for f in src.files if PurePosixPath(f.dest).stem == name)
             for name in src.prompts}
    if src.kind == "hf":
        paths |= {f"data:{name}": PurePosixPath(src.files[0].dest).parent.as_posix() for name in src.data}
    if src.kind in ("zip", "ecbplus") and src.extract:
        target = cache / src.extract
        safe_extract(cache / src.files[0].dest, target)
        for member, expected in src.members.items():
            found = _find_member(target, member)
            if found is None:
                notes.append(f"member {member} not found in the archive; its pinned hash was not checked")
                continue
            actual = sha256_file(found)
            if actual != expected:
                raise HashMismatchError(f"{src.name}:{member}", found, expected, actual)
            notes.append(f"member {member}: sha256 verified")
        for dataset, rule in src.locate.items():
            folder = _locate(target, dataset, rule)
            if folder is None:
                notes.append(f"{dataset}: no folder with {rule['marker']} in the archive")
            else:
                paths[f"data:{dataset}"] = folder.relative_to(cache).as_posix()
        for dataset, mapping in src.install.items():
            folder = cache / "data" / f"{dataset}-{src.name}"
            folder.mkdir(parents=True, exist_ok=True)
            for out_name, member in mapping.items():
                found = _find_member(target, member)
                if found is None:
                    raise MissingDataError(f"{src.name}: archive has no member {member} to install as {dataset}/{out_name}")
                shutil.copyfile(found, folder / out_name)
            paths[f"data:{dataset}"] = folder.relative_to(cache).as_posix()
    if src.kind == "ecbplus" and src.convert_to:
        from seam_repro.datasets.ecb_xml import convert

        corpus = _corpus_root(cache / str(src.extract))
        if corpus is None:
            raise MissingDataError(f"{src.name}: no ECB+ topic folders found after extraction")
        csv_path = cache / next(f.dest for f in src.files if f.dest.endswith(".csv"))
        stats = convert(corpus, csv_path, cache / src.convert_to)
        notes.append(f"converted {sum(stats.documents.values())} documents, {sum(stats.mentions.values())} mentions")
        paths["data:ECB"] = src.convert_to
    installed = _read_state(cache, "installed.json")
    installed[src.name] = paths
    _write_state(cache, "installed.json", installed)
    return FetchResult(src.name, "verified" if all(pinned) else "UNVERIFIED", paths, notes)


def _corpus_root(root: Path) -> Path | None:
    """The folder holding ECB+ topic folders (``<n>/<n>_<k>ecb.xml``), shallowest first."""
    return min((p.parent.parent for p in root.rglob("*ecb*.xml") if p.parent.name.isdigit()),
               key=lambda d: (len(d.parts), str(d)), default=None)


def cached_source_path(kind: str, name: str, cache: str | Path | None = None, lock: Lock | None = None) -> Path | None:
    """Where a fetched dataset folder (``kind='data'``) or prompt file (``'prompts'``) lives, if it
    does; default sources are preferred over alternatives."""
    root = cache_root(cache)
    installed = _read_state(root, "installed.json")
    for src in sorted((lock or load_lock()).sources, key=lambda s: not s.default):
        rel = installed.get(src.name, {}).get(f"{kind}:{name}")
        if rel is not None and (root / rel).exists():
            return root / rel
    return None


def source_status(src: Source, cache: str | Path | None = None) -> str:
    """Cheap status for listings (no re-hashing): ``missing``, ``verified`` or ``UNVERIFIED``."""
    root = cache_root(cache)
    if not all((root / f.dest).is_file() for f in src.files) or src.name not in _read_state(root, "installed.json"):
        return "missing"
    return "verified" if src.verified else "UNVERIFIED"
