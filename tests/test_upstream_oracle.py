"""Parity with the published generator itself, run as an oracle (opt-in: needs a checkout of
seam-benchmark/SEAM@6ad83f4 in $SEAM_UPSTREAM_SRC and the `datasets` package importable, possibly
via $SEAM_UPSTREAM_PYTHONPATH). Every prompt of every (dataset, run) must be byte-identical."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "manifests" / "fixtures"
SHARED_PROMPTS = REPO.parent / "shared" / "seam" / "upstream-6ad83f4" / "prompts"
LAYOUT = {"ECB": "ecb", "FuseReviews": "fusereviews", "SciCo": "scico", "MultiNews": "multinews",
          "MusiQue": "musique", "OpenASP": "openasp"}

pytestmark = pytest.mark.skipif(not os.environ.get("SEAM_UPSTREAM_SRC"), reason="SEAM_UPSTREAM_SRC not set")


def _data_root(tmp: Path) -> Path:
    root = tmp / "data"
    for name, folder in LAYOUT.items():
        dst = root / name
        dst.mkdir(parents=True)
        for f in (FIXTURES / folder).iterdir():
            if name == "OpenASP" and not f.name.endswith(".jsonl"):
                continue  # upstream globs *.jsonl only
            shutil.copy(f, dst / f.name)
    return root


@pytest.mark.parametrize("max_samples,runs,demos,prompts", [(2, 3, 2, "fixtures"), (-1, 10, 3, "upstream")])
def test_prompts_identical_to_upstream_generator(tmp_path, max_samples, runs, demos, prompts):
    prompts_dir = FIXTURES / "prompts" if prompts == "fixtures" else SHARED_PROMPTS
    if not prompts_dir.exists():
        pytest.skip(f"{prompts_dir} absent")
    root = _data_root(tmp_path)
    cfg = {"random_seed": 42, "num_different_runs": runs, "num_demonstrations": demos,
           "max_num_samples": max_samples,
           "datasets": [{"name": n, "split_name": s, "path": str(root / n)} for n, s in
                        [("ECB", "test_events"), ("FuseReviews", "validation"), ("SciCo", "test"),
                         ("MultiNews", "test"), ("MusiQue", "val"), ("OpenASP", "test")]]}
    config = tmp_path / "config.json"
    config.write_text(json.dumps(cfg))
    env = dict(os.environ, PYTHONPATH=os.environ.get("SEAM_UPSTREAM_PYTHONPATH", ""))
    oracle = subprocess.run([sys.executable, str(REPO / "tools" / "upstream_oracle.py"), str(config), str(root),
                             str(prompts_dir)], capture_output=True, text=True, env=env, check=True)
    theirs = defaultdict(list)
    for line in oracle.stdout.splitlines():
        if line.startswith('{"dataset"'):
            r = json.loads(line)
            theirs[(r["dataset"], r["run"])].append(r["prompt"])
    manifest = tmp_path / "m.json"
    out = tmp_path / "p.jsonl"
    subprocess.run([sys.executable, "-m", "seam_repro", "sample", str(config), "-o", str(manifest),
                    "--prompts-dir", str(prompts_dir)], check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "seam_repro", "prompts", str(manifest), "-o", str(out)], check=True,
                   capture_output=True)
    ours = defaultdict(list)
    for line in out.read_text().splitlines():
        r = json.loads(line)
        ours[(r["dataset"], r["run"])].append(r["prompt"])
    assert set(ours) == set(theirs)
    for key in ours:
        assert ours[key] == theirs[key], f"{key} differs from the upstream generator"
