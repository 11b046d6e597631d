"""``make bench``: one table; every kit figure next to an anchor measured in the same run.

Rows (targets from issue 16):

* start-up: ``seam-repro --version`` / ``verify`` against a bare ``python -c pass``;
* prompt generation: ``seam-repro sample`` + ``prompts`` on a 680-prompt, 6-dataset, 10-run config
  against the published SEAM generator (tools/upstream_oracle.py) on the same files; the prompts
  must be identical. Target >= 40x;
* conll-score on 200 documents x 300 tokens against ``perl scorer.pl all``; the CoNLL score must be
  identical. Target >= 20x;
* prompt hashing (``sha256_text`` + digest) against ``hashlib.sha256`` over the same bytes;
* replay: the kit's hf backend against raw ``model.generate`` at the same batch, prompts and sampling
  settings on the embedded SmolLM2 (CPU), per decoding step. Target <= 5% slower;
* batching: length-sorted batches (what ``replay`` does) against manifest-order batches: padded
  prompt tokens over the smoke manifest, and time on a small long/short set.

Timing: every figure is the best of N runs (other processes share the cores); commands run as
subprocesses after one warm-up each (so byte-code is cached on both sides, as after an install), and
their CPU time (user + sys of the child) is reported beside wall time: on a loaded machine CPU time
is the steadier figure: verdicts use it, and ratios are given for both. The machine, its cores and load average
(before and after) head the table. An anchor whose snapshot or tool is absent is skipped, with the
reason in the table.

Anchors: the published generator from $SEAM_UPSTREAM_SRC (a seam-benchmark/SEAM@6ad83f4 checkout,
needs the ``datasets`` package) and scorer.pl from $CONLL_SCORER; when unset, the read-only
snapshots under /work/.mirror are extracted to a temporary folder if present. Nothing of either is
stored in this repository.

Usage: python benchmarks/bench.py [--quick] [--skip replay,upstream,...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]  # measure this checkout, not another installed copy
from synth import conll_pair, scaled_seam_data, seam_config  # noqa: E402

MIRROR = Path("/work/.mirror")
UPSTREAM_SNAPSHOT = MIRROR / "seam-benchmark+SEAM" / "repo"
SCORER_SNAPSHOT = MIRROR / "conll+reference-coreference-scorers" / "repo" / ".git"
SHARED_PROMPTS = REPO.parent / "shared" / "seam" / "upstream-6ad83f4" / "prompts"
PROMPTS = SHARED_PROMPTS if SHARED_PROMPTS.is_dir() else REPO / "manifests" / "fixtures" / "prompts"


@dataclass
class Timing:
    wall: float
    cpu: float


@dataclass
class Row:
    figure: str
    kit: str
    anchor: str
    ratio_cpu: str = ""
    ratio_wall: str = ""
    target: str = ""
    verdict: str = ""


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1", TQDM_DISABLE="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its byte-code cached
    return env


def run_best(cmds: list[list[str]], repeat: int, cwd: Path | None = None, env: dict[str, str] | None = None,
             warmup: bool = True) -> Timing:
    """Best-of-``repeat`` wall and CPU time of running ``cmds`` one after another (one warm-up)."""
    best_wall = best_cpu = float("inf")
    for i in range(repeat + (1 if warmup else 0)):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        for cmd in cmds:
            subprocess.run(cmd, check=True, cwd=cwd, env=env or _env(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        if warmup and i == 0:
            continue
        best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
    return Timing(best_wall, best_cpu)


def run_pair(ours: list[list[str]], theirs: list[list[str]], repeat: int, their_env: dict[str, str] | None = None,
             ours_before: Timing | None = None) -> tuple[Timing, Timing]:
    """Kit and anchor timed alternately (one run of each per round), so both see the same load;
    ``ours_before`` is a kit timing already taken (its runs count as rounds of their own)."""
    best_ours, best_theirs = ours_before or Timing(float("inf"), float("inf")), Timing(float("inf"), float("inf"))
    for _ in range(repeat):
        t = run_best(theirs, 1, env=their_env, warmup=False)
        best_theirs = Timing(min(best_theirs.wall, t.wall), min(best_theirs.cpu, t.cpu))
        t = run_best(ours, 1, warmup=False)
        best_ours = Timing(min(best_ours.wall, t.wall), min(best_ours.cpu, t.cpu))
    return best_ours, best_theirs


def best_of(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def kit(*args: str) -> list[str]:
    return [sys.executable, "-m", "seam_repro", *args]


def _fmt(t: Timing) -> str:
    return f"{t.wall:.2f} s wall / {t.cpu:.2f} s CPU"


def _extract(snapshot: Path, into: Path) -> Path | None:
    if not snapshot.exists() or not shutil.which("git"):
        return None
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(snapshot), "archive", "HEAD"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def machine() -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}, Python {platform.python_version()}, {platform.system()}"


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


# ---- rows ---------------------------------------------------------------------------------------

def startup_rows(repeat: int) -> list[Row]:
    bare = run_best([[sys.executable, "-c", "pass"]], repeat)
    version = run_best([kit("--version")], repeat)
    verify = run_best([kit("verify", str(REPO / "manifests" / "smoke.json"))], repeat)
    return [
        Row("start-up: seam-repro --version", _fmt(version), f"python -c pass: {_fmt(bare)}",
            f"{version.cpu / bare.cpu:.1f}x anchor", f"{version.wall / bare.wall:.1f}x anchor"),
        Row("start-up: verify smoke.json (36 prompts)", _fmt(verify), f"python -c pass: {_fmt(bare)}",
            f"{verify.cpu / bare.cpu:.1f}x anchor", f"{verify.wall / bare.wall:.1f}x anchor"),
    ]


def _prompt_lists(lines: list[str]) -> dict[tuple[str, int], list[str]]:
    out: dict[tuple[str, int], list[str]] = {}
    for line in lines:
        if line.startswith('{"dataset"') or line.startswith("{"):
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(r, dict) and "prompt" in r:
                out.setdefault((r["dataset"], r["run"]), []).append(r["prompt"])
    return out


def prompt_rows(work: Path, repeat: int, skip: set[str]) -> tuple[list[Row], list[bytes]]:
    data = scaled_seam_data(work / "data")
    config = work / "config.json"
    config.write_text(json.dumps(seam_config(data)), encoding="utf-8")
    manifest, out = work / "m.json", work / "p.jsonl"
    ours_cmds = [kit("sample", str(config), "-o", str(manifest), "--prompts-dir", str(PROMPTS)),
                 kit("prompts", str(manifest), "-o", str(out))]
    ours = run_best(ours_cmds, repeat)
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    blobs = [r["prompt"].encode("utf-8") for r in records]
    figure = f"prompt generation: sample + prompts ({len(records)} prompts, 6 datasets, 10 runs)"
    src = os.environ.get("SEAM_UPSTREAM_SRC") or None
    reason = ""
    if "upstream" in skip:
        reason = "skipped (--skip upstream)"
    elif src is None:
        extracted = _extract(UPSTREAM_SNAPSHOT, work / "seam-upstream")
        src = str(extracted) if extracted else None
        if src is None:
            reason = "skipped: no upstream snapshot ($SEAM_UPSTREAM_SRC unset, no mirror)"
    if not reason:
        probe = subprocess.run([sys.executable, "-c", "import datasets, pandas"], capture_output=True, env=_env())
        if probe.returncode != 0:
            reason = "skipped: the upstream generator needs the `datasets` package (pip install datasets)"
    if reason:
        return [Row(figure, _fmt(ours), f"published generator: {reason}", target=">= 40x", verdict="n/a")], blobs
    env = dict(_env(), SEAM_UPSTREAM_SRC=src, PYTHONPATH="", HF_HOME=str(work / "hf"),
               HF_DATASETS_CACHE=str(work / "hf" / "datasets"))
    oracle = [sys.executable, str(REPO / "tools" / "upstream_oracle.py"), str(config), str(work / "data"), str(PROMPTS)]
    run_best([oracle], 0, env=env)  # warm-up: byte-code, caches
    ours, theirs = run_pair(ours_cmds, [oracle], max(1, repeat - 1), env, ours)
    check = subprocess.run(oracle, capture_output=True, text=True, env=env, check=True)
    same = _prompt_lists(check.stdout.splitlines()) == _prompt_lists(out.read_text(encoding="utf-8").splitlines())
    r_cpu, r_wall = theirs.cpu / ours.cpu, theirs.wall / ours.wall
    # the floors of two kit processes: start-up alone, and start-up plus the I/O any implementation must do
    start = run_best([kit("--version")], repeat)
    io = io_floor(work, config, manifest, out, records, repeat)
    floor = (f"; of which start-up (2 x `seam-repro --version`) {2 * start.cpu:.2f} s CPU; start-up plus reading, "
             f"decoding and hashing the same inputs, hashing the prompts and writing the same bytes "
             f"(benchmarks/io_floor.py, no checking or rendering) {io.cpu:.2f} s CPU: with no other work the ratio "
             f"could reach {theirs.cpu / io.cpu:.0f}x")
    return [Row(figure, _fmt(ours) + floor, f"published generator: {_fmt(theirs)}", f"{r_cpu:.1f}x faster",
                f"{r_wall:.1f}x faster", ">= 40x",
                ("OK" if r_cpu >= 40 else "below") + ("" if same else "; PROMPTS DIFFER"))], blobs


def io_floor(work: Path, config: Path, manifest: Path, out: Path, records: list[dict[str, object]],
             repeat: int) -> Timing:
    """``benchmarks/io_floor.py`` for ``sample`` then ``prompts``: the same input files, as many
    prompt bytes hashed (each run's shared prefix once, as the kit hashes them) and written bytes."""
    by_run: dict[tuple[object, object], list[bytes]] = {}
    for r in records:
        by_run.setdefault((r["dataset"], r["run"]), []).append(str(r["prompt"]).encode("utf-8"))
    hashed = sum(sum(map(len, ps)) - (len(ps) - 1) * len(os.path.commonprefix(ps)) for ps in by_run.values())
    shared = sorted(p for p in (work / "data").rglob("*") if p.is_file()) + sorted(PROMPTS.glob("*.json"))
    lists = {}
    for which, first in (("sample", config), ("prompts", manifest)):
        lists[which] = work / f"floor-{which}.txt"
        lists[which].write_text("\n".join(map(str, [first, *shared])), encoding="utf-8")
    script = str(REPO / "benchmarks" / "io_floor.py")
    return run_best([[sys.executable, script, "sample", str(lists["sample"]), str(hashed),
                      str(manifest.stat().st_size), str(work / "floor-sample.out")],
                     [sys.executable, script, "prompts", str(lists["prompts"]), str(hashed),
                      str(out.stat().st_size), str(work / "floor-prompts.out")]], repeat)


def hashing_row(blobs: list[bytes], repeat: int) -> Row:
    """The kit's prompt hashing (what sample, prompts and verify do per prompt) against the floor."""
    from seam_repro.hashing import digest_of_hashes, sha256_text

    texts = [b.decode("utf-8") for b in blobs]
    t_kit = best_of(lambda: digest_of_hashes(sha256_text(t) for t in texts), repeat * 3)
    t_raw = best_of(lambda: [hashlib.sha256(b).digest() for b in blobs], repeat * 3)
    t_enc = best_of(lambda: [t.encode("utf-8") for t in texts], repeat * 3)
    mb = sum(map(len, blobs)) / 1e6
    return Row(f"prompt hashing: sha256_text + digest ({len(blobs)} prompts, {mb:.1f} MB of str)",
               f"{t_kit * 1000:.1f} ms (of which UTF-8 encoding {t_enc * 1000:.1f} ms)",
               f"hashlib.sha256 over the same bytes: {t_raw * 1000:.1f} ms", f"{t_kit / t_raw:.2f}x anchor time",
               "", f"<= anchor + encoding ({(t_raw + t_enc) / t_raw:.2f}x) + 10%",
               "OK" if t_kit <= 1.1 * (t_raw + t_enc) else "above")


_SCORE = re.compile(r"CoNLL score[^:]*: ([0-9.]+)")


def conll_row(work: Path, repeat: int, skip: set[str]) -> Row:
    key_text, resp_text = conll_pair(random.Random(0), n_docs=200, n_tokens=300)
    key, resp = work / "key.conll", work / "resp.conll"
    key.write_text(key_text)
    resp.write_text(resp_text)
    ours = run_best([kit("conll-score", str(key), str(resp))], repeat)
    figure = "conll-score, all 5 metrics (200 documents x 300 tokens)"
    scorer = os.environ.get("CONLL_SCORER") or None
    reason = ""
    if "perl" in skip:
        reason = "skipped (--skip perl)"
    elif not shutil.which("perl"):
        reason = "skipped: perl is not installed"
    elif scorer is None or not Path(scorer).is_file():
        extracted = _extract(SCORER_SNAPSHOT, work / "scorer")
        scorer = str(extracted / "scorer.pl") if extracted else None
        if scorer is None:
            reason = "skipped: no scorer.pl ($CONLL_SCORER unset, no mirror)"
    if reason:
        return Row(figure, _fmt(ours), f"scorer.pl all: {reason}", target=">= 20x", verdict="n/a")
    perl = ["perl", scorer, "all", str(key), str(resp)]
    ours, theirs = run_pair([kit("conll-score", str(key), str(resp))], [perl], max(1, repeat - 1), None, ours)
    perl_out = subprocess.run(perl, capture_output=True, text=True, check=True).stdout
    our_out = subprocess.run(kit("conll-score", str(key), str(resp)), capture_output=True, text=True, env=_env(),
                             check=True).stdout
    # the F1 lines of every metric, as both print them (perl: per document then TOTALS; take TOTALS)
    theirs_f1 = [m.split("====== TOTALS =======")[-1] for m in perl_out.split("METRIC ")[1:]]
    ours_f1 = [m.split("====== TOTALS =======")[-1] for m in our_out.split("METRIC ")[1:]]
    pick = re.compile(r"(?:Coreference|BLANC): .*?F1: ([0-9.]+)%")
    same = [pick.findall(t)[-1:] for t in theirs_f1] == [pick.findall(t)[-1:] for t in ours_f1]
    r_cpu, r_wall = theirs.cpu / ours.cpu, theirs.wall / ours.wall
    return Row(figure, _fmt(ours), f"perl scorer.pl all: {_fmt(theirs)}", f"{r_cpu:.1f}x faster",
               f"{r_wall:.1f}x faster", ">= 20x",
               ("OK" if r_cpu >= 20 else "below") + ("" if same else "; F1 DIFFERS"))


def replay_rows(repeat: int, new_tokens: int) -> list[Row]:
    """Kit backend vs raw generate per decoding step; sorted vs unsorted batches (embedded model)."""
    try:
        import torch

        from seam_repro.config import GenerationSettings
        from seam_repro.generate.base import GenerationRequest
        from seam_repro.generate.embedded import load_embedded_backend
        from seam_repro.hashing import sha256_text
    except ImportError as exc:
        return [Row("replay: hf backend vs raw model.generate", f"skipped: {exc}", "", verdict="n/a")]
    threads = torch.get_num_threads()
    if os.getloadavg()[0] > (os.cpu_count() or 1):
        # oversubscribed cores stall torch's parallel regions at every barrier (a 135M model's
        # decoding step went from ~40 ms to 2 s here); one thread gives steadier comparisons
        threads = 1
        torch.set_num_threads(1)
    try:
        t0 = time.perf_counter()
        backend = load_embedded_backend()
        t_load = time.perf_counter() - t0
    except Exception as exc:  # noqa: BLE001 - a missing model is a skip, not a failure of the table
        return [Row("replay: hf backend vs raw model.generate", f"skipped: {exc}", "", verdict="n/a")]
    topics = ["rivers", "volcanoes", "bread", "chess", "the moon", "bees", "trains", "glass"]
    prompts = [f"Write two sentences about {t} for a child." for t in topics]
    reqs = [GenerationRequest("B", 0, str(i), p, sha256_text(p), 100 + i) for i, p in enumerate(prompts)]
    settings = GenerationSettings(max_new_tokens=new_tokens)
    backend.generate(reqs[:2], GenerationSettings(max_new_tokens=2))  # warm-up
    ids, mask = backend.left_pad([backend.prepare(r.prompt, settings).ids for r in reqs])
    width = ids.shape[1]
    gen = backend.resolved_generation(settings)
    steps = {"raw": 0, "kit": 0}

    def raw() -> None:
        with torch.inference_mode():
            out = backend.model.generate(input_ids=ids, attention_mask=mask, do_sample=True,
                                         temperature=settings.temperature, top_k=gen["top_k"], top_p=gen["top_p"],
                                         max_new_tokens=new_tokens, pad_token_id=backend.pad_id,
                                         eos_token_id=backend.eos_ids or None)
        steps["raw"] = out.shape[1] - width

    def ours() -> None:
        steps["kit"] = max(r.n_output_tokens for r in backend.generate(reqs, settings))

    wall = {"raw": float("inf"), "kit": float("inf")}
    cpu = dict(wall)
    for _ in range(repeat + 1):  # interleaved, so both see the same load
        for name, fn in (("raw", raw), ("kit", ours)):
            w0, c0 = time.perf_counter(), time.process_time()
            fn()
            n = max(1, steps[name])
            wall[name] = min(wall[name], (time.perf_counter() - w0) / n)
            cpu[name] = min(cpu[name], (time.process_time() - c0) / n)
    over_cpu, over_wall = cpu["kit"] / cpu["raw"] - 1, wall["kit"] / wall["raw"] - 1
    rows = [Row(f"replay: hf backend, batch {len(reqs)}, T=0.8, top-k {gen['top_k']} (SmolLM2-135M, CPU, "
                f"{threads} torch thread{'s' if threads > 1 else ''})",
                f"{1000 * wall['kit']:.1f} ms/step wall / {1000 * cpu['kit']:.1f} ms CPU",
                f"raw model.generate, same ids: {1000 * wall['raw']:.1f} ms/step wall / {1000 * cpu['raw']:.1f} ms CPU",
                f"{100 * over_cpu:+.1f}% time/step", f"{100 * over_wall:+.1f}% time/step", "<= +5%",
                "OK" if over_cpu <= 0.05 else "above")]
    try:
        rows.append(batching_row(backend, repeat))
    except Exception as exc:  # noqa: BLE001 - one broken row must not cost the whole table
        rows.append(Row("batching: length-sorted batches", f"failed: {exc}", "", verdict="error"))
    rows[-1].figure += f" (model load {t_load:.0f} s)"
    return rows


def batching_row(backend: object, repeat: int) -> Row:
    """Length-sorted vs manifest-order batches: padded prompt tokens of the whole smoke manifest at
    its batch size (exact, from the tokenizer), and the time of 2 long + 2 short prompts interleaved
    (as datasets alternate in a manifest) in batches of 2 with 4 new tokens: mostly prompt work."""
    from seam_repro.config import GenerationSettings
    from seam_repro.generate.base import GenerationRequest
    from seam_repro.hashing import sha256_text
    from seam_repro.manifest.prompts import render_records
    from seam_repro.manifest.trust import load_trusted

    smoke = REPO / "manifests" / "smoke.json"
    records = list(render_records(load_trusted(smoke)))
    settings = GenerationSettings(max_new_tokens=4)
    lens = [len(backend.prepare(r["prompt"], settings).ids) for r in records]  # type: ignore[attr-defined]

    def padded(order: list[int], bs: int) -> int:
        return sum(max(lens[j] for j in order[i:i + bs]) * len(order[i:i + bs]) for i in range(0, len(order), bs))

    bs = 4
    plain = padded(list(range(len(records))), bs)
    ordered = padded(sorted(range(len(records)), key=lambda j: (-len(records[j]["prompt"]), j)), bs)
    base = "Summarize in one sentence: the river rose after three days of rain and the town moved its market uphill."
    texts = [" ".join([base] * 12), base, " ".join([base] * 11), base + " Be brief."]
    reqs = [GenerationRequest("B", 0, str(i), t, sha256_text(t), 7 + i) for i, t in enumerate(texts)]

    def run(pairs: list[list[int]]) -> None:
        for pair in pairs:
            backend.generate([reqs[j] for j in pair], settings)  # type: ignore[attr-defined]

    t_plain = t_sorted = float("inf")
    for _ in range(repeat):
        t_plain = min(t_plain, best_of(lambda: run([[0, 1], [2, 3]]), 1))
        t_sorted = min(t_sorted, best_of(lambda: run([[0, 2], [1, 3]]), 1))
    return Row(f"batching: length-sorted batches (smoke.json, {len(records)} prompts, batch {bs})",
               f"{ordered:,} padded prompt tokens; 2 long + 2 short prompts sorted into pairs: {t_sorted:.2f} s",
               f"manifest order: {plain:,} padded tokens; long+short pairs: {t_plain:.2f} s",
               f"{plain / ordered:.2f}x fewer tokens; {t_plain / t_sorted:.2f}x faster", "", "> 1x",
               "OK" if ordered <= plain and t_sorted < t_plain else "not faster")


# ---- table --------------------------------------------------------------------------------------

def render(rows: list[Row], header: list[str]) -> str:
    cols = ["figure", "kit", "anchor (same run)", "ratio (CPU)", "ratio (wall)", "target", "verdict"]
    cells = [[r.figure, r.kit, r.anchor, r.ratio_cpu, r.ratio_wall, r.target, r.verdict] for r in rows]
    lines = header + ["", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(c) + " |" for c in cells]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke test of the table itself)")
    ap.add_argument("--skip", default="", help="comma-separated: upstream, perl, replay")
    ap.add_argument("--only", default="", help="comma-separated row groups: startup, prompts, conll, replay")
    ap.add_argument("--new-tokens", type=int, default=16, help="decoding steps for the replay rows")
    args = ap.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")  # model-loading progress bars would break up the table
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    skip = {s for s in args.skip.split(",") if s}
    repeat = 2 if args.quick else 3
    started, load_before = time.perf_counter(), load()
    rows: list[Row] = []
    only = {s for s in args.only.split(",") if s} or {"startup", "prompts", "conll", "replay"}
    with tempfile.TemporaryDirectory(prefix="seam-bench-") as tmp:
        work = Path(tmp)
        if "startup" in only:
            rows += startup_rows(repeat)
        if "prompts" in only:
            prompt_rows_, blobs = prompt_rows(work / "prompts", repeat, skip)
            rows += prompt_rows_
            rows.append(hashing_row(blobs, repeat))
        if "conll" in only:
            rows.append(conll_row(work, repeat, skip))
    if "replay" in skip:
        rows.append(Row("replay: hf backend vs raw model.generate", "skipped (--skip replay)", "", verdict="n/a"))
    elif "replay" in only:
        rows += replay_rows(repeat, args.new_tokens)
    header = [f"machine: {machine()}",
              f"load average (1/5/15 min): {load_before} before, {load()} after; {time.perf_counter() - started:.0f} s "
              f"in all; best of {repeat} runs per figure"]
    print(render(rows, header))


if __name__ == "__main__":
    main()
