"""The links of README.md and of the docs/*.md pages, and the headings that --help texts name, all
exist: an in-page ``#anchor`` must be a heading of that page, a link to another file must name a file
of the repository (and, with ``#anchor``, a heading of that page).

Old main: Contents listed "Other suites" whose heading was missing, left "Importing outputs made
elsewhere" out, and `replay --model-args` help pointed to a heading 'Model arguments' that no
version of the README had. When the README became a guide, its reference sections moved to docs/
pages, so help texts name ``docs/<page>.md: 'Heading'`` (or ``README: 'Heading'``).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import click

from seam_repro.cli import COMMANDS, LazyGroup

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
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


def broken_links(page: Path) -> list[str]:
    """The links of ``page`` (outside code) whose file or heading does not exist; web links are not checked."""
    bad = []
    for target in LINK.findall(FENCE.sub("", page.read_text("utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, frag = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or REPO.resolve() not in [dest, *dest.parents]:
            bad.append(target)
        elif frag and (dest.suffix != ".md" or frag not in anchors(dest.read_text("utf-8"))):
            bad.append(target)
    return bad


def test_every_link_of_the_readme_and_the_docs_pages_resolves() -> None:
    assert len(PAGES) > 10, PAGES
    broken = {p.relative_to(REPO).as_posix(): b for p in PAGES if (b := broken_links(p))}
    assert not broken, f"links to missing files or headings: {broken}"


def test_the_readme_links_every_docs_page() -> None:
    """The README is the way in: every docs page is reachable from its Documentation map."""
    text = README.read_text("utf-8")
    section = text.split("## Documentation", 1)[1].split("\n## ", 1)[0]
    linked = set(re.findall(r"\]\((docs/[^)#]+)\)", section))
    assert linked == {p.relative_to(REPO).as_posix() for p in PAGES[1:]}, linked


def test_every_docs_page_opens_with_what_it_is_for() -> None:
    """A title, then one paragraph of prose (not a table, list, code or another heading)."""
    for page in PAGES[1:]:
        lines = page.read_text("utf-8").split("\n\n")
        assert lines[0].startswith("# ") and "\n" not in lines[0], page
        assert lines[1][:1].isalpha() or lines[1][:1] in "`*", (page, lines[1][:60])


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


HEADING_REF = re.compile(r"(README|docs/[\w.-]+\.md):? ['\"]([^'\"]+)['\"]")


def missing_headings(texts: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(where, page, heading) for each ``README: 'Heading'`` / ``docs/x.md: 'Heading'`` in ``texts``
    whose page lacks a heading starting with that text."""
    missing = []
    for where, text in texts:
        for page, ref in HEADING_REF.findall(text):
            path = README if page == "README" else REPO / page
            names = [h for _, h in headings(path.read_text("utf-8"))] if path.is_file() else []
            if not any(h.replace("`", "").lower().startswith(ref.lower()) for h in names):
                missing.append((where, page, ref))
    return missing


def test_help_texts_name_existing_readme_headings() -> None:
    refs = [(cmd, m) for cmd, text in _help_texts() for m in HEADING_REF.findall(text)]
    assert len(refs) >= 2, refs  # replay --model-args, datasets check --data-dir
    missing = missing_headings(_help_texts())
    assert not missing, f"--help names headings that do not exist: {missing}"


def test_error_messages_name_existing_headings() -> None:
    """The offline route `fetch` and `replay` print names the page and heading of the data layout."""
    from seam_repro.commands.fetch import OFFLINE_ROUTE

    assert HEADING_REF.search(OFFLINE_ROUTE), OFFLINE_ROUTE
    assert not missing_headings([("fetch OFFLINE_ROUTE", OFFLINE_ROUTE)])
    assert missing_headings([("x", "docs/data.md: 'No such heading'")])  # the check can fail


def test_merge_help_shows_merge_examples() -> None:
    """Old main: `merge --help` printed replay's examples (the two commands shared one epilog)."""
    from seam_repro.commands.replay import merge

    lines = [ln.strip() for ln in (merge.epilog or "").splitlines() if ln.strip().startswith("seam-repro")]
    assert lines and all(ln.startswith("seam-repro merge") for ln in lines), lines
