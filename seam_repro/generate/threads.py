"""How many CPU threads torch may use for local weights on CPU (hf backend, embedded model).

torch's default, one thread per core of the machine, makes OpenMP's busy-waiting threads fight for
cores this process may not use or other jobs keep busy (issue 26, ``benchmarks/bench_threads.py``). So
the count is the usable cores (affinity, cgroup quota) less the busy ones (load), unless the user sets
it: ``--threads N`` or ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` (torch reads those itself).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import NamedTuple

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
"""Environment variables that set torch's CPU thread count; an explicit one is respected."""
CGROUP_ROOT = Path("/sys/fs/cgroup")


class ThreadChoice(NamedTuple):
    """The thread count and why it was chosen (recorded in run.json's session)."""

    threads: int
    source: str
    """``--threads``, the environment variable's name, or ``auto``."""
    usable_cores: int
    load: float | None

    def as_dict(self) -> dict[str, object]:
        return self._asdict()


def cgroup_cpu_limit(root: Path = CGROUP_ROOT) -> float | None:
    """CPUs the cgroup's quota allows (cgroup v2 ``cpu.max``, else v1 ``cpu.cfs_quota_us`` /
    ``cpu.cfs_period_us``), or None when there is no quota or no cgroup file to read."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota_us = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period_us = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def usable_cores(root: Path = CGROUP_ROOT) -> int:
    """Cores this process may run on: its CPU affinity, capped by the cgroup quota (rounded up)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    limit = cgroup_cpu_limit(root)
    if limit is not None:
        cores = min(cores, max(1, math.ceil(limit)))
    return max(1, cores)


def busy_cores(loadavg: Path = Path("/proc/loadavg")) -> float | None:
    """Cores other work keeps busy: the 1-minute load average, or the processes runnable right now
    less this one where that is higher (the average lags a job started seconds ago by a minute)."""
    try:
        fields = loadavg.read_text().split()
        running = int(fields[3].split("/")[0]) - 1
        return max(float(fields[0]), float(running))
    except (OSError, ValueError, IndexError):
        try:
            return os.getloadavg()[0]
        except (AttributeError, OSError):
            return None


def choose_threads(explicit: int | None = None, *, environ: dict[str, str] | None = None,
                   cores: int | None = None, load: float | None = None) -> ThreadChoice:
    """``--threads`` if given, else an explicit ``OMP_NUM_THREADS``/``MKL_NUM_THREADS``, else the
    usable cores less the busy ones (:func:`busy_cores`, rounded to nearest, at least 1). ``environ``, ``cores`` and
    ``load`` default to this process's; tests pass their own."""
    env = os.environ if environ is None else environ
    n_cores = usable_cores() if cores is None else cores
    load = busy_cores() if load is None else load
    if explicit is not None:
        return ThreadChoice(explicit, "--threads", n_cores, load)
    for name in THREAD_ENV:
        value = env.get(name, "").strip()
        if value.isdigit() and int(value) >= 1:
            return ThreadChoice(int(value), name, n_cores, load)
    free = n_cores if load is None else n_cores - load
    return ThreadChoice(max(1, min(n_cores, math.floor(free + 0.5))), "auto", n_cores, load)


def apply_threads(choice: ThreadChoice) -> None:
    """Set torch's intra-op thread count (torch already follows an environment variable itself)."""
    if choice.source in THREAD_ENV:
        return
    import torch

    torch.set_num_threads(choice.threads)
