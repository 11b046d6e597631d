"""Convert the raw ECB+ corpus (XML) into the Cattan et al. JSON that ``datasets/ecb.py`` reads.

Replicates the format written by ariecattan/coref ``get_ecb_data.py`` (the JSON inside the SEAM
Drive zip), so a lab without the Drive zip can build ECB+ from the public corpus
(cltl/ecbPlus ``ECB+_LREC2014/ECB+.zip`` + ``ECBplus_coreference_sentences.csv``):

* Only documents listed in the sentences CSV and only mentions whose first token lies in a
  validated sentence (the Cybulska & Vossen setup).
* Split by topic: dev 2, 5, 12, 18, 21, 23, 34, 35; test 36-45; train the other topics 1-35.
* Events = ``ACTION_*``/``NEG_ACTION_*`` markables, entities = ``HUMAN_PART*``/``LOC*``/
  ``TIME*``/``NON_HUMAN_PART*``; markables carrying ``RELATED_TO`` are cluster (instance) tags.
* Cluster id: ``CROSS_DOC_COREF`` -> the digits of the target's ``instance_id`` (``ACT123`` ->
  123); ``INTRA_DOC_COREF`` -> its ``r_id``; unlinked mentions are singletons numbered from 1e8
  (events) / 2e8 (entities).
* Token rows ``[sentence, t_id, text, in_validated_sentence, in_validated_span]``.

Differences from the original script, on purpose: topics and documents are read in sorted
(numeric/natural) order instead of ``os.listdir`` order, so singleton ids are reproducible but may
differ from the Drive copy's; ``tags``/``lemmas`` are left empty (no spaCy). Neither affects SEAM,
which uses only doc_id, topic, cluster_id (for grouping) and tokens_ids.
"""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from seam_repro.errors import InputError

DEV_TOPICS: frozenset[int] = frozenset({2, 5, 12, 18, 21, 23, 34, 35})
TEST_TOPICS: frozenset[int] = frozenset(range(36, 46))
EVENT_PREFIXES: tuple[str, ...] = ("ACTION_", "NEG_ACTION_")
ENTITY_PREFIXES: tuple[str, ...] = ("HUMAN_PART", "LOC", "TIME", "NON_HUMAN_PART")
EVENT_SINGLETON_START, ENTITY_SINGLETON_START = 100_000_000, 200_000_000


@dataclass
class ConversionStats:
    """What the conversion read and wrote (printed by the CLI, checked by tests)."""

    documents: Counter = field(default_factory=Counter)
    mentions: Counter = field(default_factory=Counter)
    """``{split}_{category}`` -> number of mentions written."""
    skipped_unvalidated: int = 0


def split_of(topic: int) -> str:
    """The standard Cybulska & Vossen split of an ECB+ topic number."""
    if topic in TEST_TOPICS:
        return "test"
    if topic in DEV_TOPICS:
        return "dev"
    if 1 <= topic <= 35:
        return "train"
    raise ValueError(topic)


def read_validated(path: Path) -> dict[str, set[int]]:
    """``ECBplus_coreference_sentences.csv`` -> ``{"36_1ecb.xml": {0, 1, ...}}``."""
    out: dict[str, set[int]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or [h.strip() for h in header[:3]] != ["Topic", "File", "Sentence Number"]:
            raise InputError(path, "expected the header 'Topic,File,Sentence Number'", record="line 1")
        for n, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) < 3 or not row[0].strip().isdigit() or not row[2].strip().isdigit():
                raise InputError(path, f"expected 'topic,file,sentence' with int topic and sentence, got {row!r}", record=f"line {n}")
            out.setdefault(f"{row[0].strip()}_{row[1].strip()}.xml", set()).add(int(row[2]))
    return out


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def _category(tag: str) -> str | None:
    if tag.startswith(EVENT_PREFIXES):
        return "events"
    return "entities" if tag.startswith(ENTITY_PREFIXES) else None


