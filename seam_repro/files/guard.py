"""The output guard every writing command calls with all it reads: an output may not resolve to an
input, lie in a folder being read, or write its named files over an input."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from seam_repro.files.atomic import OutputError


def _resolved(path: str | Path) -> Path:
    return Path(os.path.realpath(os.path.abspath(path)))


_UNKNOWN = (-1, -1)


def _file_id(path: str | Path) -> tuple[int, int] | None:
    """``(device, inode)`` of the file ``path`` names (symlinks followed), ``None`` when nothing is
    there, ``_UNKNOWN`` when it cannot be told (no permission, say).

    It spares :func:`guard_output` resolving every input (``realpath`` takes an ``lstat`` per path
    component of each data and prompt file). ``realpath`` of a normalized path (``abspath``: no
    ``..`` left) that exists is the path of the very file the kernel finds there, so where that file
    is not the one at the resolved output path (or nothing is there), the two resolved paths differ.
    Every other input (missing, unknown, or the same file: a hard link perhaps) is compared by
    resolved path."""
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
    inputs, read_dirs = [i for i in inputs if i is not None], [d for d in read_dirs if d is not None]
    out = _resolved(output)
    out_id = _file_id(out)
    for item in inputs:
        if out_id is not _UNKNOWN:
            item_id = _file_id(os.path.abspath(item))
            if item_id is not None and item_id is not _UNKNOWN and item_id != out_id:
                continue  # another existing file than the resolved output names (see _file_id)
        if out == _resolved(item):
            raise OutputError(f"{option} {output}: is one of this command's inputs ({item}); "
                              "choose another output path")
    for folder in read_dirs:
        root = _resolved(folder)
        if out == root or root in out.parents:
            raise OutputError(f"{option} {output}: lies inside {folder}, which this command reads; "
                              "choose a path outside it")
    spots = [(w, _resolved(out / w)) for w in writes]
    for item in (*inputs, *read_dirs) if spots else ():
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
