"""Synthetic inputs for the benchmarks (and the differential tests that reuse them).

* :func:`conll_pair`: a CoNLL-2012 key and response file, ``n_docs`` documents of ``n_tokens``
  tokens with 20-40 entities of 1-4 mentions each (spans of 1-4 tokens, nested and crossing ones
  included); the response keeps ~70% of mentions in their entity, moves ~20% to another, drops
  ~10% and adds a few twinless ones -- the mix a coreference system's output has.
* :func:`scaled_seam_data`: the repository's SEAM fixtures (manifests/fixtures) with every scored split
  replicated under new ids and its documents lengthened to about their real size (MultiNews
  articles ~400 words, MuSiQue 20 paragraphs, ECB+ documents ~300 tokens, ...), in the datasets' own
  file formats, so the published generator and ``seam-repro sample`` read the same files.
"""

from __future__ import annotations

import csv
import io
import json
import random
import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "manifests" / "fixtures"
SEAM_SPLITS = [("ECB", "test_events"), ("FuseReviews", "validation"), ("SciCo", "test"), ("MultiNews", "test"),
               ("MusiQue", "val"), ("OpenASP", "test")]


def _conll_doc(name: str, n_tokens: int, entities: dict[int, list[tuple[int, int]]]) -> str:
    fields: dict[int, list[str]] = {t: [] for t in range(n_tokens)}
    for e, spans in entities.items():
        for s, end in spans:
            if s == end:
                fields[s].append(f"({e})")
            else:
                fields[s].append(f"({e}")
                fields[end].append(f"{e})")
    rows = [f"#begin document ({name}); part 000"]
    rows += [f"{name}\t0\t{t}\tw{t}\tNN\t*\t-\t-\t-\t-\t{'|'.join(fields[t]) or '-'}" for t in range(n_tokens)]
    return "\n".join(rows + ["", "#end document", ""])


def conll_pair(rng: random.Random, n_docs: int = 200, n_tokens: int = 300,
               entities: tuple[int, int] = (20, 40)) -> tuple[str, str]:
    """Key and response file contents (see the module docstring)."""
    keys, responses = [], []
    n_labels = entities[1] + 5
    for d in range(n_docs):
        spans: set[tuple[int, int]] = set()
        key: dict[int, list[tuple[int, int]]] = {}
        for e in range(rng.randint(*entities)):
            for _ in range(rng.randint(1, 4)):
                s = rng.randrange(n_tokens)
                span = (s, min(n_tokens - 1, s + rng.choice([0, 0, 1, 2, 3])))
                if span not in spans:
                    spans.add(span)
                    key.setdefault(e, []).append(span)
        keys.append(_conll_doc(f"d{d}", n_tokens, key))
        response: dict[int, list[tuple[int, int]]] = {}
        used: set[tuple[int, int]] = set()
        for e, mentions in key.items():
            for span in mentions:
                x = rng.random()
                if x < 0.1:
                    continue
                response.setdefault(e if x < 0.8 else rng.randrange(n_labels), []).append(span)
                used.add(span)
        for _ in range(rng.randint(0, 10)):
            s = rng.randrange(n_tokens)
            span = (s, min(n_tokens - 1, s + rng.choice([0, 1])))
            if span not in used:
                used.add(span)
                response.setdefault(rng.randrange(n_labels), []).append(span)
        responses.append(_conll_doc(f"d{d}", n_tokens, response))
    return "".join(keys), "".join(responses)


def _jsonl_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


WORDS = ("the of and to in a is that for on said was with he it as at by from his an be have city river "
         "council court police team market school report study model data people year week").split()


def _grow(rows: list[dict], name: str, rng: random.Random, scale: float) -> list[dict]:
    """Documents lengthened to about their real size (text appended after every annotated
    position, so mentions, highlights and answers stay where they were)."""
    def words(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(max(1, int(n * scale))))

    out = []
    for row in rows:
        row = json.loads(json.dumps(row))
        if name == "MultiNews":  # 2-4 articles of ~400 words
            row["document"] = "|||||".join(a + " " + words(400) for a in row["document"].split("|||||"))
        elif name == "MusiQue":  # 20 paragraphs of ~60 words
            for para in row["paragraphs"]:
                para["paragraph_text"] += " " + words(60)
            start = len(row["paragraphs"])
            row["paragraphs"] += [{"idx": start + k, "title": f"Extra {k}", "paragraph_text": words(60),
                                   "is_supporting": False} for k in range(max(0, 20 - start))]
        elif name == "OpenASP":  # documents of ~20 more sentences
            for doc in row["documents"]:
                doc["text"] += [words(15) + "." for _ in range(int(20 * scale))]
        elif name == "SciCo":  # paragraphs of ~60 tokens
            row["tokens"] = [t + words(50).split() for t in row["tokens"]]
        out.append(row)
    return out


