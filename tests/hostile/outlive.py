# ruff: noqa - a fragment appended to the solution, with placeholders; hostile on purpose
# ---- hostile part: outliving --------------------------------------------------------------
# At import: a setsid'd daemon, a double-forked one, and one that ignores SIGTERM and SIGHUP,
# all waiting to act after grading (write __MARKER__, call __PORT__). Every function is right.
import os as _os
import subprocess as _subprocess
import sys as _sys

_LATER = """
import os, signal, socket, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
for _ in range(600):
    time.sleep(0.1)
    try:
        open("__MARKER__", "w").write("still here")
    except OSError:
        pass
    try:
        socket.create_connection(("127.0.0.1", __PORT__), timeout=0.2).sendall(b"still here")
    except OSError:
        pass
"""

_subprocess.Popen(
    [_sys.executable, "-c", _LATER, "__TOKEN__"],
    start_new_session=True,
    stdout=_subprocess.DEVNULL,
    stderr=_subprocess.DEVNULL,
)
if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        _os.execv(_sys.executable, [_sys.executable, "-c", _LATER, "__TOKEN__"])
    _os._exit(0)
_os.wait()
