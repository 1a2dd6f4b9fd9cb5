"""The worker's folder on the host: made per spawn, owned by a live grader, swept when left behind.

Each sandbox gets `<tmp>/seqgrade-sandbox-XXXX/` holding `scratch/` (the worker's cwd and HOME),
`root/` (the mount point of its new root) and `owner.lock`, an flock held by the grader for the
sandbox's life. A folder whose lock nobody holds belongs to a grader that died without
cleaning up; the next spawn on the host removes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

PREFIX = "seqgrade-sandbox-"
_LOCK = "owner.lock"
_UNLOCKED_GRACE_SECONDS = 3600.0  # a folder without a lock file yet: being made, or long dead


class ScratchBase:
    """One sandbox's folder on the host, locked by this process until `remove()`."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=PREFIX))
        self.scratch = self.path / "scratch"
        self.newroot = self.path / "root"
        # The lock is taken on a file of another name, then renamed into place: a sweeper
        # never finds owner.lock unlocked while its grader lives.
        staging = self.path / f".{_LOCK}"
        self._fd = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        os.rename(staging, self.path / _LOCK)
        self.scratch.mkdir()

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def sweep_stale(folder: Path | None = None) -> list[Path]:
    """Remove the sandbox folders under `folder` (the temp dir) whose grader is gone."""
    removed = []
    root = Path(folder or tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for path in root.iterdir():
            if (
                path.name.startswith(PREFIX)
                and path.is_dir()
                and not path.is_symlink()
                and _abandoned(path)
            ):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    return removed


def _abandoned(path: Path) -> bool:
    try:
        fd = os.open(path / _LOCK, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        with contextlib.suppress(OSError):
            return time.time() - path.stat().st_mtime > _UNLOCKED_GRACE_SECONDS
        return False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # a live grader holds it
    finally:
        os.close(fd)
    return True


def copy_submission(files: Mapping[str, bytes] | Path, scratch: Path) -> None:
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


def chown_tree(root: Path, uid: int) -> None:
    """Give the tree to the worker's uid (and gid = uid), links included, never followed."""
    os.chown(root, uid, uid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)
