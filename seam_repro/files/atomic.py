"""Atomic writes (temp file + fsync + rename; folders built as a hidden sibling and renamed), with
temporaries named by their host and pid so the next write of the same target removes what a killed
process left (``sweep_leftovers``)."""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from seam_repro.errors import SeamReproError
from seam_repro.files.json_text import dumps_json, jsonl_line


class OutputError(SeamReproError):
    """An output that cannot be written where asked (over an input, below a file, read-only, disk full)."""


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
    if pid != os.getpid():  # our own pid needs no probe
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:  # no permission: another user's live process
            pass
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
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
            removed.append(entry.name)
    return removed


@contextlib.contextmanager
def owned_tempdir(prefix: str) -> Iterator[Path]:
    """A private folder ``$TMPDIR/<prefix><owner token>``, removed when the block ends; what a
    killed earlier run of the same command left under that prefix is removed first."""
    root = Path(tempfile.gettempdir())
    sweep_leftovers(root, prefix)
    work = root / f"{prefix}{owner_token()}"
    work.mkdir(mode=0o700)
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def temp_sibling(p: Path) -> tuple[int, str]:
    """Create a new private file ``.<name>.<owner token>.tmp`` beside ``p``, its folder created if
    need be (exclusive, no symlink followed, mode 0600, not inherited by child processes): what
    ``tempfile.mkstemp`` does, with a name that says which process owns it, so what a killed earlier
    write of ``p`` left there is removed first (:func:`sweep_leftovers`)."""
    ensure_dir(p.parent)
    sweep_leftovers(p.parent, f".{p.name}.", ".tmp")
    tmp = os.path.join(p.parent, f".{p.name}.{owner_token()}.tmp")  # 48 random bits: no retry on a clash
    return os.open(tmp, _CREATE_NEW, 0o600), tmp


def atomic_write_bytes(path: str | Path, data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` (bytes, or byte chunks: never joined into a second copy) to ``path`` through
    :func:`atomic_writer`; on failure ``path`` is left as it was and an :class:`OutputError` names it."""
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
    try:
        fd, tmp = temp_sibling(p)
    except OSError as exc:
        raise _write_failed(p, exc) from None
    with _into_place(Path(tmp), p, _unlink), os.fdopen(fd, "wb") as fh:
        os.fchmod(fd, _file_mode(p))
        yield fh
        fh.flush()
        os.fsync(fd)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any, *, indent: int | None = 1, sort_keys: bool = False) -> None:
    atomic_write_text(path, dumps_json(obj, indent=indent, sort_keys=sort_keys))


def atomic_write_jsonl(path: str | Path, records: Iterable[Any]) -> None:
    """One compact JSON line per record, written atomically a line at a time (never joined in memory)."""
    atomic_write_bytes(path, map(jsonl_line, records))


def _write_failed(p: Path, exc: OSError) -> OutputError:
    return OutputError(f"{p}: cannot write: {_os_problem(exc)}; nothing was changed")


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


@contextlib.contextmanager
def _into_place(work: Path, final: Path, discard: Callable[[Path], None]) -> Iterator[Path]:
    """Rename ``work`` to ``final`` (then sync the folder) when the block succeeds; when it raises,
    ``discard`` the work, and an OSError becomes an :class:`OutputError` naming ``final``."""
    try:
        yield work
        os.replace(work, final)
        _fsync_dir(final.parent)
    except BaseException as exc:
        discard(work)
        if isinstance(exc, OSError):
            raise _write_failed(final, exc) from None
        raise


def _fsync_dir(path: Path) -> None:
    """Make a rename durable; folders cannot be opened for fsync on every platform, so best effort."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    with contextlib.suppress(OSError):
        os.fsync(fd)
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
    with _into_place(work, final, lambda w: shutil.rmtree(w, ignore_errors=True)):
        yield work


@contextlib.contextmanager
def staged_file(path: str | Path) -> Iterator[Path]:
    """A sibling (``<name>.new``) to write ``path``'s next content into, for content that must be
    checked before it lands: it replaces ``path`` (rename, then the folder is synced) only when the
    block succeeds, and is removed when the block raises, so ``path`` is either old or new, whole."""
    final = Path(path)
    with _into_place(final.with_name(final.name + ".new"), final, _unlink) as staged:
        yield staged
