"""A memory cgroup capping a whole sandbox, where the host lets us create one (v1 or v2)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

PREFIX = "seqgrade-"  # cgroups are named seqgrade-<uid>


def _parents() -> Iterator[tuple[Path, int]]:
    """The cgroup folders (and versions) where ours may be made: our own memory cgroup."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        rel = rel.lstrip("/")
        if "memory" in controllers.split(","):
            yield Path("/sys/fs/cgroup/memory") / rel, 1
        elif controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            parent = Path("/sys/fs/cgroup") / rel
            try:
                if "memory" in (parent / "cgroup.subtree_control").read_text().split():
                    yield parent, 2
            except OSError:
                continue


class MemoryCgroup:
    """A child memory cgroup holding the launcher and everything the worker starts."""

    def __init__(self, path: Path, version: int) -> None:
        self.path, self.version = path, version

    @classmethod
    def create(cls, name: str, limit: int) -> MemoryCgroup | None:
        for parent, version in _parents():
            group = cls(parent / name, version)
            try:
                group.path.mkdir()
            except FileExistsError:
                pass  # left by a grader that died: the sweep empties it first
            except OSError:
                continue
            if group._set_limit(limit):
                return group
            with contextlib.suppress(OSError):
                group.path.rmdir()
        return None

    def _set_limit(self, limit: int) -> bool:
        try:
            if self.version == 1:
                (self.path / "memory.limit_in_bytes").write_text(str(limit))
                if (self.path / "memory.memsw.limit_in_bytes").exists():
                    with contextlib.suppress(OSError):
                        (self.path / "memory.memsw.limit_in_bytes").write_text(str(limit))
            else:
                (self.path / "memory.max").write_text(str(limit))
                if (self.path / "memory.swap.max").exists():
                    (self.path / "memory.swap.max").write_text("0")
        except OSError:
            return False
        return True

    @property
    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def oom_killed(self) -> bool:
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            text = (self.path / name).read_text()
        except OSError:
            return False
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill" and value.strip() not in ("", "0"):
                return True
        return False

    def kill_all(self) -> None:
        """SIGKILL every process in the cgroup (v2: cgroup.kill; v1: its process list)."""
        if self.version == 2 and (self.path / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.path / "cgroup.kill").write_text("1")
                return
        for _ in range(50):
            try:
                pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                return
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)  # the last processes are still being torn down


def sweep_stale(is_stale: Callable[[int], bool]) -> list[Path]:
    """Kill and remove our cgroups (seqgrade-<uid>) whose uid `is_stale`; returns their paths."""
    removed = []
    for parent, version in _parents():
        with contextlib.suppress(OSError):
            for child in parent.iterdir():
                uid = child.name.removeprefix(PREFIX)
                if not (child.name.startswith(PREFIX) and uid.isdigit() and child.is_dir()):
                    continue
                if is_stale(int(uid)):
                    group = MemoryCgroup(child, version)
                    group.kill_all()
                    group.remove()
                    removed.append(child)
    return removed
