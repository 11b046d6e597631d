"""Kill drills: SIGKILL at every kind of write boundary of replay, score, merge, freeze and submit.

A forked child runs the command with ``os.fsync`` or ``os.replace`` wrapped so that the N-th call
kills the process with SIGKILL (no cleanup handlers run, as with the OOM killer or ``kill -9``):
before an fsync the bytes of a temporary file are written but not yet durable or renamed; before
a replace the file is complete but not yet in place. N sweeps the calls a clean run makes. After
each kill every output must be complete (byte-identical to an uninterrupted run's) or absent,
never torn; the inputs must be unchanged; and running the same command again must succeed and
give the uninterrupted result (for replay: every instance exactly once, same outputs).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from seam_repro.cli import main

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")

COUNT_FILE = "calls.txt"


def _child(args: list[str], hook: str | None, kill_at: int | None, count_to: Path | None) -> None:
    """Body of the forked child: never returns."""
    code = 0
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        if hook is not None:
            real = getattr(os, hook)
            calls = [0]

            def wrapped(*a: object, **k: object) -> object:
                calls[0] += 1
                if kill_at is not None and calls[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                return real(*a, **k)

            setattr(os, hook, wrapped)
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if count_to is not None and hook is not None:
            count_to.write_text(str(calls[0]))
    except BaseException:  # pragma: no cover - reported through the exit status
        code = 99
    os._exit(code)


def run_forked(args: list[str], hook: str | None = None, kill_at: int | None = None,
               count_to: Path | None = None) -> tuple[bool, int]:
    """(killed by SIGKILL, exit status)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        _child(args, hook, kill_at, count_to)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True, -1
    return False, os.WEXITSTATUS(status)


def count_calls(args: list[str], hook: str, tmp: Path) -> int:
    target = tmp / COUNT_FILE
    killed, code = run_forked(args, hook, None, target)
    assert not killed and code == 0, f"clean run of {args[0]} failed with {code}"
    n = int(target.read_text())
    target.unlink()
    return n


def tree(root: Path, work: Path | None = None) -> dict[str, str]:
    """sha256 of every file under ``root``; the work folder's own path (recorded in merged
    run.json) is replaced by a placeholder so runs in different folders compare equal."""
    def digest(p: Path) -> str:
        data = p.read_bytes()
        if work is not None:
            data = data.replace(str(work).encode(), b"{w}")
        return hashlib.sha256(data).hexdigest()

    if not root.exists():
        return {}
    if root.is_file():
        return {"": digest(root)}
    return {str(p.relative_to(root)): digest(p) for p in sorted(root.rglob("*")) if p.is_file() and not _temp(p)}


def _temp(p: Path) -> bool:
    """A hidden temporary left by a kill (``.name.XXXX.tmp`` or inside ``.name.partial-XXXX``): no
    reader ever opens one, and the next write makes its own."""
    return any(part.startswith(".") and (part.endswith(".tmp") or ".partial-" in part) for part in p.parts)


