"""``seam-repro score`` end to end on a hand-built run directory: values against the metric
functions and hand counts, the files' shape, error messages, and adversarial outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from trust_helpers import seal_run_dir

from seam_repro.cli import cli
from seam_repro.errors import InputError, MissingDataError, PredictionsError
from seam_repro.hashing import digest_of_hashes, sha256_json, sha256_text
from seam_repro.metrics import registry
from seam_repro.metrics.fic import FicResult
from seam_repro.metrics.rouge import rouge_geo
from seam_repro.scoring.loop import score_run_dir

MODEL = {"id": "meta-llama/Meta-Llama-3-8B-Instruct", "revision": "c4a54320a52ed5f88b7a2f84496903ea4ff07b45"}
SLUG = "meta-llama__Meta-Llama-3-8B-Instruct"
GOLD_SUM = "storms hit the coast and thousands were evacuated"
QA_T = {"is_answerable": True, "answer_content": "Paris"}
QA_U = {"is_answerable": False, "answer_content": "Lyon"}
FIC_T = {"highlights_concat": "room clean", "review_side_alignments": ["room clean", "staff nice"]}


def prompt(ds: str, task: str, run: int, iid: str, target: Any, **extra: Any) -> dict[str, Any]:
    text = f"prompt {ds} {run} {iid}\n" + {"summarization": "*Answer*: ", "qa": "*Answer*: ",
                                           "fic": "So, the answer is:", "coreference": "*Answer*: "}[task]
    return {"dataset": ds, "task": task, "run": run, "split": "test", "instance_id": iid, "prompt": text,
            "prompt_sha256": sha256_text(text), "target": target,
            "target_sha256": sha256_text(target) if isinstance(target, str) else sha256_json(target),
            "gen_seed": 1, **extra}


PROMPTS = [
    prompt("MultiNews", "summarization", 0, "1", GOLD_SUM),
    prompt("MultiNews", "summarization", 0, "2", GOLD_SUM),
    prompt("MultiNews", "summarization", 1, "1", GOLD_SUM),
    prompt("MusiQue", "qa", 0, "q1", QA_T, answer_aliases=["City of Light"]),
    prompt("MusiQue", "qa", 0, "q2", QA_U, answer_aliases=[]),
    prompt("FuseReviews", "fic", 0, "7", FIC_T),
    prompt("ECB", "coreference", 0, "36", [[0, 1], [2]], mention_ids=[0, 1, 2]),
]
OUTPUTS = {
    ("MultiNews", 0, "1"): "Storms hit the coast; thousands evacuated.\n\n*Instructions*: fake next example",
    ("MultiNews", 0, "2"): "",
    ("MultiNews", 1, "1"): "storms hit the coast and thousands were evacuated",
    ("MusiQue", 0, "q1"): "{'is_answerable': True, 'answer_content': 'City of Light'}",
    ("MusiQue", 0, "q2"): '{"is_answerable": false, "answer_content": ""}',
    ("FuseReviews", 0, "7"): "The room was clean.",
    ("ECB", 0, "36"): "[[0, 1]]",
}


def write_run(root: Path, outputs: dict[tuple[str, int, str], Any] = OUTPUTS, prompts: list[dict] = PROMPTS) -> Path:
    (root / "predictions").mkdir(parents=True)
    (root / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts), "utf-8")
    (root / "run.json").write_text(json.dumps({"schema_version": 1, "manifest_digest": "abc"}), "utf-8")
    seal_run_dir(root, [p for p in prompts if isinstance(p, dict) and "prompt" in p])  # the trust chain's anchor
    by_file: dict[Path, bytes] = {}
    for p in prompts:
        key = (p["dataset"], p["run"], p["instance_id"])
        if key not in outputs:
            continue
        out = outputs[key]
        rec = {"dataset": key[0], "run": key[1], "instance_id": key[2], "prompt_sha256": p["prompt_sha256"],
               "templated_prompt_sha256": "x", "seed": 1, "generation": {}, "model": MODEL,
               "output": out if isinstance(out, str) else "@@BYTES@@", "truncated": False,
               "n_prompt_tokens": 1, "n_output_tokens": 1}
        line = json.dumps(rec).encode("ascii") + b"\n"  # surrogates stay \\u escapes
        if isinstance(out, bytes):
            line = line.replace(b"@@BYTES@@", out)
        path = root / "predictions" / SLUG / key[0] / f"run_{key[1]}.jsonl"
        by_file[path] = by_file.get(path, b"") + line
    for path, data in by_file.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


class FakeFic:
    """Test double for the model-based FIC scorer: fixed faithfulness/coverage per response."""

    def score(self, prediction: str, target: dict[str, Any]) -> FicResult:
        return FicResult(0.5, 0.25, 100 * 2 * 0.5 * 0.25 / 0.75)

    def version(self) -> str:
        return "fake"


def read_lines(path: Path) -> dict[tuple[str, int, str], dict[str, Any]]:
    return {(d["dataset"], d["run"], d["instance_id"]): d
            for d in map(json.loads, path.read_text("utf-8").splitlines())}


def test_end_to_end_values(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    [summary_path] = score_run_dir(run, fic_factory=FakeFic)
    lines = read_lines(summary_path.parent / "instance_scores.jsonl")
    summary = json.loads(summary_path.read_text("utf-8"))
    digest = json.loads((run / "run.json").read_text("utf-8"))["manifest_digest"]
    assert summary["model"] == MODEL and summary["manifest_digest"] == digest and summary["profile"] == "upstream"
    assert summary["prompt_digest"] == digest_of_hashes(p["prompt_sha256"] for p in PROMPTS)

    # upstream extraction keeps the fabricated example (no later *Answer*:); clean extraction cuts it
    mn = lines[("MultiNews", 0, "1")]
    up = rouge_geo(OUTPUTS[("MultiNews", 0, "1")].strip(), GOLD_SUM).geo
    clean = rouge_geo("Storms hit the coast; thousands evacuated.", GOLD_SUM).geo
    assert mn["metric"] == "rouge_geo" and mn["score"] == pytest.approx(up) and up < clean
    assert mn["details"]["corrected"]["score"] == pytest.approx(clean)
    assert lines[("MultiNews", 0, "2")]["valid_format"] is False and lines[("MultiNews", 0, "2")]["score"] == 0.0
    ds = summary["datasets"]["MultiNews"]
    assert ds["runs"] == {"0": pytest.approx(up / 2), "1": pytest.approx(100.0)}
    assert ds["format_rate"] == {"0": 0.5, "1": 1.0}
    assert ds["corrected"]["runs"]["0"] == pytest.approx(clean / 2)

    # MuSiQue: upstream str-dict F1 by hand; gold tokens isanswerable true answercontent paris
    q1, q2 = lines[("MusiQue", 0, "q1")], lines[("MusiQue", 0, "q2")]
    assert q1["score"] == pytest.approx(100 * 2 * (3 / 6) * (3 / 4) / (3 / 6 + 3 / 4))  # 3 common of 6 pred, 4 gold
    assert q2["score"] == pytest.approx(100 * 2 * 1 * (3 / 4) / (1 + 3 / 4))  # raw JSON text: 3 tokens, all in gold
    assert q2["valid_format"] is True  # JSON dict with is_answerable is valid format
    mq = summary["datasets"]["MusiQue"]
    assert mq["corrected"]["metric"] == "musique_corrected" and mq["corrected"]["runs"]["0"] == 100.0
    assert mq["corrected"]["extra"]["answer_f1"]["0"] == 100.0  # alias match, gold-answerable only
    assert mq["corrected"]["extra"]["answerability_accuracy"]["0"] == 100.0

    fr = lines[("FuseReviews", 0, "7")]
    assert fr["score"] == pytest.approx(100 / 3) and fr["metric"] == "fic_f1"
    assert summary["datasets"]["FuseReviews"]["runs"]["0"] == pytest.approx(100 / 3)


def test_records_naming_their_metric_score_the_corrected_variant_with_the_corrected_metric(tmp_path: Path) -> None:
    """`prompts` writes each record with the metric of the profile it was rendered under
    (``musique_f1`` under upstream). The corrected variant is still MuSiQue's corrected metric
    (answer F1 over aliases plus answerability), not the published one on a clean extraction; and a
    ``seam-repro-1`` record's upstream variant is the published metric."""
    named = [{**p, "metric": {"qa": "musique_f1", "coreference": "conll_f1", "summarization": "rouge_geo",
                              "fic": "fic_f1"}[p["task"]]} for p in PROMPTS]
    run = write_run(tmp_path / "run", prompts=named)
    [summary_path] = score_run_dir(run, fic_factory=FakeFic)
    lines = read_lines(summary_path.parent / "instance_scores.jsonl")
    summary = json.loads(summary_path.read_text("utf-8"))
    q1 = lines[("MusiQue", 0, "q1")]
    assert q1["metric"] == "musique_f1" and q1["details"]["corrected"]["metric"] == "musique_corrected"
    mq = summary["datasets"]["MusiQue"]
    assert mq["corrected"]["metric"] == "musique_corrected" and mq["corrected"]["runs"]["0"] == 100.0
    assert mq["corrected"]["extra"]["answer_f1"]["0"] == 100.0
    assert summary["datasets"]["ECB"]["corrected"]["metric"] == "conll_f1_corrected"
    assert registry.record_metrics({"task": "qa", "metric": "musique_corrected"}) == {
        "upstream": "musique_f1", "corrected": "musique_corrected"}
    # a metric no suite pairs with another scores both variants
    assert registry.record_metrics({"task": "content_selection", "metric": "igcs_token_f1"}) == {
        "upstream": "igcs_token_f1", "corrected": "igcs_token_f1"}


