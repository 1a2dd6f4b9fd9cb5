"""The launcher: a standard-library script that builds one sandbox and execs the worker in it.

Run by spawn as `python -I -S -B launcher.py --launch CONFIG_FD STATUS_FD` would run it, from
the bytecode the grader cached for it (`runtime.launcher_command`; the configuration
is a marshal'd dict on CONFIG_FD; spawn.py writes it), first as root outside the namespaces,
then as init inside them, then as the worker until it execs Python. It imports almost
nothing (marshal, _signal and ctypes are cheap; json, enum, dataclasses are not), because
its start-up is the sandbox's cost per submission; the grader side imports this module only
for its constants.

Status lines on STATUS_FD: "init PID" (namespaces: init's pid on the host), then "ready" or
"error WHY". "ready" means the worker's exec succeeded; a failure before it (the worker's uid
cannot reach the interpreter, say) is an "error", so the caller can fall back.

What dies with what: the launcher, init and the worker each get SIGKILL when their parent
dies (PR_SET_PDEATHSIG, checked against a parent that died first); init ends itself, and so
the whole PID namespace, at the sandbox's own deadline (an alarm), whatever the caller does.
"""

from __future__ import annotations

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
_PR_SET_PDEATHSIG, _PR_SET_SECCOMP, _PR_SET_NO_NEW_PRIVS = 1, 22, 38
_SECCOMP_MODE_FILTER = 2
_SIGKILL = 9
_EINVAL = 22
_SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}
_KEYCTL_CLEAR, _KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING = 7, -4, -5
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
_DEVICES = ("null", "zero", "full", "random", "urandom")
DEADLINE_STATUS = 124  # the launcher's exit status when the sandbox's own deadline ended it


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

    def mount(
        self,
        source: str | None,
        target: str,
        fstype: str | None,
        flags: int,
        data: str | None = None,
    ) -> None:
        c = self._ctypes
        ret = self.lib.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            c.c_ulong(flags),
            data.encode() if data else None,
        )
        self._check(ret, f"mount {source or fstype} on {target}")

    def umount2(self, target: str, flags: int) -> None:
        self._check(self.lib.umount2(target.encode(), flags), f"umount {target}")

    def prctl(self, option: int, arg: int) -> None:
        c = self._ctypes
        zero = c.c_ulong(0)
        self._check(self.lib.prctl(option, c.c_ulong(arg), zero, zero, zero), "prctl")

    def seccomp(self, program: bytes) -> None:
        """Install a seccomp filter (struct sock_filter array); needs no_new_privs first."""
        c = self._ctypes

        class SockFprog(c.Structure):
            _fields_ = [("len", c.c_ushort), ("filter", c.c_void_p)]

        buf = c.create_string_buffer(program, len(program))
        fprog = SockFprog(len(program) // 8, c.addressof(buf))
        zero = c.c_ulong(0)
        ret = self.lib.prctl(
            _PR_SET_SECCOMP, c.c_ulong(_SECCOMP_MODE_FILTER), c.byref(fprog), zero, zero
        )
        self._check(ret, "seccomp")

    def clear_keyrings(self) -> None:
        """Empty this uid's user and user-session keyrings (keys an earlier holder left)."""
        number = _SYS_KEYCTL.get(os.uname().machine)
        if number is None:
            return
        for keyring in (_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING):
            self.lib.syscall(
                self._ctypes.c_long(number), _KEYCTL_CLEAR, keyring
            )  # errors: none left

    def pivot_root(self, new: str, old: str) -> bool:
        number = _SYS_PIVOT_ROOT.get(os.uname().machine)
        if number is None:
            return False
        ret = self.lib.syscall(self._ctypes.c_long(number), new.encode(), old.encode())
        self._check(ret, "pivot_root")
        return True

    def sethostname(self, name: str) -> None:
        self._check(self.lib.sethostname(name.encode(), len(name)), "sethostname")


def _status(fd: int, text: str) -> None:
    try:  # noqa: SIM105 - contextlib is a start-up cost here
        os.write(fd, (text.replace("\n", " ") + "\n").encode())
    except OSError:
        pass


def _die_with_parent(libc: _Libc, parent: int) -> None:
    """SIGKILL when the parent dies; exit now if it already has (before the prctl took hold)."""
    libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL)
    if os.getppid() != parent:
        os._exit(1)


