"""Every shipped frozen manifest verifies from the project's own files, and seeds/ is up to date.

This is the CI guard of the smoke protocol: any code change that alters a prompt, a gold target
or a random draw fails here with the (dataset, run, instance) named.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seam_repro.manifest.format import load_manifest
from seam_repro.manifest.seeds import seeds_record
from seam_repro.manifest.trust import load_trusted
from seam_repro.manifest.verify import verify_manifest

REPO = Path(__file__).resolve().parents[1]
FROZEN = [p for p in sorted((REPO / "manifests").glob("*.json"))
          if not p.name.endswith(".config.json") and load_manifest(p)["frozen"]]


@pytest.mark.parametrize("path", FROZEN, ids=lambda p: p.name)
def test_shipped_manifest_verifies(path):
    report = verify_manifest(load_trusted(path))
    assert report.ok, "\n".join(str(m) for m in report.mismatches[:10]) + "\n" + (report.first_diff or "")
    assert report.n_instances > 0


@pytest.mark.parametrize("path", FROZEN, ids=lambda p: p.name)
def test_seeds_file_matches_manifest(path):
    seeds = REPO / "seeds" / path.name
    assert seeds.exists(), f"run `python -m seam_repro.manifest.seeds` to write {seeds}"
    assert json.loads(seeds.read_text()) == seeds_record(load_manifest(path), path.name)


def test_smoke_manifest_covers_every_dataset_and_several_runs():
    m = load_manifest(REPO / "manifests" / "smoke.json")
    assert {r["dataset"] for r in m["runs"]} == {"ECB", "FuseReviews", "SciCo", "MultiNews", "MusiQue", "OpenASP"}
    assert m["config"]["num_different_runs"] >= 2
