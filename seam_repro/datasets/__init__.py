"""Dataset loaders: one module per SEAM dataset, each exposing ``load(path) -> LoadedDataset``.

Each module ports the ``load``/``pre_process`` data handling of the matching upstream SEAM class
(``datasets_classes/**.py`` at seam-benchmark/SEAM@6ad83f4) but stops before any random draw or
rendering: it returns every split, in upstream iteration order, as typed ``Instance`` objects.
This package also holds the small readers shared by the loaders, so every loader reports bad input
the same way (``InputError``: file, record, field, expected form).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError
from seam_repro.files import reading
from seam_repro.hashing import sha256_file
from seam_repro.instances import Instance, LoadedDataset


def load_dataset(name: str, path: str | Path) -> LoadedDataset:
    """Load every split of dataset ``name`` from ``path`` (a folder or file in the source format)."""
    from seam_repro.specs import load_suite

    suite = load_suite("seam")
    return suite.spec(suite.canonical_name(name, str(path), field=None)).load(path)


# ----------------------------------------------------------------------------------------------
# shared readers


def open_text(path: Path, newline: str | None = None) -> io.TextIOBase:
    """Open a UTF-8 text file, transparently gunzipping ``*.gz`` (OpenASP ships ``.jsonl.gz``); read
    whole, once, so its recorded hash (:func:`file_hashes`) needs no second read."""
    data = reading.read_bytes(path, what="dataset file")  # gunzipped if .gz
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline=newline)


def read_rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """Rows of a ``.jsonl``/``.jsonl.gz``/``.parquet`` table as ``(record label, row)`` pairs.

    The label names the row in error messages (``line 7`` for JSONL, ``row 6`` for parquet).
    """
    if path.name.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq

            table = pq.read_table(path)
        except Exception as exc:  # pyarrow raises several unrelated types for a corrupt file
            raise InputError(path, f"cannot read as parquet: {exc}") from None
        return [(f"row {i}", row) for i, row in enumerate(table.to_pylist())]
    return [(f"line {n}", obj) for n, obj in reading.iter_jsonl(path, what="dataset file")]


def split_files(folder: Path, split: str) -> list[Path]:
    """Files that hold ``split`` in ``folder``: ``<split>.<ext>`` or HF-style shards
    (``<split>-00000-of-00001.parquet``, ``<name>-<split>.parquet``), in sorted order."""
    stems = {f: f.name.split(".", 1)[0] for f in sorted(folder.iterdir())
             if f.is_file() and f.name.endswith((".jsonl", ".jsonl.gz", ".parquet"))}
    return [f for f, stem in stems.items() if stem == split or stem.startswith(f"{split}-") or stem.endswith(f"-{split}")]


def require(row: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path, record: object, form: str) -> Any:
    """Return ``row[key]`` if present and of type ``kind``; otherwise a one-line InputError."""
    if key not in row:
        raise InputError(path, f"missing; expected {form}", record=record, field=key)
    value = row[key]
    if not reading.is_a(value, kind):
        raise InputError(path, f"got {type(value).__name__}; expected {form}", record=record, field=key)
    return value


def str_list(value: Any, path: Path, record: object, field: str, form: str = "a list of strings") -> list[str]:
    """Check that ``value`` is a list of strings (sentences, tokens, aliases)."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(path, f"expected {form}", record=record, field=field)
    return value


def file_hashes(base: Path, files: list[Path]) -> dict[str, str]:
    """``relative name -> sha256`` of every file read, recorded in the manifest as provenance."""
    root = base if base.is_dir() else base.parent
    return {f.relative_to(root).as_posix() if f.is_relative_to(root) else f.name: sha256_file(f) for f in files}


def require_dir(path: Path, dataset: str, expected: str) -> Path:
    """The dataset folder, or an InputError saying what the folder should contain."""
    if not path.is_dir():
        raise InputError(path, f"{dataset}: expected a folder with {expected}")
    return path


def jsonl_splits(folder: Path, dataset: str) -> dict[str, Path]:
    """``split name -> file`` for the ``*.jsonl`` files of a folder, sorted by name.

    Upstream globs ``*.jsonl`` only, so when plain files exist the ``*.jsonl.gz`` ones beside them
    are ignored (an extra split would change the document-slot count and the random draws); a
    folder of only ``*.jsonl.gz`` files (the OpenAsp release layout) is read as such.
    """
    out: dict[str, Path] = {}
    files = sorted(f for f in folder.iterdir() if f.is_file())
    suffix = ".jsonl" if any(f.name.endswith(".jsonl") for f in files) else ".jsonl.gz"
    for f in files:
        if f.name.endswith(suffix):
            split = f.name.split(".", 1)[0]
            if split in out:
                raise InputError(f, f"gives split '{split}' that {out[split].name} already gives; expected one file per split")
            out[split] = f
    if not out:
        raise InputError(folder, f"{dataset}: no *.jsonl or *.jsonl.gz files; expected e.g. test.jsonl")
    return out


RowToInstance = Callable[[Path, str, dict[str, Any], str], Instance]
"""(file, record label such as 'line 3', parsed row, split name) -> Instance."""


def load_jsonl_folder(path: str | Path, name: str, expected: str, make: RowToInstance) -> LoadedDataset:
    """Every ``<split>.jsonl`` of a folder (split = file name before the first '.', sorted), one
    instance per line, with the hash of every file read; shared by the JSONL-folder loaders."""
    folder = require_dir(Path(path), name, expected)
    files = jsonl_splits(folder, name)
    splits = {split: [make(f, f"line {n}", row, split) for n, row in reading.iter_jsonl(f, what="dataset file")]
              for split, f in files.items()}
    return LoadedDataset(name=name, splits=splits, files=file_hashes(folder, list(files.values())))