# --------------------------------------------------------------------------- the launcher


def _launch(config_fd: int, status_fd: int) -> None:
    """Set up the sandbox the configuration asks for and start the worker; report on `status_fd`."""
    import marshal

    with os.fdopen(config_fd, "rb") as f:
        config = marshal.loads(f.read())
    _launch_with(config, status_fd)


def _launch_with(config: dict, status_fd: int) -> None:
    """`_launch` once the configuration is read (a warm template's fork enters here)."""
    os.umask(0o022)
    libc = _Libc()
    if config["protect"]:
        _die_with_parent(libc, config["parent"])
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
        _become_worker(config, libc, status_fd, parent=config["parent"])  # never returns
    try:
        libc.unshare(_NAMESPACES)
    except OSError as exc:
        _status(status_fd, f"error {exc}")
        os._exit(1)
    from_init_r, from_init_w = os.pipe()
    alive_r, alive_w = os.pipe()  # only the launcher holds the write end: its end of file = gone
    init = os.fork()
    if init == 0:
        os.close(from_init_r)
        os.close(status_fd)
        os.close(alive_w)
        _init(config, libc, from_init_w, alive_r)  # never returns
    os.close(from_init_w)
    os.close(alive_r)
    _status(status_fd, f"init {init}")
    _quiet_stdio()
    _relay(init, from_init_r, status_fd)


def _relay(init: int, from_init_r: int, status_fd: int) -> None:
    """Pass init's "ready"/"error" on, wait for init, then end as the worker ended."""
    exit_status = None
    with os.fdopen(from_init_r, "rb") as from_init:
        for raw in from_init:
            word, _, rest = raw.decode(errors="replace").strip().partition(" ")
            if word in ("ready", "error"):
                _status(status_fd, f"{word} {rest}".strip())
                os.close(status_fd)
            elif word == "exit":
                exit_status = int(rest)
            elif word == "deadline":
                exit_status = DEADLINE_STATUS << 8  # as if the worker had exited with it
    os.waitpid(init, 0)
    if exit_status is None:
        os._exit(125)  # init died without reporting (killed from outside)
    _exit_like(exit_status)


def _exit_like(exit_status: int) -> None:
    """Exit with the worker's status; its death by a signal is relayed as our own."""
    if os.WIFSIGNALED(exit_status):
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


# --------------------------------------------------------------------------- init


def _gone(alive_r: int) -> bool:
    """Whether the process holding the pipe's only write end has died (end of file)."""
    os.set_blocking(alive_r, False)
    try:
        return os.read(alive_r, 1) == b""
    except BlockingIOError:
        return False


def _init(config: dict, libc: _Libc, report_fd: int, alive_r: int) -> None:
    """PID 1 of the new namespace: build the root, start the worker, reap, report its status."""
    sig = _signals()

    def deadline(signum: int, frame: object) -> None:
        _status(report_fd, "deadline")
        os._exit(1)  # the kernel now kills everything in the namespace

    try:
        # init's parent lives outside the namespace (getppid() reads 0 here): a launcher that
        # died before the prctl took hold shows as the end of file of `alive_r` instead.
        libc.prctl(_PR_SET_PDEATHSIG, _SIGKILL)
        if _gone(alive_r):
            os._exit(1)
        if config["deadline"]:
            sig.signal(sig.SIGALRM, deadline)  # a handler: PID 1 ignores a default-action signal
            sig.alarm(config["deadline"])
        _build_root(config, libc)
        worker = _start_worker(config, libc, report_fd)
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


def _start_worker(config: dict, libc: _Libc, report_fd: int) -> int:
    """Fork the worker and wait for its exec; raise with its words when the exec failed."""
    exec_r, exec_w = os.pipe()  # close-on-exec: end of file once the worker's exec succeeded
    worker = os.fork()
    if worker == 0:
        os.close(report_fd)
        os.close(exec_r)
        _become_worker(config, libc, exec_w, parent=1)  # never returns
    os.close(exec_w)
    words = b""
    while True:
        chunk = os.read(exec_r, 4096)
        if not chunk:
            break
        words += chunk
    os.close(exec_r)
    for line in words.decode(errors="replace").splitlines():
        if line.startswith("error "):
            raise OSError(line[len("error ") :])
    return worker


