"""The hard-kill runner for expression checks: parsing and evaluation run in a worker process.

Most checks need only the parser and mpmath (grader.written.expr.numeric); sympy is imported in
the worker only for the rare check the numeric test cannot decide. sympy can take minutes
(or all memory) on a hostile or just unlucky input, and a signal cannot interrupt a long
C-level big-integer product. So every check runs in a separate process that the parent
kills when its wall-clock limit passes. One worker serves many checks (`ExprChecker` is a
context manager), and it is started lazily: importing this module does not import sympy
(nor does starting the worker), and a submission without expression answers never starts
a worker.

Protocol: JSON lines over the worker's stdin/stdout, plain data both ways. Requests are
`{"answer": str, "expected": str, "symbols": [str] | null}` (with `"mode": "step"`, one step
of a derivation against the step before, `expected` null to only read it:
grader.written.expr.steps); replies are a Verdict as a JSON object. The first line from a new
worker is `{"ready": true}`. A request may carry `"forget": true`: the worker first empties the
memo of what earlier checks read and computed (a new submission's checks begin).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.written.expr.verdict import Verdict

if TYPE_CHECKING:
    from grader.written.expr.memo import Memo

DEFAULT_TIMEOUT = 2.0  # seconds per check
STARTUP_TIMEOUT = 60.0  # seconds for the worker to start and warm up (shared machines)
MEMORY_LIMIT = 2 << 30  # bytes of address space for the worker


def _timeout_text(seconds: float) -> str:
    return f"took too long to check (over {seconds:g} s)"


class ExprChecker:
    """A reusable worker process for expression checks, each under a hard time limit.

    Not for concurrent use from several threads (a lock serialises calls).
    """

    def __init__(self, timeout: float = DEFAULT_TIMEOUT, startup_timeout: float = STARTUP_TIMEOUT):
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.restarts = 0  # workers killed after a timeout or a crash
        self._proc: subprocess.Popen[bytes] | None = None
        self._ready = False
        self._symbolic = False  # the worker has imported sympy (derivative steps need it)
        self._forget = False  # the next request tells the worker to empty its memo
        self._buffer = b""
        self._lock = threading.Lock()
        self._finalizer: weakref.finalize | None = None

    def __enter__(self) -> ExprChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def started(self) -> bool:
        return self._proc is not None

    # -- process management

    def prestart(self) -> None:
        """Launch the worker now without waiting, so its start-up overlaps other work."""
        with self._lock:
            if self._proc is None:
                self._spawn()

    def _start(self) -> None:
        if self._proc is None:
            self._spawn()
        if not self._ready:
            reply = self._read(time.monotonic() + self.startup_timeout)
            if reply is None or reply.get("ready") is not True:
                self._kill()
                raise RuntimeError(
                    "the expression checker did not start (are sympy and mpmath installed?)"
                )
            self._ready = True

    def _spawn(self) -> None:
        # Isolated from the caller: no user site (`-s`), an environment of our own making (no
        # PYTHONPATH or other PYTHON* variable of the caller's; a fixed hash seed, so that
        # sympy's fallback is deterministic, which `-I` would drop), and a private empty working
        # directory as sys.path[0], so that a submission folder holding `mpmath.py` or `sympy.py`
        # cannot stand in for the libraries when grading runs from inside it. The folder is
        # removed as soon as the worker stands in it (Popen returns after the exec): imports
        # skip a working directory that no longer exists, and nothing is left in the temporary
        # folder however this process ends (a batch's pool process ends without exit handlers).
        root = str(Path(__file__).resolve().parents[3])
        code = (
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "from grader.written.expr.checker import _worker_main; _worker_main()"
        )
        cwd = tempfile.mkdtemp(prefix="seqgrade-checker-")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-s", "-c", code, root],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=None if os.environ.get("SEQGRADE_JUDGE_STDERR") else subprocess.DEVNULL,
                env=_checker_env(),
                cwd=cwd,
                close_fds=True,
            )
        finally:
            os.rmdir(cwd)
        self._buffer = b""
        self._ready = False
        self._symbolic = False
        self._finalizer = weakref.finalize(self, _kill, self._proc)

    def _kill(self) -> None:
        if self._proc is not None:
            _kill(self._proc)
            if self._finalizer is not None:
                self._finalizer.detach()
        self._proc = None
        self._buffer = b""
        self._ready = False

    def forget(self) -> None:
        """A new submission's checks begin: the worker forgets what the checks before computed
        (grader.written.expr.memo), so one student's work never speeds up another's grade."""
        self._forget = True

    def close(self) -> None:
        """Stop the worker (a later check starts a new one); it holds no state worth a clean exit."""
        with self._lock:
            self._kill()

    def _read(self, deadline: float) -> dict[str, Any] | None:
        """One JSON line from the worker before `deadline`; None on timeout or EOF."""
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            chunk = _chunk_before(fd, deadline)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            return None
        return data if isinstance(data, dict) else None

    # -- checks

    def request(
        self, payload: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any] | None:
        """Send one request; the reply, or None after a timeout or a crash (worker killed)."""
        limit = self.timeout if timeout is None else timeout
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._kill()
                self._start()
            elif not self._ready:
                self._start()
            assert self._proc is not None and self._proc.stdin is not None
            if self._forget:
                payload = {**payload, "forget": True}
            try:
                self._proc.stdin.write(json.dumps(payload).encode() + b"\n")
                self._proc.stdin.flush()
            except (BrokenPipeError, OSError):
                self._kill()
                self.restarts += 1
                return None
            self._forget = False  # sent (a worker started since has nothing to forget)
            reply = self._read(time.monotonic() + limit)
            if reply is None:
                self._kill()
                self.restarts += 1
            return reply

    def check(
        self,
        answer: str,
        expected: str,
        symbols: Sequence[str] | None = None,
        timeout: float | None = None,
    ) -> Verdict:
        """Is `answer` equivalent to `expected`? Never raises for a bad answer."""
        limit = self.timeout if timeout is None else timeout
        if not isinstance(answer, str):
            return Verdict(False, f"expected the expression as text, got {type(answer).__name__}")
        return self._verdict({"answer": answer, "expected": expected}, symbols, limit)

    def check_step(
        self,
        step: str,
        previous: str | None,
        symbols: Sequence[str] | None = None,
        timeout: float | None = None,
    ) -> Verdict:
        """Does derivation step `step` follow from `previous` (None: can it be read)?

        Errors, the previous step's included, are the student's (never `internal`)."""
        limit = self.timeout if timeout is None else timeout
        if not self._symbolic and _needs_sympy(step, previous, symbols):
            # importing sympy takes seconds on a loaded machine: outside any step's limit
            reply = self.request({"mode": "warm"}, self.startup_timeout)
            self._symbolic = reply is not None and reply.get("ready") is True
        return self._verdict({"mode": "step", "answer": step, "expected": previous}, symbols, limit)

    def _verdict(
        self, payload: dict[str, Any], symbols: Sequence[str] | None, limit: float
    ) -> Verdict:
        """The worker's verdict on one request (the symbols declared), or the limit's words."""
        symbols_ = None if symbols is None else [str(s) for s in symbols]
        try:
            reply = self.request({**payload, "symbols": symbols_}, limit)
        except RuntimeError as err:
            return Verdict(False, str(err), internal=True)
        if reply is None:
            return Verdict(False, _timeout_text(limit))
        return Verdict.from_json(reply)


def _needs_sympy(step: str, previous: str | None, symbols: Sequence[str] | None) -> bool:
    """Whether a step asks for a derivative that only sympy takes: of a function without a rule
    in grader.written.expr.derivative (`WITHOUT_RULES`: abs, max, min), named in the step or in
    a definition it may use. The worker then imports sympy first, outside the step's limit."""
    from grader.written.expr.derivative import WITHOUT_RULES
    from grader.written.expr.steps import has_operator

    texts = [step] if previous is None else [step, previous]
    if not any(has_operator(t) for t in texts):
        return False
    named = r"\b(?:" + "|".join(sorted(WITHOUT_RULES)) + r")\b"
    return any(re.search(named, t) for t in [*texts, *(symbols or ())])


