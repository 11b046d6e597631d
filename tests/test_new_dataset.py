"""A new dataset takes three files: a loader, a template and a suite (registry) entry.

The made-up task below (keyword extraction over a few short documents, scored by an existing
metric) lives entirely outside the package, in this test's temporary folder, as
docs/adding-a-dataset.md describes it: ``kw_loader.py``, ``kw_template.py`` and ``keywords-mini.json`` (found through ``$SEAM_REPRO_SUITES``).
Its data and its prompt file (the instruction paraphrases) are data, not code. Nothing of the kit
is edited: sample, prompts, replay and score take it as they take the shipped suites.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from seam_repro.cli import cli
from seam_repro.metrics import registry
from seam_repro.scoring.extract import extract_clean

LOADER = '''
"""KeywordsMini: one JSONL file of {"id", "documents": [str, ...], "keywords": [str, ...]}."""
import json
from pathlib import Path

from seam_repro.datasets import file_hashes
from seam_repro.instances import Document, Instance, LoadedDataset


def load(path):
    file = Path(path) / "test.jsonl"
    rows = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]
    instances = [Instance(dataset="KeywordsMini", split="test", instance_id=row["id"], raw_id=row["id"],
                          documents=tuple(Document(doc_id=str(i), text=t) for i, t in enumerate(row["documents"])),
                          target={"references": [", ".join(row["keywords"])]})
                 for row in rows]
    return LoadedDataset("KeywordsMini", {"test": instances}, file_hashes(Path(path), [file]))
'''

TEMPLATE = '''
"""KeywordsMini prompts: the instruction, the documents in the run's order, then "Keywords:"."""
from seam_repro.render.common import number_documents, shuffle_documents
from seam_repro.render.template import Template


def few_shots(ctx):
    return ""


def test_block(instance, ctx, mention_ids=None):
    docs = shuffle_documents([d.text for d in instance.documents], ctx.max_num_docs, ctx.doc_order)
    return number_documents(docs, ctx.instructions + "\\n", "\\nKeywords:"), instance.target