# --------------------------------------------------------------------------- the new root


def _makedirs(path: str) -> None:
    os.makedirs(path, mode=0o755, exist_ok=True)


class _Root:
    """The new root being built under `newroot`, and what has been bound into it so far."""

    def __init__(self, newroot: str, libc: _Libc) -> None:
        self.newroot, self.libc = newroot, libc
        self.bound: list[str] = []

    def inside(self, path: str) -> str:
        return self.newroot + path

    def bind(self, source: str, target: str, writable: bool = False, device: bool = False) -> None:
        self.libc.mount(source, self.inside(target), None, _MS_BIND | (0 if device else _MS_REC))
        flags = _MS_REMOUNT | _MS_BIND | _MS_NOSUID
        flags |= (0 if writable else _MS_RDONLY) | (0 if device else _MS_NODEV)
        self.libc.mount(None, self.inside(target), None, flags)
        self.bound.append(target)

    def covered(self, path: str) -> bool:
        """Already inside something bound."""
        return any(path == b or path.startswith(b.rstrip("/") + "/") for b in self.bound)

    def holds_bound(self, path: str) -> bool:
        """Something bound lies inside `path` (covering it would hide what the worker needs)."""
        return any(b == path or b.startswith(path.rstrip("/") + "/") for b in self.bound)


def _build_root(config: dict, libc: _Libc) -> None:
    """A new root: system dirs and Python read-only, scratch read-write, nothing of the grader."""
    tmpfs_opts = f"size={config['tmpfs_bytes']},nr_inodes=16384"
    libc.mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing we mount leaks to the host
    libc.mount(
        "tmpfs", config["newroot"], "tmpfs", _MS_NOSUID | _MS_NODEV, f"{tmpfs_opts},mode=755"
    )
    root = _Root(config["newroot"], libc)
    _bind_system(root, config["binds"])
    _make_dev(root, tmpfs_opts)
    # The scratch folder at the same path as on the host, so the caller's paths hold inside.
    _makedirs(root.inside(config["scratch"]))
    root.bind(config["scratch"], config["scratch"], writable=True)
    _cover_hidden(root, config["hide"])
    _pivot(root.newroot, libc)


def _bind_system(root: _Root, binds: list[str]) -> None:
    """The system folders and the interpreter's, read-only; symlinked ones (/bin -> usr/bin) kept."""
    for entry in _SYSTEM_DIRS:
        if os.path.islink(entry):
            os.symlink(os.readlink(entry), root.inside(entry))
        elif os.path.isdir(entry):
            _makedirs(root.inside(entry))
            root.bind(entry, entry)
    for path in sorted(set(binds), key=len):
        if root.covered(path) or not os.path.isdir(path):
            continue
        _makedirs(root.inside(path))
        root.bind(path, path)


def _make_dev(root: _Root, tmpfs_opts: str) -> None:
    """/dev: the harmless devices and a private /dev/shm; /sys read-only; a private /tmp."""
    _makedirs(root.inside("/dev"))
    for name in _DEVICES:
        open(root.inside(f"/dev/{name}"), "w").close()  # noqa: SIM115
        root.bind(f"/dev/{name}", f"/dev/{name}", writable=True, device=True)
    for name, target in (
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ):
        os.symlink(target, root.inside(f"/dev/{name}"))
    _makedirs(root.inside("/dev/shm"))
    root.libc.mount(
        "tmpfs", root.inside("/dev/shm"), "tmpfs", _MS_NOSUID | _MS_NODEV, f"{tmpfs_opts},mode=1777"
    )
    if os.path.isdir("/sys"):
        _makedirs(root.inside("/sys"))
        root.bind("/sys", "/sys")
    _makedirs(root.inside("/proc"))
    os.makedirs(root.inside("/tmp"), exist_ok=True)
    os.chmod(root.inside("/tmp"), 0o1777)  # the private /tmp lives on the small root tmpfs