def _read_doc(path: Path, topic: str, sentences: set[int], counters: dict[str, Iterator[int]],
              stats: ConversionStats) -> tuple[list[list], dict[str, list[dict]]]:
    """Token rows and mention dicts (by category) of one validated document; ``counters`` number
    the singletons of each category."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise InputError(path, f"invalid XML: {exc}") from None
    doc = path.name
    low, high = min(sentences), max(sentences)
    rows, sentence_of, text_of = [], {}, {}
    for tok in root.iter("token"):
        try:
            t_id, sent = int(tok.attrib["t_id"]), int(tok.attrib["sentence"])
        except (KeyError, ValueError):
            raise InputError(path, f"token {tok.attrib}: expected int t_id and sentence attributes") from None
        text = (tok.text or "").replace("\ufffd", "").strip()
        rows.append([sent, t_id, text, sent in sentences, low <= sent <= high])
        sentence_of[t_id], text_of[t_id] = sent, text
    instances: dict[str, tuple[str, str]] = {}
    mentions: list[tuple[str, str, list[int]]] = []
    markables = root.find("Markables")
    for m in markables if markables is not None else []:
        m_id = m.attrib.get("m_id", "")
        if "RELATED_TO" in m.attrib:
            instances[m_id] = (m.attrib.get("instance_id", ""), m.attrib.get("TAG_DESCRIPTOR", ""))
            continue
        category = _category(m.tag)
        if category is None:
            continue
        ids = [int(a.attrib["t_id"]) for a in m if a.tag == "token_anchor"]
        if not ids:
            continue
        if ids[0] not in sentence_of:
            raise InputError(path, f"markable {m_id} anchors unknown token {ids[0]}")
        if sentence_of[ids[0]] not in sentences:
            stats.skipped_unvalidated += 1
            continue
        mentions.append((m_id, category, ids))
    target_of, relation_of = {}, {}
    relations = root.find("Relations")
    for rel in relations if relations is not None else []:
        targets = [c.attrib["m_id"] for c in rel if c.tag == "target"]
        if not targets:
            continue
        target = targets[-1]
        relation_of[target] = (rel.tag, rel.attrib.get("r_id", ""))
        target_of.update((c.attrib["m_id"], target) for c in rel if c.tag == "source")
    out: dict[str, list[dict]] = {"events": [], "entities": []}
    for m_id, category, ids in mentions:
        target = target_of.get(m_id)
        desc = ""
        if target is None:
            cluster: int = next(counters[category])
        else:
            tag, r_id = relation_of[target]
            instance_id, desc = instances.get(target, ("", ""))
            digits = r_id if tag.startswith("INTRA") else re.sub(r"^[A-Za-z_]+", "", instance_id)
            if not digits.isdigit():
                raise InputError(path, f"relation target {target}: cannot derive a cluster id from {tag} r_id={r_id!r} instance_id={instance_id!r}")
            cluster = int(digits)
        out[category].append({
            "doc_id": doc, "subtopic": f"{topic}_{0 if 'plus' in doc else 1}", "m_id": m_id,
            "sentence_id": str(sentence_of[ids[0]]), "tokens_ids": ids,
            "tokens": " ".join(text_of.get(i, "") for i in ids), "tags": "", "lemmas": "",
            "cluster_id": cluster, "cluster_desc": desc, "topic": topic,
        })
    return rows, out


def convert(corpus_dir: Path, sentences_csv: Path, out_dir: Path) -> ConversionStats:
    """Convert an unzipped ECB+ corpus folder into the nine Cattan et al. JSON files in ``out_dir``."""
    validated = read_validated(sentences_csv)
    stats = ConversionStats()
    counters = {"events": count(EVENT_SINGLETON_START), "entities": count(ENTITY_SINGLETON_START)}
    docs: dict[str, dict[str, list]] = {s: {} for s in ("train", "dev", "test")}
    mentions: dict[str, list[dict]] = {f"{s}_{c}": [] for s in docs for c in ("events", "entities")}
    topic_dirs = sorted((d for d in Path(corpus_dir).iterdir() if d.is_dir() and d.name.isdigit()), key=lambda d: int(d.name))
    if not topic_dirs:
        raise InputError(corpus_dir, "no topic folders; expected <topic>/<topic>_<n>ecb(plus).xml")
    for tdir in topic_dirs:
        try:
            split = split_of(int(tdir.name))
        except ValueError:
            raise InputError(tdir, "topic number outside 1-45") from None
        topic_mentions: dict[str, list[dict]] = {"events": [], "entities": []}
        for path in sorted(tdir.glob("*.xml"), key=lambda p: _natural(p.name)):
            if path.name not in validated:
                continue
            rows, by_cat = _read_doc(path, tdir.name, validated[path.name], counters, stats)
            docs[split][path.name] = rows
            stats.documents[split] += 1
            for c in by_cat:
                topic_mentions[c].extend(by_cat[c])
        for c, items in topic_mentions.items():
            sizes = Counter(m["cluster_id"] for m in items)
            for m in items:
                m["singleton"] = sizes[m["cluster_id"]] == 1
            mentions[f"{split}_{c}"].extend(items)
            stats.mentions[f"{split}_{c}"] += len(items)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, value in {**docs, **mentions}.items():
        (out / f"{name}.json").write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return stats
