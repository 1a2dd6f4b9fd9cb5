"""What one submission's expression checks computed, kept for its next checks.

A derivation compares each step with the one before, and its last step with the expected
answer and with the known mistakes: the same text is read, the same derivative taken and the
same program evaluated at the same sample points several times. Each is a function of its
inputs only, so a remembered result is the one a new computation would give. The checker's
worker keeps one memo and empties it when a new submission's checks begin
(`ExprChecker.forget`): one student's work never speeds up another's grade, and the memory
stays small. A computation that raises is not remembered.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

SIZE = 256  # results kept, the most recently used


class Memo:
    """A bounded store of results by key: the least recently used one leaves first."""

    def __init__(self, size: int = SIZE):
        self.size = size
        self._kept: OrderedDict[Hashable, Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._kept)

    def clear(self) -> None:
        self._kept.clear()

    def of_text(
        self, kind: str, text: str, symbols: Sequence[str] | None, compute: Callable[[], T]
    ) -> T:
        """`get` for what is computed from a text and the declared symbols (a reading, a
        derivative): one key for the same text and symbols, however the list was passed."""
        return self.get((kind, text, None if symbols is None else tuple(symbols)), compute)

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The result remembered under `key`, or `compute()`'s, remembered."""
        if key in self._kept:
            self._kept.move_to_end(key)
            return self._kept[key]
        value = compute()
        self._kept[key] = value
        if len(self._kept) > self.size:
            self._kept.popitem(last=False)
        return value
