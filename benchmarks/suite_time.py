"""Where the test suite's wall time goes: its CPU, and the seconds a core sits idle.

    python benchmarks/suite_time.py [PYTEST ARGS...]

runs `python -m pytest` (the whole suite, or what the arguments select) while sampling the
machine's CPU counters (/proc/stat, Linux) once a second, and times each test module in the
test process that runs it. It prints the run's wall time, the CPU seconds of every process
(user and system), the core-seconds left idle, the seconds the hypervisor took (steal), the
longest modules, and each stretch of ten seconds with half a core or more idle and the modules
then running. On a shared machine a run's CPU seconds move by several percent from hour to hour; the
idle core-seconds are the suite's own doing (two modules that both wait, on a sandbox's
deadline, a kernel or pip, dealt out side by side: tests/conftest.py's DEALT_FIRST).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")
WINDOW = 10.0  # seconds per stretch in the idle report
PLUGIN = """
import json, os, time

_now = {}


def pytest_runtest_protocol(item, nextitem):
    module = item.nodeid.split("::")[0]
    if _now.get("module") != module:
        _flush()
        _now.update(module=module, start=time.time())


def _flush():
    if "module" in _now:
        with open(os.environ["SUITE_TIME_OUT"], "a") as out:
            row = dict(worker=os.environ.get("PYTEST_XDIST_WORKER", "main"), end=time.time(), **_now)
            out.write(json.dumps(row) + "\\n")


def pytest_sessionfinish(session):
    _flush()
"""


def cpu_counters() -> dict[str, float]:
    """The machine's CPU counters since boot, in core-seconds."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()[1:]
    names = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
    return {name: int(value) / TICK for name, value in zip(names, fields)}


def busy_seconds(before: dict[str, float], after: dict[str, float]) -> float:
    """The core-seconds every process of the machine spent between two readings of
    `cpu_counters` (user, nice, system and interrupts: all but idle, I/O wait and steal)."""
    return sum(after[k] - before[k] for k in ("user", "nice", "system", "irq", "softirq"))


def _sample(samples: list[tuple[float, dict[str, float]]], stop: threading.Event) -> None:
    while not stop.wait(1.0):
        samples.append((time.time(), cpu_counters()))


def main(args: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "suite_time_plugin.py").write_text(PLUGIN)
        out = Path(tmp) / "modules.jsonl"
        env = {
            **os.environ,
            "SUITE_TIME_OUT": str(out),
            "PYTHONPATH": os.pathsep.join(filter(None, [tmp, os.environ.get("PYTHONPATH")])),
        }
        samples = [(time.time(), cpu_counters())]
        stop = threading.Event()
        sampler = threading.Thread(target=_sample, args=(samples, stop), daemon=True)
        sampler.start()
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "suite_time_plugin", *args], cwd=ROOT, env=env
        )
        stop.set()
        sampler.join()
        samples.append((time.time(), cpu_counters()))
        modules = (
            [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
        )
    _report(samples, modules)
    return run.returncode


def _report(samples: list[tuple[float, dict[str, float]]], modules: list[dict]) -> None:
    (t0, first), (t1, last) = samples[0], samples[-1]
    spent = {name: last[name] - first[name] for name in first}
    cpu = busy_seconds(first, last)
    print(
        f"\nwall {t1 - t0:.1f} s   CPU {cpu:.0f} core-s   idle {spent['idle']:.0f} core-s"
        f"   steal {spent['steal']:.0f} core-s   ({os.cpu_count()} cores)"
    )
    if not modules:
        return
    print("\nthe longest modules (start and wall time, seconds; the test process):")
    for m in sorted(modules, key=lambda m: m["end"] - m["start"], reverse=True)[:15]:
        print(
            f"  {m['module']:48s} {m['start'] - t0:6.1f} {m['end'] - m['start']:6.1f}  {m['worker']}"
        )
    idle: dict[int, float] = {}
    for (_, before), (t, after) in zip(samples, samples[1:]):
        window = int((t - t0) // WINDOW)
        idle[window] = idle.get(window, 0.0) + after["idle"] - before["idle"]
    lines = []
    for window, seconds in sorted(idle.items()):
        if seconds >= WINDOW / 2:  # half a core or more, on average, over the stretch
            middle = t0 + (window + 0.5) * WINDOW
            running = [Path(m["module"]).stem for m in modules if m["start"] <= middle < m["end"]]
            start = window * WINDOW
            lines.append(
                f"  {start:5.0f}-{start + WINDOW:<5.0f} {seconds:5.1f}  {', '.join(running)}"
            )
    print(f"\n{WINDOW:.0f} s stretches with half a core or more idle (core-seconds; running):")
    print("\n".join(lines) if lines else "  none")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
