"""The isolated worker and everything that contains it; it knows nothing of grading."""

from grader.sandbox.launcher import (
    Limits,
    SandboxProcess,
    can_isolate,
    default_hidden_paths,
    memory_limit_message,
    spawn,
)

__all__ = ["Limits", "SandboxProcess", "can_isolate", "default_hidden_paths", "memory_limit_message", "spawn"]
