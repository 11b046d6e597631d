"""One --data-dir layout for every command: dataset folders under upstream and Hugging Face names,
`datasets check`, sampling from such a folder, and `fetch` trying every source then naming the
offline route."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from seam_repro.cli import cli
from seam_repro.datasets.layout import find_dataset_dir
from seam_repro.errors import MissingDataError
from seam_repro.sources.check import check_data_dir
from seam_repro.sources.resolve import resolve_data_path
from seam_repro.specs import load_suite

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "manifests" / "fixtures"
TEST_FIX = REPO / "tests" / "fixtures"  # test-only inputs (raw MultiNews) stay beside the tests
CANONICAL = {"ECB": "ecb", "FuseReviews": "fusereviews", "SciCo": "scico", "MultiNews": "multinews_raw",
             "MusiQue": "musique", "OpenASP": "openasp"}


def fixture(folder: str) -> Path:
    return FIX / folder if (FIX / folder).is_dir() else TEST_FIX / folder


def mixed_layout(root: Path) -> dict[str, Path]:
    """The six datasets the way they arrive from elsewhere: the upstream Drive zip's lower-case
    folders (nested one level), a `huggingface-cli download` folder, the HF cache, and HF repo
    files under data/ and default/ with HF shard names."""
    where = {
        "ECB": root / "seam-data" / "ecb",
        "MusiQue": root / "seam-data" / "musique",
        "OpenASP": root / "seam-data" / "openasp",
        "MultiNews": root / "multi_news" / "data",
        "FuseReviews": root / "datasets--lovodkin93--FuseReviews" / "snapshots" / "8623afed" ,
        "SciCo": root / "allenai" / "scico" / "default",
    }
    for name, dest in where.items():
        shutil.copytree(fixture(CANONICAL[name]), dest)
    for f in sorted(where["SciCo"].iterdir()):  # HF file names: default/scico-<split>.jsonl
        f.rename(f.with_name(f"scico-{f.name}"))
    return where


def test_upstream_and_hf_layouts_are_found(tmp_path: Path) -> None:
    where = mixed_layout(tmp_path)
    for name, dest in where.items():
        assert find_dataset_dir(tmp_path, name) == dest, name
    # the canonical DIR/<name> still wins when present
    shutil.copytree(FIX / "musique", tmp_path / "MusiQue")
    assert find_dataset_dir(tmp_path, "MusiQue") == tmp_path / "MusiQue"


def test_check_reports_split_sizes_equal_to_direct_loading(tmp_path: Path) -> None:
    mixed_layout(tmp_path)
    suite = load_suite("seam")
    checks = {c.name: c for c in check_data_dir(tmp_path)}
    assert all(c.ok for c in checks.values()), {n: c.missing for n, c in checks.items()}
    for name, folder in CANONICAL.items():
        direct = suite.spec(name).load(fixture(folder))
        assert checks[name].splits == {k: len(v) for k, v in direct.splits.items()}, name


def test_check_cli_names_what_is_missing(tmp_path: Path) -> None:
    where = mixed_layout(tmp_path)
    shutil.rmtree(tmp_path / "datasets--lovodkin93--FuseReviews")
    (where["MusiQue"] / "val.jsonl").rename(where["MusiQue"] / "dev.jsonl")
    with open(where["OpenASP"] / "test.jsonl", "a") as fh:
        fh.write("{not json\n")
    res = CliRunner().invoke(cli, ["datasets", "check", "--data-dir", str(tmp_path), "--prompts-dir",
                                   str(FIX / "prompts")], standalone_mode=False)
    assert res.exception is None and res.return_value == 1, res.output
    blocks = {b.split()[0]: b for b in res.output.split("\n") if b and not b.startswith(" ")}
    out = res.output
    assert blocks["FuseReviews"].endswith("MISSING") and "holding train.csv, dev.csv, test.csv" in out
    assert blocks["MusiQue"].endswith("MISSING") and "split 'val' (the one evaluated); found dev, test, train" in out
    assert blocks["OpenASP"].endswith("MISSING") and "readable data: " in out and "not valid JSON" in out
    assert blocks["SciCo"].endswith("ok") and f"found:   {where['SciCo']}" in out
    assert "splits:  test_events" not in out and "test_events 2 (evaluated)" in out
    assert f"prompts: {FIX / 'prompts' / 'ECB.json'}" in out and "3 of 6 datasets complete" in out


def test_check_mini_suite_fixtures() -> None:
    checks = check_data_dir(FIX / "zeroscrolls", "zeroscrolls-mini")
    assert [(c.name, c.ok, c.folder) for c in checks] == [("QMSumMini", True, FIX / "zeroscrolls" / "qmsum"),
                                                         ("SpaceDigestMini", True, FIX / "zeroscrolls" / "spacedigest")]


def test_replay_and_freeze_resolution_uses_the_layout(tmp_path: Path) -> None:
    where = mixed_layout(tmp_path)
    assert resolve_data_path("SciCo", None, tmp_path, tmp_path) == where["SciCo"].resolve()
    with pytest.raises(MissingDataError, match=r"OpenASP: --data-dir .* has no OpenASP data; expected a folder "
                                               r"named OpenASP, openasp, open_asp.*datasets check --data-dir"):
        resolve_data_path("OpenASP", None, tmp_path / "allenai", tmp_path)


def test_sampling_from_upstream_layout_equals_canonical_paths(tmp_path: Path) -> None:
    """Same data in the mixed layout gives the same draws and prompts as the config's own paths."""
    config = REPO / "manifests" / "smoke.config.json"
    cfg = json.loads(config.read_text())
    cfg["datasets"] = [{k: v for k, v in d.items() if k != "path"} for d in cfg["datasets"]]
    data = tmp_path / "data"
    mixed_layout(data)
    shutil.rmtree(data / "multi_news")  # the smoke config reads the HF-table fixture for MultiNews
    shutil.copytree(FIX / "multinews", data / "multi_news" / "data")
    shutil.rmtree(data / "allenai" / "scico")  # and plain split names for SciCo
    shutil.copytree(FIX / "scico", data / "allenai" / "scico" / "default")
    bare = tmp_path / "bare.config.json"
    bare.write_text(json.dumps(cfg))
    runner = CliRunner()
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    res = runner.invoke(cli, ["sample", str(config), "-o", str(a), "--prompts-dir", str(FIX / "prompts")])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["sample", str(bare), "-o", str(b), "--prompts-dir", str(FIX / "prompts"),
                              "--data-dir", str(data)])
    assert res.exit_code == 0, res.output
    ma, mb = json.loads(a.read_text()), json.loads(b.read_text())
    # same draws, same rendered prompts, same data files (paths and the command line may differ)
    assert ma["runs"] == mb["runs"] and ma["prompt_digest"] == mb["prompt_digest"]
    assert {n: d["files"] for n, d in ma["sources"]["data"].items()} == \
        {n: d["files"] for n, d in mb["sources"]["data"].items()}


