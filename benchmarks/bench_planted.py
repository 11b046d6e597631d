"""Benchmark: `seam-repro sensitivity` end to end, against scores planted through a served model.

The route an outside checker takes, every step through the CLI (no kit internals are called to
make the data):

1. **sample**: a Listing-1 config with ``"design": {"kind": "one-factor", "factors": ["paraphrase"]}``
   over one dataset (MuSiQue, ``--instances`` questions, ``--runs`` runs, a prompt file with 9
   instruction paraphrases) is frozen by ``seam-repro sample``; each run draws one of the 9
   paraphrases, everything else is fixed at run 0's draw.
2. **replay**: ``seam-repro replay --backend openai --model planted-X --model-args base_url=...`` for
   three served model names against an OpenAI-compatible stub started here (stdlib ``http.server``
   on 127.0.0.1 in a thread). The stub maps each request's prompt back to the frozen manifest
   (``sha256`` of the user message = the run's recorded ``prompt_sha256``), so it knows the instance
   and the paraphrase, and answers with a completion whose MuSiQue score is a planted
   ``y = mu + a[instance] + b[paraphrase] + e`` (see "Planting" below). The three models have
   population shares (instance / paraphrase / residual) .60/.15/.25, .40/.40/.20 and .60/0/.40 of
   a total variance of ``SD**2`` (score points).
3. **score** (``seam-repro score --no-fic``) and **sensitivity** (default ``--bootstrap``, whose GPQ
   intervals take at least 2000 draws; ``--jobs 1``; its ``sensitivity.json``).
4. **compare**, per model: the planted population shares, the realised shares of the effects the
   study actually drew, the kit's estimate with its 95 % interval, an independent statsmodels
   ``MixedLM`` REML fit (crossed variance components in one group) of the same scores read from
   ``scores/*/instance_scores.jsonl``, statsmodels' REML log-likelihood at both fits' variances and
   both convergence flags. Over
   ``--studies`` studies (each a new config seed, so new paraphrase draws, and new effects): how
   often the kit's 90 % / 95 % intervals cover the planted shares, with the Monte-Carlo standard
   error, and where the time went.

Planting. The metric is the ``upstream`` profile's MuSiQue score (what ``sensitivity`` reads for a
manifest sampled with the default profile): SQuAD token F1 between ``str(parsed answer dict)`` and
``str(gold dict)``. Each instance's gold answer is ``L`` distinct tokens, so its gold dict
normalises to ``L + 3`` tokens (``isanswerable``, ``true``, ``answercontent`` and the answer). The
stub answers ``{'is_answerable': True, 'answer_content': '<m gold tokens> <d distractors>'}``, which
normalises to ``3 + m + d`` tokens of which ``3 + m`` are shared, so

    F1 = 100 * 2 (3 + m) / (L + 6 + m + d),   0 <= m <= L, 0 <= d <= D.

For a planted target the stub takes the (m, d) whose F1 is nearest (with L = 24, D = 100 the
attainable values span 4.6-100 and every target in [10, 90] is met to within 0.42 points, up to 100
within 0.91; a target more than 1 point from every attainable value is counted as clipped). The
planted value is thus quantised; the realised comparison uses the scores the kit actually wrote,
and the benchmark checks that each (model, instance)'s scores are exactly the values the stub
served (to 1e-9), i.e. the kit's scorer gives back the planted score.

Runs that share a paraphrase send byte-identical prompts (and the same seed: only the paraphrase is
redrawn), so a server cannot tell them apart; the stub gives the k-th request for a (model, prompt)
the residual drawn for the k-th such run. Which of those runs gets which residual does not matter
(the residuals are exchangeable), and the realised residuals are computed from the written scores.

Realised shares: the sample variances (n - 1) of the drawn instance effects, of the effects of the
paraphrases the runs used (each counted once), and of the realised residuals
``y - mu - a[instance] - b[paraphrase]`` (quantisation included), each over their sum.

    python benchmarks/bench_planted.py                 # 3 studies (1-1.5 minutes on 2 cores)
    python benchmarks/bench_planted.py --studies 60     # docs/sensitivity.md's figures
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "manifests" / "fixtures"
DATASET = "MusiQue"
MODELS = {"planted-a": (0.60, 0.15, 0.25), "planted-b": (0.40, 0.40, 0.20), "planted-c": (0.60, 0.00, 0.40)}
"""Served model name -> planted population shares (instance, paraphrase, residual)."""
COMPONENTS = ("instance", "paraphrase", "residual")
MU, SD = 50.0, 12.0
"""Planted mean and total standard deviation, in score points (0-100)."""
ANSWER_TOKENS, MAX_DISTRACTORS = 24, 100
PARAPHRASES = [
    "Answer the question using only the documents below.",
    "Use the documents to answer the question; the answer may not be in them.",
    "Read the documents and answer the question from them alone.",
    "Find the answer to the question in the documents.",
    "Answer the question below; rely on the given documents and nothing else.",
    "Using the documents provided, respond to the question.",
    "The documents below may answer the question: answer it from them.",
    "Consult the documents and give the answer to the question.",
    "Based solely on the documents, what is the answer to the question?",
]
"""9 instruction paraphrases: the fixture's 4 (manifests/fixtures/prompts/MusiQue.json) and 5 more."""


