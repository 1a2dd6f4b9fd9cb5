"""The trusted side of a worker: start it once, reuse it for every call, restart it after a crash.

Everything that comes back is plain data decoded strictly and within limits
(`grader.sandbox.wire.decode`: arrays read without pickle, each blob once, bounded depth,
entries and integers); nothing the student returns is unpickled or executed. A reply that
breaks the wire format is the submission's doing (it wrote to the grader's channel), and the
failure says so.

The session knows nothing of grading: it reports what happened as typed facts (`Failure`'s
`cause` and its fields, `Event` kinds), and the words a student reads are the caller's
(`words=`; the engine's are in `grader.engine.sandbox_words`). Special arguments (a seeded generator, a table
language model) are any objects with a `wire_spec() -> (tag, data)` method, sent as
`{"__tag__": data}` for the worker to rebuild.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from grader import sandbox
from grader.sandbox import wire

WORKER_PROGRAM = Path(__file__).with_name("worker.py")  # run in the sandbox, never imported here
WIRE_SOURCE = Path(wire.__file__).read_bytes()  # shipped beside it as `wire.WIRE_FILE`
MAX_RESTARTS = 12  # after a crash or a timeout
# After a function left threads running (they hold memory, threads and time the next questions
# need): a budget of its own, so that threads never use up the restarts a crash needs.
MAX_THREAD_RESTARTS = 32
MAX_CALLBACKS = 256  # calls of replaced functions answered in one call
# top-level statements skipped in one import that are reported (the worker is told)
MAX_SKIPPED = 10
READ_AHEAD = 1 << 16  # bytes read at once from the worker beyond what a message's part needs

FailureKind = Literal[
    "not-attempted",
    "exception",
    "timeout",
    "crashed",
    "bad-output",
    "missing-function",
    "budget",
    "import",
    "protocol",  # the submission wrote to the grader's channel: its doing, never the grader's failure
]
WIRE_TAGS = (
    "rng",
    "lm",
)  # the special arguments the worker rebuilds (grader.sandbox.wire.decode)


@dataclass(frozen=True)
class Spot:
    """A line of the submission's code, as its process reported it."""

    file: str
    line: int
    text: str = ""


Cause = Literal[
    "protocol",  # unreadable data on the grader's channel (`detail`: what the decoder said)
    "shortcut-refused",  # a banned entry point was refused (`detail`: the worker's message)
    "not-implemented",  # the function still raises NotImplementedError
    "missing-function",  # the module has no such function
    "bad-output",  # the worker could not encode the value (`detail`: what it said)
    "exit-raised",  # SystemExit or KeyboardInterrupt (`detail`: which)
    "memory",  # MemoryError (`detail`: the memory limit in words, from `limits`)
    "raised",  # any other exception (`exception`, `detail`: its message)
    "import-timeout",  # the import did not finish within `seconds`
    "import-ended",  # the process ended while importing (`detail`: how it ended)
    "import-raised",  # the import raised (`inner`: what it raised)
    "budget",  # not run: the submission's time budget of `seconds` is spent
    "call-timeout",  # the call was stopped after `seconds`
    "call-ended",  # the process ended during the call (`detail`: how it ended)
    "unreadable-value",  # the returned value could not be decoded (`detail`)
    "restarts-spent",  # not run: the process was restarted too many times
]