def _checker_env() -> dict[str, str]:
    """The worker's whole environment: nothing of the caller's beyond PATH (and a fixed hash seed)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
    }


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5.0)
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


def check_equivalent(
    answer: str,
    expected: str,
    symbols: Sequence[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Verdict:
    """One-off check in a fresh worker; `symbols=None` means the free symbols of `expected`."""
    with ExprChecker(timeout=timeout) as checker:
        return checker.check(answer, expected, symbols)


# ----------------------------------------------------------------------- worker


def _answer(request: dict[str, Any], memo: Memo | None = None) -> dict[str, Any]:
    from grader.written.expr.equivalence import equivalent

    answer, expected, symbols = (
        request.get("answer"),
        request.get("expected"),
        request.get("symbols"),
    )
    if request.get("mode") == "step":
        return _step(answer, expected, symbols, memo)
    if request.get("mode") == "warm":
        import sympy  # noqa: F401 - loaded once, before the derivative steps that need it

        return {"ready": True}
    if not isinstance(answer, str) or not isinstance(expected, str):
        return Verdict(False, "bad request", internal=True).to_json()
    # a ValueError: the expected expression itself is wrong, the grader's fault
    return _verdict_json("answer", lambda: equivalent(answer, expected, symbols, memo), ValueError)


def _step(answer: Any, previous: Any, symbols: Any, memo: Memo | None) -> dict[str, Any]:
    from grader.written.expr.steps import check_step

    if not isinstance(answer, str) or not (previous is None or isinstance(previous, str)):
        return Verdict(False, "bad request", internal=True).to_json()
    return _verdict_json("step", lambda: check_step(answer, previous, symbols, memo))


def _verdict_json(
    what: str,
    check: Callable[[], Verdict],
    internal: type[Exception] | tuple[type[Exception], ...] = (),
) -> dict[str, Any]:
    """`check()`'s verdict as JSON; an `internal` error as the grader's own failure, whatever
    else the check raises in the student's words (`what`: "answer" or "step")."""
    try:
        return check().to_json()
    except internal as err:
        return Verdict(False, str(err), internal=True).to_json()
    except MemoryError:
        return Verdict(False, f"the {what} is too large to check").to_json()
    except RecursionError:
        return Verdict(False, f"the {what} is nested too deeply to check").to_json()
    except Exception as err:  # noqa: BLE001 - the worker must survive whatever sympy raises
        return Verdict(
            False, f"could not check this {what} (the checker failed: {type(err).__name__})"
        ).to_json()


