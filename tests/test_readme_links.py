"""README.md's own links and the README headings that --help texts name all exist.

Old main: Contents listed "Other suites" whose heading was missing, left "Importing outputs made
elsewhere" out, and `replay --model-args` help pointed to a heading 'Model arguments' that no
version of the README had.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import click

from seam_repro.cli import COMMANDS, LazyGroup

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```.*?^```[^\n]*$", re.S | re.M)
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)


def headings(text: str) -> list[tuple[int, str]]:
    """(level, text) of every Markdown heading outside fenced code (shell comments are not headings)."""
    return [(len(m.group(1)), m.group(2)) for m in HEADING.finditer(FENCE.sub("", text))]


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation other than ``-`` and ``_`` dropped,
    each space a ``-`` (so ``A: b- c`` gives ``a-b--c``)."""
    text = re.sub(r"<[^>]+>", "", heading).lower()
    kept = "".join(ch for ch in text if ch in "-_ " or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, h in headings(text):
        a = anchor(h)
        n = seen.get(a, 0)
        out.add(a if n == 0 else f"{a}-{n}")
        seen[a] = n + 1
    return out


def contents(text: str) -> list[tuple[str, str]]:
    """(title, target) of each entry of the Contents list."""
    section = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\d+\.\s+\[(.+?)\]\(#([^)]+)\)", section, re.M)


def test_anchor_rule() -> None:
    assert anchor("Other suites: ZeroSCROLLS- and IGCS-style") == "other-suites-zeroscrolls--and-igcs-style"
    assert anchor("Data folder layout (`--data-dir`)") == "data-folder-layout---data-dir"
    assert anchor("Profiles: `upstream` and `seam-repro-1`") == "profiles-upstream-and-seam-repro-1"
    assert anchors("# a\n```bash\n# not a heading\n```\n## A\n") == {"a", "a-1"}


def test_every_readme_link_has_its_heading() -> None:
    text = README.read_text("utf-8")
    have = anchors(text)
    links = set(re.findall(r"\]\(#([^)]+)\)", FENCE.sub("", text)))
    assert links and not sorted(links - have), f"README links to missing headings: {sorted(links - have)}"


def test_contents_lists_every_section_in_order() -> None:
    text = README.read_text("utf-8")
    entries = contents(text)
    assert all(anchor(title) == target for title, target in entries), entries
    sections = [h for level, h in headings(text) if level == 2 and h != "Contents"]
    assert [title for title, _ in entries] == sections


def _help_texts() -> list[tuple[str, str]]:
    """(command, text) of every help string, option help and epilog of the whole CLI."""
    out = []

    def walk(name: str, cmd: click.Command) -> None:
        out.extend((name, t) for t in (cmd.help, cmd.epilog, cmd.short_help) if t)
        out.extend((name, p.help) for p in cmd.params if isinstance(p, click.Option) and p.help)
        if isinstance(cmd, click.Group):
            for sub, subcmd in cmd.commands.items():
                walk(f"{name} {sub}", subcmd)

    group = LazyGroup()
    for name in COMMANDS:
        cmd = group.get_command(click.Context(group), name)
        assert cmd is not None
        walk(name, cmd)
    return out


def test_help_texts_name_existing_readme_headings() -> None:
    names = [h for _, h in headings(README.read_text("utf-8"))]
    refs = [(cmd, ref) for cmd, text in _help_texts() for ref in re.findall(r"README:? ['\"]([^'\"]+)['\"]", text)]
    assert len(refs) >= 2, refs  # replay --model-args, datasets check --data-dir
    missing = [(cmd, ref) for cmd, ref in refs
               if not any(h.replace("`", "").lower().startswith(ref.lower()) for h in names)]
    assert not missing, f"--help names README headings that do not exist: {missing}"


def test_merge_help_shows_merge_examples() -> None:
    """Old main: `merge --help` printed replay's examples (the two commands shared one epilog)."""
    from seam_repro.commands.replay import merge

    lines = [ln.strip() for ln in (merge.epilog or "").splitlines() if ln.strip().startswith("seam-repro")]
    assert lines and all(ln.startswith("seam-repro merge") for ln in lines), lines
