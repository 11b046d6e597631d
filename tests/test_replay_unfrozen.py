"""`replay` of an unfrozen manifest does the whole job (fetch + verify the pinned sources, freeze into
the run folder, verify, replay), tested against a local HTTP server on 127.0.0.1 serving the
project's own fixtures; without network it fails in one line that names the offline routes.

Independent check: the smoke protocol, made whole this way from served copies of its fixtures, must
give exactly the choices, prompt digest and digest of the shipped, separately frozen manifests/smoke.json."""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import shutil
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from seam_repro import cli as cli_module
from seam_repro.config import read_config
from seam_repro.manifest.format import load_manifest, unfrozen_manifest, write_manifest
from seam_repro.run import prepare
from seam_repro.sources.lock import parse_lock

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "manifests" / "fixtures"
LAYOUT = {"ECB": ("ecb", "test_events.json"), "FuseReviews": ("fusereviews", "test.csv"),
          "SciCo": ("scico", "test.jsonl"), "MultiNews": ("multinews", "test.jsonl"),
          "MusiQue": ("musique", "val.jsonl"), "OpenASP": ("openasp", "test.jsonl")}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(base URL, folder) of a 127.0.0.1 server over a folder holding seam.zip + prompts/*.json."""
    root = tmp_path / "www"
    (root / "prompts").mkdir(parents=True)
    with zipfile.ZipFile(root / "seam.zip", "w") as zf:
        for name, (folder, _) in LAYOUT.items():
            for f in sorted((FIX / folder).iterdir()):
                zf.write(f, f"seam/{name}/{f.name}")
    for name in LAYOUT:
        shutil.copy(FIX / "prompts" / f"{name}.json", root / "prompts" / f"{name}.json")
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", root
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def _lock(base: str, root: Path) -> object:
    """A sources lock in the shipped lock's form, every file pinned by sha256, served from ``base``."""
    sources: list[dict] = [
        {"name": f"prompts-{n}", "kind": "url", "provides": {"prompts": n},
         "files": [{"url": f"{base}/prompts/{n}.json", "sha256": _sha(root / "prompts" / f"{n}.json"),
                    "dest": f"prompts/{n}.json"}]}
        for n in LAYOUT
    ]
    sources.append({"name": "seam-zip", "kind": "zip", "provides": {"data": list(LAYOUT)},
                    "files": [{"url": f"{base}/seam.zip", "sha256": _sha(root / "seam.zip"), "dest": "archives/seam.zip"}],
                    "extract": "extract/seam", "locate": {n: {"marker": m} for n, (_, m) in LAYOUT.items()}})
    return parse_lock({"schema_version": 1, "sources": sources}, "test.lock.json")


def _unfrozen_smoke(tmp_path: Path, base: str) -> Path:
    """manifests/smoke.config.json with no data paths, as `sample --unfrozen` writes it, its prompt
    files pinned by the fixture prompts' sha256 (as paper.json pins the upstream ones)."""
    config = json.loads((REPO / "manifests" / "smoke.config.json").read_text(encoding="utf-8"))
    for d in config["datasets"]:
        d["path"] = None
    cfg_path = tmp_path / "smoke-unfrozen.config.json"
    cfg_path.write_text(json.dumps(config), encoding="utf-8")
    cfg = read_config(cfg_path, "upstream")
    pins = {"prompts": {n: {"path": None, "sha256": _sha(FIX / "prompts" / f"{n}.json"), "url": f"{base}/prompts/{n}.json"}
                        for n in LAYOUT},
            "data": {n: {"path": None, "files": {}} for n in LAYOUT}}
    out = tmp_path / "smoke-unfrozen.json"
    write_manifest(unfrozen_manifest(cfg, "upstream", pins), out)
    return out


def _main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The console entry point in-process (so the test lock applies): exit status, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["seam-repro", *args])
    with pytest.raises(SystemExit) as done:
        cli_module.main()
        raise SystemExit(0)
    captured = capsys.readouterr()
    return int(done.value.code or 0), captured.out, captured.err


def test_unfrozen_manifest_is_fetched_frozen_verified_and_replayed(
        served: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    base, root = served
    monkeypatch.setattr(prepare, "load_lock", lambda: _lock(base, root))
    monkeypatch.setenv("SEAM_REPRO_CACHE", str(tmp_path / "cache"))
    manifest = _unfrozen_smoke(tmp_path, base)
    run_dir = tmp_path / "run"
    import seam_repro.manifest.format

    loads: list[Path] = []
    real_load = seam_repro.manifest.format.load_manifest
    monkeypatch.setattr(seam_repro.manifest.format, "load_manifest", lambda p: loads.append(Path(p)) or real_load(p))
    code, out, err = _main(monkeypatch, capsys, "replay", str(manifest), "--out", str(run_dir), "--backend", "echo",
                           "--limit", "1", "--no-score")
    assert code == 0, err
    assert "fetch: seam-zip" in err and "verified" in err and "OK " in err
    frozen_file = run_dir / "smoke-unfrozen.frozen.json"
    assert loads == [manifest, frozen_file]  # each loaded once, then passed along (freeze, verify, replay)
    monkeypatch.setattr(seam_repro.manifest.format, "load_manifest", real_load)
    frozen = load_manifest(frozen_file)
    shipped = load_manifest(REPO / "manifests" / "smoke.json")
    assert frozen["frozen"] and frozen["runs"] == shipped["runs"] and frozen["prompt_digest"] == shipped["prompt_digest"]
    assert frozen["digest"] == shipped["digest"]  # paths are provenance, outside the digest
    for name in LAYOUT:  # the frozen copy records the verified cache, not the fixtures
        recorded = (run_dir / frozen["provenance"]["paths"]["data"][name]).resolve()
        assert recorded.is_relative_to((tmp_path / "cache").resolve())
        assert frozen["sources"]["data"][name]["files"] == shipped["sources"]["data"][name]["files"]
    run_json = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    assert run_json["manifest_digest"] == frozen["digest"]
    assert len(list((run_dir / "predictions").rglob("run_*.jsonl"))) == 18
    assert load_manifest(manifest)["frozen"] is False  # the input is never modified

    # Again, with the server gone: the cache is re-verified (no download) and the run resumes.
    monkeypatch.setattr(prepare, "load_lock", lambda: _lock("http://127.0.0.1:9", root))
    code, out, err = _main(monkeypatch, capsys, "replay", str(manifest), "--out", str(run_dir), "--backend", "echo",
                           "--limit", "1", "--no-score")
    assert code == 0, err
    assert "0 generated, 18 already stored" in out


def test_a_served_file_that_differs_from_its_pin_is_refused(
        served: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    base, root = served
    lock = _lock(base, root)
    (root / "prompts" / "SciCo.json").write_text('{"prompts": [], "demonstrations": []}\n', encoding="utf-8")
    monkeypatch.setattr(prepare, "load_lock", lambda: lock)
    monkeypatch.setenv("SEAM_REPRO_CACHE", str(tmp_path / "cache"))
    code, _, err = _main(monkeypatch, capsys, "replay", str(_unfrozen_smoke(tmp_path, base)), "--out",
                         str(tmp_path / "run"), "--backend", "echo", "--no-score")
    assert code == 2 and "SciCo.json" in err and "sha256 mismatch" in err
    assert not (tmp_path / "run" / "smoke-unfrozen.frozen.json").exists()
    assert not (tmp_path / "cache" / "prompts" / "SciCo.json").exists()


def test_paper_manifest_without_network_fails_in_one_line_naming_the_offline_routes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped paper.json and the shipped lock, every URL moved to a closed local port (no network)."""
    raw = json.loads((REPO / "seam_repro" / "data" / "sources.lock.json").read_text(encoding="utf-8"))
    for src in raw["sources"]:
        for f in src["files"]:
            if "url" in f:
                f["url"] = "http://127.0.0.1:9/" + f["url"].rsplit("/", 1)[-1]
    monkeypatch.setattr(prepare, "load_lock", lambda: parse_lock(raw, "sources.lock.json"))
    monkeypatch.setenv("SEAM_REPRO_CACHE", str(tmp_path / "cache"))
    code, out, err = _main(monkeypatch, capsys, "replay", str(REPO / "manifests" / "paper.json"), "--out",
                           str(tmp_path / "paper"), "--model", "meta-llama/Meta-Llama-3-8B-Instruct")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "paper.json: not frozen" in lines[0] and "offline: 127.0.0.1:9 cannot be reached" in lines[0]
    assert "--data-dir DIR" in lines[0] and "seam-repro freeze" in lines[0]
    assert not (tmp_path / "paper").exists()


def test_offline_route_with_local_data_needs_no_network(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(prepare, "load_lock", lambda: pytest.fail("no source may be fetched with local data"))
    data = tmp_path / "data"
    for name, (folder, _) in LAYOUT.items():
        shutil.copytree(FIX / folder, data / name)
    manifest = _unfrozen_smoke(tmp_path, "http://127.0.0.1:9")
    code, _, err = _main(monkeypatch, capsys, "replay", str(manifest), "--out", str(tmp_path / "run"), "--backend",
                         "echo", "--limit", "1", "--no-score", "--data-dir", str(data), "--prompts-dir",
                         str(FIX / "prompts"))
    assert code == 0, err
    frozen = load_manifest(tmp_path / "run" / "smoke-unfrozen.frozen.json")
    assert frozen["prompt_digest"] == load_manifest(REPO / "manifests" / "smoke.json")["prompt_digest"]


def test_frozen_manifest_is_replayed_as_given(tmp_path: Path) -> None:
    path = REPO / "manifests" / "smoke.json"
    assert prepare.freeze_for_replay(path, tmp_path / "run").path == str(path)
    assert not (tmp_path / "run").exists()
