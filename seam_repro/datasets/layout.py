"""One meaning of ``--data-dir DIR``: a folder of local data with one folder per dataset.

Each SEAM dataset is looked up under DIR by name (``DIR/SciCo``) or by the names the data comes
with elsewhere: upstream's own folders (``ecb``, ``musique``, ``openasp`` from the Drive zip) and
Hugging Face layouts (``allenai/scico`` or ``scico`` with files under ``default/``, the HF cache's
``datasets--allenai--scico/snapshots/<commit>/``). The rules are data (``data/dataset_layout.json``);
``seam-repro datasets check`` prints what they found. ``fetch --data-dir`` reads the same folders
for its offline copies, so one folder serves every command.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections import deque
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

MAX_DEPTH = 3


@dataclass(frozen=True)
class Layout:
    """Where one dataset may sit: folder aliases, marker files, preferred subfolders."""

    aliases: tuple[str, ...]
    markers: tuple[str, ...]
    subdirs: tuple[str, ...]
    expected: str


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


_RAW = json.loads(resources.files("seam_repro").joinpath("data/dataset_layout.json").read_text("utf-8"))
LAYOUTS: dict[str, Layout] = {n: Layout(tuple(d["aliases"]), tuple(d["markers"]), tuple(d["subdirs"]), d["expected"])
                              for n, d in _RAW["datasets"].items()}


def _has_marker(folder: Path, markers: tuple[str, ...]) -> bool:
    try:
        names = [p.name for p in folder.iterdir() if p.is_file()]
    except OSError:
        return False
    return any(fnmatch.fnmatch(n, m) for n in names for m in markers)


def _descend(folder: Path, layout: Layout) -> Path | None:
    """``folder`` or the shallowest subfolder (known subdirs first) holding a marker file."""
    queue: deque[tuple[Path, int]] = deque([(folder, 0)])
    while queue:
        cur, depth = queue.popleft()
        if _has_marker(cur, layout.markers):
            return cur
        if depth == MAX_DEPTH:
            continue
        try:
            subs = sorted(p for p in cur.iterdir() if p.is_dir() and not p.name.startswith("."))
        except OSError:
            continue
        preferred = [p for p in subs if p.name in layout.subdirs]
        queue.extend((p, depth + 1) for p in preferred + [p for p in subs if p not in preferred])
    return None


def alias_folders(data_dir: Path, name: str) -> list[Path]:
    """Folders under ``data_dir`` (depth 1, then 2) named like dataset ``name``; exact name first."""
    layout = LAYOUTS.get(name)
    wanted = {_norm(a) for a in (layout.aliases if layout else (name,))} | {_norm(name)}
    exact = data_dir / name
    found = [exact] if exact.is_dir() else []
    top = sorted(p for p in data_dir.iterdir() if p.is_dir()) if data_dir.is_dir() else []
    below = sorted(q for p in top for q in p.iterdir() if q.is_dir() and not q.name.startswith("."))
    return found + [p for p in top + below if _norm(p.name) in wanted and p not in found]


def find_dataset_dir(data_dir: Path, name: str) -> Path | None:
    """The folder of ``name`` under ``data_dir`` that holds its files, or None."""
    layout = LAYOUTS.get(name)
    for folder in alias_folders(Path(data_dir), name):
        if layout is None:
            return folder
        hit = _descend(folder, layout)
        if hit is not None:
            return hit
    return None


def describe_expected(name: str) -> str:
    """The folder names and files ``find_dataset_dir`` looks for (for error messages)."""
    layout = LAYOUTS.get(name)
    if layout is None:
        return f"a folder named {name}"
    names = ", ".join(dict.fromkeys(a.rsplit("/", 1)[-1] for a in layout.aliases[:4]))
    return f"a folder named {names} (any case) holding {layout.expected}"
