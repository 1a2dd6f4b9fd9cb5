"""Running the trusted side: the reference and the mutants on a case, with plain outputs.

Within a grading (`remembering`), each function's output on each inputs is computed once: the
diagnosis runs every mutant of a question on a wrong case, then some of them again on the same
case (does the mistake show there? two at once? on top of a carried one?), and a batch's pool
process meets the same visible cases in every submission. The functions are pure (fresh copies
of the arguments, a new generator from each `Rng`), so a kept output is the output.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import struct
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Any, TypeVar

import numpy as np

from grader.mutants import AnyOf, NonFinite
from grader.questions import Case, Rng, TableLM

T = TypeVar("T")


def _inside(value: Any, f: Callable[[Any], Any]) -> Any:
    """`f` applied to each entry of a tuple, a list or a dict's values (other values as they are)."""
    if isinstance(value, tuple):
        return tuple(f(v) for v in value)
    if isinstance(value, list):
        return [f(v) for v in value]
    if isinstance(value, dict):
        return {k: f(v) for k, v in value.items()}
    return value


def materialize(value: Any) -> Any:
    """A case argument as the trusted reference sees it (special arguments built for real, every
    array a fresh copy, so that a function writing into its inputs spoils no other run)."""
    if isinstance(value, Rng):
        return np.random.default_rng(value.seed)
    if isinstance(value, TableLM):
        return value  # immutable, and callable as next_log_probs(prefix)
    if isinstance(value, np.ndarray):
        return value.copy()
    return _inside(value, materialize)


def plain(value: Any) -> Any:
    """A trusted output as plain data: torch tensors to numpy, numpy scalars to Python."""
    if isinstance(value, AnyOf):
        return AnyOf(*(plain(o) for o in value.options))
    if isinstance(value, np.generic):
        return value.item()
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        return value.detach().cpu().numpy().copy()
    return _inside(value, plain)


def run_trusted(fn: Callable[..., Any], case: Case) -> Any:
    """The trusted function on a case (always NumPy, even where the student gets torch tensors)."""
    return _run(fn, case.args, dict(case.kwargs))


def computed(fn: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any]) -> Any:
    """`fn` on fresh copies of the arguments, its output plain (computed now, never kept)."""
    return plain(fn(*materialize(args), **materialize(kwargs)))


def _run(fn: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any]) -> Any:
    """`computed`, kept while `remembering`."""
    runs = _REMEMBERING.get()
    if runs is None:
        return computed(fn, args, kwargs)
    return runs.run(fn, args, kwargs)


# What one TrustedRuns keeps at most: a4's outputs are a few kilobytes, a batch's pool process
# meets a few thousand (function, case) pairs per assignment.
KEPT_BYTES = 64 * 2**20
KEPT_ONE_BYTES = 2**20  # a larger output is computed again each time


class TrustedRuns:
    """Trusted outputs by function and inputs, the least recently used dropped past
    `kept_bytes`. Each caller gets its own copy of a kept output (a caller may write into it).

    Inputs are told apart by content (type, dtype, shape and bytes of every part, an `Rng`'s
    seed, a `TableLM`'s table); inputs holding anything else (an object array, a generator)
    are never kept. A function is told apart by identity, and kept alive while its outputs are.
    """

    def __init__(self, kept_bytes: int = KEPT_BYTES) -> None:
        self._kept: OrderedDict[tuple[Callable[..., Any], bytes], tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._limit = kept_bytes
        self.hits = 0
        """Outputs given again instead of computed (what the tests look at)."""
        self._last: tuple[tuple, dict[str, Any], bytes | None] | None = None
        self._made: dict[tuple[int, Hashable], tuple[object, Any]] = {}

    def made_once(self, source: object, tag: Hashable, make: Callable[[], T]) -> T:
        """`make()`, called once per `source` and `tag` for as long as these runs are kept.

        For functions built from other functions (a question's mistakes combined two or three
        at once): built again, they would be new functions, and none of their outputs would be
        found here. `source` is kept alive with what was made from it.
        """
        key = (id(source), tag)
        kept = self._made.get(key)
        if kept is None or kept[0] is not source:
            kept = self._made[key] = (source, make())
        return kept[1]

    def run(self, fn: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any]) -> Any:
        """`fn` on fresh copies of the arguments, its output plain: kept, or computed now."""
        inputs = self._inputs_key(args, kwargs)
        if inputs is None:
            return computed(fn, args, kwargs)
        key = (fn, inputs)
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
            self.hits += 1
            return _copy(kept[0])
        out = computed(fn, args, kwargs)
        size = _size(out)
        if size is not None and size <= min(KEPT_ONE_BYTES, self._limit):
            self._kept[key] = (_copy(out), size)
            self._bytes += size
            while self._bytes > self._limit:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._bytes -= dropped
        return out

    def _inputs_key(self, args: tuple, kwargs: Mapping[str, Any]) -> bytes | None:
        """`inputs_key`, computed once for the same argument objects in a row (the diagnosis
        runs every mutant of a question on one case's arguments; nothing writes into them: each
        run gets copies)."""
        last = self._last
        if (
            last is not None
            and len(args) == len(last[0])
            and all(a is b for a, b in zip(args, last[0]))
            and kwargs.keys() == last[1].keys()
            and all(kwargs[k] is v for k, v in last[1].items())
        ):
            return last[2]
        key = inputs_key(args, kwargs)
        self._last = (tuple(args), dict(kwargs), key)
        return key


