"""The shared I/O layer: bounded JSON reading, atomic writes, output guard."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from seam_repro.errors import InputError
from seam_repro.files.atomic import OutputError, atomic_dir, atomic_write_json, atomic_write_text
from seam_repro.files.guard import guard_output
from seam_repro.files.reading import iter_jsonl, read_json


def test_deep_nesting_is_one_line_error(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="nested deeper"):
        read_json(p, expect=None)


def test_brackets_inside_strings_do_not_count(tmp_path):
    p = tmp_path / "s.json"
    p.write_text('{"a": "' + "[" * 1000 + '\\"]"}')
    assert read_json(p)["a"].startswith("[[")


@pytest.mark.parametrize("text", ["NaN", '{"t": Infinity}', '{"t": -Infinity}'])
def test_non_finite_refused(tmp_path, text):
    p = tmp_path / "x.json"
    p.write_text(text)
    with pytest.raises(InputError, match="finite"):
        read_json(p, expect=None)


def test_wrong_top_level_type(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("[1]")
    with pytest.raises(InputError, match="expected a JSON object"):
        read_json(p)


def test_jsonl_names_line_and_rejects_binary(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\n\n\xff\xfe junk\n')
    it = iter_jsonl(p)
    assert next(it) == (1, {"a": 1})
    with pytest.raises(InputError, match="line 3"):
        next(it)


def test_atomic_write_keeps_old_content_on_read_only_folder(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root ignores folder permissions")
    target = tmp_path / "out.json"
    atomic_write_json(target, {"v": 1})
    os.chmod(tmp_path, 0o500)
    try:
        with pytest.raises(OutputError, match="permission"):
            atomic_write_json(target, {"v": 2})
    finally:
        os.chmod(tmp_path, 0o700)
    assert read_json(target) == {"v": 1}


def test_atomic_write_under_file_size_limit_keeps_old_content(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
        "from seam_repro.files.atomic import atomic_write_text, OutputError\n"
        "try:\n"
        f"    atomic_write_text({str(target)!r}, 'x' * 100000)\n"
        "except OutputError as e:\n"
        "    print(e); sys.exit(2)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "too large" in proc.stdout
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_output_below_regular_file(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match="regular file|a file of that name"):
        atomic_write_text(tmp_path / "f" / "sub" / "out.txt", "x")


def test_atomic_dir_leaves_nothing_on_failure(tmp_path):
    final = tmp_path / "merged"
    with pytest.raises(RuntimeError):
        with atomic_dir(final) as work:
            (work / "a").write_text("x")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []
    with atomic_dir(final) as work:
        (work / "a").write_text("x")
    assert (final / "a").read_text() == "x"
    with pytest.raises(OutputError, match="already exists"):
        with atomic_dir(final):
            pass


def test_guard_output(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text("{}")
    with pytest.raises(OutputError, match="inputs"):
        guard_output(tmp_path / "sub" / ".." / "config.json", inputs=[cfg], option="-o")
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(OutputError, match="reads"):
        guard_output(run / "run.json", read_dirs=[run])
    guard_output(tmp_path / "other.json", inputs=[cfg], read_dirs=[run])


def test_guard_output_refuses_exactly_what_resolved_paths_compare_equal(tmp_path, monkeypatch):
    """The inode shortcut (guard._file_id) decides as comparing every input's resolved path does,
    through symlinks, ``..`` after a symlinked folder, hard links, dangling links and missing files."""
    import itertools

    from seam_repro.files import guard

    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "real" / "a.json").write_text("{}")
    (tmp_path / "real" / "deep" / "b.json").write_text("{}")
    (tmp_path / "link").symlink_to(tmp_path / "real" / "deep")  # link/.. is real/, not tmp_path
    (tmp_path / "a-link.json").symlink_to(tmp_path / "real" / "a.json")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    os.link(tmp_path / "real" / "a.json", tmp_path / "hard.json")
    names = ["real/a.json", "real/deep/b.json", "link/b.json", "link/../a.json", "a-link.json", "hard.json",
             "dangling.json", "nowhere.json", "missing/../real/a.json", "real/deep/../a.json", "real", "link",
             "real/./a.json", "new.json"]
    monkeypatch.chdir(tmp_path)

    def verdict(output, item):
        try:
            guard_output(output, inputs=[item])
        except OutputError:
            return "refused"
        return "ok"

    def reference(output, item):  # the guard before the shortcut: resolved paths compared
        return "refused" if guard._resolved(output) == guard._resolved(item) else "ok"

    for output, item in itertools.product(names, repeat=2):
        for o, i in [(output, item), (tmp_path / output, item), (output, str(tmp_path / item))]:
            assert verdict(o, i) == reference(o, i), (o, i)


def test_atomic_write_gives_the_mode_open_would(tmp_path):
    mask = os.umask(0o022)
    try:
        new = tmp_path / "new.json"
        atomic_write_json(new, {"v": 1})
        assert new.stat().st_mode & 0o777 == 0o644
        kept = tmp_path / "kept.json"
        kept.write_text("{}")
        os.chmod(kept, 0o640)
        atomic_write_json(kept, {"v": 2})
        assert kept.stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(mask)


@pytest.mark.parametrize("writev", ["real", "short", "absent"])
def test_atomic_write_of_chunks_writes_their_concatenation(tmp_path, monkeypatch, writev):
    """Chunks go out by writev in batches of 1024, unjoined; a short writev (as a signal or a
    file-size limit gives) and a system without writev finish with write."""
    import random

    from seam_repro.files import atomic

    rng = random.Random(7)
    chunks = [rng.randbytes(rng.choice([0, 1, 5, 300, 9000])) for _ in range(2600)]
    real = os.writev
    if writev == "short":
        monkeypatch.setattr(atomic.os, "writev", lambda fd, bufs: real(fd, [b"".join(bufs)[:rng.randint(0, 5000)]]))
    elif writev == "absent":
        monkeypatch.delattr(atomic.os, "writev")
    for data in (chunks, [], [b""], chunks[:3], b"plain bytes"):
        atomic.atomic_write_bytes(tmp_path / "out.bin", data)
        assert (tmp_path / "out.bin").read_bytes() == (data if isinstance(data, bytes) else b"".join(data))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_a_file_read_whole_is_hashed_once_under_any_of_its_names(tmp_path, monkeypatch):
    """sha256_file reuses the hash of the bytes read_bytes_hashed parsed, found by the file's inode
    (through a symlink or another spelling of the path too), and hashes afresh once the file is
    replaced or rewritten."""
    import hashlib

    import seam_repro.hashing as hashing

    data = tmp_path / "d" / "data.json"
    data.parent.mkdir()
    data.write_bytes(b'{"a": 1}')
    (tmp_path / "link.json").symlink_to(data)
    assert hashing.read_bytes_hashed(data) == b'{"a": 1}'
    monkeypatch.setattr(hashing, "open", lambda *a: pytest.fail("read a second time"), raising=False)
    want = hashlib.sha256(b'{"a": 1}').hexdigest()
    for name in (data, tmp_path / "link.json", tmp_path / "d" / ".." / "d" / "data.json"):
        assert hashing.sha256_file(name) == want
    monkeypatch.undo()
    atomic_write_text(data, '{"a": 2}')  # a new inode
    assert hashing.sha256_file(tmp_path / "link.json") == hashlib.sha256(b'{"a": 2}').hexdigest()
    hashing.read_bytes_hashed(data)
    with open(data, "ab") as fh:  # the same inode, another size
        fh.write(b" ")
    assert hashing.sha256_file(data) == hashlib.sha256(b'{"a": 2} ').hexdigest()


def test_atomic_write_never_uses_a_sibling_that_exists(tmp_path, monkeypatch):
    """The temporary sibling is created exclusively: a file or a symlink already at a drawn name is
    left alone (never followed, never truncated) and another name is drawn."""

    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    (tmp_path / ".out.txt.000000000000.tmp").write_text("keep too")
    (tmp_path / ".out.txt.010101010101.tmp").symlink_to(victim)
    draws = iter([b"\0" * 6, b"\1" * 6, b"\2" * 6])
    monkeypatch.setattr(os, "urandom", lambda n: next(draws))
    atomic_write_text(tmp_path / "out.txt", "new")
    assert (tmp_path / "out.txt").read_text() == "new" and victim.read_text() == "keep"
    assert (tmp_path / ".out.txt.000000000000.tmp").read_text() == "keep too"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.txt.000000000000.tmp", ".out.txt.010101010101.tmp",
                                                          "out.txt", "victim.txt"]


def _depth_by_characters(text: str, limit: int) -> bool:
    """The nesting check as first written: one step per character, strings skipped."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def test_depth_check_equals_the_character_loop() -> None:
    """The regex-based nesting check refuses exactly what the per-character scan refused: brackets
    inside strings (escaped quotes included), unterminated strings and stray closers."""
    import random

    from seam_repro.files.reading import _depth_exceeds

    rng = random.Random(3)
    pieces = ["[", "]", "{", "}", '"', "\\", "a", ",", "\n", '"\\"', "[[[[", "]]", '"[["']
    flagged = 0
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        limit = rng.randint(0, 6)
        expected = _depth_by_characters(text, limit)
        assert _depth_exceeds(text, limit) == expected, (text, limit)
        flagged += expected
    assert 2000 < flagged < 18000, flagged


