"""Truncation parity on the upstream prompt path: a prompt longer than the context is cut on the
right, upstream's response extraction ran on the decoded *truncated* prompt plus the continuation,
and scoring must do the same (the full prompt would put back the ``*Answer*:`` marker the cut lost)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from trust_helpers import seal_run_dir

from seam_repro.config import GenerationSettings
from seam_repro.errors import PrerequisiteError
from seam_repro.generate.base import GenerationRequest, GenerationResult
from seam_repro.hashing import sha256_text
from seam_repro.metrics.rouge import rouge_geo
from seam_repro.run.store import make_record
from seam_repro.scoring.extract import extract_upstream
from seam_repro.scoring.loop import score_run_dir

GOLD = "the river flooded the town and the bridge closed"
LONG_PROMPT = ("*Instructions*: Summarize the documents.\n*The documents*:\n"
               + "".join(f"Document {i}: ```The river rose again on day {i} and the bridge stayed closed.```\n"
                         for i in range(1, 40)) + "*Answer*: ")


def _run_dir(root: Path, record: dict) -> Path:
    prompt = {"dataset": "MultiNews", "task": "summarization", "run": 0, "split": "test", "instance_id": "1",
              "prompt": LONG_PROMPT, "prompt_sha256": sha256_text(LONG_PROMPT), "target": GOLD,
              "target_sha256": sha256_text(GOLD), "gen_seed": 1}
    (root / "predictions" / "m__m" / "MultiNews").mkdir(parents=True)
    (root / "prompts.jsonl").write_text(json.dumps(prompt) + "\n", "utf-8")
    (root / "run.json").write_text(json.dumps({"schema_version": 1, "manifest_digest": "abc"}), "utf-8")
    seal_run_dir(root, [prompt])
    (root / "predictions" / "m__m" / "MultiNews" / "run_0.jsonl").write_text(json.dumps(record) + "\n", "utf-8")
    return root


def _score(root: Path) -> dict:
    [summary] = score_run_dir(root, fic=False)
    return json.loads((summary.parent / "instance_scores.jsonl").read_text("utf-8").splitlines()[0])


def _record(output: str, truncated: bool, text: str | None) -> dict:
    req = GenerationRequest("MultiNews", 0, "1", LONG_PROMPT, sha256_text(LONG_PROMPT), 1)
    res = GenerationResult(output, "x", 10, 4, truncated, 20 if truncated else 10, text)
    return make_record(req, res, "m/m", "r", {})


def test_scoring_extracts_from_the_recorded_truncated_prompt(tmp_path: Path) -> None:
    output = " the river flooded the town"
    cut = LONG_PROMPT[: len(LONG_PROMPT) // 2]  # what the decoded truncated ids hold: no *Answer*: marker
    line = _score(_run_dir(tmp_path / "a", _record(output, True, cut)))
    expected = rouge_geo(extract_upstream(cut + output), GOLD).geo
    assert line["score"] == pytest.approx(expected)
    assert line["details"]["upstream_text"] == "recorded prompt text"
    full = _score(_run_dir(tmp_path / "b", _record(output, True, None)))  # older record: full prompt stands in
    assert full["score"] == pytest.approx(rouge_geo(output.strip(), GOLD).geo) != line["score"]
    assert full["details"]["upstream_text"].startswith("full prompt")
    # the corrected variant only ever reads the continuation
    assert line["details"]["corrected"]["score"] == full["details"]["corrected"]["score"]


def test_record_carries_the_text_only_when_truncated() -> None:
    assert "upstream_prompt_text" not in _record("x", False, None)
    assert _record("x", True, "cut")["upstream_prompt_text"] == "cut"


@pytest.mark.slow
def test_tiny_model_prompt_longer_than_context_records_decoded_truncated_text(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("gguf")
    from seam_repro.generate.embedded import load_embedded_backend

    try:
        backend = load_embedded_backend()
    except PrerequisiteError as exc:
        pytest.skip(str(exc))
    backend.prompt_path = "upstream"
    settings = GenerationSettings(max_new_tokens=4, context_window=64)  # budget: 60 prompt tokens
    req = GenerationRequest("MultiNews", 0, "1", LONG_PROMPT, sha256_text(LONG_PROMPT), 1)
    [res] = backend.generate([req], settings)
    assert res.truncated and res.n_prompt_tokens_full > 60
    tok = backend.tokenizer
    ids = tok.apply_chat_template([{"role": "user", "content": LONG_PROMPT}], tokenize=True, return_dict=False)
    assert res.upstream_prompt_text == tok.decode(ids[:60], skip_special_tokens=True)
    assert "*Answer*:" not in res.upstream_prompt_text  # the right cut removed the marker
    line = _score(_run_dir(tmp_path / "run", make_record(req, res, "m/m", "r", {})))
    assert line["score"] == pytest.approx(rouge_geo(extract_upstream(res.upstream_prompt_text + res.output), GOLD).geo)
