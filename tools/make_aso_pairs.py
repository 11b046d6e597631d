"""Writes seam_repro/data/reference/aso_pairs.json (``make aso-pairs``): ASO of every pair of the
paper's models on every dataset, oriented and sampled as a ``--reference paper`` report ranks them
(reference models in the table's order, each known by its surrogate runs), at the default constants.

A report looks each pair up by :func:`seam_repro.analysis.aso.pair_digest` and computes any pair the
file does not hold, so a stale file costs time, never a wrong number; tests/test_aso.py fails when
the file no longer holds every pair of the shipped reference or a sampled entry differs from a fresh
computation. Run it after changing the reference table or the ASO constants.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from seam_repro.analysis.aso import KNOWN_PAIRS, AsoParams, aso, pair_digest, pair_rng, present_runs
from seam_repro.analysis.reference import load_reference
from seam_repro.analysis.report import collect_entries

OUT = Path(__file__).resolve().parents[1] / "seam_repro" / KNOWN_PAIRS


def reference_pairs() -> list[tuple[str, str, str, list[float], list[float]]]:
    """(dataset, a, b, a_runs, b_runs) of every pair a report against the paper computes between two
    paper models, ``a`` the earlier in the table."""
    out = []
    for dataset, entries in collect_entries([], load_reference("paper")).items():
        runs, _ = present_runs({e.model: e.runs for e in entries}, dataset)
        models = list(runs)
        out += [(dataset, a, b, runs[a], runs[b]) for i, a in enumerate(models) for b in models[i + 1:]]
    return out


def main() -> int:
    params = AsoParams()
    pairs = {}
    for dataset, a, b, a_runs, b_runs in reference_pairs():
        res = aso(a_runs, b_runs, pair_rng(params.seed, dataset, a, b), params)
        pairs[pair_digest(dataset, a, b, a_runs, b_runs, params)] = [res.epsilon, res.sigma]
    head = {"about": "ASO (epsilon, sigma) of the paper's model pairs, by pair_digest; tools/make_aso_pairs.py",
            "params": params.as_dict()}
    rows = ",\n".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs.items())  # one pair a line
    OUT.write_text(json.dumps(head)[:-1] + ', "pairs": {\n' + rows + "\n}}\n", "utf-8")
    print(f"wrote {len(pairs)} pairs to {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
