"""Table-driven bad-input suite: every command, every input kind, as a hostile user would try them.

Each case copies one small finished pipeline (config, data, prompt files, a frozen and an unfrozen
manifest with its prompt store, a scored echo run, two shard runs, a results bundle) into a fresh
folder, breaks one thing, runs the CLI in-process through ``cli.main`` and asserts:

* exit status 2 (1 for verify drift), never a traceback, at most three lines on stderr;
* the message names the file (and the field, where there is one);
* every file that existed before the command is byte-identical afterwards (inputs are never
  written over, and a refused output leaves nothing half-done);
* no socket was opened to anything but the loopback interface (no network unless asked).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import socket
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from seam_repro.cli import main
from seam_repro.manifest.format import seal

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "manifests" / "fixtures"  # shipped with manifests/smoke.json
DATA = {"ECB": "ecb", "FuseReviews": "fusereviews", "SciCo": "scico", "MultiNews": "multinews",
        "MusiQue": "musique", "OpenASP": "openasp"}
CONFIG = {
    "random_seed": 7, "num_different_runs": 2, "num_demonstrations": 1, "max_num_samples": 1,
    "generation": {"temperature": 0.8, "do_sample": True, "max_new_tokens": 8, "top_p": None,
                   "truncation": "max", "batch_size": 2},
    "models": [],
    "datasets": [{"name": "ECB", "split_name": "test_events"}, {"name": "FuseReviews", "split_name": "validation"},
                 {"name": "SciCo", "split_name": "test"}, {"name": "MultiNews", "split_name": "test"},
                 {"name": "MusiQue", "split_name": "val"}, {"name": "OpenASP", "split_name": "test"}],
}
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


# --- running the CLI in-process ---------------------------------------------------------------------
@dataclass
class Result:
    code: int
    out: str
    err: str


class NetworkAttempt(AssertionError):
    pass


def _is_loopback(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX
        return True
    host = str(address[0]) if isinstance(address, tuple) and address else ""
    return host in ("localhost", "::1") or host.startswith("127.")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record (and refuse) any connection to a non-loopback address or any name lookup."""
    attempts: list[str] = []
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        if not _is_loopback(address):
            attempts.append(f"connect {address}")
            raise OSError(101, "network disabled by the test suite")
        return real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_loopback((host,)):
            attempts.append(f"getaddrinfo {host}")
            raise socket.gaierror(-3, "network disabled by the test suite")
        return real_getaddrinfo(host, *args, **kwargs)

    real_getaddrinfo = socket.getaddrinfo
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    env = dict(os.environ)
    yield attempts
    os.environ.clear()
    os.environ.update(env)
    assert not attempts, f"network use: {attempts}"


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> Result:
    capsys.readouterr()
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else int(exc.code) if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


# --- the base pipeline, built once ---------------------------------------------------------------------
@pytest.fixture(scope="session")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_pipeline(tmp_path_factory.mktemp("base"))


def build_pipeline(root: Path) -> Path:
    """Config, data, prompt files, frozen + unfrozen manifests, a scored echo run, two shard runs and
    a bundle in ``root`` (shared with the kill drills)."""
    for name, folder in DATA.items():
        shutil.copytree(FIXTURES / folder, root / "data" / name)
    shutil.copytree(FIXTURES / "prompts", root / "prompts")
    (root / "config.json").write_text(json.dumps(CONFIG, indent=1), encoding="utf-8")
    common = ["--data-dir", root / "data", "--prompts-dir", root / "prompts"]
    steps = [
        ["sample", root / "config.json", "-o", root / "m.json", "--store-prompts", *common],
        ["sample", root / "config.json", "-o", root / "u.json", "--unfrozen"],
        [_pin_fixture_prompts, root / "u.json", root / "prompts"],
        ["freeze", root / "u.json", "-o", root / "frozen-check.json", *common],
        ["replay", root / "m.json", "--backend", "echo", "--out", root / "run", "--no-fic", *common],
        ["submit", root / "run", "--out", root / "b.json"],
        ["replay", root / "m.json", "--backend", "echo", "--out", root / "s0", "--shard", "0/2", *common],
        ["replay", root / "m.json", "--backend", "echo", "--out", root / "s1", "--shard", "1/2", *common],
    ]
    env = dict(os.environ)
    try:
        for args in steps:
            if callable(args[0]):
                args[0](*args[1:])
                continue
            try:
                main([str(a) for a in args])
            except SystemExit as exc:
                assert not exc.code, f"building the base pipeline failed at {args[0]} ({exc.code})"
    finally:
        os.environ.clear()
        os.environ.update(env)
    (root / "reference.json").write_text((REPO / "seam_repro" / "data" / "reference" / "paper_table3.json")
                                         .read_text(encoding="utf-8"), encoding="utf-8")
    (root / "key.conll").write_text("#begin document (d);\nd\t0\t0\tw\t(1)\nd\t0\t1\tw\t-\n#end document\n")
    (root / "response.conll").write_text("#begin document (d);\nd\t0\t0\tw\t(1)\nd\t0\t1\tw\t-\n#end document\n")
    return root


def _pin_fixture_prompts(manifest: Path, prompts: Path) -> None:
    """Pin an unfrozen manifest to the fixture prompt files (it pins the upstream ones), so
    ``freeze`` can run on the fixtures."""
    m = json.loads(manifest.read_text(encoding="utf-8"))
    for name, entry in m["sources"]["prompts"].items():
        entry["sha256"] = hashlib.sha256((prompts / f"{name}.json").read_bytes()).hexdigest()
    manifest.write_text(json.dumps(seal(m), indent=1), encoding="utf-8")


# --- mutations ---------------------------------------------------------------------------------------
Mutation = Callable[[Path], None]


def write(rel: str, content: str | bytes) -> Mutation:
    def apply(w: Path) -> None:
        p = w / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return apply


def edit_json(rel: str, fn: Callable[[Any], Any], *, reseal: bool = False) -> Mutation:
    """Change a JSON file's parsed content; ``reseal`` recomputes a manifest's digest so the edit
    reaches the semantic checks instead of stopping at the digest."""
    def apply(w: Path) -> None:
        p = w / rel
        obj = json.loads(p.read_text(encoding="utf-8"))
        obj = fn(obj) or obj
        if reseal:
            obj = seal(obj)
        p.write_text(json.dumps(obj, indent=1), encoding="utf-8")
    return apply


def replace_text(rel: str, old: str, new: str, count: int = 1) -> Mutation:
    def apply(w: Path) -> None:
        p = w / rel
        text = p.read_text(encoding="utf-8")
        assert old in text, (rel, old)
        p.write_text(text.replace(old, new, count), encoding="utf-8")
    return apply


def edit_jsonl(rel: str, index: int, fn: Callable[[dict[str, Any]], Any]) -> Mutation:
    def apply(w: Path) -> None:
        p = w / rel
        lines = p.read_text(encoding="utf-8").splitlines()
        obj = json.loads(lines[index])
        fn(obj)
        lines[index] = json.dumps(obj)
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return apply


def line(rel: str, index: int, raw: bytes) -> Mutation:
    """Replace line ``index`` (0-based; -1 appends) of a text file with raw bytes."""
    def apply(w: Path) -> None:
        p = w / rel
        lines = p.read_bytes().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        if index == -1:
            lines.append(raw)
        else:
            lines[index] = raw
        p.write_bytes(b"\n".join(lines) + b"\n")
    return apply


READ_ONLY: list[Path] = []
"""Folders made read-only by the current case (root ignores the mode bits: see _simulate_read_only)."""


def chmod_ro(rel: str) -> Mutation:
    def apply(w: Path) -> None:
        (w / rel).chmod(stat.S_IRUSR | stat.S_IXUSR)
        READ_ONLY.append(w / rel)
    return apply


