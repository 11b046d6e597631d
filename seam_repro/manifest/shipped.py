"""The frozen manifests, their fixtures and ``seeds/`` shipped inside the package (``seam_repro/data``).

A clone reaches them through the top-level ``manifests/`` and ``seeds/`` links, an installed wheel
only through here: ``seam-repro replay smoke`` and ``verify paper`` name a shipped manifest, and
``report``/``diff`` find the shipped seeds without any environment variable, wherever the kit runs.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
MANIFESTS_DIR = DATA / "manifests"
SEEDS_DIR = DATA / "seeds"


def shipped_names() -> list[str]:
    """Names of the shipped manifests (file stems; configs and prompt stores left out)."""
    return sorted(p.name.removesuffix(".json") for p in MANIFESTS_DIR.glob("*.json") if not p.name.endswith(".config.json"))


def resolve_manifest(value: str) -> Path | None:
    """A MANIFEST argument as a file: the path itself when it exists, else the shipped manifest it
    names (``paper`` or ``paper.json``), else ``None``. An existing file always wins, so a local
    ``smoke.json`` is never shadowed."""
    given = Path(value)
    if given.is_file():
        return given
    if given.name != value:  # a path with folders that does not exist: not a name
        return None
    stem = value.removesuffix(".json")
    return MANIFESTS_DIR / f"{stem}.json" if stem in shipped_names() else None
