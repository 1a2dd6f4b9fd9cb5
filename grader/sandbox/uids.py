"""Dedicated worker uids: one per live worker, handed out in rotation, swept when left behind.

A uid is leased with an flock held for the worker's life (the lock dies with the grader that
holds it). Leases go round the whole range through a shared counter, so consecutive
submissions never share a uid, and a uid returns only after UID_COUNT - 1 other leases and
only when none of its processes is left: whatever one submission left under its uid (a
process, a key in the kernel keyring, where the seccomp filter is missing) is not reachable
by the next submission that runs as that uid soon after.
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import os
import pwd
import shutil
import signal
import tempfile
import time
from pathlib import Path

UID_BASE = 61000  # dedicated worker uids: UID_BASE .. UID_BASE + UID_COUNT - 1 (gid = uid)
UID_COUNT = 4000
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")  # where any uid may leave files on the host


class UidError(RuntimeError):
    """No dedicated uid is free."""


def lease_folder() -> Path:
    """Where the lease locks and the rotation counter live (shared by every grader on the host)."""
    if os.access("/run", os.W_OK):
        folder = Path("/run/seqgrade-uids")
    else:
        folder = Path(tempfile.gettempdir()) / "seqgrade-uids"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def _uid_in_use(uid: int) -> bool:
    """True when the system knows this uid or gid (a real account: never ours to take)."""
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        pass
    try:
        grp.getgrgid(uid)
        return True
    except KeyError:
        return False


def _try_lock(folder: Path, uid: int) -> int | None:
    """An fd holding the uid's lease lock, or None when another grader holds it."""
    fd = os.open(folder / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


class _Counter:
    """The next index of the rotation, in a file under an flock (held only while choosing)."""

    def __init__(self, folder: Path) -> None:
        self._fd = os.open(folder / "next", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def read(self) -> int:
        try:
            return int(os.pread(self._fd, 32, 0).decode() or 0) % UID_COUNT
        except ValueError:
            return 0

    def write(self, index: int) -> None:
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, str(index % UID_COUNT).encode(), 0)

    def close(self) -> None:
        os.close(self._fd)  # releases the flock


class UidLease:
    """An unprivileged uid reserved for one worker (an flock held for the worker's life)."""

    uid: int

    def __init__(self) -> None:
        folder = lease_folder()
        counter = _Counter(folder)
        try:
            start = counter.read()
            for i in range(UID_COUNT):
                uid = UID_BASE + (start + i) % UID_COUNT
                if _uid_in_use(uid):
                    continue
                fd = _try_lock(folder, uid)
                if fd is None:
                    continue
                if pids_of_uid(uid) and not kill_uid(uid, timeout=0.5):
                    os.close(fd)  # leftovers that will not die: not reused while they live
                    continue
                self.uid, self._fd = uid, fd
                counter.write(start + i + 1)
                return
        finally:
            counter.close()
        raise UidError(f"no free sandbox uid in {UID_BASE}..{UID_BASE + UID_COUNT - 1}")

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _process_uids() -> dict[int, int]:
    """pid -> real uid of every live process on the host (zombies can do nothing: left out).

    Read after every question, so one read per process and a search, not a line loop (the
    kernel escapes a newline in the Name field: no name can forge a "Uid:" line)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{entry}/status", os.O_RDONLY | os.O_CLOEXEC)
            try:
                status = os.read(fd, 4096)
            finally:
                os.close(fd)
        except OSError:
            continue
        state = status.find(b"\nState:")
        if state >= 0 and status[state + 7 : state + 16].split()[:1] in ([b"Z"], [b"X"]):
            continue
        at = status.find(b"\nUid:")
        if at < 0:
            continue
        with contextlib.suppress(ValueError, IndexError):
            found[int(entry)] = int(status[at + 5 : at + 64].split()[0])  # the real uid
    return found


def pids_of_uid(uid: int) -> list[int]:
    """Host pids whose real uid is `uid`."""
    return [pid for pid, owner in _process_uids().items() if owner == uid]


def tasks_of_uid(uid: int) -> int:
    """Processes and threads of `uid` (what RLIMIT_NPROC counts)."""
    count = 0
    for pid in pids_of_uid(uid):
        with contextlib.suppress(OSError):
            count += len(os.listdir(f"/proc/{pid}/task"))
    return count


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after "(comm)": state, ppid, pgrp, ... (split after the
    last ")": a process's name may hold one); None when the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def pids_in_group(pgid: int) -> list[int]:
    """Host pids in the process group `pgid`."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat_fields(entry)
            if fields is not None and int(fields[2]) == pgid:
                pids.append(int(entry))
    return pids


def kill_uid(uid: int, timeout: float = 5.0) -> bool:
    """SIGKILL every process of `uid` until none is left (a fork bomb is bounded by RLIMIT_NPROC)."""
    deadline = time.monotonic() + timeout
    while True:
        pids = pids_of_uid(uid)
        if not pids:
            return True
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)  # stop first so that none can fork while we kill
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


def unleased(uids: set[int]) -> list[int]:
    """Those of `uids` (dedicated ones) whose lease no live grader holds."""
    folder = lease_folder()
    free = []
    for uid in sorted(uids):
        if not UID_BASE <= uid < UID_BASE + UID_COUNT:
            continue
        fd = _try_lock(folder, uid)
        if fd is not None:
            free.append(uid)
            os.close(fd)
    return free


def sweep_stale_uids() -> list[int]:
    """Kill the processes of dedicated uids whose grader is gone; returns those uids."""
    owners = set(_process_uids().values())
    stale = unleased({u for u in owners if UID_BASE <= u < UID_BASE + UID_COUNT})
    for uid in stale:
        kill_uid(uid, timeout=1.0)
        remove_files_of(uid)
    return stale


def remove_files_of(uid: int, folders: tuple[str, ...] = SHARED_FOLDERS) -> list[str]:
    """Remove what `uid` left at the top of the host's world-writable folders (perms mode).

    A worker outside the namespaces shares `/tmp` and `/dev/shm` with everyone: a file left
    there (made world-readable) would reach the next submissions, whatever their uid.
    """
    removed = []
    for folder in folders:
        with contextlib.suppress(OSError), os.scandir(folder) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_uid != uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)
                    removed.append(entry.path)
    return removed
