"""Static facts about the six SEAM datasets (what ``seam-repro datasets list`` prints).

Kept out of ``datasets/__init__.py``, which every command that loads data imports, so the table is
built only where it is used.
"""

from __future__ import annotations

from typing import NamedTuple

from seam_repro.specs import load_suite


class DatasetInfo(NamedTuple):
    """Static facts about one dataset (what ``seam-repro datasets list`` prints)."""

    name: str
    task: str
    default_split: str
    source: str
    """Lock-file source name that provides the data (see ``data/sources.lock.json``)."""


_SEAM_SOURCES: dict[str, str] = {
    "ECB": "seam-drive-zip", "FuseReviews": "hf-fusereviews", "SciCo": "hf-scico",
    "MultiNews": "hf-multinews", "MusiQue": "seam-drive-zip", "OpenASP": "seam-drive-zip",
}
"""Where each SEAM dataset comes from; everything else is in the suite file."""


DATASET_INFO: dict[str, DatasetInfo] = {
    name: DatasetInfo(name, spec.task, spec.default_split, _SEAM_SOURCES[name])
    for name, spec in load_suite("seam").datasets.items()
}
"""Keyed by the upstream dataset name, in upstream ``generate.json`` order; task and split come
from ``data/suites/seam.json`` so the two cannot disagree."""