@dataclass
class Failure:
    """Why a call produced no usable value: its kind, and what the process reported, in full."""

    kind: FailureKind
    message: str = ""
    """The whole story in words (the exception's message included), written by the session's
    `words` from the facts below: for a caller to show only where the submission's process could
    not have chosen it for hidden inputs."""
    cause: Cause | None = None
    """What happened, finer than `kind`: the fact the words are written from."""
    function: str | None = None
    """The function called (None: the module's import)."""
    module: str | None = None
    """The student's module (for a failure of its import)."""
    seconds: float | None = None
    """The limit that stopped it (a call's or the submission's time)."""
    detail: str | None = None
    """What the process or the decoder reported (a message, how the process ended)."""
    inner: Failure | None = None
    """What an import raised, for a failure of the import."""
    exception: str | None = None
    """The exception's type and message, when one was raised."""
    exception_type: str | None = None
    """The exception's class name, as the process reported it."""
    builtin: bool = False
    """The process reported the class as one of Python's built-in exceptions."""
    spot: Spot | None = None
    """The submission's own line where it raised."""
    after_calls: bool = False
    """It happened after the submission's functions had been called (a restart's import):
    what it says may then carry what those calls were given."""

    @property
    def is_overflow(self) -> bool:
        """Pure-Python arithmetic raising where numpy would return inf or NaN (math.exp(1000), log(0))."""
        if not self.exception:
            return False
        etype, _, msg = self.exception.partition(": ")
        return etype in ("OverflowError", "ZeroDivisionError", "FloatingPointError") or (
            etype == "ValueError" and "math domain error" in msg
        )


EventKind = Literal[
    "import-timeout",  # importing the module did not finish in time
    "import-ended",  # the process ended while importing
    "import-failed",  # the import raised
    "unreadable",  # the process wrote data the grader could not read
    "call-timeout",  # a call was stopped at its time limit
    "call-ended",  # the process ended during a call
    "strays",  # processes left running by a function were stopped
    "threads",  # the process was restarted: a function left threads running
    "restarts-spent",  # the process was restarted too many times
]


@dataclass(frozen=True)
class Event:
    """Something the sandbox stopped or restarted: a fixed kind, about a named function or
    module (the grader's own names), and the full detail (exit status, counts) apart."""

    kind: EventKind
    subject: str
    detail: str


@dataclass(frozen=True)
class ShortcutUse:
    """Where a banned entry point was called: the student's innermost frame at the time."""

    name: str
    """The entry point, e.g. "torch.nn.functional.layer_norm"."""
    file: str
    """The student's file ("" when no frame of theirs was on the stack)."""
    line: int
    function: str
    """The student's function holding that line (maybe a helper)."""


@dataclass
class CallOutcome:
    value: Any = None
    failure: Failure | None = None
    tripped: list[str] = field(default_factory=list)
    """Banned entry points called (and refused)."""
    shortcuts: list[ShortcutUse] = field(default_factory=list)
    """Where each was called."""

    @property
    def ok(self) -> bool:
        return self.failure is None


class _Timeout(Exception):
    pass


def to_wire(value: Any, blobs: list[bytes]) -> Any:
    """Encode a call argument; an object with `wire_spec()` travels as its special form."""
    spec = getattr(type(value), "wire_spec", None)
    if callable(spec):
        tag, data = spec(value)
        if tag not in WIRE_TAGS:
            raise TypeError(f"unknown special argument {tag!r}")
        return {f"__{tag}__": data}
    if isinstance(value, tuple):
        return {"__tuple__": [to_wire(v, blobs) for v in value]}
    if isinstance(value, list):
        return [to_wire(v, blobs) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[to_wire(k, blobs), to_wire(v, blobs)] for k, v in value.items()]}
    return wire.encode(value, blobs)


def _threads_of(reply: dict) -> int:
    """The worker's count of Python threads alive besides its main one (0 when it sent none)."""
    n = reply.get("threads")
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else 0


def plain_words(f: Failure) -> str:
    """The facts of a failure as they are, for a caller that writes no words of its own."""
    named = f.function or (f"{f.module}.py" if f.module else None)
    parts = [f.cause or f.kind, named, f.exception or f.detail]
    if f.seconds is not None:
        parts.append(f"{f.seconds:g} s")
    if f.inner is not None:
        parts.append(plain_words(f.inner))
    return ": ".join(str(p) for p in parts if p)


def _protocol_failure(function: str | None, module: str, exc: Exception) -> Failure:
    return Failure("protocol", cause="protocol", function=function, module=module, detail=str(exc))


