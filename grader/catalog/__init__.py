"""The misconception catalog: every mistake the grader can name, in the notes' words.

Each assignment's entries live in their own module (`a1.py` ... `a7.py`); ids shared by
several assignments live in `common.py`. The mutants that reproduce a mistake live with
the questions (grader/suites), derived from `reference/`.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Form:
    """The wording of a mistake where it shows differently: in one question's function, or when
    some outputs are right (the text then says so instead of calling them wrong)."""

    explanation: str
    """Replaces the entry's explanation there."""
    function: str | None = None
    """The graded function this wording is for ("padding_mask"); None: any."""
    right: tuple[str, ...] = ()
    """Outputs the student got right for this wording to apply ("loss",)."""


@dataclass(frozen=True)
class Misconception:
    id: str
    """Stable id, as the handouts and results.json use it ("softmax-wrong-axis")."""
    title: str
    """One line: "softmax over the wrong axis"."""
    explanation: str
    """What the student's answer shows, in the notes' vocabulary (markdown)."""
    section: str
    """Where to read: "notes §5, 'Which axis sums to one'"."""
    credit: float = 0.0
    """Share of a case's points kept when this is the diagnosis."""
    convention: bool = False
    """A convention the notes use elsewhere: a kind message, partial credit."""
    forms: tuple[Form, ...] = ()
    """Wordings for where the mistake shows differently (the first that matches wins)."""

    def worded(self, function: str | None = None, right: Collection[str] = ()) -> Misconception:
        """This entry with the explanation that fits where it was found: the question's
        `function` and the outputs the student got `right` (output names, e.g. "loss")."""
        for form in self.forms:
            if form.function not in (None, function):
                continue
            if all(name in right for name in form.right):
                return replace(self, explanation=form.explanation, forms=())
        return self


class Catalog:
    """Misconception entries by id, filled from entry modules (`common`, `a1` … `a7`: each calls
    `register` as it is imported) the first time an entry is asked for."""

    def __init__(self, modules: tuple[str, ...] = ()) -> None:
        self.modules = modules  # grader.catalog.<name> modules whose entries this catalog holds
        self.entries: dict[str, Misconception] = {}
        self.loaded = not modules

    def register(self, *entries: Misconception) -> None:
        for m in entries:
            if m.id in self.entries and self.entries[m.id] != m:
                raise ValueError(f"misconception {m.id!r} registered twice with different texts")
            self.entries[m.id] = m

    def load(self) -> None:
        """Import the entry modules (once); their `register` calls fill this catalog."""
        if self.loaded:
            return
        self.loaded = True
        import importlib

        for name in self.modules:
            try:
                importlib.import_module(f"grader.catalog.{name}")
            except ModuleNotFoundError as err:  # an assignment's entries may not exist yet
                if err.name != f"grader.catalog.{name}":
                    raise

    def get(self, mid: str) -> Misconception:
        self.load()
        try:
            return self.entries[mid]
        except KeyError:
            raise KeyError(f"unknown misconception id {mid!r}") from None

    def all_ids(self) -> list[str]:
        self.load()
        return sorted(self.entries)


# The course's catalog: the entry modules register into it; the functions below read it.
COURSE = Catalog(("common", "a1", "a2", "a3", "a4", "a5", "a6", "a7"))
_CATALOG = COURSE.entries  # the same dict, for the tests that list an assignment's entries


def register(*entries: Misconception) -> None:
    """Add entries to the course's catalog (what an entry module does as it is imported)."""
    COURSE.register(*entries)


def get(mid: str) -> Misconception:
    return COURSE.get(mid)


def worded(mid: str, function: str | None = None, right: Collection[str] = ()) -> Misconception:
    """The entry for `mid`, worded for where it was found (see `Misconception.worded`)."""
    return get(mid).worded(function, right)


def all_ids() -> list[str]:
    return COURSE.all_ids()


def note(mid: str, function: str | None = None, right: Collection[str] = ()) -> str:
    """The diagnosis paragraph shown under a question's feedback, the one text for every question
    (worded for the question's function and the outputs the student got right)."""
    m = worded(mid, function, right)
    kind = "A convention the notes use elsewhere" if m.convention else "Diagnosis"
    return f"**{kind} — {m.title}** (`{m.id}`): {m.explanation} *Read: {m.section}.*"
