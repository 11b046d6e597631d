"""ZeroSCROLLS- and IGCS-style mini suites on the suite machinery: loaders, prompts written out by
hand (including a trimmed one and a document-level unit), document-level expansion, and
``replay --backend echo`` + ``score`` on the frozen mini manifests, checked against the metric
functions called directly and against hand-computed values."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from render_helpers import few_shots, render_instance

from seam_repro.analysis.aggregate import load_run_dir
from seam_repro.datasets import igcs as igcs_loader
from seam_repro.datasets import zeroscrolls as zs_loader
from seam_repro.errors import InputError
from seam_repro.manifest.format import load_manifest
from seam_repro.manifest.trust import load_trusted
from seam_repro.metrics import igcs
from seam_repro.metrics import zeroscrolls as zs
from seam_repro.render.context import RunContext
from seam_repro.run.replay import ReplayOptions, replay
from seam_repro.scoring.extract import extract_clean
from seam_repro.scoring.loop import score_run_dir
from seam_repro.specs import load_suite, parse_suite

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "manifests" / "fixtures"  # shipped with the mini-suite manifests
ZS_MANIFEST = REPO / "manifests" / "zeroscrolls-mini.json"
IGCS_MANIFEST = REPO / "manifests" / "igcs-mini.json"


def prompt_file(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def ctx(suite: str, dataset: str, pfile: Path, paraphrase: int, max_docs: int, order: tuple[int, ...],
        demos: tuple[int, ...] = ()) -> RunContext:
    return RunContext(spec=load_suite(suite).spec(dataset), profile="upstream", prompt_file=prompt_file(pfile),
                      paraphrase_index=paraphrase, demo_indices=demos, max_num_docs=max_docs, doc_order=order)


def by_id(data: Any, split: str = "test") -> dict[str, Any]:
    return {i.instance_id: i for i in data.split(split)}


# ----------------------------------------------------------------------------- loaders


def test_zeroscrolls_loader_reads_documents_query_and_references() -> None:
    data = load_suite("zeroscrolls-mini").spec("QMSumMini").load(FIX / "zeroscrolls" / "qmsum")
    assert data.name == "QMSumMini" and list(data.splits) == ["test"]
    garden = by_id(data)["garden-03"]
    assert garden.dataset == "QMSumMini"
    assert [d.doc_id for d in garden.documents] == ["april", "may"]
    assert garden.documents[1].title == "May meeting"
    assert garden.question == "What problems with the community garden were raised and how will they be handled?"
    assert len(garden.target["references"]) == 2
    assert data.files == {"test.jsonl": data.files["test.jsonl"]} and len(data.files["test.jsonl"]) == 64
    digest = load_suite("zeroscrolls-mini").spec("SpaceDigestMini").load(FIX / "zeroscrolls" / "spacedigest")
    station = by_id(digest)["hotel-station"]
    assert station.question is None and station.target == {"references": ["25%"]}
    assert [d.doc_id for d in station.documents] == ["0", "1", "2", "3"]


def test_igcs_loader_targets_carry_sources_in_source_order() -> None:
    data = load_suite("igcs-mini").spec("AspectSelMini").load(FIX / "igcs" / "aspects")
    blender = by_id(data)["blender-noise"]
    assert blender.question == "noise"
    assert blender.target == {
        "references": [["It is loud enough to wake the whole house."], ["loud enough to wake the whole house"]],
        "documents": ["Makes great smoothies in under a minute. It is loud enough to wake the whole house.",
                      "Easy to clean and the jug is dishwasher safe."]}


def test_document_units_split_every_instance_per_document() -> None:
    full = load_suite("igcs-mini").spec("AspectSelMini").load(FIX / "igcs" / "aspects")
    units = load_suite("igcs-mini").spec("AspectSelMiniDoc").load(FIX / "igcs" / "aspects")
    assert [u.instance_id for u in units.split("test")] == [
        "phone-battery#doc0", "phone-battery#doc1", "phone-battery#doc2", "headphones-comfort#doc0",
        "headphones-comfort#doc1", "headphones-comfort#doc2", "blender-noise#doc0", "blender-noise#doc1"]
    unit = by_id(units)["phone-battery#doc1"]
    parent = by_id(full)["phone-battery"]
    assert unit.documents == (parent.documents[1],) and unit.question == "battery life"
    assert unit.target == {**parent.target, "doc_index": 1, "parent": "phone-battery"}
    assert units.files == full.files  # same source files, same pins


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("row, field", [
    ({"id": "a", "documents": ["x"]}, "references"),
    ({"id": "a", "documents": ["x"], "references": []}, "references"),
    ({"id": "a", "documents": [], "references": ["r"]}, "documents"),
    ({"id": "a", "documents": [{"title": "t"}], "references": ["r"]}, "documents"),
    ({"id": "", "documents": ["x"], "references": ["r"]}, "id"),
    ({"id": "a", "query": "", "documents": ["x"], "references": ["r"]}, "query"),
])
def test_zeroscrolls_loader_errors_name_file_line_and_field(tmp_path: Path, row: dict, field: str) -> None:
    folder = write_jsonl(tmp_path / "d", [{"id": "ok", "documents": ["x"], "references": ["r"]}, row])
    with pytest.raises(InputError) as err:
        zs_loader.load(folder, name="Mini")
    assert "test.jsonl" in str(err.value) and "line 2" in str(err.value) and f"field '{field}'" in str(err.value)


def test_igcs_loader_rejects_reference_spans_not_in_the_sources(tmp_path: Path) -> None:
    ok = {"id": "a", "documents": ["The Cat sat.\nOn the mat."], "references": [["the cat sat.", "sat. On"], []]}
    assert igcs_loader.load(write_jsonl(tmp_path / "ok", [ok])).split("test")[0].target["references"][1] == []
    bad = {**ok, "references": [["The dog sat."]]}
    with pytest.raises(InputError, match=r"line 1: field 'references': selection 0 span 0 \('The dog sat.'\)"):
        igcs_loader.load(write_jsonl(tmp_path / "bad", [bad]))
    with pytest.raises(InputError, match="field 'references'"):
        igcs_loader.load(write_jsonl(tmp_path / "flat", [{**ok, "references": ["The Cat sat."]}]))


def test_suite_spec_options_are_validated() -> None:
    base = {"task": "t", "default_split": "test", "loader": "seam_repro.datasets.igcs",
            "template": "seam_repro.render.igcs:TEMPLATE", "prompt_file": "p.json",
            "sampling": {"doc_slots": "max_documents", "prompt_draw": "first_row"}}
    spec = parse_suite({"datasets": {"D": base}}, "s.json").spec("D")
    assert spec.units == "instance" and spec.template_options == {}
    with pytest.raises(InputError, match="field 'units'"):
        parse_suite({"datasets": {"D": {**base, "units": "paragraph"}}}, "s.json")
    with pytest.raises(InputError, match="field 'template_options'"):
        parse_suite({"datasets": {"D": {**base, "template_options": ["x"]}}}, "s.json")
    no_units = parse_suite({"datasets": {"D": {**base, "loader": "seam_repro.datasets.zeroscrolls",
                                                "units": "document"}}}, "s.json").spec("D")
    with pytest.raises(InputError, match="has no document_units"):
        no_units.load(FIX / "zeroscrolls" / "qmsum")


# ----------------------------------------------------------------------------- prompts, by hand

ZS_PROMPTS = FIX / "zeroscrolls" / "prompts"
IGCS_PROMPTS = FIX / "igcs" / "prompts"


def test_qmsum_prompt_trimmed_to_budget_by_hand() -> None:
    data = load_suite("zeroscrolls-mini").spec("QMSumMini").load(FIX / "zeroscrolls" / "qmsum")
    c = ctx("zeroscrolls-mini", "QMSumMini", ZS_PROMPTS / "QMSumMini.json", 0, 2, (1, 0))
    prompt, target = render_instance(by_id(data)["garden-03"], c, "")
    # Whitespace tokens: instruction 21 + "Transcript:" 1 + "Meeting 1:" 2 + May transcript 64 + "Meeting 2:" 2
    # + first five April lines (14+19+16+16+22 = 87) + omission note 7 + "Query:" 1 + query 14 + "Answer:" 1 = 200,
    # the suite's max_tokens; the next April word would make 201.
    expected = (
        "You are given meeting transcripts and a query containing a question or instruction. Answer the query in "
        "one or more sentences.\n\n"
        "Transcript:\n"
        "Meeting 1:\n"
        "Coordinator: The grant application was sent, and the plumber will fix the north tap next Tuesday.\n"
        "Member B: The shed arrived; the lock code goes out by email to paid-up members only.\n"
        "Member A: Six families took the half plots, and the waiting list is now thirty-four names long.\n"
        "Coordinator: We will check in September whether half plots are big enough for the families.\n\n"
        "Meeting 2:\n"
        "Coordinator: Welcome everyone. We have three issues tonight: water, tools and the waiting list.\n"
        "Member A: The rain barrels ran dry twice last summer, and the tap at the north gate leaks constantly.\n"
        "Member B: The shared tools keep disappearing. Last week two spades and the wheelbarrow were gone.\n"
        "Coordinator: And the waiting list has grown to forty names, but only three plots are free.\n"
        "Member A: We could split the three free plots into six half plots for the people at the top of the list.\n\n"
        "[The rest of the transcript is omitted]\n\n"
        "Query:\n"
        "What problems with the community garden were raised and how will they be handled?\n\n"
        "Answer:\n"
    )
    assert prompt == expected
    assert len(prompt.split()) == 200
    assert target == by_id(data)["garden-03"].target


def test_qmsum_prompt_untrimmed_when_it_fits() -> None:
    data = load_suite("zeroscrolls-mini").spec("QMSumMini").load(FIX / "zeroscrolls" / "qmsum")
    c = ctx("zeroscrolls-mini", "QMSumMini", ZS_PROMPTS / "QMSumMini.json", 1, 2, (0, 1))
    prompt, _ = render_instance(by_id(data)["library-02"], c, "")
    assert "omitted" not in prompt and prompt.endswith("Summarize the discussion of the library's opening hours."
                                                       "\n\nAnswer:\n")
    assert prompt.startswith("Read the meeting transcripts below and respond to the query with a short paragraph."
                             "\n\nTranscript:\nMeeting 1:\nChair: The first item is opening hours.")


def test_space_digest_prompt_by_hand_follows_document_slots() -> None:
    data = load_suite("zeroscrolls-mini").spec("SpaceDigestMini").load(FIX / "zeroscrolls" / "spacedigest")
    # 6 slots (the largest instance); hotel-station fills slots 0-3, so slots 5 and 4 are skipped
    c = ctx("zeroscrolls-mini", "SpaceDigestMini", ZS_PROMPTS / "SpaceDigestMini.json", 2, 6, (5, 2, 0, 4, 3, 1))
    prompt, target = render_instance(by_id(data)["hotel-station"], c, "")
    assert prompt == (
        "Count how many of the following hotel reviews are positive and give the answer as a percentage of all "
        "reviews (e.g. 50%).\n\n"
        "Reviews:\n"
        "Review 1:\nClean, modern and the bed was very comfortable.\n\n"
        "Review 2:\nConvenient for the train, but the walls are paper thin.\n\n"
        "Review 3:\nThe shower had no hot water on two mornings.\n\n"
        "Review 4:\nDirty carpets and a rude night manager. Avoid.\n\n"
        "Percentage of Positive Reviews:\n"
    )
    assert target == {"references": ["25%"]}


def test_igcs_prompt_by_hand_fills_query_and_numbers_from_zero() -> None:
    data = load_suite("igcs-mini").spec("EvidenceSelMini").load(FIX / "igcs" / "evidence")
    c = ctx("igcs-mini", "EvidenceSelMini", IGCS_PROMPTS / "EvidenceSel.json", 2, 3, (1, 0, 2))
    prompt, target = render_instance(by_id(data)["claim-library"], c, "")
    assert prompt == (
        'Given the claim "Library visits declined after the renovation.", copy the passages from the articles that '
        "are relevant evidence. Output the exact text phrases from the given documents as a valid json array of "
        "strings. Do not change the copied text.\n\n"
        "document #0:\nCritics say the renovation cost more than planned.\n\n"
        "document #1:\nThe central library reopened in June with a new children's wing. Visits in the first three "
        "months were 20 percent higher than a year earlier."
    )
    assert target["documents"][0].startswith("The central library")  # sources stay in source order


def test_igcs_document_unit_prompt_by_hand() -> None:
    units = load_suite("igcs-mini").spec("AspectSelMiniDoc").load(FIX / "igcs" / "aspects")
    c = ctx("igcs-mini", "AspectSelMiniDoc", IGCS_PROMPTS / "AspectSel.json", 1, 1, (0,))
    prompt, target = render_instance(by_id(units)["blender-noise#doc0"], c, "")
    assert prompt == (
        "From the reviews below, extract every sentence about the noise of the product. Output the exact sentences "
        "from the given document as a valid json array of strings. Do not change the copied text.\n\n"
        "document #0:\nMakes great smoothies in under a minute. It is loud enough to wake the whole house."
    )
    assert target["doc_index"] == 0 and target["parent"] == "blender-noise" and len(target["documents"]) == 2


def test_templates_are_zero_shot_and_query_must_have_a_place() -> None:
    data = load_suite("igcs-mini").spec("AspectSelMini").load(FIX / "igcs" / "aspects")
    inst = by_id(data)["blender-noise"]
    with pytest.raises(InputError, match="zero-shot"):
        few_shots(ctx("igcs-mini", "AspectSelMini", IGCS_PROMPTS / "AspectSel.json", 0, 3, (0, 1, 2), demos=(0,)))
    c = ctx("igcs-mini", "AspectSelMini", IGCS_PROMPTS / "AspectSel.json", 0, 3, (0, 1, 2))
    c.prompt_file["prompts"][0]["instructions"] = "Select the important sentences"
    with pytest.raises(InputError, match=r"blender-noise: field 'query'.*no \{query\} placeholder"):
        render_instance(inst, c, "")
    space = load_suite("zeroscrolls-mini").spec("SpaceDigestMini").load(FIX / "zeroscrolls" / "spacedigest")
    c = ctx("zeroscrolls-mini", "QMSumMini", ZS_PROMPTS / "QMSumMini.json", 0, 6, (0, 1, 2, 3, 4, 5))
    with pytest.raises(InputError, match="needs a query"):
        render_instance(by_id(space)["hotel-lake"], c, "")


# ----------------------------------------------------------------------------- manifests


def test_mini_manifests_record_suite_metric_and_document_units() -> None:
    zsm, igm = load_manifest(ZS_MANIFEST), load_manifest(IGCS_MANIFEST)
    assert zsm["config"]["suite"] == "zeroscrolls-mini" and igm["config"]["suite"] == "igcs-mini"
    assert zsm["config"]["num_demonstrations"] == 0 and zsm["config"]["max_instances"] == 2
    assert zsm["config"]["generation"]["max_new_tokens"] <= 32 and igm["config"]["generation"]["max_new_tokens"] <= 32
    doc_runs = [r for r in igm["runs"] if r["dataset"] == "AspectSelMiniDoc"]
    assert len(doc_runs) == 3 and all(r["max_num_docs"] == 1 for r in doc_runs)
    ids = {i["id"] for i in doc_runs[0]["instances"]}
    assert ids == {f"{p}#doc{k}" for p, n in (("phone-battery", 3), ("headphones-comfort", 3), ("blender-noise", 2))
                   for k in range(n)}
    # paraphrases and document orders really vary across runs
    qm = [r for r in zsm["runs"] if r["dataset"] == "QMSumMini"]
    assert len({(r["paraphrase_index"], tuple(r["doc_order"]), tuple(i["id"] for i in r["instances"])) for r in qm}) > 1


# ----------------------------------------------------------------------------- replay + score


def run_echo(manifest: Path, out: Path, limit: int | None = None) -> Path:
    replay(load_trusted(manifest), out, ReplayOptions(backend="echo", limit=limit, progress=False))
    return out


def prompts_of(run_dir: Path) -> dict[tuple[str, int, str], dict[str, Any]]:
    recs = [json.loads(line) for line in (run_dir / "prompts.jsonl").read_text(encoding="utf-8").splitlines()]
    return {(r["dataset"], r["run"], r["instance_id"]): r for r in recs}


def rewrite_outputs(run_dir: Path, choose: Any) -> None:
    """Replace stored outputs with ``choose(prompt record, echo output)`` (prompt hashes stay valid)."""
    prompts = prompts_of(run_dir)
    for path in (run_dir / "predictions").rglob("run_*.jsonl"):
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for ln in lines:
            ln["output"] = choose(prompts[(ln["dataset"], ln["run"], ln["instance_id"])], ln["output"])
        path.write_text("".join(json.dumps(ln) + "\n" for ln in lines), encoding="utf-8")


def scores_of(run_dir: Path) -> tuple[dict[tuple[str, int, str], dict[str, Any]], dict[str, Any]]:
    (model_dir,) = sorted((run_dir / "scores").iterdir())
    lines = [json.loads(x) for x in (model_dir / "instance_scores.jsonl").read_text(encoding="utf-8").splitlines()]
    summary = json.loads((model_dir / "summary.json").read_text(encoding="utf-8"))
    return {(ln["dataset"], ln["run"], ln["instance_id"]): ln for ln in lines}, summary


def check_run_means(lines: dict, summary: dict) -> None:
    for ds, block in summary["datasets"].items():
        for run, value in block["runs"].items():
            vals = [ln["score"] for k, ln in lines.items() if k[0] == ds and k[1] == int(run)]
            assert value == pytest.approx(sum(vals) / len(vals), abs=1e-9)


def test_zeroscrolls_echo_replay_scores_equal_direct_metric_calls(tmp_path: Path) -> None:
    run = run_echo(ZS_MANIFEST, tmp_path / "run")
    prompts = prompts_of(run)
    assert {r["metric"] for r in prompts.values()} == {"zeroscrolls_rouge_geo", "zeroscrolls_exp_similarity"}

    def choose(rec: dict, echo: str) -> str:
        if rec["dataset"] == "SpaceDigestMini":
            return "About 50% of the reviews are positive."
        return rec["target"]["references"][1] if rec["run"] == 0 else echo

    rewrite_outputs(run, choose)
    score_run_dir(run)
    lines, summary = scores_of(run)
    assert len(lines) == len(prompts) == 12
    outputs = {}
    for path in (run / "predictions").rglob("run_*.jsonl"):
        for raw in path.read_text(encoding="utf-8").splitlines():
            p = json.loads(raw)
            outputs[(p["dataset"], p["run"], p["instance_id"])] = p["output"]
    for key, rec in prompts.items():
        refs, out = rec["target"]["references"], extract_clean(outputs[key])
        direct = (zs.rouge_geometric_mean(out, refs)["score"] if key[0] == "QMSumMini"
                  else zs.exponential_similarity(out, refs))
        assert lines[key]["score"] == pytest.approx(direct, abs=1e-9), key
    # hand values: ES = 100 * 2^(-10 |p - 0.5|); a copy of a reference scores 100 (max over references)
    hand = {"hotel-harbor": 50.0, "hotel-station": 100 * 2 ** -2.5, "hotel-lake": 100 * 2 ** -1.7}
    for key, ln in lines.items():
        if key[0] == "SpaceDigestMini":
            assert ln["score"] == pytest.approx(hand[key[2]], abs=1e-9) and ln["valid_format"]
        elif key[1] == 0:
            assert ln["score"] == pytest.approx(100.0)
    check_run_means(lines, summary)
    model = load_run_dir(run)[0]
    assert set(model.datasets) == {"QMSumMini", "SpaceDigestMini"} and not model.unscored
    assert model.datasets["SpaceDigestMini"].metric == "zeroscrolls_exp_similarity"


def igcs_direct(recs: list[tuple[dict, str]]) -> float:
    """Score by calling metrics.igcs directly: one whole-instance prompt, or an instance's units with
    their selections concatenated and hinted to their documents."""
    target = recs[0][0]["target"]
    if "doc_index" not in target:
        return igcs.score_instance(recs[0][1], target["references"], igcs.SourceIndex(target["documents"])).f1
    spans = [(s, r["target"]["doc_index"]) for r, out in recs for s in igcs.parse_answer(out).spans]
    return igcs.score_instance(spans, target["references"], igcs.SourceIndex(target["documents"])).f1


def test_igcs_echo_replay_scores_equal_direct_metric_calls(tmp_path: Path) -> None:
    run = run_echo(IGCS_MANIFEST, tmp_path / "run")
    prompts = prompts_of(run)

    def choose(rec: dict, echo: str) -> str:
        t = rec["target"]
        ref = t["references"][0]
        if rec["run"] == 2:
            return echo  # not a JSON array: invalid format, nothing selected
        if "doc_index" in t:  # each document returns the reference spans found in it
            doc = t["documents"][t["doc_index"]]
            return json.dumps([s for s in ref if s in doc])
        if rec["run"] == 1:
            return "Selected Content:\n" + json.dumps(ref[:1])
        return json.dumps(ref)

    rewrite_outputs(run, choose)
    score_run_dir(run)
    lines, summary = scores_of(run)
    groups: dict[tuple[str, int, str], list[tuple[dict, str]]] = {}
    outputs = {}
    for path in (run / "predictions").rglob("run_*.jsonl"):
        for raw in path.read_text(encoding="utf-8").splitlines():
            p = json.loads(raw)
            outputs[(p["dataset"], p["run"], p["instance_id"])] = p["output"]
    for key, rec in prompts.items():
        parent = rec["target"].get("parent", key[2])
        groups.setdefault((key[0], key[1], parent), []).append((rec, outputs[key]))
    assert set(lines) == set(groups)  # one line per instance; units merged under the parent id
    assert len([k for k in lines if k[0] == "AspectSelMiniDoc"]) == 9
    for key, recs in groups.items():
        assert lines[key]["score"] == pytest.approx(igcs_direct(recs), abs=1e-9), key
        assert lines[key]["metric"] == "igcs_token_f1"
    for key, ln in lines.items():
        if key[1] == 0:
            assert ln["score"] == pytest.approx(100.0) and ln["valid_format"], key
        if key[1] == 2:
            assert ln["score"] == 0.0 and not ln["valid_format"], key
    # hand count (spaCy tokens, '.' and ',' count): the predicted span has 11 tokens, reference 1 has 11 + 10
    # and reference 0 has 11 + 10 + 10; F1 = 2*11 / (11 + 21) = 68.75 beats 2*11 / (11 + 31) = 52.4
    assert lines[("AspectSelMini", 1, "phone-battery")]["score"] == pytest.approx(68.75)
    assert lines[("AspectSelMiniDoc", 0, "phone-battery")]["details"]["inference"] == "document"
    check_run_means(lines, summary)
    model = load_run_dir(run)[0]
    assert set(model.datasets) == {"AspectSelMini", "EvidenceSelMini", "AspectSelMiniDoc"}


def test_incomplete_document_level_instance_is_unscored_with_reason(tmp_path: Path) -> None:
    run = run_echo(IGCS_MANIFEST, tmp_path / "run", limit=1)
    score_run_dir(run)
    lines, summary = scores_of(run)
    doc = [ln for k, ln in lines.items() if k[0] == "AspectSelMiniDoc"]
    assert len(doc) == 3 and all(ln["score"] is None for ln in doc)
    assert "incomplete" in summary["datasets"]["AspectSelMiniDoc"]["reason"]
    model = load_run_dir(run)[0]
    assert "AspectSelMiniDoc" in model.unscored and "AspectSelMini" in model.datasets
    assert not math.isnan(model.datasets["AspectSelMini"].runs[0])


def test_score_rejects_suite_records_without_a_known_metric(tmp_path: Path) -> None:
    run = run_echo(ZS_MANIFEST, tmp_path / "run", limit=1)
    path = run / "prompts.jsonl"
    recs = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    recs[0]["metric"] = "bleu"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    with pytest.raises(InputError, match=r"prompts.jsonl: record line 1: field 'metric'.*got 'bleu'"):
        score_run_dir(run)


def score_model(prompts: dict, preds: dict, model: dict, profile: str, fic: object) -> tuple[list, dict]:
    """Instance lines and the summary's ``datasets`` block of predictions held in memory, through
    ``ModelScorer`` as ``score_run_dir`` scores each (dataset, run) group."""
    from seam_repro.scoring.loop import ModelScorer

    scorer = ModelScorer(model, profile, fic)
    groups: dict = {}
    for key, rec in prompts.items():
        if key in preds:
            groups.setdefault(key[:2], []).append((key, rec, preds[key]))
    lines = [ln for items in groups.values() for ln in scorer.score_group(items)]
    return lines, scorer.datasets()


def test_scoring_dispatches_on_the_record_task_not_the_dataset_name() -> None:
    from seam_repro.metrics import rouge
    from seam_repro.scoring.loop import _Fic

    key = ("MyNews", 0, "a")
    rec = {"dataset": "MyNews", "task": "summarization", "run": 0, "instance_id": "a", "prompt": "p *Answer*: ",
           "target": "The council approved the new bridge on Monday."}
    pred = {"output": "The council approved a bridge.", "_decodable": True}
    lines, datasets = score_model({key: rec}, {key: pred}, {"id": "m", "revision": "r"}, "seam-repro-1",
                                  _Fic(False, None))
    assert lines[0]["metric"] == "rouge_geo" and datasets["MyNews"]["task"] == "summarization"
    assert lines[0]["score"] == pytest.approx(rouge.rouge_geo("The council approved a bridge.", rec["target"]).geo)
    spaced = {**rec, "dataset": "QMSumMini", "task": "query_summarization", "metric": "zeroscrolls_rouge_geo",
              "target": {"references": ["x y", rec["target"]]}}
    key = ("QMSumMini", 0, "a")
    lines, _ = score_model({key: spaced}, {key: pred}, {"id": "m", "revision": "r"}, "upstream", _Fic(False, None))
    assert lines[0]["score"] == pytest.approx(zs.rouge_geometric_mean(pred["output"], [rec["target"]])["score"])