# --- inputs --------------------------------------------------------------------------------------
def answer_words(k: int) -> list[str]:
    return [f"a{k}t{j}" for j in range(ANSWER_TOKENS)]


def write_inputs(work: Path, n_inst: int) -> tuple[Path, Path]:
    """A MuSiQue folder with ``n_inst`` answerable questions (val) and a 9-paraphrase prompt file."""
    data = work / "data" / DATASET
    data.mkdir(parents=True)
    for f in (FIXTURES / "musique").glob("*.jsonl"):
        shutil.copy(f, data / f.name)
    rows = []
    for k in range(n_inst):
        ans = " ".join(answer_words(k))
        paras = [{"idx": 0, "title": f"Place {k}", "paragraph_text": f"Place {k} is known for {ans}.",
                  "is_supporting": True},
                 {"idx": 1, "title": f"Person {k}", "paragraph_text": f"Person {k} founded place {k}.",
                  "is_supporting": True},
                 {"idx": 2, "title": "Lake Varna", "paragraph_text": "Lake Varna is a freshwater lake.",
                  "is_supporting": False}]
        rows.append({"id": f"2hop__{k}_{k + 1000}", "paragraphs": paras, "question_decomposition": [],
                     "question": f"What is the place founded by person {k} known for", "answer": ans,
                     "answer_aliases": [], "answerable": True})
    (data / "val.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    prompts = work / "prompts"
    prompts.mkdir()
    pf = json.loads((FIXTURES / "prompts" / f"{DATASET}.json").read_text(encoding="utf-8"))
    fmt = pf["prompts"][0]["output_format"]
    pf["prompts"] = [{"id": i, "instructions": text, "output_format": fmt, "comments": ""}
                     for i, text in enumerate(PARAPHRASES)]
    (prompts / f"{DATASET}.json").write_text(json.dumps(pf, indent=1), encoding="utf-8")
    return data.parent, prompts


def write_config(path: Path, data: Path, seed: int, n_runs: int) -> None:
    path.write_text(json.dumps({
        "random_seed": seed, "num_different_runs": n_runs, "num_demonstrations": 2, "max_num_samples": -1,
        "design": {"kind": "one-factor", "factors": ["paraphrase"]},
        "generation": {"temperature": 0.8, "do_sample": True, "max_new_tokens": 160, "top_p": None,
                       "truncation": "max", "batch_size": 4},
        "models": [],
        "datasets": [{"name": DATASET, "task": "question answering", "path": str(data / DATASET),
                      "split_name": "val"}]}), encoding="utf-8")


# --- planting ------------------------------------------------------------------------------------
def f1_of(m: int, d: int) -> float:
    """The upstream MuSiQue F1 (0-100) of the completion with ``m`` gold and ``d`` distractor tokens."""
    return 100.0 * 2 * (3 + m) / (ANSWER_TOKENS + 6 + m + d)


GRID = sorted((f1_of(m, d), m, d) for m in range(ANSWER_TOKENS + 1) for d in range(MAX_DISTRACTORS + 1))
GRID_Y = np.array([g[0] for g in GRID])


def completion(k: int, target: float) -> tuple[str, float]:
    """(completion text for instance ``k``, its F1): the grid point nearest ``target``."""
    j = int(np.clip(np.searchsorted(GRID_Y, target), 1, len(GRID) - 1))
    y, m, d = min(GRID[j - 1], GRID[j], key=lambda g: abs(g[0] - target))
    words = answer_words(k)[:m] + [f"z{k}x{i}" for i in range(d)]
    return "{'is_answerable': True, 'answer_content': '" + " ".join(words) + "'}", y


class Plan:
    """One study's planted effects and the stub's bookkeeping."""

    def __init__(self, manifest: dict[str, Any], seed: int, n_para: int):
        rng = np.random.default_rng(seed)
        runs = [r for r in manifest["runs"] if r["dataset"] == DATASET]
        self.ids = [i["id"] for i in runs[0]["instances"]]
        self.k_of = {i: int(i.split("__")[1].split("_")[0]) for i in self.ids}
        self.para = {r["run"]: r["paraphrase_index"] for r in runs}
        self.prompt_runs: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for r in runs:
            for inst in r["instances"]:
                self.prompt_runs[inst["prompt_sha256"]].append((r["run"], inst["id"]))
        self.effects: dict[str, dict[str, Any]] = {}
        for model, share in MODELS.items():
            sd = SD * np.sqrt(np.array(share))
            self.effects[model] = {
                "a": dict(zip(self.ids, rng.normal(0, sd[0], len(self.ids)), strict=True)),
                "b": rng.normal(0, sd[1], n_para),
                "e": {(r, i): rng.normal(0, sd[2]) for r in self.para for i in self.ids}}
        self.queues = {(m, h): list(v) for m in MODELS for h, v in self.prompt_runs.items()}
        self.served: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.clipped = 0
        self.quantisation = 0.0
        self.lock = threading.Lock()

    def answer(self, model: str, prompt: str) -> str:
        h = hashlib.sha256(prompt.encode("utf-8")).hexdigest()
        with self.lock:
            run, inst = self.queues[(model, h)].pop(0)
        eff = self.effects[model]
        target = MU + eff["a"][inst] + eff["b"][self.para[run]] + eff["e"][(run, inst)]
        text, y = completion(self.k_of[inst], target)
        with self.lock:
            self.served[(model, inst)].append(y)
            if abs(y - target) > 1.0:
                self.clipped += 1
            else:
                self.quantisation = max(self.quantisation, abs(y - target))
        return text


class Stub:
    """OpenAI-compatible server on 127.0.0.1: ``GET /v1/models`` and ``POST /v1/chat/completions``."""

    def __init__(self) -> None:
        self.plan: Plan | None = None
        self.requests = 0
        self.errors: list[str] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, obj: Any) -> None:
                raw = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                self._send(200, {"object": "list", "data": [{"id": m} for m in MODELS]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                try:
                    assert stub.plan is not None
                    text = stub.plan.answer(body["model"], body["messages"][0]["content"])
                except (KeyError, IndexError, AssertionError) as exc:  # a prompt not in the manifest
                    stub.errors.append(repr(exc))
                    self._send(400, {"error": {"message": f"stub: unknown request ({exc!r})"}})
                    return
                stub.requests += 1
                n = len(text.split())
                self._send(200, {"id": "planted", "object": "chat.completion", "model": body["model"],
                                 "system_fingerprint": "fp_planted",
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": text}}],
                                 "usage": {"prompt_tokens": len(body["messages"][0]["content"].split()),
                                           "completion_tokens": n, "total_tokens": n}})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.socket.listen(256)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# --- the route -----------------------------------------------------------------------------------
def kit(*args: str, timer: dict[str, float], stage: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO), TQDM_DISABLE="1", HF_HUB_OFFLINE="1")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "seam_repro", *args], env=env, capture_output=True, text=True,
                          cwd=REPO)
    timer[stage] += time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"seam-repro {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")


