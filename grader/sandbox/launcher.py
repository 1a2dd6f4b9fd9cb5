"""The sandbox: one worker process per submission that cannot forge, read, hang, leave or talk.

Three modes, chosen once per spawn (docs/sandbox.md says what each guarantees):

- ``namespaces`` (root, the kernel allows unshare): a launcher makes fresh mount, PID, network,
  IPC and UTS namespaces. Its first child is PID 1 of the new PID namespace ("init"); it builds
  a new root on a size-capped tmpfs holding only what Python needs (the system directories,
  the interpreter's prefixes, the numpy/torch site directories, read-only) plus the scratch
  folder, covers every hidden path that would still show, pivots into it, mounts a fresh
  /proc, and forks the worker, which sets its resource limits, becomes a dedicated
  unprivileged uid with no_new_privs and execs Python. When the worker ends, init exits and
  the kernel kills everything else in the namespace; when the launcher dies, init gets
  SIGKILL (parent-death signal). The grader's files, the results file, the host's /tmp and
  every other tree are simply not there.
- ``perms`` (root, no namespaces, e.g. a Docker container without CAP_SYS_ADMIN, or
  ``SEQGRADE_SANDBOX=perms``): the same limits and dedicated uid, a new session, cleanup by
  killing every process of that uid; hiding relies on file permissions (Gradescope setup).
- ``plain`` (not root, or ``SEQGRADE_SANDBOX=off``): limits, a new session killed as a group.
  Best effort; ``isolated`` is False and ``warning`` says why.

The launcher is this file run as a script (``python -I -S -B sandbox.py --launch ...``); it
needs only the standard library, and its part comes first so that it stops before the
grader-side imports.
"""

from __future__ import annotations

# =========================================================================== the launcher
# This part runs as `python -I -S -B sandbox.py --launch CONFIG_FD STATUS_FD`: as root outside
# the namespaces, then as init inside them, then as the worker until it execs Python. It comes
# first in the file and imports little (marshal, _signal and ctypes are cheap; json, enum,
# dataclasses are not), because its start-up is the sandbox's cost per submission.
import os
import sys

_CLONE_NEWNS = 0x00020000
_CLONE_NEWUTS = 0x04000000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_NAMESPACES = _CLONE_NEWNS | _CLONE_NEWPID | _CLONE_NEWNET | _CLONE_NEWIPC | _CLONE_NEWUTS
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_MOVE, _MS_REC, _MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
_MNT_DETACH = 2
_PR_SET_PDEATHSIG, _PR_SET_NO_NEW_PRIVS = 1, 38
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_DEVICES = ("null", "zero", "full", "random", "urandom")


def _signals():
    """The signal functions without the `signal` module's enum import (a launcher start-up cost)."""
    try:
        import _signal

        return _signal
    except ImportError:  # not CPython
        import signal

        return signal


