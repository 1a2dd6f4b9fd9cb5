"""Warm templates (zygotes): a process that imported numpy (and torch) once, forked per sandbox.

`enable()` turns them on for this process (a batch does); `prestart()` also starts one without
waiting for it (a single `seqgrade grade`: the template imports numpy while the grader imports
itself). `spawn(..., warm=preload)` then asks the template for
`preload` to fork a launcher instead of starting a fresh one; the fork builds its sandbox exactly
as a fresh launcher would (its own uid, namespaces, limits, scratch, seccomp, fds 0-2 only) and
runs the worker program in place of an exec. See docs/sandbox.md, "Warm templates".

The template is started by this process (never forked from it: it holds nothing of the
grader), as `python -I -S -B launcher.py --zygote SOCK PARENT PRELOAD SITE_DIRS` would run it
(from its cached bytecode: `runtime.launcher_command`), with the
worker's environment and the site directories an isolated interpreter would read (no .pth
file's code runs); it dies with this process (parent-death signal). A fork is a child of the
template, so its handle (`WarmChild`) reads the wait status from an exit pipe the template
writes, and signals it through a pidfd (no pid reuse race).
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from grader.sandbox import launcher
from grader.sandbox.runtime import launcher_command, site_dirs, worker_env

START_SECONDS = 120.0  # importing torch on a loaded machine


class TemplateError(OSError):
    """The warm template could not start or answer (the caller starts a fresh launcher)."""


class WarmTemplates:
    """The warm templates one process started, by what they preloaded, and whether spawns use
    them. A forked process does not own its parent's: it forgets them at its first request."""

    def __init__(self) -> None:
        self.enabled = False
        self.owner = 0  # the pid that started `templates`
        self.templates: dict[tuple[str, ...], Template | None] = {}  # None: it could not start
        self.lock = threading.Lock()

    def enable(self, on: bool = True) -> None:
        """Use warm templates for `spawn(..., warm=...)` from now on (off: stop them all)."""
        self.enabled = on
        if not on:
            self.shutdown()

    def template_for(self, preload: Sequence[str], wait: bool = True) -> Template | None:
        """The template that preloaded `preload` (started now if needed), or None. `wait`: until a
        new one is ready (else its first fork waits; a start that fails then falls back)."""
        if not self.enabled:
            return None
        key = tuple(sorted(set(preload)))
        with self.lock:
            if self.owner != os.getpid():  # a forked process: the parent's templates are not ours
                self.templates.clear()
                self.owner = os.getpid()
            if key not in self.templates:
                try:
                    self.templates[key] = Template(key, wait=wait)
                except TemplateError:
                    self.templates[key] = None
            return self.templates[key]

    def discard(self, template: Template) -> None:
        """Forget a template that failed (the next request starts a new one)."""
        with self.lock:
            for key, known in list(self.templates.items()):
                if known is template:
                    del self.templates[key]
        template.close()

    def shutdown(self, wait: bool = True) -> None:
        """Stop every template this process started (`wait`: until each has exited)."""
        with self.lock:
            mine = self.owner == os.getpid()
            found = [t for t in self.templates.values() if t is not None]
            self.templates.clear()
        if mine:
            for template in found:
                template.close(wait)


# The process's templates: the functions below act on it (spawn asks it for a template).
WARM = WarmTemplates()
_templates = WARM.templates  # the same dict, for a test that lists what was forked


def enable(on: bool = True) -> None:
    """Use warm templates for `spawn(..., warm=...)` in this process from now on."""
    WARM.enable(on)


def wanted() -> bool:
    """What the environment asks for: `SEQGRADE_WARM=0` (or off/no/false) keeps every start cold."""
    return os.environ.get("SEQGRADE_WARM", "1").strip().lower() not in ("0", "off", "no", "false")


def enabled() -> bool:
    return WARM.enabled


def template_for(preload: Sequence[str], wait: bool = True) -> Template | None:
    """`WARM.template_for`: the template that preloaded `preload`, or None."""
    return WARM.template_for(preload, wait)


def cache_bytecode() -> None:
    """The bytecode of what a template compiles (launcher.py itself and `launcher.WARM_FILES`)
    written to the grader's cache when it is missing or older than its source, unless this
    process writes no bytecode: the template (run with -B) then reads it instead of compiling,
    about 35 ms of its start."""
    if sys.dont_write_bytecode:
        return
    import importlib.util
    from importlib.machinery import SourceFileLoader

    here = os.path.dirname(os.path.abspath(launcher.__file__))
    for name in (os.path.basename(launcher.__file__), *launcher.WARM_FILES):
        path = os.path.join(here, name)
        with contextlib.suppress(OSError, SyntaxError, ValueError, ImportError):
            cache = importlib.util.cache_from_source(path)
            if not os.path.exists(cache) or os.stat(cache).st_mtime < os.stat(path).st_mtime:
                SourceFileLoader(name[:-3], path).get_code(name[:-3])  # writes the cache


def prestart(preload: Sequence[str]) -> None:
    """Enable warm templates and start the one for `preload` without waiting for it: a single
    grade's worker then imports numpy (and torch) while this process imports the grader (two
    cores at once). A template that fails is found at its first fork, which falls back to a
    fresh launcher."""
    enable(True)
    with contextlib.suppress(OSError):  # could not even be started: the grade starts cold
        template_for(preload, wait=False)


