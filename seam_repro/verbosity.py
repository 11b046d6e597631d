"""How much a command says: ``seam-repro -q`` (warnings and errors only, no progress bars),
the default (progress and one-line notes), ``-v`` (also the kit's debug detail: thread and batch-size
choices, network probes, library retries). Set once per command line by the ``cli`` group; the
stages ask :func:`progress_wanted` and log through the ``seam_repro`` logger, so no stage needs a
flag passed down to it. The setting is an environment variable so a worker process sees it too.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TextIO

QUIET_ENV = "SEAM_REPRO_QUIET_MODE"
"""Not SEAM_REPRO_QUIET: click reads that one as the group's --quiet (auto_envvar_prefix)."""
LOGGER = "seam_repro"
PRINTED = LOGGER + ".printed"
"""Lines a command printed itself (to stdout or stderr): they reach log files, never the terminal again."""
QUIET, NORMAL, VERBOSE = -1, 0, 1
HUB_BARS_ENV = "HF_HUB_DISABLE_PROGRESS_BARS"
"""Read by huggingface_hub and transformers when imported: ``-q`` sets it unless the user did."""
_set_by_us: set[str] = set()


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """The terminal's handler: writes to whatever ``sys.stderr`` is at the time (tests swap it)."""

    @property  # type: ignore[override]
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, value: object) -> None:
        pass


def set_verbosity(level: int) -> None:
    """Configure the ``seam_repro`` logger's terminal output for this command line (replacing any
    earlier one: ``main`` may run more than once in a process)."""
    if level == QUIET:
        os.environ[QUIET_ENV] = "1"
        if HUB_BARS_ENV not in os.environ:  # the Hub and transformers bars (model download, GGUF load)
            os.environ[HUB_BARS_ENV] = "1"
            _set_by_us.add(HUB_BARS_ENV)
    else:
        os.environ.pop(QUIET_ENV, None)
        if HUB_BARS_ENV in _set_by_us:
            os.environ.pop(HUB_BARS_ENV, None)
            _set_by_us.discard(HUB_BARS_ENV)
    logger = logging.getLogger(LOGGER)
    for handler in [h for h in logger.handlers if isinstance(h, _Stderr)]:
        logger.removeHandler(handler)
    handler = _Stderr()
    handler.addFilter(lambda record: not record.name.startswith(PRINTED))
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.setLevel({QUIET: logging.WARNING, NORMAL: logging.INFO}.get(level, logging.DEBUG))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)  # file handlers (a run's replay.log) take the debug detail
    logger.propagate = False


def progress_wanted(asked: bool = True) -> bool:
    """Whether to draw a progress bar: asked for, and not under ``-q``."""
    return asked and os.environ.get(QUIET_ENV) != "1"


def log() -> logging.Logger:
    """The kit's logger: info lines reach the terminal unless ``-q``, debug lines only with ``-v``;
    both reach a run's replay.log."""
    return logging.getLogger(LOGGER)


def say(line: str, err: bool = False) -> None:
    """Print an informational line (not under ``-q``) and keep it in the run's log file."""
    if os.environ.get(QUIET_ENV) != "1":
        from seam_repro.bidi import show_bidi

        print(show_bidi(line), file=sys.stderr if err else sys.stdout, flush=True)
    log_printed(line)


def log_printed(text: str) -> None:
    """Keep text the command printed itself (a results table) in the run's log file."""
    logging.getLogger(PRINTED).info(text)


_accepted: set[Path] = set()


def run_accepted(run_dir: Path) -> None:
    """Called once replay has checked a run folder and written its run.json: from then on the
    folder's log may be written. Before, lines are held, so a refused replay or resume changes
    nothing in the folder (not even its log)."""
    _accepted.add(Path(run_dir).resolve())


class RunLog(logging.Handler):
    """The kit's log in a file (``RUN_DIR/replay.log``): what was printed plus debug detail. Lines
    are held until the run is accepted (:func:`run_accepted`), then written, and every later line
    as it comes. Appends: a resumed run adds its session below the earlier ones. A log that cannot
    be written (read-only folder, full disk) is given up silently: it must never stop or clutter
    a run."""

    def __init__(self, path: Path) -> None:
        super().__init__(logging.DEBUG)
        self.path = Path(path)
        self.pending: list[str] = []
        self.file: TextIO | None = None
        self.broken = False
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(message)s", "%Y-%m-%dT%H:%M:%S"))

    def emit(self, record: logging.LogRecord) -> None:
        if self.broken:
            return
        try:
            self.pending.append(self.format(record))
            self.write_pending()
        except Exception:  # noqa: BLE001 (see the class docstring)
            self.broken = True

    def write_pending(self) -> None:
        if self.file is None:
            if self.path.parent.resolve() not in _accepted:
                return
            self.file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self.file.write("\n".join(self.pending) + "\n")
        self.file.flush()
        self.pending.clear()

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
        super().close()


@contextmanager
def run_log(path: Path) -> Iterator[RunLog]:
    """Send the kit's log (debug level) to ``path`` while the block runs."""
    handler = RunLog(path)
    logger = logging.getLogger(LOGGER)
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        if handler.pending and not handler.broken:  # the run was accepted after the last line
            with suppress(OSError):
                handler.write_pending()
        handler.close()
        _accepted.discard(handler.path.parent.resolve())
