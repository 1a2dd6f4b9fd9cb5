"""The words a student reads about their code's process: what a call's failure was, and what the
sandbox stopped.

The sandbox reports typed facts (`grader.sandbox.session.Failure` with its `cause`, and `Event`
kinds); the sentences are written here, once, by the engine that grades. What a hidden case may
show of them is decided elsewhere (docs/feedback.md): these are the full words.
"""

from __future__ import annotations

from grader.sandbox.session import Event, Failure

RESTARTS_SPENT = "restarted too many times"  # the words of a question run after the last restart


_FAILURE_WORDS = {
    "shortcut-refused": (
        "{function} called a library function this question asks you to write yourself "
        "({detail}); the call was refused"
    ),
    "not-implemented": "not attempted (the function still raises `NotImplementedError`)",
    "missing-function": "the file has no function {function}",
    "bad-output": "{function} {detail}; return numpy arrays, torch tensors, lists or numbers",
    "exit-raised": "the submission raised `{detail}` during {function}; it must return a value",
    "memory": "{detail} during {function} (`MemoryError`)",
    "import-timeout": (
        "importing {module} did not finish within {seconds:g} s (an infinite loop or a long "
        "computation at the top level of the file?)"
    ),
    "import-ended": "the submission's process ended while importing {module} ({detail})",
    "budget": "not run: the submission used up its time budget of {seconds:g} s",
    "call-timeout": (
        "{function} did not return: stopped after {seconds:g} s (an infinite loop, a sleep, or "
        "waiting for input?)"
    ),
    "call-ended": "the submission's process ended during {function}: {detail}",
    "unreadable-value": "{function} returned data that could not be read: {detail}",
    "restarts-spent": f"not run: the submission's process was {RESTARTS_SPENT}",
}
"""A failure's words by its cause, filled from its facts; the three causes whose words are built
from other parts are `failure_words`' own."""


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
    if cause == "raised":
        return f"`{f.exception}`" if f.detail else f"`{f.exception_type}`"
    if cause == "import-raised":
        inner = failure_words(f.inner) if f.inner is not None else ""
        at = f" at {f.spot.file} line {f.spot.line}" if f.spot else ""
        return f"{module} could not be imported: {inner}{at}"
    words = _FAILURE_WORDS.get(cause or "")
    if words is None:
        return f.message or f.kind
    return words.format(function=function, module=module, detail=f.detail, seconds=f.seconds)


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