def enable_as_wanted() -> None:
    """Warm templates on, unless the environment asks for cold starts (see `wanted`)."""
    enable(wanted())


def discard(template: Template) -> None:
    """Forget a template that failed (the next request starts a new one)."""
    WARM.discard(template)


def shutdown() -> None:
    """Stop every template this process started."""
    WARM.shutdown()


def _at_exit() -> None:
    """The templates killed as this process exits, without waiting for them to die (a few
    milliseconds each, on the grade's path): the kernel finishes them, and init reaps them."""
    WARM.shutdown(wait=False)


atexit.register(_at_exit)


class Template:
    """One warm template process and the socket its requests travel on."""

    def __init__(self, preload: tuple[str, ...], wait: bool = True) -> None:
        """Start the template; `wait`: until it is ready (else its first fork waits)."""
        self.preload = preload
        cache_bytecode()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        self._lock = threading.Lock()
        try:
            self._popen = subprocess.Popen(
                launcher_command(
                    launcher.__file__,
                    "--zygote",
                    str(theirs.fileno()),
                    str(os.getpid()),
                    ",".join(preload),
                    os.pathsep.join(site_dirs()),
                ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                env=worker_env(Path("/"), None),
                cwd="/",
            )
        finally:
            theirs.close()
        self._ready = False
        if not wait:
            return
        with self._lock:
            self._await_ready()

    def ready(self) -> bool:
        """Whether a fork would be answered without waiting: the template has imported (or has
        died, which the fork then reports as a TemplateError)."""
        if self._ready:
            return True
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
        except (OSError, ValueError):  # closed
            return True
        return bool(readable)

    def _await_ready(self) -> None:
        """Wait for the template's "ready" (once; under `_lock`)."""
        if self._ready:
            return
        ready, _, _ = select.select([self._sock], [], [], START_SECONDS)
        if not ready or self._sock.recv(16) != b"ready":
            self.close()
            raise TemplateError(f"the warm template for {', '.join(self.preload)} did not start")
        self._ready = True

    def fork(self, config: dict, status_w: int) -> WarmChild:
        """A new launcher forked from the template, with its pipes; `status_w` as spawn's."""
        pipes = [os.pipe() for _ in range(4)]  # stdin, stdout, stderr, exit
        (in_r, in_w), (out_r, out_w), (err_r, err_w), (exit_r, exit_w) = pipes
        theirs = [in_r, out_w, err_w, status_w, exit_w]
        try:
            with self._lock:
                self._await_ready()
                self._sock.settimeout(10.0)
                socket.send_fds(self._sock, [marshal.dumps(config)], theirs)
                message, fds, _, _ = socket.recv_fds(self._sock, 64, 1)
        except OSError as exc:
            for fd in (in_w, out_r, err_r, exit_r):
                os.close(fd)
            raise TemplateError(f"the warm template did not answer: {exc}") from exc
        finally:
            for fd in (in_r, out_w, err_w, exit_w):
                os.close(fd)
        if not message or len(fds) != 1:
            for fd in (in_w, out_r, err_r, exit_r, *fds):
                os.close(fd)
            raise TemplateError("the warm template closed its socket")
        return WarmChild(marshal.loads(message), fds[0], in_w, out_r, err_r, exit_r)

    def close(self, wait: bool = True) -> None:
        """Kill the template (`wait`: and reap it)."""
        with contextlib.suppress(OSError):
            self._sock.close()
        popen = getattr(self, "_popen", None)
        if popen is not None and popen.poll() is None:
            popen.kill()
            if wait:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    popen.wait(timeout=5)


class WarmChild:
    """What `subprocess.Popen` gives SandboxProcess, for a launcher the template forked."""

    def __init__(
        self, pid: int, pidfd: int, stdin_w: int, stdout_r: int, stderr_r: int, exit_r: int
    ) -> None:
        self.pid = pid
        self.args = ["warm", str(pid)]
        self.returncode: int | None = None
        self.stdin = open(stdin_w, "wb", buffering=0)  # noqa: SIM115 - the handle owns them
        self.stdout = open(stdout_r, "rb", buffering=0)  # noqa: SIM115
        self.stderr = open(stderr_r, "rb", buffering=0)  # noqa: SIM115
        self._pidfd = pidfd
        self._exit_r = exit_r
        self._words = b""
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        return self._read_exit(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._read_exit(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return code

    def _read_exit(self, timeout: float | None) -> int | None:
        """The launcher's exit code as Popen gives it (-N for a signal), once the template said."""
        if self.returncode is not None:
            return self.returncode
        try:
            ready, _, _ = select.select([self._exit_r], [], [], timeout)
        except (OSError, ValueError):  # another thread read it and closed the pipe
            ready = [self._exit_r]
        if not ready:
            return None
        with self._lock:
            if self.returncode is not None:
                return self.returncode
            while True:
                chunk = os.read(self._exit_r, 64)
                if not chunk:
                    break
                self._words += chunk
            words = self._words.strip()
            status = int(words) if words.isdigit() else signal.SIGKILL  # the template died
            self.returncode = os.waitstatus_to_exitcode(status)
            os.close(self._exit_r)
            os.close(self._pidfd)
            return self.returncode

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def send_signal(self, signum: int) -> None:
        with self._lock:
            if self.returncode is None:
                with contextlib.suppress(ProcessLookupError, OSError):
                    signal.pidfd_send_signal(self._pidfd, signum)
