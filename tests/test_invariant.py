"""Batch-invariant generation (hf ``--deterministic``, ``generate/invariant.py``), proven on CPU.

Each prediction must be bit for bit the same whatever the batch size, the order, the batch neighbours,
the shard count, a ``--datasets`` selection or a SIGKILL resumed at another batch size -- in fp32 and
bf16, on random Llama- and Qwen2-shaped models and on a trained one (the embedded SmolLM2 GGUF). The
default mode's flips are measured beside it and printed in the terminal summary, so the difference the
mode makes stays visible in CI. On a GPU the same properties are checked by tools/gpu_check.sh.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from tiny_models import save_tiny_llama, save_tiny_qwen2

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "manifests" / "smoke.json"
BATCHES = (1, 2, 3, 8, 32)


@pytest.fixture(scope="module")
def prompts(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The smoke manifest's 36 prompt records, as ``seam-repro prompts`` writes them."""
    from seam_repro.cli import cli

    out = tmp_path_factory.mktemp("prompts") / "smoke.prompts.jsonl"
    result = CliRunner().invoke(cli, ["prompts", str(SMOKE), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text("utf-8").splitlines()]


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory, prompts: list[dict[str, Any]]) -> dict[str, Path]:
    torch.set_num_threads(1)  # 2 shared cores: intra-op threads oversubscribe
    texts = [p["prompt"] for p in prompts]
    root = tmp_path_factory.mktemp("invariant")
    shape = dict(vocab=400, hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2)
    return {"llama": save_tiny_llama(root / "tiny-llama", texts, **shape),
            "qwen2": save_tiny_qwen2(root / "tiny-qwen2", texts, **shape)}


def requests_of(records: list[dict[str, Any]]) -> list[Any]:
    from seam_repro.generate.base import GenerationRequest

    return [GenerationRequest(r["dataset"], r["run"], r["instance_id"], r["prompt"], r["prompt_sha256"], r["gen_seed"])
            for r in records]


def outputs_at(backend: Any, reqs: list[Any], settings: Any, batch: int, seed: int) -> dict[Any, str]:
    """Outputs by key, generated in a shuffled order in batches of ``batch``."""
    order = list(reqs)
    random.Random(seed).shuffle(order)
    out = {}
    for i in range(0, len(order), batch):
        chunk = order[i:i + batch]
        out.update({r.key: res.output for r, res in zip(chunk, backend.generate(chunk, settings), strict=True)})
    return out


def flips(backend: Any, reqs: list[Any], settings: Any, batches: tuple[int, ...]) -> dict[int, int]:
    """Per batch size, how many outputs differ from batch 1 (each batch in a different shuffled order)."""
    ref = outputs_at(backend, reqs, settings, 1, 0)
    return {b: sum(outputs_at(backend, reqs, settings, b, b)[k] != v for k, v in ref.items()) for b in batches[1:]}


# ---- the kernel property the lanes rest on ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_rows_result_in_a_fixed_shape_call_ignores_its_slot_and_neighbours(dtype: str) -> None:
    """Lanes pad every call to a fixed row count because, for one shape, a row's result depends on its
    own data only; the one-row call (GEMV) is the shape that would differ."""
    import torch.nn.functional as F

    dt = getattr(torch, dtype)
    g = torch.Generator().manual_seed(0)
    w, x = torch.randn(192, 64, generator=g).to(dt), torch.randn(8, 64, generator=g).to(dt)
    k, v, q = (torch.randn(8, 2, 256, 16, generator=g).to(dt), torch.randn(8, 2, 256, 16, generator=g).to(dt),
               torch.randn(8, 2, 2, 16, generator=g).to(dt))
    mask = torch.arange(256).view(1, 1, 1, 256) < 150
    ref_l, ref_a = F.linear(x, w)[0], F.scaled_dot_product_attention(q, k, v, attn_mask=mask)[0]
    for j in range(1, 8):
        x2, q2 = torch.randn(8, 64, generator=g).to(dt), torch.randn(8, 2, 2, 16, generator=g).to(dt)
        k2, v2 = torch.randn(8, 2, 256, 16, generator=g).to(dt), torch.randn(8, 2, 256, 16, generator=g).to(dt)
        x2[j], q2[j], k2[j], v2[j] = x[0], q[0], k[0], v[0]
        k2[j, :, 150:] = 7.0  # what lies in masked positions of a slot must not matter either
        assert torch.equal(F.linear(x2, w)[j], ref_l)
        assert torch.equal(F.scaled_dot_product_attention(q2, k2, v2, attn_mask=mask)[j], ref_a)


