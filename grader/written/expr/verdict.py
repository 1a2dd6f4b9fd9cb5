"""The outcome of one expression check, as it crosses the judge's process boundary."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class Verdict:
    """The outcome of one expression check."""

    equivalent: bool
    """True only when proven equal or equal at every sample point."""
    error: str | None = None
    """Why the answer could not be checked (for the student)."""
    interpreted: str | None = None
    """How the answer was read, every product explicit."""
    method: Literal["symbolic", "numeric"] | None = None
    """How the verdict was reached."""
    canonical: str | None = None
    """sympy's form of the answer, for class statistics."""
    note: str | None = None
    """A warning about ambiguous writing ("1/2d")."""
    internal: bool = False
    """The error is the grader's (a bad expected expression, a crash)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        method = data.get("method")
        return cls(
            equivalent=data.get("equivalent") is True,
            error=_str_or_none(data.get("error")),
            interpreted=_str_or_none(data.get("interpreted")),
            method=method if method in ("symbolic", "numeric") else None,
            canonical=_str_or_none(data.get("canonical")),
            note=_str_or_none(data.get("note")),
            internal=data.get("internal") is True,
        )


def _str_or_none(x: Any) -> str | None:
    return x if isinstance(x, str) else None
