"""A question's feedback in markdown, rendered from its records: one rule per visibility.

A visible case shows its detail (what differs, the inputs, what came back and what was expected,
the student's line). A hidden case shows only its `CaseSummary`, and the assignment's
`hidden_feedback` may show less of it: "category" (the default) its label, passed or not, which
output and a category in fixed words; "pass-fail" its label and ✔/✘; "summary" only how many
hidden cases passed. Instructors see every case in full (`instructor=True`). The rules are
written out for users in docs/feedback.md.
"""

from __future__ import annotations

from grader.report import CaseDetail, CaseRecord, CaseSummary, Category, QuestionResult

CATEGORY_WORDS: dict[Category, str] = {
    Category.STRUCTURE: "wrong type or structure",
    Category.SHAPE: "wrong shape",
    Category.NONFINITE: "NaN or inf",
    Category.VALUES: "values differ",
    Category.FAILED: "does not hold",
}


def _raised(s: CaseSummary, function: str | None) -> str:
    where = f" in `{function}`" if function else ""
    if s.exception is not None:
        return f"raised `{s.exception}`{where}"
    return f"raised an exception{where} of a class that is not one of Python's built-in exceptions"


def summary_words(s: CaseSummary, function: str | None = None) -> str:
    """A case's category in fixed words: nothing in them comes from the student's process."""
    f = f"`{function}`" if function else "the function"
    c = s.category
    if c is Category.CARRIED:
        return "right given your " + " and your ".join(s.given)
    if s.outputs:
        return "; ".join(f"`{name}`: {CATEGORY_WORDS.get(how, 'differs')}" for name, how in s.outputs)
    if c in CATEGORY_WORDS:
        return CATEGORY_WORDS[c]
    if c is Category.RAISED:
        return _raised(s, function)
    if c is Category.TIMEOUT:
        limit = f" within {s.limit_seconds:g} s" if s.limit_seconds else ""
        return f"{f} did not return{limit} (an infinite loop, a sleep, or waiting for input?)"
    if c is Category.CRASHED:
        return f"the process running your code ended, or was stopped by a limit, during {f}"
    if c is Category.UNREADABLE:
        return (
            f"{f} returned a value the grader could not read; return numpy arrays, torch "
            "tensors, lists or numbers"
        )
    if c is Category.NOT_RUN:
        if s.not_run_because == "timeout":
            return f"not run (an earlier case of {f} timed out)"
        return "not run: the submission's time budget ran out"
    if c is Category.MISSING:
        return f"the file has no function {f}"
    if c is Category.IMPORT:
        return "not run: your file could not be imported (see above)"
    return ""


def _mark(record: CaseRecord) -> str:
    return "✔" if record.passed else "✘"


def _summary_line(record: CaseRecord, function: str | None) -> str:
    s = record.summary
    if s.category is Category.PASSED:
        return f"- ✔ {s.label}"
    words = summary_words(s, function)
    sep = " — " if s.category is Category.CARRIED else ": "
    return f"- {_mark(record)} {s.label}{sep + words if words else ''}"


def _detail_lines(detail: CaseDetail) -> list[str]:
    out = []
    if detail.spot is not None:
        text = f": `{detail.spot.text}`" if detail.spot.text else ""
        out.append(f"  - raised at {detail.spot.words(with_file=True)}{text}")
    if detail.inputs is not None:
        out.append(f"  - inputs: {detail.inputs}")
    if detail.got is not None:
        out.append(f"  - got: {detail.got}")
    if detail.expected is not None:
        out.append(f"  - expected: {detail.expected}")
    return out


def _full_line(record: CaseRecord, function: str | None, marker: str = "") -> str:
    """A case with everything known about it (a visible case; any case for instructors)."""
    s, d = record.summary, record.detail
    if s.category is Category.PASSED:
        return f"- ✔ {s.label}{marker}"
    if s.category is Category.CARRIED:
        return f"- ✔ {s.label}{marker} — {summary_words(s, function)}"
    said = "; ".join(d.messages) or summary_words(s, function)
    lines = [f"- ✘ {s.label}{marker}" + (f": {said}" if said else "")]
    if not s.passed:
        lines += _detail_lines(d)
    return "\n".join(lines)