class _Libc:
    """The few system calls the standard library lacks before Python 3.12 (unshare, mount, ...)."""

    def __init__(self) -> None:
        import ctypes

        self._ctypes = ctypes
        self.lib = ctypes.CDLL(None, use_errno=True)

    def _check(self, ret: int, what: str) -> None:
        if ret != 0:
            errno = self._ctypes.get_errno()
            raise OSError(errno, f"{what}: {os.strerror(errno)}")

    def unshare(self, flags: int) -> None:
        self._check(self.lib.unshare(flags), "unshare")

    def mount(self, source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
        c = self._ctypes
        ret = self.lib.mount(source.encode() if source else None, target.encode(),
                             fstype.encode() if fstype else None, c.c_ulong(flags),
                             data.encode() if data else None)
        self._check(ret, f"mount {source or fstype} on {target}")

    def umount2(self, target: str, flags: int) -> None:
        self._check(self.lib.umount2(target.encode(), flags), f"umount {target}")

    def prctl(self, option: int, arg: int) -> None:
        c = self._ctypes
        self._check(self.lib.prctl(option, c.c_ulong(arg), c.c_ulong(0), c.c_ulong(0), c.c_ulong(0)), "prctl")

    def pivot_root(self, new: str, old: str) -> bool:
        number = _SYS_PIVOT_ROOT.get(os.uname().machine)
        if number is None:
            return False
        self._check(self.lib.syscall(self._ctypes.c_long(number), new.encode(), old.encode()), "pivot_root")
        return True

    def sethostname(self, name: str) -> None:
        self._check(self.lib.sethostname(name.encode(), len(name)), "sethostname")


def _status(fd: int, text: str) -> None:
    try:  # noqa: SIM105 - contextlib is a start-up cost here
        os.write(fd, (text.replace("\n", " ") + "\n").encode())
    except OSError:
        pass


def _launch(config_fd: int, status_fd: int) -> None:
    """Set up the sandbox the configuration asks for and start the worker; report on `status_fd`.

    Status lines: "init PID" (init's pid on the host), then "ready" or "error WHY".
    """
    import marshal

    with os.fdopen(config_fd, "rb") as f:
        config = marshal.loads(f.read())
    os.umask(0o022)
    if config["cgroup_procs"]:
        try:
            with open(config["cgroup_procs"], "w") as f:
                f.write(str(os.getpid()))
        except OSError as exc:
            _status(status_fd, f"error joining the memory cgroup: {exc}")
            os._exit(1)
    if config["mode"] != "namespaces":
        try:
            os.setsid()  # its own session and process group, killed as one
        except OSError as exc:
            _status(status_fd, f"error {exc}")
            os._exit(127)
        _status(status_fd, "ready")
        os.close(status_fd)
        _become_worker(config, None)
    libc = _Libc()
    try:
        libc.unshare(_NAMESPACES)
    except OSError as exc:
        _status(status_fd, f"error {exc}")
        os._exit(1)
    from_init_r, from_init_w = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(from_init_r)
        os.close(status_fd)
        _init(config, libc, from_init_w)  # never returns
    os.close(from_init_w)
    _status(status_fd, f"init {init}")
    _quiet_stdio()
    exit_status = None
    with os.fdopen(from_init_r, "rb") as from_init:
        for raw in from_init:
            word, _, rest = raw.decode(errors="replace").strip().partition(" ")
            if word in ("ready", "error"):
                _status(status_fd, f"{word} {rest}".strip())
                os.close(status_fd)
            elif word == "exit":
                exit_status = int(rest)
    os.waitpid(init, 0)
    if exit_status is None:
        os._exit(125)  # init died without reporting (killed from outside)
    if os.WIFSIGNALED(exit_status):  # relay the worker's death by a signal as our own
        import resource

        sig = _signals()
        signum = os.WTERMSIG(exit_status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if signum not in (sig.SIGKILL, sig.SIGSTOP):
            sig.signal(signum, sig.SIG_DFL)
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # not reached for a deadly signal
    os._exit(os.WEXITSTATUS(exit_status) if os.WIFEXITED(exit_status) else 125)


def _quiet_stdio() -> None:
    """Let go of the protocol pipes, so the parent sees end of file when the worker is gone."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)


def _init(config: dict, libc: _Libc, report_fd: int) -> None:
    """PID 1 of the new namespace: build the root, start the worker, reap, report its status."""
    try:
        libc.prctl(_PR_SET_PDEATHSIG, 9)  # SIGKILL when the launcher dies
        _build_root(config, libc)
        worker = os.fork()
        if worker == 0:
            os.close(report_fd)
            _become_worker(config, libc)
    except BaseException as exc:  # noqa: BLE001 - whatever failed must reach the parent as words
        _status(report_fd, f"error {exc}")
        os._exit(1)
    _status(report_fd, "ready")
    _quiet_stdio()
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(1)
        if pid == worker:
            _status(report_fd, f"exit {status}")
            os._exit(0)  # the kernel now kills everything left in the namespace


def _makedirs(path: str) -> None:
    os.makedirs(path, mode=0o755, exist_ok=True)


def _build_root(config: dict, libc: _Libc) -> None:
    """A new root: system dirs and Python read-only, scratch read-write, nothing of the grader."""
    newroot = config["newroot"]
    scratch = config["scratch"]
    tmpfs_opts = f"size={config['tmpfs_bytes']},nr_inodes=16384"
    libc.mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing we mount leaks to the host
    libc.mount("tmpfs", newroot, "tmpfs", _MS_NOSUID | _MS_NODEV, f"{tmpfs_opts},mode=755")

    def inside(path: str) -> str:
        return newroot + path

    bound: list[str] = []

    def bind(source: str, target: str, writable: bool = False, device: bool = False) -> None:
        libc.mount(source, inside(target), None, _MS_BIND | (0 if device else _MS_REC))
        flags = _MS_REMOUNT | _MS_BIND | _MS_NOSUID | (0 if writable else _MS_RDONLY) | (0 if device else _MS_NODEV)
        libc.mount(None, inside(target), None, flags)
        bound.append(target)

    def covered(path: str) -> bool:
        return any(path == b or path.startswith(b.rstrip("/") + "/") for b in bound)

    for entry in _SYSTEM_DIRS:
        if os.path.islink(entry):
            os.symlink(os.readlink(entry), inside(entry))
        elif os.path.isdir(entry):
            _makedirs(inside(entry))
            bind(entry, entry)
    for path in sorted(set(config["binds"]), key=len):
        if covered(path) or not os.path.isdir(path):
            continue
        _makedirs(inside(path))
        bind(path, path)
    # /dev: the harmless devices and a private /dev/shm; /sys read-only; /proc after the pivot.
    _makedirs(inside("/dev"))
    for name in _DEVICES:
        open(inside(f"/dev/{name}"), "w").close()  # noqa: SIM115
        bind(f"/dev/{name}", f"/dev/{name}", writable=True, device=True)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, inside(f"/dev/{name}"))
    _makedirs(inside("/dev/shm"))
    libc.mount("tmpfs", inside("/dev/shm"), "tmpfs", _MS_NOSUID | _MS_NODEV, f"{tmpfs_opts},mode=1777")
    if os.path.isdir("/sys"):
        _makedirs(inside("/sys"))
        bind("/sys", "/sys")
    _makedirs(inside("/proc"))
    os.makedirs(inside("/tmp"), exist_ok=True)
    os.chmod(inside("/tmp"), 0o1777)  # the private /tmp lives on the small root tmpfs
    # The scratch folder at the same path as on the host, so the caller's paths hold inside.
    _makedirs(inside(scratch))
    bind(scratch, scratch, writable=True)
    # Hidden paths that still show (a grader installed inside a bound site-packages, say) are
    # covered, unless they hold something the worker needs (then they are only a skeleton).
    for path in sorted(set(config["hide"]), key=len):
        target = inside(path)
        if not os.path.lexists(target) or any(b == path or b.startswith(path.rstrip("/") + "/") for b in bound):
            continue
        if os.path.isdir(target) and not os.path.islink(target):
            libc.mount("tmpfs", target, "tmpfs", _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "size=4k,mode=555")
        elif os.path.isfile(target):
            libc.mount("/dev/null", target, None, _MS_BIND)
    os.chdir(newroot)
    if libc.pivot_root(".", "."):
        libc.umount2(".", _MNT_DETACH)  # the old root, stacked under the new one, goes away
    else:
        libc.mount(newroot, "/", None, _MS_MOVE)
        os.chroot(".")
    os.chdir("/")
    try:  # noqa: SIM105
        # hidepid=2: the worker sees only its own processes, not init's command line.
        libc.mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "hidepid=2")
    except OSError:
        pass  # Python runs without /proc; numpy and torch only lose their CPU probes
    try:  # noqa: SIM105
        libc.sethostname("sandbox")
    except OSError:
        pass


def _become_worker(config: dict, libc: _Libc | None) -> None:
    """Limits, the unprivileged uid, no new privileges, then exec the worker's Python."""
    import resource

    try:
        for name, (soft, hard) in config["rlimits"].items():
            limit = getattr(resource, name, None)
            if limit is not None:
                resource.setrlimit(limit, (soft, hard))
        uid = config["uid"]
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)  # as root: real, effective and saved uid; every capability is gone
        (libc or _Libc()).prctl(_PR_SET_NO_NEW_PRIVS, 1)
        if config["mode"] == "namespaces":
            os.setsid()  # its own session: a killpg(0) from the student reaches only its own processes
        os.chdir(config["scratch"])
        sig = _signals()
        for signum in (sig.SIGPIPE, sig.SIGXFSZ, sig.SIGINT, sig.SIGTERM):
            sig.signal(signum, sig.SIG_DFL)  # Python ignores some; the worker's children should not
        os.closerange(3, 65536)
        os.execve(config["python"], config["argv"], config["env"])
    except BaseException as exc:  # noqa: BLE001
        os.write(2, f"sandbox: could not start the worker: {exc}\n".encode())
        os._exit(127)


def _probe() -> int:
    """Exit 0 when unshare and mounts work here (run as a child: it changes its own namespaces)."""
    libc = _Libc()
    try:
        libc.unshare(_NAMESPACES)
        libc.mount(None, "/", None, _MS_REC | _MS_PRIVATE)
        libc.mount("tmpfs", "/tmp", "tmpfs", _MS_NOSUID | _MS_NODEV, "size=4k")
    except OSError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--launch"]:
        _launch(int(sys.argv[2]), int(sys.argv[3]))
    elif sys.argv[1:2] == ["--probe"]:
        sys.exit(_probe())
    print("usage: sandbox.py --launch CONFIG_FD STATUS_FD | --probe", file=sys.stderr)
    sys.exit(2)


# =========================================================================== the grader's side

import contextlib  # noqa: E402
import io  # noqa: E402
import marshal  # noqa: E402
import select  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import Mapping, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import BinaryIO  # noqa: E402

ENV_MODE = "SEQGRADE_SANDBOX"  # "off" | "perms" | unset/"auto"/"on"
UID_BASE = 61000  # dedicated worker uids: UID_BASE .. UID_BASE + UID_COUNT - 1 (gid = uid)
UID_COUNT = 4000
_STARTUP_SECONDS = 20.0  # how long spawn waits for the launcher to report the sandbox ready
_GRADER_TREES = ("grader", "reference", "solutions")  # package folder names hidden wherever they sit


class SandboxError(RuntimeError):
    """The sandbox could not be set up (the reason names the step that failed)."""


@dataclass(frozen=True)
class Limits:
    """What one submission's worker may use."""

    call_seconds: float = 10.0  # wall clock per call (enforced by the caller via read timeouts)
    submission_seconds: float = 120.0  # wall clock for the whole submission (caller; the sandbox kills at this age too)
    memory_bytes: int = 4 << 30  # address space per process (RLIMIT_AS) and, with a cgroup, for all of them
    processes: int = 64  # processes and threads of the worker's uid (RLIMIT_NPROC)
    file_bytes: int = 64 << 20  # largest file it may write (RLIMIT_FSIZE); also the size of its private /tmp
    output_bytes: int = 64 << 10  # student stdout/stderr kept (the rest counted and dropped)


# --------------------------------------------------------------------------- words


def _human_bytes(n: float, binary: bool = True) -> str:
    """4294967296 -> "4 GiB"; with binary=False, 12345678 -> "12.3 MB"."""
    step, units = (1024, ("bytes", "KiB", "MiB", "GiB", "TiB")) if binary else (1000, ("bytes", "kB", "MB", "GB", "TB"))
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
    return f"memory limit {_human_bytes(limits.memory_bytes)} reached"


def _signal_words(signum: int) -> str:
    try:
        name = signal.Signals(signum).name
    except ValueError:
        return f"killed by signal {signum}"
    text = (signal.strsignal(signum) or "").lower()
    return f"killed by signal {name} ({text})" if text else f"killed by signal {name}"


# Markers of an allocation refused by RLIMIT_AS, in Python, numpy, torch and C++.
_MEMORY_MARKERS = ("MemoryError", "std::bad_alloc", "can't allocate memory", "Unable to allocate",
                   "Cannot allocate memory", "out of memory")


# --------------------------------------------------------------------------- what to hide


def _package_dir(name: str) -> Path | None:
    """The folder of an importable package, found without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            return Path(location).resolve()
    if spec.origin and spec.origin not in ("built-in", "frozen"):
        return Path(spec.origin).resolve().parent
    return None


def _runtime_paths() -> list[Path]:
    """What the worker's Python needs to run: its prefixes and numpy/torch's site directories."""
    paths = {Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    paths.add(Path(sys.executable).parent)
    for name in ("numpy", "torch"):
        folder = _package_dir(name)
        if folder is not None:
            paths.add(folder.parent)  # the site directory: the package and its vendored .libs
    resolved = set()
    for p in paths:
        resolved.add(Path(os.path.abspath(p)))
        resolved.add(p.resolve())
    return sorted(resolved)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def default_hidden_paths() -> list[Path]:
    """The grader's own trees: the `grader`, `reference` and `solutions` folders wherever installed.

    When the content root is a repository checkout (editable install), the whole checkout is
    hidden, unless the interpreter or numpy/torch live inside it (a venv in the repository):
    then only the package folders, the solutions and the tests are.
    """
    from grader.course.content import content_root

    grader_dir = Path(__file__).resolve().parents[1]
    hidden = [grader_dir]
    reference_dir = _package_dir("reference")
    if reference_dir is not None:
        hidden.append(reference_dir)
    # Every other copy or portion on the import path: an editable install, say, puts the
    # wheel's force-included content (grader/_content/solutions) into site-packages.
    for entry in sys.path:
        for name in _GRADER_TREES:
            candidate = Path(os.path.abspath(entry or ".")) / name
            if candidate.is_dir():
                hidden.append(candidate.resolve())
    root = content_root().resolve()
    hidden.append(root / "solutions")
    if root == grader_dir.parent:  # a checkout: tests, samples, docs all sit beside the packages
        if any(_inside(p, root) for p in _runtime_paths()):
            hidden.append(root / "tests")
        else:
            hidden.append(root)
    unique: list[Path] = []
    for p in hidden:
        if p not in unique:
            unique.append(p)
    return unique


# --------------------------------------------------------------------------- mode


def _probe_namespaces() -> str | None:
    """None when the launcher can build a namespace sandbox here, else the reason it cannot."""
    if os.geteuid() != 0:
        return f"not running as root (uid {os.geteuid()})"
    global _PROBE
    if _PROBE is None:
        try:
            done = subprocess.run([sys.executable, "-I", "-S", "-B", __file__, "--probe"],
                                  capture_output=True, timeout=_STARTUP_SECONDS, env=_launcher_env())
            _PROBE = "" if done.returncode == 0 else (done.stderr.decode(errors="replace").strip()
                                                      or f"probe exited with status {done.returncode}")
        except (OSError, subprocess.TimeoutExpired) as exc:
            _PROBE = f"probe failed: {exc}"
    return _PROBE or None


_PROBE: str | None = None


def can_isolate() -> bool:
    """True when spawn will run workers in the namespace sandbox (root, namespaces available)."""
    if os.environ.get(ENV_MODE, "").strip().lower() in ("off", "perms"):
        return False
    return _probe_namespaces() is None


def _choose_mode() -> tuple[str, str | None]:
    """(mode, why the run is not isolated or None)."""
    wanted = os.environ.get(ENV_MODE, "").strip().lower()
    if wanted == "off":
        return "plain", f"{ENV_MODE}=off"
    if os.geteuid() != 0:
        return "plain", f"not running as root (uid {os.geteuid()})"
    if wanted == "perms":
        return "perms", f"{ENV_MODE}=perms"
    if _PROBE is None:
        # Not probed yet: try the namespace sandbox straight away (spawn falls back, and
        # remembers why, if it cannot start); a separate probe would cost a Python start.
        return "namespaces", None
    reason = _probe_namespaces()
    if reason is None:
        return "namespaces", None
    return "perms", f"namespaces are not available ({reason})"


def _not_isolated_warning(mode: str, why: str, uid: int | None) -> str:
    if mode == "perms":
        return (f"this run was not isolated: {why}; the submission ran as uid {uid} with time, memory, "
                "process and file-size limits, but with the host's network and file system (hidden only "
                "where file permissions hide them)")
    return (f"this run was not isolated: {why}; the submission ran as uid {os.geteuid()} with time, "
            "memory and file-size limits only: it could read what that user can read and use the network")


# --------------------------------------------------------------------------- dedicated uids


def _uid_in_use(uid: int) -> bool:
    import grp
    import pwd

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


class _UidLease:
    """An unprivileged uid reserved for one worker (an flock held for the worker's life)."""

    def __init__(self) -> None:
        import fcntl

        folder = Path("/run/seqgrade-uids") if os.access("/run", os.W_OK) else Path(tempfile.gettempdir()) / "seqgrade-uids"
        folder.mkdir(mode=0o700, exist_ok=True)
        start = (os.getpid() * 7919 + threading.get_ident()) % UID_COUNT
        for i in range(UID_COUNT):
            uid = UID_BASE + (start + i) % UID_COUNT
            if _uid_in_use(uid):
                continue
            fd = os.open(folder / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            self.uid, self._fd = uid, fd
            _kill_uid(uid)  # leftovers of a grader that died without cleaning up
            return
        raise SandboxError(f"no free sandbox uid in {UID_BASE}..{UID_BASE + UID_COUNT - 1}")

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _pids_of_uid(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"Uid:"):
                        if int(line.split()[1]) == uid:  # the real uid
                            pids.append(int(entry))
                        break
        except (OSError, ValueError, IndexError):
            continue
    return pids


def _tasks_of_uid(uid: int) -> int:
    """Processes and threads of `uid` (what RLIMIT_NPROC counts)."""
    count = 0
    for pid in _pids_of_uid(uid):
        with contextlib.suppress(OSError):
            count += len(os.listdir(f"/proc/{pid}/task"))
    return count


def _pids_in_group(pgid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid:  # the fields after "(comm)": state, ppid, pgrp, ...
                pids.append(int(entry))
    return pids


def _kill_uid(uid: int, timeout: float = 5.0) -> bool:
    """SIGKILL every process of `uid` until none is left (a fork bomb is bounded by RLIMIT_NPROC)."""
    deadline = time.monotonic() + timeout
    while True:
        pids = _pids_of_uid(uid)
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


# --------------------------------------------------------------------------- memory cgroup


class _MemoryCgroup:
    """A child memory cgroup capping the whole sandbox, where the host lets us create one."""

    def __init__(self, path: Path, version: int) -> None:
        self.path, self.version = path, version

    @classmethod
    def create(cls, name: str, limit: int) -> _MemoryCgroup | None:
        try:
            lines = Path("/proc/self/cgroup").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            _, controllers, rel = line.split(":", 2)
            rel = rel.lstrip("/")
            if "memory" in controllers.split(","):
                parent = Path("/sys/fs/cgroup/memory") / rel
                limit_file = "memory.limit_in_bytes"
                version = 1
            elif controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
                parent = Path("/sys/fs/cgroup") / rel
                try:
                    if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
                        continue
                except OSError:
                    continue
                limit_file = "memory.max"
                version = 2
            else:
                continue
            path = parent / name
            try:
                path.mkdir()
            except FileExistsError:
                pass
            except OSError:
                continue
            try:
                (path / limit_file).write_text(str(limit))
                if version == 1 and (path / "memory.memsw.limit_in_bytes").exists():
                    with contextlib.suppress(OSError):
                        (path / "memory.memsw.limit_in_bytes").write_text(str(limit))
                elif version == 2 and (path / "memory.swap.max").exists():
                    (path / "memory.swap.max").write_text("0")
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            return cls(path, version)
        return None

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def oom_killed(self) -> bool:
        try:
            if self.version == 1:
                text = (self.path / "memory.oom_control").read_text()
            else:
                text = (self.path / "memory.events").read_text()
        except OSError:
            return False
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip() not in ("", "0"):
                return True
        return False

    def remove(self) -> None:
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)  # the last processes are still being torn down


# --------------------------------------------------------------------------- the process


class SandboxProcess:
    """A running sandboxed worker: the protocol pipes, its captured output, and how it ended."""

    stdin: BinaryIO  # the protocol channel to the worker (write; buffered, flush after a message)
    stdout: BinaryIO  # the protocol channel from the worker (read; unbuffered, so select() on fileno() is exact)
    scratch: Path  # the worker's private working folder (its cwd and HOME)
    isolated: bool  # namespaces, unprivileged uid, no network, hidden grader files
    warning: str | None  # "this run was not isolated: ..." when not isolated
    mode: str  # "namespaces" | "perms" | "plain"
    uid: int | None  # the dedicated uid the worker runs as (None in plain mode)
    limits: Limits
    started_at: float  # time.monotonic() at spawn

    def __init__(self, popen: subprocess.Popen, *, base: Path, scratch: Path, mode: str, warning: str | None,
                 limits: Limits, lease: _UidLease | None, cgroup: _MemoryCgroup | None,
                 init_pid: int | None) -> None:
        self._popen = popen
        self._base = base
        self.scratch = scratch
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
        self._lock = threading.Lock()
        self._kept = bytearray()
        self._dropped = 0
        self._stop_draining = threading.Event()
        self._reason: str | None = None
        self._killed = False
        self._memory_hit = False
        self._linebuf = b""  # what readline() has read past the last line it returned
        self._drain = threading.Thread(target=self._drain_output, args=(popen.stderr,), daemon=True,
                                       name=f"sandbox-output-{popen.pid}")
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

    def output(self) -> str:
        """The captured student stdout+stderr, truncated with a note on what was dropped."""
        if self._popen.poll() is not None:
            self._drain.join(timeout=1.0)  # let the reader take what is left in the pipe
        with self._lock:
            text = self._kept.decode("utf-8", errors="replace")
            dropped = self._dropped
        if dropped:
            text += f"\n[… {_human_bytes(dropped, binary=False)} more output dropped]\n"
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
            self.kill(reason=f"stopped after {self.limits.submission_seconds:g} s (the time limit for a submission)")

    def kill(self, reason: str | None = None) -> None:
        """Stop the worker and every process it started; idempotent; removes the scratch folder."""
        with self._lock:
            if self._reason is None and self._popen.poll() is None:
                self._reason = reason or "stopped by the grader"
            if self._killed:
                return
            self._killed = True
        self._watchdog.cancel()
        if self.mode == "plain":
            with contextlib.suppress(OSError):
                os.killpg(self._popen.pid, signal.SIGKILL)  # the worker leads its own session
        if self._init_pid:
            # Killing init tears the whole PID namespace down; the launcher reaps it and exits.
            with contextlib.suppress(OSError):
                os.kill(self._init_pid, signal.SIGKILL)
        if self.uid is not None:
            _kill_uid(self.uid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout=1.0 if self._init_pid else 0)
        if self._popen.poll() is None:
            self._popen.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=10)
        self._drain.join(timeout=1.0)
        self._stop_draining.set()
        if self._cgroup is not None:
            self._memory_hit = self._memory_hit or self._cgroup.oom_killed()
            if self.uid is not None:
                _kill_uid(self.uid)
            self._cgroup.remove()
        for stream in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        if self._lease is not None:
            self._lease.release()
        shutil.rmtree(self._base, ignore_errors=True)

    def kill_strays(self) -> int:
        """Kill every process the worker started, keeping the worker; returns how many.

        For between calls: a daemon or a fork bomb left by one call would otherwise share the
        CPU and the process limit with the calls that follow.
        """
        worker = self._worker_pid()
        if worker is None:
            return 0
        killed = 0
        for _ in range(50):
            if self.uid is not None:
                strays = [p for p in _pids_of_uid(self.uid) if p != worker]
            else:
                strays = [p for p in _pids_in_group(worker) if p != worker]
            if not strays:
                break
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                for pid in strays:
                    with contextlib.suppress(OSError):
                        os.kill(pid, sig)
            killed += len(strays)
            time.sleep(0.005)
        return killed

    def _worker_pid(self) -> int | None:
        """The worker's pid on the host (in namespace mode, the child of init)."""
        if self._popen.poll() is not None:
            return None
        if not self._init_pid:
            return self._popen.pid
        try:
            children = Path(f"/proc/{self._init_pid}/task/{self._init_pid}/children").read_text().split()
        except OSError:
            return None
        return int(children[0]) if children else None

    def memory_limit_reached(self) -> bool:
        """True when the worker was stopped by (or ran into) its memory limit."""
        if self._memory_hit or (self._cgroup is not None and not self._killed and self._cgroup.oom_killed()):
            self._memory_hit = True
            return True
        with self._lock:
            text = self._kept[-4096:].decode("utf-8", errors="replace")
        return self._popen.poll() not in (None, 0) and any(m in text for m in _MEMORY_MARKERS)

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
        if code >= 0:
            return f"exited with status {code}"
        signum = -code
        if signum == signal.SIGXCPU:
            return f"CPU time limit of {_cpu_seconds(self.limits)} s reached"
        if signum == signal.SIGXFSZ:
            return f"file size limit {_human_bytes(self.limits.file_bytes)} reached"
        return _signal_words(signum)

    # ------------------------------------------------------------------ convenience

    def readline(self, timeout: float, limit: int = 64 << 20) -> bytes:
        """One line from the worker (with its newline), or TimeoutError / EOFError."""
        deadline = time.monotonic() + timeout
        fd = self.stdout.fileno()
        buf = self._linebuf
        while b"\n" not in buf:
            if len(buf) > limit:
                raise ValueError(f"a line longer than {limit} bytes from the worker")
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self._linebuf = buf
                raise TimeoutError(f"no reply within {timeout:g} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self._linebuf = b""
                raise EOFError("the worker closed its output")
            buf += chunk
        line, _, self._linebuf = buf.partition(b"\n")
        return line + b"\n"

    def __enter__(self) -> SandboxProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


def _cpu_seconds(limits: Limits) -> int:
    return int(limits.submission_seconds) + 5


# --------------------------------------------------------------------------- spawn


def _launcher_env() -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def _worker_env(scratch: Path, extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(scratch),
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "USER": "student",
        "LOGNAME": "student",
    }
    env.update(extra or {})
    return env


def _copy_submission(files: Mapping[str, bytes] | Path, scratch: Path) -> None:
    """Copy the submission's regular files (never symlinks) into the scratch folder."""
    if isinstance(files, (str, os.PathLike)):
        root = Path(files)
        for dirpath, _dirnames, filenames in os.walk(root, followlinks=False):
            rel = Path(dirpath).relative_to(root)
            (scratch / rel).mkdir(parents=True, exist_ok=True)
            for name in filenames:
                src = Path(dirpath) / name
                if src.is_symlink() or not src.is_file():
                    continue
                shutil.copyfile(src, scratch / rel / name, follow_symlinks=False)
        return
    for name, data in files.items():
        rel = Path(name)
        if rel.is_absolute() or ".." in rel.parts or not rel.parts:
            raise ValueError(f"expected a relative file name inside the submission, got {name!r}")
        target = scratch / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _chown_tree(root: Path, uid: int) -> None:
    os.chown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)


def _hidden_readable_by_others(paths: Sequence[Path]) -> list[Path]:
    """Hidden paths that an unrelated uid could still read (perms mode relies on permissions)."""
    exposed = []
    for p in paths:
        if not p.exists():
            continue
        reachable = True
        for ancestor in reversed(p.parents):
            if not os.stat(ancestor).st_mode & 0o001:
                reachable = False
                break
        if reachable and os.stat(p).st_mode & 0o004:
            exposed.append(p)
    return exposed


def _rlimits(limits: Limits, dedicated_uid: bool) -> dict[str, list[int]]:
    cpu = _cpu_seconds(limits)
    nproc = limits.processes
    if not dedicated_uid:
        # RLIMIT_NPROC counts every task of the uid: the grader's user may already run many.
        nproc += _tasks_of_uid(os.getuid())
    return {
        "RLIMIT_AS": [limits.memory_bytes, limits.memory_bytes],
        "RLIMIT_CPU": [cpu, cpu + 2],
        "RLIMIT_NPROC": [nproc, nproc],
        "RLIMIT_FSIZE": [limits.file_bytes, limits.file_bytes],
        "RLIMIT_CORE": [0, 0],
        "RLIMIT_NOFILE": [1024, 1024],
    }


def spawn(program: Path, submission_files: Mapping[str, bytes] | Path, *, limits: Limits = Limits(),
          hide: Sequence[Path] = (), env: Mapping[str, str] | None = None) -> SandboxProcess:
    """Start `python program` (a standalone worker script, stdlib + numpy + torch) in the sandbox.

    The program is copied into the scratch folder and run as `sys.executable -I -B
    <scratch>/<program.name>` with cwd = scratch; fd 0 / fd 1 are the protocol pipes, fd 2 is
    drained into the truncated output buffer. `hide` adds paths (the results file's folder)
    to the defaults (grader, reference and solutions trees, the checkout).
    """
    mode, why = _choose_mode()
    hidden = [Path(os.path.abspath(p)) for p in [*default_hidden_paths(), *hide]]
    program = Path(program)
    source = program.read_bytes()
    while True:
        try:
            return _spawn(mode, why, source, program.name, submission_files, limits, hidden, env)
        except SandboxError as exc:
            # Fall back one step (namespaces -> perms -> plain), saying why in the warning.
            if mode == "namespaces":
                global _PROBE
                _PROBE = _PROBE or f"the namespace sandbox failed to start ({exc})"
                mode, why = "perms", f"the namespace sandbox failed to start ({exc})"
            elif mode == "perms":
                mode, why = "plain", f"{why}; the unprivileged uid could not be used ({exc})"
            else:
                raise


def _spawn(mode: str, why: str | None, source: bytes, program_name: str,
           submission_files: Mapping[str, bytes] | Path, limits: Limits, hidden: list[Path],
           env: Mapping[str, str] | None) -> SandboxProcess:
    base = Path(tempfile.mkdtemp(prefix="seqgrade-"))
    lease: _UidLease | None = None
    cgroup: _MemoryCgroup | None = None
    try:
        scratch = base / "scratch"
        scratch.mkdir()
        _copy_submission(submission_files, scratch)
        (scratch / program_name).write_bytes(source)
        uid = None
        warning = None
        if mode != "plain":
            lease = _UidLease()
            uid = lease.uid
            _chown_tree(scratch, uid)
            os.chmod(scratch, 0o700)
            os.chmod(base, 0o711)  # perms mode: the worker may pass through, not list
            cgroup = _MemoryCgroup.create(f"seqgrade-{uid}", limits.memory_bytes + (64 << 20))
        if mode != "namespaces":
            warning = _not_isolated_warning(mode, why or "", uid)
            if mode == "perms":
                exposed = _hidden_readable_by_others(hidden)
                if exposed:
                    warning += "; readable by the worker: " + ", ".join(map(str, exposed[:3]))
                unreachable = _unreachable_for_others(Path(sys.executable))
                if unreachable is not None:
                    raise SandboxError(f"the Python interpreter is not reachable by an unprivileged user "
                                       f"({unreachable} is not searchable by others)")
        newroot = base / "root"
        if mode == "namespaces":
            newroot.mkdir(mode=0o700)
        config = {
            "mode": mode,
            "uid": uid,
            "python": sys.executable,
            "argv": [sys.executable, "-I", "-B", str(scratch / program_name)],
            "env": _worker_env(scratch, env),
            "scratch": str(scratch),
            "newroot": str(newroot),
            "binds": [str(p) for p in _runtime_paths()],
            "hide": [str(p) for p in hidden],
            "rlimits": _rlimits(limits, dedicated_uid=uid is not None),
            "tmpfs_bytes": max(limits.file_bytes, 16 << 20),
            "cgroup_procs": cgroup.procs_file if cgroup else None,
        }
        popen, init_pid = _start_launcher(config)
        return SandboxProcess(popen, base=base, scratch=scratch, mode=mode, warning=warning, limits=limits,
                              lease=lease, cgroup=cgroup, init_pid=init_pid)
    except BaseException:
        if lease is not None:
            _kill_uid(lease.uid)
            lease.release()
        if cgroup is not None:
            cgroup.remove()
        shutil.rmtree(base, ignore_errors=True)
        raise


def _unreachable_for_others(path: Path) -> Path | None:
    """The first folder on the way to `path` that other users cannot search, if any."""
    for p in [*reversed(Path(os.path.abspath(path)).parents), Path(os.path.realpath(path)).parent]:
        if not os.stat(p).st_mode & 0o001:
            return p
    return None


def _start_launcher(config: dict) -> tuple[subprocess.Popen, int | None]:
    """Run the launcher; wait for its "ready" (or its error) on the status pipe."""
    config_r, config_w = os.pipe()
    status_r, status_w = os.pipe()
    try:
        data = marshal.dumps(config)
        assert len(data) < 60_000, "the launcher's configuration must fit in the pipe buffer"
        os.write(config_w, data)
        os.close(config_w)
        config_w = -1
        popen = subprocess.Popen(
            [sys.executable, "-I", "-S", "-B", os.path.abspath(__file__), "--launch", str(config_r), str(status_w)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
            pass_fds=(config_r, status_w), env=_launcher_env(), cwd="/",
        )
    finally:
        os.close(config_r)
        os.close(status_w)
        if config_w >= 0:
            os.close(config_w)
    try:
        lines = _read_status(status_r, _STARTUP_SECONDS)
    finally:
        os.close(status_r)
    init_pid = None
    for line in lines:
        word, _, rest = line.partition(" ")
        if word == "init":
            init_pid = int(rest)
        elif word == "ready":
            return popen, init_pid
        elif word == "error":
            _discard(popen, init_pid)
            raise SandboxError(rest)
    _discard(popen, init_pid)
    err = b""
    if popen.stderr is not None:
        err = popen.stderr.read(4096)
    raise SandboxError("the launcher ended before the worker started" + (f": {err.decode(errors='replace').strip()}" if err else ""))


def _discard(popen: subprocess.Popen, init_pid: int | None) -> None:
    for pid in (init_pid, popen.pid):
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    popen.wait()


def _read_status(fd: int, timeout: float) -> list[str]:
    """Status lines until "ready", "error ..." or end of file."""
    deadline = time.monotonic() + timeout
    buf = b""
    while True:
        lines = buf.decode(errors="replace").split("\n")
        if any(line.startswith(("ready", "error")) for line in lines[:-1]):
            return lines[:-1]
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return [*lines[:-1], "error the sandbox did not start within "
                    f"{timeout:g} s"]
        chunk = os.read(fd, 4096)
        if not chunk:
            return lines
        buf += chunk
