"""The built wheel is a whole kit: shipped manifests, their fixtures and seeds/ come with it.

Old main's wheel held neither ``manifests/`` nor ``seeds/``: ``replay manifests/smoke.json`` needed a
clone, and bundles were checked by digest only ("No seeds/ folder was found"). Here the wheel is
built from a copy of the source, installed with ``--no-deps`` into a fresh venv outside the checkout
(its dependencies come from this interpreter's site-packages through a ``.pth`` line, which adds the
folder to ``sys.path`` without running the editable install's own ``.pth`` there), and run from a
folder outside the checkout with no PYTHONPATH and no SEAM_REPRO_SEEDS.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from seam_repro.hashing import sha256_json

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """(seam-repro console script of the fresh venv, its environment, a working folder)."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "seam_repro", src / "seam_repro", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SEAM_REPRO_SEEDS", "VIRTUAL_ENV")}
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                  str(root / "dist"), str(src)], root, env)
    assert built.returncode == 0, built.stderr
    [wheel] = (root / "dist").glob("seam_repro-*.whl")
    venv = root / "venv"
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], root, env)
    assert made.returncode == 0, made.stderr
    vpy = venv / "bin" / "python"
    purelib = Path(_run([str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root,
                        env).stdout.strip())
    (purelib / "_seam_repro_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", "utf-8")
    inst = _run([sys.executable, "-m", "pip", "--python", str(vpy), "install", "-q", "--no-deps", "--no-index",
                 str(wheel)], root, env)
    assert inst.returncode == 0, inst.stderr
    work = root / "work"
    work.mkdir()
    where = _run([str(vpy), "-c", "import seam_repro; print(seam_repro.__file__)"], work, env).stdout.strip()
    assert Path(where).is_relative_to(venv) and not Path(where).is_relative_to(REPO), where
    return venv / "bin" / "seam-repro", env, work


@pytest.mark.slow(seconds=16)
def test_installed_kit_runs_shipped_manifests_and_checks_seeds(installed: tuple[Path, dict[str, str], Path]) -> None:
    exe, env, work = installed

    verified = _run([str(exe), "verify", "smoke"], work, env)
    assert verified.returncode == 0, verified.stderr
    assert "OK" in verified.stdout and "36 prompts" in verified.stdout

    replayed = _run([str(exe), "replay", "smoke", "--backend", "echo", "--out", "runs/echo", "--no-fic"], work, env)
    assert replayed.returncode == 0, replayed.stderr
    assert (work / "runs/echo/scores/echo/summary.json").is_file()

    submitted = _run([str(exe), "submit", "runs/echo", "--out", "echo.bundle.json"], work, env)
    assert submitted.returncode == 0, submitted.stderr

    reported = _run([str(exe), "report", "echo.bundle.json", "--reference", "paper", "--out", "report"], work, env)
    assert reported.returncode == 0, reported.stderr
    text = "\n".join(p.read_text("utf-8") for p in (work / "report").glob("*.md"))
    assert text and "No seeds/ folder was found" not in text

    # The seeds check itself: a forged generation seed, re-sealed with a new bundle digest, is refused
    # against the shipped seeds/smoke.json (a digest-only check would accept it).
    bundle = json.loads((work / "echo.bundle.json").read_text("utf-8"))
    run0 = bundle["seeds"]["runs"][0]
    first = next(iter(run0["gen_seeds"]))
    run0["gen_seeds"][first] += 1
    bundle.pop("bundle_digest")
    bundle["bundle_digest"] = sha256_json(bundle)
    (work / "forged.bundle.json").write_text(json.dumps(bundle), "utf-8")
    forged = _run([str(exe), "report", "forged.bundle.json", "--reference", "paper", "--out", "report2"], work, env)
    assert forged.returncode == 2
    assert "seeds/smoke.json" in forged.stderr and "field 'seeds'" in forged.stderr, forged.stderr


def test_unknown_manifest_name_lists_the_shipped_ones(installed: tuple[Path, dict[str, str], Path]) -> None:
    exe, env, work = installed
    out = _run([str(exe), "verify", "smok"], work, env)
    assert out.returncode == 2
    assert "'smok' is neither a file nor a shipped manifest (shipped: igcs-mini, paper, smoke, zeroscrolls-mini)" \
        in out.stderr