def read_scores(run_dir: Path) -> list[dict[str, Any]]:
    files = sorted((run_dir / "scores").glob("*/instance_scores.jsonl"))
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines() if line.strip()]


def statsmodels_fit(y: np.ndarray, inst: np.ndarray, para: np.ndarray, kit_var: dict[str, float] | None,
                    methods: tuple[str, ...] = ("lbfgs", "nm")) -> dict[str, Any]:
    """REML crossed fit in one group (the statsmodels idiom for crossed random effects); the best
    of its optimisers by log-likelihood, with that optimiser's convergence flag; and statsmodels'
    REML log-likelihood at the kit's variances (the kit's own ``reml_loglik`` is on data scaled to
    unit variance and drops constants, so the two are compared in statsmodels' units)."""
    import warnings

    import pandas as pd
    from statsmodels.regression.mixed_linear_model import MixedLM, MixedLMParams

    df = pd.DataFrame({"y": y, "inst": inst, "para": para, "g": 1})
    model = MixedLM.from_formula("y ~ 1", groups="g", re_formula="0", data=df,
                                 vc_formula={"inst": "0 + C(inst)", "para": "0 + C(para)"})
    best = None
    for method in methods:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                res = model.fit(reml=True, method=method)
            except (np.linalg.LinAlgError, ValueError):
                continue
        if best is None or res.llf > best[1].llf + 1e-9:
            best = (method, res)
    assert best is not None
    method, res = best
    vc = dict(zip(model.exog_vc.names, np.asarray(res.vcomp), strict=True))
    var = {"instance": vc["inst"], "paraphrase": vc["para"], "residual": float(res.scale)}
    total = sum(var.values())
    llf_kit = float("nan")
    if kit_var is not None:
        # a variance at 0 (a boundary fit): the model without that component, whose REML likelihood is
        # the full model's at 0 (statsmodels' log det is undefined at exactly 0)
        names = {"inst": "instance", "para": "paraphrase"}
        kept = {n: f"0 + C({n})" for n in ("inst", "para") if kit_var[names[n]] > 0}
        at_model = model if len(kept) == 2 else MixedLM.from_formula(
            "y ~ 1", groups="g", re_formula="0", data=df, vc_formula=kept)
        if at_model is not model:  # what fit() sets before it evaluates loglike
            at_model.reml, at_model.cov_pen, at_model.fe_pen = True, None, None
        rel = np.array([kit_var[names[n]] for n in at_model.exog_vc.names])
        at = MixedLMParams.from_components(fe_params=np.asarray(res.fe_params), cov_re=np.zeros((0, 0)),
                                           vcomp=rel / kit_var["residual"])
        llf_kit = float(at_model.loglike(at, profile_fe=True))
    return {"share": {k: v / total for k, v in var.items()}, "llf": float(res.llf), "converged": bool(res.converged),
            "method": method, "llf_at_kit": llf_kit}


