"""The words a student reads about their code's process: what a call's failure was, and what the
sandbox stopped.

The sandbox reports typed facts (`grader.sandbox.session.Failure` with its `cause`, and `Event`
kinds); the sentences are written here, once, by the engine that grades. What a hidden case may
show of them is decided elsewhere (docs/feedback.md): these are the full words.
"""

from __future__ import annotations

from grader.sandbox.session import Event, Failure

RESTARTS_SPENT = "restarted too many times"  # the words of a question run after the last restart


def failure_words(f: Failure) -> str:
    """The whole story of a failure in words, the exception's message included."""
    function, module = f"`{f.function}`", f"`{f.module}.py`"
    cause = f.cause
    if cause == "protocol":
        during = f"importing {module}" if f.function is None else function
        return (
            f"the submission's process wrote data the grader could not read during {during} "
            f"({f.detail}); a submission must not write to the grader's channel (this is the "
            "submission's doing, not a failure of the grader)"
        )
    if cause == "shortcut-refused":
        return (
            f"{function} called a library function this question asks you to write "
            f"yourself ({f.detail}); the call was refused"
        )
    if cause == "not-implemented":
        return "not attempted (the function still raises `NotImplementedError`)"
    if cause == "missing-function":
        return f"the file has no function {function}"
    if cause == "bad-output":
        return f"{function} {f.detail}; return numpy arrays, torch tensors, lists or numbers"
    if cause == "exit-raised":
        return f"the submission raised `{f.detail}` during {function}; it must return a value"
    if cause == "memory":
        return f"{f.detail} during {function} (`MemoryError`)"
    if cause == "raised":
        return f"`{f.exception}`" if f.detail else f"`{f.exception_type}`"
    if cause == "import-timeout":
        return (
            f"importing {module} did not finish within {f.seconds:g} s (an infinite loop or a "
            "long computation at the top level of the file?)"
        )
    if cause == "import-ended":
        return f"the submission's process ended while importing {module} ({f.detail})"
    if cause == "import-raised":
        inner = failure_words(f.inner) if f.inner is not None else ""
        at = f" at {f.spot.file} line {f.spot.line}" if f.spot else ""
        return f"{module} could not be imported: {inner}{at}"
    if cause == "budget":
        return f"not run: the submission used up its time budget of {f.seconds:g} s"
    if cause == "call-timeout":
        return (
            f"{function} did not return: stopped after {f.seconds:g} s "
            "(an infinite loop, a sleep, or waiting for input?)"
        )
    if cause == "call-ended":
        return f"the submission's process ended during {function}: {f.detail}"
    if cause == "unreadable-value":
        return f"{function} returned data that could not be read: {f.detail}"
    if cause == "restarts-spent":
        return f"not run: the submission's process was {RESTARTS_SPENT}"
    return f.message or f.kind


_EVENT_WORDS = {
    "import-timeout": "importing {file} was stopped at its time limit",
    "import-ended": "the process running your code ended while importing {file}",
    "import-failed": "{file} could not be imported",
    "unreadable": "your code wrote data the grader could not read (during `{subject}`)",
    "call-timeout": "`{subject}` was stopped at its time limit",
    "call-ended": "the process running your code ended during `{subject}`",
    "strays": "stopped processes left running by `{subject}`",
    "threads": "restarted the process running your code: `{subject}` left threads running",
    "restarts-spent": f"the process running your code was {RESTARTS_SPENT}",
}


def event_words(event: Event, shown_file: str | None) -> str:
    """What the sandbox stopped, in words a student may see: the event's kind and the grader's
    own name for what it was about (exit statuses, counts and times stay in the detail)."""
    file = f"`{shown_file}`" if shown_file else "your file"
    return _EVENT_WORDS.get(event.kind, "the sandbox stopped your code").format(
        file=file, subject=event.subject
    )
