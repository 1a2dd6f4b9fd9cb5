"""A running sandboxed worker as the grader sees it: its pipes, its output, how it ended."""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import BinaryIO

from grader.sandbox import uids
from grader.sandbox.cgroup import MemoryCgroup
from grader.sandbox.launcher import DEADLINE_STATUS
from grader.sandbox.limits import (
    MEMORY_MARKERS,
    Limits,
    human_bytes,
    memory_limit_message,
    signal_words,
    time_limit_message,
)
from grader.sandbox.pipes import DeadlineReader
from grader.sandbox.scratch import ScratchBase
from grader.sandbox.zygote import WarmChild


class SandboxProcess:
    """A running sandboxed worker: the protocol pipes, its captured output, and how it ended."""

    stdin: BinaryIO
    """The protocol channel to the worker (write; buffered, flush after a message)."""
    stdout: BinaryIO
    """The channel from the worker (read; unbuffered, so select() is exact)."""
    scratch: Path
    """The worker's private working folder (its cwd and HOME)."""
    isolated: bool
    """Namespaces, unprivileged uid, no network, hidden grader files."""
    warning: str | None
    """ "this run was not isolated: ..." when not isolated."""
    mode: str
    """ "namespaces" | "perms" | "plain"."""
    uid: int | None
    """The dedicated uid the worker runs as (None in plain mode)."""
    limits: Limits
    started_at: float
    """time.monotonic() at spawn."""

    def __init__(
        self,
        popen: subprocess.Popen | WarmChild,
        *,
        base: ScratchBase,
        mode: str,
        warning: str | None,
        limits: Limits,
        lease: uids.UidLease | None,
        cgroup: MemoryCgroup | None,
        init_pid: int | None,
    ) -> None:
        self._popen = popen
        self._base = base
        self.scratch = base.scratch
        self.mode = mode
        self.isolated = mode == "namespaces"
        self.warning = warning
        self.limits = limits
        self._lease = lease
        self.uid = lease.uid if lease else None
        self._cgroup = cgroup
        self._init_pid = init_pid
        self.started_at = time.monotonic()
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        self.stdin = io.BufferedWriter(popen.stdin)
        self.stdout = popen.stdout
        self._reader = DeadlineReader(popen.stdout.fileno())
        self._lock = threading.Lock()
        self._kept = bytearray()
        self._dropped = 0
        self._stop_draining = threading.Event()
        self._reason: str | None = None
        self._killed = False
        self._memory_hit = False
        self._drain = threading.Thread(
            target=self._drain_output,
            args=(popen.stderr,),
            daemon=True,
            name=f"sandbox-output-{popen.pid}",
        )
        self._drain.start()
        self._watchdog = threading.Timer(limits.submission_seconds, self._expire)
        self._watchdog.daemon = True
        self._watchdog.start()

    @property
    def pid(self) -> int:
        """The launcher's pid (the worker itself in perms and plain modes)."""
        return self._popen.pid

    # ------------------------------------------------------------------ output

    def _drain_output(self, stream: BinaryIO) -> None:
        fd = stream.fileno()
        keep = self.limits.output_bytes
        try:
            while not self._stop_draining.is_set():
                ready, _, _ = select.select([fd], [], [], 0.2)
                if not ready:
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                with self._lock:
                    room = keep - len(self._kept)
                    if room > 0:
                        self._kept += chunk[:room]
                    self._dropped += max(0, len(chunk) - max(room, 0))
        except (OSError, ValueError):
            pass
        finally:
            stream.close()

    def _drained(self) -> None:
        """Once the worker has exited, the reader given time to take what is left in the pipe
        (what it wrote last, a MemoryError's traceback, may still be there when it is reaped)."""
        if self._popen.poll() is not None:
            self._drain.join(timeout=1.0)

    def output(self) -> str:
        """The captured student stdout+stderr, truncated with a note on what was dropped."""
        self._drained()
        with self._lock:
            text = self._kept.decode("utf-8", errors="replace")
            dropped = self._dropped
        if dropped:
            text += f"\n[… {human_bytes(dropped, binary=False)} more output dropped]\n"
        return text

    # ------------------------------------------------------------------ life

    def poll(self) -> int | None:
        return self._popen.poll()

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            return self._popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def _expire(self) -> None:
        if self._popen.poll() is None:
            self.kill(reason=time_limit_message(self.limits))

    def kill(self, reason: str | None = None) -> None:
        """Stop the worker and every process it started; idempotent; removes the scratch folder."""
        with self._lock:
            if self._reason is None and self._popen.poll() is None:
                self._reason = reason or "stopped by the grader"
            if self._killed:
                return
            self._killed = True
        self._watchdog.cancel()
        uid_clear = self._stop_processes()
        self._drain.join(timeout=1.0)
        self._stop_draining.set()
        if self._cgroup is not None:
            self._memory_hit = self._memory_hit or self._cgroup.oom_killed()
            self._cgroup.kill_all()
            # Once a search found no process of the uid left, none can appear (only a process
            # of the uid, or root, makes one; the lease keeps ours from giving it out): a second
            # search of /proc (5 ms on a busy host) only when the first gave up.
            if self.uid is not None and not uid_clear:
                uids.kill_uid(self.uid)
            self._cgroup.remove()
        for stream in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        if self.mode == "perms" and self.uid is not None:
            uids.remove_files_of(self.uid)  # namespaces mode: its /tmp and /dev/shm died with it
        if self._lease is not None:
            self._lease.release()
        self._base.remove()

    def _stop_processes(self) -> bool:
        """SIGKILL the sandbox: init (its namespace goes down), the uid, the group; reap. True
        when a search of the uid's processes found none left."""
        if self.mode == "plain":
            with contextlib.suppress(OSError):
                os.killpg(self._popen.pid, signal.SIGKILL)  # the worker leads its own session
        if self._init_pid:
            # Killing init tears the whole PID namespace down; the launcher reaps it and exits.
            # An init's exit waits until every process of its namespace is gone, so once the
            # launcher has reaped it the search of the uid below finds nothing, at its first
            # look (searched while they die, it finds them dying and waits a round for them).
            with contextlib.suppress(OSError):
                os.kill(self._init_pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=1.0)
        uid_clear = self.uid is not None and uids.kill_uid(self.uid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout=0)
        if self._popen.poll() is None:
            self._popen.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=10)
        return uid_clear

    def kill_strays(self) -> int:
        """Kill every process the worker started, keeping the worker; returns how many (each
        counted once, however many rounds it takes to die).

        For between calls: a daemon or a fork bomb left by one call would otherwise share the
        CPU and the process limit with the calls that follow.
        """
        worker = self._worker_pid()
        if worker is None:
            return 0
        killed: set[int] = set()
        for _ in range(50):
            below = _live_descendants(self._init_pid) if self._init_pid else None
            if below is not None:  # the namespace's tree: no search of every host process
                strays = [p for p in below if p != worker]
            elif self.uid is not None:
                strays = [p for p in uids.pids_of_uid(self.uid) if p != worker]
            else:
                strays = [p for p in uids.pids_in_group(worker) if p != worker]
            if not strays:
                break
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                for pid in strays:
                    with contextlib.suppress(OSError):
                        os.kill(pid, sig)
            killed.update(strays)
            time.sleep(0.005)
        return len(killed)

    def _worker_pid(self) -> int | None:
        """The worker's pid on the host (in namespace mode, the child of init)."""
        if self._popen.poll() is not None:
            return None
        if not self._init_pid:
            return self._popen.pid
        try:
            children = Path(f"/proc/{self._init_pid}/task/{self._init_pid}/children").read_text()
        except OSError:
            return None
        return int(children.split()[0]) if children.split() else None

    def memory_limit_reached(self) -> bool:
        """True when the worker was stopped by (or ran into) its memory limit."""
        if self._memory_hit or (
            self._cgroup is not None and not self._killed and self._cgroup.oom_killed()
        ):
            self._memory_hit = True
            return True
        self._drained()
        with self._lock:
            text = self._kept[-4096:].decode("utf-8", errors="replace")
        return self._popen.poll() not in (None, 0) and any(m in text for m in MEMORY_MARKERS)

    def exit_description(self) -> str:
        """How the worker ended, in plain words ("killed by signal SIGSEGV (segmentation fault)")."""
        code = self._popen.poll()
        with self._lock:
            reason = self._reason
        if reason:
            return reason
        if code is None:
            return "still running"
        if self.memory_limit_reached():
            return memory_limit_message(self.limits)
        if self._past_own_deadline(code):
            return time_limit_message(self.limits)
        if code >= 0:
            return f"exited with status {code}"
        signum = -code
        if signum == signal.SIGXCPU:
            return f"CPU time limit of {self.limits.cpu_seconds} s reached"
        if signum == signal.SIGXFSZ:
            return f"file size limit {human_bytes(self.limits.file_bytes)} reached"
        return signal_words(signum)

    def _past_own_deadline(self, code: int) -> bool:
        """The sandbox's own deadline ended it (init's alarm, or the worker's outside namespaces)."""
        old_enough = time.monotonic() - self.started_at >= self.limits.submission_seconds
        marker = DEADLINE_STATUS if self._init_pid else -signal.SIGALRM
        return old_enough and code == marker

    # ------------------------------------------------------------------ convenience

    def readline(self, timeout: float, limit: int = 64 << 20) -> bytes:
        """One line from the worker (with its newline), or TimeoutError / EOFError."""
        try:
            return self._reader.readline(timeout, limit)
        except EOFError:
            raise EOFError("the worker closed its output") from None

    def __enter__(self) -> SandboxProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def _live_descendants(root: int) -> list[int] | None:
    """The live processes below `root` (zombies left out), read from each task's `children`;
    None when `root`'s own cannot be read.

    Below a pid namespace's init is every process of the namespace but init: an orphan is
    reparented to init (or to a subreaper, itself below init), and nothing in the namespace can
    leave it. So between questions, the sandbox's strays are found in a few small reads instead
    of a search of every process on the host (`uids.pids_of_uid`, a few ms each time).
    """
    found: list[int] = []
    seen, todo = {root}, [root]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            if pid == root:
                return None
            continue  # it ended meanwhile
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                    children = [int(c) for c in fh.read().split()]
            except OSError:
                if pid == root:
                    return None
                continue
            for child in children:
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
                    found.append(child)
    return [pid for pid in found if not _ended(pid)]


def _ended(pid: int) -> bool:
    """A zombie (or dead) process, or one gone: nothing left to stop."""
    fields = uids.stat_fields(pid)
    return fields is None or fields[:1] in (["Z"], ["X"])
