"""Bounded JSON/JSONL reading: every problem (nesting over 64 levels, NaN/Infinity, numbers that
overflow, bad UTF-8, truncated gzip) becomes one ``InputError`` naming the file and line."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from itertools import accumulate
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError
from seam_repro.hashing import read_bytes_hashed, remember_sha256

#: Deepest nesting accepted in any JSON the kit reads. The deepest legitimate document (a manifest's
#: coreference clusters inside runs inside datasets) is under 10 levels; 64 leaves ample room while
#: staying far below the interpreter's recursion limit.
MAX_JSON_DEPTH = 64


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (expected a finite number)")


def _finite_float(text: str) -> float:
    """``1e400`` parses to infinity in Python; the kit's files never hold one, so refuse it."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]}{'…' if len(text) > 20 else ''} is out of range (expected a finite number)")
    return value


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
"""A complete JSON string literal (escapes paired as a scanner pairs them)."""
_PLAIN_STRING = re.compile(rb'"[^"]*"')
"""A complete string literal in a text without backslashes (as bytes)."""
_BRACKETS, _QUOTE = b"[]{}", b'"'
_ALL_BUT_BRACKETS = bytes(c for c in range(256) if c not in _BRACKETS)
_ALL_BUT_BRACKETS_AND_QUOTES = bytes(c for c in range(256) if c not in _BRACKETS + _QUOTE)
_BRACKET_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_AS_PARENS = bytes.maketrans(b"[{]}", b"(())")
"""Openers to ``(``, closers to ``)``: the depth counts them alike."""


_LONG_TEXT = 1 << 16
"""Characters from which an ASCII text skips the opener count (see :func:`_depth_exceeds`)."""


def _depth_exceeds(text: str, limit: int) -> bool:
    """True when brackets outside strings nest deeper than ``limit``; linear, no recursion, and
    no Python step per character (dataset files run to hundreds of MB).

    Characters other than brackets and quotes are deleted by ``bytes.translate`` (in UTF-8 a byte
    below 0x80 is always that ASCII character; a lone surrogate passes as three high bytes). In a
    text without a backslash every quote opens or closes a string, so quotes may be dropped in
    adjacent pairs (an empty string, or the end of one string and the start of the next) before
    the strings left are removed; a text with a backslash has its strings removed first, escapes
    paired by the exact pattern.
    """
    # Every opener, even one in a string, bounds the depth: two counts settle most texts (a JSONL
    # line, a CSV cell, a prompt file). A long ASCII text (a token file, a manifest) seldom passes
    # them, so it goes straight to the bytes.
    if (len(text) < _LONG_TEXT or not text.isascii()) and text.count("[") + text.count("{") <= limit:
        return False
    if "\\" in text:
        bare = _JSON_STRING.sub("", text).encode("utf-8", "surrogatepass")
    else:
        bare = text.encode("utf-8", "surrogatepass").translate(None, _ALL_BUT_BRACKETS_AND_QUOTES)
        bare = _PLAIN_STRING.sub(b"", bare.replace(b'""', b""))
    quote = bare.find(_QUOTE)
    if quote >= 0:
        bare = bare[:quote]  # an unterminated string runs to the end of the text
    brackets = bare.translate(None, _ALL_BUT_BRACKETS)
    if len(brackets) <= limit:
        return False
    # Peel innermost pairs first (C replaces, not a Python step per bracket): removing an adjacent
    # opener-closer pair leaves every other prefix's count as it was, so brackets that vanish in
    # k <= limit peels nest at most k deep. Anything else (unbalanced, or deeper) is counted.
    rest = brackets.translate(_AS_PARENS)
    for _ in range(limit):
        peeled = rest.replace(b"()", b"")
        if not peeled:
            return False
        if len(peeled) == len(rest):
            break
        rest = peeled
    return max(accumulate(map(_BRACKET_STEP.__getitem__, brackets))) > limit


def parse_json_text(text: str, where: object, *, record: object | None = None, allow_nan: bool = False) -> Any:
    """Parse one JSON document; any problem becomes an :class:`InputError` naming ``where`` and ``record``.

    NaN/Infinity are refused (the kit's files are canonical JSON) unless ``allow_nan``: third-party
    files written by pandas (the FuseReviews authors' CSV) hold bare ``NaN`` for missing cells.
    Nesting deeper than ``MAX_JSON_DEPTH`` is refused before parsing, so a hostile file cannot
    exhaust the stack.
    """
    if _depth_exceeds(text, MAX_JSON_DEPTH):
        raise InputError(where, f"JSON nested deeper than {MAX_JSON_DEPTH} levels", record=record)
    try:
        if allow_nan:
            return json.loads(text)
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InputError(where, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
                         record=record) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(where, f"not valid JSON ({exc})", record=record) from None


def _read_error(p: Path, what: str, exc: OSError) -> InputError:
    """The one-line error for a file that cannot be opened or read."""
    if isinstance(exc, FileNotFoundError):
        return InputError(p, "not found" if what == "file" else f"not found (expected the {what})")
    if isinstance(exc, IsADirectoryError):
        return InputError(p, f"expected a {what}, found a folder")
    return InputError(p, f"cannot read ({exc.strerror or exc})")


