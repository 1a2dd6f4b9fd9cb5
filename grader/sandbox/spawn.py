"""spawn: start one worker in the strongest sandbox the machine allows, falling back with reasons."""

from __future__ import annotations

import contextlib
import marshal
import os
import select
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from grader.sandbox import cgroup, launcher, modes, scratch, seccomp, uids, zygote
from grader.sandbox.cgroup import MemoryCgroup
from grader.sandbox.limits import Limits
from grader.sandbox.pipes import DeadlineReader
from grader.sandbox.process import SandboxProcess
from grader.sandbox.runtime import (
    launcher_command,
    launcher_env,
    runtime_paths,
    unused_site_dirs,
    worker_env,
)

_CGROUP_MARGIN = 64 << 20  # the launcher's and init's share of the sandbox's memory cgroup
_DEFAULT_LIMITS = Limits()
Launched = subprocess.Popen | zygote.WarmChild


class SandboxError(RuntimeError):
    """The sandbox could not be set up (the reason names the step that failed)."""


def spawn(
    program: Path, submission_files: Mapping[str, bytes] | Path, **options: Any
) -> SandboxProcess:
    """Start `python program` (a standalone worker script, stdlib + numpy + torch) in the sandbox:
    `launch` with the same options, then its `wait()`.

    The program is copied into the scratch folder and run as `sys.executable -I -B
    <scratch>/<program.name>` with cwd = scratch; fd 0 / fd 1 are the protocol pipes, fd 2 is
    drained into the truncated output buffer. `hide`: the folders and files the worker must
    not see (the caller's own trees, the results folder, the container's metadata file); the
    sandbox knows nothing of them by itself. `warm`: the libraries the worker preloads; when
    warm templates are enabled (`zygote.enable()`), the launcher is forked from the template
    that imported them (same isolation; the worker program then runs without an exec).
    """
    return launch(program, submission_files, **options).wait()


def launch(
    program: Path,
    submission_files: Mapping[str, bytes] | Path,
    *,
    limits: Limits = _DEFAULT_LIMITS,
    hide: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    warm: Sequence[str] | None = None,
) -> Launch:
    """`spawn` in two steps (its options: `limits`, `hide`, `env`, `warm`): this one prepares
    the sandbox (its folder, uid and memory cgroup) and starts its launcher, in a few
    milliseconds; `Launch.wait()` then waits for the worker to run. The launcher builds the
    sandbox in its own process, so the caller's work in between costs no time. A warm template
    still importing is not waited for here: it is asked for its fork by `wait()`."""
    _sweep_once()
    mode, why = modes.choose()
    return Launch(
        mode,
        why,
        Path(program),
        submission_files,
        limits,
        [Path(os.path.abspath(p)) for p in hide],
        env,
        warm,
    )


class Launch:
    """A sandbox being started (`launch`): one mode tried after the other until one runs."""

    def __init__(
        self,
        mode: str,
        why: str | None,
        program: Path,
        submission_files: Mapping[str, bytes] | Path,
        limits: Limits,
        hidden: list[Path],
        env: Mapping[str, str] | None,
        warm: Sequence[str] | None,
    ) -> None:
        self._mode, self._why = mode, why
        self._source, self._program_name = program.read_bytes(), program.name
        self._files, self._limits, self._hidden, self._env = submission_files, limits, hidden, env
        self._warm = warm
        self._attempt: _Attempt | None = None
        self._begin()

    def _begin(self) -> None:
        """Prepare the sandbox in the current mode, falling back while the preparing fails."""
        while True:
            try:
                self._attempt = _Attempt(self)
                return
            except (SandboxError, uids.UidError) as exc:
                self._fall_back(exc)

    def _fall_back(self, exc: Exception) -> None:
        if self._mode == "plain":
            raise exc
        self._mode, self._why = modes.fall_back(self._mode, self._why, str(exc))

    def ready(self) -> bool:
        """Whether `wait()` would hardly wait: the launcher has written its first word (a
        launcher deferred until its warm template imported is started here once it has)."""
        attempt = self._attempt
        return attempt is None or attempt.ready()

    def wait(self) -> SandboxProcess:
        """The running worker (its launcher said so); a mode that failed falls back to the next."""
        while True:
            attempt, self._attempt = self._attempt, None
            if attempt is None:
                raise SandboxError("this sandbox was already waited for or cancelled")
            try:
                return attempt.finish()
            except (SandboxError, uids.UidError) as exc:
                self._fall_back(exc)
                self._begin()

    def cancel(self) -> None:
        """Stop what was started without waiting for it (a caller that no longer needs it)."""
        attempt, self._attempt = self._attempt, None
        if attempt is not None:
            attempt.abandon()


