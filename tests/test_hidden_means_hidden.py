"""Hidden means hidden: nothing the student's process produced on a hidden case reaches them.

Every graded function of every assignment is replaced by a probe that tries to spell its
inputs through a channel the feedback might carry: its return value (the inputs themselves), an
exception's message, an exception's class name, a returned object's type name, the shape of a
returned array, the line number it raises from. The submissions are graded for two variant keys,
and every field a student sees (results.json's top-level output and every test they may see,
the terminal table, the markdown feedback) is searched:
- for the probes' markers outside the visible cases' own lines (the control: on a visible case
  the same probe does show, since a visible case shows everything);
- for the hidden cases' input values (numbers as they print, tokens), apart from those the
  correct solution's own feedback shows anyway (labels, notes).
A notebook submission is probed the same way.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader import catalog
from grader.course import registry, variants
from grader.course.content import solution_dir
from grader.engine.grade import grade_submission
from grader.questions import Assignment, CodeQuestion
from grader.reports import render
from grader.reports.results_json import to_gradescope

READY = [aid for aid in registry.available() if solution_dir(aid).is_dir()]
KEYS = ("ada.lovelace@example.edu", "alan.turing@example.edu")

# What each probe does with its inputs; its markers are what a leak would look like.
PROBES = ("echo", "message", "exc_class", "type_name", "shape", "line")
MARKERS = {
    "message": re.compile(r"LEAKMSG"),
    "exc_class": re.compile(r"LEAKCLS"),
    "type_name": re.compile(r"LEAKTYPE"),
    "shape": re.compile(r"(?<!\d)31\d\d\d(?!\d)"),
    "line": re.compile(r"(?<!\d)77\d\d\d(?!\d)"),
}

PROBE_CODE = """

import numpy as _np


def _sg_digest(args, kwargs):
    return len(repr(args)) + len(repr(kwargs))


def _sg_probe(name, kind, original):
    def probe(*args, **kwargs):
        k = _sg_digest(args, kwargs) % 97
        if kind == "echo":
            return args[0] if len(args) == 1 else args
        if kind == "message":
            raise ValueError("LEAKMSG" + repr(args)[:300])
        if kind == "exc_class":
            raise type("LEAKCLS_%d" % k, (Exception,), {})("no message")
        if kind == "type_name":
            return type("LEAKTYPE_%d" % k, (), {})()
        if kind == "shape":
            return _np.zeros(31000 + k)
        if kind == "line":
            exec(compile("\\n" * (77000 + k) + "raise RuntimeError('x')", __file__, "exec"))
        return original(*args, **kwargs)

    probe.__name__ = name
    return probe


for _i, _name in enumerate(_SG_NAMES):
    globals()[_name] = _sg_probe(_name, _SG_PROBES[(_i + _SG_OFFSET) % len(_SG_PROBES)], globals()[_name])
"""


def probed_source(assignment: Assignment, offset: int) -> str:
    names = sorted({q.function for q in assignment.questions if isinstance(q, CodeQuestion)})
    source = (solution_dir(assignment.id) / assignment.code_file).read_text()
    return (
        source
        + f"\n_SG_NAMES = {names!r}\n_SG_PROBES = {PROBES!r}\n_SG_OFFSET = {offset}\n"
        + PROBE_CODE
    )


def student_texts(report, assignment: Assignment) -> list[str]:
    data = to_gradescope(report, assignment=assignment)
    texts = [data["output"], render.table(report), render.markdown(report)]
    for t in data["tests"]:
        if t["visibility"] != "hidden":
            texts += [t["name"], t["output"]]
    return texts


def without_visible_cases(text: str, visible_labels: set[str]) -> str:
    """The text less each visible case's own lines (its line and the indented lines under it)."""
    out, skipping = [], False
    for line in text.splitlines():
        m = re.match(r"^- [✔✘] (.*)$", line)
        if m:
            skipping = any(
                m.group(1) == label or m.group(1).startswith((label + ":", label + " —"))
                for label in visible_labels
            )
        elif not line.startswith("  "):
            skipping = False
        if not skipping:
            out.append(line)
    return "\n".join(out)


def _leaves(x: Any, out: list[Any]) -> None:
    if isinstance(x, np.ndarray):
        out.extend(x.reshape(-1)[:400].tolist())
    elif isinstance(x, (list, tuple)):
        for v in x[:400]:
            _leaves(v, out)
    elif isinstance(x, dict):
        for k, v in list(x.items())[:400]:
            _leaves(k, out)
            _leaves(v, out)
    elif isinstance(x, (str, int, float, np.generic)) and not isinstance(x, bool):
        out.append(x.item() if isinstance(x, np.generic) else x)


def printed_forms(value: Any) -> set[str]:
    """How a hidden input could be spelled in feedback; only forms too specific to occur by chance."""
    if isinstance(value, str):
        return {value} if len(value) >= 4 and not value.isspace() else set()
    if isinstance(value, int):
        return {str(value)} if abs(value) >= 1000 else set()
    forms = {f"{value:.4g}", f"{value:.6g}", repr(float(value))}
    return {f for f in forms if len(f.lstrip("-").replace(".", "")) >= 4 and "e" not in f}