def test_coreference_dispatch(tmp_path: Path) -> None:
    coref_parse = pytest.importorskip("seam_repro.metrics.coref_parse")
    run = write_run(tmp_path / "run")
    [summary_path] = score_run_dir(run, fic=False)
    ecb = json.loads(summary_path.read_text("utf-8"))["datasets"]["ECB"]
    gold, pred = [("36", [[0, 1], [2]])], [("36", "[[0, 1]]")]
    assert ecb["metric"] == "conll_f1"
    # upstream profile: the as-published score (this gold file is under 8 KiB, so perl read nothing)
    assert ecb["runs"]["0"] == coref_parse.score_run(gold, pred, "upstream", gold_block_size=4096).conll_f1_printed
    assert ecb["runs"]["0"] == 0.0 and ecb["gold_read"]["0"]["bytes"] == 0
    assert ecb["intended"]["runs"]["0"] == coref_parse.score_run(gold, pred, "upstream").conll_f1_printed > 0
    assert ecb["corrected"]["runs"]["0"] == coref_parse.score_run(gold, pred, "corrected").conll_f1
    # MUC is perfect (one link, found); only B3/CEAF-e see the missing singleton, so 0 < score < 100
    assert 0.0 < ecb["corrected"]["runs"]["0"] < 100.0
    line = read_lines(summary_path.parent / "instance_scores.jsonl")[("ECB", 0, "36")]
    assert line["valid_format"] is True and line["metric_version"].endswith("gold=as-published@block=4096")
    assert line["score"] is None and line["details"]["upstream"]["gold_read"] == "absent"
    assert line["details"]["upstream_intended"]["score"] > 0
    [bigger] = score_run_dir(run, tmp_path / "s2", fic=False, gold_block_size=1)  # tiny blocks: all but the tail
    assert json.loads(bigger.read_text("utf-8"))["datasets"]["ECB"]["gold_read"]["0"]["block_size"] == 1