def _names_of(value: Any) -> tuple[str, ...]:
    """Module names the worker reported: identifiers only, a few (the reply is the student's
    process's)."""
    if not isinstance(value, list):
        return ()
    return tuple(n for n in value if isinstance(n, str) and n.isidentifier() and len(n) <= 64)[:8]


@dataclass(frozen=True)
class RunOn:
    """How a module whose top level fails while it is imported is run on (a `.py`; a notebook's
    generated module guards its own cells): a statement that raises is skipped and the module
    run on from the next one; an import that runs out of time is tried once more, one
    statement at a time, by the time rules of a notebook's cells."""

    statement_seconds: float
    """CPU seconds a statement that runs code may use."""
    budget: float
    """Wall seconds into the import after which a statement that runs code is not started."""
    hard_stop: float
    """Wall seconds into the import at which a running statement is stopped (one that only
    imports or defines still gets a quarter of a second past it)."""
    defining_lines: frozenset[int] = frozenset()
    """First lines of the top-level statements that only import or define: no CPU limit, and
    started whenever their turn comes."""


@dataclass(frozen=True)
class SkippedStatement:
    """A top-level statement of the module that was skipped while the module was imported."""

    line: int
    """Its first line in the module's file."""
    failure: Failure | None = None
    """What it raised; None when it was stopped (`stopped`)."""
    stopped: str = ""
    """Why it was stopped, in a re-import one statement at a time: "cpu" (it used up its CPU
    time), "wall" (the import's time ran out while it ran: it waited rather than computed) or
    "not-run" (the import's time for code was spent before its turn)."""
    stopped_after: float | None = None
    """Seconds it ran until stopped: CPU seconds ("cpu"), wall seconds ("wall")."""


def _skipped_of(value: Any) -> tuple[SkippedStatement, ...]:
    """The top-level statements the worker reported skipped (checked as plain data: the reply
    is the student's process's)."""
    if not isinstance(value, list):
        return ()
    out = []
    for s in value[:MAX_SKIPPED]:
        line = s.get("line") if isinstance(s, dict) else None
        if not isinstance(line, int) or isinstance(line, bool):
            continue
        if isinstance(s.get("error"), dict):
            out.append(SkippedStatement(line, failure=describe_error(s["error"], None)))
        elif s.get("stopped") in ("cpu", "wall", "not-run"):
            seconds = s.get("seconds")
            number = isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
            out.append(
                SkippedStatement(
                    line, stopped=s["stopped"], stopped_after=float(seconds) if number else None
                )
            )
    return tuple(out)


def _shortcuts_of(reply: dict) -> tuple[list[str], list[ShortcutUse]]:
    """The banned entry points a reply names, checked as plain data."""
    raw_names, raw_uses = reply.get("tripped"), reply.get("tripped_at")
    names = (
        [t[:200] for t in raw_names[:20] if isinstance(t, str)]
        if isinstance(raw_names, list)
        else []
    )
    uses = []
    for entry in raw_uses[:20] if isinstance(raw_uses, list) else []:
        if (
            isinstance(entry, list)
            and len(entry) == 4
            and all(isinstance(x, str) for x in entry[:2])
            and isinstance(entry[2], int)
            and isinstance(entry[3], str)
        ):
            uses.append(ShortcutUse(entry[0][:200], entry[1][:200], entry[2], entry[3][:200]))
    return names, uses


