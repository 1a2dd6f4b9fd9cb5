"""What one worker may use, and the plain words for running into it."""

from __future__ import annotations

import signal
from dataclasses import dataclass

# Markers of an allocation refused by RLIMIT_AS, in Python, numpy, torch and C++.
MEMORY_MARKERS = (
    "MemoryError",
    "std::bad_alloc",
    "can't allocate memory",
    "Unable to allocate",
    "Cannot allocate memory",
    "Memory allocation still failed",  # OpenBLAS, which then ends the process
    "out of memory",
)
DEADLINE_MARGIN_SECONDS = 5.0  # the sandbox's own deadline comes this long after the caller's


@dataclass(frozen=True)
class Limits:
    """What one submission's worker may use."""

    call_seconds: float = 10.0
    """Wall clock per call (enforced by the caller via read timeouts)."""
    submission_seconds: float = 120.0
    """Wall clock for the whole submission: the caller's watchdog kills at this age, and the
    sandbox's own deadline DEADLINE_MARGIN_SECONDS later, even when the caller is stuck or gone."""
    memory_bytes: int = 4 << 30
    """Address space per process (RLIMIT_AS) and, with a cgroup, for all of them together."""
    processes: int = 64
    """Processes and threads of the worker's uid (RLIMIT_NPROC)."""
    file_bytes: int = 64 << 20
    """Largest file it may write (RLIMIT_FSIZE); also the size of its private /tmp."""
    output_bytes: int = 64 << 10
    """Student stdout/stderr kept (the rest counted and dropped)."""

    @property
    def cpu_seconds(self) -> int:
        """RLIMIT_CPU per process: the submission's time and a little more."""
        return int(self.submission_seconds) + 5

    @property
    def deadline_seconds(self) -> int:
        """The sandbox's own deadline (init's alarm), whatever the caller does."""
        return max(1, int(self.submission_seconds + DEADLINE_MARGIN_SECONDS + 0.999))


def human_bytes(n: float, binary: bool = True) -> str:
    """4294967296 -> "4 GiB"; with binary=False, 12345678 -> "12.3 MB"."""
    if binary:
        step, units = 1024, ("bytes", "KiB", "MiB", "GiB", "TiB")
    else:
        step, units = 1000, ("bytes", "kB", "MB", "GB", "TB")
    value, unit = float(n), units[0]
    for unit in units:
        if value < step or unit == units[-1]:
            break
        value /= step
    if unit == "bytes":
        return f"{int(value)} bytes"
    return f"{value:.1f} {unit}".replace(".0 ", " ")


def memory_limit_message(limits: Limits) -> str:
    """The words for a worker stopped by its memory limit: "memory limit 4 GiB reached"."""
    return f"memory limit {human_bytes(limits.memory_bytes)} reached"


def time_limit_message(limits: Limits) -> str:
    """The words for a worker stopped at the submission's time limit."""
    return f"stopped after {limits.submission_seconds:g} s (the time limit for a submission)"


def signal_words(signum: int) -> str:
    """'killed by signal SIGSEGV (segmentation fault)'."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        return f"killed by signal {signum}"
    text = (signal.strsignal(signum) or "").lower()
    return f"killed by signal {name} ({text})" if text else f"killed by signal {name}"
