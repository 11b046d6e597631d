"""Figures a test measures that a reader of the CI log should see even when the test passes (the
default generation mode's flip counts beside the deterministic mode's zero): a test hands a line to
the ``measured`` fixture and it is printed in pytest's terminal summary.

The lines travel as the test's ``user_properties``, which pytest-xdist sends from its workers to the
controlling process with each report, so they reach the summary whether or not the suite runs in
parallel (``make test`` runs it with ``-n auto``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from itertools import islice

import pytest

MEASURED: list[str] = []


def _fair_thread_share() -> int | None:
    """torch's intra-op threads for one pytest-xdist worker: the usable cores shared out among the
    workers (at least 1). None outside xdist (one process: torch's own default is right)."""
    # the kit's own count (affinity, capped by the cgroup quota); threads.py does not import torch
    from seam_repro.generate.threads import usable_cores

    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if not workers.isdigit() or int(workers) < 1:
        return None
    return max(1, usable_cores() // int(workers))


THREAD_SHARE = _fair_thread_share()


def _pin_torch_threads() -> None:
    """torch is not imported here: a worker that has not imported it has no torch work to pin."""
    torch = sys.modules.get("torch")
    if THREAD_SHARE is not None and torch is not None and hasattr(torch, "set_num_threads"):
        torch.set_num_threads(THREAD_SHARE)


def expected_seconds(item: pytest.Item) -> float:
    """What ``@pytest.mark.slow(seconds=N)`` says the test takes on the 2-core CI machine; 0 unmarked."""
    return max((float(m.kwargs.get("seconds", 0)) for m in item.iter_markers("slow")), default=0.0)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long tests first, spread over the workers. pytest-xdist's worksteal hands each of its W
    workers one contiguous block of the collected order and lets an idle worker steal from the end of
    another's queue, so a long test left late in a block ran while the other worker sat idle (the
    README test, last in name order, kept one worker busy a minute after the other had finished).
    Here the tests with an expected time are dealt longest first to the least loaded of W bins, and
    each bin opens one block; the rest keep their order (in one process, W = 1: longest first)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    long = sorted((i for i in items if expected_seconds(i) > 0), key=expected_seconds, reverse=True)
    if not long:
        return
    bins: list[list[pytest.Item]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for item in long:
        k = loads.index(min(loads))
        bins[k].append(item)
        loads[k] += expected_seconds(item)
    rest = iter(i for i in items if expected_seconds(i) == 0)
    ordered: list[pytest.Item] = []
    left = len(items)
    for k, head in enumerate(bins):
        size = left // (workers - k)  # the block worksteal sends worker k
        block = head + list(islice(rest, max(0, size - len(head))))
        ordered += block
        left -= len(block)
    ordered += list(rest)
    items[:] = ordered


def pytest_collection_finish(session: pytest.Session) -> None:
    _pin_torch_threads()  # collecting imported torch; the first module fixtures start pinned too


@pytest.fixture(autouse=True)
def _torch_threads_fair_share() -> Iterator[None]:
    """Each test (and the module fixtures set up after it) starts with torch at the worker's share
    of the cores. torch's default is every core, and a count a test's in-process replay chose
    (``apply_threads``: from the load at that moment) stayed set for the tests after it in that
    worker; with ``make test``'s 2 workers on 2 cores, two threads per worker oversubscribe and
    in-process generation took ~10x the CPU time and wall of one thread. A test still sets its own
    count (tests/test_threads.py); only the count it starts from is fixed."""
    _pin_torch_threads()
    yield
    _pin_torch_threads()


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
