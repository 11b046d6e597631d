"""``replay`` and ``merge``: thin wrappers over :mod:`seam_repro.run.replay` and :mod:`seam_repro.run.shard`;
replay then scores (:mod:`seam_repro.scoring`) and prints the results table (:mod:`seam_repro.analysis`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from seam_repro.cli import command_line, on_interrupt
from seam_repro.commands import MANIFEST, render_inputs
from seam_repro.errors import SeamReproError
from seam_repro.verbosity import log, log_printed, say


class BatchSize(click.ParamType):
    """``--batch-size``: an integer >= 1 or ``auto``."""

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | str:
        text = str(value).strip().lower()  # an int (already converted) passes as its digits
        if text == "auto":
            return "auto"
        if text.isdigit() and int(text) >= 1:
            return int(text)
        self.fail(f"expected an integer >= 1 or 'auto', got {value!r}", param, ctx)


EXAMPLES = """\b
Examples:
  seam-repro replay manifests/smoke.json --out runs/smoke                 # embedded SmolLM2, CPU
  seam-repro replay manifests/paper.json --model meta-llama/Meta-Llama-3-8B-Instruct --out runs/l3
  seam-repro replay m.json --backend echo --out runs/dry --limit 2        # no model: dry run
  seam-repro replay smoke --backend echo --out runs/dry                   # a shipped manifest by name
  seam-repro replay manifests/smoke.json --datasets MuSiQue,ECB --runs 0,3-5 --out runs/part  # partial run
  seam-repro replay manifests/smoke.json --max-new-tokens 64 --temperature 0 --out runs/greedy  # protocol differs
  seam-repro replay m.json --model M --out runs/s$SLURM_ARRAY_TASK_ID --shard $SLURM_ARRAY_TASK_ID/8
  seam-repro merge runs/s0 runs/s1 runs/s2 runs/s3 runs/s4 runs/s5 runs/s6 runs/s7 --out runs/all
  seam-repro replay manifests/smoke.json --model ./my-model --name "My model v2" --out runs/mine
  seam-repro replay m.json --model ./ckpt --model-args dtype=bf16,attn_implementation=sdpa,max_model_len=8192 --out runs/c
  seam-repro replay m.json --backend openai --model smollm2 --name "SmolLM2 (llama.cpp)" \\
      --model-args base_url=http://127.0.0.1:8080/v1,concurrency=2 --out runs/served
  OPENAI_API_KEY=... seam-repro replay m.json --backend openai --model gpt-4o-mini-2024-07-18 \\
      --model-args base_url=https://api.openai.com/v1 --out runs/api
  seam-repro replay m.json --backend vllm --model M --out runs/big \\
      --model-args tensor_parallel_size=4,pipeline_parallel_size=2,distributed_executor_backend=ray