def test_capacity_depends_on_the_sequence_alone() -> None:
    from seam_repro.generate.invariant import MIN_CAPACITY, capacity_for

    assert capacity_for(1, 1) == MIN_CAPACITY
    assert capacity_for(1000, 48) == 2048 and capacity_for(976, 48) == 1024
    assert all(capacity_for(n, 48) >= n + 48 for n in range(1, 3000, 37))


# ---- in memory: random Llama and Qwen2 in bf16 (fp32: the CLI replays below) --------------------------------
@pytest.mark.slow(seconds=21)
@pytest.mark.parametrize(("arch", "dtype"), [("llama", "bf16"), ("qwen2", "bf16")])
def test_predictions_do_not_depend_on_batch_or_order(arch: str, dtype: str, folders: dict[str, Path],
                                                      prompts: list[dict[str, Any]],
                                                      measured: Callable[[str], None]) -> None:
    from seam_repro.config import GenerationSettings
    from seam_repro.generate import make_backend

    reqs = requests_of(prompts[::4])  # 9 prompts, 189-1017 tokens
    settings = GenerationSettings(max_new_tokens=16)
    det = make_backend("hf", str(folders[arch]), dtype=dtype, model_args="device_map=cpu", deterministic=True)
    assert det.deterministic and det.resolved_generation(settings)["kernels"] == "seam-lanes-v1/rows=8"
    assert flips(det, reqs, settings, BATCHES) == {b: 0 for b in BATCHES[1:]}
    default = make_backend("hf", str(folders[arch]), dtype=dtype, model_args="device_map=cpu", deterministic=False)
    got = flips(default, reqs, settings, (1, 3, 8))
    measured(f"default mode, tiny {arch} {dtype}, {len(reqs)} smoke prompts: outputs that differ from batch 1 at "
             f"batch 3 / 8: {got[3]} / {got[8]} (deterministic: 0 / 0 at batch 2, 3, 8, 32)")


@pytest.mark.parametrize("dtype", [pytest.param("bf16", marks=pytest.mark.slow(seconds=65)),
                                   pytest.param("fp32", marks=pytest.mark.slow(seconds=20))])
def test_the_embedded_trained_model_is_batch_invariant(dtype: str, prompts: list[dict[str, Any]],
                                                        measured: Callable[[str], None]) -> None:
    """SmolLM2-135M-Instruct, de-quantized from the shipped GGUF by transformers: a trained model, whose
    peaked distributions flip less often than a random model's, but still flip in the default mode
    (bf16; in fp32 these prompts did not flip, so only the deterministic mode is checked there). The
    default-mode backend shares the loaded weights (outside the lanes the model attends as with SDPA)."""
    pytest.importorskip("gguf")
    from seam_repro.config import GenerationSettings
    from seam_repro.generate import make_backend
    from seam_repro.generate.hf import HFBackend

    reqs = requests_of(sorted(prompts, key=lambda r: len(r["prompt"]))[:6 if dtype == "bf16" else 3])
    settings = GenerationSettings(max_new_tokens=10)
    det = make_backend("hf", None, dtype=dtype, deterministic=True)
    assert flips(det, reqs, settings, (1, 3)) == {3: 0}  # alone, then beside 2 others in shuffled lanes
    if dtype == "bf16":
        default = HFBackend(det.model, det.tokenizer, det.model_id, det.revision, deterministic=False)
        got = flips(default, reqs, settings, (1, 3))
        measured(f"default mode, embedded SmolLM2 bf16, {len(reqs)} shortest smoke prompts x 10 tokens: outputs that "
                 f"differ from batch 1 at batch 3: {got[3]} (deterministic: 0)")


