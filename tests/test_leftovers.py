"""What a killed run leaves (hidden temporaries beside its outputs, its scratch folder in $TMPDIR)
is removed by the next run of the same command, and only that: entries named with the owner's host
and pid are removed once that process is gone, unowned ones from an older kit once a day old;
a live process's temporaries, and names that are not ours, stay (issue 28)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from test_kill_drills import run_forked

from seam_repro.cli import main
from seam_repro.files.atomic import (
    LEGACY_TEMP_AGE_S,
    _host_tag,
    atomic_write_text,
    owner_token,
    sweep_leftovers,
)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture()
def live() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc.pid
    proc.kill()
    proc.wait()


def _token(pid: int, host: str | None = None) -> str:
    return f"h{host or _host_tag()}p{pid}-{os.urandom(6).hex()}"


def _plant(folder: Path, prefix: str, suffix: str, live_pid: int, *, is_dir: bool) -> dict[str, bool]:
    """Leftovers of every kind beside a target: name -> whether the next run must remove it."""
    old = time.time() - LEGACY_TEMP_AGE_S - 60
    names = {
        f"{prefix}{_token(_dead_pid())}{suffix}": True,            # ours, owner gone
        f"{prefix}{_token(live_pid)}{suffix}": False,              # a live process's
        f"{prefix}{_token(_dead_pid(), 'abcdef')}{suffix}": False,  # another host's, recent
        f"{prefix}{os.urandom(6).hex() if not is_dir else 'ab_cd123'}{suffix}": False,  # older kit's, recent
        f"{prefix}{'0123456789ab' if not is_dir else 'zz_old12'}{suffix}": True,  # older kit's, a day old
        f"{prefix}notours{suffix}": False,                         # not a name we make
    }
    for i, name in enumerate(names):
        p = folder / name
        if is_dir:
            p.mkdir()
            (p / "x.jsonl").write_text("partial\n")
        else:
            p.write_text("partial")
        if i == 4:
            os.utime(p, (old, old))
    return names


def _assert_swept(folder: Path, planted: dict[str, bool]) -> None:
    present = {p.name for p in folder.iterdir()}
    assert {n for n, gone in planted.items() if gone} & present == set(), sorted(present)
    assert {n for n, gone in planted.items() if not gone} <= present, sorted(present)


def test_atomic_write_removes_what_a_killed_write_of_the_same_file_left(tmp_path: Path, live: int) -> None:
    planted = _plant(tmp_path, ".summary.json.", ".tmp", live, is_dir=False)
    other = tmp_path / f".other.json.{_token(_dead_pid())}.tmp"  # another file's: its own next write
    other.write_text("x")
    atomic_write_text(tmp_path / "summary.json", "{}")
    _assert_swept(tmp_path, planted)
    assert other.exists() and (tmp_path / "summary.json").read_text() == "{}"
    assert not [p for p in tmp_path.iterdir() if f"p{os.getpid()}-" in p.name]  # its own was renamed into place


def test_merge_killed_then_rerun_leaves_no_partial_folder(tmp_path: Path, live: int) -> None:
    """Old main: a merge killed before its rename left `.out.partial-*` for good; each retry added one."""
    from test_bad_inputs import build_pipeline

    w = build_pipeline(tmp_path / "w")
    args = ["merge", w / "s0", w / "s1", "--out", w / "out"]
    killed, _ = run_forked(args, "replace", 1)
    assert killed
    left = [p.name for p in w.iterdir() if p.name.startswith(".out.partial-")]
    assert len(left) == 1 and f"p{os.getpid()}-" not in left[0], left
    planted = _plant(w, ".out.partial-", "", live, is_dir=True)
    killed, code = run_forked(args)
    assert not killed and code == 0
    _assert_swept(w, {**planted, left[0]: True})
    assert (w / "out" / "run.json").is_file()


def test_submit_removes_its_scratch_folders_that_a_kill_left_in_tmpdir(tmp_path: Path, live: int,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Old main: every submit killed while re-scoring left a `seam-repro-submit-*` folder in $TMPDIR."""
    from test_bad_inputs import build_pipeline

    w = build_pipeline(tmp_path / "w")
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    killed, _ = run_forked(["submit", w / "run", "--out", w / "b2.json"], "replace", 1)
    assert killed
    left = [p.name for p in scratch.iterdir()]
    assert len(left) == 1 and left[0].startswith("seam-repro-submit-h"), left
    planted = _plant(scratch, "seam-repro-submit-", "", live, is_dir=True)
    (scratch / "seam-repro-inputs-keep").mkdir()  # another command's: not submit's to remove
    with pytest.raises(SystemExit) as exc:
        main(["submit", str(w / "run"), "--out", str(w / "b2.json")])
    assert exc.value.code in (0, None)
    _assert_swept(scratch, {**planted, left[0]: True})
    assert (scratch / "seam-repro-inputs-keep").is_dir()


def test_sweep_keeps_unreadable_folders_and_foreign_names(tmp_path: Path) -> None:
    assert sweep_leftovers(tmp_path / "missing", ".x.") == []
    name = f".x.{owner_token()}.tmp"  # this process: alive
    (tmp_path / name).write_text("")
    assert sweep_leftovers(tmp_path, ".x.", ".tmp") == [] and (tmp_path / name).exists()
