"""--model-args: per-backend validation (one-line errors naming the key and the accepted keys),
typed values, protocol subset, recording, and vLLM's distributed settings reaching vllm.LLM (fake)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from seam_repro.errors import InputError
from seam_repro.generate import make_backend
from seam_repro.generate.model_args import (
    SPECS,
    parse_model_args,
    protocol_args,
    recorded_args,
)
from seam_repro.hashing import sha256_file


def reference_table() -> str:
    """Markdown table of every backend's keys, as docs/models.md shows it (kept in sync below)."""
    rows = ["| backend | key | type | protocol | meaning |", "|---|---|---|---|---|"]
    for backend, specs in SPECS.items():
        for spec in specs.values():
            kind = spec.type + (f" ({'/'.join(spec.choices)})" if spec.choices else "")
            meaning = f"alias of {spec.alias_of}" if spec.alias_of else spec.help
            rows.append(f"| {backend} | `{spec.name}` | {kind} | {'yes' if spec.protocol else 'no'} | {meaning} |")
    return "\n".join(rows)


def test_values_are_typed_and_aliases_resolve(tmp_path: Path) -> None:
    tpl = tmp_path / "t.jinja"
    tpl.write_text("{{ messages }}")
    args = parse_model_args("hf", f"dtype=bf16, attn_implementation=sdpa,trust_remote_code=yes,max_length=4096,"
                                  f"chat_template={tpl},device_map=cuda:1")
    assert args == {"dtype": "bf16", "attn_implementation": "sdpa", "trust_remote_code": True,
                    "max_model_len": 4096, "chat_template": str(tpl), "device_map": "cuda:1"}
    assert set(protocol_args("hf", args)) == {"dtype", "attn_implementation", "trust_remote_code", "max_model_len",
                                               "chat_template"}
    assert recorded_args("hf", args)["chat_template"] == {"file": str(tpl), "sha256": sha256_file(tpl)}
    assert parse_model_args("hf", None) == parse_model_args("hf", " ") == {}


@pytest.mark.parametrize(("backend", "text", "message"), [
    ("hf", "tensor_parallel_size=2", "unknown key 'tensor_parallel_size' for the hf backend; accepted: "
                                     "attn_implementation, chat_template, device_map, dtype, max_length, "
                                     "max_model_len, trust_remote_code"),
    ("vllm", "device_map=auto", "unknown key 'device_map' for the vllm backend; accepted: chat_template, "
                                "distributed_executor_backend, dtype, gpu_memory_utilization, max_model_len, "
                                "pipeline_parallel_size, tensor_parallel_size, trust_remote_code"),
    ("echo", "x=1", "unknown key 'x' for the echo backend; accepted: none"),
    ("hf", "dtype", "expected key=value,key=value, got 'dtype'"),
    ("hf", "dtype=int3", "hf backend, key dtype: expected one of auto, bf16, fp16, fp32, got 'int3'"),
    ("hf", "trust_remote_code=maybe", "key trust_remote_code: expected true or false, got 'maybe'"),
    ("hf", "max_model_len=4k", "key max_model_len: expected an integer, got '4k'"),
    ("hf", "max_model_len=8,max_length=9", "key 'max_model_len' given twice"),
    ("hf", "chat_template=/no/such.jinja", "key chat_template: expected an existing file, got '/no/such.jinja'"),
    ("vllm", "gpu_memory_utilization=1.5", "key gpu_memory_utilization: expected a value in 0.05..1.0, got '1.5'"),
    ("vllm", "distributed_executor_backend=slurm", "expected one of ray, mp, got 'slurm'"),
])
def test_bad_model_args_are_one_line_errors(backend: str, text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_model_args(backend, text)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("--model-args: ")


NUMERIC = [(backend, spec) for backend, specs in SPECS.items() for spec in specs.values()
           if spec.type in ("int", "float")]


def test_every_numeric_key_is_bounded_on_both_sides() -> None:
    """A bound is what keeps a huge value (``timeout=1e300``: a C timeval overflow deep in a socket)
    out; a new numeric key without one fails here."""
    assert NUMERIC
    for backend, spec in NUMERIC:
        assert spec.min is not None and spec.max is not None, f"{backend}.{spec.name} needs min and max"


@pytest.mark.parametrize(("backend", "spec"), NUMERIC, ids=[f"{b}.{s.name}" for b, s in NUMERIC])
@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "1e300", "-1e300"])
def test_non_finite_and_huge_numbers_are_refused_for_every_numeric_key(backend: str, spec: object,
                                                                       value: str) -> None:
    with pytest.raises(InputError) as err:
        parse_model_args(backend, f"{spec.name}={value}")  # type: ignore[attr-defined]
    text = str(err.value)
    assert text.startswith(f"--model-args: {backend} backend, key ") and repr(value) in text and "\n" not in text
    assert ("expected a value in" in text) if spec.type == "float" else ("expected an integer" in text)  # type: ignore[attr-defined]


