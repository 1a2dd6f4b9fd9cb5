"""Code similarity on a generated class: disguised copies found, independent solutions not flagged.

The class (tests/similarity_class.py) holds every assignment's independently written correct
solutions and four disguised copies of each whole one (renamed, reordered, re-commented, all
three), plus three held-out files that diff shows were built from the solution. The figures
asserted here are the ones docs/similarity.md reports.
"""

from __future__ import annotations

import ast
import json

import pytest
import similarity_class as sc

from grader.course import registry
from grader.reports import similarity
from grader.reports.similarity import THRESHOLD, compare_codes, stub_code

ASSIGNMENTS = [registry.resolve_id(a) for a in ("a1", "a2", "a3", "a4", "a5", "a6", "a7")]


@pytest.fixture(scope="module")
def measured():
    cases = sc.build(ASSIGNMENTS)
    copies, independents = sc.pairs(cases)
    overlap: dict[frozenset, float] = {}
    for aid in ASSIGNMENTS:
        codes = {c.name: c.code for c in cases if c.assignment == aid}
        for p in compare_codes(codes, stub_code(registry.load(aid)), threshold=0.0):
            overlap[frozenset((p.left, p.right))] = p.overlap
    return cases, copies, independents, overlap


@pytest.mark.slow  # over 5 s on two cores: the full suite's, not the developer loop's
def test_every_disguised_copy_is_found(measured):
    _, copies, _, overlap = measured
    assert len(copies) == 115  # 28 whole solutions x 4 disguises, and 3 built from the solution
    assert {c.disguise for _, c in copies} == {
        "renamed",
        "reordered",
        "recommented",
        "all",
        "wrapped",
        "edited",
    }
    missed = [c.name for o, c in copies if overlap.get(frozenset((o.name, c.name)), 0) < THRESHOLD]
    assert missed == []
    lowest = min(overlap.get(frozenset((o.name, c.name)), 0) for o, c in copies)
    assert lowest > THRESHOLD + 0.05  # a margin, not a knife's edge (0.79 measured)


@pytest.mark.slow  # over 5 s on two cores: the full suite's, not the developer loop's
def test_independent_solutions_are_not_flagged(measured):
    _, _, independents, overlap = measured
    assert len(independents) == 100
    flagged = [
        (a.name, b.name)
        for a, b in independents
        if overlap.get(frozenset((a.name, b.name)), 0) >= THRESHOLD
    ]
    assert flagged == []  # false-positive rate 0 of 100 at the threshold
    highest = max(overlap.get(frozenset((a.name, b.name)), 0) for a, b in independents)
    assert highest < THRESHOLD - 0.03  # 0.65 measured (a3's greedy_lists in heapq_fractions)


def test_the_disguises_really_change_the_text():
    code = (
        "import numpy as np\n\n\ndef f(x, y):\n    '''doc'''\n    total = x + y  # sum\n"
        "    return total\n\n\ndef g(z):\n    return z * 2\n"
    )
    renamed = sc.renamed(code)
    tree = ast.parse(renamed)
    assert [f.name for f in tree.body if isinstance(f, ast.FunctionDef)] == ["f", "g"]
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)
    }
    assert "total" not in names and {"x", "y", "z"} <= names  # the graded signatures kept
    assert "np" in renamed
    reordered = sc.reordered(code)
    assert reordered.index("def g(") < reordered.index("def f(")
    recommented = sc.recommented(code)
    assert "# sum" not in recommented and "doc" not in recommented and "total" in recommented


def test_renaming_alone_is_a_full_match_and_different_code_is_none():
    a = (
        "def area(width, height, scale=2.0):\n    result = width * height\n"
        "    if result > 10:\n        result = result - 0.5 * width * scale\n"
        "    return [result + 0.5 * width, result / (height + 1.0)]\n"
    )
    b = (
        "def area(w, h, s=2.0):\n    out = w * h  # the area\n\n"
        "    if out > 10:\n        out = out - 0.5 * w * s\n"
        "    return [out + 0.5 * w, out / (h + 1.0)]\n"
    )
    c = (
        "def area(w, h, s=2.0):\n    for i in range(3):\n"
        "        print(i, w - h, [k for k in 'abc'], {1: s})\n    while True:\n        break\n"
    )
    (pair,) = compare_codes({"a": a, "b": b, "c": c}, threshold=THRESHOLD)
    assert (pair.left, pair.right) == ("a", "b") and pair.overlap == pytest.approx(1.0)
    assert pair.passages and "width * height" in pair.passages[0].left
    assert "w * h" in pair.passages[0].right


def test_the_stub_counts_for_nothing():
    a4 = registry.load("a4")
    stub = stub_code(a4)
    assert stub is not None and stub.count("raise NotImplementedError") > 3
    # gus and hal each wrote one line, in different functions; the rest is the handout's
    gus = stub.replace("raise NotImplementedError", "return x  #", 1)
    head, _, tail = stub.rpartition("raise NotImplementedError")
    hal = head + "return q @ k  #" + tail
    assert gus != hal != stub
    assert compare_codes({"gus": gus, "hal": hal}, stub, threshold=0.0) == []
    (alike,) = compare_codes({"gus": gus, "hal": hal}, None, threshold=THRESHOLD)
    assert alike.overlap > 0.9  # without the stub excluded, the handout alone looks copied


def test_a_notebook_is_read_by_its_code_cells(tmp_path):
    cells = [
        {"cell_type": "markdown", "source": "def not_code(): pass"},
        {"cell_type": "code", "source": ["%matplotlib inline\n", "import numpy as np\n"]},
        {"cell_type": "code", "source": "def f(x):\n    return np.tanh(x) * 2\n"},
        {"cell_type": "code", "source": "%%bash\nls -l\n"},
    ]
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "rnn.ipynb").write_text(json.dumps({"cells": cells, "nbformat": 4}))
    text = similarity.submission_code(sub, "rnn.py")
    assert text == "import numpy as np\n\n\ndef f(x):\n    return np.tanh(x) * 2\n"
    assert "not_code" not in text and "%matplotlib" not in text