class _Attempt:
    """One mode's try: the scratch folder, the uid's lease, the cgroup and the launcher (forked
    from the warm template, or a fresh process); `finish` reads the launcher's word."""

    def __init__(self, launch: Launch) -> None:
        """Prepare the sandbox in `launch`'s current mode; start its launcher when it can."""
        mode, limits, hidden = launch._mode, launch._limits, launch._hidden
        self.mode, self.limits = mode, limits
        self.base = scratch.ScratchBase()
        self.lease: uids.UidLease | None = None
        self.group: MemoryCgroup | None = None
        self.popen: Launched | None = None
        self.status_r = -1
        try:
            scratch.copy_submission(launch._files, self.base.scratch)
            (self.base.scratch / launch._program_name).write_bytes(launch._source)
            if mode != "plain":
                self.lease = uids.UidLease()
                if mode == "perms":
                    uids.remove_files_of(self.lease.uid)  # what a dead grader's worker left in /tmp
                scratch.chown_tree(self.base.scratch, self.lease.uid)
                os.chmod(self.base.scratch, 0o700)
                os.chmod(self.base.path, 0o711)  # perms mode: the worker may pass through, not list
                self.group = MemoryCgroup.create(
                    f"{cgroup.PREFIX}{self.lease.uid}", limits.memory_bytes + _CGROUP_MARGIN
                )
            if mode == "namespaces":
                self.base.newroot.mkdir(mode=0o700)
            self.warning = _warning(mode, launch._why, self.lease, hidden)
            self.config = _config(
                mode,
                self.lease.uid if self.lease else None,
                self.base,
                launch._program_name,
                limits,
                hidden,
                launch._env,
                self.group,
            )
            warm = launch._warm
            self.template = zygote.template_for(warm, wait=False) if warm is not None else None
            if self.template is None or self.template.ready():
                self._start()  # else `finish` asks the template once it has imported
        except BaseException:
            self.abandon()
            raise

    def _start(self) -> None:
        """The launcher: a fork of the warm template when there is one, else a fresh process."""
        if self.template is not None:
            try:
                self.popen, self.status_r = _start_launcher(
                    {**self.config, "warm": True}, self.template
                )
                return
            except zygote.TemplateError:
                zygote.discard(self.template)  # a fresh launcher this time; a new template next
        self.popen, self.status_r = _start_launcher(self.config, None)

    def ready(self) -> bool:
        """`Launch.ready` of this try (an error counts: `finish` then says it at once)."""
        try:
            if self.popen is None:
                if self.template is None or not self.template.ready():
                    return False
                self._start()
            readable, _, _ = select.select([self.status_r], [], [], 0)
        except (OSError, ValueError):  # a launcher that could not start: `finish` raises it
            return True
        return bool(readable)

    def finish(self) -> SandboxProcess:
        """Wait until the worker's exec succeeded (or the launcher's error: raised)."""
        try:
            if self.popen is None:
                self._start()
            assert self.popen is not None
            try:
                lines, late = DeadlineReader(self.status_r).lines_until(
                    ("ready", "error"), modes.STARTUP_SECONDS
                )
            finally:
                os.close(self.status_r)
                self.status_r = -1
            init_pid = _started(self.popen, lines, late)
            return SandboxProcess(
                self.popen,
                base=self.base,
                mode=self.mode,
                warning=self.warning,
                limits=self.limits,
                lease=self.lease,
                cgroup=self.group,
                init_pid=init_pid,
            )
        except BaseException:
            self.abandon()
            raise

    def abandon(self) -> None:
        """Undo this try: its launcher killed (when it still runs), its uid, cgroup and folder."""
        if self.status_r >= 0:
            os.close(self.status_r)
            self.status_r = -1
        if self.popen is not None and self.popen.poll() is None:
            with contextlib.suppress(OSError):
                self.popen.kill()
            self.popen.wait()
        if self.lease is not None:
            uids.kill_uid(self.lease.uid)
            self.lease.release()
        if self.group is not None:
            self.group.remove()
        self.base.remove()


@cache
def _sweep_once() -> None:
    """What a grader that died left behind: processes of its uids, its cgroups, its folders."""
    if os.geteuid() == 0:
        stale = set(uids.sweep_stale_uids())
        cgroup.sweep_stale(lambda uid: uid in stale or bool(uids.unleased({uid})))
    scratch.sweep_stale()


def _warning(
    mode: str, why: str | None, lease: uids.UidLease | None, hidden: list[Path]
) -> str | None:
    """None for namespaces; else what the run lacks, and in perms mode what stays readable."""
    if mode == "namespaces":
        return None
    warning = modes.not_isolated_warning(mode, why or "", lease.uid if lease else None)
    if mode == "perms":
        _close_hidden_files(hidden)
        exposed = modes.readable_by_others(hidden)
        if exposed:
            warning += "; readable by the worker: " + ", ".join(map(str, exposed[:3]))
    return warning