def realised_shares(plan: Plan, model: str, rows: list[dict[str, Any]]) -> dict[str, float]:
    eff = plan.effects[model]
    a = np.array([eff["a"][i] for i in plan.ids])
    used = sorted(set(plan.para.values()))
    b = np.array([eff["b"][p] for p in used])
    e = np.array([r["score"] - MU - eff["a"][r["instance_id"]] - eff["b"][plan.para[r["run"]]] for r in rows])
    var = {"instance": a.var(ddof=1), "paraphrase": b.var(ddof=1) if len(b) > 1 else 0.0, "residual": e.var(ddof=1)}
    total = sum(var.values())
    return {k: float(v / total) for k, v in var.items()}


def one_study(study: int, work: Path, data: Path, prompts: Path, stub: Stub, args: argparse.Namespace,
              timer: dict[str, float]) -> dict[str, Any]:
    here = work / f"study{study}"
    here.mkdir()
    config, manifest = here / "config.json", here / "manifest.json"
    write_config(config, data, 1000 + study, args.runs)
    kit("sample", str(config), "-o", str(manifest), "--prompts-dir", str(prompts), timer=timer, stage="sample")
    m = json.loads(manifest.read_text(encoding="utf-8"))
    plan = Plan(m, 7919 * (study + 1), len(PARAPHRASES))
    stub.plan = plan
    run_dirs = []
    for model in MODELS:
        out = here / model
        kit("replay", str(manifest), "--backend", "openai", "--model", model, "--out", str(out), "--no-score",
            "--prompts-dir", str(prompts), "--data-dir", str(data),
            "--model-args", f"base_url={stub.base_url},concurrency={args.concurrency}", timer=timer, stage="replay")
        kit("score", str(out), "--no-fic", timer=timer, stage="score")
        run_dirs.append(out)
    rep = here / "sensitivity"
    draws = ["--bootstrap", str(args.draws)] if args.draws is not None else []
    kit("sensitivity", *map(str, run_dirs), "--out", str(rep), *draws, "--jobs", "1", "--seed", str(study),
        timer=timer, stage="sensitivity")
    if stub.errors:
        raise SystemExit(f"stub: requests not in the manifest: {stub.errors[:3]}")
    leftover = sum(len(q) for q in plan.queues.values())
    assert leftover == 0, f"{leftover} planted values never requested"
    sens = json.loads((rep / "sensitivity.json").read_text(encoding="utf-8"))
    out: dict[str, Any] = {"clipped": plan.clipped, "quantisation": plan.quantisation,
                           "levels_seen": len(set(plan.para.values())), "models": {}}
    for model, run_dir in zip(MODELS, run_dirs, strict=True):
        rows = [r for r in read_scores(run_dir) if r["dataset"] == DATASET]
        # the kit's scorer gives back exactly what the stub served, per (model, instance)
        got: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            got[r["instance_id"]].append(r["score"])
        for inst in plan.ids:
            want, have = sorted(plan.served[(model, inst)]), sorted(got[inst])
            assert len(want) == len(have) == args.runs and np.allclose(want, have, atol=1e-9, rtol=0), \
                (model, inst, want, have)
        cell = find_cell(sens, model)
        t0 = time.perf_counter()
        y = np.array([r["score"] for r in rows])
        sm = statsmodels_fit(y, np.array([r["instance_id"] for r in rows]),
                             np.array([plan.para[r["run"]] for r in rows]), cell.get("variance"),
                             tuple(args.sm_methods.split(",")))
        timer["statsmodels"] += time.perf_counter() - t0
        out["models"][model] = {"planted": dict(zip(COMPONENTS, MODELS[model], strict=True)),
                                "realised": realised_shares(plan, model, rows), "kit": cell, "statsmodels": sm}
    return out