def test_staged_file_lands_only_when_the_block_succeeds(tmp_path: Path) -> None:
    from seam_repro.files.atomic import staged_file

    target = tmp_path / "prompts.jsonl"
    target.write_text("old\n")
    with pytest.raises(ValueError), staged_file(target) as staged:
        staged.write_text("new\n")
        raise ValueError("a check failed")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["prompts.jsonl"]
    with staged_file(target) as staged:
        staged.write_text("new\n")
    assert target.read_text() == "new\n" and sorted(p.name for p in tmp_path.iterdir()) == ["prompts.jsonl"]
    with pytest.raises(OutputError, match="prompts.jsonl: cannot write"), staged_file(target) as staged:
        staged.mkdir()
        (staged / "x").write_text("a folder cannot replace a file")
    assert target.read_text() == "new\n"


def _depth_by_hand(text: str) -> int:
    """Deepest bracket nesting outside JSON strings, one character at a time (the reference)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def test_json_depth_guard_matches_a_character_walk() -> None:
    """The guard's shortcuts (an opener count, regex-stripped strings) against the plain walk, on
    texts of brackets, quotes, escapes and filler, valid JSON or not."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from seam_repro.files.reading import _depth_exceeds

    @settings(max_examples=500, deadline=None)
    @given(st.lists(st.sampled_from(['[', ']', '{', '}', '"', '\\', '\\"', 'a', ',', ' ']), max_size=60),
           st.integers(0, 8))
    def check(parts: list[str], limit: int) -> None:
        text = "".join(parts)
        assert _depth_exceeds(text, limit) == (_depth_by_hand(text) > limit)

    check()