def sweep(n: int) -> list[int]:
    """First, last and evenly spaced calls in between (every call when there are few)."""
    if n <= 5:
        return list(range(1, n + 1))
    return sorted({1, n // 3, (2 * n) // 3, n - 1, n})


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from test_bad_inputs import build_pipeline

    return build_pipeline(tmp_path_factory.mktemp("drill"))


DRILLS = {
    # name: (argument template, output relative to the work folder)
    "score": (["score", "{w}/run", "--no-fic", "-o", "{w}/out"], "out"),
    "merge": (["merge", "{w}/s0", "{w}/s1", "--out", "{w}/out"], "out"),
    "freeze": (["freeze", "{w}/u.json", "-o", "{w}/out.json", "--store-prompts", "--data-dir", "{w}/data",
                "--prompts-dir", "{w}/prompts"], "out.json"),
    "submit": (["submit", "{w}/run", "--out", "{w}/out.json"], "out.json"),
}


@pytest.mark.slow
@pytest.mark.parametrize("hook", ["fsync", "replace"])
@pytest.mark.parametrize("name", sorted(DRILLS))
def test_kill_leaves_outputs_complete_or_absent(name: str, hook: str, pipeline: Path, tmp_path: Path) -> None:
    template, out_rel = DRILLS[name]
    ref = tmp_path / "ref"
    shutil.copytree(pipeline, ref)
    args_ref = [a.replace("{w}", str(ref)) for a in template]
    n = count_calls(args_ref, hook, tmp_path)
    expected = tree(ref / out_rel, ref)
    extra = [ref / "out.prompts.jsonl.gz"] if name == "freeze" else []
    expected_extra = [tree(p, ref) for p in extra]
    assert expected and n >= 1
    for k in sweep(n):
        w = tmp_path / f"w{k}"
        shutil.copytree(pipeline, w)
        inputs = tree(w)
        args = [a.replace("{w}", str(w)) for a in template]
        killed, code = run_forked(args, hook, k)
        assert killed, f"{name}: call {k} of {n} did not happen"
        got = tree(w / out_rel, w)
        if name in ("merge", "submit", "freeze"):
            assert got in ({}, expected), f"{name} killed at {hook} {k}/{n}: torn output {sorted(got)}"
        else:  # score writes one file per step: each present file is complete
            assert all(expected.get(f) == h for f, h in got.items()), f"{name} killed at {hook} {k}/{n}: torn file"
        for p, want in zip(extra, expected_extra, strict=True):
            assert tree(w / p.name, w) in ({}, want)
        now = tree(w)
        assert all(now.get(f) == h for f, h in inputs.items()), f"{name}: an input changed"
        assert not [f for f in now if f.endswith((".tmp", ".new"))], sorted(now)
        if name == "merge" and got == expected:
            continue  # completed before the kill: a retry would rightly refuse the existing folder
        if name == "freeze" and got == expected:
            (w / out_rel).unlink()  # freeze refuses nothing here, but a rerun must rewrite it whole
        killed, code = run_forked(args)
        assert not killed and code == 0, f"{name}: rerun after a kill at {hook} {k}/{n} exited {code}"
        assert tree(w / out_rel, w) == expected


@pytest.mark.slow
@pytest.mark.parametrize("hook", ["fsync", "replace"])
def test_replay_killed_anywhere_resumes_to_the_uninterrupted_result(hook: str, pipeline: Path,
                                                                      tmp_path: Path) -> None:
    def outputs(run: Path) -> dict[tuple[str, int, str], str]:
        recs = [json.loads(x) for p in sorted((run / "predictions").rglob("*.jsonl"))
                for x in p.read_text(encoding="utf-8").splitlines()]
        keys = [(r["dataset"], r["run"], r["instance_id"]) for r in recs]
        assert len(keys) == len(set(keys)), "an instance was written twice"
        return {k: r["output"] for k, r in zip(keys, recs, strict=True)}

    template = ["replay", "{w}/m.json", "--backend", "echo", "--out", "{w}/r", "--no-score",
                "--data-dir", "{w}/data", "--prompts-dir", "{w}/prompts"]
    ref = tmp_path / "ref"
    shutil.copytree(pipeline, ref)
    n = count_calls([a.replace("{w}", str(ref)) for a in template], hook, tmp_path)
    expected = outputs(ref / "r")
    for k in sweep(n):
        w = tmp_path / f"w{k}"
        shutil.copytree(pipeline, w)
        args = [a.replace("{w}", str(w)) for a in template]
        killed, _ = run_forked(args, hook, k)
        assert killed
        if (w / "r" / "run.json").exists():
            json.loads((w / "r" / "run.json").read_text(encoding="utf-8"))  # never torn
        for p in (w / "r").rglob("*.jsonl"):
            complete = p.read_bytes().rsplit(b"\n", 1)[0]
            for raw in filter(None, complete.split(b"\n")):
                json.loads(raw)  # every complete line parses; at most the tail is torn
        killed, code = run_forked(args)
        assert not killed and code == 0
        assert outputs(w / "r") == expected
