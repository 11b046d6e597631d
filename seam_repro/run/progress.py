"""The progress bar of the long commands (``replay``, ``score``): tqdm on stderr with an ETA from
the average rate since the start (``smoothing=0``: a moving average jumps with every slow batch), off
under ``-q``. In a log file (stderr not a terminal) it is printed at most every 30 s, so per-step
progress cannot flood the file."""

from __future__ import annotations

import sys
from typing import Any


def _tty() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


def progress_bar(total: int, desc: str, unit: str, enabled: bool, initial: int = 0) -> Any:
    """A tqdm bar writing to stderr (disabled: tqdm's no-op bar, so callers need no branches). The
    count is shown as a whole number: replay advances it by fractions of an instance per decoding step."""
    from tqdm import tqdm

    from seam_repro.verbosity import progress_wanted

    return tqdm(total=total, initial=initial, disable=not progress_wanted(enabled), unit=unit, desc=desc,
                file=sys.stderr, smoothing=0, mininterval=0.5 if _tty() else 30.0,
                bar_format="{l_bar}{bar}| {n:.0f}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]")


def advance_to(bar: Any, n: int) -> None:
    """Set ``bar``'s count to exactly ``n`` (a whole number of instances) and let it redraw when due.
    Replay moves the bar by fractions of an instance per decoding step; added back up, those drift a
    few ulps past the total, which tqdm answers with "clamping frac to range [0, 1]" and a negative
    ETA (``<-00:00``). Snapping at every stored batch keeps the count exact."""
    if bar.disable:
        return
    bar.n = min(n, bar.total) if bar.total is not None else n
    bar.update(0)


def close_bar(bar: Any) -> None:
    """Close ``bar``; in a log file print its last state once (unless it was the last printed,
    which ``mininterval`` may have held back) and end the line, where tqdm's close() would print it a
    second time."""
    if not _tty():
        if not bar.disable:
            if bar.last_print_n != bar.n:
                bar.refresh()
            sys.stderr.write("\n")
        bar.disable = True
    bar.close()
