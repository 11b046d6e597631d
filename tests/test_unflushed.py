"""The as-published gold file: the emulation of CPython's write buffering against CPython itself
(files written the way upstream writes /tmp/gold.conll, left open, read from another process), and
the as-published coreference score against the perl scorer reading such a file (opt-in)."""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_coref_parse import conll_texts

from seam_repro.metrics.coref_parse import score_run
from seam_repro.metrics.unflushed import bytes_on_disk, perl_view, published_gold, upstream_gold_writes

SCORER = os.environ.get("CONLL_SCORER", "")
READER = "import hashlib, sys\nfor p in sys.argv[1:]:\n    d = open(p, 'rb').read()\n    print(len(d), hashlib.sha256(d).hexdigest())"


def _gold(rng: random.Random, n_instances: int) -> list[tuple[str, list[list[int]]]]:
    gold = []
    for i in range(n_instances):
        ids = rng.sample(range(0, 400), rng.randint(1, 40))
        clusters: list[list[int]] = []
        for m in ids:
            (rng.choice(clusters).append(m) if clusters and rng.random() < 0.6 else clusters.append([m]))
        gold.append((f"{rng.randint(1, 45)}_{i}ecb" if rng.random() < 0.5 else str(rng.randint(0, 10**6)), clusters))
    return gold


def _write_like_upstream(path: Path, gold, block: int | None):
    """Upstream's gold loop verbatim (open(..., "w"), one write per line), handle left open."""
    target_file = open(path, "w") if block is None else open(path, "w", buffering=block)  # noqa: SIM115
    for sample_id, clusters in gold:
        mention_to_cluster = {}
        for cluster_id, cluster in enumerate(clusters):
            for mention_id in cluster:
                mention_to_cluster[mention_id] = cluster_id
        target_file.write(f"#begin document id={sample_id}\n")
        for mention_id in sorted(mention_to_cluster):
            target_file.write(f"{mention_id}\t({mention_to_cluster[mention_id]})\n")
        target_file.write("#end document\n")
    return target_file


@pytest.mark.parametrize("block", [None, 512, 1000, 4096, 8192, 12288, 65536])
def test_emulation_equals_cpython_read_from_another_process(tmp_path: Path, block: int | None) -> None:
    rng = random.Random(block or 7)
    runs, handles, paths = [], [], []
    sizes = [0, 1, 2, 3, 5, 8, 13, 20, 30, 45, 70, 150, 300, 800]  # instances per run: ~40 B to ~130 KB
    for k in range(60):
        gold = _gold(rng, sizes[k % len(sizes)])
        path = tmp_path / f"gold{k}.conll"
        handles.append(_write_like_upstream(path, gold, block))
        runs.append(gold)
        paths.append(path)
    effective = block if block is not None else os.stat(tmp_path / "gold0.conll").st_blksize
    out = subprocess.run([sys.executable, "-c", READER, *map(str, paths)], capture_output=True, text=True, check=True)
    for handle in handles:
        handle.close()
    seen = [line.split() for line in out.stdout.splitlines()]
    cut_somewhere = 0
    for gold, (n, digest) in zip(runs, seen, strict=True):
        writes = upstream_gold_writes(gold)
        whole = b"".join(writes)
        emulated = whole[: bytes_on_disk(map(len, writes), effective)]
        assert (len(emulated), hashlib.sha256(emulated).hexdigest()) == (int(n), digest), (block, len(whole))
        cut_somewhere += 0 < len(emulated) < len(whole)
    assert cut_somewhere >= 4  # the sample really crosses buffer boundaries


