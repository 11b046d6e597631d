"""Verified downloads against a local HTTP server on 127.0.0.1 (thread in the test): success,
hash mismatch, an interrupted transfer, trust on first use, git blob sha1, zip-slip, symlinks,
--data-dir copies, HF sources through an injected downloader, and the two CLI commands."""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import shutil
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from seam_repro.cli import cli
from seam_repro.errors import HashMismatchError, InputError
from seam_repro.sources.fetch import (
    DownloadError,
    FetchResult,
    cached_source_path,
    fetch_source,
    git_blob_sha1,
    safe_extract,
    source_status,
)
from seam_repro.sources.lock import Lock, parse_lock

PAYLOAD = b'{"prompts": [], "demonstrations": []}\n' * 50
SHA = hashlib.sha256(PAYLOAD).hexdigest()


def fetch(*, cache: Path, lock: Lock, data_dir: Path | None = None, **kwargs: Any) -> list[FetchResult]:
    """Every default source of ``lock``, fetched into ``cache`` as ``seam-repro fetch`` does."""
    return [fetch_source(s, cache, data_dir=data_dir, **kwargs) for s in lock.select(None)]


class _Handler(http.server.BaseHTTPRequestHandler):
    files: dict[str, bytes] = {}

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        if self.path == "/truncated":
            self.send_response(200)
            self.send_header("Content-Length", str(len(PAYLOAD)))
            self.end_headers()
            self.wfile.write(PAYLOAD[:100])  # then close: the client must notice the short body
            self.wfile.flush()
            self.close_connection = True
            return
        body = self.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.timeout = 5
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def _lock(*sources: dict) -> object:
    return parse_lock({"schema_version": 1, "sources": list(sources)}, "test.lock.json")


def _url_source(url: str, sha: str | None, name: str = "prompts-ECB") -> dict:
    return {"name": name, "kind": "url", "provides": {"prompts": "ECB"},
            "files": [{"url": url, "sha256": sha, "dest": "prompts/ECB.json"}]}


def _no_partials(cache: Path) -> bool:
    return not any(p.name.endswith(".part") for p in cache.rglob("*"))


def test_download_verified_and_located(server: str, tmp_path: Path) -> None:
    _Handler.files = {"/ECB.json": PAYLOAD}
    lock = _lock(_url_source(server + "/ECB.json", SHA))
    [res] = fetch(cache=tmp_path, lock=lock, progress=False, timeout=5)
    assert res.status == "verified" and (tmp_path / "prompts" / "ECB.json").read_bytes() == PAYLOAD
    assert cached_source_path("prompts", "ECB", tmp_path, lock) == tmp_path / "prompts" / "ECB.json"
    assert source_status(lock.sources[0], tmp_path) == "verified"
    # a second fetch re-verifies the cached copy without downloading
    _Handler.files = {}
    assert fetch(cache=tmp_path, lock=lock, progress=False, timeout=5)[0].status == "verified"


def test_hash_mismatch_leaves_no_file(server: str, tmp_path: Path) -> None:
    _Handler.files = {"/ECB.json": PAYLOAD + b"tampered"}
    lock = _lock(_url_source(server + "/ECB.json", SHA))
    with pytest.raises(HashMismatchError) as exc:
        fetch(cache=tmp_path, lock=lock, progress=False, timeout=5)
    actual = hashlib.sha256(PAYLOAD + b"tampered").hexdigest()
    assert "prompts-ECB:ECB.json" in str(exc.value) and SHA in str(exc.value) and actual in str(exc.value)
    assert not (tmp_path / "prompts" / "ECB.json").exists() and _no_partials(tmp_path)


def test_interrupted_transfer_leaves_no_file(server: str, tmp_path: Path) -> None:
    lock = _lock(_url_source(server + "/truncated", SHA))
    with pytest.raises(DownloadError, match="ended"):
        fetch(cache=tmp_path, lock=lock, progress=False, timeout=5)
    assert not (tmp_path / "prompts" / "ECB.json").exists() and _no_partials(tmp_path)


def test_trust_on_first_use(server: str, tmp_path: Path) -> None:
    _Handler.files = {"/ECB.json": PAYLOAD}
    lock = _lock(_url_source(server + "/ECB.json", None))
    [res] = fetch(cache=tmp_path, lock=lock, progress=False, timeout=5)
    assert res.status == "UNVERIFIED"
    tofu = json.loads((tmp_path / "tofu.json").read_text())
    assert tofu["prompts/ECB.json"]["sha256"] == SHA
    assert source_status(lock.sources[0], tmp_path) == "UNVERIFIED"
    # a later copy with other bytes is refused against the first-use record
    (tmp_path / "prompts" / "ECB.json").unlink()
    _Handler.files = {"/ECB.json": b"other bytes"}
    with pytest.raises(HashMismatchError, match="trusted on first use"):
        fetch(cache=tmp_path, lock=lock, progress=False, timeout=5)
    assert not (tmp_path / "prompts" / "ECB.json").exists()
    # a damaged record is one line naming the file, with the way out; it is not overwritten
    (tmp_path / "tofu.json").write_text('{"prompts/ECB.json": ')
    with pytest.raises(InputError, match=r"tofu\.json: .*; delete it to start over$"):
        fetch(cache=tmp_path, lock=lock, progress=False, timeout=5)
    assert (tmp_path / "tofu.json").read_text() == '{"prompts/ECB.json": '


