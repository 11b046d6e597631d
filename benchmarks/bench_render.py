"""Render + hash throughput of a paper-sized manifest: 6 datasets x 10 runs x 100 instances.

Synthetic instances shaped like the real data (MultiNews ~2-3 articles, MuSiQue 20 paragraphs,
ECB+/SciCo topics with marked mentions, FuseReviews 8 reviews with highlights) rendered with the
upstream prompt files when ../shared has them (else the project's fixture prompt files). Prints
prompts/s for sampling, for rendering + hashing, and the ratio to raw sha256 over the same bytes.

    python benchmarks/bench_render.py
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from pathlib import Path

from seam_repro.config import parse_config
from seam_repro.instances import Document, Instance, LoadedDataset, Mention, Token
from seam_repro.manifest.freeze import build_manifest
from seam_repro.sample import draw_all
from seam_repro.sources.resolve import Sources

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "seam" / "upstream-6ad83f4" / "prompts"
PROMPTS = SHARED if SHARED.exists() else REPO / "manifests" / "fixtures" / "prompts"
WORDS = "the of and to in a is that for on said was with he it as at by from his an be have".split() + \
    [f"w{i}" for i in range(2000)]


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def synth(rng: random.Random, n: int = 150) -> dict[str, LoadedDataset]:
    def docs(k: int, words: int) -> tuple[Document, ...]:
        return tuple(Document(str(i), text(rng, words)) for i in range(k))

    mn = [Instance("MultiNews", "test", str(i), i, docs(rng.randint(2, 4), 500), target=text(rng, 200)) for i in range(n)]
    oa = [Instance("OpenASP", "test", f"g{i}", f"g{i}", docs(rng.randint(3, 8), 400), aspect_label="aspect",
                   target=text(rng, 60)) for i in range(n)]
    mq = [Instance("MusiQue", "val", f"q{i}", f"q{i}", docs(20, 80), question=text(rng, 12) + "?",
                   target={"is_answerable": True, "answer_content": "x"}) for i in range(n)]
    fr = [Instance("FuseReviews", "validation", str(i), i, tuple(
        Document(str(k), text(rng, 120), highlights=((0, 20), (40, 60))) for k in range(8))) for i in range(n)]

    def ecb_topic(i: int, split: str) -> Instance:
        d = [Document(f"{i}_{k}", tokens=tuple(Token(0, t, rng.choice(WORDS), True) for t in range(300))) for k in range(8)]
        ms = tuple(Mention(rng.randint(0, 30), f"{i}_{rng.randint(0, 7)}", (t, t)) for t in range(0, 290, 7))
        return Instance("ECB", split, str(i), str(i), tuple(d), mentions=ms)

    def scico_row(i: int, split: str) -> Instance:
        paras = tuple(tuple(rng.choice(WORDS) for _ in range(60)) for _ in range(40))
        ids = tuple(range(40))
        ms = tuple(Mention(rng.randint(0, 20), paragraph=p, start=3, end=5) for p in range(0, 40, 1))[:50]
        return Instance("SciCo", split, str(i), i, (), paragraphs=paras, paragraph_doc_ids=ids, mentions=ms)

    ecb = {f"{s}_{c}": [ecb_topic(i, f"{s}_{c}") for i in range(10)] for s in ("train", "dev", "test")
           for c in ("events", "entities")}
    return {
        "ECB": LoadedDataset("ECB", ecb),
        "FuseReviews": LoadedDataset("FuseReviews", {"validation": fr}),
        "SciCo": LoadedDataset("SciCo", {"train": [scico_row(i, "train") for i in range(20)],
                                         "test": [scico_row(i, "test") for i in range(n)]}),
        "MultiNews": LoadedDataset("MultiNews", {"test": mn}),
        "MusiQue": LoadedDataset("MusiQue", {"val": mq}),
        "OpenASP": LoadedDataset("OpenASP", {"test": oa}),
    }


def main() -> None:
    rng = random.Random(0)
    data = synth(rng)
    raw = {"random_seed": 42, "num_different_runs": 10, "num_demonstrations": 3, "max_num_samples": 100,
           "datasets": [{"name": n} for n in data]}
    cfg = parse_config(raw, "upstream")
    sources = Sources()
    for name in data:
        p = PROMPTS / f"{name}.json"
        sources.data[name], sources.data_paths[name] = data[name], Path(".")
        sources.prompt_files[name] = json.loads(p.read_text(encoding="utf-8"))
        sources.prompt_paths[name], sources.prompt_hashes[name] = p, "0" * 64
    t0 = time.perf_counter()
    choices = draw_all(cfg, "upstream", data, sources.prompt_files)
    t1 = time.perf_counter()
    _, records = build_manifest(cfg, "upstream", choices, sources, command="bench")
    t2 = time.perf_counter()
    blobs = [(prefix + block).encode("utf-8") for _, prefix, block in records]
    t3 = time.perf_counter()
    for b in blobs:
        hashlib.sha256(b).hexdigest()
    t4 = time.perf_counter()
    n, mb = len(records), sum(map(len, blobs)) / 1e6
    print(f"prompt files: {PROMPTS}")
    print(f"prompts: {n} ({mb:.1f} MB of prompt text, {cfg.num_runs} runs x {len(data)} datasets)")
    print(f"sample (all draws):        {t1 - t0:8.3f} s")
    print(f"render + hash + manifest:  {t2 - t1:8.3f} s  = {n / (t2 - t1):,.0f} prompts/s")
    print(f"raw sha256 of same bytes:  {t4 - t3:8.3f} s  = {n / (t4 - t3):,.0f} prompts/s")
    print(f"ratio render+hash / raw sha256: {(t2 - t1) / (t4 - t3):.1f}x")


if __name__ == "__main__":
    main()
