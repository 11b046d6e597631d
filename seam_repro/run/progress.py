"""The progress bar of the long commands (``replay``, ``score``): tqdm on stderr, one refresh per
call to ``update`` and an ETA from the average rate since the start (``smoothing=0``: a moving
average jumps with every slow batch)."""

from __future__ import annotations

import sys
from typing import Any


def progress_bar(total: int, desc: str, unit: str, enabled: bool, initial: int = 0) -> Any:
    """A tqdm bar writing to stderr (disabled: tqdm's no-op bar, so callers need no branches)."""
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, unit=unit, desc=desc, file=sys.stderr, smoothing=0,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}{postfix}]")


def close_bar(bar: Any, enabled: bool) -> None:
    """Close ``bar``; in a log file (stderr not a terminal) print its last state once (unless it
    was the last printed) and end the line, where tqdm's close() would print it a second time."""
    if not getattr(sys.stderr, "isatty", lambda: False)():
        if enabled and not bar.disable and bar.last_print_n != bar.n:
            bar.refresh()
        bar.disable = True
        if enabled:
            sys.stderr.write("\n")
    bar.close()