"""


@click.command(epilog=EXAMPLES)
@click.argument("manifest", type=MANIFEST)
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Run directory (created, or resumed if it holds the same manifest and model).")
@click.option("--model", default=None, metavar="ID[@REVISION]|DIR",
              help="Hugging Face model (a bare id must be pinned in data/models.json), a local model folder "
                   "(revision = sha256 of its weight, config and tokenizer files), or for --backend openai the "
                   "served model name. Default: embedded SmolLM2.")
@click.option("--name", default=None, metavar="TEXT",
              help="Display name in reports, plots and bundles (default: the model id).")
@click.option("--backend", type=click.Choice(["hf", "vllm", "openai", "echo"]), default="hf", show_default=True,
              help="openai = an OpenAI-compatible server (needs --model-args base_url=...); echo = no model, "
                   "seeded words of the prompt (dry runs, resume drills).")
@click.option("--model-args", default=None, metavar="KEY=VALUE,...",
              help="Backend options, validated per backend (docs/models.md: 'Your own model: local folders, display "
                   "names, model arguments'); recorded in run.json.")
@click.option("--shard", default=None, metavar="K/N", help="Only instances whose hash falls in shard K of N (0-based).")
@click.option("--batch-size", type=BatchSize(), default=None, metavar="N|auto",
              help="Instances per forward pass (default: the manifest's batch_size; hf on CPU: 8, the measured best). "
                   "auto = the largest that fits, found before the run (hf on a GPU: tried down from 64 on "
                   "out-of-memory; on CPU: 8); the choice is printed and recorded in run.json.")
@click.option("--deterministic/--no-deterministic", default=None,
              help="Batch-invariant generation: each prediction depends on its own prompt, seed and settings, not "
                   "on batch size, neighbours, padding, shard, selection or resume (hf: the default wherever the "
                   "architecture allows; vllm: VLLM_BATCH_INVARIANT). Recorded in run.json as the kernel layout.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="torch CPU threads for local weights (hf backend). Default: the cores this process may use "
                   "(affinity, cgroup quota) less those busy with other work, or OMP_NUM_THREADS when set; "
                   "recorded in run.json.")
@click.option("--dtype", type=click.Choice(["auto", "bf16", "fp16", "fp32"]), default="auto", show_default=True,
              help="auto = bf16 on CUDA (paper), fp32 on CPU.")
@click.option("--load-in-4bit", "q4", is_flag=True, help="bitsandbytes 4-bit (upstream: Mixtral-8x22B).")
@click.option("--load-in-8bit", "q8", is_flag=True, help="bitsandbytes 8-bit.")
@click.option("--prompt-path", type=click.Choice(["chat", "upstream"]), default="chat", show_default=True,
              help="upstream = SEAM's template-then-strip handling (hf backend).")
@click.option("--truncation", type=click.Choice(["right", "left"]), default=None,
              help="Over-long prompts: right cuts the end (upstream), left cuts the start. "
                   "Default: right for --prompt-path upstream, left for chat.")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="First N instances of every (dataset, run). A partial run: score, diff, report and submit say so.")
@click.option("--datasets", default=None, metavar="NAME,...",
              help="Only these datasets of the manifest (any case, the paper's spelling: MuSiQue,ECB). A partial run, "
                   "like --limit.")
@click.option("--runs", default=None, metavar="K,K-K",
              help="Only these runs (0-based indices and ranges: 0,3-5). A partial run, like --limit.")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=None,
              help="Override the manifest's max_new_tokens. Leaves the paper's protocol: recorded in run.json "
                   "and marked as a protocol difference (‡) by diff, report and submit.")
@click.option("--temperature", type=click.FloatRange(min=0), default=None,
              help="Override the manifest's temperature (0 = greedy). A protocol difference, as above.")
@click.option("--top-p", type=click.FloatRange(min=0, max=1, min_open=True), default=None,
              help="Override the manifest's top_p. A protocol difference, as above.")
@render_inputs("Read each dataset from DIR/<name> instead of the cache.", "Read prompt files from DIR/<name>.json.")
@click.option("--echo-delay", type=click.FloatRange(min=0), default=0.0, help="echo backend: seconds per instance.")
@click.option("--no-score", is_flag=True, help="Only generate; do not score afterwards.")
@click.option("--no-report", is_flag=True, help="Score, but do not print the results table afterwards.")
@click.option("--fic/--no-fic", default=True, show_default=True,
              help="Score FuseReviews with its NLI/coverage models when they are in the local cache.")
@click.option("--fic-download", is_flag=True,
              help="Allow fetching the pinned FIC models from the Hub (flan-t5-xxl is ~45 GB).")
def replay(manifest: Path, out: Path, model: str | None, name: str | None, backend: str, model_args: str | None,
           shard: str | None, batch_size: int | str | None, deterministic: bool | None, threads: int | None,
           dtype: str, q4: bool, q8: bool, prompt_path: str, truncation: str | None, limit: int | None,
           datasets: str | None, runs: str | None, max_new_tokens: int | None, temperature: float | None,
           top_p: float | None, data_dir: Path | None, prompts_dir: Path | None, allow_unfrozen: bool,
           echo_delay: float, no_score: bool, no_report: bool, fic: bool, fic_download: bool) -> None:
    """Generate predictions for a frozen manifest (resumable), then score them.

    An unfrozen MANIFEST (manifests/paper.json) is first made whole: its pinned sources are fetched
    and verified (or read from --data-dir/--prompts-dir), it is frozen into OUT and verified, and
    that frozen copy is replayed. What is printed, plus debug detail, is kept in OUT/replay.log.
    """
    from seam_repro.files.guard import guard_outputs
    from seam_repro.manifest.trust import load_trusted
    from seam_repro.run.replay import ReplayOptions
    from seam_repro.run.replay import replay as run_replay
    from seam_repro.run.shard import parse_shard
    from seam_repro.run.store import RUN_FOLDER_WRITES, predictions_root, run_log_path
    from seam_repro.verbosity import run_log

    if q4 and q8:
        raise click.BadParameter("give at most one of --load-in-4bit / --load-in-8bit")
    model_dir = Path(model) if model and Path(model).is_dir() else None  # a local model folder is read too
    guard_outputs([("--out", out)], inputs=[manifest], read_dirs=[data_dir, prompts_dir, model_dir],
                  writes=RUN_FOLDER_WRITES)  # before the log lands
    with run_log(run_log_path(out)):
        log().debug("command: " + command_line())
        on_interrupt(lambda: interrupted_note(out))
        if allow_unfrozen:
            loaded = load_trusted(manifest, allow_unfrozen=True)
        else:  # an unfrozen manifest (paper.json): fetch, freeze into --out, verify, then replay
            from seam_repro.run.prepare import freeze_for_replay

            loaded = freeze_for_replay(manifest, out, data_dir=data_dir, prompts_dir=prompts_dir,
                                       echo=lambda line: say(line, err=True))
            if Path(loaded.path) != manifest:  # the frozen copy records where its data lies
                data_dir, prompts_dir = None, None
        if data_dir is None or prompts_dir is None:  # then the data and prompt files the manifest records are read
            from seam_repro.manifest.format import recorded_sources
            from seam_repro.manifest.prompts import recorded_inputs

            inputs = recorded_inputs(recorded_sources(loaded.manifest), Path(loaded.path).parent)
            guard_outputs([("--out", out)], read_dirs=inputs, writes=RUN_FOLDER_WRITES)
        options = ReplayOptions(model=model, backend=backend, name=name, model_args=model_args, dtype=dtype,
                                quantization="4bit" if q4 else "8bit" if q8 else None, prompt_path=prompt_path,
                                truncation=truncation, echo_delay=echo_delay,
                                shard=parse_shard(shard) if shard else None, batch_size=batch_size,
                                deterministic=deterministic, threads=threads,
                                limit=limit, datasets=datasets, runs=runs,
                                generation_overrides={"max_new_tokens": max_new_tokens, "temperature": temperature,
                                                      "top_p": top_p},
                                data_dir=data_dir, prompts_dir=prompts_dir, allow_unfrozen=allow_unfrozen)
        summary = run_replay(loaded, out, options)
        say(f"{summary.model_slug}: {summary.generated} generated, {summary.already_done} already stored, "
            f"{summary.in_shard} in this shard; {len(summary.truncated)} truncated; "
            f"{summary.tokens_per_second:.1f} output tok/s")
        say(f"predictions: {predictions_root(out) / summary.model_slug}")
        if shard or no_score:
            return
        on_interrupt(f"all predictions are kept in {predictions_root(out)}; no partial score file is left")
        paths, table = score_and_tabulate(out, fic=fic, fic_download=fic_download, table=not no_report)
        for path in paths:
            say(f"scores: {path}")
        if table:
            click.echo(table)
            log_printed(table)
        elif no_report:
            say(f"results table not printed (--no-report); see it with: seam-repro report {out} --out REPORT_DIR")


def interrupted_note(out: Path) -> str:
    """What Ctrl-C during replay leaves: the stored predictions, or, before the first batch was
    stored, that there are none (not "0 predictions are kept in" a folder never created)."""
    from seam_repro.run.store import count_stored, predictions_root

    n = count_stored(out) if predictions_root(out).is_dir() else 0
    if n == 0:
        return "no prediction was stored yet (stopped before the first batch finished)"
    return f"{n} prediction{'s' if n != 1 else ''} kept in {predictions_root(out)} (one fsynced line each)"


def score_and_tabulate(run_dir: Path, fic: bool, fic_download: bool, table: bool = True) -> tuple[list[Path], str]:
    """Score the run just replayed and render its results table (the score, aggregate and report
    stages, in that order; ``table`` False skips the last). A failure while building the table is
    reported in its place: the predictions and scores stay valid."""
    from seam_repro.analysis.aggregate import load_run_dir
    from seam_repro.analysis.report import build_report, render_markdown
    from seam_repro.run.store import read_run_records
    from seam_repro.scoring.loop import score_run_dir

    run = read_run_records(run_dir)  # its manifest copy read and checked once, for the score and the table
    paths = score_run_dir(run_dir, fic=fic, fic_download=fic_download, progress=True, run=run)
    if not table:
        return paths, ""
    try:
        return paths, render_markdown(build_report(load_run_dir(run_dir, run)))
    except SeamReproError as exc:
        return paths, f"(results table unavailable: {exc})"


MERGE_EXAMPLES = """\b
Examples:
  seam-repro merge runs/s0 runs/s1 runs/s2 runs/s3 --out runs/all         # the shards of --shard K/4
  seam-repro merge runs/l70/s{0..7} --out runs/l70/all && seam-repro score runs/l70/all
