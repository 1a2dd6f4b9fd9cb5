"""Which sandbox a spawn gets (namespaces, perms or plain), and the words when it is not isolated.

- ``namespaces``: root and the kernel allows unshare (the launcher builds a new root).
- ``perms``: root without namespaces (a container without CAP_SYS_ADMIN), or
  ``SEQGRADE_SANDBOX=perms``: a dedicated uid on the host's file system.
- ``plain``: not root, ``SEQGRADE_SANDBOX=off``, or what is left when the others fail to start.
The first spawn tries namespaces straight away; a failure falls back one step and is remembered
for the rest of the process, with its reason.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from grader.sandbox import launcher
from grader.sandbox.runtime import launcher_command, launcher_env

ENV_MODE = "SEQGRADE_SANDBOX"  # "off" | "perms" | unset/"auto"/"on"
STARTUP_SECONDS = 20.0  # how long spawn waits for the launcher to report the sandbox ready


class _Probe:
    """Why namespaces do not work here: None before anyone tried, "" when they work."""

    reason: str | None = None


def wanted() -> str:
    return os.environ.get(ENV_MODE, "").strip().lower()


def probe_namespaces() -> str | None:
    """None when the launcher can build a namespace sandbox here, else the reason it cannot."""
    if os.geteuid() != 0:
        return f"not running as root (uid {os.geteuid()})"
    if _Probe.reason is None:
        try:
            done = subprocess.run(
                launcher_command(launcher.__file__, "--probe"),
                capture_output=True,
                timeout=STARTUP_SECONDS,
                env=launcher_env(),
                cwd="/",
            )
            _Probe.reason = (
                ""
                if done.returncode == 0
                else (
                    done.stderr.decode(errors="replace").strip()
                    or f"probe exited with status {done.returncode}"
                )
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            _Probe.reason = f"probe failed: {exc}"
    return _Probe.reason or None


def remember_failure(reason: str) -> None:
    """The namespace sandbox failed to start: later spawns in this process go straight to perms."""
    _Probe.reason = _Probe.reason or reason


def can_isolate() -> bool:
    """True when spawn will run workers in the namespace sandbox (root, namespaces available)."""
    if wanted() in ("off", "perms"):
        return False
    return probe_namespaces() is None


def choose() -> tuple[str, str | None]:
    """(mode, why the run is not isolated or None)."""
    if wanted() == "off":
        return "plain", f"{ENV_MODE}=off"
    if os.geteuid() != 0:
        return "plain", f"not running as root (uid {os.geteuid()})"
    if wanted() == "perms":
        return "perms", f"{ENV_MODE}=perms"
    if _Probe.reason is None:
        # Not probed yet: try the namespace sandbox straight away (spawn falls back, and
        # remembers why, if it cannot start); a separate probe would cost a Python start.
        return "namespaces", None
    reason = probe_namespaces()
    if reason is None:
        return "namespaces", None
    return "perms", f"namespaces are not available ({reason})"


def fall_back(mode: str, why: str | None, failure: str) -> tuple[str, str]:
    """The next mode down after `mode` failed to start with `failure` (plain has none)."""
    if mode == "namespaces":
        reason = f"the namespace sandbox failed to start ({failure})"
        remember_failure(reason)
        return "perms", reason
    if mode == "perms":
        return "plain", f"{why}; the unprivileged uid could not be used ({failure})"
    raise ValueError("plain mode has nothing to fall back to")


def not_isolated_warning(mode: str, why: str, uid: int | None) -> str:
    if mode == "perms":
        return (
            f"this run was not isolated: {why}; the submission ran as uid {uid} with time, "
            "memory, process and file-size limits, but with the host's network and file system "
            "(hidden only where file permissions hide them)"
        )
    return (
        f"this run was not isolated: {why}; the submission ran as uid {os.geteuid()} with "
        "time, memory and file-size limits only: it could read what that user can read and "
        "use the network"
    )


def readable_by_others(paths: Sequence[Path]) -> list[Path]:
    """Hidden paths that an unrelated uid could still read (perms mode relies on permissions)."""
    exposed = []
    for p in paths:
        if not p.exists():
            continue
        if unreachable_for_others(p.parent) is None and os.stat(p).st_mode & 0o004:
            exposed.append(p)
    return exposed


def unreachable_for_others(path: Path) -> Path | None:
    """The first folder on the way to `path` (itself included) that others cannot search."""
    path = Path(os.path.abspath(path))
    real = Path(os.path.realpath(path))
    for p in [*reversed(path.parents), path, *reversed(real.parents), real]:
        try:
            if p.is_dir() and not os.stat(p).st_mode & 0o001:
                return p
        except OSError:
            return p
    return None
