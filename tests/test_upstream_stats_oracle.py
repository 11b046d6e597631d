"""AR and ARSD against the published statistics code itself, run as an oracle (opt-in: needs a
checkout of seam-benchmark/SEAM@6ad83f4 in $SEAM_UPSTREAM_SRC; pandas, matplotlib and scipy, which
the kit depends on anyway; ``seaborn``, imported by upstream but never used, is stubbed, and the box
plot's ``labels=``, which matplotlib >= 3.11 calls ``tick_labels=``, is renamed on the way in).

The same per-instance scores go to the kit (``instance_scores.jsonl`` / ``summary.json``, read by
``seam-repro report``'s loader) and, in upstream's own ``results.json`` form, to upstream's
``scripts/evaluation/statistical_analysis.py`` (one folder per dataset, ``ranking_asd.csv``) and then
``compare_models.py``, whose AR and ARSD values are taken from what it hands to its plot function.
Summarization gets R1/R2/RL on 0-1 (upstream takes the geometric mean x100 itself), FuseReviews
faithfulness and coverage (upstream takes the harmonic mean), MuSiQue ``all_f1`` on 0-1, coreference
one CoNLL-F1 per run on 0-100: the scales whose mix made upstream round ROUGE and CoNLL to 0.001.
Models are separated far enough that every pairwise eps_min is exactly 0 or 1, so upstream's
unseeded bootstrap cannot change a rank; one model has a near-zero CoNLL mean that upstream counts
(stored as 3.0 in its csv) and a near-zero MuSiQue mean it leaves out (stored as 0.0), and one model
is missing from ECB.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_aggregate import write_scores

from seam_repro.analysis.aso import AsoParams, upstream_stored
from seam_repro.analysis.report import build_report
from seam_repro.analysis.submit import load_inputs
from seam_repro.metrics.fic import hmean_100
from seam_repro.metrics.rouge import geometric_mean_100

UPSTREAM = os.environ.get("SEAM_UPSTREAM_SRC", "")
pytestmark = pytest.mark.skipif(
    not (UPSTREAM and (Path(UPSTREAM) / "scripts" / "evaluation" / "compare_models.py").is_file()),
    reason="SEAM_UPSTREAM_SRC (a SEAM@6ad83f4 checkout) not set")

DRIVER = r"""
import json, os, sys, types
src, results_dir, out = sys.argv[1:4]
sys.path.insert(0, os.path.join(src, "scripts", "evaluation"))
sys.modules.setdefault("seaborn", types.ModuleType("seaborn"))  # imported by upstream, never used
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
_boxplot = plt.boxplot
def boxplot(*args, labels=None, **kwargs):  # matplotlib 3.9 renamed it tick_labels, 3.11 dropped labels
    return _boxplot(*args, tick_labels=labels, **kwargs)
plt.boxplot = boxplot
import numpy as np
np.random.seed(0)
import statistical_analysis, compare_models
for ds in sorted(os.listdir(results_dir)):
    statistical_analysis.analyze_results(os.path.join(results_dir, ds, "results.json"))
captured = {}
def plot(sorted_output, COLORS, x_label, figs_dir, fig_name):
    captured[fig_name] = {str(k): float(v) for k, v in sorted_output.iloc[0].items()}
compare_models.plot = plot
compare_models.main(results_dir)
with open(out, "w") as f:
    json.dump(captured, f)
"""

MODELS = ("m_a", "m_b", "m_c", "m_d")
RUNS, PER_RUN = 10, 5
TASK = {"MultiNews": "sum", "OpenASP": "sum", "FuseReviews": "fic", "MusiQue": "qa", "ECB": "coref", "SciCo": "coref"}
METRIC = {"sum": "rouge_geo", "fic": "fic_f1", "qa": "musique_f1", "coref": "conll_f1"}
LEVEL = {"m_a": 0.6, "m_b": 0.4, "m_c": 0.2, "m_d": 0.0}
"""Each model's level on 0-1; run means of neighbours never overlap."""


def _unit(rng: np.random.Generator, model: str, ds: str) -> float:
    """One 0-1 value: the model's level plus noise; m_d is near zero on MuSiQue and SciCo."""
    if model == "m_d" and ds == "MusiQue":
        return float(rng.uniform(0.0, 0.0008))          # mean ~0.04 on 0-100: stored 0.0, left out
    return min(1.0, LEVEL[model] + 0.05 + float(rng.uniform(0.0, 0.1)))


