"""Reading a choice answer that carries a justification: `C. RMSNorm drops the mean`,
`(C) because …`, `A and C: both …` are the letters, and the rest is noted as not graded; a
leading `Option`, `Answer:` or `Choice` before the letter, and markdown's `**C**` or a
bracketed `[C]` around it, are read past."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from grader.written.answers import AnswerFormatError, _describe, as_choice

_LETTER = re.compile(
    r"\s*(?:(?:,|;|/|&|\+|and(?=[\s(]))\s*)?\(?([A-Za-z])\)?(?=[\s.,:;)\-–—!?]|$)[.:)]?"
)
_WORD = re.compile(r"[A-Za-z]{2,}")
_LEAD = re.compile(r"\s*(?:the\s+)?(?:answer|option|choice|ans)\b\s*(?:is\b)?\s*[:.\-–—]?\s*", re.I)
MAX_LEADING = 26  # letters read before the justification


def read_choice(value: Any, allowed: Iterable[str] = ()) -> tuple[frozenset[str], str]:
    """(the letters, the text after them) of a choice answer; AnswerFormatError (teaching)."""
    allowed_set = {a.upper() for a in allowed}
    try:
        return as_choice(value, allowed_set), ""
    except AnswerFormatError as err:
        if not isinstance(value, str):
            raise
        first_error = err
    text = value.strip()
    inner = text
    while len(inner) > 2 and inner[0] in "*_`[" and inner[-1] in "*_`]":
        inner = inner[1:-1].strip()  # markdown's **B**, `B`, a bracketed [B]
    if inner != text:
        try:
            return as_choice(inner, allowed_set), ""
        except AnswerFormatError:
            pass
    lead = _LEAD.match(text)
    if lead and lead.end() < len(text):  # "Option B", "Answer: C because …"
        text = text[lead.end() :]
        try:
            return as_choice(text, allowed_set), ""
        except AnswerFormatError:
            pass
    found: list[tuple[str, int]] = []
    pos = 0
    while len(found) < MAX_LEADING and (m := _LETTER.match(text, pos)) and m.end() > pos:
        found.append((m.group(1).upper(), m.end()))
        pos = m.end()
    for k in range(len(found), 0, -1):
        letters = frozenset(letter for letter, _ in found[:k])
        rest = text[found[k - 1][1] :].strip(" \t.,:;-–—")
        if _WORD.search(rest) and (not allowed_set or letters <= allowed_set):
            return letters, rest
    options = ", ".join(sorted(allowed_set)) if allowed_set else "single letters"
    raise AnswerFormatError(
        f"{first_error}; a choice is written as its letter first ({options}), any reason "
        f"after it (got {_describe(value)})"
    )
