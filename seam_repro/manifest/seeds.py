"""Write ``seeds/<name>.json`` for every frozen manifest under ``manifests/``
(``python -m seam_repro.manifest.seeds [ROOT]``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from seam_repro.files.atomic import atomic_write_json
from seam_repro.manifest.format import load_manifest


def seeds_record(manifest: dict[str, Any], name: str) -> dict[str, Any]:
    """The frozen seeds and prompt digests of a shipped manifest (``seeds/<name>.json``): a
    submitted bundle's manifest and prompt digests must equal them."""
    return {
        "manifest": name,
        "manifest_digest": manifest["digest"],
        "profile": manifest["profile"],
        "random_seed": manifest["config"]["random_seed"],
        "prompt_digest": manifest["prompt_digest"],
        "runs": [
            {"dataset": r["dataset"], "run": r["run"], "sample_seed": r.get("sample_seed"),
             "prompt_digest": r["prompt_digest"],
             "gen_seeds": {i["id"]: i["gen_seed"] for i in r["instances"]}}
            for r in manifest["runs"]
        ],
    }


def write_seeds(manifests_dir: Path, seeds_dir: Path) -> list[Path]:
    """Write the seeds file of each frozen manifest, now (not lazily, as a generator would); their paths."""
    written = []
    for path in sorted(manifests_dir.glob("*.json")):
        if path.name.endswith(".config.json"):
            continue
        manifest = load_manifest(path)
        if manifest["frozen"]:
            atomic_write_json(seeds_dir / path.name, seeds_record(manifest, path.name), indent=1, sort_keys=True)
            written.append(seeds_dir / path.name)
    return written


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    for p in write_seeds(root / "manifests", root / "seeds"):
        print(f"wrote {p}")
