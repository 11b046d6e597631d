"""The packaged sources lock: pins agree with the published upstream hashes and pins.md values,
and a malformed lock is rejected with a one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest

from seam_repro.errors import InputError
from seam_repro.hashing import sha256_file
from seam_repro.sources.lock import load_lock, parse_lock

UPSTREAM = Path(__file__).resolve().parents[2] / "shared" / "seam" / "upstream-6ad83f4"
COMMIT = "6ad83f41e588615262cbbd9330a61af48195a488"


def test_lock_covers_every_dataset_and_prompt_file() -> None:
    lock = load_lock()
    names = ["ECB", "FuseReviews", "SciCo", "MultiNews", "MusiQue", "OpenASP"]
    assert sorted(p for s in lock.sources for p in s.prompts) == sorted(names)
    assert {d for s in lock.sources if s.default for d in s.data} == set(names)
    for s in lock.sources:
        for f in s.files:
            assert not f.dest.startswith("/") and ".." not in f.dest


def test_prompt_pins_match_published_sha256sums() -> None:
    if not UPSTREAM.is_dir():
        pytest.skip("../shared/seam/upstream-6ad83f4 not present")
    sums = dict(reversed(line.split()) for line in (UPSTREAM / "SHA256SUMS").read_text().splitlines())
    lock = load_lock()
    for s in lock.sources:
        for name in s.prompts:
            [f] = s.files
            assert f.url == f"https://raw.githubusercontent.com/seam-benchmark/SEAM/{COMMIT}/files/prompts/{name}.json"
            assert f.sha256 == sums[f"prompts/{name}.json"] == sha256_file(UPSTREAM / "prompts" / f"{name}.json")


def test_pins_from_pins_md() -> None:
    lock = load_lock()
    ecb = lock.get("ecbplus")
    assert [f.git_blob_sha1 for f in ecb.files] == ["ae1578e6feb9ab465f74905794666c3368f3e813", "527886b5fe84f709da048935fec0a1ce4c827299"]
    assert all("cltl/ecbPlus/3aa071e12fd08fc0705b16bb1841e7a9c5c22420/" in str(f.url) for f in ecb.files)
    mn = {f.filename: f.sha256 for f in lock.get("hf-multinews").files}
    assert mn["data/test.src.cleaned"] == "138d3ac2dc899cbcd2e3745aaa94d1c1db55fb7058d9df4ba3ef2dac05a3a186"
    assert lock.get("hf-fusereviews").revision == "8623afed5a927e8cd4904fadfcee8a562ea97c2f"
    assert lock.get("hf-scico").revision == "61d4e9904fdd1919c4576ab3ccc68b6fdc0c1dc6"
    assert lock.get("seam-drive-zip").members["MusiQue/val.jsonl"] == "8cab31d56a3a1c4ef491b205a8dab3f1ac9c66e472098c6cf1de4e20294f7a4a"
    assert lock.get("musique-zip").files[0].sha256 == "98f839bf2fd5319f5c688aed77901a6d5c30b3b9f9f691ab9a8ecafb045ee0cd"
    assert not lock.get("seam-drive-zip").verified and lock.get("hf-multinews").verified


def test_select() -> None:
    lock = load_lock()
    assert [s.name for s in lock.select("SciCo")] == ["prompts-SciCo", "hf-scico"]
    assert [s.name for s in lock.select("ecbplus")] == ["ecbplus"]
    assert len(lock.select("prompts")) == 6
    assert "ecbplus" not in [s.name for s in lock.select(None)]
    with pytest.raises(InputError, match="--only: 'Nope' is not a dataset"):
        lock.select("Nope")


@pytest.mark.parametrize("spelling", ["MusiQue", "MuSiQue", "musique", "Musique", "MUSIQUE"])
def test_select_takes_any_spelling_of_a_dataset(spelling: str) -> None:
    """The paper writes MuSiQue, upstream MusiQue, Listing 1 Musique: all select the same sources."""
    assert [s.name for s in load_lock().select(spelling)] == [s.name for s in load_lock().select("MusiQue")]
    assert [s.name for s in load_lock().select("ecb")] == [s.name for s in load_lock().select("ECB+")] \
        == [s.name for s in load_lock().select("ECB")]


def test_a_wrong_dataset_name_lists_the_papers_names_not_source_ids() -> None:
    with pytest.raises(InputError) as err:
        load_lock().select("MuSiQu")
    msg = str(err.value)
    assert "ECB+, FuseReviews, SciCo, MultiNews, MuSiQue, OpenASP" in msg
    assert "hf-scico" not in msg and "musique-zip" not in msg


@pytest.mark.parametrize(("patch", "expected"), [
    ({"kind": "ftp"}, "field 'kind'"),
    ({"files": [{"url": "http://x", "dest": "../escape"}]}, "relative path inside the cache"),
    ({"files": [{"url": "http://x", "dest": "a", "sha256": "ABC"}]}, "not a lowercase hex digest"),
    ({"files": []}, "non-empty list"),
])
def test_bad_lock(patch: dict, expected: str) -> None:
    src = {"name": "x", "kind": "url", "files": [{"url": "http://x", "dest": "a"}], **patch}
    with pytest.raises(InputError, match=expected) as exc:
        parse_lock({"schema_version": 1, "sources": [src]}, "my.lock.json")
    assert str(exc.value).startswith("my.lock.json: record source 'x'")
