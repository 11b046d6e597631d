"""The hf backend's GPU-only branches, run on CPU: only the device query is faked (torch.cuda's
availability, count and properties), never the model, so a wrong argument to transformers,
accelerate or bitsandbytes fails here and not on a lab's GPU. The same branches ran for real on an
H200 (tools/gpu_check.sh; benchmarks/results/gpu_check-*.json). Also: the quantized branch on
bitsandbytes' CPU backend, the out-of-memory message, and the 8-bit warning shown once."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
from tiny_models import save_tiny_llama

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError, PrerequisiteError
from seam_repro.generate.base import GenerationRequest
from seam_repro.hashing import sha256_text

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from seam_repro.generate import hf  # noqa: E402

GiB = 2**30
PROMPTS = ["Summarize: the river rose after three days of rain and the bridge was closed.",
           "Question: who closed the bridge? Answer briefly.", "List two documents."]


def fake_gpus(monkeypatch: pytest.MonkeyPatch, count: int, memory: int) -> None:
    """What torch reports on a machine with ``count`` GPUs of ``memory`` bytes; nothing else changes."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda i: types.SimpleNamespace(total_memory=memory, name=f"Fake GPU {i}"))


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-layer random Llama (hidden 64, so bitsandbytes' blocks divide it) and a BPE tokenizer."""
    torch.set_num_threads(1)
    return save_tiny_llama(tmp_path_factory.mktemp("cuda-branches") / "tiny", PROMPTS * 3, vocab=320, hidden=64,
                           intermediate=128, layers=2, heads=4, kv_heads=2, context=1024)


def load(folder: Path, **kw: object) -> hf.HFBackend:
    from seam_repro.generate.local import resolve_local

    local = resolve_local(str(folder))
    return hf.load_hf_backend(local.model_id, local.revision, source=str(local.path),
                              local_info={"path": str(local.path), "files": local.files}, **kw)


def requests() -> list[GenerationRequest]:
    return [GenerationRequest("X", 0, str(i), p, sha256_text(p), 500 + i) for i, p in enumerate(PROMPTS)]


# -- dtype and memory: the device query faked, the rest real ---------------------------------------------
def test_auto_dtype_is_bf16_with_a_gpu_and_fp32_without(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_gpus(monkeypatch, 1, 80 * GiB)
    assert hf.resolve_dtype("auto") is torch.bfloat16  # the paper's dtype
    assert hf.resolve_dtype("fp32") is torch.float32 and hf.resolve_dtype("fp16") is torch.float16
    fake_gpus(monkeypatch, 0, 0)
    assert hf.resolve_dtype("auto") is torch.float32


def test_available_memory_adds_every_gpu_to_host_ram(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    fake_gpus(monkeypatch, 2, 80 * GiB)
    total, said = hf.available_memory_bytes()
    assert total == 160 * GiB + host
    assert said.startswith("160.0 GiB on 2 GPU(s) + ") and said.endswith(" GiB host RAM")
    fake_gpus(monkeypatch, 0, 0)
    assert hf.available_memory_bytes() == (host, f"{host / GiB:.1f} GiB host RAM")


def test_preflight_counts_gpus_and_refuses_what_they_cannot_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 70B-shaped config on one 80 GiB GPU: refused in bf16, accepted in 4-bit once there are 2 GPUs --
    from the config alone (meta device), so nothing is allocated."""
    cfg = transformers.LlamaConfig(vocab_size=128256, hidden_size=8192, intermediate_size=28672,
                                   num_hidden_layers=80, num_attention_heads=64, num_key_value_heads=8)
    import os

    fake_gpus(monkeypatch, 1, 80 * GiB)
    real = os.sysconf
    ram = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 16 * GiB // 4096}  # a 16 GiB host
    monkeypatch.setattr(os, "sysconf", lambda name: ram[name] if name in ram else real(name))
    with pytest.raises(PrerequisiteError, match=r"70\.6B parameters need about 144\.\d GiB in bf16, but this machine "
                                                r"has 80\.0 GiB on 1 GPU\(s\) \+ 16\.0 GiB host RAM"):
        hf.check_fits(cfg, "llama-70b", "bf16", None)
    fake_gpus(monkeypatch, 2, 80 * GiB)
    assert 36 * GiB < hf.check_fits(cfg, "llama-70b", "bf16", "4bit") < 37 * GiB  # 0.5 byte/param + 10 %


# -- real loads on CPU with the arguments a GPU run passes -------------------------------------------------
def test_bf16_with_device_map_auto_loads_and_records_where(folder: Path) -> None:
    backend = load(folder, dtype="bf16", device_map="auto")
    info = backend.describe()
    assert info["dtype"] == "bfloat16" and info["device_map"] == "auto" and info["devices"] == ["cpu"]
    out = backend.generate(requests(), GenerationSettings(max_new_tokens=6))
    assert len(out) == 3 and all(r.n_output_tokens >= 1 for r in out)


@pytest.mark.parametrize("quantization", ["4bit", "8bit"])
def test_quantized_branch_runs_on_bitsandbytes_cpu_backend(folder: Path, quantization: str) -> None:
    """The --load-in-4bit/8bit branch end to end: BitsAndBytesConfig reaches transformers, the linear
    layers are bitsandbytes', generation is seeded per row (same outputs batched and alone)."""
    bnb = pytest.importorskip("bitsandbytes", reason="bitsandbytes not installed (`make install` installs "
                                                     "the quant extra)")
    backend = load(folder, dtype="fp32", quantization=quantization)
    kinds = {type(m).__name__ for m in backend.model.modules()}
    assert ({"Linear4bit"} if quantization == "4bit" else {"Linear8bitLt"}) <= kinds, kinds
    assert backend.describe()["quantization"] == quantization
    settings = GenerationSettings(max_new_tokens=8)
    batched = [r.output for r in backend.generate(requests(), settings)]
    again = [r.output for r in backend.generate(requests(), settings)]
    assert batched == again  # seeded: a rerun repeats itself
    assert bnb.__version__


def test_int8_cast_log_is_shown_once_per_process(folder: Path, caplog: pytest.LogCaptureFixture) -> None:
    """bitsandbytes logs its fp16 cast on every 8-bit matrix product; the kit lets the first through."""
    pytest.importorskip("bitsandbytes")
    backend = load(folder, dtype="fp32", quantization="8bit")
    with caplog.at_level("WARNING"):
        for _ in range(3):
            backend.generate(requests(), GenerationSettings(max_new_tokens=4))
    shown = [r for r in caplog.records if r.getMessage().startswith(hf.INT8_CAST_MESSAGE)]
    assert len(shown) <= 1, len(shown)
    other = hf.logging.LogRecord(hf.INT8_CAST_LOGGER, hf.logging.WARNING, __file__, 1, "something else", None, None)
    assert all(f.filter(other) for f in hf.logging.getLogger(hf.INT8_CAST_LOGGER).filters)  # others pass


def test_out_of_memory_is_one_line_that_says_how_to_resume(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real model, whose generate raises what torch raises when a GPU cannot hold the batch (the
    default mode: the deterministic one backs off by itself, tests/test_invariant.py)."""
    backend = load(folder, dtype="fp32", deterministic=False)

    def oom(**_: object) -> None:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 79.1 GiB total)\n"
                                          "details...")

    monkeypatch.setattr(backend.model, "generate", oom)
    with pytest.raises(PrerequisiteError) as err:
        backend.generate(requests(), GenerationSettings(max_new_tokens=500))
    msg = str(err.value)
    assert "\n" not in msg
    assert "batch of 3 prompt(s)" in msg and "+ 500 new" in msg and "Tried to allocate 20.00 GiB" in msg
    assert "--batch-size 1 to resume" in msg
    with pytest.raises(PrerequisiteError, match="--load-in-8bit or --load-in-4bit"):
        backend.generate(requests()[:1], GenerationSettings(max_new_tokens=5))


# -- a device_map or attention kernel this machine cannot serve: one line, before the load (issue 28) --------
@pytest.mark.parametrize(("gpus", "value", "why"), [
    (0, "cuda", "(no CUDA device is visible)"), (0, "cuda:0", "(no CUDA device is visible)"),
    (2, "cuda:2", "(2 CUDA device(s) visible)"), (0, "bogus", "got 'bogus'"), (0, "cuda:x", "got 'cuda:x'"),
    (0, "mps", "(no mps device is available)"),
])
def test_a_device_map_this_machine_cannot_serve_is_one_line(monkeypatch: pytest.MonkeyPatch, folder: Path,
                                                            gpus: int, value: str, why: str) -> None:
    """Before: torch's AssertionError ('Torch not compiled with CUDA enabled') or accelerate's
    ValueError from inside the load, an internal error (exit 70)."""
    fake_gpus(monkeypatch, gpus, 80 * GiB)
    have = ", ".join(["cpu"] + [f"cuda:{i}" for i in range(gpus)])
    with pytest.raises(InputError) as err:
        load(folder, device_map=value)
    assert str(err.value) == (f"--model-args: hf backend, key device_map: expected auto, balanced, balanced_low_0, "
                              f"sequential or a device this machine has ({have}), got {value!r}"
                              + (f" {why}" if why.startswith("(") else ""))


def test_a_device_map_this_machine_has_passes_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("auto", "balanced", "sequential", "cpu", None):
        hf.check_device_map(value)
    fake_gpus(monkeypatch, 2, 80 * GiB)
    for value in ("cuda", "cuda:0", "cuda:1"):
        hf.check_device_map(value)


@pytest.mark.parametrize(("gpus", "kernel", "why"), [
    (0, "flash_attention_2", "flash_attention_2 runs on CUDA devices only, and none is visible"),
    (1, "flash_attention_2", "FlashAttention2 has been toggled on"),  # transformers' own ImportError
    (1, "flash_attention_3", "FlashAttention3 has been toggled on"),
])
def test_an_attention_kernel_this_machine_cannot_run_is_one_line(monkeypatch: pytest.MonkeyPatch, folder: Path,
                                                                 gpus: int, kernel: str, why: str) -> None:
    """Before: transformers' ImportError from inside the load, an internal error (exit 70). With a
    (faked) GPU the check is transformers' own, on the meta-device skeleton: nothing is loaded."""
    from transformers.utils import is_flash_attn_2_available, is_flash_attn_3_available

    if (is_flash_attn_2_available() if kernel.endswith("2") else is_flash_attn_3_available()):
        pytest.skip(f"{kernel} is installed here")
    fake_gpus(monkeypatch, gpus, 80 * GiB)
    with pytest.raises(InputError, match=rf"^--model-args: hf backend, key attn_implementation: {kernel} cannot run "
                                         rf"here \({why}.*\); expected a kernel this machine and model support"):
        load(folder, attn_implementation=kernel, device_map=None, dtype="fp32")
