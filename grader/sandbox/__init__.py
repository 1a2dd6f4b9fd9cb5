"""The isolated worker and everything that contains it; it knows nothing of grading.

Rooms: `spawn` (start a worker, choosing and falling back between modes; `launch` is its
first half), `process`
(SandboxProcess, the grader's handle on it), `limits`, `modes`, `uids`, `cgroup`, `seccomp`,
`scratch`, `runtime`, `pipes` (one deadline reader), `launcher` (the stdlib script that builds
the sandbox), and the worker's side: `session` (trusted), `worker` (runs inside) and `wire`
(the codec both use).
What to hide is the caller's to say (`spawn(..., hide=...)`): the sandbox imports nothing
else from `grader`.
"""

from grader.sandbox.limits import Limits, memory_limit_message
from grader.sandbox.modes import can_isolate
from grader.sandbox.process import SandboxProcess
from grader.sandbox.spawn import Launch, SandboxError, launch, spawn

__all__ = [
    "Launch",
    "Limits",
    "SandboxError",
    "SandboxProcess",
    "can_isolate",
    "launch",
    "memory_limit_message",
    "spawn",
]
