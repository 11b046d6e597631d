"""ECB+ XML converter: a hand-written mini corpus with known answers, and the real topics 36-40
(when ../shared/realdata/ecbplus is present) checked against an independent count of the XML."""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from seam_repro.datasets import load_dataset
from seam_repro.datasets.ecb_xml import convert, split_of
from seam_repro.errors import InputError

REAL = Path(__file__).resolve().parents[2] / "shared" / "realdata" / "ecbplus"

DOC_36_1 = """<?xml version="1.0" encoding="UTF-8"?>
<Document doc_name="36_1ecb.xml" doc_id="DOC1">
<token t_id="1" sentence="0" number="0">Police</token>
<token t_id="2" sentence="0" number="1">arrest</token>
<token t_id="3" sentence="0" number="2">two</token>
<token t_id="4" sentence="0" number="3">leaders</token>
<token t_id="5" sentence="1" number="0">Ignored</token>
<token t_id="6" sentence="1" number="1">fired</token>
<token t_id="7" sentence="2" number="0">The</token>
<token t_id="8" sentence="2" number="1">arrest</token>
<token t_id="9" sentence="2" number="2">happened</token>
<Markables>
<ACTION_OCCURRENCE m_id="10"><token_anchor t_id="2"/></ACTION_OCCURRENCE>
<HUMAN_PART_PER m_id="11"><token_anchor t_id="3"/><token_anchor t_id="4"/></HUMAN_PART_PER>
<ACTION_OCCURRENCE m_id="12"><token_anchor t_id="6"/></ACTION_OCCURRENCE>
<ACTION_OCCURRENCE m_id="13"><token_anchor t_id="8"/></ACTION_OCCURRENCE>
<ACTION_OCCURRENCE m_id="14"><token_anchor t_id="9"/></ACTION_OCCURRENCE>
<HUMAN_PART_ORG m_id="15"><token_anchor t_id="1"/></HUMAN_PART_ORG>
<ACTION_OCCURRENCE m_id="30" RELATED_TO="" TAG_DESCRIPTOR="t36_arrest" instance_id="ACT555"/>
<HUMAN_PART_PER m_id="31" RELATED_TO="" TAG_DESCRIPTOR="t36_leaders" instance_id="HUM777"/>
</Markables>
<Relations>
<CROSS_DOC_COREF r_id="900" note="ACT555"><source m_id="10"/><source m_id="13"/><target m_id="30"/></CROSS_DOC_COREF>
<CROSS_DOC_COREF r_id="901" note="HUM777"><source m_id="11"/><target m_id="31"/></CROSS_DOC_COREF>
<INTRA_DOC_COREF r_id="4242"><source m_id="14"/><target m_id="15"/></INTRA_DOC_COREF>
</Relations>
</Document>
"""

DOC_2_1 = """<?xml version="1.0" encoding="UTF-8"?>
<Document doc_name="2_1ecbplus.xml" doc_id="DOC2">
<token t_id="1" sentence="0" number="0">Museum</token>
<token t_id="2" sentence="0" number="1">reopens</token>
<Markables>
<ACTION_OCCURRENCE m_id="1"><token_anchor t_id="2"/></ACTION_OCCURRENCE>
<LOC_FAC m_id="2"><token_anchor t_id="1"/></LOC_FAC>
</Markables>
<Relations/>
</Document>
"""