def find_cell(sens: Any, model: str) -> dict[str, Any]:
    """The (model, MuSiQue) cell of sensitivity.json, wherever the layout keeps it."""
    found: list[dict[str, Any]] = []

    def walk(x: Any, path: tuple[str, ...]) -> None:
        if isinstance(x, dict):
            if "boundary" in x and "n_scores" in x and model in path and any(DATASET.lower() in p.lower() for p in path):
                found.append(x)
                return
            for k, v in x.items():
                walk(v, (*path, str(k)))
        elif isinstance(x, list):
            for v in x:
                walk(v, (*path, *(str(v.get(k)) for k in ("model", "dataset", "label") if isinstance(v, dict)
                                  and k in v)))

    walk(sens, ())
    assert len(found) == 1, (model, len(found))
    return found[0]


# --- printing ------------------------------------------------------------------------------------
def fmt_ci(ci: Any) -> str:
    return f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci is not None else "-"


def print_study(study: int, res: dict[str, Any]) -> None:
    print(f"\n### Study {study} ({res['levels_seen']} of {len(PARAPHRASES)} paraphrases seen, "
          f"{res['clipped']} planted values clipped)\n")
    print("| model | component | planted | realised | kit estimate [95 % interval] | statsmodels | "
          "REML log L at kit / statsmodels estimate | converged kit / statsmodels (optimiser) |")
    print("|---|---|---|---|---|---|---|---|")
    for model, r in res["models"].items():
        kit_cell, sm = r["kit"], r["statsmodels"]
        for k in COMPONENTS:
            if "not_converged" in kit_cell:
                est = "not converged"
            else:
                mark = " (0: boundary)" if k in kit_cell.get("boundary", []) else ""
                est = f"{kit_cell['share'][k]:.3f} {fmt_ci(kit_cell.get('share_ci95', {}).get(k))}{mark}"
            ll = f"{sm['llf_at_kit']:.4f} / {sm['llf']:.4f}" if k == "instance" else ""
            conv = (f"{'no' if 'not_converged' in kit_cell else 'yes'} ({kit_cell.get('optimiser')}) / "
                    f"{'yes' if sm['converged'] else 'no'} ({sm['method']})" if k == "instance" else "")
            print(f"| {model} | {k} | {r['planted'][k]:.2f} | {r['realised'][k]:.3f} | {est} | "
                  f"{sm['share'][k]:.3f} | {ll} | {conv} |")


def cover(fits: list[dict[str, Any]], k: str, level: int, truth: str) -> str:
    """How often the kit's ``level`` % interval held the planted (or realised) share, with the
    Monte-Carlo standard error at the nominal level."""
    hits = [fit["kit"][f"share_ci{level}"][k][0] <= fit[truth][k] <= fit["kit"][f"share_ci{level}"][k][1]
            for fit in fits]
    p = level / 100
    return f"{np.mean(hits):.3f} (s.e. {np.sqrt(p * (1 - p) / max(1, len(hits))):.3f})"


