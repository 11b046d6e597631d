"""Loaders against the hand-written fixtures: expected values are worked out by hand from the
fixture text (tests/fixtures/make_fixtures.py), not by re-running loader code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from seam_repro.datasets import load_dataset
from seam_repro.datasets.info import DATASET_INFO
from seam_repro.datasets.scico import max_doc_index
from seam_repro.errors import InputError, MissingDataError
from seam_repro.hashing import sha256_file

FIX = Path(__file__).resolve().parents[1] / "manifests" / "fixtures"  # shipped with manifests/smoke.json
TEST_FIX = Path(__file__).resolve().parent / "fixtures"  # read by tests only
SHARED = Path(__file__).resolve().parents[2] / "shared"


def test_dataset_info_matches_upstream_config() -> None:
    assert list(DATASET_INFO) == ["ECB", "FuseReviews", "SciCo", "MultiNews", "MusiQue", "OpenASP"]
    assert {n: (i.task, i.default_split) for n, i in DATASET_INFO.items()} == {
        "ECB": ("coreference", "test_events"), "FuseReviews": ("fic", "validation"), "SciCo": ("coreference", "test"),
        "MultiNews": ("summarization", "test"), "MusiQue": ("qa", "val"), "OpenASP": ("summarization", "test")}


def test_ecb_splits_topics_and_mentions() -> None:
    d = load_dataset("ECB", FIX / "ecb")
    assert list(d.splits) == ["train_events", "train_entities", "dev_events", "dev_entities", "test_events", "test_entities"]
    # string topics sort like pandas groupby: "10" before "3"
    assert [i.instance_id for i in d.splits["train_events"]] == ["10", "3"]
    t36 = d.split("test_events")[0]
    assert t36.raw_id == "36" and t36.split == "test_events"
    assert [m.token_ids for m in t36.mentions] == [(6,), (8,), (4,), (9,), (3,)]
    assert [m.cluster_id for m in t36.mentions] == [1001, 1001, 1001, 1002, 1003]
    assert [doc.doc_id for doc in t36.documents] == ["36_1ecb.xml", "36_2ecb.xml", "36_3ecbplus.xml"]
    # 36_1ecb.xml: 6 + 11 + 6 tokens; the last sentence is not validated
    toks = t36.documents[0].tokens
    assert len(toks) == 23 and toks[5].text == "arrested" and toks[5].token_id == 6
    assert [t.is_annotated for t in toks].count(False) == 6
    ent = d.split("test_entities")[0]
    # mentions sharing tokens: 'the cooperative leaders' (6-8) and 'cooperative' (7)
    assert (ent.mentions[2].token_ids, ent.mentions[3].token_ids) == ((6, 7, 8), (7,))
    assert set(d.files) == {f"{s}{c}.json" for s in ("train", "dev", "test") for c in ("", "_events", "_entities")}
    assert d.files["test.json"] == sha256_file(FIX / "ecb" / "test.json")


def test_scico_documents_and_off_by_one() -> None:
    d = load_dataset("SciCo", FIX / "scico")
    assert list(d.splits) == ["train", "validation", "test"]
    t31, t32, _ = d.split("test")
    assert t31.raw_id == 31 and len(t31.documents) == 4 and t31.paragraph_doc_ids == (0, 1, 2, 3)
    assert max_doc_index(d) == 3  # upstream's max_num_docs: one less than topic 31's document count
    assert t32.documents[0].text == "Reinforcement learning agents maximise reward .\n"
    assert [(m.paragraph, m.start, m.end, m.cluster_id) for m in t32.mentions] == [(0, 0, 1, 50), (1, 0, 2, 50), (1, 1, 2, 51), (0, 4, 4, 52)]
    train11 = d.split("train")[0]
    # paragraphs 1 and 2 belong to document 1
    assert train11.documents[1].text == "CNNs remain strong baselines for image classification .\nOur CNN uses residual connections .\n"
    assert t32.extra["source"] == "curated"


def test_scico_parquet_equals_jsonl(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    for split in ("train", "validation", "test"):
        rows = [json.loads(line) for line in (FIX / "scico" / f"{split}.jsonl").read_text().splitlines()]
        name = f"{split}-00000-of-00001.parquet" if split == "train" else f"scico-{split}.parquet"
        pq.write_table(pa.Table.from_pylist(rows), tmp_path / name)
    assert load_dataset("SciCo", tmp_path).splits == load_dataset("SciCo", FIX / "scico").splits


def test_multinews_documents_not_stripped_and_raw_layout_matches() -> None:
    d = load_dataset("MultiNews", FIX / "multinews")
    assert list(d.splits) == ["train", "validation", "test"]
    comet = d.split("validation")[1]
    assert comet.raw_id == 1 and [x.text for x in comet.documents] == ["A rare comet will be visible this weekend.", ""]
    assert d.split("test")[2].documents[1].text == "  The race drew four hundred people."
    assert d.split("train")[0].documents[0].text == "A new bridge opened across the river on Sunday.\nOfficials cut a ribbon at dawn."
    assert comet.target == "– Skywatchers can see a rare comet this weekend."
    raw = load_dataset("MultiNews", TEST_FIX / "multinews_raw")
    assert raw.splits == d.splits
    assert "val.src.cleaned" in raw.files


def test_openasp_sorted_splits_gz_and_joins(tmp_path: Path) -> None:
    d = load_dataset("OpenASP", FIX / "openasp")
    # upstream globs *.jsonl only: valid.jsonl.gz beside plain files is not a split
    assert list(d.splits) == ["test", "train"]
    causes = d.split("test")[0]
    assert causes.instance_id == "Causes/R3/DUC-2007/D0701.A" and causes.aspect_label == "Causes"
    assert causes.documents[0].text == "The outage began at a substation. A transformer failed in the heat."
    assert causes.documents[2].text == ""
    assert causes.target == "A transformer failed in the heat.\nDemand had peaked during the heatwave."
    gz_only = tmp_path / "openasp"
    gz_only.mkdir()
    shutil.copy(FIX / "openasp" / "valid.jsonl.gz", gz_only)
    g = load_dataset("OpenASP", gz_only)
    assert list(g.splits) == ["valid"] and g.split("valid")[0].target == "Fares rose by ten percent, blamed on fuel costs."


def test_musique_targets_and_answerable() -> None:
    d = load_dataset("MusiQue", FIX / "musique")
    assert list(d.splits) == ["test", "train", "val"]
    ans, unans, _ = d.split("val")
    # the contrast question shares its id; the key gets a suffix, raw_id keeps the source id
    assert (ans.instance_id, unans.instance_id, unans.raw_id) == ("2hop__301_402", "2hop__301_402#unanswerable", "2hop__301_402")
    assert ans.target == {"is_answerable": True, "answer_content": "Oreth"}
    assert unans.target == {"is_answerable": False, "answer_content": "Oreth"} and len(unans.documents) == 3
    assert ans.answer_aliases == ("Province of Oreth", "Oreth province")
    assert ans.documents[0].title == "Oreth" and ans.question.endswith("Ada Morrow")
    test = d.split("test")[0]
    assert test.target == {"is_answerable": True, "answer_content": ""} and test.extra["answerable_missing"] is True


def test_fusereviews_highlights_and_alignments() -> None:
    d = load_dataset("FuseReviews", FIX / "fusereviews")
    assert list(d.splits) == ["train", "validation", "test"]
    hotel = d.split("train")[0]
    assert hotel.documents[5].highlights == ((0, 18), (18, 39))  # adjacent spans
    assert hotel.documents[4].highlights == ()
    # same text from two reviews is kept twice; upstream dedupes (review, dict) pairs only
    assert hotel.review_alignments == ("Close to the station", "Great location near the station", "Parking was expensive",
                                       "Parking was expensive", "Staff at the desk were friendly", "The room was spotless",
                                       "The room was spotless")
    cafe = d.split("train")[1]
    assert cafe.review_alignments == ("Friendly baristas", "Quick service", "Strong coffee", "The coffee was strong", "Too few seats")
    assert all(i.review_alignments == () for i in d.split("test"))
    assert hotel.raw_id == 0 and hotel.target.startswith("The rooms were spotless")
    overlap = load_dataset("FuseReviews", TEST_FIX / "fusereviews_overlap")
    assert list(overlap.splits) == ["validation"] and overlap.split("validation")[0].documents[0].highlights == ((0, 25), (13, 33))


def _copy(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIX / name if (FIX / name).is_dir() else TEST_FIX / name, dst)
    return dst


def _edit_json(path: Path, fn) -> None:  # type: ignore[no-untyped-def]
    obj = json.loads(path.read_text())
    fn(obj)
    path.write_text(json.dumps(obj))


def _bad_line(path: Path, lineno: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[lineno - 1] = text
    path.write_text("\n".join(lines) + "\n")


def _edit_jsonl(path: Path, lineno: int, fn) -> None:  # type: ignore[no-untyped-def]
    lines = path.read_text().splitlines()
    obj = json.loads(lines[lineno - 1])
    fn(obj)
    lines[lineno - 1] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n")


CASES = [
    ("MusiQue", "musique", lambda p: _bad_line(p / "val.jsonl", 2, "{not json"), ["val.jsonl", "line 2", "valid JSON"]),
    ("MusiQue", "musique", lambda p: _edit_jsonl(p / "val.jsonl", 1, lambda o: o.update(answerable="yes")), ["line 1", "answerable", "true or false"]),
    ("MusiQue", "musique", lambda p: _edit_jsonl(p / "train.jsonl", 1, lambda o: o.pop("question")), ["train.jsonl", "line 1", "'question'", "missing"]),
    ("OpenASP", "openasp", lambda p: _edit_jsonl(p / "test.jsonl", 3, lambda o: o.update(summary_text="x")), ["test.jsonl", "line 3", "summary_text"]),
    ("OpenASP", "openasp", lambda p: shutil.copy(p / "test.jsonl", p / "test.old.jsonl"), ["split 'test'"]),
    ("SciCo", "scico", lambda p: _edit_jsonl(p / "test.jsonl", 2, lambda o: o["mentions"].append([1, 3, 9, 7])), ["test.jsonl", "line 2", "mentions", "outside"]),
    ("SciCo", "scico", lambda p: _edit_jsonl(p / "train.jsonl", 1, lambda o: o.update(doc_ids=[0, 2, 2])), ["train.jsonl", "doc_ids", "expected 0..1"]),
    ("SciCo", "scico", lambda p: (p / "validation.jsonl").unlink(), ["no file for split 'validation'"]),
    ("MultiNews", "multinews", lambda p: _edit_jsonl(p / "test.jsonl", 1, lambda o: o.pop("summary")), ["test.jsonl", "line 1", "'summary'"]),
    ("MultiNews", "multinews_raw", lambda p: (p / "val.tgt").write_text("one line\n"), ["val.src.cleaned", "2 lines", "val.tgt has 1"]),
    ("ECB", "ecb", lambda p: _edit_json(p / "test_events.json", lambda o: o[1].update(doc_id="99_1ecb.xml")), ["test_events.json", "mention 1", "doc_id", "99_1ecb.xml"]),
    ("ECB", "ecb", lambda p: _edit_json(p / "dev_entities.json", lambda o: o[0].update(tokens_ids=[999])), ["dev_entities.json", "mention 0", "token id 999"]),
    ("ECB", "ecb", lambda p: _edit_json(p / "train.json", lambda o: o["3_1ecb.xml"].__setitem__(0, [0, "1", "x", True])), ["train.json", "3_1ecb.xml", "token row 0"]),
    ("ECB", "ecb", lambda p: (p / "dev.json").unlink(), ["dev.json", "missing"]),
]


@pytest.mark.parametrize(("name", "fixture", "corrupt", "expected"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_malformed_input_gives_one_line_error(tmp_path: Path, name: str, fixture: str, corrupt, expected: list[str]) -> None:  # type: ignore[no-untyped-def]
    folder = _copy(tmp_path, fixture)
    corrupt(folder)
    with pytest.raises(InputError) as exc:
        load_dataset(name, folder)
    msg = str(exc.value)
    assert "\n" not in msg
    for part in expected:
        assert part in msg, (part, msg)


def _csv_edit(path: Path, row: int, col: str, value: str) -> None:
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    rows[row][col] = value
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


@pytest.mark.parametrize(("col", "value", "expected"), [
    ("review_2_offsets", "[[5, 500]]", ["row 1", "review_2_offsets", "out of range"]),
    ("review_0_offsets", "[[1, 2", ["row 1", "review_0_offsets", "valid JSON"]),
    ("review_3_alignments", '[{"summary": {}}]', ["row 1", "review_3_alignments", '"review"']),
])
def test_fusereviews_malformed(tmp_path: Path, col: str, value: str, expected: list[str]) -> None:
    folder = _copy(tmp_path, "fusereviews")
    _csv_edit(folder / "dev.csv", 1, col, value)
    with pytest.raises(InputError) as exc:
        load_dataset("FuseReviews", folder)
    assert all(part in str(exc.value) for part in expected + ["dev.csv"]), str(exc.value)


def test_unknown_dataset_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown dataset 'Foo'"):
        load_dataset("Foo", tmp_path)
    with pytest.raises(MissingDataError, match="seam-repro fetch --only SciCo"):
        load_dataset("SciCo", tmp_path / "nope")


def test_prompt_fixtures_have_upstream_structure() -> None:
    upstream = SHARED / "seam" / "upstream-6ad83f4" / "prompts"
    if not upstream.is_dir():
        pytest.skip("../shared/seam/upstream-6ad83f4 not present")
    for name in DATASET_INFO:
        ours = json.loads((FIX / "prompts" / f"{name}.json").read_text(encoding="utf-8"))
        ref = json.loads((upstream / f"{name}.json").read_text(encoding="utf-8"))
        assert list(ours) == list(ref), name
        assert [list(p) for p in ours["prompts"]] == [list(ref["prompts"][0])] * 4, name
        demo_key = "demos" if name == "FuseReviews" else "demonstrations"
        assert len(ours[demo_key]) == 4
        assert [list(d) for d in ours[demo_key]] == [list(d) for d in ref[demo_key][:4]], name
        for key, value in ref.items():
            if isinstance(value, str):
                assert ours[key] == value, (name, key)  # template strings must be the upstream ones