def _simulate_read_only(monkeypatch: pytest.MonkeyPatch, folders: list[Path]) -> None:
    """As root, mode bits do not stop writes, so refuse them the way the kernel would for a user:
    creating, opening for writing, renaming into or making a folder inside ``folders`` -> EACCES."""
    import builtins
    import errno
    import io

    roots = [os.path.realpath(f) for f in folders]

    def guarded(path: Any) -> bool:
        if isinstance(path, int):
            return False
        full = os.path.realpath(os.fspath(path))
        return any(full == r or full.startswith(r + os.sep) for r in roots)

    def deny(path: Any) -> None:
        raise PermissionError(errno.EACCES, "Permission denied", os.fspath(path))

    real_os_open, real_mkdir, real_replace, real_rename, real_open = os.open, os.mkdir, os.replace, os.rename, io.open

    def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and guarded(path):
            deny(path)
        return real_os_open(path, flags, *args, **kwargs)

    def mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
        if guarded(path) and not os.path.isdir(path):
            deny(path)
        return real_mkdir(path, *args, **kwargs)

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if guarded(dst):
            deny(dst)
        return real_replace(src, dst, *args, **kwargs)

    def rename(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if guarded(dst):
            deny(dst)
        return real_rename(src, dst, *args, **kwargs)

    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if any(c in mode for c in "wax+") and guarded(file):
            deny(file)
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(os, "mkdir", mkdir)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(io, "open", open_)


def steps(*muts: Mutation) -> Mutation:
    def apply(w: Path) -> None:
        for m in muts:
            m(w)
    return apply


def first_pred(w: Path) -> str:
    return str(sorted((w / "run" / "predictions" / "echo").glob("*/run_*.jsonl"))[0].relative_to(w))


def pred_file(fn: Callable[[str], Mutation]) -> Mutation:
    def apply(w: Path) -> None:
        fn(first_pred(w))(w)
    return apply


def truncate_gzip(rel: str) -> Mutation:
    def apply(w: Path) -> None:
        p = w / rel
        p.write_bytes(p.read_bytes()[:-40])
    return apply


def gzipped(folder: str, *, cut: int = 0, plain: bool = False) -> Mutation:
    """Turn a folder's ``*.jsonl`` into ``*.jsonl.gz`` (the OpenAsp release layout); ``test.jsonl.gz``
    is then cut short by ``cut`` bytes or (``plain``) left uncompressed."""
    def apply(w: Path) -> None:
        for p in sorted((w / folder).glob("*.jsonl")):
            data = p.read_bytes()
            packed = gzip.compress(data)
            if p.name == "test.jsonl":
                packed = data if plain else packed[:len(packed) - cut]
            p.with_name(p.name + ".gz").write_bytes(packed)
            p.unlink()
    return apply


DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJ = '{"a":' * 5000 + "1" + "}" * 5000
BIG_INT = "7" * 100_000
JUNK = bytes(range(128, 256)) + b"\x00\xff"


def run_m(m: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Apply ``m`` to the manifest's first recorded (dataset, run)."""
    def fn(obj: Any) -> Any:
        m(obj["runs"][0])
        return obj
    return fn


def run_named(dataset: str, m: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def fn(obj: Any) -> Any:
        m(next(r for r in obj["runs"] if r["dataset"] == dataset))
        return obj
    return fn


def cfg_set(path: str, value: Any) -> Callable[[Any], Any]:
    """Set ``a.b.c`` in a config (or in a manifest's ``config`` when the object has one)."""
    def fn(obj: Any) -> Any:
        target = obj["config"] if "config" in obj and "runs" in obj else obj
        keys = path.split(".")
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target.setdefault(k, {})
        if isinstance(target, list):
            target[int(keys[-1])] = value
        else:
            target[keys[-1]] = value
        return obj
    return fn


def cfg_del(path: str) -> Callable[[Any], Any]:
    def fn(obj: Any) -> Any:
        target = obj
        keys = path.split(".")
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        del target[keys[-1]]
        return obj
    return fn


def _bundle_run_score(value: float) -> Callable[[Any], Any]:
    """Set one run score of a bundle and recompute its digest (so the range check is what refuses it)."""
    def fn(obj: Any) -> Any:
        from seam_repro.hashing import sha256_json

        ds = next(iter(obj["datasets"].values()))
        ds["runs"][next(iter(ds["runs"]))] = value
        obj["bundle_digest"] = sha256_json({k: v for k, v in obj.items() if k != "bundle_digest"})
        return obj
    return fn


# --- the cases ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    id: str
    mutate: Mutation | None
    args: tuple[str, ...]
    names: tuple[str, ...]
    """Substrings the stderr message must contain (the file, the field)."""
    code: int = 2
    read_only: bool = False
    """The case makes a folder read-only (simulated at the system-call level when running as root)."""


D = ("--data-dir", "{w}/data", "--prompts-dir", "{w}/prompts")
SAMPLE = ("sample", "{w}/config.json", "-o", "{w}/new.json", *D)
PROMPTS = ("prompts", "{w}/m.json", "-o", "{w}/p.jsonl", *D)
VERIFY = ("verify", "{w}/m.json", *D)
REPLAY = ("replay", "{w}/m.json", "--backend", "echo", "--out", "{w}/run", "--no-fic", *D)
REPLAY_NEW = ("replay", "{w}/m.json", "--backend", "echo", "--out", "{w}/fresh", "--no-score", *D)
FREEZE = ("freeze", "{w}/u.json", "-o", "{w}/f.json", *D)
SCORE = ("score", "{w}/run", "--no-fic")
SCORE_OUT = ("score", "{w}/run", "--no-fic", "-o", "{w}/scores2")
MERGE = ("merge", "{w}/s0", "{w}/s1", "--out", "{w}/merged")
SUBMIT = ("submit", "{w}/run", "--out", "{w}/b2.json")
REPORT = ("report", "{w}/run", "--out", "{w}/rep")
REPORT_B = ("report", "{w}/b.json", "--out", "{w}/rep")
DIFF = ("diff", "{w}/run")
DIFF_B = ("diff", "{w}/b.json")
SUMMARY = "run/scores/echo/summary.json"
INST = "run/scores/echo/instance_scores.jsonl"
ECB_P = "prompts/ECB.json"


def C(id: str, mutate: Mutation | None, args: tuple[str, ...], *names: str, code: int = 2,
      root_skip: bool = False) -> Case:
    return Case(id, mutate, args, names, code, read_only=root_skip)


CASES: list[Case] = [
    # ---- sample: the config -------------------------------------------------------------------------
    C("sample-config-not-json", write("config.json", "{"), SAMPLE, "config.json", "valid JSON"),
    C("sample-config-empty", write("config.json", ""), SAMPLE, "config.json", "valid JSON"),
    C("sample-config-binary", write("config.json", JUNK), SAMPLE, "config.json", "UTF-8"),
    C("sample-config-deep-array", write("config.json", DEEP), SAMPLE, "config.json", "nested deeper"),
    C("sample-config-deep-object", write("config.json", DEEP_OBJ), SAMPLE, "config.json", "nested deeper"),
    C("sample-config-top-array", write("config.json", "[]"), SAMPLE, "config.json", "object"),
    C("sample-config-nan", replace_text("config.json", '"temperature": 0.8', '"temperature": NaN'), SAMPLE,
      "config.json", "finite"),
    C("sample-config-infinity", replace_text("config.json", '"temperature": 0.8', '"temperature": Infinity'),
      SAMPLE, "config.json", "finite"),
    C("sample-config-1e400", replace_text("config.json", '"temperature": 0.8', '"temperature": 1e400'), SAMPLE,
      "config.json", "finite"),
    C("sample-temperature-hot", edit_json("config.json", cfg_set("generation.temperature", "hot")), SAMPLE,
      "config.json", "temperature"),
    C("sample-temperature-negative", edit_json("config.json", cfg_set("generation.temperature", -1)), SAMPLE,
      "config.json", "temperature"),
    C("sample-temperature-bool", edit_json("config.json", cfg_set("generation.temperature", True)), SAMPLE,
      "config.json", "temperature"),
    C("sample-max-new-tokens-0", edit_json("config.json", cfg_set("generation.max_new_tokens", 0)), SAMPLE,
      "config.json", "max_new_tokens"),
    C("sample-max-new-tokens-str", edit_json("config.json", cfg_set("generation.max_new_tokens", "8")), SAMPLE,
      "config.json", "max_new_tokens"),
    C("sample-max-new-tokens-float", edit_json("config.json", cfg_set("generation.max_new_tokens", 8.5)), SAMPLE,
      "config.json", "max_new_tokens"),
    C("sample-top-p-2", edit_json("config.json", cfg_set("generation.top_p", 2)), SAMPLE, "config.json", "top_p"),
    C("sample-do-sample-yes", edit_json("config.json", cfg_set("generation.do_sample", "yes")), SAMPLE,
      "config.json", "do_sample"),
    C("sample-batch-size-0", edit_json("config.json", cfg_set("generation.batch_size", 0)), SAMPLE,
      "config.json", "batch_size"),
    C("sample-truncation-bad", edit_json("config.json", cfg_set("generation.truncation", "lots")), SAMPLE,
      "config.json", "truncation"),
    C("sample-generation-unknown-key", edit_json("config.json", cfg_set("generation.beam", 4)), SAMPLE,
      "config.json", "generation"),
    C("sample-generation-not-object", edit_json("config.json", cfg_set("generation", [1])), SAMPLE,
      "config.json", "generation"),
    C("sample-max-num-samples-neg5", edit_json("config.json", cfg_set("max_num_samples", -5)), SAMPLE,
      "config.json", "max_num_samples"),
    C("sample-max-num-samples-0", edit_json("config.json", cfg_set("max_num_samples", 0)), SAMPLE,
      "config.json", "max_num_samples"),
    C("sample-max-num-samples-float", edit_json("config.json", cfg_set("max_num_samples", 1.5)), SAMPLE,
      "config.json", "max_num_samples"),
    C("sample-runs-0", edit_json("config.json", cfg_set("num_different_runs", 0)), SAMPLE,
      "config.json", "num_different_runs"),
    C("sample-runs-huge", edit_json("config.json", cfg_set("num_different_runs", 10**12)), SAMPLE,
      "config.json", "num_different_runs"),
    C("sample-demos-negative", edit_json("config.json", cfg_set("num_demonstrations", -1)), SAMPLE,
      "config.json", "num_demonstrations"),
    C("sample-demos-past-pool", edit_json("config.json", cfg_set("num_demonstrations", 90)), SAMPLE,
      "ECB.json", "demonstrations"),
    C("sample-seed-string", edit_json("config.json", cfg_set("random_seed", "42")), SAMPLE,
      "config.json", "random_seed"),
    C("sample-seed-huge", edit_json("config.json", cfg_set("random_seed", 10**40)), SAMPLE,
      "config.json", "random_seed"),
    C("sample-seed-100k-digits", replace_text("config.json", '"random_seed": 7', f'"random_seed": {BIG_INT}'),
      SAMPLE, "config.json", "valid JSON"),
    C("sample-datasets-empty", edit_json("config.json", cfg_set("datasets", [])), SAMPLE,
      "config.json", "datasets"),
    C("sample-datasets-not-list", edit_json("config.json", cfg_set("datasets", "ECB")), SAMPLE,
      "config.json", "datasets"),
    C("sample-dataset-unknown", edit_json("config.json", cfg_set("datasets.0.name", "CNN")), SAMPLE,
      "config.json", "CNN"),
    C("sample-dataset-name-int", edit_json("config.json", cfg_set("datasets.0.name", 5)), SAMPLE,
      "config.json", "datasets[0].name"),
    C("sample-dataset-twice", edit_json("config.json", cfg_set("datasets.1.name", "ECB")), SAMPLE,
      "config.json", "twice"),
    C("sample-split-empty-name", edit_json("config.json", cfg_set("datasets.0.split_name", "")), SAMPLE,
      "config.json", "split_name"),
    C("sample-split-unknown", edit_json("config.json", cfg_set("datasets.3.split_name", "nope")), SAMPLE,
      "MultiNews", "nope"),
    C("sample-suite-unknown", edit_json("config.json", cfg_set("suite", "nope")), SAMPLE, "suite", "nope"),
    C("sample-models-not-list", edit_json("config.json", cfg_set("models", "gpt")), SAMPLE,
      "config.json", "models"),
    C("sample-config-missing", lambda w: (w / "config.json").unlink(), SAMPLE, "config.json"),
    # ---- sample: data and prompt files --------------------------------------------------------------
    C("sample-empty-split-file", write("data/MultiNews/test.jsonl", ""), SAMPLE, "MultiNews", "no instances"),
    C("sample-empty-csv", write("data/FuseReviews/dev.csv", "id\n"), SAMPLE, "FuseReviews", "dev.csv"),
    C("sample-data-line-deep", line("data/MultiNews/test.jsonl", 0, DEEP.encode()), SAMPLE,
      "test.jsonl", "line 1"),
    C("sample-data-line-binary", line("data/MultiNews/test.jsonl", 0, JUNK), SAMPLE, "test.jsonl", "line 1"),
    C("sample-data-line-nan-id", line("data/MusiQue/val.jsonl", 0, b'{"id": NaN}'), SAMPLE, "val.jsonl", "line 1"),
    C("sample-data-gzip-truncated", gzipped("data/OpenASP", cut=40), SAMPLE, "test.jsonl.gz", "gzip"),
    C("sample-data-gzip-not-gzip", gzipped("data/OpenASP", plain=True), SAMPLE, "test.jsonl.gz", "gzip"),
    C("sample-data-ecb-deep", write("data/ECB/test.json", DEEP), SAMPLE, "test.json", "nested deeper"),
    C("sample-prompt-file-not-json", write(ECB_P, "{"), SAMPLE, "ECB.json", "valid JSON"),
    C("sample-prompt-file-deep", write(ECB_P, DEEP_OBJ), SAMPLE, "ECB.json", "nested deeper"),
    C("sample-prompt-file-no-paraphrases", edit_json(ECB_P, cfg_set("prompts", [])), SAMPLE,
      "ECB.json", "paraphrases"),
    C("sample-prompt-file-instructions-int", edit_json(ECB_P, lambda o: o["prompts"][0].update(instructions=3)),
      SAMPLE, "ECB.json", "instructions"),
    C("sample-prompt-file-demo-review-null",
      edit_json("prompts/FuseReviews.json", lambda o: [d["reviews"].update(review_0=None) for d in o["demos"]] and o),
      SAMPLE, "FuseReviews.json", "demos"),
    C("sample-prompt-file-demo-not-object",
      edit_json("prompts/SciCo.json", lambda o: o.update(demonstrations=[1e308] * len(o["demonstrations"]))),
      SAMPLE, "SciCo.json", "demonstrations"),
    C("sample-prompt-file-binary", write(ECB_P, JUNK), SAMPLE, "ECB.json", "UTF-8"),
    C("sample-data-dir-missing-dataset", lambda w: shutil.rmtree(w / "data" / "SciCo"), SAMPLE,
      "SciCo", "--data-dir"),
    # ---- sample: outputs ----------------------------------------------------------------------------
    C("sample-out-over-config", None, ("sample", "{w}/config.json", "-o", "{w}/config.json", *D),
      "-o", "config.json", "inputs"),
    C("sample-out-over-config-dotdot", None, ("sample", "{w}/config.json", "-o", "{w}/data/../config.json", *D),
      "-o", "inputs"),
    C("sample-out-into-prompts-dir", None, ("sample", "{w}/config.json", "-o", "{w}/prompts/x.json", *D),
      "-o", "prompts"),
    C("sample-out-over-data-file", None, ("sample", "{w}/config.json", "-o", "{w}/data/MusiQue/val.jsonl", *D),
      "-o", "val.jsonl"),
    C("sample-store-over-existing-manifest-store", None,
      ("sample", "{w}/config.json", "-o", "{w}/data/../config.json", "--store-prompts", *D), "config.json"),
    C("sample-out-below-regular-file", None, ("sample", "{w}/config.json", "-o", "{w}/config.json/x.json", *D),
      "config.json"),
    C("sample-out-read-only-folder", chmod_ro("ro"), ("sample", "{w}/config.json", "-o", "{w}/ro/x.json", *D),
      "ro", "permission", root_skip=True),
    C("sample-unfrozen-over-config", None, ("sample", "{w}/config.json", "-o", "{w}/config.json", "--unfrozen"),
      "-o", "inputs"),
    C("sample-unfrozen-bad-config", edit_json("config.json", cfg_set("generation.max_new_tokens", 0)),
      ("sample", "{w}/config.json", "-o", "{w}/x.json", "--unfrozen"), "config.json", "max_new_tokens"),
    # ---- freeze -------------------------------------------------------------------------------------
    C("freeze-over-input", None, ("freeze", "{w}/u.json", "-o", "{w}/u.json", *D), "u.json"),
    C("freeze-already-frozen", None, ("freeze", "{w}/m.json", "-o", "{w}/f.json", *D), "m.json", "frozen"),
    C("freeze-not-json", write("u.json", "{"), FREEZE, "u.json", "valid JSON"),
    C("freeze-deep", write("u.json", DEEP), FREEZE, "u.json", "nested deeper"),
    C("freeze-edited", edit_json("u.json", cfg_set("random_seed", 8)), FREEZE, "u.json", "digest"),
    C("freeze-temperature-hot-resealed", edit_json("u.json", cfg_set("generation.temperature", "hot"), reseal=True),
      FREEZE, "u.json", "temperature"),
    C("freeze-max-tokens-0-resealed", edit_json("u.json", cfg_set("generation.max_new_tokens", 0), reseal=True),
      FREEZE, "u.json", "max_new_tokens"),
    C("freeze-cap-neg5-resealed", edit_json("u.json", cfg_set("max_instances", -5), reseal=True),
      FREEZE, "u.json", "max_instances"),
    C("freeze-out-into-prompts", None, ("freeze", "{w}/u.json", "-o", "{w}/prompts/f.json", *D), "-o", "prompts"),
    C("freeze-out-below-file", None, ("freeze", "{w}/u.json", "-o", "{w}/u.json/f.json", *D), "u.json"),
    C("freeze-out-read-only", chmod_ro("ro"), ("freeze", "{w}/u.json", "-o", "{w}/ro/f.json", *D), "ro",
      root_skip=True),
    # ---- prompts: manifests ---------------------------------------------------------------------------
    C("prompts-out-over-manifest", None, ("prompts", "{w}/m.json", "-o", "{w}/m.json", *D), "-o", "m.json"),
    C("prompts-out-over-store", None, ("prompts", "{w}/m.json", "-o", "{w}/m.prompts.jsonl.gz", *D),
      "-o", "m.prompts.jsonl.gz"),
    C("prompts-out-over-prompt-file", None, ("prompts", "{w}/m.json", "-o", "{w}/prompts/ECB.json", *D),
      "-o", "ECB.json"),
    C("prompts-out-below-file", None, ("prompts", "{w}/m.json", "-o", "{w}/m.json/p.jsonl", *D), "m.json"),
    C("prompts-out-read-only", chmod_ro("ro"), ("prompts", "{w}/m.json", "-o", "{w}/ro/p.jsonl", *D), "ro",
      root_skip=True),
    C("manifest-not-json", write("m.json", "{"), PROMPTS, "m.json", "valid JSON"),
    C("manifest-empty", write("m.json", ""), PROMPTS, "m.json", "valid JSON"),
    C("manifest-binary", write("m.json", JUNK), PROMPTS, "m.json", "UTF-8"),
    C("manifest-deep", write("m.json", DEEP), PROMPTS, "m.json", "nested deeper"),
    C("manifest-deep-object", write("m.json", DEEP_OBJ), PROMPTS, "m.json", "nested deeper"),
    C("manifest-top-array", write("m.json", "[1]"), PROMPTS, "m.json", "object"),
    C("manifest-nan", replace_text("m.json", '"temperature": 0.8', '"temperature": NaN'), PROMPTS,
      "m.json", "finite"),
    C("manifest-infinity", replace_text("m.json", '"temperature": 0.8', '"temperature": -Infinity'), PROMPTS,
      "m.json", "finite"),
    C("manifest-edited", edit_json("m.json", cfg_set("random_seed", 8)), PROMPTS, "m.json", "digest"),
    C("manifest-missing-runs", edit_json("m.json", cfg_del("runs"), reseal=True), PROMPTS, "m.json", "runs"),
    C("manifest-runs-not-list", edit_json("m.json", lambda o: o.update(runs={}), reseal=True), PROMPTS,
      "m.json", "runs"),
    C("manifest-temperature-hot", edit_json("m.json", cfg_set("generation.temperature", "hot"), reseal=True),
      PROMPTS, "m.json", "temperature"),
    C("manifest-max-new-tokens-0", edit_json("m.json", cfg_set("generation.max_new_tokens", 0), reseal=True),
      PROMPTS, "m.json", "max_new_tokens"),
    C("manifest-top-p-big", edit_json("m.json", cfg_set("generation.top_p", 7), reseal=True), PROMPTS,
      "m.json", "top_p"),
    C("manifest-cap-neg5", edit_json("m.json", cfg_set("max_instances", -5), reseal=True), PROMPTS,
      "m.json", "max_instances"),
    C("manifest-runs-huge", edit_json("m.json", cfg_set("num_different_runs", 10**9), reseal=True), PROMPTS,
      "m.json", "num_different_runs"),
    C("manifest-paraphrase-1e30", edit_json("m.json", run_m(lambda r: r.update(paraphrase_index=1e30)),
                                            reseal=True), PROMPTS, "m.json", "paraphrase_index"),
    C("manifest-paraphrase-10e30-int", edit_json("m.json", run_m(lambda r: r.update(paraphrase_index=10**30)),
                                                 reseal=True), PROMPTS, "m.json", "paraphrase_index"),
    C("manifest-paraphrase-past-pool", edit_json("m.json", run_m(lambda r: r.update(paraphrase_index=99)),
                                                 reseal=True), PROMPTS, "m.json", "paraphrase_index"),
    C("manifest-paraphrase-string", edit_json("m.json", run_m(lambda r: r.update(paraphrase_index="0")),
                                              reseal=True), PROMPTS, "m.json", "paraphrase_index"),
    C("manifest-demo-past-pool", edit_json("m.json", run_m(lambda r: r.update(demo_indices=[999])), reseal=True),
      PROMPTS, "m.json", "demo_indices"),
    C("manifest-demo-duplicate", edit_json("m.json", run_m(lambda r: r.update(demo_indices=[0, 0])), reseal=True),
      PROMPTS, "m.json", "demo_indices"),
    C("manifest-demo-float", edit_json("m.json", run_m(lambda r: r.update(demo_indices=[1e30])), reseal=True),
      PROMPTS, "m.json", "demo_indices"),
    C("manifest-max-docs-huge", edit_json("m.json", run_m(lambda r: r.update(max_num_docs=10**12)), reseal=True),
      PROMPTS, "m.json", "max_num_docs"),
    C("manifest-doc-order-not-permutation",
      edit_json("m.json", run_named("MultiNews", lambda r: r.update(doc_order=[0] * len(r["doc_order"]))),
                reseal=True), PROMPTS, "m.json", "doc_order"),
    C("manifest-doc-order-past-slots",
      edit_json("m.json", run_named("MultiNews", lambda r: r.update(doc_order=[*r["doc_order"][:-1], 10**6])),
                reseal=True), PROMPTS, "m.json", "doc_order"),
    C("manifest-doc-order-short",
      edit_json("m.json", run_named("MusiQue", lambda r: r.update(doc_order=r["doc_order"][:-1])), reseal=True),
      PROMPTS, "m.json", "doc_order"),
    C("manifest-mention-ids-short",
      edit_json("m.json", run_named("ECB", lambda r: r["instances"][0].update(mention_ids=[1])), reseal=True),
      PROMPTS, "m.json", "mention_ids"),
    C("manifest-mention-ids-missing",
      edit_json("m.json", run_named("SciCo", lambda r: r["instances"][0].pop("mention_ids")), reseal=True),
      PROMPTS, "m.json", "mention_ids"),
    C("manifest-instance-not-in-split",
      edit_json("m.json", run_named("MusiQue", lambda r: r["instances"][0].update(id="nope")), reseal=True),
      PROMPTS, "MusiQue", "nope"),
    C("manifest-run-dataset-unknown", edit_json("m.json", run_m(lambda r: r.update(dataset="x")), reseal=True),
      PROMPTS, "m.json", "dataset"),
    C("verify-run-dataset-unknown", edit_json("m.json", run_m(lambda r: r.update(dataset="x")), reseal=True),
      VERIFY, "m.json", "dataset"),
    C("manifest-run-split-unknown", edit_json("m.json", run_m(lambda r: r.update(split="nope")), reseal=True),
      PROMPTS, "nope"),
    C("manifest-sources-prompt-entry-int",
      edit_json("m.json", lambda o: o["sources"]["prompts"].update(SciCo=-1), reseal=True), PROMPTS,
      "m.json", "sources/prompts/SciCo"),
    C("manifest-sources-data-files-float",
      edit_json("m.json", lambda o: o["sources"]["data"]["FuseReviews"].update(files=1.5), reseal=True), VERIFY,
      "m.json", "sources/data/FuseReviews/files"),
    C("manifest-schema-version-3", edit_json("m.json", lambda o: o.update(schema_version=3), reseal=True),
      PROMPTS, "m.json", "schema_version"),
    C("manifest-prompt-file-changed", edit_json(ECB_P, lambda o: o["prompts"][0].update(instructions="x")),
      PROMPTS, "ECB.json", "sha256"),
    C("manifest-data-file-changed", line("data/MusiQue/val.jsonl", -1, b""), PROMPTS, "val.jsonl", "sha256"),
    # ---- verify ---------------------------------------------------------------------------------------
    C("verify-drift", edit_json("m.json", run_m(lambda r: r["instances"][0].update(prompt_sha256="0" * 64)),
                                reseal=True), VERIFY, "prompt_sha256 differs", code=1),
    C("verify-drift-truncated-store",
      steps(edit_json("m.json", run_m(lambda r: r["instances"][0].update(prompt_sha256="0" * 64)), reseal=True),
            truncate_gzip("m.prompts.jsonl.gz")), VERIFY, "m.prompts.jsonl.gz", "gzip", code=1),
    C("verify-drift-store-not-gzip",
      steps(edit_json("m.json", run_m(lambda r: r["instances"][0].update(prompt_sha256="0" * 64)), reseal=True),
            write("m.prompts.jsonl.gz", b"plain text\n")), VERIFY, "m.prompts.jsonl.gz", "gzip", code=1),
    C("verify-drift-store-junk-line",
      steps(edit_json("m.json", run_m(lambda r: r["instances"][0].update(prompt_sha256="0" * 64)), reseal=True),
            write("m.prompts.jsonl.gz", gzip.compress(JUNK + b"\n"))), VERIFY, "m.prompts.jsonl.gz", code=1),
    C("verify-choice-drift", edit_json("m.json", run_m(lambda r: r.update(paraphrase_index=0 if r["paraphrase_index"]
                                                                              else 1)), reseal=True),
      VERIFY, "paraphrase_index", code=1),
    C("verify-unfrozen", None, ("verify", "{w}/u.json", *D), "u.json", "frozen"),
    C("verify-deep", write("m.json", DEEP), VERIFY, "m.json", "nested deeper"),
    C("verify-edited", edit_json("m.json", cfg_set("random_seed", 1)), VERIFY, "m.json", "digest"),
    # a changed source is drift, not bad input: listed with every affected instance (issue 11)
    C("verify-data-changed", line("data/MusiQue/val.jsonl", -1, b""), VERIFY, "val.jsonl", "sha256", code=1),
    C("verify-prompt-file-changed", edit_json(ECB_P, lambda o: o.update(extra=1)), VERIFY, "ECB.json", "sha256",
      code=1),
    C("verify-paraphrase-1e30", edit_json("m.json", run_m(lambda r: r.update(paraphrase_index=1e30)), reseal=True),
      VERIFY, "m.json", "paraphrase_index"),
    C("verify-demo-past-pool", edit_json("m.json", run_m(lambda r: r.update(demo_indices=[10**6])), reseal=True),
      VERIFY, "m.json", "demo_indices"),
    # ---- replay -------------------------------------------------------------------------------------
    C("replay-out-is-manifest", None, ("replay", "{w}/m.json", "--backend", "echo", "--out", "{w}/m.json", *D),
      "m.json"),
    C("replay-out-below-file", None, ("replay", "{w}/m.json", "--backend", "echo", "--out", "{w}/m.json/r", *D),
      "m.json"),
    C("replay-out-inside-prompts", None,
      ("replay", "{w}/m.json", "--backend", "echo", "--out", "{w}/prompts/r", *D), "--out", "prompts"),
    C("replay-out-read-only", chmod_ro("ro"), ("replay", "{w}/m.json", "--backend", "echo", "--out", "{w}/ro/r",
                                                "--no-score", *D), "ro", root_skip=True),
    C("replay-shard-bad", None, (*REPLAY_NEW, "--shard", "3/2"), "--shard"),
    C("replay-shard-words", None, (*REPLAY_NEW, "--shard", "a/b"), "--shard"),
    C("replay-limit-0", None, (*REPLAY_NEW, "--limit", "0"), "--limit"),
    C("replay-manifest-deep", write("m.json", DEEP), REPLAY_NEW, "m.json", "nested deeper"),
    C("replay-manifest-nan", replace_text("m.json", '"temperature": 0.8', '"temperature": NaN'), REPLAY_NEW,
      "m.json", "finite"),
    C("replay-manifest-hot", edit_json("m.json", cfg_set("generation.temperature", "hot"), reseal=True),
      REPLAY_NEW, "m.json", "temperature"),
    C("replay-manifest-paraphrase-1e30", edit_json("m.json", run_m(lambda r: r.update(paraphrase_index=1e30)),
                                                   reseal=True), REPLAY_NEW, "m.json", "paraphrase_index"),
    # An unfrozen manifest is frozen into the run folder first (issue 14); its prompt-file pins still hold.
    C("replay-unfrozen-prompt-off-pin", edit_json(ECB_P, lambda o: o["prompts"][0].update(instructions="changed")),
      ("replay", "{w}/u.json", "--backend", "echo", "--out", "{w}/x", *D), "ECB.json", "sha256"),
    C("replay-resume-run-json-not-json", write("run/run.json", "{"), REPLAY, "run.json", "valid JSON"),
    C("replay-resume-run-json-deep", write("run/run.json", DEEP), REPLAY, "run.json", "nested deeper"),
    C("replay-resume-run-json-models-list", edit_json("run/run.json", lambda o: o.update(models=[])), REPLAY,
      "run.json", "models"),
    C("replay-resume-run-json-sessions-str", edit_json("run/run.json", lambda o: o.update(sessions="x")), REPLAY,
      "run.json", "sessions"),
    C("replay-resume-run-json-schema", edit_json("run/run.json", lambda o: o.update(schema_version=9)), REPLAY,
      "run.json", "schema_version"),
    C("replay-resume-model-id-int", edit_json("run/run.json", lambda o: o["models"]["echo"].update(id=5)), REPLAY,
      "run.json", "models.echo.id"),
    C("replay-resume-other-manifest", edit_json("run/run.json", lambda o: o.update(manifest_digest="0" * 64)),
      REPLAY, "run.json", "manifest_digest"),
    C("replay-resume-pred-junk-line", pred_file(lambda p: line(p, 0, JUNK)), REPLAY, "run_", "line 1"),
    C("replay-resume-pred-deep-line", pred_file(lambda p: line(p, 0, DEEP.encode())), REPLAY, "run_", "line 1"),
    C("replay-resume-pred-other-revision",
      pred_file(lambda p: edit_jsonl(p, 0, lambda o: o["model"].update(revision="other"))), REPLAY, "run_",
      "other"),
    C("replay-resume-pred-field-type", pred_file(lambda p: edit_jsonl(p, 0, lambda o: o.update(run="0"))), REPLAY,
      "run_", "run"),
    C("replay-resume-read-only-run", steps(lambda w: shutil.rmtree(w / "run" / "scores"),
                                           pred_file(lambda p: line(p, 0, b"")), chmod_ro("run")),
      REPLAY, "run", root_skip=True),
    # ---- merge ----------------------------------------------------------------------------------------
    C("merge-no-run-json", lambda w: (w / "s1" / "run.json").unlink(), MERGE, "s1", "run.json"),
    C("merge-out-exists", lambda w: (w / "merged").mkdir(), MERGE, "merged", "exists"),
    C("merge-out-inside-shard", None, ("merge", "{w}/s0", "{w}/s1", "--out", "{w}/s0/m"), "--out", "s0"),
    C("merge-out-is-shard", None, ("merge", "{w}/s0", "{w}/s1", "--out", "{w}/s1"), "--out", "s1"),
    C("merge-out-below-file", None, ("merge", "{w}/s0", "{w}/s1", "--out", "{w}/m.json/x"), "m.json"),
    C("merge-out-read-only", chmod_ro("ro"), ("merge", "{w}/s0", "{w}/s1", "--out", "{w}/ro/m"), "ro",
      root_skip=True),
    C("merge-run-json-deep", write("s0/run.json", DEEP), MERGE, "run.json", "nested deeper"),
    C("merge-run-json-models-str", edit_json("s1/run.json", lambda o: o.update(models="echo")), MERGE,
      "run.json", "models"),
    C("merge-other-manifest", edit_json("s1/run.json", lambda o: o.update(manifest_digest="1" * 64)), MERGE,
      "run.json", "manifest_digest"),
    C("merge-missing-shard", None, ("merge", "{w}/s0", "--out", "{w}/merged"), "echo", "no prediction"),
    C("merge-same-shard-twice", None, ("merge", "{w}/s0", "{w}/s0", "--out", "{w}/merged"), "duplicate"),
    C("merge-prompts-junk", line("s0/prompts.jsonl", 0, JUNK), MERGE, "prompts.jsonl", "line 1"),
    C("merge-prompts-hash", edit_jsonl("s0/prompts.jsonl", 0, lambda o: o.update(prompt="x")), MERGE,
      "prompts.jsonl", "prompt_sha256"),
    C("merge-pred-deep", lambda w: line(str(sorted((w / "s1").glob("predictions/echo/*/run_*.jsonl"))[0]
                                            .relative_to(w)), 0, DEEP.encode())(w), MERGE, "run_", "nested deeper"),
    # ---- score ----------------------------------------------------------------------------------------
    C("score-no-run-json", lambda w: (w / "run" / "run.json").unlink(), SCORE, "run.json", "missing"),
    C("score-run-json-not-json", write("run/run.json", "nope"), SCORE, "run.json", "valid JSON"),
    C("score-run-json-deep", write("run/run.json", DEEP), SCORE, "run.json", "nested deeper"),
    C("score-run-json-array", write("run/run.json", "[]"), SCORE, "run.json", "schema_version"),
    C("score-run-json-profile-int", edit_json("run/run.json", lambda o: o.update(profile=5)), SCORE,
      "run.json", "profile"),
    C("score-run-json-digest-list", edit_json("run/run.json", lambda o: o.update(manifest_digest=[1])), SCORE,
      "run.json", "manifest_digest"),
    C("score-prompts-missing", lambda w: (w / "run" / "prompts.jsonl").unlink(), SCORE, "prompts.jsonl"),
    C("score-prompts-junk", line("run/prompts.jsonl", 0, JUNK + b"{"), SCORE, "prompts.jsonl", "line 1"),
    C("score-prompts-deep", line("run/prompts.jsonl", 0, DEEP.encode()), SCORE, "prompts.jsonl", "line 1"),
    C("score-prompts-task-int", edit_jsonl("run/prompts.jsonl", 0, lambda o: o.update(task=1)), SCORE,
      "prompts.jsonl", "task"),
    C("score-pred-deep-line", pred_file(lambda p: line(p, 0, DEEP.encode())), SCORE, "run_", "line 1"),
    C("score-pred-junk-line", pred_file(lambda p: line(p, 0, b"\x00\x01garbage")), SCORE, "run_", "line 1"),
    C("score-pred-output-int", pred_file(lambda p: edit_jsonl(p, 0, lambda o: o.update(output=5))), SCORE,
      "run_", "output"),
    C("score-out-into-predictions", None, ("score", "{w}/run", "--no-fic", "-o", "{w}/run/predictions/x"),
      "--out", "predictions"),
    C("score-out-is-run", None, ("score", "{w}/run", "--no-fic", "-o", "{w}/run"), "--out", "inputs"),
    C("score-out-below-file", None, ("score", "{w}/run", "--no-fic", "-o", "{w}/m.json/s"), "m.json"),
    C("score-out-read-only", chmod_ro("ro"), ("score", "{w}/run", "--no-fic", "-o", "{w}/ro/s"), "ro",
      root_skip=True),
    C("score-scores-read-only", chmod_ro("run/scores/echo"), SCORE, "echo", root_skip=True),
    C("score-profile-bad", None, (*SCORE, "--profile", "latest"), "--profile"),
    C("score-not-a-run", None, ("score", "{w}/data", "--no-fic"), "run.json", "missing"),
    # ---- submit ---------------------------------------------------------------------------------------
    C("submit-out-run-json", None, ("submit", "{w}/run", "--out", "{w}/run/run.json"), "--out", "run"),
    C("submit-out-prediction", None, ("submit", "{w}/run", "--out", "{w}/run/predictions/echo/ECB/run_0.jsonl"),
      "--out", "run"),
    C("submit-out-summary", None, ("submit", "{w}/run", "--out", "{w}/" + SUMMARY), "--out", "run"),
    C("submit-out-dir", lambda w: (w / "outdir").mkdir(), ("submit", "{w}/run", "--out", "{w}/outdir"), "outdir"),
    C("submit-out-below-file", None, ("submit", "{w}/run", "--out", "{w}/m.json/b.json"), "m.json"),
    C("submit-out-read-only", chmod_ro("ro"), ("submit", "{w}/run", "--out", "{w}/ro/b.json"), "ro",
      root_skip=True),
    C("submit-summary-deep", write(SUMMARY, DEEP), SUBMIT, "summary.json", "nested deeper"),
    C("submit-summary-not-json", write(SUMMARY, "{"), SUBMIT, "summary.json", "valid JSON"),
    C("submit-summary-nan", replace_text(SUMMARY, '"datasets"', '"x": NaN, "datasets"'), SUBMIT,
      "summary.json", "finite"),
    C("submit-summary-array", write(SUMMARY, "[]"), SUBMIT, "summary.json"),
    C("submit-instances-empty", write(INST, ""), SUBMIT, "instance_scores.jsonl", "empty"),
    C("report-instances-empty", write(INST, "\n"), REPORT, "instance_scores.jsonl", "empty"),
    C("sample-out-symlink-to-config", lambda w: (w / "lnk.json").symlink_to(w / "config.json"),
      ("sample", "{w}/config.json", "-o", "{w}/lnk.json", *D), "-o", "inputs"),
    C("submit-out-symlink-into-run", lambda w: (w / "lnk").symlink_to(w / "run"),
      ("submit", "{w}/run", "--out", "{w}/lnk/b.json"), "--out", "run"),
    C("report-out-is-a-file", write("afile", "x"), ("report", "{w}/b.json", "--out", "{w}/afile"), "afile"),
    C("score-empty-prompts", write("run/prompts.jsonl", ""), SCORE, "prompts.jsonl"),
    C("score-no-predictions", lambda w: shutil.rmtree(w / "run" / "predictions"), SCORE, "predictions"),
    C("submit-instances-junk", line(INST, 0, JUNK), SUBMIT, "instance_scores.jsonl", "line 1"),
    C("submit-instances-deep", line(INST, 1, DEEP.encode()), SUBMIT, "instance_scores.jsonl", "line 2"),
    C("submit-instances-score-str", edit_jsonl(INST, 0, lambda o: o.update(score="x")), SUBMIT,
      "instance_scores.jsonl", "score"),
    C("submit-instances-score-1e400", line(INST, 0, b'{"score": 1e400}'), SUBMIT, "instance_scores.jsonl",
      "finite"),
    C("submit-instances-run-str", edit_jsonl(INST, 0, lambda o: o.update(run="0")), SUBMIT,
      "instance_scores.jsonl", "run"),
    C("submit-no-run-json", lambda w: (w / "run" / "run.json").unlink(), SUBMIT, "run.json"),
    C("submit-run-json-models-int", edit_json("run/run.json", lambda o: o.update(models=3)), SUBMIT,
      "run.json", "models"),
    C("submit-run-json-deep", write("run/run.json", DEEP), SUBMIT, "run.json", "nested deeper"),
    # ---- report ---------------------------------------------------------------------------------------
    C("report-out-is-run", None, ("report", "{w}/run", "--out", "{w}/run"), "--out", "run"),
    C("report-out-inside-run", None, ("report", "{w}/run", "--out", "{w}/run/scores"), "--out", "run"),
    C("report-out-over-bundle", None, ("report", "{w}/b.json", "--out", "{w}/b.json"), "--out", "b.json"),
    C("report-out-below-file", None, ("report", "{w}/run", "--out", "{w}/m.json/rep"), "m.json"),
    C("report-bundle-deep", write("b.json", DEEP), REPORT_B, "b.json", "nested deeper"),
    C("report-bundle-not-json", write("b.json", "{"), REPORT_B, "b.json", "valid JSON"),
    C("report-bundle-binary", write("b.json", JUNK), REPORT_B, "b.json", "UTF-8"),
    C("report-bundle-edited", edit_json("b.json", lambda o: o["model"].update(id="other")), REPORT_B,
      "b.json", "bundle_digest"),
    C("report-bundle-nan", replace_text("b.json", '"kind"', '"x": NaN, "kind"'), REPORT_B, "b.json", "finite"),
    C("report-bundle-run-1e308", edit_json("b.json", _bundle_run_score(1e308)), REPORT_B, "b.json", "0..100"),
    C("diff-bundle-run-negative", edit_json("b.json", _bundle_run_score(-5)), DIFF_B, "b.json", "0..100"),
    C("report-bundle-kind", edit_json("b.json", lambda o: o.update(kind="x")), REPORT_B, "b.json", "kind"),
    C("report-reference-deep", write("reference.json", DEEP), (*REPORT, "--reference", "{w}/reference.json"),
      "reference.json", "nested deeper"),
    C("report-reference-array", write("reference.json", "[]"), (*REPORT, "--reference", "{w}/reference.json"),
      "reference.json"),
    C("report-manifest-file-deep", write("m.json", DEEP), (*REPORT, "--manifest", "{w}/m.json"), "m.json",
      "nested deeper"),
    C("report-manifest-other", None, (*REPORT, "--manifest", "0" * 64), "manifest_digest"),
    C("report-instances-junk", line(INST, 0, JUNK), REPORT, "instance_scores.jsonl", "line 1"),
    C("report-same-model-twice", None, ("report", "{w}/run", "{w}/b.json", "--out", "{w}/rep"), "model"),
    # ---- diff -----------------------------------------------------------------------------------------
    C("diff-json-over-prompts", None, (*DIFF, "--json", "{w}/run/prompts.jsonl"), "--json", "run"),
    C("diff-json-over-bundle", None, (*DIFF_B, "--json", "{w}/b.json"), "--json", "b.json"),
    C("diff-json-over-reference", None, (*DIFF, "--reference", "{w}/reference.json", "--json",
                                         "{w}/reference.json"), "--json", "reference.json"),
    C("diff-json-below-file", None, (*DIFF, "--json", "{w}/m.json/d.json"), "m.json"),
    C("diff-json-read-only", chmod_ro("ro"), (*DIFF, "--json", "{w}/ro/d.json"), "ro", root_skip=True),
    C("diff-bundle-deep", write("b.json", DEEP), DIFF_B, "b.json", "nested deeper"),
    C("diff-summary-deep", write(SUMMARY, DEEP_OBJ), DIFF, "summary.json", "nested deeper"),
    C("diff-instances-junk", line(INST, 2, JUNK), DIFF, "instance_scores.jsonl", "line 3"),
    C("diff-tolerance-bad", None, (*DIFF, "--tolerance", "lots"), "tolerance"),
    C("diff-reference-deep", write("reference.json", DEEP), (*DIFF, "--reference", "{w}/reference.json"),
      "reference.json", "nested deeper"),
    C("diff-reference-missing", None, (*DIFF, "--reference", "{w}/nope.json"), "nope.json"),
    # ---- conll-score and metric ---------------------------------------------------------------------
    C("conll-key-missing", None, ("conll-score", "{w}/nope.conll", "{w}/response.conll"), "nope.conll"),
    C("conll-key-no-documents", write("key.conll", "just text\n"), ("conll-score", "{w}/key.conll",
                                                                     "{w}/response.conll"), "key.conll", "begin"),
    C("conll-key-binary", write("key.conll", JUNK), ("conll-score", "{w}/key.conll", "{w}/response.conll"),
      "key.conll"),
    C("conll-unclosed-mention", write("response.conll", "#begin document (d);\nd\t0\t0\tw\t(1\n#end document\n"),
      ("conll-score", "{w}/key.conll", "{w}/response.conll"), "response.conll", "never closed"),
    C("conll-key-is-folder", None, ("conll-score", "{w}/data", "{w}/response.conll"), "data"),
    C("metric-unknown", None, ("metric", "nope", "a", "b"), "nope"),
    C("metric-file-missing", None, ("metric", "zeroscrolls_f1", "@{w}/nope.txt", "x"), "nope.txt"),
    C("metric-file-binary", write("pred.txt", JUNK), ("metric", "zeroscrolls_f1", "@{w}/pred.txt", "x"),
      "pred.txt", "UTF-8"),
    C("metric-musique-ref-deep", None, ("metric", "musique_f1", "x", DEEP_OBJ), "reference 0"),
    C("metric-musique-ref-not-json", None, ("metric", "musique_f1", "x", "{nope"), "reference 0"),
    # ---- datasets and fetch -------------------------------------------------------------------------
    C("datasets-suite-unknown", None, ("datasets", "list", "--suite", "nope"), "nope"),
    C("fetch-only-unknown", None, ("fetch", "--only", "nope", "--cache", "{w}/cache", "--data-dir", "{w}/data"),
      "nope"),
    C("fetch-cache-inside-data-dir", None, ("fetch", "--only", "prompts", "--cache", "{w}/data/c", "--data-dir",
                                            "{w}/data"), "--cache", "data"),
    C("fetch-cache-below-file", None, ("fetch", "--only", "prompts", "--cache", "{w}/m.json/c", "--data-dir",
                                       "{w}/data"), "m.json"),
]


def _hashes(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _restore_permissions(root: Path) -> None:
    for p in [root, *root.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)


def test_suite_is_large_and_ids_are_unique() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 150, len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_clear_line_and_nothing_changes(case: Case, base: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    w = tmp_path / "w"
    shutil.copytree(base, w, symlinks=True)
    (w / "ro").mkdir()
    READ_ONLY.clear()
    if case.mutate is not None:
        case.mutate(w)
    assert bool(READ_ONLY) == case.read_only, "mark read-only cases with root_skip=True"
    before = _hashes(w)
    args = [a.replace("{w}", str(w)) for a in case.args]
    with pytest.MonkeyPatch.context() as mp:
        if AS_ROOT and READ_ONLY:
            _simulate_read_only(mp, list(READ_ONLY))
        try:
            res = run_cli(args, capsys)
        finally:
            mp.undo()
            _restore_permissions(w)
    lines = [ln for ln in res.err.splitlines() if ln.strip()]
    shown = res.err[-2000:]
    assert res.code == case.code, f"exit {res.code}, expected {case.code}; stderr:\n{shown}\nstdout:\n{res.out[-500:]}"
    assert "Traceback" not in res.err + res.out
    assert "internal error" not in res.err, shown
    if case.code == 2:
        assert 1 <= len(lines) <= 3, f"{len(lines)} stderr lines:\n{shown}"
    for needle in case.names:
        assert needle in res.err + (res.out if case.code == 1 else ""), f"{needle!r} not in:\n{shown}"
    after = _hashes(w)
    changed = [k for k, v in before.items() if after.get(k) != v]
    assert not changed, f"input files changed or removed: {changed}"
    leftovers = [k for k in after if ".tmp" in k or ".partial-" in k]
    assert not leftovers, f"temporary files left behind: {leftovers}"


# --- faults only a subprocess can stage ------------------------------------------------------------------
def _subprocess_cli(args: list[str], *, fsize: int | None = None, cwd: Path | None = None,
                    timeout: float = 120) -> Any:
    import resource
    import subprocess

    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "seam_repro", *map(str, args)], capture_output=True, text=True,
                          preexec_fn=limit, cwd=cwd, env=env, timeout=timeout)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "args", "out_rel"), [
    ("submit", ["submit", "{w}/run", "--out", "{w}/b2.json"], "b2.json"),
    ("score", ["score", "{w}/run", "--no-fic", "-o", "{w}/sc"], "sc/echo/instance_scores.jsonl"),
    ("merge", ["merge", "{w}/s0", "{w}/s1", "--out", "{w}/merged"], "merged"),
    ("prompts", ["prompts", "{w}/m.json", "-o", "{w}/p.jsonl", *D], "p.jsonl"),
])
def test_full_disk_is_one_line_and_leaves_nothing_partial(name: str, args: list[str], out_rel: str, base: Path,
                                                          tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes any write past 2 KiB fail with EFBIG, as a full disk fails with ENOSPC."""
    w = tmp_path / "w"
    shutil.copytree(base, w)
    before = _hashes(w)
    res = _subprocess_cli([a.replace("{w}", str(w)) for a in args], fsize=2048)
    assert res.returncode == 2, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip() and not ln.startswith(("echo:", "note:"))]
    assert 1 <= len(lines) <= 3 and "too large" in res.stderr, res.stderr[-1500:]
    after = _hashes(w)
    assert all(after.get(k) == v for k, v in before.items())
    assert not (w / out_rel).exists() or name == "score"
    assert not [k for k in after if ".tmp" in k or ".partial-" in k]


@pytest.mark.parametrize("fail_at", [3, 6, 9])
def test_replay_on_a_full_disk_keeps_every_complete_prediction_and_resumes(
        fail_at: int, base: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ENOSPC in the middle of a replay (the disk fills after ``fail_at`` fsyncs): one line that says
    the predictions so far are kept; the same command then completes the run with no duplicate."""
    import errno

    w = tmp_path / "w"
    shutil.copytree(base, w)
    args = ["replay", w / "m.json", "--backend", "echo", "--out", w / "r", "--no-score",
            "--data-dir", w / "data", "--prompts-dir", w / "prompts"]
    calls = {"n": 0}
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] > fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "fsync", fsync)
        res = run_cli(args, capsys)
    assert res.code == 2 and "Traceback" not in res.err, res.err[-1500:]
    errors = [ln for ln in res.err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and "no space left" in errors[0], res.err[-1500:]
    again = run_cli(args, capsys)
    assert again.code == 0, again.err[-1500:]
    preds = [json.loads(x) for p in (w / "r" / "predictions").rglob("*.jsonl") for x in p.read_text().splitlines()]
    keys = [(p["dataset"], p["run"], p["instance_id"]) for p in preds]
    n_prompts = len((w / "r" / "prompts.jsonl").read_text().splitlines())
    assert len(keys) == len(set(keys)) == n_prompts


def test_conll_score_warns_on_mismatched_names_and_non_numeric_ids(base: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """perl's scorer silently scores 0 here; the kit prints the same numbers and says why on stderr."""
    resp = tmp_path / "r.conll"
    resp.write_text("#begin document (other);\nd\t0\t0\tw\t(A)\nd\t0\t1\tw\t-\n#end document\n")
    res = run_cli(["conll-score", str(base / "key.conll"), str(resp), "--metric", "muc"], capsys)
    assert res.code == 0, res.err
    assert "Recall: (0 / 0) 0%" in res.out
    assert "warning:" in res.err and "(d);" in res.err and "(other);" in res.err
    assert "'(A)'" in res.err and "not a number" in res.err
    assert len(res.err.strip().splitlines()) <= 3


def test_metric_with_huge_numbers_scores_without_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    n400 = "9" * 400
    res = run_cli(["metric", "zeroscrolls_exp_similarity", f"{n400}%", f"{n400}%"], capsys)
    assert res.code == 0 and json.loads(res.out)["score"] == 0.0, res.err
    ids = "7" * 100_000
    res = run_cli(["metric", "zeroscrolls_concordance_index", f"{ids}, 2, 1", "1, 2, 3"], capsys)
    assert res.code == 0 and json.loads(res.out)["score"] == 0.0, res.err


# --- no network unless asked ----------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "wanted"), [
    (["fetch", "--only", "prompts"], True),
    (["score", "run", "--fic-download"], True),
    (["replay", "m.json", "--model", "meta-llama/Meta-Llama-3-8B-Instruct", "--out", "r"], True),
    (["replay", "m.json", "--model=org/model@abc", "--out", "r"], True),
    (["replay", "m.json", "--out", "r"], False),  # the embedded model ships with the kit
    (["replay", "m.json", "--model", "org/model", "--backend", "echo", "--out", "r"], False),
    (["score", "run"], False),
    (["sample", "c.json", "-o", "m.json"], False),
    (["verify", "m.json"], False),
    (["report", "run", "--out", "rep"], False),
])
def test_only_fetch_fic_download_and_hub_models_may_use_the_network(args: list[str], wanted: bool) -> None:
    from seam_repro.network import network_wanted

    assert network_wanted(args) is wanted


