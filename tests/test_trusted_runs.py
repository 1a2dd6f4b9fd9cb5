"""grader/engine/trusted.py's TrustedRuns: each trusted function's output on each inputs computed
once within a grading (and across a batch's submissions), and nothing else changed by it.

The expected outputs come from calling the functions themselves without it; the grades from
grading the same submissions with nothing kept (`TrustedRuns(kept_bytes=0)`).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import FAST, ROOT

from grader.course import registry
from grader.course.content import samples_dir
from grader.engine.grade import grade_submission
from grader.engine.trusted import (
    KEPT_ONE_BYTES,
    TrustedRuns,
    inputs_key,
    kept_runs,
    remembering,
    run_trusted,
    trusted_mutants,
)
from grader.mutants import AnyOf
from grader.questions import Case, Rng, TableLM
from grader.reports.results_json import to_gradescope


class Counted:
    """A trusted function that counts its calls: out = 2 * x (+ one draw when given an rng)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, x, rng=None):
        self.calls += 1
        out = 2 * np.asarray(x, dtype=float)
        return out + rng.random() if rng is not None else out


def test_the_same_inputs_are_computed_once_and_other_inputs_again():
    fn, runs = Counted(), TrustedRuns()
    x = np.arange(6.0).reshape(2, 3)
    first = runs.run(fn, (x,), {})
    again = runs.run(fn, (x.copy(),), {})  # another array, the same content
    assert fn.calls == 1 and runs.hits == 1
    np.testing.assert_array_equal(again, 2 * x)
    np.testing.assert_array_equal(first, again)
    # Each of these differs from x in one respect only: each is computed.
    for other in (
        x.astype(np.float32),  # dtype
        x.reshape(3, 2),  # shape
        x.tolist(),  # a list of the same numbers
        x + np.eye(2, 3) * 1e-12,  # one entry, far below any tolerance
    ):
        runs.run(fn, (other,), {})
    assert fn.calls == 5 and runs.hits == 1


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (0.0, -0.0),  # equal as floats, yet 1/x tells them apart
        (1, 1.0),
        (1, True),
        ((1, 2), [1, 2]),
        ("1", 1),
        (np.float32(1.0), np.float64(1.0)),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),  # a function may read a dict in its order
        (Rng(1), Rng(2)),
        (("ab", "c"), ("a", "bc")),
    ],
)
def test_inputs_that_differ_have_different_keys(a, b):
    assert inputs_key((a,), {}) is not None
    assert inputs_key((a,), {}) != inputs_key((b,), {})
    assert inputs_key((), {"x": a}) != inputs_key((a,), {})


def test_inputs_content_does_not_describe_are_never_kept():
    fn, runs = Counted(), TrustedRuns()
    objects = np.array([1.0, "a"], dtype=object)
    generator = np.random.default_rng(0)
    for inputs in ((objects,), (1.0, generator), ({1, 2},)):
        assert inputs_key(inputs, {}) is None
        runs.run(lambda *a: fn(1.0), inputs, {})
        runs.run(lambda *a: fn(1.0), inputs, {})
    assert fn.calls == 6 and runs.hits == 0


def test_an_rng_argument_gives_the_same_draws_when_kept():
    """`Rng(seed)` is built afresh for every run: the kept output is the one a run would give."""
    fn, runs = Counted(), TrustedRuns()
    case = Case("c", (np.zeros(2), Rng(7)))
    plain_run = run_trusted(fn, case)
    with remembering(runs):
        first, second = run_trusted(fn, case), run_trusted(fn, case)
    np.testing.assert_array_equal(first, plain_run)
    np.testing.assert_array_equal(second, plain_run)
    assert runs.hits == 1


def test_a_table_lm_is_told_apart_by_its_table():
    lm = TableLM({(0,): (-0.1, -2.3)}, (-0.7, -0.7))
    same = TableLM({(0,): (-0.1, -2.3)}, (-0.7, -0.7))
    other = TableLM({(0,): (-0.1, -2.4)}, (-0.7, -0.7))
    assert inputs_key((lm,), {}) == inputs_key((same,), {}) != inputs_key((other,), {})


def test_each_caller_gets_its_own_copy():
    runs = TrustedRuns()

    def pair(x):
        return {"y": x * 2, "both": AnyOf(x + 1, x - 1)}

    x = np.ones(3)
    out = runs.run(pair, (x,), {})
    out["y"][:] = -5  # a caller writing into what it got
    out["both"].options[0][:] = -5
    kept = runs.run(pair, (x,), {})
    np.testing.assert_array_equal(kept["y"], [2, 2, 2])
    np.testing.assert_array_equal(kept["both"].options[0], [2, 2, 2])
    kept["y"][:] = -7
    np.testing.assert_array_equal(runs.run(pair, (x,), {})["y"], [2, 2, 2])
    assert runs.hits == 2