def describe_error(
    err: dict, function: str | None, limits: sandbox.Limits | None = None
) -> Failure:
    """A student's exception as facts: the type, the message, their own line."""
    err = err if isinstance(err, dict) else {}
    etype, msg, where = (
        str(err.get("type", "Exception"))[:100],
        str(err.get("message", ""))[:600],
        err.get("where"),
    )
    if not (
        isinstance(where, dict)
        and isinstance(where.get("file"), str)
        and isinstance(where.get("line"), int)
    ):
        where = None
    spot = (
        Spot(where["file"][:200], where["line"], str(where.get("text") or "")[:160])
        if where
        else None
    )
    builtin = err.get("builtin") is True
    if etype == "ShortcutRefused":
        return Failure("exception", cause="shortcut-refused", function=function, detail=msg)
    if etype == "NotImplementedError":
        return Failure("not-attempted", cause="not-implemented", function=function)
    if etype == "MissingFunction":
        return Failure("missing-function", cause="missing-function", function=function)
    if etype == "BadOutput":
        return Failure("bad-output", cause="bad-output", function=function, detail=msg)
    if etype in ("SystemExit", "KeyboardInterrupt"):
        return Failure("exception", cause="exit-raised", function=function, detail=etype)
    if etype == "MemoryError":
        limit = sandbox.memory_limit_message(limits) if limits else "memory limit reached"
        return Failure(
            "exception",
            cause="memory",
            function=function,
            detail=limit,
            exception_type=etype,
            builtin=builtin,
            spot=spot,
        )
    return Failure(
        "exception",
        cause="raised",
        function=function,
        detail=msg,
        exception=f"{etype}: {msg}",
        exception_type=etype,
        builtin=builtin,
        spot=spot,
    )


