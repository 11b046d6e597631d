"""One place for every hash the kit writes (per-sample hashes digest upward, as lm-eval does)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def sha256_text(text: str) -> str:
    """sha256 of the UTF-8 bytes of ``text`` (prompts, targets, chat templates)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class PrefixHasher:
    """``sha256_text(prefix + text)`` for many texts after one shared prefix, hashing the prefix
    once: every prompt of a run starts with the same demonstrations, most of its length. The
    prefix's UTF-8 bytes stay in ``prefix_utf8`` for a writer that needs them too."""

    __slots__ = ("_state", "prefix_utf8")

    def __init__(self, prefix: str) -> None:
        self.prefix_utf8 = prefix.encode("utf-8")
        self._state = hashlib.sha256(self.prefix_utf8)

    def hexdigest_utf8(self, data: bytes) -> str:
        """``sha256_text(prefix + text)`` for the text whose UTF-8 bytes are ``data``."""
        h = self._state.copy()
        h.update(data)
        return h.hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_READ: dict[tuple[int, int, int, int], str] = {}
"""sha256 of files already read whole, keyed by (device, inode, size, mtime_ns), so a loader that
parses a file and then records its hash reads it once, and the recorded hash is that of the very
bytes that were parsed (see :func:`read_bytes_hashed` and :func:`remember_sha256`). The file's
identity is its inode, not its resolved path (``os.path.realpath`` takes an ``lstat`` per path
component)."""


def _key(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def remember_sha256(st: os.stat_result, digest: str) -> None:
    """Record the sha256 of every byte of a file as read from an open file whose ``fstat`` is ``st``."""
    _READ[_key(st)] = digest


def read_bytes_hashed(path: str | Path) -> bytes:
    """A file's bytes, read once; their sha256 is remembered for :func:`sha256_file`."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        data = fh.read()
    remember_sha256(st, hashlib.sha256(data).hexdigest())
    return data


def sha256_file(path: str | Path) -> str:
    """Streamed sha256 of a file, so multi-GB archives do not have to fit in memory (or the
    remembered hash of the bytes a reader already took from it, if the file is unchanged since)."""
    try:
        cached = _READ.get(_key(os.stat(path)))
    except OSError:
        cached = None
    if cached is not None:
        return cached
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def canonical_json(obj: Any) -> bytes:
    """Canonical serialization: sorted keys, no insignificant whitespace, UTF-8, no NaN."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def sha256_json(obj: Any) -> str:
    """sha256 of the canonical JSON form of ``obj`` (gold targets that are not strings)."""
    return sha256_bytes(canonical_json(obj))


def digest_of_hashes(hashes: Iterable[str]) -> str:
    """Digest over an ordered sequence of hex hashes (newline-joined), e.g. all prompt hashes."""
    h = hashlib.sha256()
    for item in hashes:
        h.update(item.encode("ascii"))
        h.update(b"\n")
    return h.hexdigest()