def test_large_outputs_are_not_kept_and_the_oldest_go_past_the_budget():
    fn = Counted()
    runs = TrustedRuns()
    big = np.zeros(KEPT_ONE_BYTES // 8 + 1)  # its double is over the one-output bound
    runs.run(fn, (big,), {})
    runs.run(fn, (big,), {})
    assert fn.calls == 2 and runs.hits == 0

    small = TrustedRuns(kept_bytes=3 * (800 + 112))  # room for three outputs of 100 floats
    fn = Counted()
    rows = [np.full(100, float(i)) for i in range(4)]
    for r in rows:
        small.run(fn, (r,), {})
    small.run(fn, (rows[3],), {})  # the newest is kept
    small.run(fn, (rows[0],), {})  # the oldest was dropped
    assert fn.calls == 5 and small.hits == 1


def test_mutants_share_the_block_and_outside_it_nothing_is_kept():
    fn = Counted()
    mutant = trusted_mutants({"m": fn})["m"]
    x = np.arange(3.0)
    mutant(x)
    mutant(x)
    assert fn.calls == 2 and kept_runs() is None
    runs = TrustedRuns()
    with remembering(runs) as inside:
        assert kept_runs() is inside is runs
        mutant(x)
        run_trusted(fn, Case("c", (x,)))  # the same function as a reference: the same output
    assert fn.calls == 3 and runs.hits == 1 and kept_runs() is None


def _results(aid: str, runs: TrustedRuns, student: str) -> str:
    a = registry.load(aid)
    report = grade_submission(
        samples_dir() / aid / "buggy", a, student=student, limits=FAST, runs=runs
    )
    data = to_gradescope(report, assignment=a)
    data["execution_time"] = 0.0
    for name in ("events", "isolated", "isolation", "warnings", "student_output"):
        data["extra_data"].pop(name, None)
    return json.dumps(data, sort_keys=True)


@pytest.mark.parametrize("aid", ["a1_word_vectors", "a4_transformer"])
def test_a_kept_output_grades_as_a_computed_one(aid):
    """Two students' gradings in one pool process (shared visible cases, their own hidden ones):
    the same results.json as each graded with nothing kept, and the diagnosis reused outputs."""
    shared = TrustedRuns()
    for student in ("ada@uni.edu", "grace@uni.edu", "ada@uni.edu"):
        kept = _results(aid, shared, student)
        assert kept == _results(aid, TrustedRuns(kept_bytes=0), student)
    assert shared.hits > 0


def test_what_is_made_from_a_source_is_made_once_per_source_and_tag():
    runs, made = TrustedRuns(), []

    def make(label: str):
        made.append(label)
        return object()

    mistakes = {"m": Counted()}
    first = runs.made_once(mistakes, "pairs", lambda: make("pairs"))
    assert runs.made_once(mistakes, "pairs", lambda: make("again")) is first
    runs.made_once(mistakes, "triples", lambda: make("triples"))  # another tag
    runs.made_once(dict(mistakes), "pairs", lambda: make("equal"))  # an equal mapping, not it
    assert made == ["pairs", "triples", "equal"]


def test_a_questions_combined_mistakes_are_built_once_for_a_batchs_submissions(
    tmp_path, monkeypatch
):
    """A gpt_forward whose logits are off by a factor no catalogued mistake makes: every wrong
    case is searched for two and three mistakes at once. In one pool process (one TrustedRuns)
    the combinations are built once, so the second student's search finds the outputs of the
    visible cases kept; each grading's results are those of a grading that keeps nothing."""
    import grader.engine.code as code

    built: list[int] = []
    together = code.together

    def counted(mutants, size, **kw):
        built.append(size)
        return together(mutants, size, **kw)

    monkeypatch.setattr(code, "together", counted)
    folder = tmp_path / "sub"
    folder.mkdir()
    source = (ROOT / "solutions" / "a4_transformer" / "transformer.py").read_text()
    (folder / "transformer.py").write_text(
        source + "\n\n_right = gpt_forward\n\n\ndef gpt_forward(token_ids, params, n_heads):\n"
        "    return _right(token_ids, params, n_heads) ** 1.5\n"
    )
    a = registry.load("a4_transformer")

    def results(runs: TrustedRuns, student: str) -> str:
        report = grade_submission(folder, a, student=student, limits=FAST, runs=runs)
        (q,) = [r for r in report.questions if r.question_id == "a4.gpt_forward"]
        assert q.max_score > 0 and q.score < q.max_score
        return json.dumps([[r.question_id, r.score, r.misconceptions] for r in report.questions])

    shared = TrustedRuns()
    first = results(shared, "ada@uni.edu")
    assert built == [2, 3]  # searched, and built once
    hits = shared.hits
    second = results(shared, "grace@uni.edu")
    assert built == [2, 3] and shared.hits > hits
    assert first == results(TrustedRuns(kept_bytes=0), "ada@uni.edu")
    assert second == results(TrustedRuns(kept_bytes=0), "grace@uni.edu")
