"""Static facts about the six SEAM datasets (what ``seam-repro datasets list`` prints).

Kept out of ``datasets/__init__.py``, which every command that loads data imports, so the table is
built only where it is used (``from seam_repro.datasets import DATASET_INFO`` still works).
"""

from __future__ import annotations

from typing import NamedTuple

from seam_repro.specs import load_suite


class DatasetInfo(NamedTuple):
    """Static facts about one dataset (what ``seam-repro datasets list`` prints)."""

    name: str
    task: str
    default_split: str
    source_kind: str
    """``hf`` (Hugging Face dataset), ``drive`` (upstream Google Drive zip) or ``xml`` (raw corpus)."""
    source: str
    """Lock-file source name that provides the data (see ``data/sources.lock.json``)."""
    module: str


_SEAM_SOURCES: dict[str, tuple[str, str]] = {
    "ECB": ("drive", "seam-drive-zip"), "FuseReviews": ("hf", "hf-fusereviews"), "SciCo": ("hf", "hf-scico"),
    "MultiNews": ("hf", "hf-multinews"), "MusiQue": ("drive", "seam-drive-zip"), "OpenASP": ("drive", "seam-drive-zip"),
}
"""Where each SEAM dataset comes from (lock-file source names); everything else is in the suite file."""


DATASET_INFO: dict[str, DatasetInfo] = {
    name: DatasetInfo(name, spec.task, spec.default_split, *_SEAM_SOURCES[name], spec.loader.rsplit(".", 1)[-1])
    for name, spec in load_suite("seam").datasets.items()
}
"""Keyed by the upstream dataset name, in upstream ``generate.json`` order; task, split and loader
come from ``data/suites/seam.json`` so the two cannot disagree."""