"""


@click.command(epilog=MERGE_EXAMPLES)
@click.argument("shard_dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="New merged run dir.")
def merge(shard_dirs: tuple[Path, ...], out: Path) -> None:
    """Merge shard run directories; refuses missing, duplicate or conflicting predictions."""
    from seam_repro.run.shard import merge_run_dirs

    on_interrupt(f"no {out} was created (merge builds in a hidden temporary folder and renames it at the end)")

    counts = merge_run_dirs(list(shard_dirs), out)
    for slug, n in counts.items():
        click.echo(f"{slug}: {n} predictions merged into {out}")


RECHECK_EXAMPLES = """\b
Examples:
  seam-repro recheck runs/llama8b --sample 20 --seed 7              # 20 instances, any batch, any order
  seam-repro recheck runs/llama8b --bundle llama8b.bundle.json --json recheck.json
  seam-repro recheck runs/x --model-folder /models/x-copy --batch-size 1
"""


@click.command(epilog=RECHECK_EXAMPLES)
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--sample", type=click.IntRange(min=1), default=20, show_default=True,
              help="Instances to regenerate, drawn with --seed from those the run stored.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the sample and of its order.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None,
              help="Batch to regenerate at (default: the backend's); any size must give the same outputs under "
                   "batch-invariant generation.")
@click.option("--model", "model", default=None, metavar="ID|SLUG", help="Which model of a multi-model run.")
@click.option("--model-folder", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Load a local model from here instead of the recorded path (it must hash to the same revision).")
@click.option("--bundle", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="A results bundle (seam-repro submit) to tie to RUN_DIR first: its predictions digest must match.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Also write the per-instance report as JSON.")
def recheck(run_dir: Path, sample: int, seed: int, batch_size: int | None, model: str | None,
            model_folder: Path | None, bundle: Path | None, json_out: Path | None) -> int:
    """Regenerate a seeded random sample of a run's instances on the same model and compare them with the
    stored predictions, byte for byte. Exit 0: every one identical; exit 1: some differ (each listed with
    its first differing character, and the environments side by side)."""
    from seam_repro.files.atomic import atomic_write_json
    from seam_repro.files.guard import guard_outputs
    from seam_repro.run.recheck import recheck as run_recheck

    guard_outputs([("--json", json_out)], inputs=[bundle], read_dirs=[run_dir, model_folder])  # None: nothing
    report = run_recheck(run_dir, sample=sample, seed=seed, batch_size=batch_size, model=model,
                         model_folder=model_folder, bundle=bundle)
    for line in report.lines():
        click.echo(line)
    if json_out is not None:
        atomic_write_json(json_out, report.as_dict())
    return report.exit_code