def _mini(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "ECB+"
    (corpus / "36").mkdir(parents=True)
    (corpus / "2").mkdir()
    (corpus / "36" / "36_1ecb.xml").write_text(DOC_36_1, encoding="utf-8")
    (corpus / "36" / "36_9ecb.xml").write_text(DOC_36_1.replace("36_1ecb", "36_9ecb"), encoding="utf-8")  # not validated
    (corpus / "2" / "2_1ecbplus.xml").write_text(DOC_2_1, encoding="utf-8")
    sentences = tmp_path / "sentences.csv"
    sentences.write_text("Topic,File,Sentence Number\n36,1ecb,0\n36,1ecb,2\n2,1ecbplus,0\n", encoding="utf-8")
    return corpus, sentences


def test_split_assignment() -> None:
    assert [split_of(t) for t in (1, 2, 5, 12, 18, 21, 23, 34, 35, 36, 45)] == [
        "train", "dev", "dev", "dev", "dev", "dev", "dev", "dev", "dev", "test", "test"]
    with pytest.raises(ValueError):
        split_of(46)


def test_mini_corpus_conversion(tmp_path: Path) -> None:
    corpus, sentences = _mini(tmp_path)
    out = tmp_path / "json"
    stats = convert(corpus, sentences, out)
    docs = json.loads((out / "test.json").read_text())
    assert list(docs) == ["36_1ecb.xml"]  # 36_9ecb.xml is not in the sentences file
    # sentence 1 is not validated but lies between validated sentences 0 and 2
    assert docs["36_1ecb.xml"][4] == [1, 5, "Ignored", False, True]
    events = json.loads((out / "test_events.json").read_text())
    assert [(m["m_id"], m["cluster_id"], m["tokens_ids"]) for m in events] == [
        ("10", 555, [2]), ("13", 555, [8]), ("14", 4242, [9])]  # m 12 sits in unvalidated sentence 1
    assert [m["singleton"] for m in events] == [False, False, True]
    entities = json.loads((out / "test_entities.json").read_text())
    # m 11 -> HUM777; m 15 is the INTRA_DOC target itself (no source link), hence a singleton id,
    # the second entity singleton after dev topic 2's (topics are read in numeric order)
    assert [(m["m_id"], m["cluster_id"], m["tokens"]) for m in entities] == [("11", 777, "two leaders"), ("15", 200000001, "Police")]
    assert entities[0]["topic"] == "36" and entities[0]["subtopic"] == "36_1" and entities[0]["cluster_desc"] == "t36_leaders"
    dev_events = json.loads((out / "dev_events.json").read_text())
    assert dev_events[0]["cluster_id"] == 100000000 and dev_events[0]["subtopic"] == "2_0"
    assert stats.skipped_unvalidated == 1 and stats.documents["test"] == 1 and stats.documents["dev"] == 1
    loaded = load_dataset("ECB", out)
    assert [i.instance_id for i in loaded.split("test_events")] == ["36"] and loaded.split("train_events") == []


def test_bad_sentences_file(tmp_path: Path) -> None:
    corpus, sentences = _mini(tmp_path)
    sentences.write_text("Topic,File,Sentence Number\n36,1ecb,zero\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"sentences.csv: record line 2: expected"):
        convert(corpus, sentences, tmp_path / "out")


def _independent_count(topic_dir: Path, validated: dict[str, set[int]]) -> dict[str, list[tuple[str, str, tuple[int, ...]]]]:
    """Mentions in validated sentences, read with regexes over the raw XML (not the converter)."""
    out: dict[str, list[tuple[str, str, tuple[int, ...]]]] = {"events": [], "entities": []}
    for xml in sorted(topic_dir.glob("*.xml")):
        if xml.name not in validated:
            continue
        text = xml.read_text(encoding="utf-8")
        sent = {int(a): int(b) for a, b in re.findall(r'<token t_id="(\d+)" sentence="(\d+)"', text)}
        for tag, m_id, _attrs, body in re.findall(r'<([A-Z_]+) m_id="(\d+)"([^>]*[^/])>(.*?)</\1>', text, re.S):
            ids = tuple(int(t) for t in re.findall(r'<token_anchor t_id="(\d+)"', body))
            if not ids or sent[ids[0]] not in validated[xml.name]:
                continue
            cat = "events" if tag.startswith(("ACTION", "NEG_ACTION")) else "entities"
            out[cat].append((xml.name, m_id, ids))
    return out


def test_real_topics_36_to_40(tmp_path: Path) -> None:
    if not REAL.is_dir():
        pytest.skip("../shared/realdata/ecbplus not present")
    out = tmp_path / "json"
    convert(REAL, REAL / "ECBplus_coreference_sentences.csv", out)
    validated: dict[str, set[int]] = {}
    with open(REAL / "ECBplus_coreference_sentences.csv", newline="") as fh:
        for row in list(csv.reader(fh))[1:]:
            validated.setdefault(f"{row[0]}_{row[1]}.xml", set()).add(int(row[2]))
    for cat in ("events", "entities"):
        ours = json.loads((out / f"test_{cat}.json").read_text())
        got = sorted((m["doc_id"], m["m_id"], tuple(m["tokens_ids"])) for m in ours)
        expected = sorted(x for t in range(36, 41) for x in _independent_count(REAL / str(t), validated)[cat])
        assert got == expected, cat
        assert len(got) > 300
    # cross-document clusters really span documents, and mention text matches the XML tokens
    events = json.loads((out / "test_events.json").read_text())
    docs_per_cluster: dict[int, set[str]] = {}
    for m in events:
        docs_per_cluster.setdefault(m["cluster_id"], set()).add(m["doc_id"])
    assert max(len(v) for v in docs_per_cluster.values()) > 5
    m0 = events[0]
    root = ET.parse(REAL / m0["topic"] / m0["doc_id"]).getroot()
    words = {int(t.attrib["t_id"]): t.text.strip() for t in root.iter("token")}
    assert m0["tokens"] == " ".join(words[i] for i in m0["tokens_ids"])
    loaded = load_dataset("ECB", out)
    assert [i.instance_id for i in loaded.split("test_events")] == ["36", "37", "38", "39", "40"]
    assert [i.instance_id for i in loaded.split("train_events")] == ["11", "14", "20"]
