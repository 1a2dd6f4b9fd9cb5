"""The misconception catalog: every mistake the grader can name, in the notes' words.

Each assignment's entries live in their own module (`a1.py` ... `a6.py`); ids shared by
several assignments live in `common.py`. The mutants that reproduce a mistake live with
the questions (grader/suites), derived from `reference/`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Misconception:
    id: str  # stable id, as in the contract ("softmax-wrong-axis")
    title: str  # one line: "softmax over the wrong axis"
    explanation: str  # what the student's answer shows, in the notes' vocabulary (markdown)
    section: str  # where to read: "notes §5, 'Which axis sums to one'"
    credit: float = 0.0  # share of a case's points kept when this is the diagnosis
    convention: bool = False  # a convention the notes use elsewhere: a kind message, partial credit


_CATALOG: dict[str, Misconception] = {}
_LOADED: list[bool] = []


def register(*entries: Misconception) -> None:
    for m in entries:
        if m.id in _CATALOG and _CATALOG[m.id] != m:
            raise ValueError(f"misconception {m.id!r} registered twice with different texts")
        _CATALOG[m.id] = m


def _load() -> None:
    if _LOADED:
        return
    _LOADED.append(True)
    import importlib

    for name in ("common", "a1", "a2", "a3", "a4", "a5", "a6"):
        try:
            importlib.import_module(f"grader.catalog.{name}")
        except ModuleNotFoundError as err:  # an assignment's entries may not exist yet
            if err.name != f"grader.catalog.{name}":
                raise


def get(mid: str) -> Misconception:
    _load()
    try:
        return _CATALOG[mid]
    except KeyError:
        raise KeyError(f"unknown misconception id {mid!r}") from None


def all_ids() -> list[str]:
    _load()
    return sorted(_CATALOG)


def note(mid: str) -> str:
    """The diagnosis paragraph shown under a question's feedback, the one text for every question."""
    m = get(mid)
    kind = "A convention the notes use elsewhere" if m.convention else "Diagnosis"
    return f"**{kind} — {m.title}** (`{m.id}`): {m.explanation} *Read: {m.section}.*"
