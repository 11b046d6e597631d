"""Scoring time against the published evaluation code on the same outputs: ``seam-repro score
--profile upstream`` beside upstream SEAM's own evaluation classes (``tools/upstream_eval_oracle.py``
runs them as ``scripts/evaluate_dataset.py`` builds them), per dataset, at bench scale
(benchmarks/synth.py: 680 prompts over 6 datasets x 10 runs).

The outputs are made from the gold targets (coreference clusters partly kept and merged, QA answers
in upstream's dict form, summaries cut from the reference), imported into a run folder per dataset
(``seam-repro import --jsonl``) and given to upstream as its records (``prediction`` = prompt +
output, as a Llama-3-style model's decoded text). ``score`` reports coreference as published and
as intended, so upstream's coreference is run both ways too (its gold file unflushed, and flushed). Each side runs as its own process, start-up
included, timed alternately (best of N, CPU time with children: perl for coreference).

FuseReviews is skipped: upstream scores it with the FIC models (flan-t5-xxl and an NLI model), which
need a GPU and downloads. Needs upstream's code ($SEAM_UPSTREAM_SRC, else the read-only mirror),
``rouge_score``, perl and scorer.pl ($CONLL_SCORER, else the mirror); a missing piece skips the
datasets that need it, saying so.

Usage: python benchmarks/bench_score_upstream.py [--repeat 3] [--scale 1]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]
from bench import SCORER_SNAPSHOT, UPSTREAM_SNAPSHOT, Timing, _env, _extract, kit, run_pair  # noqa: E402
from synth import scaled_seam_data, seam_config  # noqa: E402

from seam_repro.scoring.extract import upstream_generated_text  # noqa: E402

PROMPTS = REPO / "manifests" / "fixtures" / "prompts"
MODEL = "meta-llama/Meta-Llama-3-8B-Instruct"
ID_KEYS = {"ECB": "topic_id", "SciCo": "sample_id", "MusiQue": "id", "MultiNews": "id", "OpenASP": "guid"}
SKIPPED = {"FuseReviews": "upstream scores it with the FIC models (flan-t5-xxl, NLI): GPU and downloads"}


def output_for(rec: dict[str, Any], rng: random.Random) -> str:
    """A model-like output from the gold: most clusters kept, some merged or dropped; the answer in
    upstream's dict form (sometimes another one); the reference summary's first sentences."""
    target = rec["target"]
    if rec["task"] == "coreference":
        kept = [c for c in target if rng.random() < 0.8]
        if len(kept) > 2 and rng.random() < 0.3:
            kept = [kept[0] + kept[1], *kept[2:]]
        return f"The clusters are {kept}"
    if rec["task"] == "qa":
        answer = target.get("answer_content", "") if rng.random() < 0.7 else "something else"
        return str({"is_answerable": bool(target.get("is_answerable")), "answer_content": answer})
    words = str(target).split()
    return " ".join(words[: max(1, int(len(words) * rng.uniform(0.3, 0.9)))])


def prepare(work: Path, scale: int = 1) -> tuple[Path, dict[str, list[dict[str, Any]]], dict[str, str]]:
    """The manifest, its records per dataset (with outputs) and the outputs' JSONL per dataset, at
    ``scale`` times the bench data."""
    from seam_repro.manifest.prompts import render_records
    from seam_repro.manifest.trust import load_trusted

    data = scaled_seam_data(work / "data", copies=4 * scale)
    (work / "config.json").write_text(json.dumps(seam_config(data)), encoding="utf-8")
    manifest = work / "m.json"
    subprocess.run(kit("sample", str(work / "config.json"), "-o", str(manifest), "--prompts-dir", str(PROMPTS)),
                   env=_env(), check=True, capture_output=True, cwd=REPO)
    rng = random.Random(0)
    by_ds: dict[str, list[dict[str, Any]]] = {}
    for rec in render_records(load_trusted(manifest), prompts_dir=PROMPTS):
        rec["output"] = output_for(rec, rng)
        by_ds.setdefault(rec["dataset"], []).append(rec)
    jsonl = {}
    for ds, recs in by_ds.items():
        jsonl[ds] = "".join(json.dumps({"dataset": ds, "run": r["run"], "instance_id": r["instance_id"],
                                        "prompt_sha256": r["prompt_sha256"], "output": r["output"]}) + "\n"
                            for r in recs)
    return manifest, by_ds, jsonl


def upstream_tasks(ds: str, recs: list[dict[str, Any]]) -> str:
    """One oracle task per run, as upstream evaluates a run's file; for coreference twice, as
    published and as intended (gold file flushed), since ``score`` reports both."""
    runs: dict[int, list[dict[str, Any]]] = {}
    for r in recs:
        target_key = "targets" if r["task"] == "coreference" else "target"
        runs.setdefault(r["run"], []).append({ID_KEYS[ds]: r["instance_id"], target_key: r["target"],
                                              "prediction": upstream_generated_text(r["prompt"], r["output"])})
    modes = ("published", "flushed") if recs[0]["task"] == "coreference" else ("published",)
    return "".join(json.dumps({"key": [ds, run, mode], "ds_name": ds, "gold": mode, "predictions": preds}) + "\n"
                   for run, preds in sorted(runs.items()) for mode in modes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="best of N (alternating kit and upstream)")
    ap.add_argument("--scale", type=int, default=1, help="multiple of the bench data (10: 6,440 prompts)")
    args = ap.parse_args()
    print(f"# load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    print("| dataset | prompts | `score --profile upstream` | upstream evaluation | ratio (CPU) | ratio (wall) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        src = os.environ.get("SEAM_UPSTREAM_SRC") or (str(_extract(UPSTREAM_SNAPSHOT, work / "up") or "") or None)
        scorer = os.environ.get("CONLL_SCORER") or None
        if scorer is None or not Path(scorer).is_file():
            extracted = _extract(SCORER_SNAPSHOT, work / "scorer")
            scorer = str(extracted / "scorer.pl") if extracted else None
        missing_all = None if src else "no upstream code ($SEAM_UPSTREAM_SRC unset, no mirror)"
        if importlib.util.find_spec("rouge_score") is None:
            missing_all = missing_all or "rouge_score is not installed (upstream imports it)"
        manifest, by_ds, jsonl = prepare(work, args.scale)
        their_env = dict(_env(), SEAM_UPSTREAM_SRC=src or "")
        for ds, recs in by_ds.items():
            reason = SKIPPED.get(ds) or missing_all
            if reason is None and recs[0]["task"] == "coreference" and not (scorer and shutil.which("perl")):
                reason = "no scorer.pl with perl ($CONLL_SCORER unset, no mirror)"
            if reason:
                print(f"| {ds} | {len(recs)} | | skipped: {reason} | | |")
                continue
            outputs, run_dir = work / f"{ds}.jsonl", work / f"run-{ds}"
            outputs.write_text(jsonl[ds], encoding="utf-8")
            subprocess.run(kit("import", str(manifest), "--jsonl", str(outputs), "--model", MODEL, "--out",
                               str(run_dir), "--prompts-dir", str(PROMPTS)), env=_env(), check=True,
                           capture_output=True, cwd=REPO)
            tasks = work / f"{ds}.tasks.jsonl"
            tasks.write_text(upstream_tasks(ds, recs), encoding="utf-8")
            oracle = [sys.executable, str(REPO / "tools" / "upstream_eval_oracle.py")]
            if scorer:
                oracle += ["--scorer", str(Path(scorer).parent)]
            theirs_cmd = ["sh", "-c", 'exec "$0" "$@" < "$TASKS" > /dev/null', *oracle]
            ours_cmd = kit("score", str(run_dir), "--profile", "upstream", "--no-fic", "-o", str(work / f"s-{ds}"))
            subprocess.run(ours_cmd, env=_env(), check=True, capture_output=True, cwd=REPO)  # warm-up, and it works
            subprocess.run(theirs_cmd, env=dict(their_env, TASKS=str(tasks)), check=True, capture_output=True)
            ours, theirs = run_pair([ours_cmd], [theirs_cmd], args.repeat, dict(their_env, TASKS=str(tasks)))
            print(f"| {ds} | {len(recs)} | {_fmt2(ours)} | {_fmt2(theirs)} | {theirs.cpu / ours.cpu:.1f}x | "
                  f"{theirs.wall / ours.wall:.1f}x |")
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def _fmt2(t: Timing) -> str:
    return f"{t.cpu:.2f} s CPU, {t.wall:.2f} s wall"


if __name__ == "__main__":
    main()
