"""Build a sealed, schema-valid manifest for hand-made prompt records, so tests that assemble a run
folder by hand pass the trust chain (``RUN_DIR/manifest.json`` + run.json's digest) like a replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seam_repro.hashing import digest_of_hashes, sha256_json, sha256_text
from seam_repro.manifest.format import SCHEMA_VERSION, dump_manifest, seal


def manifest_for(prompts: list[dict[str, Any]], profile: str = "upstream", suite: str = "seam",
                 generation: dict[str, Any] | None = None) -> dict[str, Any]:
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    splits: dict[str, str] = {}
    for p in prompts:
        target = p.get("target")
        t_hash = p.get("target_sha256") or (sha256_text(target) if isinstance(target, str) else sha256_json(target))
        runs.setdefault((p["dataset"], p["run"]), []).append(
            {"id": p["instance_id"], "gen_seed": p.get("gen_seed", 1), "prompt_sha256": sha256_text(p["prompt"]),
             "target_sha256": t_hash})
        splits.setdefault(p["dataset"], p.get("split", "test"))
    run_list = [{"dataset": d, "run": k, "split": splits[d], "sample_seed": None, "paraphrase_index": 0,
                 "demo_indices": [], "max_num_docs": 0, "doc_order": [], "instances": inst,
                 "prompt_digest": digest_of_hashes(i["prompt_sha256"] for i in inst)}
                for (d, k), inst in runs.items()]
    n_runs = max((k for _, k in runs), default=0) + 1
    manifest = {
        "schema_version": SCHEMA_VERSION, "profile": profile, "frozen": True,
        "config": {"random_seed": 0, "num_different_runs": n_runs, "num_demonstrations": 0, "max_instances": -1,
                   "max_instances_key": None, "datasets": [{"name": d, "split_name": s} for d, s in splits.items()],
                   "generation": generation or {"temperature": 0.8, "do_sample": True, "max_new_tokens": 8},
                   "models": [], "suite": suite},
        "sources": {"prompts": {}, "data": {}}, "runs": run_list,
        "prompt_digest": digest_of_hashes(i["prompt_sha256"] for r in run_list for i in r["instances"]),
        "provenance": {"command": "tests/trust_helpers.py"},
    }
    return seal(manifest)


def forge(manifest: dict[str, Any]) -> dict[str, Any]:
    """Reseal an edited manifest the way a careful forger would: prompt digests recomputed from the
    edited instance hashes, then the seal (``trust.trusted`` recomputes both digests)."""
    for run in manifest["runs"]:
        run["prompt_digest"] = digest_of_hashes(i["prompt_sha256"] for i in run["instances"])
    manifest["prompt_digest"] = digest_of_hashes(i["prompt_sha256"] for r in manifest["runs"]
                                                 for i in r["instances"])
    return seal(manifest)


def seal_run_dir(run_dir: Path, prompts: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    """Write RUN_DIR/manifest.json for ``prompts`` and point run.json at it; returns the manifest."""
    m = manifest_for(prompts, **kw)
    (run_dir / "manifest.json").write_text(dump_manifest(m), "utf-8")
    rj_path = run_dir / "run.json"
    rj = json.loads(rj_path.read_text("utf-8")) if rj_path.exists() else {"schema_version": 1}
    rj["manifest_digest"] = m["digest"]
    rj_path.write_text(json.dumps(rj), "utf-8")
    return m


REPO = Path(__file__).resolve().parents[1]


def smoke_copy(tmp: Path, name: str = "smoke") -> Path:
    """The shipped frozen manifest, copied with its provenance paths made absolute (unsealed: the
    digest is unchanged), so it can be replayed from any folder."""
    src = REPO / "manifests" / f"{name}.json"
    m = json.loads(src.read_text("utf-8"))
    for kind in ("data", "prompts"):
        m["provenance"]["paths"][kind] = {n: str((src.parent / p).resolve()) for n, p in
                                          m["provenance"]["paths"][kind].items()}
    m["provenance"].pop("prompt_store", None)
    out = tmp / f"{name}.json"
    out.write_text(dump_manifest(m), "utf-8")
    return out


def echo_run(tmp: Path, *, limit: int | None = None, name: str = "smoke", out: str = "run") -> Path:
    """Replay a shipped manifest with the echo backend and score it (no FIC models): a real run folder."""
    from seam_repro.manifest.trust import load_trusted
    from seam_repro.run.replay import ReplayOptions, replay
    from seam_repro.scoring.loop import score_run_dir

    manifest = smoke_copy(tmp, name)
    run_dir = tmp / out
    replay(load_trusted(manifest), run_dir, ReplayOptions(backend="echo", limit=limit, progress=False))
    score_run_dir(run_dir, fic=False)
    return run_dir


_ECHO_RUNS: dict[str, Path] = {}


@pytest.fixture(scope="session")
def echo_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two real, scored echo runs of the shipped smoke manifest (made once per test session, shared by
    every module that imports this fixture): the whole manifest, and ``--limit 1``. Tests copy them
    before damaging anything."""
    if not _ECHO_RUNS:
        root = tmp_path_factory.mktemp("echo-runs")
        _ECHO_RUNS.update(full=echo_run(root, out="full"), limited=echo_run(root, limit=1, out="limited"))
    return _ECHO_RUNS
