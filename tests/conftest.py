"""Figures a test measures that a reader of the CI log should see even when the test passes (the
default generation mode's flip counts beside the deterministic mode's zero): a test hands a line to
the ``measured`` fixture and it is printed in pytest's terminal summary.

The lines travel as the test's ``user_properties``, which pytest-xdist sends from its workers to the
controlling process with each report, so they reach the summary whether or not the suite runs in
parallel (``make test`` runs it with ``-n auto``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

MEASURED: list[str] = []


@pytest.fixture
def measured(request: pytest.FixtureRequest) -> Callable[[str], None]:
    return lambda line: request.node.user_properties.append(("measured", line))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "teardown":
        MEASURED.extend(str(value) for key, value in report.user_properties if key == "measured")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if MEASURED:
        terminalreporter.section("measured (not pass/fail)")
        for line in MEASURED:
            terminalreporter.write_line(line)