def _cover_hidden(root: _Root, hide: list[str]) -> None:
    """Hidden paths that still show (a grader inside a bound site-packages, a file in a bound
    folder) are covered, unless they hold something the worker needs."""
    for path in sorted(set(hide), key=len):
        target = root.inside(path)
        if not os.path.lexists(target) or root.holds_bound(path):
            continue
        if os.path.isdir(target) and not os.path.islink(target):
            root.libc.mount(
                "tmpfs",
                target,
                "tmpfs",
                _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC,
                "size=4k,mode=555",
            )
        elif os.path.isfile(target):
            root.libc.mount("/dev/null", target, None, _MS_BIND)


def _pivot(newroot: str, libc: _Libc) -> None:
    """Make the new root the root; a fresh /proc that shows only the worker's processes."""
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


# --------------------------------------------------------------------------- the worker


def _become_worker(config: dict, libc: _Libc, report_fd: int, parent: int) -> None:
    """Limits, the unprivileged uid, no new privileges, the filter, then exec the worker's Python.

    A failure is written to `report_fd` ("error WHY"); a successful exec closes it (close-on-exec).
    """
    try:
        _drop_privileges(config)
        if config["protect"]:
            _die_with_parent(libc, parent)  # again: a change of uid cleared it
        if config["uid"] is not None:
            libc.clear_keyrings()
        _check_reach(config)
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1)
        if config["mode"] == "namespaces":
            os.setsid()  # its own session: a killpg(0) from the student reaches only its own
        os.chdir(config["scratch"])
        sig = _signals()
        for signum in (sig.SIGPIPE, sig.SIGXFSZ, sig.SIGINT, sig.SIGTERM, sig.SIGALRM):
            sig.signal(signum, sig.SIG_DFL)  # Python ignores some; the worker's children should not
        if config["mode"] != "namespaces" and config["deadline"]:
            sig.alarm(config["deadline"])  # no init here: the worker's own deadline (kept by exec)
        if config["seccomp"]:
            _install_filter(libc, config["seccomp"])
        os.set_inheritable(report_fd, False)
        os.closerange(3, report_fd)
        os.closerange(report_fd + 1, 65536)
        _status(report_fd, "exec")
        if config.get("warm"):
            os.close(report_fd)  # the handshake's end of file, as an exec would close it
            _run_warm(config)  # never returns
        os.execve(config["python"], config["argv"], config["env"])
    except BaseException as exc:  # noqa: BLE001
        _status(report_fd, f"error {exc}")
        os.write(2, f"sandbox: could not start the worker: {exc}\n".encode())
        os._exit(127)


def _install_filter(libc: _Libc, program: bytes) -> None:
    """The seccomp filter; a kernel built without seccomp filters (EINVAL) runs without it."""
    try:
        libc.seccomp(program)
    except OSError as exc:
        if exc.errno != _EINVAL:
            raise


def _drop_privileges(config: dict) -> None:
    """The resource limits, then (as root) the dedicated uid: every capability is gone."""
    import resource

    for name, (soft, hard) in config["rlimits"].items():
        limit = getattr(resource, name, None)
        if limit is not None:
            resource.setrlimit(limit, (soft, hard))
    uid = config["uid"]
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)  # as root: real, effective and saved uid


def _check_reach(config: dict) -> None:
    """Fail (with the folder to blame) when this uid cannot reach what the worker needs."""
    for path, mode in config["reach"]:
        if os.access(path, mode):
            continue
        raise PermissionError(
            f"{path} is not reachable by an unprivileged user (uid "
            f"{os.getuid()}: {_blocking(path)} is not searchable)"
        )