def _close_hidden_files(hidden: list[Path]) -> None:
    """Perms mode: a hidden single file (the container's metadata) loses its world bits.

    Folders are only reported (their permissions are the setup's to decide); a file named in
    `hide` is precise enough to change: root keeps reading it, the worker's uid no longer can.
    """
    for path in hidden:
        with contextlib.suppress(OSError):
            st = path.lstat()
            if path.is_file() and not path.is_symlink() and st.st_mode & 0o007:
                os.chmod(path, st.st_mode & ~0o007)


def _config(
    mode: str,
    uid: int | None,
    base: scratch.ScratchBase,
    program_name: str,
    limits: Limits,
    hidden: list[Path],
    env: Mapping[str, str] | None,
    group: MemoryCgroup | None,
) -> dict:
    """What the launcher needs, as plain data for marshal (docs/sandbox.md names each step)."""
    protect = modes.wanted() != "off"  # SEQGRADE_SANDBOX=off: limits and a process group only
    binds = [str(p) for p in runtime_paths()]
    return {
        "mode": mode,
        "uid": uid,
        "parent": os.getpid(),
        "protect": protect,
        "seccomp": _filter() if protect else None,
        "deadline": limits.deadline_seconds if protect else 0,
        "python": sys.executable,
        "argv": [sys.executable, "-I", "-B", str(base.scratch / program_name)],
        "env": worker_env(base.scratch, env),
        "scratch": str(base.scratch),
        "newroot": str(base.newroot),
        "binds": binds,
        "hide": [str(p) for p in (*hidden, *(unused_site_dirs() if mode == "namespaces" else ()))],
        "reach": _reach(binds, base.scratch / program_name) if uid is not None else [],
        "rlimits": _rlimits(limits, dedicated_uid=uid is not None),
        "tmpfs_bytes": max(limits.file_bytes, 16 << 20),
        "cgroup_procs": group.procs_file if group else None,
    }


@cache
def _filter() -> bytes | None:
    return seccomp.worker_filter(os.uname().machine)


def _reach(binds: list[str], program: Path) -> list[tuple[str, int]]:
    """What the worker's uid must reach, checked as that uid before the exec."""
    need = [(sys.executable, os.X_OK), (str(program), os.R_OK)]
    need += [(p, os.R_OK | os.X_OK) for p in binds if os.path.isdir(p)]
    return need


def _rlimits(limits: Limits, dedicated_uid: bool) -> dict[str, list[int]]:
    cpu = limits.cpu_seconds
    nproc = limits.processes
    if not dedicated_uid:
        # RLIMIT_NPROC counts every task of the uid: the grader's user may already run many.
        nproc += uids.tasks_of_uid(os.getuid())
    return {
        "RLIMIT_AS": [limits.memory_bytes, limits.memory_bytes],
        "RLIMIT_CPU": [cpu, cpu + 2],
        "RLIMIT_NPROC": [nproc, nproc],
        "RLIMIT_FSIZE": [limits.file_bytes, limits.file_bytes],
        "RLIMIT_CORE": [0, 0],
        "RLIMIT_NOFILE": [1024, 1024],
    }


def _start_launcher(config: dict, template: zygote.Template | None) -> tuple[Launched, int]:
    """Run the launcher; its status pipe's read end is returned with it (`_Attempt.finish`)."""
    config_r, config_w = os.pipe()
    status_r, status_w = os.pipe()
    try:
        data = marshal.dumps(config)
        assert len(data) < 60_000, "the launcher's configuration must fit in the pipe buffer"
        os.write(config_w, data)
        os.close(config_w)
        config_w = -1
        popen: Launched
        if template is not None:
            popen = template.fork(config, status_w)
        else:
            popen = subprocess.Popen(
                launcher_command(launcher.__file__, "--launch", str(config_r), str(status_w)),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                pass_fds=(config_r, status_w),
                env=launcher_env(),
                cwd="/",
            )
    except BaseException:
        os.close(status_r)
        raise
    finally:
        os.close(config_r)
        os.close(status_w)
        if config_w >= 0:
            os.close(config_w)
    return popen, status_r


def _started(popen: Launched, lines: list[str], late: str | None) -> int | None:
    """init's pid when the status lines say the worker runs; else discard and raise why not."""
    init_pid = None
    for line in lines:
        word, _, rest = line.partition(" ")
        if word == "init":
            init_pid = int(rest)
        elif word == "error":
            _discard(popen, init_pid)
            raise SandboxError(rest)
        elif word == "ready" or (word == "exec" and late is None and lines[-1] == line):
            return init_pid  # namespaces: init's word; else the exec closed the status pipe
    _discard(popen, init_pid)
    if late:
        raise SandboxError(f"the sandbox did not start within {modes.STARTUP_SECONDS:g} s")
    err = popen.stderr.read(4096) if popen.stderr is not None else b""
    detail = f": {err.decode(errors='replace').strip()}" if err else ""
    raise SandboxError(f"the launcher ended before the worker started{detail}")


def _discard(popen: Launched, init_pid: int | None) -> None:
    for pid in (init_pid, popen.pid):
        if pid:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    popen.wait()
