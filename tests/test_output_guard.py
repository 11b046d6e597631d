"""No writing command writes over what it reads (``files.guard_output``, issue 28): each case points
one command's output at one of its inputs, direct or found indirectly (seeds/, a model folder, the
data a manifest records, the run folder's manifest copy), and must get one line, exit 2, and
every input byte for byte as it was, with nothing written."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from trust_helpers import REPO, echo_runs  # noqa: F401 - session fixture

from seam_repro.analysis.submit import make_bundle, write_bundle
from seam_repro.cli import main


def _cli(args: list[object], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["seam-repro", *map(str, args)])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    return int(exc.value.code or 0), (out.out + out.err).strip()


def _tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` (or ``root`` itself) with its sha256: what must not change."""
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.fixture()
def smoke(tmp_path: Path) -> Path:
    """The shipped smoke manifest beside a copy of its fixture data (recorded paths are relative)."""
    shutil.copytree(REPO / "manifests" / "fixtures", tmp_path / "fixtures")
    shutil.copy(REPO / "manifests" / "smoke.json", tmp_path / "smoke.json")
    return tmp_path / "smoke.json"


@pytest.fixture()
def bundle_and_seeds(echo_runs: dict[str, Path], tmp_path: Path,  # noqa: F811
                     monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    shutil.copy(REPO / "seeds" / "smoke.json", seeds / "smoke.json")
    monkeypatch.setenv("SEAM_REPRO_SEEDS", str(seeds))
    bundle = tmp_path / "echo.bundle.json"
    write_bundle(make_bundle(echo_runs["full"]), bundle)
    return bundle, seeds


def _refused(args: list[object], watched: list[Path], created: Path | None, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str], expect: str) -> None:
    before = {k: v for p in watched for k, v in _tree(p).items()}
    code, out = _cli(args, monkeypatch, capsys)
    assert code == 2 and out.startswith("error: ") and len(out.splitlines()) == 1, out
    assert expect in out and "choose a" in out, out
    assert {k: v for p in watched for k, v in _tree(p).items()} == before
    if created is not None:
        assert not created.exists()