def _make(rng: np.random.Generator, run_dir: Path, results_dir: Path) -> None:
    upstream: dict[str, dict[str, Any]] = {ds: {"sample_lengths": {}, "models": {}} for ds in TASK}
    for model in MODELS:
        kit: dict[str, dict[str, Any]] = {}
        for ds, task in TASK.items():
            if model == "m_c" and ds == "ECB":
                continue                                  # NA, as Gemma-7B on ECB in the paper
            entry: dict[str, Any] = {"scores": [], "run_index": [], "ids": []}
            instances: list[tuple[int, str, float | None, bool]] = []
            runs: dict[int, float] = {}
            for run in range(RUNS):
                ids = [f"{ds}-{run}-{i}" for i in range(PER_RUN)]
                for iid in ids:
                    upstream[ds]["sample_lengths"][iid] = 100 + len(upstream[ds]["sample_lengths"])
                entry["run_index"].append(run)
                entry["ids"].append(ids)
                if task == "coref":
                    f1 = round(rng.uniform(0.01, 0.05), 2) if (model == "m_d" and ds == "SciCo") else \
                        (0.0 if model == "m_d" else round(100 * _unit(rng, model, ds), 2))
                    entry["scores"].append({"conll_F1": f1})
                    runs[run] = f1
                    instances += [(run, iid, None, True) for iid in ids]
                elif task == "sum":
                    r = [[_unit(rng, model, ds) for _ in ids] for _ in range(3)]
                    entry["scores"].append(dict(zip(("rouge1", "rouge2", "rougeL"), r, strict=True)))
                    instances += [(run, iid, geometric_mean_100(r[0][i], r[1][i], r[2][i]), True)
                                  for i, iid in enumerate(ids)]
                elif task == "fic":
                    faith, cover = [_unit(rng, model, ds) for _ in ids], [_unit(rng, model, ds) for _ in ids]
                    entry["scores"].append({"faithfulness": faith, "coverage": cover})
                    instances += [(run, iid, hmean_100(faith[i], cover[i]), True) for i, iid in enumerate(ids)]
                else:
                    f1s = [_unit(rng, model, ds) for _ in ids]
                    entry["scores"].append({"all_f1": f1s})
                    instances += [(run, iid, 100 * f1s[i], i % 2 == 0) for i, iid in enumerate(ids)]
            upstream[ds]["models"][model] = entry
            kit[ds] = {"metric": METRIC[task], "instances": instances, **({"runs": runs} if task == "coref" else {})}
        write_scores(run_dir, model, kit)
    for ds, data in upstream.items():
        (results_dir / ds).mkdir(parents=True)
        (results_dir / ds / "results.json").write_text(json.dumps(data), encoding="utf-8")


def test_ar_and_arsd_equal_upstream_compare_models(tmp_path: Path) -> None:
    results_dir, run_dir = tmp_path / "upstream", tmp_path / "run"
    _make(np.random.default_rng(2024), run_dir, results_dir)
    out = tmp_path / "captured.json"
    proc = subprocess.run([sys.executable, "-c", DRIVER, UPSTREAM, str(results_dir), str(out)],
                          capture_output=True, text=True, timeout=900, env={**os.environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    theirs = json.loads(out.read_text())

    rep = build_report(load_inputs([run_dir]), None, AsoParams(b=200))
    st = rep["stability"]
    assert st["arsd_rule"] == "as published"
    for ds in TASK:                                          # same order, same stored (mean, std)
        with (results_dir / ds / "ranking_asd.csv").open() as f:
            rows = list(csv.DictReader(f))
        ours = rep["datasets"][ds]["rows"]
        assert [r["model"] for r in ours] == [r["model_name"] for r in rows], ds
        # "(np.float64(2178.2), np.float64(69.4))" under numpy 2: compare_models eval()s it; parsed here
        stored = [re.findall(r"-?\d+\.\d+(?:e[-+]?\d+)?", r["score"]) for r in rows]
        assert [(upstream_stored(r["mean"], ds), upstream_stored(r["std"], ds)) for r in ours] == \
            [(float(m), float(s)) for m, s in stored], ds
    assert set(st["average_rank"]) == set(theirs["ranking"])
    for m, v in theirs["ranking"].items():
        assert st["average_rank"][m] == pytest.approx(v, abs=1e-9), m
    assert set(st["arsd"]) == set(theirs["rsd_for_model"])
    for m, v in theirs["rsd_for_model"].items():
        assert st["arsd"][m] == pytest.approx(v, abs=1e-9), m
    assert set(st["arsd_by_dataset"]) == set(theirs["rsd_for_task"])
    for ds, v in theirs["rsd_for_task"].items():
        assert st["arsd_by_dataset"][ds] == pytest.approx(v, abs=1e-9), ds
    assert st["arsd_excluded"] == {"m_d": ["MusiQue", "ECB"]}   # SciCo's 0.03 is counted, as upstream does
    # the unrounded ARSD beside it differs (else this oracle could not tell the roundings apart)
    assert any(abs(st["unrounded"]["arsd"][m] - st["arsd"][m]) > 1e-6 for m in MODELS)