def _chunk_before(fd: int, deadline: float) -> bytes:
    """What the worker wrote next, read before `deadline`; b"" after the deadline or at its end."""
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([fd], [], [], left)[0]:
        return b""
    return os.read(fd, 1 << 16)


def _reply(request: Any, memo: Memo) -> dict[str, Any]:
    """The worker's reply to one decoded request line; `"forget": true` empties `memo` first."""
    if not isinstance(request, dict):
        return Verdict(False, "bad request").to_json()
    if request.get("forget"):
        memo.clear()
    return _answer(request, memo)


def _worker_main() -> None:
    """The worker loop: one JSON request per line on stdin, one JSON reply per line on stdout."""
    protocol = sys.stdout
    sys.stdout = sys.stderr  # stray prints must not corrupt the protocol
    try:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(MEMORY_LIMIT, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    except (ImportError, ValueError, OSError):
        pass
    # warm up the fast path (parser, mpmath), outside any check's time limit; sympy is
    # not imported here: only a check the numeric test cannot decide loads it
    _answer(
        {"answer": "2 x^2 + tanh(x)", "expected": "x(2x) + 1 - 2/(exp(2x)+1)", "symbols": ["x"]}
    )
    protocol.write(json.dumps({"ready": True}) + "\n")
    protocol.flush()
    from grader.written.expr.memo import Memo

    memo = Memo()  # what this submission's checks computed (emptied at the next one's first)
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            request = {}
        reply = _reply(request, memo)
        protocol.write(json.dumps(reply) + "\n")
        protocol.flush()