def read_bytes(path: str | Path, *, what: str = "file") -> bytes:
    """Read a whole file (gunzipped when its name ends in ``.gz``); missing, unreadable, not-gzip or
    truncated-gzip files become one-line errors naming the file."""
    p = Path(path)
    try:
        data = read_bytes_hashed(p)  # its sha256 is remembered: provenance hashing needs no second read
    except OSError as exc:
        raise _read_error(p, what, exc) from None
    return gunzip(data, p) if p.name.endswith(".gz") else data


def gunzip(data: bytes, where: object) -> bytes:
    """Decompress gzip bytes; a file that is not gzip or was cut short is an :class:`InputError`."""
    try:
        return gzip.decompress(data)
    except gzip.BadGzipFile:
        raise InputError(where, "not a gzip file (expected .gz content)") from None
    except EOFError:
        raise InputError(where, "truncated gzip file (ends before the compressed stream does)") from None
    except (zlib.error, OSError) as exc:
        raise InputError(where, f"corrupt gzip file ({exc})") from None


def decode_utf8(data: bytes, where: object, *, record: object | None = None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(where, f"not UTF-8 text (byte {exc.start})", record=record) from None


def read_text(path: str | Path, *, what: str = "file") -> str:
    """Read a UTF-8 text file (gunzipped if ``.gz``); every failure is a one-line error."""
    return decode_utf8(read_bytes(path, what=what), Path(path))


def read_json(path: str | Path, *, what: str = "JSON file", expect: type | None = dict) -> Any:
    """Read a whole JSON file; ``expect`` (default ``dict``) checks the top-level type."""
    obj = parse_json_text(read_text(path, what=what), path)
    if expect is not None and not isinstance(obj, expect):
        raise InputError(path, f"expected a JSON {_type_name(expect)} at the top level, got {json_type(obj)}")
    return obj


def iter_jsonl(path: str | Path, *, what: str = "JSONL file", expect: type | None = dict,
               complete_only: bool = False, undecodable: set[int] | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)`` for each line of a JSONL file (1-based line numbers; a
    ``.gz`` name is gunzipped first).

    Blank lines are skipped; every other line must parse to ``expect`` (default ``dict``): the
    first bad line raises an :class:`InputError` naming the file and the line. ``complete_only``
    stops before an unterminated last line (a write cut by a kill in an append-only store).
    With an ``undecodable`` set, bytes that are not UTF-8 are replaced instead of refused and the
    line's number is added to the set (model output is scored as a format failure, not a crash).
    """
    p = Path(path)
    if p.name.endswith(".gz"):
        yield from _parse_lines(p, read_bytes(p, what=what).splitlines(keepends=True), expect, False, undecodable)
        return
    try:
        fh = open(p, "rb")
    except OSError as exc:
        raise _read_error(p, what, exc) from None
    with fh:
        st, digest = os.fstat(fh.fileno()), hashlib.sha256()

        def hashed(lines: Iterable[bytes]) -> Iterator[bytes]:  # binary lines concatenate to the file
            for raw in lines:
                digest.update(raw)
                yield raw

        yield from _parse_lines(p, hashed(fh), expect, complete_only, undecodable)
        if not fh.read(1):  # read to the end: remember the hash so provenance needs no second read
            remember_sha256(st, digest.hexdigest())


def _parse_lines(p: Path, lines: Iterable[bytes], expect: type | None, complete_only: bool,
                 undecodable: set[int] | None) -> Iterator[tuple[int, Any]]:
    for n, raw in enumerate(lines, start=1):
        if complete_only and not raw.endswith(b"\n"):  # only the last line can lack its newline
            return  # a torn last line of an append-only file: dropped on resume, never read
        if undecodable is None:
            line = decode_utf8(raw, p, record=f"line {n}")
        else:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                line = raw.decode("utf-8", errors="replace")
                undecodable.add(n)
        if not line.strip():
            continue
        obj = parse_json_text(line, p, record=f"line {n}")
        if expect is not None and not isinstance(obj, expect):
            raise InputError(p, f"expected a JSON {_type_name(expect)}, got {json_type(obj)}",
                             record=f"line {n}")
        yield n, obj


def read_jsonl(path: str | Path, **kwargs: Any) -> list[Any]:
    """All objects of a JSONL file, in order (see :func:`iter_jsonl`)."""
    return [obj for _, obj in iter_jsonl(path, **kwargs)]


_JSON_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


def _type_name(t: type) -> str:
    return _JSON_NAMES.get(t, t.__name__)


def json_type(obj: Any) -> str:
    """The JSON name of a parsed value's type (for "expected X, got Y" messages)."""
    return _JSON_NAMES.get(type(obj), "number")


def is_a(value: Any, kind: type | tuple[type, ...]) -> bool:
    """``isinstance``, except that a bool (JSON true/false) is no int unless ``kind`` names bool:
    Python counts ``True`` and ``False`` as ints, JSON does not."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool))


def is_finite_number(value: Any) -> bool:
    """A finite JSON number: not a boolean, NaN or infinity."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
