"""Run the published SEAM generator itself on local files and print its prompts as JSONL.

An independent oracle for the ``upstream`` profile: tests/test_upstream_oracle.py compares its
output with ``seam-repro prompts``. It needs a checkout of seam-benchmark/SEAM@6ad83f4 (never
vendored here) in $SEAM_UPSTREAM_SRC and the Hugging Face ``datasets`` package (upstream imports
it). The three Hugging Face datasets are read from local files in their published layouts
instead of the Hub; MuSiQue/OpenASP split files are visited in sorted order, as seam-repro does.

Usage: python tools/upstream_oracle.py CONFIG DATA_ROOT PROMPTS_DIR   (DATA_ROOT/<Dataset>/...)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path


def main(config: str, data_root: str, prompts_dir: str) -> None:
    src = os.environ["SEAM_UPSTREAM_SRC"]
    sys.path.insert(0, src)
    cfg = json.loads(Path(config).read_text(encoding="utf-8"))
    root = Path(data_root).resolve()
    work = Path(tempfile.mkdtemp(prefix="seam-oracle-"))
    (work / "files").mkdir()
    (work / "files" / "prompts").symlink_to(Path(prompts_dir).resolve())
    os.chdir(work)  # upstream opens files/prompts/<name>.json relative to the working directory

    import datasets_classes.base as base  # type: ignore[import-not-found]
    import pandas as pd
    from datasets_classes.base import Dataset  # type: ignore[import-not-found]

    plain_glob = base.glob
    base.glob = lambda pattern: sorted(plain_glob(pattern))

    def jsonl(path: Path) -> pd.DataFrame:
        return pd.DataFrame([json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line])

    def local_hf(name: str, **_: object) -> dict[str, pd.DataFrame]:
        if name == "allenai/scico":
            return {s: jsonl(root / "SciCo" / f"{s}.jsonl") for s in ("train", "validation", "test")}
        if name == "lovodkin93/FuseReviews":
            files = (("train", "train"), ("validation", "dev"), ("test", "test"))
            return {s: pd.read_csv(root / "FuseReviews" / f"{f}.csv") for s, f in files}
        if name == "multi_news":
            return {s: jsonl(root / "MultiNews" / f"{s}.jsonl") for s in ("train", "validation", "test")}
        raise KeyError(name)

    Dataset._load_from_hf = staticmethod(local_hf)
    from scripts.generate_benchmark import load_all_datasets  # type: ignore[import-not-found]

    entries = [{"name": d["name"], "split_name": d["split_name"], "path": str(root / d["name"])}
               for d in cfg["datasets"]]
    out = load_all_datasets(cfg["num_demonstrations"], entries, cfg["num_different_runs"],
                            cfg.get("max_num_samples", -1), cfg["random_seed"])
    for entry in out:
        for run, inst in enumerate(entry["instances"]):
            for s in inst.all_samples[entry["split_name"]]:
                sys.stdout.write(json.dumps({"dataset": entry["name"], "run": run,
                                             "prompt": s["final_msgs"][0]["content"]}) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
