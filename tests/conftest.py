"""Figures a test measures that a reader of the CI log should see even when the test passes (the
default generation mode's flip counts beside the deterministic mode's zero): a test appends a line to
``MEASURED`` through the ``measured`` fixture and it is printed in pytest's terminal summary."""

from __future__ import annotations

from collections.abc import Callable

import pytest

MEASURED: list[str] = []


@pytest.fixture
def measured() -> Callable[[str], None]:
    return MEASURED.append


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if MEASURED:
        terminalreporter.section("measured (not pass/fail)")
        for line in MEASURED:
            terminalreporter.write_line(line)