@functools.cache  # each key's cases are probed by two submissions
def _only_hidden(aid: str, key: str) -> frozenset[str]:
    """How this student's hidden inputs could be spelled, less what their visible ones spell."""
    assignment = registry.load(aid)
    seed = variants.seed_for(aid, key)
    secrets: set[str] = set()
    public: set[str] = set()
    for q in assignment.questions:
        if not isinstance(q, CodeQuestion):
            continue
        for case in q.cases(seed):
            leaves: list[Any] = []
            _leaves((case.args, dict(case.kwargs)), leaves)
            forms = set().union(*(printed_forms(v) for v in leaves)) if leaves else set()
            (public if case.visible else secrets).update(forms)
    return frozenset(secrets - public)


@pytest.fixture(scope="module")
def catalog_text() -> str:
    return json.dumps([vars(catalog.get(m)) for m in catalog.all_ids()], default=str)


def words(text: str) -> set[str]:
    """The text's numbers and words as they stand alone (a set: tens of thousands of secrets)."""
    out: set[str] = set()
    for token in re.findall(r"-?[\w.]+", text):
        token = token.rstrip(".")
        out |= {token, token.lstrip("-")}
    return out


def shown_in(secret: str, text: str, tokens: set[str]) -> bool:
    """Does `secret` stand alone in `text` (not inside a longer number or word)?"""
    if re.fullmatch(r"-?[\w.]+", secret):
        return secret in tokens
    return re.search(rf"(?<![\w.]){re.escape(secret)}(?![\w])", text) is not None


def _grade(folder: Path, assignment: Assignment, key: str):
    return grade_submission(folder, assignment, student=key)


@functools.cache
def _solution_texts(aid: str, key: str) -> str:
    """What the correct solution's own feedback shows this student (graded once per key)."""
    assignment = registry.load(aid)
    return "\n".join(student_texts(_grade(solution_dir(aid), assignment, key), assignment))


def _check(aid: str, key: str, offset: int, tmp_path: Path, catalog_text: str, notebook: bool):
    assignment = registry.load(aid)
    visible = {
        c.name
        for q in assignment.questions
        if isinstance(q, CodeQuestion)
        for c in q.cases(variants.seed_for(aid, key))
        if c.visible
    }
    shown_anyway = _solution_texts(aid, key) + catalog_text
    folder = tmp_path / f"probe-{offset}"
    folder.mkdir(parents=True)
    source = probed_source(assignment, offset)
    if notebook:
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(source)]
        nbformat.write(nb, folder / assignment.code_file.replace(".py", ".ipynb"))
    else:
        (folder / assignment.code_file).write_text(source)
    report = _grade(folder, assignment, key)
    texts = student_texts(report, assignment)
    rest = "\n".join(without_visible_cases(t, visible) for t in texts)
    leaked = {kind: m.findall(rest)[:3] for kind, m in MARKERS.items() if m.search(rest)}
    assert not leaked, (aid, key, leaked)
    # a hidden input's spelling in what the student sees, unless the solution's own feedback or
    # the catalog shows it anyway (that substring search last: only the few found need it)
    tokens = words(rest)
    found = [
        s for s in _only_hidden(aid, key) if shown_in(s, rest, tokens) and s not in shown_anyway
    ]
    assert not found, (aid, key, found[:10])
    whole = "\n".join(texts)
    return {kind for kind, m in MARKERS.items() if m.search(whole)}


@pytest.mark.parametrize(
    "aid", [pytest.param(a, marks=pytest.mark.slow) if a != "a1_word_vectors" else a for a in READY]
)
def test_no_hidden_input_reaches_what_a_student_sees(aid, tmp_path, catalog_text):
    shown: set[str] = set()
    for i, key in enumerate(KEYS):
        for offset in (2 * i, 2 * i + 1):
            shown |= _check(aid, key, offset, tmp_path / f"{i}", catalog_text, notebook=False)
    # the control: on the visible cases the same probes do show what they produced
    assert {"message", "type_name", "line"} <= shown, shown


@pytest.mark.slow
def test_no_hidden_input_reaches_a_notebooks_feedback(tmp_path, catalog_text):
    shown = _check("a4_transformer", KEYS[0], 0, tmp_path, catalog_text, notebook=True)
    assert shown, "the control: a visible case shows its probe"


def test_a_visible_case_shows_the_probe_and_a_hidden_one_only_its_category(tmp_path):
    """One function, one probe, read line by line: the visible case quotes the exception's message,
    the hidden ones say `raised ValueError` and nothing else."""
    import dataclasses

    assignment = registry.load("a1_word_vectors")
    only = dataclasses.replace(
        assignment, questions=tuple(q for q in assignment.questions if q.id == "a1.softmax")
    )
    folder = tmp_path / "sub"
    folder.mkdir()
    source = (solution_dir(assignment.id) / assignment.code_file).read_text()
    source += '\n\ndef softmax(x, axis=-1):\n    raise ValueError("LEAKMSG" + repr(x))\n'
    (folder / assignment.code_file).write_text(source)
    (q,) = grade_submission(folder, only, student=KEYS[0]).questions
    lines = [line for line in q.feedback.splitlines() if line.startswith("- ✘")]
    cases = list(only.questions[0].cases(0))
    assert lines and len(lines) == len(cases)
    for line in lines:
        if "hidden" in line:
            assert line.endswith(": raised `ValueError` in `softmax`"), line
        else:
            assert "LEAKMSG" in line, line