def test_json_depth_guard_without_backslashes_matches_a_character_walk() -> None:
    """Without a backslash the guard drops adjacent quote pairs and works on UTF-8 bytes: checked
    on quote-heavy texts with non-ASCII characters and lone surrogates, and on deep valid JSON."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from seam_repro.files.reading import _depth_exceeds

    @settings(max_examples=1000, deadline=None)
    @given(st.lists(st.sampled_from(['[', ']', '{', '}', '"', '""', '"["', '"]"', 'é', '\ud800', '😀', 'a', ',']),
                    max_size=80), st.integers(0, 10))
    def check(parts: list[str], limit: int) -> None:
        text = "".join(parts)
        assert _depth_exceeds(text, limit) == (_depth_by_hand(text) > limit)

    check()
    deep = '{"k": ' * 40 + '["[[[", "", "]"]' + "}" * 40
    assert [_depth_exceeds(deep, n) for n in (40, 41)] == [True, False] and _depth_by_hand(deep) == 41


# The depth guard's byte-level shortcuts against the character walk (moved from the retired
# test_data_fast_paths): the guard is what keeps hostile JSON off the parser.

def _nested(rng: random.Random, depth: int) -> object:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice([1, "x", 'q"[', "]}", "é{", "€]", "\U0001f600[", None, True, "[[", "{"])
    if rng.random() < 0.5:
        return [_nested(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["k", "[", "é", "}"]) + str(i): _nested(rng, depth - 1) for i in range(rng.randint(0, 3))}


def test_depth_guard_without_escapes_matches_a_character_walk() -> None:
    """Texts with no backslash take the quote-splitting path (and deep ones the pair peeling):
    JSON documents with brackets in strings and non-ASCII text, cut or not, balanced or not."""
    from seam_repro.files.reading import _depth_exceeds

    rng = random.Random(16)
    flagged = unescaped = 0
    for _ in range(3000):
        text = json.dumps(_nested(rng, rng.randint(0, 12)), ensure_ascii=rng.random() < 0.2)
        if rng.random() < 0.3 and text:
            cut = rng.randrange(len(text))
            text = text[:cut] + text[cut + 1:]
        unescaped += "\\" not in text
        for limit in (1, 2, 3, 5, 8):
            expected = _depth_by_hand(text) > limit
            assert _depth_exceeds(text, limit) == expected, (text, limit)
            flagged += expected
    assert flagged > 1000 and unescaped > 1000, (flagged, unescaped)


@pytest.mark.parametrize("depth", [63, 64, 65, 100_000])
def test_depth_guard_at_and_past_the_limit(depth: int) -> None:
    from seam_repro.files.reading import MAX_JSON_DEPTH, _depth_exceeds

    for text in ("[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth, "[" * depth,
                 "[" * depth + '"]' + "]" * depth, "[" * depth + "]" * depth + "]", "][" * depth):
        assert _depth_exceeds(text, MAX_JSON_DEPTH) == (_depth_by_hand(text) > MAX_JSON_DEPTH), text[:80]


def test_depth_guard_on_long_ascii_texts_skips_no_check() -> None:
    """Long ASCII texts skip the opener count: shallow, deep, unbalanced and in-string brackets
    past 64 KiB of filler get the character walk's answer."""
    from seam_repro.files.reading import MAX_JSON_DEPTH, _depth_exceeds

    filler = "a" * 70_000
    for core in ("[]", "[" * 65 + "]" * 65, '["' + "[" * 80 + '"]', "{" * 64 + "}" * 64, "]" * 70 + "[" * 64,
                 '"' + "[" * 70, "[" * 70 + '"\\"]' + "]" * 70):
        for text in (filler + core, core + filler, '"' + filler + '"' + core):
            assert _depth_exceeds(text, MAX_JSON_DEPTH) == (_depth_by_hand(text) > MAX_JSON_DEPTH), core