def scaled_seam_data(root: Path, copies: int = 4, scale: float = 1.0, seed: int = 0) -> dict[str, Path]:
    """Write the six SEAM datasets under ``root/<name>`` with the scored split of each repeated
    ``copies`` times (ECB and FuseReviews ``copies + 1``) and every scored document lengthened to
    about its real size times ``scale`` (0: fixture size); returns ``name -> folder``."""
    rng = random.Random(seed)

    def new_id(value: object, c: int) -> object:
        if c == 0:
            return value
        return value + 1000 * c if isinstance(value, int) else f"{value}_{c}"

    jsonl = {"MultiNews": ("multinews", "test", None), "MusiQue": ("musique", "val", "id"),
             "OpenASP": ("openasp", "test", "guid"), "SciCo": ("scico", "test", "id")}
    for name, (folder, split, id_field) in jsonl.items():
        out = root / name
        out.mkdir(parents=True)
        for f in sorted((FIXTURES / folder).glob("*.jsonl")):
            if f.name != f"{split}.jsonl":
                shutil.copy(f, out / f.name)
                continue
            rows = [dict(r, **({id_field: new_id(r[id_field], c)} if id_field else {}))
                    for c in range(copies) for r in _jsonl_rows(f)]
            rows = _grow(rows, name, rng, scale) if scale else rows
            (out / f.name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = root / "FuseReviews"
    out.mkdir()
    for f in (FIXTURES / "fusereviews").iterdir():
        if f.name != "dev.csv":
            shutil.copy(f, out / f.name)
            continue
        header, *rows = list(csv.reader(io.StringIO(f.read_text(encoding="utf-8"))))
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(header)
        text_cols = [k for k, col in enumerate(header) if col.startswith("review_") and col.endswith("_text")]
        for _ in range(copies + 1):
            for r in rows:
                r = list(r)
                for k in text_cols:  # reviews of ~120 more words (highlight offsets stay valid)
                    if r[k] and scale:
                        r[k] += " " + " ".join(rng.choice(WORDS) for _ in range(int(120 * scale)))
                writer.writerow(r)
        (out / f.name).write_text(buf.getvalue(), encoding="utf-8")
    out = root / "ECB"
    out.mkdir()
    for f in (FIXTURES / "ecb").iterdir():
        shutil.copy(f, out / f.name)
    docs = json.loads((FIXTURES / "ecb" / "test.json").read_text(encoding="utf-8"))
    mentions = json.loads((FIXTURES / "ecb" / "test_events.json").read_text(encoding="utf-8"))

    def topic(name: str, c: int) -> str:  # "36_1ecb.xml" -> "136_1ecb.xml": a new topic per copy
        t, rest = name.split("_", 1)
        return f"{int(t) + 100 * c}_{rest}"

    if scale:  # documents of ~300 tokens: annotated sentences appended after the last one
        for toks in docs.values():
            sent, tid = toks[-1][0], toks[-1][1]
            for k in range(int(280 * scale)):
                toks.append([sent + 1 + k // 20, tid + 1 + k, rng.choice(WORDS), True, True])
    all_docs, all_mentions = dict(docs), list(mentions)
    for c in range(1, copies + 1):
        all_docs.update({topic(n, c): v for n, v in docs.items()})
        all_mentions += [dict(m, doc_id=topic(m["doc_id"], c), subtopic=topic(m["subtopic"], c),
                              topic=str(int(m["topic"]) + 100 * c), cluster_id=m["cluster_id"] + 100000 * c)
                         for m in mentions]
    (out / "test.json").write_text(json.dumps(all_docs), encoding="utf-8")
    (out / "test_events.json").write_text(json.dumps(all_mentions), encoding="utf-8")
    return {name: root / name for name, _ in SEAM_SPLITS}


def seam_config(data: dict[str, Path], runs: int = 10, demos: int = 3) -> dict:
    """The generator config over :func:`scaled_seam_data` folders (every test instance, each run)."""
    return {"random_seed": 42, "num_different_runs": runs, "num_demonstrations": demos, "max_num_samples": -1,
            "datasets": [{"name": n, "split_name": s, "path": str(data[n].resolve())} for n, s in SEAM_SPLITS]}