def test_unsupported_architectures_are_refused_or_fall_back() -> None:
    import transformers

    from seam_repro.errors import InputError
    from seam_repro.generate.hf import choose_deterministic

    cfg = transformers.MixtralConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, num_key_value_heads=1, num_local_experts=4)
    model = transformers.MixtralForCausalLM(cfg)
    with pytest.raises(InputError, match="mixture-of-experts"):
        choose_deterministic(model, True)
    on, note = choose_deterministic(model, None)
    assert not on and "mixture-of-experts" in note
    assert choose_deterministic(model, False)[0] is False


# ---- through the CLI: shards, selection, resume --------------------------------------------------------------
def replay(out: Path, folder: Path, dtype: str, *extra: str, det: bool = True) -> Path:
    from seam_repro.cli import cli

    args = ["replay", str(SMOKE), "--model", str(folder), "--out", str(out), "--dtype", dtype, "--no-score",
            "--limit", "1", "--model-args", "device_map=cpu", "--deterministic" if det else "--no-deterministic",
            *extra]
    result = CliRunner().invoke(cli, ["-q", *args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return out


def stored(run: Path) -> dict[tuple[str, int, str], str]:
    out = {}
    for path in sorted((run / "predictions").rglob("run_*.jsonl")):
        for line in path.read_text("utf-8").splitlines():
            rec = json.loads(line)
            out[(rec["dataset"], rec["run"], rec["instance_id"])] = rec["output"]
    return out


def merge(out: Path, *shards: Path) -> Path:
    from seam_repro.cli import cli

    result = CliRunner().invoke(cli, ["merge", *map(str, shards), "--out", str(out)])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return out


def killed_and_resumed(out: Path, folder: Path, dtype: str, batch: int, resume_batch: int) -> tuple[int, Path]:
    """A replay killed with SIGKILL once some predictions are stored, then resumed at another batch size."""
    from seam_repro.run.store import count_stored

    args = [sys.executable, "-m", "seam_repro", "-q", "replay", str(SMOKE), "--model", str(folder), "--out", str(out),
            "--dtype", dtype, "--no-score", "--limit", "1", "--model-args", "device_map=cpu", "--deterministic",
            "--batch-size", str(batch), "--threads", "1"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    t0 = time.time()
    while proc.poll() is None and time.time() - t0 < 300:
        if count_stored(out) >= 4:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.01)
    proc.wait()
    before = count_stored(out)
    replay(out, folder, dtype, "--batch-size", str(resume_batch))
    return before, out


@pytest.mark.parametrize("dtype", [pytest.param("bf16", marks=pytest.mark.slow(seconds=22)),
                                   pytest.param("fp32", marks=pytest.mark.slow(seconds=12))])
def test_replay_is_invariant_to_batch_shards_selection_and_resume(dtype: str, folders: dict[str, Path],
                                                                   tmp_path: Path) -> None:
    llama = folders["llama"]
    ref = stored(replay(tmp_path / "b1", llama, dtype, "--batch-size", "1"))
    assert len(ref) == 18
    batches = (3, 8, 32) if dtype == "bf16" else (8,)
    for b in batches:
        assert stored(replay(tmp_path / f"b{b}", llama, dtype, "--batch-size", str(b))) == ref, b
    # shards replayed at different batch sizes, merged: allowed (invariant) and equal
    two = [replay(tmp_path / f"s{k}of2", llama, dtype, "--shard", f"{k}/2", "--batch-size", str(2 + 3 * k))
           for k in range(2)]
    assert stored(merge(tmp_path / "merged2", *two)) == ref
    if dtype == "bf16":
        three = [replay(tmp_path / f"s{k}of3", llama, dtype, "--shard", f"{k}/3", "--batch-size", str(k + 1))
                 for k in range(3)]
        assert stored(merge(tmp_path / "merged3", *three)) == ref
        # a selection changes which prompts share a batch, not any output
        sub = stored(replay(tmp_path / "sub", llama, dtype, "--datasets", "MusiQue,ECB", "--batch-size", "2"))
        assert sub and sub == {k: v for k, v in ref.items() if k[0] in ("MusiQue", "ECB")}
    before, resumed = killed_and_resumed(tmp_path / "killed", llama, dtype, 2, 5)
    assert 0 < before < 18 and stored(resumed) == ref


@pytest.mark.slow
def test_merge_refuses_default_mode_shards_at_different_batch_sizes(folders: dict[str, Path], tmp_path: Path) -> None:
    from seam_repro.cli import cli

    llama = folders["llama"]
    shards = [replay(tmp_path / f"s{k}", llama, "bf16", "--shard", f"{k}/2", "--batch-size", str(2 + k), det=False)
              for k in range(2)]
    result = CliRunner().invoke(cli, ["merge", *map(str, shards), "--out", str(tmp_path / "m")])
    assert result.exit_code != 0 and "different batch sizes" in str(result.exception)
    assert "--deterministic" in str(result.exception) and not (tmp_path / "m").exists()
    same = [replay(tmp_path / f"t{k}", llama, "bf16", "--shard", f"{k}/2", "--batch-size", "3", det=False)
            for k in range(2)]
    merge(tmp_path / "ok", *same)


# ---- out of memory: a deterministic batch backs off on its own ----------------------------------------------
@pytest.mark.slow
def test_out_of_memory_backs_off_only_where_outputs_cannot_change(folders: dict[str, Path], tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from seam_repro.cli import cli
    from seam_repro.generate import invariant

    llama = folders["llama"]
    ref = stored(replay(tmp_path / "ref", llama, "bf16", "--batch-size", "1"))
    real = invariant.generate_lanes
    seen: list[int] = []

    def tight(model: Any, prompts: list[list[int]], *a: Any, **k: Any) -> Any:
        seen.append(len(prompts))
        if len(prompts) > 2:  # the accelerator "holds" two prompts at a time
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(model, prompts, *a, **k)

    monkeypatch.setattr(invariant, "generate_lanes", tight)
    out = tmp_path / "tight"
    args = ["replay", str(SMOKE), "--model", str(llama), "--out", str(out), "--dtype", "bf16", "--no-score",
            "--limit", "1", "--model-args", "device_map=cpu", "--batch-size", "8"]
    result = CliRunner().invoke(cli, [*args, "--deterministic"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert stored(out) == ref and max(seen) == 8 and 2 in seen
    assert "generating it as 4 + 4" in result.output + (out / "replay.log").read_text("utf-8")
    # the default mode must not retry silently at another size: its outputs would change
    real_generate = __import__("transformers").GenerationMixin.generate

    def oom_generate(self: Any, *a: Any, **k: Any) -> Any:
        if k["input_ids"].shape[0] > 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_generate(self, *a, **k)

    monkeypatch.setattr("transformers.GenerationMixin.generate", oom_generate)
    other = tmp_path / "default"
    result = CliRunner().invoke(cli, [*[a if a != str(out) else str(other) for a in args], "--no-deterministic"])
    assert result.exit_code != 0 and "--batch-size 4" in str(result.exception)


# ---- recheck: a sample regenerated at another batch size and order ------------------------------------------
@pytest.mark.slow
def test_recheck_verifies_a_run_and_names_the_first_difference(folders: dict[str, Path], tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from seam_repro.cli import cli, main

    run = replay(tmp_path / "run", folders["llama"], "bf16", "--batch-size", "8")
    runner = CliRunner()
    ok = runner.invoke(cli, ["recheck", str(run), "--sample", "6", "--seed", "3", "--batch-size", "1",
                             "--json", str(tmp_path / "r.json")])
    assert ok.exit_code == 0, ok.output + repr(ok.exception)
    assert "IDENTICAL: 6 of 6" in ok.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"] == "identical" and report["checked"] == 6 and report["batch_invariant"]
    # edit one stored output: the sample that holds it differs, at the edited character
    path = next(p for p in sorted((run / "predictions").rglob("run_*.jsonl")))
    lines = path.read_text("utf-8").splitlines()
    rec = json.loads(lines[0])
    rec["output"] = rec["output"][:5] + "#" + rec["output"][6:]
    path.write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:  # the console entry point turns the verdict into the status
        main(["recheck", str(run), "--sample", "18", "--batch-size", "3", "--json", str(tmp_path / "bad.json")])
    shown = capsys.readouterr().out
    assert exit_info.value.code == 1, shown
    assert "DIFFERS: 1 of 18" in shown and "from character 5" in shown
    differ = [i for i in json.loads((tmp_path / "bad.json").read_text())["instances"] if i["status"] == "differs"]
    assert len(differ) == 1 and differ[0]["instance_id"] == rec["instance_id"]


# ---- other backends: vLLM passes its own switch through, a server's claim is recorded as such -----------------
class _FakeLLM:
    def get_tokenizer(self) -> Any:
        return type("Tok", (), {"chat_template": None})()

    def get_default_sampling_params(self) -> Any:
        raise AttributeError


def test_vllm_batch_invariance_is_set_before_the_engine_and_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    from seam_repro.config import GenerationSettings
    from seam_repro.generate.vllm import BATCH_INVARIANT_ENV, VLLMBackend
    from seam_repro.run.invariance import batch_invariant

    monkeypatch.delenv(BATCH_INVARIANT_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "vllm", type("vllm", (), {"__version__": "0.11.0"}))
    default = VLLMBackend("m", "r", llm=_FakeLLM())
    assert default.resolved_generation(GenerationSettings())["kernels"] == "default"
    on = VLLMBackend("m", "r", llm=_FakeLLM(), deterministic=True)
    import os

    assert os.environ[BATCH_INVARIANT_ENV] == "1" and on.describe()["deterministic"]
    kernels = on.resolved_generation(GenerationSettings())["kernels"]
    assert kernels == "vllm-batch-invariant/0.11.0"
    assert batch_invariant({"backend_name": "vllm", "generation": {"kernels": kernels}})
    VLLMBackend("m", "r", llm=_FakeLLM(), deterministic=False)
    assert os.environ[BATCH_INVARIANT_ENV] == "0"


def test_openai_records_a_servers_claim_as_unverified() -> None:
    from seam_repro.config import GenerationSettings
    from seam_repro.errors import InputError
    from seam_repro.generate import make_backend

    with pytest.raises(InputError, match="batch_invariant"):
        make_backend("openai", "m", model_args="base_url=http://127.0.0.1:9/v1", deterministic=True)
    claimed = make_backend("openai", "m", model_args="base_url=http://127.0.0.1:9/v1,batch_invariant=true")
    try:
        assert "unverified" in claimed.resolved_generation(GenerationSettings())["kernels"]
    finally:
        claimed.close()
    silent = make_backend("openai", "m", model_args="base_url=http://127.0.0.1:9/v1")
    try:
        assert "kernels" not in silent.resolved_generation(GenerationSettings())
    finally:
        silent.close()


def test_token_comparability_notes() -> None:
    from seam_repro.run.invariance import scored_comparability

    det = {"backend": "hf", "dtype": "bfloat16", "max_new_tokens": 48, "kernels": "seam-lanes-v1/rows=32"}
    notes = scored_comparability([("A", "m", "r", det), ("B", "m", "r", {**det, "batch_size": 8}),
                                  ("C", "m", "r", {**det, "kernels": "default"}), ("D", "x", "r", det)])
    assert any(n.startswith("A and B: comparable token for token") for n in notes)
    assert any(n.startswith("A and C: same model, but not comparable") and "kernels" in n for n in notes)
    assert not any("A and D" in n for n in notes)
    assert any(n.startswith("C: outputs from default kernels") for n in notes)