def test_git_blob_sha1_matches_git(tmp_path: Path) -> None:
    f = tmp_path / "blob.bin"
    f.write_bytes(PAYLOAD)
    assert git_blob_sha1(f) == hashlib.sha1(b"blob %d\0" % len(PAYLOAD) + PAYLOAD).hexdigest()
    if shutil.which("git"):
        out = subprocess.run(["git", "hash-object", str(f)], capture_output=True, text=True, check=True, timeout=30)
        assert git_blob_sha1(f) == out.stdout.strip()


def _zip(entries: list[tuple[str, bytes, int | None]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            if mode is not None:
                info.external_attr = mode << 16
            zf.writestr(info, data)
    return buf.getvalue()


@pytest.mark.parametrize(("member", "mode", "reason"), [
    ("../evil.txt", None, "'..' escapes"),
    ("data/../../evil.txt", None, "'..' escapes"),
    ("/etc/evil.txt", None, "absolute path"),
    ("C:/evil.txt", None, "absolute path"),
    ("link", 0o120777, "symbolic link"),
])
def test_unsafe_zip_is_refused(tmp_path: Path, member: str, mode: int | None, reason: str) -> None:
    archive = tmp_path / "a.zip"
    archive.write_bytes(_zip([("ok/file.txt", b"fine", None), (member, b"x", mode)]))
    with pytest.raises(InputError, match=reason):
        safe_extract(archive, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "evil.txt").exists()


def test_zip_source_extracts_locates_and_checks_members(server: str, tmp_path: Path) -> None:
    val = b'{"id": "2hop__1_2"}\n'
    body = _zip([("seam/ECB/test_events.json", b"[]", None), ("seam/MusiQue/val.jsonl", val, None),
                 ("seam/OpenASP/test.jsonl", b"", None)])
    _Handler.files = {"/seam.zip": body}
    src = {"name": "seam-drive-zip", "kind": "zip", "provides": {"data": ["ECB", "MusiQue", "OpenASP"]},
           "files": [{"url": server + "/seam.zip", "sha256": hashlib.sha256(body).hexdigest(), "dest": "archives/seam.zip"}],
           "extract": "extract/seam", "locate": {"ECB": {"marker": "test_events.json"}, "MusiQue": {"marker": "val.jsonl"},
                                                 "OpenASP": {"marker": "test.jsonl", "exclude_marker": "val.jsonl"}},
           "members": {"MusiQue/val.jsonl": hashlib.sha256(val).hexdigest()}}
    lock = _lock(src)
    [res] = fetch(cache=tmp_path, lock=lock, progress=False, timeout=5)
    assert res.paths == {"data:ECB": "extract/seam/seam/ECB", "data:MusiQue": "extract/seam/seam/MusiQue",
                         "data:OpenASP": "extract/seam/seam/OpenASP"}
    assert "member MusiQue/val.jsonl: sha256 verified" in res.notes
    src["members"] = {"MusiQue/val.jsonl": "0" * 64}
    with pytest.raises(HashMismatchError, match="MusiQue/val.jsonl"):
        fetch_source(_lock(src).sources[0], tmp_path, progress=False)


def test_data_dir_and_hf_sources(tmp_path: Path) -> None:
    local = tmp_path / "offline"
    local.mkdir()
    (local / "train.csv").write_bytes(b"a,b\n1,2\n")
    src = {"name": "hf-fusereviews", "kind": "hf", "repo_id": "lovodkin93/FuseReviews", "revision": "8623afed5a927e8cd4904fadfcee8a562ea97c2f",
           "provides": {"data": "FuseReviews"},
           "files": [{"filename": "train.csv", "sha256": hashlib.sha256(b"a,b\n1,2\n").hexdigest(), "dest": "data/FuseReviews/train.csv"}]}
    lock = _lock(src)
    [res] = fetch(cache=tmp_path / "c1", data_dir=local, lock=lock, progress=False)
    assert res.status == "verified" and res.paths == {"data:FuseReviews": "data/FuseReviews"}
    calls: list[dict] = []

    def fake_hf(**kwargs: str) -> str:
        calls.append(kwargs)
        return str(local / "train.csv")

    fetch(cache=tmp_path / "c2", lock=lock, hf_download=fake_hf, progress=False)
    assert calls == [{"repo_id": "lovodkin93/FuseReviews", "filename": "train.csv",
                      "revision": "8623afed5a927e8cd4904fadfcee8a562ea97c2f", "repo_type": "dataset"}]
    (local / "train.csv").write_bytes(b"changed\n")
    with pytest.raises(HashMismatchError):
        fetch(cache=tmp_path / "c3", data_dir=local, lock=lock, progress=False)


def test_cli_fetch_and_datasets_list(tmp_path: Path) -> None:
    shared = Path(__file__).resolve().parents[2] / "shared" / "seam" / "upstream-6ad83f4" / "prompts"
    if not shared.is_dir():
        pytest.skip("../shared/seam/upstream-6ad83f4 not present")
    runner = CliRunner()
    cache = tmp_path / "cache"
    res = runner.invoke(cli, ["fetch", "--only", "prompts", "--data-dir", str(shared), "--cache", str(cache), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert res.output.count(" verified") == 6
    listing = runner.invoke(cli, ["datasets", "list", "--cache", str(cache)])
    assert listing.exit_code == 0
    lines = listing.output.splitlines()
    assert lines[0].startswith("suite seam:") and lines[1].split()[0] == "dataset"
    assert lines[2].split() == ["ECB", "coreference", "test_events", "seam-drive-zip", "missing"]
    assert len([ln for ln in lines if ln.endswith("missing")]) == 6