# --- replay ---------------------------------------------------------------------------------------
def test_replay_out_equal_to_the_model_folder(smoke: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Old main: `replay --out DIR --model DIR` wrote run.json, prompts and predictions into the
    model folder it read the weights from."""
    model = tmp_path / "my-model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    _refused(["replay", smoke, "--backend", "echo", "--model", model, "--out", model], [model], model / "run.json",
             monkeypatch, capsys, f"lies inside {model}")
    _refused(["replay", smoke, "--backend", "echo", "--model", model, "--out", model / "runs" / "x"], [model],
             model / "runs", monkeypatch, capsys, f"lies inside {model}")


def test_replay_out_holding_the_model_folder_where_it_writes(smoke: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A model folder kept at OUT/predictions (or reached through a link there) would be written into."""
    out = tmp_path / "run"
    model = out / "predictions" / "ckpt"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    _refused(["replay", smoke, "--backend", "echo", "--model", model, "--out", out], [model], out / "run.json",
             monkeypatch, capsys, "would write predictions over")
    elsewhere = tmp_path / "ckpt"
    shutil.move(model, elsewhere)
    (out / "predictions").rmdir()
    (out / "predictions").symlink_to(elsewhere)  # symlinks resolved: the same folder by another name
    _refused(["replay", smoke, "--backend", "echo", "--model", elsewhere, "--out", out], [elsewhere],
             out / "run.json", monkeypatch, capsys, "would write predictions over")


def test_replay_out_inside_the_data_the_manifest_records(smoke: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Old main guarded only --data-dir/--prompts-dir: a run folder inside the data folder a frozen
    manifest records (read because no --data-dir was given) was written there."""
    data = tmp_path / "fixtures" / "musique"
    _refused(["replay", smoke, "--backend", "echo", "--limit", "1", "--out", data / "run"], [data], data / "run",
             monkeypatch, capsys, "lies inside")


# --- score ----------------------------------------------------------------------------------------
def test_score_out_that_writes_into_the_run_folder(echo_runs: dict[str, Path], tmp_path: Path,  # noqa: F811
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """Old main: `score runs/echo -o runs` wrote runs/echo/summary.json (the model's slug is the run
    folder's name) into the run folder it was scoring."""
    run = tmp_path / "echo"
    shutil.copytree(echo_runs["full"], run)
    slugs = [p.name for p in (run / "predictions").iterdir()]
    assert slugs == ["echo"]
    _refused(["score", run, "-o", tmp_path, "--no-fic"], [run], run / "summary.json", monkeypatch, capsys,
             "would write echo over")


# --- diff, report: seeds/ is an input ------------------------------------------------------------
def test_diff_json_onto_the_seeds_file_it_checks_with(bundle_and_seeds: tuple[Path, Path],
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Old main: `diff BUNDLE --json seeds/smoke.json` checked the bundle against that seeds file,
    then overwrote it with the diff."""
    bundle, seeds = bundle_and_seeds
    _refused(["diff", bundle, "--allow-protocol-mismatch", "--json", seeds / "smoke.json"], [seeds, bundle], None,
             monkeypatch, capsys, f"lies inside {seeds}")
    _refused(["diff", bundle, "--allow-protocol-mismatch", "--json", bundle], [seeds, bundle], None,
             monkeypatch, capsys, "is one of this command's inputs")


def test_report_out_over_seeds_or_its_inputs(bundle_and_seeds: tuple[Path, Path], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    bundle, seeds = bundle_and_seeds
    _refused(["report", bundle, "--out", seeds], [seeds, bundle], seeds / "report.json", monkeypatch, capsys,
             f"lies inside {seeds}")
    out = tmp_path / "rep"
    out.mkdir()
    inside = out / "report.json"  # an input where the report writes
    shutil.copy(bundle, inside)
    _refused(["report", inside, "--out", out], [inside, seeds], out / "report.md", monkeypatch, capsys,
             "would write report.json over")


# --- fetch, submit, prompts, freeze, sample: the guards they had, still in force -------------------
def test_fetch_cache_holding_the_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Old main refused a --cache inside --data-dir but not a --data-dir inside the --cache, where
    fetch copies and unpacks files over what it reads."""
    cache = tmp_path / "cache"
    data = cache / "offline"
    shutil.copytree(REPO / "manifests" / "fixtures" / "prompts", data / "prompts")
    _refused(["fetch", "--only", "prompts", "--cache", cache, "--data-dir", data, "--no-progress"], [data], None,
             monkeypatch, capsys, f"holds {data}")
    _refused(["fetch", "--only", "prompts", "--cache", data / "c", "--data-dir", data, "--no-progress"], [data],
             data / "c", monkeypatch, capsys, f"lies inside {data}")


@pytest.mark.parametrize("case", ["submit", "prompts", "freeze", "sample", "merge"])
def test_other_writing_commands_refuse_their_inputs(case: str, echo_runs: dict[str, Path],  # noqa: F811
                                                   smoke: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(echo_runs["full"], run)
    cfg = tmp_path / "smoke.config.json"
    shutil.copy(REPO / "manifests" / "smoke.config.json", cfg)
    paper = tmp_path / "paper.json"  # unfrozen
    shutil.copy(REPO / "manifests" / "paper.json", paper)
    cases: dict[str, Callable[[], tuple[list[object], list[Path], str]]] = {
        "submit": lambda: (["submit", run, "--out", run / "run.json"], [run], "lies inside"),
        "prompts": lambda: (["prompts", smoke, "-o", tmp_path / "fixtures" / "musique" / ".." / ".." / "smoke.json"],
                            [smoke], "is one of this command's inputs"),
        "freeze": lambda: (["freeze", paper, "-o", paper], [paper], "is one of this command's inputs"),
        "sample": lambda: (["sample", cfg, "-o", tmp_path / "fixtures" / "prompts" / "ECB.json", "--data-dir",
                            tmp_path / "fixtures"], [tmp_path / "fixtures"], "lies inside"),
        "merge": lambda: (["merge", run, "--out", run], [run], "is one of this command's inputs"),
    }
    args, watched, expect = cases[case]()
    _refused(args, watched, None, monkeypatch, capsys, expect)


def test_a_json_written_beside_seeds_is_not_mistaken_for_an_input(bundle_and_seeds: tuple[Path, Path],
                                                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The guard refuses only what overlaps an input: a --json next to seeds/ is written."""
    bundle, seeds = bundle_and_seeds
    code, out = _cli(["diff", bundle, "--allow-protocol-mismatch", "--json", tmp_path / "d.json"], monkeypatch,
                     capsys)
    assert code in (0, 1, 3, 4), out  # 4: nothing compared (echo is no paper model)
    assert json.loads((tmp_path / "d.json").read_text())