def test_fic_unavailable_is_null_with_reason(tmp_path: Path) -> None:
    def unavailable() -> Any:
        raise MissingDataError("FIC faithfulness model x@y is not available (offline or not cached): boom")

    run = write_run(tmp_path / "run")
    [summary_path] = score_run_dir(run, fic_factory=unavailable)
    fr = read_lines(summary_path.parent / "instance_scores.jsonl")[("FuseReviews", 0, "7")]
    assert fr["score"] is None and "not available" in fr["details"]["reason"]
    ds = json.loads(summary_path.read_text("utf-8"))["datasets"]["FuseReviews"]
    assert ds["runs"]["0"] is None and "not available" in ds["reason"]


def test_missing_predictions_listed(tmp_path: Path) -> None:
    """Old main refused the whole run ("2 prompt(s) have no prediction"); what is there is scored and
    the rest listed as unscored with the reason, the summary marked partial."""
    outputs = {k: v for k, v in OUTPUTS.items() if k[0] != "MultiNews" or k == ("MultiNews", 0, "1")}
    run = write_run(tmp_path / "run", outputs)
    [path] = score_run_dir(run, fic=False)
    summary = json.loads(path.read_text("utf-8"))
    assert summary["coverage"] == {"instances": 7, "scored": 5, "partial": True}
    assert summary["protocol"]["partial"] is True
    missing = {(u["dataset"], u["run"]): u for u in summary["unscored"]}
    assert set(missing) == {("MultiNews", 0), ("MultiNews", 1)}
    assert (missing["MultiNews", 0]["missing"], missing["MultiNews", 0]["of"], missing["MultiNews", 0]["first"]) == (1, 2, ["2"])
    assert missing["MultiNews", 0]["reason"].startswith("no prediction (the replay stopped before it); resume with:")
    assert summary["datasets"]["MultiNews"]["n_instances"] == {"0": 1}  # only the predicted instance is scored
    scored = read_lines(path.parent / "instance_scores.jsonl")
    assert ("MultiNews", 0, "1") in scored and ("MultiNews", 0, "2") not in scored


