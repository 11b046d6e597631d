"""Write ``seeds/<name>.json`` for every frozen manifest under ``manifests/`` (``make seeds``)."""

from __future__ import annotations

import sys
from pathlib import Path

from seam_repro.files import atomic_write_json
from seam_repro.manifest import load_manifest, seeds_record


def write_seeds(manifests_dir: Path, seeds_dir: Path) -> list[Path]:
    written = []
    for path in sorted(manifests_dir.glob("*.json")):
        if path.name.endswith(".config.json"):
            continue
        manifest = load_manifest(path)
        if not manifest["frozen"]:
            continue
        out = seeds_dir / path.name
        atomic_write_json(out, seeds_record(manifest, path.name), indent=1, sort_keys=True)
        written.append(out)
    return written


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    for p in write_seeds(root / "manifests", root / "seeds"):
        print(f"wrote {p}")
