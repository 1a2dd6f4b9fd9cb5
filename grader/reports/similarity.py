"""Code similarity that survives renaming, reordering and re-commenting, for a person to look at.

copydetect (the winnowing of Schleimer, Wilkerson and Aiken, "Winnowing: local algorithms for
document fingerprinting", SIGMOD 2003) fingerprints each submission's code after pygments has
tokenised it with every name replaced by one letter, strings by another, comments and layout
dropped; pairs are ranked by the share of each file's fingerprinted code the other shares. The
handout's stub is boilerplate: its fingerprints are removed from every file, so signatures and
docstrings every student starts from count for nothing. A notebook's code cells are read in
order (magics dropped), so a .py and a notebook are compared alike. Never a penalty and never
in student-visible feedback: the class report lists the pairs (docs/similarity.md).
"""

from __future__ import annotations

import io
import itertools
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.course.content import assignment_dir
from grader.questions import Assignment
from grader.reports.copy_signals import MAX_CODE_BYTES, code_text

NOISE = 25  # characters of normalised code below which a match is noise (copydetect's k)
# A match this long is always found; equal to NOISE (copydetect's defaults), the winnowing
# window is 1 and every k-gram is kept: the figures do not depend on Python's per-process
# string hashing, which decides which k-gram a wider window keeps.
GUARANTEE = 25
THRESHOLD = 0.7  # a pair is listed when either file shares at least this much with the other
MIN_FINGERPRINTED = 40  # characters of non-boilerplate code a file needs to be compared at all


@dataclass(frozen=True)
class Passage:
    """One stretch of code both files hold (after normalisation), as each file writes it."""

    left: str
    right: str


@dataclass(frozen=True)
class SimilarPair:
    """Two submissions whose code overlaps, by how much of each file the other holds."""

    left: str
    """Submission names."""
    right: str
    left_share: float
    """Of the left file's fingerprinted code, found in the right one (0..1)."""
    right_share: float
    passages: tuple[Passage, ...]
    """The matching stretches, in the left file's order."""

    @property
    def overlap(self) -> float:
        """The larger share: a file copied whole into a longer one still ranks high."""
        return max(self.left_share, self.right_share)


def notebook_code(text: str) -> str | None:
    """A notebook's code cells in order, IPython magics and shell escapes dropped."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    cells = doc.get("cells") if isinstance(doc, dict) else None
    if not isinstance(cells, list):
        return None
    parts = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        python = _without_magics(source)
        if python:
            parts.append(python)
    return "\n\n".join(parts)


def _without_magics(source: str) -> str | None:
    """A cell's Python for fingerprinting: a cell magic's cell (`%%bash`) is none, a line
    magic or shell escape (`%time`, `!pip`) is dropped (the grader runs cells by the same rule,
    grader/engine/notebook_source.py, which reports may not import)."""
    if source.lstrip().startswith("%%"):
        return None
    lines = [line for line in source.split("\n") if not line.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def submission_code(path: Path, code_file: str) -> str | None:
    """The submission's code: its code file, else its notebook's code cells."""
    text = code_text(path, code_file)
    if text is not None:
        return text
    raw = code_text(path, code_file.removesuffix(".py") + ".ipynb")
    if raw is None or len(raw) > MAX_CODE_BYTES:
        return None
    return notebook_code(raw)


def _fingerprint(code: str, boilerplate: Sequence[int] = ()) -> Any:
    from copydetect import CodeFingerprint

    logging.getLogger().disabled, was = True, logging.getLogger().disabled
    try:  # copydetect logs a warning per file it cannot tokenise; the report says it instead
        return CodeFingerprint(
            "code.py", NOISE, GUARANTEE - NOISE + 1, list(boilerplate), fp=io.StringIO(code)
        )
    finally:
        logging.getLogger().disabled = was


def _passages(a: Any, b: Any, slices: tuple[Any, Any]) -> tuple[Passage, ...]:
    """The matching stretches side by side: the k-th of each file (copydetect gives each
    file's stretches in its own order, so a reordered copy's sides may differ in order)."""
    left, right = slices
    lefts = [a.raw_code[s:e] for s, e in zip(left[0], left[1])] if left.size else []
    rights = [b.raw_code[s:e] for s, e in zip(right[0], right[1])] if right.size else []
    return tuple(
        Passage(lefts[i] if i < len(lefts) else "", rights[i] if i < len(rights) else "")
        for i in range(max(len(lefts), len(rights)))
    )


def compare_codes(
    codes: dict[str, str], boilerplate: str | None = None, threshold: float = THRESHOLD
) -> list[SimilarPair]:
    """Every pair of the named codes overlapping by `threshold` or more, most overlapping first."""
    from copydetect import compare_files

    stub = _fingerprint(boilerplate).hashes if boilerplate else set()
    prints = {}
    for name, code in codes.items():
        fp = _fingerprint(code, sorted(stub))
        if fp.token_coverage >= MIN_FINGERPRINTED:
            prints[name] = fp
    pairs = []
    for x, y in itertools.combinations(sorted(prints), 2):
        _, (sx, sy), slices = compare_files(prints[x], prints[y])
        if max(sx, sy) >= threshold:
            pairs.append(
                SimilarPair(x, y, float(sx), float(sy), _passages(prints[x], prints[y], slices))
            )
    return sorted(pairs, key=lambda p: (-p.overlap, p.left, p.right))


def stub_code(assignment: Assignment) -> str | None:
    """The handout's code stub, the boilerplate every submission starts from."""
    if not assignment.code_file:
        return None
    return code_text(assignment_dir(assignment.id), assignment.code_file)


def similar_pairs(
    assignment: Assignment, submissions: Iterable[Any], threshold: float = THRESHOLD
) -> list[SimilarPair]:
    """Pairs of submissions (by name) whose code overlaps past `threshold`, the stub excluded."""
    if not assignment.code_file:
        return []
    codes = {}
    for sub in submissions:
        code = submission_code(getattr(sub, "path", Path("")), assignment.code_file)
        if code and code.strip():
            codes[getattr(sub, "name", str(sub))] = code
    return compare_codes(codes, stub_code(assignment), threshold)