def test_boundaries_by_hand() -> None:
    # 8191 bytes never leave the text layer; the write that reaches 8192 passes them to a 4096-byte
    # buffer, which (larger than the buffer) go straight to the file
    assert bytes_on_disk([8191], 4096) == 0
    assert bytes_on_disk([8191, 1], 4096) == 8192
    assert bytes_on_disk([8191, 2], 4096) == 8191  # the overflowing write starts the next chunk
    assert bytes_on_disk([8192], 16384) == 0  # a bigger block keeps the first chunk in memory
    assert bytes_on_disk([8192, 8192], 16384) == 0 and bytes_on_disk([8192] * 3, 16384) == 16384
    with pytest.raises(ValueError):
        bytes_on_disk([1], 0)


def test_perl_view_drops_a_cut_line_that_holds_no_mention() -> None:
    head = b"#begin document id=1\n1\t(0)\n"
    assert perl_view(head + b"12\t(3") == head
    assert perl_view(head + b"12\t(3)") == head + b"12\t(3)"
    assert perl_view(head + b"#end docu") == head
    assert perl_view(head + b"#end document\n#begin document id=4") == head + b"#end document\n#begin document id=4"


def test_small_gold_file_is_empty_for_perl_so_the_published_score_is_zero() -> None:
    gold = [("t1", [[1, 2], [3, 6]]), ("t2", [[4, 5]])]
    pred = [("t1", "[[1, 2], [3, 6]]"), ("t2", "[[4, 5]]")]
    data, total = published_gold(gold)
    assert data == b"" and total > 0
    published = score_run(gold, pred, "upstream", gold_block_size=4096)
    intended = score_run(gold, pred, "upstream")
    assert published.conll_f1_printed == 0.0 and intended.conll_f1_printed == 100.0
    assert [i.gold_read for i in published.instances] == ["absent", "absent"]
    assert published.gold_bytes_read == 0 and published.gold_documents_read == 0


def _perl_conll_f1(gold_path: Path, pred_path: Path) -> float:
    out = subprocess.run(["perl", SCORER, "all", str(gold_path), str(pred_path)], capture_output=True, text=True,
                         check=True)
    assert out.stderr == ""
    f1 = {}
    for section in out.stdout.split("METRIC ")[1:]:
        name = section.split(":", 1)[0]
        if name in ("muc", "bcub", "ceafe"):
            f1[name] = float(re.findall(r"\nCoreference: Recall:.*F1: ([0-9.]+)%", section)[-1])
    return (f1["muc"] + f1["bcub"] + f1["ceafe"]) / 3


@pytest.mark.skipif(not (SCORER and Path(SCORER).is_file() and shutil.which("perl")),
                    reason="set CONLL_SCORER to a reference-coreference-scorers scorer.pl (and install perl) to run")
@pytest.mark.parametrize("block", [4096, 8192, 1000])
def test_published_score_equals_perl_reading_the_open_file(tmp_path: Path, block: int) -> None:
    rng = random.Random(block)
    cut = 0
    for trial in range(8):
        gold = _gold(rng, rng.choice([3, 60, 100, 200]))
        pred = []
        for iid, clusters in gold:
            flat = [m for c in clusters for m in c] + [rng.randrange(400, 420)]
            pred.append((iid, str([rng.sample(flat, min(len(flat), rng.randint(1, 4))) for _ in range(rng.randint(0, 6))])))
        run = score_run(gold, pred, "upstream", gold_block_size=block)
        cut += 0 < (run.gold_bytes_read or 0) < (run.gold_bytes_total or 0)
        pred_path = tmp_path / f"p{trial}.conll"
        pred_path.write_text(conll_texts(gold, pred)[1])
        gold_path = tmp_path / f"g{trial}.conll"
        handle = _write_like_upstream(gold_path, gold, block)
        try:
            perl = _perl_conll_f1(gold_path, pred_path)
        finally:
            handle.close()
        assert run.conll_f1_printed == pytest.approx(perl, abs=0.0034), (block, trial, run.gold_bytes_read)
        assert _perl_conll_f1(gold_path, pred_path) == pytest.approx(score_run(gold, pred, "upstream").conll_f1_printed,
                                                                     abs=0.0034)
    assert cut >= 3