def print_summary(results: list[dict[str, Any]], timer: dict[str, float], wall: float, n_req: int,
                  sm_methods: list[str]) -> None:
    n = len(results)
    print(f"\n### Over {n} studies\n")
    print("| model | component | planted | mean realised | mean kit | mean statsmodels | max abs(kit - statsmodels) | "
          "kit 90 % covers planted | kit 95 % covers planted | 95 % covers realised | not converged kit / sm |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for model in MODELS:
        rs = [res["models"][model] for res in results]
        ok = [r for r in rs if "not_converged" not in r["kit"]]
        for k in COMPONENTS:
            planted = rs[0]["planted"][k]

            diff = max((abs(r["kit"]["share"][k] - r["statsmodels"]["share"][k]) for r in ok), default=float("nan"))
            nc = f"{len(rs) - len(ok)} / {sum(not r['statsmodels']['converged'] for r in rs)}" if k == "instance" else ""
            print(f"| {model} | {k} | {planted:.2f} | {np.mean([r['realised'][k] for r in rs]):.3f} | "
                  f"{np.mean([r['kit']['share'][k] for r in ok]):.3f} | "
                  f"{np.mean([r['statsmodels']['share'][k] for r in rs]):.3f} | {diff:.4f} | "
                  f"{cover(ok, k, 90, 'planted')} | {cover(ok, k, 95, 'planted')} | {cover(ok, k, 95, 'realised')} | {nc} |")
    dll = [r["models"][m]["statsmodels"]["llf_at_kit"] - r["models"][m]["statsmodels"]["llf"] for r in results
           for m in MODELS if "variance" in r["models"][m]["kit"]]
    print(f"\nstatsmodels' REML log-likelihood at the kit's variances minus at its own optimum (best of "
          f"{', '.join(sm_methods)}) over {len(dll)} fits: min {min(dll):+.2e}, max {max(dll):+.2e} (>= 0: the kit's fit is at "
          "least as likely)")
    err = max(r["quantisation"] for r in results)
    print(f"Planting: largest |served - planted| score among unclipped values {err:.3f} points; "
          f"{sum(r['clipped'] for r in results)} values clipped to the attainable range")
    print(f"\nTime: {wall:.1f} s wall for {n} studies ({wall / n:.1f} s per study; {n_req} requests served, "
          f"{n_req / max(timer['replay'], 1e-9):.1f} requests/s over the replay commands). Per stage, s per study:")
    print("| stage | s per study | share of wall |")
    print("|---|---|---|")
    for stage, t in timer.items():
        print(f"| {stage} | {t / n:.2f} | {100 * t / wall:.0f} % |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=3, help="studies (new seeds, designs and effects); default 3")
    ap.add_argument("--instances", type=int, default=40)
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--draws", type=int, default=None,
                    help="sensitivity --bootstrap (default: the kit's; GPQ intervals take at least 2000 draws)")
    ap.add_argument("--concurrency", type=int, default=4, help="openai backend concurrency")
    ap.add_argument("--sm-methods", default="lbfgs,nm",
                    help="statsmodels optimisers, best log-likelihood kept (lbfgs, bfgs, powell, nm, cg, newton)")
    ap.add_argument("--first-study", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=None, help="keep the work folder here (default: a temp folder)")
    ap.add_argument("--quiet", action="store_true", help="print only the summary, not each study's table")
    args = ap.parse_args()
    print(f"# bench_planted: {args.studies} studies, {DATASET} {args.instances} instances x {args.runs} runs, "
          f"one-factor paraphrase design over {len(PARAPHRASES)} paraphrases, planted mu {MU:g}, total sd {SD:g} "
          f"points; {os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    timer: dict[str, float] = Counter({s: 0.0 for s in ("sample", "replay", "score", "sensitivity", "statsmodels")})
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        data, prompts = write_inputs(work, args.instances)
        stub = Stub()
        results = []
        try:
            for s in range(args.first_study, args.first_study + args.studies):
                res = one_study(s, work, data, prompts, stub, args, timer)
                results.append(res)
                if not args.quiet:
                    print_study(s, res)
                    sys.stdout.flush()
        finally:
            stub.close()
        wall = time.perf_counter() - t0
    print_summary(results, timer, wall, stub.requests, args.sm_methods.split(","))
    print(f"# load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