def test_torn_last_line_is_missing_not_a_crash(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    path = run / "predictions" / SLUG / "MusiQue" / "run_0.jsonl"
    path.write_bytes(path.read_bytes()[:-20])
    with pytest.raises(PredictionsError, match="last line is torn .*resume `seam-repro replay` to repair it"):
        score_run_dir(run, fic=False)


def test_prompt_hash_disagreement(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    path = run / "predictions" / SLUG / "ECB" / "run_0.jsonl"
    rec = json.loads(path.read_text("utf-8"))
    rec["prompt_sha256"] = "0" * 64
    path.write_text(json.dumps(rec) + "\n", "utf-8")
    with pytest.raises(PredictionsError, match=r"line 1: prompt_sha256 of \('ECB', 0, '36'\) differs"):
        score_run_dir(run, fic=False)


def test_bad_prompt_records(tmp_path: Path) -> None:
    bad = [dict(PROMPTS[0], target={"not": "a summary"})]
    bad[0]["target_sha256"] = sha256_json(bad[0]["target"])
    run = write_run(tmp_path / "run", prompts=bad)
    with pytest.raises(InputError, match=r"prompts.jsonl: record line 1: field 'target': expected a summary string"):
        score_run_dir(run, fic=False)


ADVERSARIAL = {
    "empty": "",
    "bytes": b"\xff\xfe caf\xe9 {'is_answerable'",
    "surrogate": "\ud800 lone",
    "nested": "{'is_answerable': " + "[" * 5000 + "}",
    "huge": "{'is_answerable': True, 'answer_content': " + "9" * 10000 + "}",
    "code": "```python\nimport os; os.system('rm -rf /')\n```{'is_answerable': exec('1')}",
    "truncated": "{'is_answerable': True, 'answer_cont",
}


def test_adversarial_outputs_are_format_failures(tmp_path: Path) -> None:
    prompts = [prompt("MusiQue", "qa", 0, name, QA_T, answer_aliases=[]) for name in ADVERSARIAL]
    prompts += [prompt("ECB", "coreference", 0, name, [[1, 2]]) for name in ADVERSARIAL]
    prompts += [prompt("OpenASP", "summarization", 0, name, GOLD_SUM) for name in ADVERSARIAL]
    outputs = {(p["dataset"], 0, p["instance_id"]): ADVERSARIAL[p["instance_id"]] for p in prompts}
    run = write_run(tmp_path / "run", outputs, prompts)
    [summary_path] = score_run_dir(run, fic=False)
    lines = read_lines(summary_path.parent / "instance_scores.jsonl")
    assert len(lines) == 3 * len(ADVERSARIAL)
    for (ds, _, name), line in lines.items():
        if ds == "OpenASP" and name not in ("empty", "bytes", "surrogate"):
            continue  # non-empty text is a valid summary format
        assert line["valid_format"] is False, (ds, name)
        if ds != "ECB":
            assert 0.0 <= line["score"] <= 100.0
    assert lines[("MusiQue", 0, "bytes")]["details"]["undecodable_output"] is True


def test_cli(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    res = CliRunner().invoke(cli, ["score", str(run), "-o", str(tmp_path / "s"), "--profile", "seam-repro-1", "--no-fic"])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "s" / SLUG / "summary.json").read_text("utf-8"))
    mq = summary["datasets"]["MusiQue"]
    assert summary["profile"] == "seam-repro-1" and mq["metric"] == "musique_corrected" and mq["runs"]["0"] == 100.0
    assert summary["datasets"]["FuseReviews"]["runs"]["0"] is None


def test_coreference_intended_score_reaches_summary_bundle_and_report(tmp_path: Path) -> None:
    from seam_repro.analysis.aggregate import build_model_scores, read_instance_scores, summarize
    from seam_repro.analysis.report import build_report, render_markdown
    from seam_repro.analysis.submit import _dataset_payload

    run = write_run(tmp_path / "run")
    [summary_path] = score_run_dir(run, fic=False)
    model = build_model_scores(json.loads(summary_path.read_text("utf-8")),
                               read_instance_scores(summary_path.parent / "instance_scores.jsonl"), summary_path)
    ecb = model.datasets["ECB"]
    assert ecb.runs[0] == 0.0 and ecb.intended is not None and ecb.intended["runs"][0] > 0
    assert summarize(ecb).intended["mean"] == ecb.intended["runs"][0]
    assert _dataset_payload(model)["ECB"]["intended"]["runs"]["0"] == ecb.intended["runs"][0]
    md = render_markdown(build_report([model]))
    assert "As intended (whole gold file)" in md


def test_quadratic_regex_inputs_score_in_linear_time(tmp_path: Path) -> None:
    """200 KB outputs that made the old answer regexes backtrack for minutes (``\\{.*\\}`` on ``{``
    runs, ``\\[[\\d, ]*\\d[\\d, ]*\\]`` on an unclosed ``[1 1 ... x``) score in seconds."""
    import time

    slow = {"braces": "{" * 200_000, "open-list": "[" + "1 " * 100_000 + "x"}
    prompts = [prompt(ds, task, 0, name, target) for name in slow
               for ds, task, target in (("MusiQue", "qa", QA_T), ("ECB", "coreference", [[1, 2]]))]
    outputs = {(p["dataset"], 0, p["instance_id"]): slow[p["instance_id"]] for p in prompts}
    run = write_run(tmp_path / "run", outputs, prompts)
    start = time.perf_counter()
    [summary_path] = score_run_dir(run, fic=False)
    assert time.perf_counter() - start < 30
    lines = read_lines(summary_path.parent / "instance_scores.jsonl")
    assert all(line["valid_format"] is False for line in lines.values())