def case_lines(q: QuestionResult, *, instructor: bool = False) -> list[str]:
    """One line (or a few) per case, as the viewer may see it."""
    if instructor:
        return [_full_line(r, q.function, "" if r.visible else " (hidden)") for r in q.cases]
    policy = q.hidden_feedback
    lines: list[str] = []
    hidden = [r for r in q.cases if not r.visible]
    for r in q.cases:
        if r.visible:
            lines.append(_full_line(r, q.function))
        elif policy == "category":
            lines.append(_summary_line(r, q.function))
        elif policy == "pass-fail":
            lines.append(f"- {_mark(r)} {r.summary.label}")
    if policy == "summary" and hidden:
        passed = sum(r.passed for r in hidden)
        lines.append(f"- {passed} of {len(hidden)} hidden {q.unit} passed")
    return lines


def head(q: QuestionResult) -> str:
    """"**4/6 cases passed**, 1 more right given your earlier work." and its kin."""
    if q.unit == "checks":
        checks = [r for r in q.cases if r.summary.category in (Category.PASSED, Category.FAILED)]
        passed = sum(r.passed for r in checks)
        return f"**{passed}/{len(checks)} checks passed**" + (f" ({q.how})." if q.how else ".")
    n_passed = sum(r.summary.category is Category.PASSED for r in q.cases)
    carried = sum(r.summary.category is Category.CARRIED for r in q.cases)
    more = f", {carried} more right given your earlier work." if carried else "."
    return f"**{n_passed}/{len(q.cases)} cases passed**{more}"


def question_markdown(q: QuestionResult, *, instructor: bool = False) -> str:
    """The question's whole feedback: its lead, its cases, its notes."""
    parts = [q.lead] if q.lead else []
    if q.cases:
        parts.append(head(q))
        parts.append("\n".join(case_lines(q, instructor=instructor)))
    parts += q.notes
    return "\n\n".join(p for p in parts if p)


def reason(q: QuestionResult) -> str:
    """Why a question lost points, in one line a student may see: the diagnosis when one was
    named, else its first failed case, else the first line of its lead."""
    if q.not_attempted:
        return "not attempted"
    if q.misconceptions:
        from grader import catalog

        try:
            titles = [catalog.get(m).title for m in q.misconceptions]
        except KeyError:
            titles = list(q.misconceptions)
        return "diagnosis: " + "; ".join(titles)
    if q.lead:
        first = next((line for line in q.lead.splitlines() if line.strip()), "")
        return _plain(first)
    failed = next((r for r in q.cases if not r.passed), None)
    if failed is not None:
        line = case_lines_of(q, failed)
        return _plain(line.replace("✘", "", 1))
    notes = [n for n in q.notes if n.strip()]
    return _plain(notes[0].splitlines()[0]) if notes else "no feedback"


def case_lines_of(q: QuestionResult, record: CaseRecord) -> str:
    """One case's first line as a student sees it."""
    if record.visible:
        return _full_line(record, q.function).splitlines()[0]
    if q.hidden_feedback == "category":
        return _summary_line(record, q.function)
    return f"- {_mark(record)} {record.summary.label}"


def _plain(markdown: str) -> str:
    """One line of markdown as plain text: no emphasis, code ticks or list markers."""
    import re

    text = re.sub(r"\*\*|__|`", "", markdown)
    text = re.sub(r"^\s*[-*]\s+", "", text)
    return " ".join(text.split())


def case_data(record: CaseRecord) -> dict[str, object]:
    """A case as plain data, in full (for instructors: results.json's `extra_data`)."""
    s, d = record.summary, record.detail
    data: dict[str, object] = {
        "label": s.label,
        "visible": record.visible,
        "category": s.category.value,
    }
    if s.outputs:
        data["outputs"] = {name: how.value for name, how in s.outputs}
    if s.exception or s.own_exception:
        data["exception"] = s.exception
    if s.given:
        data["given"] = list(s.given)
    if d.messages:
        data["messages"] = [m[:600] for m in d.messages]
    for key in ("inputs", "got", "expected"):
        value = getattr(d, key)
        if value is not None:
            data[key] = value[:600]
    if d.spot is not None:
        data["line"] = d.spot.words(with_file=True) + (f": {d.spot.text}" if d.spot.text else "")
    return data