def test_dtype_given_twice_must_agree() -> None:
    with pytest.raises(InputError, match="dtype=fp16 contradicts --dtype bf16"):
        make_backend("vllm", "org/m@rev", dtype="bf16", model_args="dtype=fp16")


def test_every_key_is_documented_in_the_table() -> None:
    table = reference_table()
    for backend, specs in SPECS.items():
        for key in specs:
            assert f"| {backend} | `{key}` |" in table


def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> dict:
    seen: dict = {}

    class Tok:
        chat_template = "{{ m }}"

    class LLM:
        def __init__(self, **kw: object) -> None:
            seen.update(kw)

        def get_tokenizer(self) -> Tok:
            return Tok()

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, __version__="0.0-fake"))
    return seen


def test_vllm_distributed_settings_reach_llm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen = fake_vllm(monkeypatch)
    tpl = tmp_path / "t.jinja"
    tpl.write_text("T: {{ messages }}")
    b = make_backend("vllm", "org/m@abc", dtype="bf16", model_args=(
        f"tensor_parallel_size=4,pipeline_parallel_size=2,gpu_memory_utilization=0.85,max_model_len=8192,"
        f"distributed_executor_backend=ray,chat_template={tpl}"))
    assert seen == {"model": "org/m", "revision": "abc", "tokenizer_revision": "abc", "dtype": "bfloat16",
                    "tensor_parallel_size": 4, "pipeline_parallel_size": 2, "gpu_memory_utilization": 0.85,
                    "max_model_len": 8192, "distributed_executor_backend": "ray", "trust_remote_code": False,
                    "quantization": None}
    info = b.describe()
    assert info["tensor_parallel_size"] == 4 and info["distributed_executor_backend"] == "ray"
    assert b.tokenizer.chat_template == "T: {{ messages }}"


def test_vllm_defaults_and_local_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen = fake_vllm(monkeypatch)
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"\x02" + b"\0" * 7 + b"{}")  # a whole safetensors file, no tensor
    (folder / "tokenizer.json").write_text("{}")  # a folder is checked for a tokenizer and a chat template first
    (folder / "chat_template.jinja").write_text("{{ messages[0]['content'] }}")
    b = make_backend("vllm", str(folder))
    assert seen["model"] == str(folder.resolve()) and "revision" not in seen
    assert seen["tensor_parallel_size"] == 1 and "gpu_memory_utilization" not in seen
    assert b.model_id == "local/ckpt" and b.revision.startswith("sha256:")
    assert b.describe()["local_folder"]["files"]["config.json"] == sha256_file(folder / "config.json")


def test_readme_table_is_in_sync() -> None:
    """The --model-args table of docs/models.md (moved there from the README) is reference_table()."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text("utf-8")
    start, end = "<!-- model-args-table:start -->\n", "<!-- model-args-table:end -->"
    assert page.count(start) == 1, "docs/models.md lacks the model-args table markers"
    shown = page.split(start, 1)[1].split(end, 1)[0].strip()
    assert shown == reference_table(), "docs/models.md's --model-args table is stale: paste reference_table() output"