class WorkerSession:
    """One sandboxed worker for one submission, reused for every call."""

    def __init__(
        self,
        files: dict[str, bytes],
        module: str,
        *,
        preload: tuple[str, ...] = ("numpy",),
        tripwires: tuple[str, ...] = (),
        not_shortcuts: tuple[str, ...] = (),
        limits: sandbox.Limits = sandbox.Limits(),
        hide: tuple[Path, ...] = (),
        words: Callable[[Failure], str] = plain_words,
        run_on: RunOn | None = None,
    ) -> None:
        self.files = files
        self.module = module
        self.run_on = run_on
        # the first import ran out of time, and the module is imported one statement at a time
        # since (`RunOn`)
        self.statement_by_statement = False
        self.preload = preload
        self.tripwires = tripwires
        self.not_shortcuts = not_shortcuts  # names under a banned module that are never refused
        self.limits = limits
        self.hide = hide
        self.words = words  # a failure's facts -> the sentence a student reads
        self.started_at = time.monotonic()
        self.proc: sandbox.SandboxProcess | None = None
        self._launch: sandbox.Launch | None = None  # launched, not yet waited for
        self.import_failure: Failure | None = None
        self.import_tripped: list[str] = []  # banned entry points called while importing the module
        self.import_shortcuts: list[ShortcutUse] = []
        # libraries the module imports that this environment lacks, given a stand-in (worker)
        self.missing_libraries: tuple[str, ...] = ()
        # the module's top-level statements that raised and were skipped (`run_on`), with what
        # they raised, from its first import only (a later one may follow hidden calls)
        self.skipped_statements: tuple[SkippedStatement, ...] = ()
        self.tampered = False  # a banned library was loaded behind the worker's import hook
        self.restarts = 0  # after a crash or a timeout (MAX_RESTARTS)
        self.thread_restarts = 0  # after threads left running (MAX_THREAD_RESTARTS)
        self.events: list[Event] = []  # what the sandbox stopped or restarted, for the report
        self._ready = False
        self._expect: list[str] = []  # ids of the requests sent and not yet answered, in order
        self._output_parts: list[str] = []
        self._isolated = False
        self._warning: str | None = None
        self._threads = (0, 0)  # the student's threads alive: after the import, after the last call
        self._inbox_of: object = None  # the worker whose bytes `_inbox` holds, read not yet used
        self._inbox = bytearray()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Spawn the worker and ask it to preload its imports and import the student's module;
        returns without waiting for either."""
        self.launch()
        self.wait_started()

    def launch(self) -> None:
        """The first half of `start`: the sandbox prepared and its launcher started (a few ms,
        `sandbox.launch`); the launcher builds it in its own process, on another core, while
        this one works until `wait_started()`. Nothing runs in a thread of this process (a
        thread waiting on its system calls beside a busy one gets the interpreter's lock only
        every few milliseconds)."""
        shipped = {**self.files, wire.WIRE_FILE: WIRE_SOURCE}  # the codec wins a name clash
        self._launch = sandbox.launch(
            WORKER_PROGRAM, shipped, limits=self.limits, hide=self.hide, warm=self.preload
        )

    def launched_ready(self) -> bool:
        """Whether `wait_started()` would hardly wait (nothing launched counts as ready)."""
        return self._launch is None or self._launch.ready()

    def wait_started(self) -> None:
        """The second half of `start`: the worker running, asked for its preload and import."""
        launch, self._launch = self._launch, None
        if launch is None:
            return
        self.proc = launch.wait()
        self._expect = []
        self._isolated, self._warning = self.proc.isolated, self.proc.warning
        self._send(
            {
                "op": "hello",
                "preload": list(self.preload),
                "tripwires": list(self.tripwires),
                "not_shortcuts": sorted(self.not_shortcuts),
                "files": sorted(self.files),
            }
        )
        # the import asked for at once: the module is imported while this side is busy
        # (`_ensure_ready` reads both replies, and times the import from the preload's end)
        self._send({"op": "import", "module": self.module, **self._run_on_request()})
        self._ready = False

    def _run_on_request(self) -> dict[str, Any]:
        """The import request's part that says how the module's top level is run on."""
        if self.run_on is None:
            return {}
        guard = {
            "seconds": self.run_on.statement_seconds,
            "budget": self.run_on.budget,
            "hard_stop": self.run_on.hard_stop,
            "free": sorted(self.run_on.defining_lines),
            # stopped (or not run) by the first import: not run again by a restart's
            "skip": sorted(s.line for s in self.skipped_statements if s.stopped),
        }
        return {
            "resume": True,
            "guard": guard if self.statement_by_statement else None,
            "max_skipped": MAX_SKIPPED,
        }

    @property
    def isolated(self) -> bool:
        """Whether the worker ran isolated (as of its last start; a restart keeps the answer)."""
        return self._isolated

    @property
    def warning(self) -> str | None:
        return self._warning

    def remaining(self) -> float:
        return self.limits.submission_seconds - (time.monotonic() - self.started_at)

    def close(self) -> None:
        launch, self._launch = self._launch, None
        if launch is not None:  # launched and never waited for
            launch.cancel()
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self._send({"op": "bye"})
            self._collect_output()
            self.proc.kill()
            self.proc = None

    def output(self) -> str:
        """Everything the student's code printed (truncated), across restarts."""
        current = self.proc.output() if self.proc is not None else ""
        return "".join(self._output_parts) + current

    def _collect_output(self) -> None:
        """Keep what the current worker printed before it is stopped."""
        if self.proc is not None:
            text = self.proc.output()
            if text:
                self._output_parts.append(text)

    # ------------------------------------------------------------------ protocol

    def _send(self, header: dict, blobs: list[bytes] | None = None) -> None:
        """Send a request with a fresh random id; its reply must echo it (a frame the submission
        forged on the channel cannot know it, and is refused)."""
        assert self.proc is not None
        self._expect.append(secrets.token_hex(8))
        wire.write_message(self.proc.stdin, {**header, "id": self._expect[-1]}, blobs or [])

    def _receive(self, timeout: float) -> tuple[dict, list[bytes]]:
        """The worker's next message. Its bytes are read as they come, as many as are there
        (up to READ_AHEAD beyond the part asked for), and kept in the worker's inbox: a reply's
        length fields, header and arrays then cost one wait, not one each."""
        assert self.proc is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        if self._inbox_of is not self.proc:  # a new worker: nothing of the old one's is read
            self._inbox_of, self._inbox = self.proc, bytearray()
        inbox = self._inbox

        def read_exact(n: int) -> bytes:
            while len(inbox) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _Timeout
                ready, _, _ = select.select([fd], [], [], left)
                if not ready:
                    raise _Timeout
                chunk = os.read(fd, min(max(n - len(inbox), READ_AHEAD), 1 << 20))
                if not chunk:
                    raise EOFError
                inbox.extend(chunk)
            part = bytes(inbox[:n])
            del inbox[:n]
            return part

        header, blobs = wire.read_message(read_exact)
        if not isinstance(header, dict):
            raise wire.WireError("a reply that is not an object")
        if not self._expect or header.get("id") != self._expect.pop(0):
            raise wire.WireError("a reply to no request of the grader's")
        return header, blobs

    def _ensure_ready(self, restarting: bool = False) -> Failure | None:
        """Wait for the preload, then for the import of the student's module (both asked for by
        `start`, once per worker)."""
        timeout = max(1.0, min(self.remaining(), 60.0 + self.limits.call_seconds))
        try:
            self._receive(timeout)  # the hello reply: preloads done
            reply, _ = self._receive(max(0.5, min(self.remaining(), self.limits.call_seconds)))
        except _Timeout:
            if self.run_on is not None and not restarting and not self.statement_by_statement:
                # once more, one statement at a time, each that runs code limited (`RunOn`)
                self.statement_by_statement = True
                if self.proc is not None:
                    self._collect_output()
                    self.proc.kill(reason="the import ran out of time: once more, by statements")
                    self.proc = None
                self.launch()
                self.wait_started()
                return self._ensure_ready()
            self._kill_for(
                "import-timeout",
                f"stopped after {self.limits.call_seconds:g} s while importing `{self.module}.py`",
            )
            return self._set_import_failure(
                Failure(
                    "timeout",
                    cause="import-timeout",
                    module=self.module,
                    seconds=self.limits.call_seconds,
                    after_calls=restarting,
                ),
                "import-timeout",
            )
        except wire.WireError as exc:
            self._kill_for(
                "unreadable",
                f"the submission's process sent unreadable data while importing `{self.module}.py`",
            )
            failure = _protocol_failure(None, self.module, exc)
            failure.after_calls = restarting
            return self._set_import_failure(failure, "unreadable")
        except (EOFError, OSError):
            return self._set_import_failure(
                Failure(
                    "crashed",
                    cause="import-ended",
                    module=self.module,
                    detail=self._exit_words(),
                    after_calls=restarting,
                ),
                "import-ended",
            )
        self.tampered = self.tampered or reply.get("tampered") is True
        if not reply.get("ok"):
            err = reply.get("error") or {}
            failure = describe_error(err, None)
            return self._set_import_failure(
                Failure(
                    "import",
                    cause="import-raised",
                    module=self.module,
                    inner=failure,
                    exception=failure.exception,
                    exception_type=failure.exception_type,
                    builtin=failure.builtin,
                    spot=failure.spot,
                    after_calls=restarting,
                ),
                "import-failed",
            )
        if not restarting:
            self.import_tripped, self.import_shortcuts = _shortcuts_of(reply)
            self.missing_libraries = _names_of(reply.get("missing"))
            self.skipped_statements = _skipped_of(reply.get("skipped"))
        self._threads = (_threads_of(reply), _threads_of(reply))
        return None

    def _told(self, failure: Failure) -> Failure:
        """The failure with its words (the caller's, from its facts)."""
        failure.message = self.words(failure)
        return failure

    def _set_import_failure(self, failure: Failure, kind: EventKind) -> Failure:
        self.import_failure = failure = self._told(failure)
        self.events.append(Event(kind, self.module, failure.message))
        return failure

    def _kill_for(self, kind: EventKind, reason: str, subject: str | None = None) -> None:
        if self.proc is not None:
            self._collect_output()
            self.proc.kill(reason=reason)
            self.events.append(Event(kind, subject or self.module, reason))
            self.proc = None

    def _exit_words(self) -> str:
        if self.proc is None:
            return "it was stopped"
        self.proc.wait(timeout=2.0)
        return self.proc.exit_description()

    def prepare(self) -> Failure | None:
        """Start (if needed) and import the module; the failure, if any, applies to every call."""
        if self.import_failure is not None:
            return self.import_failure
        if self._ready and self.proc is not None:
            return None
        if self.proc is None:
            if self._launch is None:
                self.launch()
            self.wait_started()
        failure = self._ensure_ready()
        self._ready = failure is None
        return failure

    # ------------------------------------------------------------------ calls

    def call(
        self,
        function: str,
        args: tuple,
        kwargs: dict,
        *,
        torch_inputs: bool = False,
        banned: tuple[str, ...] = (),
        replace: Mapping[str, Callable[..., Any]] | None = None,
        check: bool = True,
        meanwhile: Callable[[], None] | None = None,
    ) -> CallOutcome:
        """Run `function(*args, **kwargs)` in the worker; `banned`: the library entry points this
        question forbids (patterns as in the assignment), refused while the call runs;
        `replace`: the submission's functions answered, for this call only, by the caller's
        trusted ones (`_reply_answering`). `check=False`: the caller reads `tampered` only after
        a later call with `check=True` (its question's last), so a call that raises nothing and
        trips nothing skips the worker's read of its mappings (about 1 ms); that later call's
        reply reports whatever was loaded around the import hook since the last read.
        `meanwhile`: the caller's own work for this call, run here once the request is sent and
        before its reply is read, so both sides compute at once (it must not raise)."""
        failure = self.prepare()
        if failure is not None:
            return CallOutcome(failure=failure)
        budget = self.remaining()
        if budget <= 0:
            return CallOutcome(
                failure=self._told(
                    Failure("budget", cause="budget", seconds=self.limits.submission_seconds)
                )
            )
        blobs: list[bytes] = []
        header = {
            "op": "call",
            "function": function,
            "args": to_wire(tuple(args), blobs),
            "kwargs": to_wire(dict(kwargs), blobs),
            "torch": torch_inputs,
            "banned": list(banned),
        }
        if replace:
            header["replace"] = sorted(replace)
        if not check:
            header["check"] = False
        timeout = min(self.limits.call_seconds, budget)
        try:
            self._send(header, blobs)
            if meanwhile is not None:
                meanwhile()
            # counted from here: however long the caller's own work took, the call gets its
            # whole limit to answer (a reply already waiting is never a timeout)
            deadline = time.monotonic() + timeout
            reply, out_blobs = self._reply_answering(deadline, replace or {})
        except _Timeout:
            reason = f"stopped after {timeout:g} s"
            self._kill_for("call-timeout", f"`{function}` {reason}", function)
            self._maybe_restart()
            return CallOutcome(
                failure=self._told(
                    Failure("timeout", cause="call-timeout", function=function, seconds=timeout)
                )
            )
        except wire.WireError as exc:
            self._kill_for(
                "unreadable",
                f"the submission's process sent unreadable data during `{function}`",
                function,
            )
            self._maybe_restart()
            return CallOutcome(failure=self._told(_protocol_failure(function, self.module, exc)))
        except (EOFError, OSError):
            words = self._exit_words()
            self._kill_for(
                "call-ended",
                f"the submission's process ended during `{function}` ({words})",
                function,
            )
            self._maybe_restart()
            return CallOutcome(
                failure=self._told(
                    Failure("crashed", cause="call-ended", function=function, detail=words)
                )
            )
        self.tampered = self.tampered or reply.get("tampered") is True
        self._threads = (self._threads[0], _threads_of(reply))
        tripped, shortcuts = _shortcuts_of(reply)
        if not reply.get("ok"):
            return CallOutcome(
                failure=self._told(describe_error(reply.get("error") or {}, function, self.limits)),
                tripped=tripped,
                shortcuts=shortcuts,
            )
        try:
            value = wire.decode(reply.get("value"), out_blobs)
        except (wire.WireError, ValueError, TypeError) as exc:
            return CallOutcome(
                failure=self._told(
                    Failure(
                        "bad-output", cause="unreadable-value", function=function, detail=str(exc)
                    )
                ),
                tripped=tripped,
                shortcuts=shortcuts,
            )
        return CallOutcome(value=value, tripped=tripped, shortcuts=shortcuts)

    def _reply_answering(
        self, deadline: float, replace: Mapping[str, Callable[..., Any]]
    ) -> tuple[dict, list[bytes]]:
        """The call's reply, by `deadline` (monotonic); on the way, each callback the worker makes
        to a function this call replaced is answered with the trusted one's value. A callback to any
        other name, past MAX_CALLBACKS or in a call that replaced nothing is the submission
        writing to the channel (WireError): the grader answers nothing it did not replace."""
        answered = 0
        while True:
            header, blobs = self._receive(max(0.0, deadline - time.monotonic()))
            if "callback" not in header:
                return header, blobs
            name = header["callback"]
            if not isinstance(name, str) or name not in replace or answered >= MAX_CALLBACKS:
                raise wire.WireError("a call back to a function the grader did not replace")
            answered += 1
            try:
                args = wire.decode(header.get("args"), blobs)
                kwargs = wire.decode(header.get("kwargs"), blobs)
            except (ValueError, TypeError) as exc:
                raise wire.WireError(f"an unreadable call back: {exc}") from exc
            if not isinstance(args, tuple) or not (
                isinstance(kwargs, dict) and all(isinstance(k, str) for k in kwargs)
            ):
                raise wire.WireError("a call back whose arguments are not a tuple and a dict")
            self._expect.insert(0, header["id"])  # the call's own reply is still to come
            out: list[bytes] = []
            try:
                answer = {"ok": True, "value": to_wire(replace[name](*args, **kwargs), out)}
            except Exception:  # noqa: BLE001 - the trusted function refused these arguments
                answer, out = {"ok": False}, []
            assert self.proc is not None
            wire.write_message(self.proc.stdin, {**answer, "id": header["id"]}, out)

    def kill_strays(self, after: str) -> None:
        """Stop processes the student's code left running (between questions), keeping the worker;
        threads it left running in the worker (they hold memory, threads and time the next
        questions need) cost the worker instead: a fresh one re-imports the module."""
        if self.proc is not None and self._ready:
            n = self.proc.kill_strays()
            if n:
                self.events.append(
                    Event(
                        "strays",
                        after,
                        f"stopped {n} process{'es' if n > 1 else ''} left running by `{after}`",
                    )
                )
            at_import, now = self._threads
            # (never at the cost of the questions after it: with no restart left, it stays)
            if now > at_import and self._threads_restartable():
                self._kill_for(
                    "threads",
                    f"restarted the submission's process: `{after}` left {now - at_import} "
                    "thread(s) running",
                    after,
                )
                self._maybe_restart()

    def _threads_restartable(self) -> bool:
        return self.thread_restarts < MAX_THREAD_RESTARTS and self.remaining() > 1.0

    def _maybe_restart(self) -> None:
        """A fresh worker after the old one was stopped (by _kill_for) or ended. One that had
        threads of the submission's running (as of its last reply) is replaced on the threads'
        budget: what ended it (a stop between questions, or a crash under the memory they
        held) is theirs, and never costs the restarts later crashes and timeouts need."""
        at_import, now = self._threads
        if now > at_import and self._threads_restartable():
            self.thread_restarts += 1
        elif self.restarts >= MAX_RESTARTS or self.remaining() <= 1.0:
            self.import_failure = self._told(Failure("crashed", cause="restarts-spent"))
            return
        else:
            self.restarts += 1
        # A fresh worker re-imports the module.
        self.start()
        self._ready = self._ensure_ready(restarting=True) is None