def test_local_model_folder_needs_no_network(tmp_path: Path) -> None:
    from seam_repro.network import network_wanted

    (tmp_path / "model").mkdir()
    assert not network_wanted(["replay", "m.json", "--model", str(tmp_path / "model"), "--out", "r"])


def test_offline_commands_switch_the_hub_libraries_off(base: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.environ.pop("HF_HUB_OFFLINE", None)
    res = run_cli(["verify", base / "m.json", "--data-dir", base / "data", "--prompts-dir", base / "prompts"], capsys)
    assert res.code == 0, res.err
    assert os.environ.get("HF_HUB_OFFLINE") == "1"


def test_uncached_hub_model_offline_fails_fast_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                         no_network: list[str]) -> None:
    import time

    from seam_repro import network
    from seam_repro.errors import InputError

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(network, "is_cached", lambda model_id, revision: False)
    start = time.monotonic()
    with pytest.raises(InputError, match=r"cannot resolve org/model@abc: not in the local Hugging Face cache "
                                         r"and the Hub is offline: huggingface.co:443 cannot be reached"):
        network.require_hub_or_cache("org/model", "abc")
    assert time.monotonic() - start < network.PROBE_TIMEOUT_S + 1
    assert no_network == ["getaddrinfo huggingface.co"]  # one probe, no retries
    no_network.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError, match="HF_HUB_OFFLINE is set"):
        network.require_hub_or_cache("org/model", "abc")
    assert not no_network  # offline mode does not even probe


@pytest.mark.slow
def test_scoring_with_fic_never_reaches_the_hub_for_an_uncached_model(base: Path, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """FIC models that are not in the local cache give null FuseReviews scores with the reason;
    the socket guard (autouse) fails the test on any connection attempt."""
    pytest.importorskip("transformers")  # imported before the command runs, as a plugin might
    os.environ["HF_HOME"] = str(tmp_path / "empty-hf-cache")
    res = run_cli(["score", base / "run", "-o", tmp_path / "scores"], capsys)
    assert res.code == 0, res.err[-1500:]
    summary = json.loads((tmp_path / "scores" / "echo" / "summary.json").read_text(encoding="utf-8"))
    assert "not in the local cache" in json.dumps(summary["datasets"]["FuseReviews"])
