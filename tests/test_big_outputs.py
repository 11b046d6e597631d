"""Model output is untrusted and can be huge (issue 28: `score` of one 10 MB prediction took 149 s).
What is scored is capped per instance (``extract.MAX_OUTPUT_BEYOND_PROMPT`` beyond the prompt's
length, recorded in the instance line) and the parsers are linear (``test_rouge.py``: the LCS), so a
10 MB prediction in every SEAM dataset scores in bounded time, and every other line is unchanged."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from trust_helpers import echo_runs  # noqa: F401 - session fixture

from seam_repro.scoring.extract import MAX_OUTPUT_BEYOND_PROMPT, cap_output
from seam_repro.scoring.loop import score_run_dir

TEN_MB = 10_000_000
# shapes that load each parser: prose (ROUGE, MuSiQue F1), cluster lists (coreference), answer
# dicts (MuSiQue), open brackets (the brace and list scanners), markers (extraction)
SHAPES = ("the answer is Paris and the storm hit the coast . ", "[[1, 2], [3, 4]]\n",
          '{"is_answerable": true, "answer_content": "Paris"} ', "{[( *Answer*: So, the answer is: ")


def _lines(run: Path) -> dict[tuple[str, int, str], dict]:
    rows = [json.loads(x) for x in (run / "scores" / "echo" / "instance_scores.jsonl").read_text().splitlines() if x]
    return {(r["dataset"], r["run"], r["instance_id"]): r for r in rows}


def test_a_10mb_prediction_per_dataset_scores_in_bounded_time(echo_runs: dict[str, Path],  # noqa: F811
                                                              tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(echo_runs["limited"], run)
    before = _lines(run)
    grown = {}
    for i, f in enumerate(sorted((run / "predictions" / "echo").glob("*/run_0.jsonl"))):
        rows = f.read_text().splitlines()
        rec = json.loads(rows[0])
        shape = SHAPES[i % len(SHAPES)]
        rec["output"] = (shape * (TEN_MB // len(shape) + 1))[:TEN_MB]
        rows[0] = json.dumps(rec)
        f.write_text("\n".join(rows) + "\n")
        grown[(rec["dataset"], rec["run"], rec["instance_id"])] = rec
    assert len(grown) == 6
    # CPU time of this process, not wall time: the bound is about the parsers staying linear
    # (issue 28's 149 s), and must not fail because other work shares the machine.
    t = time.process_time()
    score_run_dir(run, fic=False)
    took = time.process_time() - t
    assert took < 20.0, f"six 10 MB predictions took {took:.1f} CPU-s to score"
    after = _lines(run)
    prompts = {(r["dataset"], r["run"], r["instance_id"]): r["prompt"]
               for r in map(json.loads, (run / "prompts.jsonl").read_text().splitlines())}
    for key, line in after.items():
        if key in grown:
            assert line["details"]["output_capped"] == {"chars": TEN_MB,
                                                        "scored_chars": len(prompts[key]) + MAX_OUTPUT_BEYOND_PROMPT}
            assert line["valid_format"] is False
        else:
            assert line == before[key], key  # nothing else moves


def test_cap_leaves_real_outputs_alone() -> None:
    prompt = "p" * 30_000
    real = "an answer of 500 tokens " * 120  # ~2,900 characters
    assert cap_output(real, prompt) == (real, None)
    echoed = prompt + real  # an import whose output repeats the prompt
    assert cap_output(echoed, prompt) == (echoed, None)
    huge = "x" * (len(prompt) + MAX_OUTPUT_BEYOND_PROMPT + 1)
    assert cap_output(huge, prompt) == (huge[:-1], {"chars": len(huge), "scored_chars": len(huge) - 1})