def test_fetch_tries_every_source_and_names_the_offline_route(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import seam_repro.sources.lock as sources

    good = b'{"prompts": [], "demonstrations": []}\n'
    local = tmp_path / "offline"
    (local / "SciCo").mkdir(parents=True)
    (local / "SciCo" / "test.parquet").write_bytes(good)
    lock = sources.parse_lock({"schema_version": 1, "sources": [
        {"name": "first-missing", "kind": "url", "provides": {"prompts": "ECB"},
         "files": [{"url": "http://127.0.0.1:9/ECB.json", "sha256": None, "dest": "prompts/ECB.json"}]},
        {"name": "hf-scico", "kind": "hf", "provides": {"data": "SciCo"}, "repo_id": "allenai/scico",
         "revision": "r", "files": [{"filename": "default/scico-test.parquet",
                                     "sha256": hashlib.sha256(good).hexdigest(), "dest": "data/SciCo/test.parquet"}]},
    ]}, "test-lock")
    monkeypatch.setattr(sources, "load_lock", lambda path=None: lock)
    res = CliRunner().invoke(cli, ["fetch", "--data-dir", str(local), "--cache", str(tmp_path / "c"), "--no-progress"],
                             standalone_mode=False)
    assert res.exception is None and res.return_value == 1
    text = res.output  # click >= 8.2: stdout and stderr interleaved
    assert "first-missing          FAILED" in text
    assert "hf-scico               verified" in text  # tried after the first failure, found in DIR/SciCo/
    assert "1 source(s) failed:" in text and "first-missing: --data-dir" in text and "offline route:" in text
    assert (tmp_path / "c" / "data" / "SciCo" / "test.parquet").read_bytes() == good


@pytest.mark.parametrize("damage", ["truncated", "no prompts list"])
def test_check_refuses_a_prompt_file_that_is_not_whole(tmp_path: Path, damage: str) -> None:
    """Old main: `datasets check` called a prompt file that was cut short (not JSON complete) or
    lacked its 'prompts' list "found" and exited 0; sample and replay then failed on it."""
    mixed_layout(tmp_path / "data")
    prompts = tmp_path / "prompts"
    shutil.copytree(FIX / "prompts", prompts)
    target = prompts / load_suite("seam").spec("SciCo").prompt_file
    text = target.read_text()
    target.write_text(text[: len(text) // 2] if damage == "truncated" else json.dumps({"demonstrations": []}))
    res = CliRunner().invoke(cli, ["datasets", "check", "--data-dir", str(tmp_path / "data"), "--prompts-dir",
                                   str(prompts)], standalone_mode=False)
    assert res.exception is None and res.return_value == 1, res.output
    blocks = {b.split()[0]: b for b in res.output.split("\n") if b and not b.startswith(" ")}
    assert blocks["SciCo"].endswith("MISSING") and f"prompts: {target}" not in res.output
    bad = [line for line in res.output.splitlines() if "readable prompt file" in line]
    assert len(bad) == 1 and str(target) in bad[0], res.output
    assert ("not valid JSON" in bad[0]) if damage == "truncated" else ("'prompts'" in bad[0])
    assert "5 of 6 datasets complete" in res.output
