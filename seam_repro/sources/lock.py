"""The sources lock (``data/sources.lock.json``): every external input the kit fetches, pinned.

Each source names where its files come from (a URL, a Hugging Face dataset repo id + revision +
filename, or a Drive link), their sha256 (or git blob sha1), their cache path, and which datasets or
prompt files it provides. ``sha256: null``: no trustworthy hash is published, so the file is trusted on
first use (``sources/fetch.py``). Values come from ``shared/spec/pins.md`` and upstream's ``SHA256SUMS``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError
from seam_repro.files.reading import parse_json_text, read_text

KINDS: frozenset[str] = frozenset({"url", "hf", "zip", "ecbplus"})
PACKAGED_LOCK = Path(__file__).parents[1] / "data" / "sources.lock.json"
"""Found beside the package like the suite files (specs.SUITES_DIR)."""
_HEX = {"sha256": re.compile(r"^[0-9a-f]{64}$"), "git_blob_sha1": re.compile(r"^[0-9a-f]{40}$")}


@dataclass(frozen=True)
class SourceFile:
    """One pinned file: a URL or an HF ``filename``, its hashes and its cache destination."""

    dest: str
    url: str | None = None
    filename: str | None = None
    sha256: str | None = None
    git_blob_sha1: str | None = None

    @property
    def verified(self) -> bool:
        """True when a published hash pins the bytes (else trust on first use)."""
        return self.sha256 is not None or self.git_blob_sha1 is not None


@dataclass(frozen=True)
class Source:
    """One lock entry."""

    name: str
    kind: str
    files: tuple[SourceFile, ...]
    data: tuple[str, ...] = ()
    """Datasets this source provides."""
    prompts: tuple[str, ...] = ()
    """Prompt files (dataset names) this source provides."""
    repo_id: str | None = None
    revision: str | None = None
    default: bool = True
    """Fetched by a plain ``seam-repro fetch``; alternatives (``default: false``) need ``--only``."""
    extract: str | None = None
    locate: dict[str, dict[str, str]] = field(default_factory=dict)
    members: dict[str, str] = field(default_factory=dict)
    """Archive member path -> sha256, checked after extraction."""
    install: dict[str, dict[str, str]] = field(default_factory=dict)
    convert_to: str | None = None

    @property
    def verified(self) -> bool:
        return all(f.verified for f in self.files)


@dataclass(frozen=True)
class Lock:
    """The parsed lock file."""

    path: str
    sources: tuple[Source, ...]

    def get(self, name: str) -> Source:
        for s in self.sources:
            if s.name == name:
                return s
        raise InputError(self.path, f"no source named '{name}'; known: {', '.join(s.name for s in self.sources)}")

    def select(self, only: str | None) -> list[Source]:
        """Sources for ``--only``: a source name, a dataset name (its default data + prompt
        sources, or all that provide it if none is default), ``prompts``, or everything default."""
        if only is None:
            return [s for s in self.sources if s.default]
        if only == "prompts":
            return [s for s in self.sources if s.prompts]
        named = [s for s in self.sources if s.name == only]
        if named:
            return named
        from seam_repro.specs import load_suite

        try:
            name = load_suite("seam").canonical_name(only, "--only", field=None)
        except InputError:
            raise InputError("--only", f"{only!r} is not a dataset, 'prompts' or a source id; datasets: "
                             f"{', '.join(s.display_name for s in load_suite('seam').datasets.values())} "
                             "(any case; `seam-repro datasets list` shows the source ids)") from None
        providing = [s for s in self.sources if name in s.data or name in s.prompts]
        defaults = [s for s in providing if s.default]
        return defaults or providing


def _names(value: Any, where: str, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise InputError(path, "expected a name or list of names", record=where, field="provides")


def _file(raw: Any, where: str, path: str) -> SourceFile:
    if not isinstance(raw, dict) or not isinstance(raw.get("dest"), str):
        raise InputError(path, "expected an object with a 'dest' path", record=where, field="files")
    dest = raw["dest"]
    if dest.startswith("/") or ".." in Path(dest).parts:
        raise InputError(path, f"dest {dest!r} must be a relative path inside the cache", record=where, field="files")
    if not (isinstance(raw.get("url"), str) or isinstance(raw.get("filename"), str)):
        raise InputError(path, "expected a 'url' or an HF 'filename'", record=where, field="files")
    for key, pattern in _HEX.items():
        v = raw.get(key)
        if v is not None and (not isinstance(v, str) or not pattern.match(v)):
            raise InputError(path, f"{key} {v!r} is not a lowercase hex digest", record=where, field=key)
    return SourceFile(dest=dest, **{key: raw.get(key) for key in ("url", "filename", *_HEX)})


def parse_lock(obj: Any, path: str) -> Lock:
    """Validate the lock JSON and build typed sources."""
    if not isinstance(obj, dict) or obj.get("schema_version") != 1 or not isinstance(obj.get("sources"), list):
        raise InputError(path, "expected {'schema_version': 1, 'sources': [...]}")
    out, seen = [], set()
    for i, raw in enumerate(obj["sources"]):
        where = f"source {i}"
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise InputError(path, "expected an object with a 'name'", record=where)
        where = f"source '{raw['name']}'"
        if raw["name"] in seen:
            raise InputError(path, "duplicate source name", record=where, field="name")
        seen.add(raw["name"])
        if raw.get("kind") not in KINDS:
            raise InputError(path, f"kind {raw.get('kind')!r}; expected one of {sorted(KINDS)}", record=where, field="kind")
        files = raw.get("files")
        if not isinstance(files, list) or not files:
            raise InputError(path, "expected a non-empty list of files", record=where, field="files")
        provides = raw.get("provides", {})
        if raw["kind"] == "hf" and not (isinstance(raw.get("repo_id"), str) and isinstance(raw.get("revision"), str)):
            raise InputError(path, "an hf source needs 'repo_id' and 'revision'", record=where)
        out.append(Source(
            name=raw["name"], kind=raw["kind"], files=tuple(_file(f, where, path) for f in files),
            data=_names(provides.get("data"), where, path), prompts=_names(provides.get("prompts"), where, path),
            repo_id=raw.get("repo_id"), revision=raw.get("revision"), default=bool(raw.get("default", True)),
            extract=raw.get("extract"), locate=raw.get("locate", {}), members=raw.get("members", {}),
            install=raw.get("install", {}), convert_to=raw.get("convert_to"),
        ))
    return Lock(path=path, sources=tuple(out))


def load_lock(path: str | Path | None = None) -> Lock:
    """Read the packaged lock (or ``path``)."""
    if path is None:
        text, where = PACKAGED_LOCK.read_text(encoding="utf-8"), "seam_repro/data/sources.lock.json"
    else:
        text, where = read_text(path, what="sources lock"), str(path)
    return parse_lock(parse_json_text(text, where), where)
