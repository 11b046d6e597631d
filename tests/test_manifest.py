"""Manifest round trip, sealing, verify (exit codes, mismatch listing, diffs) and freeze."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from seam_repro.cli import cli
from seam_repro.errors import HashMismatchError, ManifestError
from seam_repro.manifest.format import load_manifest, seal, write_manifest
from seam_repro.manifest.trust import load_trusted
from seam_repro.manifest.verify import verify_manifest

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "manifests" / "fixtures"
SHARED_PROMPTS = REPO.parent / "shared" / "seam" / "upstream-6ad83f4" / "prompts"
LAYOUT = {"ECB": "ecb", "FuseReviews": "fusereviews", "SciCo": "scico", "MultiNews": "multinews",
          "MusiQue": "musique", "OpenASP": "openasp"}


def data_dir(tmp: Path) -> Path:
    root = tmp / "data"
    for name, folder in LAYOUT.items():
        shutil.copytree(FIX / folder, root / name)
    return root


def small_config(tmp: Path, **over) -> Path:
    cfg = {"random_seed": 7, "num_different_runs": 2, "num_demonstrations": 2, "max_num_samples": 2,
           "datasets": [{"name": n, "split_name": s} for n, s in
                        [("ECB", "test_events"), ("MusiQue", "val"), ("FuseReviews", "validation")]], **over}
    path = tmp / "config.json"
    path.write_text(json.dumps(cfg))
    return path


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, [str(a) for a in args])
    if res.exception and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.output


@pytest.fixture()
def sampled(tmp_path):
    dd = data_dir(tmp_path)
    out = tmp_path / "m.json"
    code, output = run("sample", small_config(tmp_path), "-o", out, "--data-dir", dd,
                       "--prompts-dir", FIX / "prompts", "--store-prompts")
    assert code == 0, output
    return out, dd


def test_sample_then_verify_ok_and_manifest_untouched(sampled):
    out, dd = sampled
    before = out.read_bytes()
    code, output = run("verify", out, "--data-dir", dd, "--prompts-dir", FIX / "prompts")
    assert code == 0 and output.startswith("OK ") and "12 prompts in 6" in output
    assert out.read_bytes() == before
    m = json.loads(before)
    assert m["schema_version"] == 2 and m["profile"] == "upstream" and m["frozen"]
    assert [(r["dataset"], r["run"]) for r in m["runs"]] == [("ECB", 0), ("ECB", 1), ("MusiQue", 0),
                                                            ("MusiQue", 1), ("FuseReviews", 0), ("FuseReviews", 1)]


def test_serialization_is_canonical_and_deterministic(sampled, tmp_path):
    out, dd = sampled
    again = tmp_path / "again.json"
    run("sample", small_config(tmp_path), "-o", again, "--data-dir", dd, "--prompts-dir", FIX / "prompts")
    a, b = json.loads(out.read_text()), json.loads(again.read_text())
    a.pop("provenance"), b.pop("provenance")
    assert a == b


def _sealed_bytes(path: Path) -> bytes:
    m = json.loads(path.read_text())
    m.pop("provenance")
    return json.dumps(m, sort_keys=True, indent=1).encode()


def test_two_freezes_in_different_folders_have_one_digest(tmp_path):
    """Old main: the digest covered the command line and the paths relative to -o, so two labs
    freezing the same inputs got different digests and could never be compared."""
    outs = []
    for k, sub in enumerate(("lab-a", "lab-b/deeper/still")):
        root = tmp_path / sub
        root.mkdir(parents=True)
        dd, prompts = data_dir(root), root / "prompts"
        shutil.copytree(FIX / "prompts", prompts)
        out = root / (f"frozen-{k}.json" if k == 0 else "manifests/frozen.json")
        code, output = run("sample", small_config(root), "-o", out, "--data-dir", dd, "--prompts-dir", prompts,
                           *(["--store-prompts"] if k else []))
        assert code == 0, output
        written = json.loads(out.read_text())
        assert f"digest {written['digest']}" in output  # prints the digest it wrote
        outs.append(out)
    a, b = (json.loads(p.read_text()) for p in outs)
    assert a["digest"] == b["digest"]
    assert _sealed_bytes(outs[0]) == _sealed_bytes(outs[1])
    assert a["provenance"]["paths"] != b["provenance"]["paths"] and "prompt_store" in b["provenance"]
    for p in outs:  # each still finds its own data through its own provenance paths
        assert verify_manifest(load_trusted(p)).ok


def test_freeze_store_prompts_prints_the_digest_it_writes(tmp_path):
    dd = data_dir(tmp_path)
    code, output = run("sample", small_config(tmp_path), "-o", tmp_path / "u.json", "--unfrozen")
    assert code == 0, output
    m = json.loads((tmp_path / "u.json").read_text())
    m["sources"]["prompts"] = {}  # no pins: the fixture prompt files stand in for upstream's
    write_manifest(seal(m), tmp_path / "u.json")
    code, output = run("freeze", tmp_path / "u.json", "-o", tmp_path / "f.json", "--data-dir", dd,
                       "--prompts-dir", FIX / "prompts", "--store-prompts")
    assert code == 0, output
    frozen = load_manifest(tmp_path / "f.json")
    assert f"digest {frozen['digest']}" in output
    assert frozen["provenance"]["frozen_from"] == seal(m)["digest"]
    from seam_repro.manifest.format import protocol_digest

    assert frozen["config"] == m["config"]  # the unfrozen config is kept as written (notes, aliases)
    pinned_as_unfrozen = {**frozen, "sources": {**frozen["sources"], "prompts": m["sources"]["prompts"]}}
    assert protocol_digest(pinned_as_unfrozen) == protocol_digest(m)
    # freezing is sampling: the same content as a direct `sample` of the same config
    code, _ = run("sample", small_config(tmp_path), "-o", tmp_path / "direct.json", "--data-dir", dd,
                  "--prompts-dir", FIX / "prompts")
    assert load_manifest(tmp_path / "direct.json")["digest"] == frozen["digest"]


def test_provenance_is_unsealed_but_everything_else_is(sampled):
    out, _ = sampled
    m = json.loads(out.read_text())
    m["provenance"]["host"] = "elsewhere"
    out.write_text(json.dumps(m))
    assert load_manifest(out)["digest"] == m["digest"]
    m["config"]["generation"]["temperature"] = 0.0
    out.write_text(json.dumps(m))
    with pytest.raises(ManifestError, match="field 'digest'"):
        load_manifest(out)


def test_old_layout_is_refused_with_a_reason(tmp_path):
    p = tmp_path / "old.json"
    p.write_text(json.dumps({"schema_version": 1, "digest": "0" * 64}))
    with pytest.raises(ManifestError, match="schema_version.*old layout"):
        load_manifest(p)


def test_hand_edit_breaks_the_digest(sampled):
    out, _ = sampled
    m = json.loads(out.read_text())
    m["runs"][0]["doc_order"].reverse()
    out.write_text(json.dumps(m))
    with pytest.raises(ManifestError, match="field 'digest'"):
        load_manifest(out)


def test_changed_prompt_hash_is_listed_with_a_unified_diff(sampled):
    out, dd = sampled
    m = json.loads(out.read_text())
    inst = m["runs"][2]["instances"][1]
    inst["prompt_sha256"] = "0" * 64
    write_manifest(seal(m), out)
    # make the stored text differ too, so the diff has content
    import gzip
    store = out.with_name("m.prompts.jsonl.gz")
    lines = gzip.open(store, "rt").read().splitlines()
    rows = [json.loads(x) for x in lines]
    for r in rows:
        if r["dataset"] == "MusiQue" and r["run"] == 0 and r["instance_id"] == inst["id"]:
            r["prompt"] = r["prompt"].replace("*Answer*:", "*Answer* :", 1)
    store.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    code, output = run("verify", out, "--data-dir", dd, "--prompts-dir", FIX / "prompts")
    assert code == 1
    assert f"MusiQue run 0 instance {inst['id']}: prompt_sha256 differs" in output
    assert "--- recorded MusiQue run 0" in output and "+++ regenerated" in output


def test_forged_run_prompt_digest_is_reported_by_verify(sampled):
    """Old main: verify compared only the overall prompt_digest, so a run's forged digest (resealed)
    passed; replay now refuses such a manifest (trust.trusted) and verify lists it as drift."""
    out, dd = sampled
    m = json.loads(out.read_text())
    m["runs"][1]["prompt_digest"] = "cd" * 32
    write_manifest(seal(m), out)
    code, output = run("verify", out, "--data-dir", dd, "--prompts-dir", FIX / "prompts")
    assert code == 1
    assert f"{m['runs'][1]['dataset']} run {m['runs'][1]['run']}" in output
    assert "prompt_digest differs from its instances' prompt_sha256" in output


def test_changed_choice_is_reported_as_drift_from_the_seed(sampled):
    out, dd = sampled
    m = json.loads(out.read_text())
    m["runs"][0]["paraphrase_index"] = (m["runs"][0]["paraphrase_index"] + 1) % 4
    write_manifest(seal(m), out)
    report = verify_manifest(load_trusted(out), data_dir=dd, prompts_dir=FIX / "prompts")
    assert not report.ok
    assert any(mm.what.startswith("paraphrase_index") for mm in report.mismatches)
    assert any("prompt_sha256" in mm.what for mm in report.mismatches)


def test_modified_data_file_lists_every_affected_instance_with_a_diff(sampled):
    """Old main: one 'sha256 mismatch' line and exit 2; now the file, every affected instance and
    a unified diff of the first, exit 1, and the same as JSON."""
    out, dd = sampled
    f = dd / "MusiQue" / "val.jsonl"
    f.write_text(f.read_text().replace("?", "？"))
    report = verify_manifest(load_trusted(out), data_dir=dd, prompts_dir=FIX / "prompts")
    assert not report.ok
    assert any("data file val.jsonl: sha256" in str(m) for m in report.sources)
    affected = report.affected
    assert affected and all(k[0] == "MusiQue" for k in affected)
    recorded = [(r["dataset"], r["run"], i["id"]) for r in json.loads(out.read_text())["runs"]
                for i in r["instances"] if r["dataset"] == "MusiQue"]
    assert set(affected) <= set(recorded) and len(affected) >= 2
    code, output = run("verify", out, "--data-dir", dd, "--prompts-dir", FIX / "prompts")
    assert code == 1 and "changed source: MusiQue: data file val.jsonl" in output
    assert "--- recorded MusiQue run" in output and "+++ regenerated" in output
    for k in affected:
        assert f"{k[0]} run {k[1]} instance {k[2]}: prompt_sha256 differs" in output
    code, output = run("verify", out, "--data-dir", dd, "--prompts-dir", FIX / "prompts", "--json")
    doc = json.loads(output)
    assert code == 1 and doc["ok"] is False and sorted(map(tuple, doc["affected"])) == sorted(affected)
    assert doc["first_diff"].startswith("--- recorded MusiQue")


def test_modified_prompt_file_is_listed_too(sampled, tmp_path):
    out, dd = sampled
    prompts = tmp_path / "p"
    shutil.copytree(FIX / "prompts", prompts)
    f = prompts / "ECB.json"
    doc = json.loads(f.read_text())
    doc["prompts"] = [{**p, "instructions": p["instructions"] + " Be brief."} for p in doc["prompts"]]
    f.write_text(json.dumps(doc))
    code, output = run("verify", out, "--data-dir", dd, "--prompts-dir", prompts)
    assert code == 1 and "changed source: ECB: prompt file" in output
    assert "ECB run 0 instance" in output and "+++ regenerated" in output


def test_data_missing_an_instance_still_renders_the_rest(sampled):
    out, dd = sampled
    m = json.loads(out.read_text())
    gone = m["runs"][2]["instances"][0]["id"]  # a MusiQue instance
    f = dd / "MusiQue" / "val.jsonl"
    kept = [ln for ln in f.read_text().splitlines() if json.loads(ln).get("id") != gone.split("#")[0]]
    f.write_text("\n".join(kept) + "\n")
    report = verify_manifest(load_trusted(out), data_dir=dd, prompts_dir=FIX / "prompts")
    assert any(mm.instance_id == gone and "cannot be rendered" in mm.what for mm in report.mismatches)
    assert report.n_instances == 12 - sum("cannot be rendered" in mm.what for mm in report.mismatches) < 12


def test_missing_data_and_bad_profile_are_one_line_errors(tmp_path):
    code, output = run("sample", small_config(tmp_path), "-o", tmp_path / "x.json", "--profile", "nope")
    assert code == 2 and "nope" in output
    from seam_repro.cli import main  # noqa: F401 - main converts domain errors to exit 2
    from seam_repro.errors import MissingDataError

    with pytest.raises(MissingDataError, match="--data-dir"):
        CliRunner().invoke(cli, ["sample", str(small_config(tmp_path)), "-o", str(tmp_path / "x.json")],
                           catch_exceptions=False)


def test_paper_manifest_is_unfrozen_and_replay_paths_refuse_it():
    m = load_manifest(REPO / "manifests" / "paper.json")
    assert not m["frozen"] and m["config"]["max_instances"] == 100 and m["profile"] == "upstream"
    assert m["config"]["max_instances_key"] == "max_num_samples"
    assert len(m["config"]["models"]) == 7
    with pytest.raises(ManifestError, match="not frozen"):
        load_trusted(REPO / "manifests" / "paper.json")


def test_freeze_enforces_pinned_upstream_prompt_hashes(tmp_path):
    dd = data_dir(tmp_path)
    with pytest.raises(HashMismatchError, match="prompt file"):
        CliRunner().invoke(cli, ["freeze", str(REPO / "manifests" / "paper.json"), "-o", str(tmp_path / "f.json"),
                                 "--data-dir", str(dd), "--prompts-dir", str(FIX / "prompts")],
                           catch_exceptions=False)
    if not SHARED_PROMPTS.exists():
        pytest.skip("upstream prompt files absent")
    code, output = run("freeze", REPO / "manifests" / "paper.json", "-o", tmp_path / "f.json", "--data-dir", dd,
                       "--prompts-dir", SHARED_PROMPTS)
    assert code == 0, output
    frozen = load_manifest(tmp_path / "f.json")
    assert frozen["frozen"] and len(frozen["runs"]) == 60
    code, output = run("verify", tmp_path / "f.json", "--data-dir", dd, "--prompts-dir", SHARED_PROMPTS)
    assert code == 0, output


def test_prompts_command_writes_records(sampled, tmp_path):
    out, dd = sampled
    dest = tmp_path / "p.jsonl"
    code, _ = run("prompts", out, "-o", dest, "--data-dir", dd, "--prompts-dir", FIX / "prompts")
    assert code == 0
    rows = [json.loads(x) for x in dest.read_text().splitlines()]
    assert len(rows) == 12
    from seam_repro.hashing import sha256_text

    for r in rows:
        assert {"dataset", "run", "instance_id", "prompt", "prompt_sha256", "target", "gen_seed"} <= set(r)
        assert sha256_text(r["prompt"]) == r["prompt_sha256"]


def test_prompts_bytes_are_json_dumps_of_the_rendered_records(sampled, tmp_path):
    """The spliced UTF-8 writer (records_jsonl) against the plain way: json.dumps of each record
    render_records gives (prompt joined as text), in the file, on stdout and in the prompt store."""
    import gzip

    from seam_repro.manifest.prompts import render_records

    out, dd = sampled
    records = render_records(load_trusted(out), data_dir=dd, prompts_dir=FIX / "prompts")
    plain = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records).encode("utf-8")
    code, _ = run("prompts", out, "-o", tmp_path / "p.jsonl", "--data-dir", dd, "--prompts-dir", FIX / "prompts")
    assert code == 0 and (tmp_path / "p.jsonl").read_bytes() == plain
    res = CliRunner().invoke(cli, ["prompts", str(out), "-o", "-", "--data-dir", str(dd),
                                   "--prompts-dir", str(FIX / "prompts")])
    assert res.exit_code == 0 and res.stdout_bytes == plain
    assert gzip.decompress(out.with_name("m.prompts.jsonl.gz").read_bytes()) == plain


def test_allow_unfrozen_renders_what_freeze_would_freeze(tmp_path):
    if not SHARED_PROMPTS.exists():
        pytest.skip("upstream prompt files absent")
    from seam_repro.manifest.prompts import render_records

    dd = data_dir(tmp_path)
    paper = REPO / "manifests" / "paper.json"
    with pytest.raises(ManifestError, match="not frozen"):
        render_records(load_trusted(paper, allow_unfrozen=True), data_dir=dd, prompts_dir=SHARED_PROMPTS)
    loose = render_records(load_trusted(paper, allow_unfrozen=True), data_dir=dd, prompts_dir=SHARED_PROMPTS,
                           allow_unfrozen=True)
    run("freeze", paper, "-o", tmp_path / "f.json", "--data-dir", dd, "--prompts-dir", SHARED_PROMPTS)
    frozen = render_records(load_trusted(tmp_path / "f.json"), data_dir=dd, prompts_dir=SHARED_PROMPTS)
    assert [r["prompt_sha256"] for r in loose] == [r["prompt_sha256"] for r in frozen]


def test_a_dataset_that_cannot_be_loaded_does_not_stop_the_others(sampled):
    out, dd = sampled
    shutil.rmtree(dd / "FuseReviews")
    (dd / "FuseReviews").mkdir()  # present but empty: the loader refuses it
    report = verify_manifest(load_trusted(out), data_dir=dd, prompts_dir=FIX / "prompts")
    assert any(m.dataset == "FuseReviews" and "cannot be loaded" in m.what for m in report.sources)
    fuse = [m for m in report.mismatches if m.dataset == "FuseReviews" and m.instance_id]
    assert len(fuse) == 4 and report.n_instances == 8  # ECB and MusiQue still rendered and compared
    assert not [m for m in report.mismatches if m.dataset in ("ECB", "MusiQue")]
