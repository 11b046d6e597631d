"""Parity with the published evaluation code itself, run as an oracle (opt-in: needs a checkout of
seam-benchmark/SEAM@6ad83f4 in $SEAM_UPSTREAM_SRC, ``rouge_score``, perl and a
reference-coreference-scorers ``scorer.pl`` in $CONLL_SCORER).

One run directory holds awkward outputs of the kinds real models write (prose around answers,
single quotes, apostrophes, unclosed lists and quotes, ids not in the gold, ``[/INST]`` markers,
fabricated next examples, expressions ``eval`` accepts) for three models: one Mistral-style, whose
decoded prompt keeps ``[INST] ... [/INST]``, and one stored as ``seam-repro import`` stores upstream's
own prediction files (decoded template header, some prompts truncated). ``seam-repro score --profile upstream`` must equal
upstream's evaluation instance for instance (ROUGE, MuSiQue) and run for run; coreference run for
run in both modes: as published (upstream's code untouched: unflushed gold file) and as intended
(upstream with the gold file flushed), and instance for instance as intended (each instance
evaluated by upstream as a one-instance run)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from trust_helpers import seal_run_dir

from seam_repro.hashing import sha256_json, sha256_text
from seam_repro.run.importer import split_prediction
from seam_repro.scoring.extract import upstream_generated_text
from seam_repro.scoring.loop import score_run_dir

REPO = Path(__file__).resolve().parents[1]
SCORER = os.environ.get("CONLL_SCORER", "")
pytestmark = pytest.mark.skipif(
    not (os.environ.get("SEAM_UPSTREAM_SRC") and SCORER and Path(SCORER).is_file() and shutil.which("perl")),
    reason="SEAM_UPSTREAM_SRC and CONLL_SCORER (scorer.pl, with perl) not set")

MODELS = {"meta-llama/Meta-Llama-3-8B-Instruct": "plain", "mistralai/Mistral-7B-Instruct-v0.2": "inst",
          "google/gemma-1.1-7b-it": "imported"}
"""How each model's upstream ``prediction`` is formed: prompt + output; ``[INST] prompt [/INST]``
+ output; or as imported from upstream's own files (a decoded ``user\n\n`` header, and for some
instances a right-truncated prompt), stored through ``importer.split_prediction``."""
UPSTREAM_NAME = {"ECB": "ECB", "SciCo": "SciCo", "MusiQue": "MusiQue", "MultiNews": "MultiNews", "OpenASP": "OpenASP"}
ID_KEYS = {"ECB": "topic_id", "SciCo": "sample_id", "MusiQue": "id", "MultiNews": "id", "OpenASP": "guid"}
TASKS = {"ECB": "coreference", "SciCo": "coreference", "MusiQue": "qa", "MultiNews": "summarization",
         "OpenASP": "summarization"}

QA_OUTPUTS = [
    "{'is_answerable': True, 'answer_content': 'Oreth'}",
    "{'is_answerable': True, 'answer_content': 'X'} or {'is_answerable': False, 'answer_content': ''}",
    "The answer is {'is_answerable': True, 'answer_content': \"Mary's house\"} I think.",
    '{"is_answerable": true, "answer_content": "Oreth"}',
    "{'is_answerable': True, 'answer_content': 'Oreth}",
    "{'is_answerable': False, 'answer_content': 'the king's castle'}",
    "[/INST] {'is_answerable': True, 'answer_content': 'Kell'}",
    "Oreth",
    "{'is_answerable': True, 'answer_content': 'Or' 'eth'}",
    "{'is_answerable': True,\n 'answer_content': 'Oreth'}",
    "{'is_answerable': True, 'answer_content': -1 + 2}",
    "*Answer*: {'is_answerable': True, 'answer_content': 'Kell'}\n\n*Instructions*: Answer the next question.",
    "{'is_answerable': True, 'answer_content': 'x', 'n': 1e999}",
    "",
    "{'is_answerable': True, 'answer_content': 'Oreth'}}}",
    "{1, 2, 3} and {'is_answerable': True}",
    "{'is_answerable': True, 'answer_content': f'Or{\"eth\"}'}",
    "{'is_answerable': True, 'answer_content': 'Oreth' if True else 'Kell'}",
    "{'is_answerable': True, 'answer_content': 'Sam\\_Smith'}",
    "I cannot tell. {'is_answerable': False, 'answer_content': 'None'} [/INST] extra",
    "{'is_answerable': True, 'answer_content': 'it's', 'x': [1, 2}",
    "{'is_answerable': True, 'answer_content': 'students' union'}",
]
SUM_OUTPUTS = [
    "Power failed at 3 pm and returned by 9 pm.",
    "  The race drew four hundred people.\n\n*Answer*: a fabricated second answer",
    "",
    "Aspect-based summary: echoed marker then text about the hospital",
    "[/INST] The summary after an instruction marker.",
    "Résumé — naïve café, 42 runners; “quotes” and ‘apostrophes’ aren't a problem.",
    "So, the answer is: the marker of another dataset",
]
COREF_OUTPUTS = [
    "[[0, 1, 2], [3], [4]]",
    "The clusters are [[0, 1], [2, 3]] and that is all.",
    "[[0, 1], [2, 3",
    "[[0, 99], [100, 101], [1, 2]]",
    "[]",
    "[ ]",
    "I do not know.",
    "[[0, 1], [1, 2]]",
    "[/INST] [[0, 1]]",
    "[[5, 6, 7], [8, 9]] *Answer*: [[1, 2]]",
    "[[2, 0], [3, 1]]\n[[4, 5]]",
]


def _record(ds: str, run: int, iid: str, prompt: str, target: Any) -> dict[str, Any]:
    return {"dataset": ds, "task": TASKS[ds], "run": run, "split": "test", "instance_id": iid, "prompt": prompt,
            "prompt_sha256": sha256_text(prompt), "target": target,
            "target_sha256": sha256_text(target) if isinstance(target, str) else sha256_json(target), "gen_seed": 1}


def _clusters(rng: random.Random, n: int) -> list[list[int]]:
    ids = rng.sample(range(0, 150), n)
    clusters: list[list[int]] = []
    for m in ids:
        (rng.choice(clusters).append(m) if clusters and rng.random() < 0.6 else clusters.append([m]))
    return clusters


def _build(rng: random.Random) -> tuple[list[dict[str, Any]], dict[str, dict[tuple[str, int, str], str]]]:
    records: list[dict[str, Any]] = []
    for run in range(3):
        for i, _ in enumerate(QA_OUTPUTS):
            target = {"is_answerable": rng.random() < 0.7, "answer_content": rng.choice(["Oreth", "Kell", "Mary's house"])}
            records.append(_record("MusiQue", run, f"2hop__{run}_{i}", f"*Instructions*: q {i}??\n*Answer*: ", target))
        for ds, marker in (("MultiNews", "*Answer*: "), ("OpenASP", "Aspect label: Timeline\nAspect-based summary: ")):
            for i, _ in enumerate(SUM_OUTPUTS):
                gold = rng.choice(["Power failed at 3 pm and returned by 9 pm.", "A charity race drew four hundred "
                                   "runners and raised money for the hospital."])
                records.append(_record(ds, run, f"{ds[:2]}{run}.{i}", f"Document 1: ```text {i}```\n{marker}", gold))
        for ds in ("ECB", "SciCo"):
            # run sizes from a few hundred bytes (empty for perl as published) to ~20 KB (cut mid-file)
            n_inst = [3, 40, 120][run]
            for i in range(n_inst):
                iid = f"{i + 1}_{run}ecb" if ds == "ECB" else str(1000 * run + i)
                records.append(_record(ds, run, iid, "*The documents*:\nDocument 1: ```[a](0)```\n*Answer*: ",
                                       _clusters(rng, rng.randint(2, 30))))
    outputs: dict[str, dict[tuple[str, int, str], str]] = {}
    for model in MODELS:
        outs = {}
        for rec in records:
            pool = {"qa": QA_OUTPUTS, "summarization": SUM_OUTPUTS, "coreference": COREF_OUTPUTS}[rec["task"]]
            key = (rec["dataset"], rec["run"], rec["instance_id"])
            if rec["task"] == "coreference" and rng.random() < 0.5:  # often near-correct, as real runs are
                flat = sorted(m for c in rec["target"] for m in c)
                outs[key] = str([c for c in rec["target"] if len(c) > 1 and rng.random() < 0.8]
                                + [rng.sample(flat, 2)] * (rng.random() < 0.3))
            else:
                outs[key] = rng.choice(pool)
        # every awkward output appears at least once per dataset
        for ds, pool in (("MusiQue", QA_OUTPUTS), ("MultiNews", SUM_OUTPUTS), ("OpenASP", SUM_OUTPUTS)):
            keys = [k for k in outs if k[0] == ds and k[1] == 0]
            outs.update(zip(keys, pool, strict=False))
        for ds in ("ECB", "SciCo"):
            keys = [k for k in outs if k[0] == ds and k[1] == 2]
            outs.update(zip(keys, COREF_OUTPUTS, strict=False))
        outputs[model] = outs
    return records, outputs


def _prediction(model: str, rec: dict[str, Any], output: str) -> str:
    """Upstream's ``generated_text`` for this model's output (see MODELS)."""
    if MODELS[model] == "imported":
        truncated = int(sha256_text(rec["instance_id"] + str(rec["run"]))[:2], 16) < 50  # ~20% of instances
        return ("user\n\n" + rec["prompt"][: len(rec["prompt"]) // 2] if truncated else "user\n\n" + rec["prompt"]) + output
    return upstream_generated_text(rec["prompt"], output, inst_template=MODELS[model] == "inst")


def _write_run(root: Path, records: list[dict[str, Any]], outputs: dict[str, dict[tuple[str, int, str], str]]) -> None:
    (root / "predictions").mkdir(parents=True)
    (root / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    (root / "run.json").write_text(json.dumps({"schema_version": 1, "manifest_digest": "abc"}), "utf-8")
    seal_run_dir(root, records)
    for model, outs in outputs.items():
        for rec in records:
            key = (rec["dataset"], rec["run"], rec["instance_id"])
            line = {"dataset": key[0], "run": key[1], "instance_id": key[2], "prompt_sha256": rec["prompt_sha256"],
                    "model": {"id": model, "revision": "r"}, "output": outs[key], "truncated": False}
            if MODELS[model] == "imported":
                line["upstream_prompt_text"], line["output"], _ = split_prediction(
                    _prediction(model, rec, outs[key]), rec["prompt"])
            path = root / "predictions" / model.replace("/", "__") / key[0] / f"run_{key[1]}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(line) + "\n")


def _oracle(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "upstream_eval_oracle.py"), "--scorer",
                           str(Path(SCORER).parent)], input="".join(json.dumps(t) + "\n" for t in tasks),
                          capture_output=True, text=True, check=True)
    return {json.dumps(r["key"]): r["result"] for r in map(json.loads, proc.stdout.splitlines()) if r.get("key")}


def _upstream_records(records: list[dict[str, Any]], outs: dict[tuple[str, int, str], str], model: str) -> list[dict]:
    out = []
    for rec in records:
        key = (rec["dataset"], rec["run"], rec["instance_id"])
        target_key = "targets" if rec["task"] == "coreference" else "target"
        out.append({ID_KEYS[rec["dataset"]]: rec["instance_id"], target_key: rec["target"],
                    "prediction": _prediction(model, rec, outs[key])})
    return out


def test_upstream_profile_equals_published_evaluation_code(tmp_path: Path) -> None:
    rng = random.Random(12)
    records, outputs = _build(rng)
    run = tmp_path / "run"
    _write_run(run, records, outputs)
    block = os.stat("/tmp").st_blksize  # the buffer of upstream's /tmp/gold.conll on this machine
    summaries = {json.loads(p.read_text())["model"]["id"]: p for p in score_run_dir(run, fic=False, gold_block_size=block)}
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for rec in records:
        groups.setdefault((rec["dataset"], rec["run"]), []).append(rec)
    tasks = []
    for model in MODELS:
        for (ds, r), recs in groups.items():
            preds = _upstream_records(recs, outputs[model], model)
            modes = ("published", "flushed") if TASKS[ds] == "coreference" else ("published",)
            for mode in modes:
                tasks.append({"key": [model, ds, r, mode], "ds_name": UPSTREAM_NAME[ds], "gold": mode, "predictions": preds})
            if TASKS[ds] == "coreference":
                for one in preds:
                    tasks.append({"key": [model, ds, r, "flushed", one[ID_KEYS[ds]]], "ds_name": ds, "gold": "flushed",
                                  "predictions": [one]})
    theirs = _oracle(tasks)
    compared = {"instances": 0, "runs": 0, "coref_runs_cut": 0}
    for model, path in summaries.items():
        summary = json.loads(path.read_text())["datasets"]
        lines: dict[tuple[str, int, str], dict[str, Any]] = {}
        for ln in map(json.loads, (path.parent / "instance_scores.jsonl").read_text().splitlines()):
            lines[(ln["dataset"], ln["run"], ln["instance_id"])] = ln
        for (ds, r), recs in groups.items():
            ours = summary[ds]
            if TASKS[ds] == "coreference":
                published = theirs[json.dumps([model, ds, r, "published"])]["conll_F1"]
                flushed = theirs[json.dumps([model, ds, r, "flushed"])]["conll_F1"]
                assert ours["runs"][str(r)] == pytest.approx(published, abs=1e-9), (model, ds, r, "as published")
                assert ours["intended"]["runs"][str(r)] == pytest.approx(flushed, abs=1e-9), (model, ds, r, "intended")
                read = ours["gold_read"][str(r)]
                compared["coref_runs_cut"] += 0 < read["bytes"] < read["of_bytes"]
                for rec in recs:
                    mine = lines[(ds, r, rec["instance_id"])]["details"]["upstream_intended"]["score"]
                    one = theirs[json.dumps([model, ds, r, "flushed", rec["instance_id"]])]["conll_F1"]
                    assert mine == pytest.approx(one, abs=0.01), (model, ds, r, rec["instance_id"])  # perl prints 2 dp
                    compared["instances"] += 1
            else:
                result = theirs[json.dumps([model, ds, r, "published"])]
                if TASKS[ds] == "qa":
                    per = [100.0 * f for f in result["all_f1"]]
                else:
                    per = [float(np.prod(v) ** (1 / 3) * 100) for v in zip(result["rouge1"], result["rouge2"],
                                                                              result["rougeL"], strict=True)]
                for rec, value in zip(recs, per, strict=True):
                    mine = lines[(ds, r, rec["instance_id"])]["score"]
                    assert mine == pytest.approx(value, abs=1e-9), (model, ds, r, rec["instance_id"], mine, value)
                    compared["instances"] += 1
                assert ours["runs"][str(r)] == pytest.approx(float(np.mean(per)), abs=1e-9)
            compared["runs"] += 1
    print(f"\nupstream evaluation oracle: {compared}")
    assert compared["coref_runs_cut"] >= 2  # as-published runs with the gold file cut mid-way were compared
