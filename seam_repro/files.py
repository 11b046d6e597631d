"""The kit's one I/O layer: bounded JSON/JSONL reading with one-line errors, atomic writes, and a
guard that keeps a command's outputs off its inputs.

Why one place: every command reads user-supplied JSON (manifests, configs, prediction lines,
run.json, summaries, bundles) and writes artifacts that other commands trust. Reading must never
raise a traceback on hostile input (deep nesting, binary junk, NaN) and writing must never leave a
half-written file behind (kill, full disk, read-only folder): a reader sees the old file or the
new one, never a torn one.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gzip
import hashlib
import json
import math
import os
import re
import shutil
import tempfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, BinaryIO

from seam_repro.errors import InputError, SeamReproError
from seam_repro.hashing import read_bytes_hashed, remember_sha256

#: Deepest nesting accepted in any JSON the kit reads. The deepest legitimate document (a manifest's
#: coreference clusters inside runs inside datasets) is under 10 levels; 64 leaves ample room while
#: staying far below the interpreter's recursion limit.
MAX_JSON_DEPTH = 64


class OutputError(SeamReproError):
    """An output that cannot be written where asked (over an input, below a file, read-only, disk full)."""


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


def parse_json_text(text: str, where: object, *, record: object | None = None,
                    max_depth: int = MAX_JSON_DEPTH, allow_nan: bool = False) -> Any:
    """Parse one JSON document; any problem becomes an :class:`InputError` naming ``where`` and ``record``.

    NaN/Infinity are refused (the kit's files are canonical JSON) unless ``allow_nan``: third-party
    files written by pandas (the FuseReviews authors' CSV) hold bare ``NaN`` for missing cells.
    Nesting deeper than ``max_depth`` is refused before parsing, so a hostile file cannot exhaust
    the stack.
    """
    if _depth_exceeds(text, max_depth):
        raise InputError(where, f"JSON nested deeper than {max_depth} levels", record=record)
    try:
        if allow_nan:
            return json.loads(text)
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InputError(where, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
                         record=record) from None
    except (ValueError, RecursionError) as exc:
        raise InputError(where, f"not valid JSON ({exc})", record=record) from None


def _not_found(what: str) -> str:
    return "not found" if what == "file" else f"not found (expected the {what})"


def _read_error(p: Path, what: str, exc: OSError) -> InputError:
    """The one-line error for a file that cannot be opened or read."""
    if isinstance(exc, FileNotFoundError):
        return InputError(p, _not_found(what))
    if isinstance(exc, IsADirectoryError):
        return InputError(p, f"expected a {what}, found a folder")
    return InputError(p, f"cannot read ({exc.strerror or exc})")


def _is_gzip_name(p: Path) -> bool:
    return p.name.endswith(".gz")


def read_bytes(path: str | Path, *, what: str = "file") -> bytes:
    """Read a whole file (gunzipped when its name ends in ``.gz``); missing, unreadable, not-gzip or
    truncated-gzip files become one-line errors naming the file."""
    p = Path(path)
    try:
        data = read_bytes_hashed(p)  # its sha256 is remembered: provenance hashing needs no second read
    except OSError as exc:
        raise _read_error(p, what, exc) from None
    if _is_gzip_name(p):
        data = gunzip(data, p)
    return data


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
        raise InputError(path, f"expected a JSON {_type_name(expect)} at the top level, got {_json_type(obj)}")
    return obj


def iter_jsonl(path: str | Path, *, what: str = "JSONL file", expect: type | None = dict,
               skip_blank: bool = True, complete_only: bool = False, lenient_tail: bool = False,
               undecodable: set[int] | None = None) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, object)`` for each line of a JSONL file (1-based line numbers; a
    ``.gz`` name is gunzipped first).

    Every line must parse to ``expect`` (default ``dict``); the first bad line raises an
    :class:`InputError` naming the file and the line. ``complete_only`` stops before an
    unterminated last line (a write cut by a kill in an append-only store); ``lenient_tail`` reads
    it when it parses and skips it when not (files another tool may end without a newline).
    With an ``undecodable`` set, bytes that are not UTF-8 are replaced instead of refused and the
    line's number is added to the set (model output is scored as a format failure, not a crash).
    """
    p = Path(path)
    opts = {"expect": expect, "skip_blank": skip_blank, "lenient_tail": lenient_tail, "undecodable": undecodable}
    if _is_gzip_name(p):
        lines: Iterable[bytes] = read_bytes(p, what=what).splitlines(keepends=True)
        yield from _parse_lines(p, lines, complete_only=False, **opts)
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

        yield from _parse_lines(p, hashed(fh), complete_only=complete_only, **opts)
        if not fh.read(1):  # read to the end: remember the hash so provenance needs no second read
            remember_sha256(st, digest.hexdigest())


def _parse_lines(p: Path, lines: Iterable[bytes], *, expect: type | None, skip_blank: bool, complete_only: bool,
                 lenient_tail: bool, undecodable: set[int] | None) -> Iterator[tuple[int, Any]]:
    for n, raw in enumerate(lines, start=1):
        torn = not raw.endswith(b"\n")  # only the last line can lack its newline
        if complete_only and torn:
            return  # a torn last line of an append-only file: dropped on resume, never read
        if undecodable is None:
            line = decode_utf8(raw, p, record=f"line {n}")
        else:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                line = raw.decode("utf-8", errors="replace")
                undecodable.add(n)
        if skip_blank and not line.strip():
            continue
        try:
            obj = parse_json_text(line, p, record=f"line {n}")
        except InputError:
            if lenient_tail and torn:
                return  # a torn write at the end of an append-only file
            raise
        if expect is not None and not isinstance(obj, expect):
            raise InputError(p, f"expected a JSON {_type_name(expect)}, got {_json_type(obj)}",
                             record=f"line {n}")
        yield n, obj


def read_jsonl(path: str | Path, **kwargs: Any) -> list[Any]:
    """All objects of a JSONL file, in order (see :func:`iter_jsonl`)."""
    return [obj for _, obj in iter_jsonl(path, **kwargs)]


def dumps_json(obj: Any, *, indent: int | None = 1, sort_keys: bool = False) -> str:
    """The kit's JSON text form: UTF-8, no NaN, newline-terminated."""
    return json.dumps(obj, indent=indent, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False) + "\n"


def _os_problem(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "no space left on the device"
    if exc.errno == errno.EFBIG:
        return "file too large for this system's limit"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "permission denied (read-only?)"
    if exc.errno == errno.ENOTDIR:
        return "a parent path is a regular file, not a folder"
    if exc.errno == errno.EISDIR:
        return "a folder of that name exists"
    return exc.strerror or str(exc)


def describe_os_error(exc: OSError) -> str:
    """One line for an OS error: the path it concerns and the problem in plain words."""
    where = exc.filename if exc.filename is not None else "(file system)"
    return f"{where}: {_os_problem(exc)}"


def ensure_dir(path: str | Path) -> Path:
    """``mkdir -p`` with one-line errors (a parent that is a file, a read-only parent)."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(f"{p}: cannot create folder: a file of that name exists") from None
    except OSError as exc:
        raise OutputError(f"{p}: cannot create folder: {_os_problem(exc)}") from None
    return p


def _file_mode(path: Path) -> int:
    """The mode a plain ``open(path, "w")`` would give: the existing file's, else 0666 less the umask.

    A private temporary is created 0600; a manifest or bundle written that way is unreadable to the
    container user or a colleague, so the temporary file gets the mode the final file should have.
    """
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


_CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) \
    | getattr(os, "O_BINARY", 0)


# --- temporaries named by their owner, so a later run can clean what a killed one left ----------------
LEGACY_TEMP_AGE_S = 24 * 3600
"""A temporary named without its owner (written by an older kit) is removed once it is this old:
no write of the kit keeps a temporary open for a day."""

_OWNER = re.compile(r"h([0-9a-f]{6})p(\d+)-[0-9a-f]{12}")
_LEGACY = re.compile(r"[0-9a-f]{12}|[a-z0-9_]{8}")  # the random parts older kits used (own hex, mkdtemp)


@functools.cache
def _host_tag() -> str:
    """This machine, in six hex digits: a pid means something only on the host that made it."""
    name = os.uname().nodename if hasattr(os, "uname") else os.environ.get("COMPUTERNAME", "")
    return hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()[:6]


def owner_token() -> str:
    """``h<host>p<pid>-<random>``: what names a temporary this process creates (see :func:`sweep_leftovers`)."""
    return f"h{_host_tag()}p{os.getpid()}-{os.urandom(6).hex()}"


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # no permission: another user's live process
        return True
    return True


def sweep_leftovers(folder: str | Path, prefix: str, suffix: str = "") -> list[str]:
    """Remove what a killed earlier run left in ``folder``: entries named ``<prefix><token><suffix>``
    whose token (:func:`owner_token`) names a process of this host that is gone, and entries in an
    older kit's unowned form (``<prefix><random><suffix>``) older than ``LEGACY_TEMP_AGE_S``. A live
    process's temporaries (this one's included) and another host's (on a shared disk: its pids mean
    nothing here) are left alone, until the age rule. Best effort: what cannot be removed stays.
    Returns the names removed."""
    import time

    removed: list[str] = []
    host = _host_tag()
    try:
        entries = [e for e in os.scandir(folder) if e.name.startswith(prefix) and e.name.endswith(suffix)]
    except OSError:
        return removed
    for entry in entries:
        middle = entry.name[len(prefix):len(entry.name) - len(suffix)]
        owner = _OWNER.fullmatch(middle)
        if owner is not None and owner.group(1) == host:
            if _pid_alive(int(owner.group(2))):
                continue
        elif owner is not None or _LEGACY.fullmatch(middle):
            try:
                if time.time() - entry.stat(follow_symlinks=False).st_mtime < LEGACY_TEMP_AGE_S:
                    continue
            except OSError:
                continue
        else:
            continue  # not a temporary of ours
        try:
            if entry.is_dir(follow_symlinks=False):
                import shutil  # only here: every atomic write sweeps, few find a folder to remove

                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(entry.name)
        except OSError:
            pass
    return removed


@contextlib.contextmanager
def owned_tempdir(prefix: str) -> Iterator[Path]:
    """A private folder ``$TMPDIR/<prefix><owner token>``, removed when the block ends; what a
    killed earlier run of the same command left under that prefix is removed first."""
    import shutil

    root = Path(tempfile.gettempdir())
    sweep_leftovers(root, prefix)
    work = root / f"{prefix}{owner_token()}"
    work.mkdir(mode=0o700)
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _new_sibling(p: Path) -> tuple[int, str]:
    """Create a new private file ``.<name>.<owner token>.tmp`` beside ``p`` (exclusive, no symlink
    followed, mode 0600, not inherited by child processes): what ``tempfile.mkstemp`` does, with a name
    that says which process owns it, so what a killed earlier write of ``p`` left there is removed
    first (:func:`sweep_leftovers`)."""
    sweep_leftovers(p.parent, f".{p.name}.", ".tmp")
    for _ in range(100):
        tmp = os.path.join(p.parent, f".{p.name}.{owner_token()}.tmp")
        try:
            return os.open(tmp, _CREATE_NEW, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", str(p.parent))


def temp_sibling(p: Path) -> tuple[int, str]:
    """A new private file beside ``p`` (``_new_sibling``), its folder created if need be: for
    content a command holds on disk while it works, which a killed earlier run's sweep removes."""
    ensure_dir(p.parent)
    return _new_sibling(p)


def atomic_write_bytes(path: str | Path, data: bytes | Sequence[bytes]) -> None:
    """Write ``data`` (bytes, or a sequence of byte chunks: their concatenation, never joined into a
    second copy) to ``path`` through :func:`atomic_writer`: a temporary sibling + fsync + rename.

    On any failure the temporary file is removed and the previous content of ``path`` (if any) is
    left exactly as it was; the failure becomes an :class:`OutputError` naming ``path``.
    """
    with atomic_writer(path) as fh:
        if isinstance(data, (bytes, bytearray, memoryview)):
            fh.write(data)
        else:
            fh.writelines(data)


@contextlib.contextmanager
def atomic_writer(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s next content into, line by line (content too large to hold):
    a temporary sibling, fsynced and renamed to ``path`` when the block succeeds, removed when it
    raises, so ``path`` is either old or new, whole. An OSError inside the block is reported as a
    failure to write ``path``."""
    p = Path(path)
    ensure_dir(p.parent)
    try:
        fd, tmp = _new_sibling(p)
    except OSError as exc:
        raise OutputError(f"{p}: cannot write: {_os_problem(exc)}; nothing was changed") from None
    done = False
    try:
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fd, _file_mode(p))
            yield fh
            fh.flush()
            os.fsync(fd)
        os.replace(tmp, p)
        done = True
        _fsync_dir(p.parent)
    except OSError as exc:
        raise OutputError(f"{p}: cannot write: {_os_problem(exc)}; nothing was changed") from None
    finally:
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any, *, indent: int | None = 1, sort_keys: bool = False) -> None:
    atomic_write_text(path, dumps_json(obj, indent=indent, sort_keys=sort_keys))


def jsonl_line(record: Any) -> bytes:
    """One compact JSON line (UTF-8, newline-terminated): the form of a run folder's prompts.jsonl."""
    return (json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n").encode("utf-8")


def atomic_write_jsonl(path: str | Path, records: Iterable[Any]) -> None:
    """One compact JSON line per record, written atomically a line at a time (a run's prompts are hundreds of
    MB at 100x the paper's instances: joined, then encoded, they were held three times over)."""
    with atomic_writer(path) as fh:
        for r in records:
            fh.write(jsonl_line(r))


def _fsync_dir(path: Path) -> None:
    """Make a rename durable; folders cannot be opened for fsync on every platform, so best effort."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Build a folder in a temporary sibling and rename it to ``path`` only when the block succeeds.

    ``path`` must not exist yet (refusing is safer than merging into someone's folder). A kill or an
    error inside the block leaves no ``path`` at all, only a ``.<name>.partial-<owner>`` sibling that
    the next attempt removes (:func:`sweep_leftovers`), so a retry is never blocked and a partial
    folder is never scored.
    """
    final = Path(path)
    if final.exists():
        raise OutputError(f"{final}: already exists; choose a new output folder")
    ensure_dir(final.parent)
    sweep_leftovers(final.parent, f".{final.name}.partial-")
    try:
        work = final.parent / f".{final.name}.partial-{owner_token()}"
        work.mkdir(mode=0o700)
    except OSError as exc:
        raise OutputError(f"{final}: cannot create folder: {_os_problem(exc)}") from None
    try:
        yield work
        os.replace(work, final)
        _fsync_dir(final.parent)
    except OSError as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise OutputError(f"{final}: cannot write: {_os_problem(exc)}; nothing was changed") from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


@contextlib.contextmanager
def staged_file(path: str | Path) -> Iterator[Path]:
    """A sibling (``<name>.new``) to write ``path``'s next content into, for content that must be
    checked before it lands: it replaces ``path`` (rename, then the folder is synced) only when the
    block succeeds, and is removed when the block raises, so ``path`` is either old or new, whole."""
    final = Path(path)
    staged = final.with_name(final.name + ".new")
    try:
        yield staged
        os.replace(staged, final)
        _fsync_dir(final.parent)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise OutputError(f"{final}: cannot write: {_os_problem(exc)}; nothing was changed") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staged)
        raise


def _resolved(path: str | Path) -> Path:
    return Path(os.path.realpath(os.path.abspath(path)))


_UNKNOWN = (-1, -1)


def _file_id(path: str | Path) -> tuple[int, int] | None:
    """``(device, inode)`` of the file ``path`` names (symlinks followed), ``None`` when nothing is
    there, ``_UNKNOWN`` when it cannot be told (no permission, say).

    It spares :func:`guard_output` resolving every input (``realpath`` takes an ``lstat`` per path
    component of each data and prompt file). ``realpath`` of a
    normalized path (``abspath``: no ``..`` left) that exists is the path of the very file the
    kernel finds there, so where that file is not the one at the resolved output path (or nothing
    is there), the two resolved paths differ. Every other input (missing, unknown, or the same
    file: a hard link perhaps) is compared by resolved path, as before."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError):
        return _UNKNOWN
    return st.st_dev, st.st_ino


def guard_output(output: str | Path, *, inputs: Iterable[str | Path | None] = (),
                 read_dirs: Iterable[str | Path | None] = (), writes: Iterable[str] = (),
                 option: str = "--out") -> None:
    """The one guard every writing command calls before it writes: refuse an output path that
    resolves to one of the command's inputs, that lies inside a folder the command reads (a run
    folder, a model folder, seeds/), or, for an output folder, whose ``writes`` (the names the
    command writes in it; ``"."``: anything in it) would land on an input file or folder.

    Symlinks and ``..`` are resolved first, so ``-o ./x/../config.json`` and an output folder whose
    ``predictions`` is a link into a model folder are caught too. Inputs include those a command
    finds indirectly (seeds files, a manifest's recorded data, a run's manifest copy).
    """
    inputs, read_dirs = list(inputs), list(read_dirs)
    out = _resolved(output)
    out_id = _file_id(out)
    for item in inputs:
        if item is None:
            continue
        if out_id is not _UNKNOWN:
            item_id = _file_id(os.path.abspath(item))
            if item_id is not None and item_id is not _UNKNOWN and item_id != out_id:
                continue  # another existing file than the resolved output names (see _file_id)
        if out == _resolved(item):
            raise OutputError(f"{option} {output}: is one of this command's inputs ({item}); "
                              "choose another output path")
    for folder in read_dirs:
        if folder is None:
            continue
        root = _resolved(folder)
        if out == root or root in out.parents:
            raise OutputError(f"{option} {output}: lies inside {folder}, which this command reads; "
                              "choose a path outside it")
    spots = [(w, _resolved(out / w)) for w in writes]
    for item in (*inputs, *read_dirs) if spots else ():
        if item is None:
            continue
        where = _resolved(item)
        for name, spot in spots:
            if where == spot or spot in where.parents:
                held = "holds" if name == "." else f"would write {name} over"
                raise OutputError(f"{option} {output}: {held} {item}, which this command reads; "
                                  "choose another output folder")


def guard_outputs(outputs: Iterable[tuple[str, str | Path | None]], *, inputs: Iterable[str | Path | None] = (),
                  read_dirs: Iterable[str | Path | None] = (), writes: Iterable[str] = ()) -> None:
    """:func:`guard_output` for several ``(option, path)`` outputs of one command (``None`` skipped)."""
    inputs, read_dirs, writes = list(inputs), list(read_dirs), list(writes)
    for option, path in outputs:
        if path is not None and str(path) != "-":
            guard_output(path, inputs=inputs, read_dirs=read_dirs, writes=writes, option=option)


def _type_name(t: type) -> str:
    return {dict: "object", list: "array", str: "string"}.get(t, t.__name__)


def json_type(obj: Any) -> str:
    """The JSON name of a parsed value's type (for "expected X, got Y" messages)."""
    return _json_type(obj)


def _json_type(obj: Any) -> str:
    if isinstance(obj, dict):
        return "object"
    if isinstance(obj, list):
        return "array"
    if isinstance(obj, str):
        return "string"
    if isinstance(obj, bool):
        return "boolean"
    if obj is None:
        return "null"
    return "number"