_REMEMBERING: contextvars.ContextVar[TrustedRuns | None] = contextvars.ContextVar(
    "trusted_runs", default=None
)


def kept_runs() -> TrustedRuns | None:
    """The `TrustedRuns` of the enclosing `remembering` block, if any."""
    return _REMEMBERING.get()


@contextlib.contextmanager
def remembering(runs: TrustedRuns) -> Iterator[TrustedRuns]:
    """Within the block, this thread's trusted runs keep and reuse their outputs in `runs`."""
    token = _REMEMBERING.set(runs)
    try:
        yield runs
    finally:
        _REMEMBERING.reset(token)


def inputs_key(args: tuple, kwargs: Mapping[str, Any]) -> bytes | None:
    """A digest of the arguments' content, None when they hold something not told apart by it."""
    h = hashlib.blake2b(digest_size=20)
    if not (_feed(h, tuple(args)) and _feed(h, dict(kwargs))):
        return None
    return h.digest()


def _feed(h: Any, value: Any) -> bool:
    """Write `value`'s type and content into `h`; False for a value content does not describe."""
    kind = type(value)
    if kind is np.ndarray:
        if value.dtype.hasobject:
            return False
        h.update(b"a%s%r" % (value.dtype.str.encode(), value.shape))
        h.update(np.ascontiguousarray(value).tobytes())
        return True
    if kind in (bool, int, str, type(None)):
        h.update(b"%s:%s;" % (kind.__name__.encode(), repr(value).encode()))
        return True
    if kind is float:
        h.update(b"f" + struct.pack("<d", value))
        return True
    if isinstance(value, np.generic) and not isinstance(value, np.object_):
        h.update(b"g%s" % value.dtype.str.encode() + value.tobytes())
        return True
    if kind in (tuple, list):
        h.update(b"%s%d(" % (kind.__name__.encode(), len(value)))
        return all(_feed(h, v) for v in value)
    if kind is dict:
        h.update(b"d%d(" % len(value))
        return all(_feed(h, k) and _feed(h, v) for k, v in value.items())
    if kind is Rng:
        h.update(b"rng%d;" % value.seed)
        return True
    if kind is TableLM:
        h.update(b"lm(")
        return _feed(h, list(value.table.items())) and _feed(h, value.default)
    return False


def _size(value: Any) -> int | None:
    """About the bytes an output holds; None for an output that is not plain data."""
    if isinstance(value, np.ndarray):
        return None if value.dtype.hasobject else value.nbytes + 112
    if isinstance(value, (bool, int, float, complex, str, bytes, np.generic, NonFinite)) or (
        value is None
    ):
        return 64
    if isinstance(value, AnyOf):
        parts = [_size(o) for o in value.options]
    elif isinstance(value, (tuple, list)):
        parts = [_size(v) for v in value]
    elif isinstance(value, dict):
        parts = [_size(v) for v in value.values()]
    else:
        return None
    return None if None in parts else 64 + sum(p for p in parts if p is not None)


def _copy(value: Any) -> Any:
    """A copy of a plain output no caller shares (arrays copied, containers rebuilt)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, AnyOf):
        return AnyOf(*(_copy(o) for o in value.options))
    return _inside(value, _copy)


def all_nan(value: Any) -> Any:
    """The same structure with every number NaN."""
    if isinstance(value, dict):
        return {k: all_nan(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(all_nan(v) for v in value)
    if isinstance(value, np.ndarray):
        return np.full(value.shape, np.nan)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float("nan")
    return value


def trusted_mutants(mutants: Mapping[Any, Callable[..., Any]]) -> dict[Any, Callable[..., Any]]:
    """Mutants called on freshly built arguments (new arrays, a new rng) with plain outputs."""

    def bind(f: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *a, **k: _run(f, a, k)

    return {mid: bind(f) for mid, f in mutants.items()}