TEMPLATE = Template(few_shots, test_block)
'''

SUITE = {
    "suite": "keywords-mini",
    "version": 1,
    "datasets": {
        "KeywordsMini": {
            "task": "keyword_extraction",
            "default_split": "test",
            "loader": "kw_loader",
            "template": "kw_template:TEMPLATE",
            "prompt_file": "KeywordsMini.json",
            "metrics": {"upstream": "zeroscrolls_f1", "seam-repro-1": "zeroscrolls_f1"},
            "sampling": {"doc_slots": "max_documents", "mention_ids": None, "prompt_draw": "first_row",
                         "demo_key": "demonstrations"},
        }
    },
}

ROWS = [
    {"id": "a", "documents": ["The river flooded the old mill.", "Rain fell for nine days."],
     "keywords": ["river", "flood", "rain"]},
    {"id": "b", "documents": ["A new bridge opened downtown.", "Traffic eased at once."],
     "keywords": ["bridge", "traffic"]},
    {"id": "c", "documents": ["The choir sang in the cathedral.", "Tickets sold out."], "keywords": ["choir"]},
]


@pytest.fixture
def new_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The three files (loader, template, suite entry) plus the data and prompt file, importable."""
    (tmp_path / "kw_loader.py").write_text(textwrap.dedent(LOADER), encoding="utf-8")
    (tmp_path / "kw_template.py").write_text(textwrap.dedent(TEMPLATE), encoding="utf-8")
    (tmp_path / "keywords-mini.json").write_text(json.dumps(SUITE), encoding="utf-8")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "KeywordsMini.json").write_text(json.dumps({
        "prompts": [{"id": 0, "instructions": "List the keywords of the documents."},
                    {"id": 1, "instructions": "Which keywords describe these documents?"}],
        "demonstrations": []}), encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps({
        "suite": "keywords-mini", "random_seed": 7, "num_different_runs": 2,
        "num_demonstrations": 0, "max_num_samples": -1,
        "datasets": [{"name": "KeywordsMini", "path": str(tmp_path / "data"), "split_name": "test"}]}),
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("SEAM_REPRO_SUITES", str(tmp_path))
    return tmp_path


def _run(*args: str) -> None:
    res = CliRunner().invoke(cli, ["-q", *args], catch_exceptions=False)
    assert res.exit_code == 0, res.output


def test_a_made_up_task_runs_end_to_end_from_three_files(new_dataset: Path) -> None:
    d = new_dataset
    _run("sample", str(d / "config.json"), "-o", str(d / "m.json"), "--prompts-dir", str(d / "prompts"))
    _run("prompts", str(d / "m.json"), "-o", str(d / "p.jsonl"))
    _run("replay", str(d / "m.json"), "--backend", "echo", "--out", str(d / "run"), "--no-report")
    _run("score", str(d / "run"))

    prompts = [json.loads(x) for x in (d / "p.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(prompts) == 2 * len(ROWS)
    assert {p["task"] for p in prompts} == {"keyword_extraction"} and {p["metric"] for p in prompts} == {"zeroscrolls_f1"}
    assert all(p["prompt"].endswith("\nKeywords:") and "Document 2: ```" in p["prompt"] for p in prompts)

    scores = d / "run" / "scores" / "echo"
    summary = json.loads((scores / "summary.json").read_text(encoding="utf-8"))
    block = summary["datasets"]["KeywordsMini"]
    assert block["metric"] == "zeroscrolls_f1" and block["task"] == "keyword_extraction"
    assert sorted(block["runs"]) == ["0", "1"] and summary["coverage"]["partial"] is False

    outputs = {}
    for path in (d / "run" / "predictions" / "echo" / "KeywordsMini").glob("run_*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            outputs[(rec["run"], rec["instance_id"])] = rec["output"]
    target = {r["id"]: [", ".join(r["keywords"])] for r in ROWS}
    lines = [json.loads(x) for x in (scores / "instance_scores.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 2 * len(ROWS)
    for ln in lines:  # each score is the metric's own on the extracted output
        direct = registry.compute("zeroscrolls_f1", extract_clean(outputs[(ln["run"], ln["instance_id"])]),
                                  target[ln["instance_id"]])
        assert ln["score"] == pytest.approx(direct["score"])


def _own_suite(folder: Path, name: str, task: str, upstream: str, corrected: str) -> None:
    entry = {**SUITE["datasets"]["KeywordsMini"], "task": task,
             "metrics": {"upstream": upstream, "seam-repro-1": corrected}}
    (folder / f"{name}.json").write_text(json.dumps({**SUITE, "suite": name, "datasets": {name: entry}}),
                                         encoding="utf-8")


def test_a_suite_of_ones_own_cannot_re_pair_a_shipped_metric(new_dataset: Path) -> None:
    """A suite of one's own that scores a qa dataset with the published MuSiQue metric in both
    profiles leaves the paper's MuSiQue records their corrected metric; two suites of one's own
    that pair a metric differently leave it unpaired (it scores both variants)."""
    from seam_repro.specs import load_suite

    _own_suite(new_dataset, "qa-own", "qa", "musique_f1", "musique_f1")
    _own_suite(new_dataset, "kw-other", "keyword_extraction", "zeroscrolls_f1", "musique_f1")
    registry._suite_pairs.cache_clear()
    load_suite.cache_clear()
    try:
        assert registry.record_metrics({"task": "qa", "metric": "musique_f1"}) == {
            "upstream": "musique_f1", "corrected": "musique_corrected"}
        assert registry.record_metrics({"task": "keyword_extraction", "metric": "zeroscrolls_f1"}) == {
            "upstream": "zeroscrolls_f1", "corrected": "zeroscrolls_f1"}
        assert registry.record_metrics({"task": "keyword_extraction", "metric": "musique_f1"}) == {
            "upstream": "zeroscrolls_f1", "corrected": "musique_f1"}
    finally:
        registry._suite_pairs.cache_clear()
        load_suite.cache_clear()