def _blocking(path: str) -> str:
    """The first folder this uid cannot search on the way to `path`, through its links too (a
    venv's `python` is a link to its base interpreter, which may sit under a 0700 home)."""
    for candidate in (path, os.path.realpath(path)):
        parts = candidate.split("/")
        for i in range(2, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if not os.access(prefix, os.X_OK) and not os.path.islink(prefix):
                return prefix
    return path


# --------------------------------------------------------------------------- the warm template


# What a warm template compiled once (`_precompile`): the source bytes of the worker program and
# of its codec -> their code. Compiling the two costs a fresh worker about 15 ms (25 on a loaded
# machine) of its start; a fork runs the template's code for a shipped file whose bytes are the
# same, under the shipped file's own name, exactly as if it had compiled it.
_WARM_CODE: dict[bytes, object] = {}
_SHIPPED_CODEC = "seqgrade_wire.py"  # grader.sandbox.wire.WIRE_FILE: the codec beside the program


WARM_FILES = ("worker.py", "wire.py")  # beside this file: what a template compiles once


def _precompile() -> None:
    """The worker program and its codec, compiled as `runpy` and an import would (no flags of
    this file's), read from the grader's bytecode cache when it is fresh (the grader writes it:
    `zygote.cache_bytecode`), compiled here otherwise."""
    from importlib.machinery import SourceFileLoader

    here = os.path.dirname(os.path.abspath(__file__))
    for name in WARM_FILES:
        path = os.path.join(here, name)
        try:
            with open(path, "rb") as fh:
                source = fh.read()
            _WARM_CODE[source] = SourceFileLoader(name[:-3], path).get_code(name[:-3])
        except (OSError, SyntaxError, ValueError, ImportError, EOFError):
            pass  # compiled by the fork, as a fresh worker would


def _renamed(code, filename: str):  # noqa: ANN001, ANN202 - code objects (no `types` import)
    """`code` as compiled from `filename`: the name in it and in every function it defines."""
    consts = tuple(
        _renamed(c, filename) if isinstance(c, type(code)) else c for c in code.co_consts
    )
    return code.replace(co_filename=filename, co_consts=consts)


def _compiled(path: str):  # noqa: ANN202
    """The template's code for the file at `path`, named after it, or None (not the same bytes)."""
    if not _WARM_CODE:
        return None
    try:
        with open(path, "rb") as fh:
            code = _WARM_CODE.get(fh.read())
    except OSError:
        return None
    return _renamed(code, path) if code is not None else None


def _run_warm(config: dict) -> None:
    """Instead of exec: run the worker program in this process (a fork of the warm template).

    Everything above already happened in this process exactly as before an exec (limits, the
    uid, no_new_privs, seccomp, only fds 0-2 left). What the template imported (numpy, torch)
    stays; the environment, argv and random states are made as a fresh interpreter's would be.
    """
    import runpy

    program, env = config["argv"][-1], dict(config["env"])
    config.clear()  # nothing of the sandbox's configuration stays reachable from the worker
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [program]
    # `site` inside the sandbox would not have added a folder that is not there (a checkout the
    # new root leaves out, named by a .pth file)
    sys.path[:] = [p for p in sys.path if p not in _SITE_ADDED or os.path.exists(p)]
    # Random states as a fresh interpreter's: Python's `random` reseeds itself at fork; numpy's
    # legacy generator seeds from the OS when first imported (reseeded here only if the
    # template loaded it); torch's default generator, seeded at the template's import, is
    # reseeded. Nothing is imported here that a fresh worker would not.
    legacy = sys.modules.get("numpy.random")
    if legacy is not None:
        legacy.seed()
    # Signals as a fresh interpreter sets them at start-up (the launcher reset them to the
    # defaults for an exec): a write past the file size limit raises OSError instead of
    # killing the worker, a closed pipe raises BrokenPipeError.
    sig = _signals()
    for signum in (sig.SIGPIPE, sig.SIGXFSZ):
        sig.signal(signum, sig.SIG_IGN)
    sig.signal(sig.SIGINT, sig.default_int_handler)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.default_generator.seed()
    compiled = _compiled(program)
    codec = os.path.join(os.path.dirname(os.path.abspath(program)), _SHIPPED_CODEC)
    codec_code = _compiled(codec)
    _WARM_CODE.clear()
    code = 0
    try:
        if compiled is None:
            runpy.run_path(program, run_name="__main__")
        else:  # run_path's own steps for a file, with the code compiled already
            given = {"__seqgrade_compiled__": {codec: codec_code}} if codec_code else None
            runpy._run_module_code(compiled, given, "__main__", pkg_name="", script_name=program)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - as an interpreter would: the traceback, status 1
        import traceback

        traceback.print_exc()
        code = 1
    _finish(code)


def _finish(code: int) -> None:
    """End like an interpreter: exit handlers, flushed streams, the status."""
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105
            stream.flush()
        except BaseException:  # noqa: BLE001
            pass
    os._exit(code & 0xFF)


_SITE_ADDED: list[str] = []  # what `_as_site_would` put on the path


def _as_site_would(site_dirs: list[str]) -> None:
    """What `site` gives an interpreter, for a template started with -S: the site directories on
    the path (`runtime.site_dirs()`, read by the grader) and the builtins `exit`, `quit`, `help`,
    `copyright`, `credits` and `license`. No .pth file's code runs."""
    import site

    _SITE_ADDED.extend(p for p in site_dirs if p not in sys.path)
    sys.path.extend(_SITE_ADDED)
    site.setquit()
    site.setcopyright()
    site.sethelper()


def _zygote(sock_fd: int, parent: int, preload: list[str], site: list[str]) -> None:
    """The warm template: import `preload` once, then fork one sandbox launcher per request.

    A request on the socket is a marshal'd launcher configuration with five descriptors (the
    worker's stdin, stdout and stderr, the status pipe, the exit pipe); the reply is the child's
    pid with a pidfd. When a child ends, its wait status goes to its exit pipe as a line. The
    template runs nothing of a submission: each child builds its sandbox as a fresh launcher
    would (namespaces, uid, limits, seccomp) before the worker program runs.
    """
    import gc
    import marshal
    import select
    import socket

    gc.disable()  # what the template imports lives as long as it does: never collected
    libc = _Libc()
    _die_with_parent(libc, parent)
    _as_site_would(site)
    for name in preload:
        __import__(name)
    _precompile()
    gc.freeze()  # and a fork's collector never walks (nor copies) the template's objects
    gc.enable()
    sig = _signals()
    sock = socket.socket(fileno=sock_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    sig.set_wakeup_fd(wake_w)
    sig.signal(sig.SIGCHLD, lambda signum, frame: None)
    exits: dict[int, int] = {}
    sock.sendall(b"ready")
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        if sock in ready:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 17, 5)
            if not message or len(fds) != 5:
                os._exit(0)  # the grader closed its end
            pid = os.fork()
            if pid == 0:
                sock.close()
                for fd in (wake_r, wake_w, *exits.values()):
                    os.close(fd)
                sig.set_wakeup_fd(-1)
                sig.signal(sig.SIGCHLD, sig.SIG_DFL)
                _warm_child(marshal.loads(message), fds, parent=os.getppid())  # never returns
            for fd in fds[:4]:
                os.close(fd)
            exits[pid] = fds[4]
            pidfd = os.pidfd_open(pid)
            socket.send_fds(sock, [marshal.dumps(pid)], [pidfd])
            os.close(pidfd)
        _reap(exits)


def _reap(exits: dict[int, int]) -> None:
    """Each ended child's wait status on its exit pipe."""
    while exits:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = exits.pop(pid, None)
        if fd is not None:
            try:  # noqa: SIM105
                os.write(fd, f"{status}\n".encode())
            except OSError:
                pass
            os.close(fd)


def _warm_child(config: dict, fds: list[int], parent: int) -> None:
    """A template's fork: the protocol pipes on fds 0-2, then the launcher's own steps."""
    stdin_r, stdout_w, stderr_w, status_w, exit_w = fds
    os.close(exit_w)
    for fd, target in ((stdin_r, 0), (stdout_w, 1), (stderr_w, 2)):
        os.dup2(fd, target)
        os.close(fd)
    config["parent"] = parent
    try:
        _launch_with(config, status_w)
    except BaseException as exc:  # noqa: BLE001
        _status(status_w, f"error {exc}")
    os._exit(127)


# --------------------------------------------------------------------------- the probe


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
    elif sys.argv[1:2] == ["--zygote"]:
        _zygote(
            int(sys.argv[2]),
            int(sys.argv[3]),
            [n for n in sys.argv[4].split(",") if n],
            [p for p in sys.argv[5].split(os.pathsep) if p] if len(sys.argv) > 5 else [],
        )
    elif sys.argv[1:2] == ["--probe"]:
        sys.exit(_probe())
    print("usage: launcher.py --launch CONFIG_FD STATUS_FD | --probe", file=sys.stderr)
    sys.exit(2)
