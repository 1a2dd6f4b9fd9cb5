"""The expression checks' memo: what a submission's checks read and computed, kept for its next
checks, never changing a verdict.

A derivation compares each step with the one before, and its last step with the expected
answer and the known mistakes, so the same texts are read and the same programs evaluated
several times. The memo must give what a new computation gives (the verdicts are compared with
checks made without one), must be emptied for each new submission, and must stay bounded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mpmath
import pytest
from mpmath import mpc, mpf

from grader.suites import a1_word_vectors, a4_transformer
from grader.written.expr import checker as checker_module
from grader.written.expr import numeric
from grader.written.expr.checker import ExprChecker
from grader.written.expr.memo import Memo
from grader.written.expr.steps import check_step

A1 = a1_word_vectors.ASSIGNMENT.question("a1.w_skipgram_grad")
A4 = a4_transformer.ASSIGNMENT.question("a4.w_softmax_derivation")
SUM = "exp(u_a v_c) + exp(u_b v_c) + exp(u_c v_c)"
EXPECTED_A1 = "(p_a - 1) u_a + p_b u_b + p_c u_c"

# (the question, its steps in order, the expected result): right, broken, unreadable and
# primed steps, each step checked against the one before as a derivation is
CHAINS = [
    (A1, ["d/dv_c (-log(p_a))", f"-u_a + (u_a exp(u_a v_c) + u_b exp(u_b v_c) + u_c exp(u_c v_c))/({SUM})",
          "-u_a + p_a u_a + p_b u_b + p_c u_c", EXPECTED_A1], EXPECTED_A1),
    (A1, ["d/dv_c (-log(p_a))", "-u_a + p_a u_a + p_b u_b + p_c u_c",
          "u_a - p_a u_a - p_b u_b - p_c u_c"], EXPECTED_A1),
    (A1, ["d/dv_c (-log(p_a))", "-u_a + u_a exp(u_a v_c) + u_b exp(u_b v_c)", "p_a u_a +* 2",
          "-u_a"], EXPECTED_A1),
    (A4, ["d/ds_b (exp(s_a)/S)", "-exp(s_a) exp(s_b)/S^2", "-p_a p_b"], "-p_a p_b"),
    (A4, ["d/ds_b p_a", "p_a (1 - p_b)", "p_a - p_a p_b"], "-p_a p_b"),
]  # fmt: skip


def _symbols(q) -> list[str]:
    return [*q.symbols, *q.relations]


def _links(q, steps: list[str], expected: str, memo: Memo | None) -> list[tuple]:
    """Every verdict a derivation asks for: each step against the one before, the last against
    the expected answer and the steps against each other once more (as the mistakes are)."""
    symbols = _symbols(q)
    asked = [(steps[0], None)] + list(zip(steps[1:], steps[:-1], strict=True))
    asked += [(steps[-1], expected), (steps[1], steps[-1]), (steps[-1], steps[1])]
    out = []
    for answer, previous in asked:
        v = check_step(answer, previous, symbols, memo)
        out.append((v.equivalent, v.error, v.interpreted, v.method, v.canonical, v.note))
    return out


@pytest.mark.parametrize("n", range(len(CHAINS)))
def test_a_memo_never_changes_a_verdict(n: int) -> None:
    q, steps, expected = CHAINS[n]
    fresh = _links(q, steps, expected, None)
    memo = Memo()
    assert _links(q, steps, expected, memo) == fresh
    assert len(memo) > 0
    assert _links(q, steps, expected, memo) == fresh  # everything remembered, the same again


def test_a_chain_evaluates_each_step_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # the counts come from the sampling policy (24 valid points a program, every point valid
    # here): step 2 against step 1 evaluates both, step 3 against step 2 only step 3
    q, steps, _ = CHAINS[0]
    runs: list[int] = []
    real = numeric.value_at

    def counted(program, point):
        runs.append(1)
        return real(program, point)

    monkeypatch.setattr(numeric, "value_at", counted)
    memo = Memo()
    symbols = _symbols(q)
    check_step(steps[1], steps[0], symbols, memo)
    first = len(runs)
    check_step(steps[2], steps[1], symbols, memo)
    second = len(runs) - first
    check_step(steps[2], steps[1], symbols, memo)
    assert (first, second, len(runs) - first - second) == (
        2 * numeric.N_POINTS,
        numeric.N_POINTS,
        0,
    )
    runs.clear()
    check_step(steps[2], steps[1], symbols, None)  # without a memo: both sides again
    assert len(runs) == 2 * numeric.N_POINTS


def test_the_memo_keeps_the_most_recent_and_forgets_what_raised() -> None:
    memo = Memo(size=2)
    computed: list[str] = []

    def make(key: str):
        def compute() -> str:
            computed.append(key)
            return key.upper()

        return compute

    assert [memo.get(k, make(k)) for k in ("a", "b", "a", "c", "a", "b")] == list("ABACAB")
    assert computed == ["a", "b", "c", "b"]  # "b" left when "c" came (least recent), not "a"
    assert len(memo) == 2

    def fails() -> str:
        raise ValueError("no")

    with pytest.raises(ValueError):
        memo.get("d", fails)
    assert memo.get("d", make("d")) == "D"  # the failure was not remembered
    memo.clear()
    assert len(memo) == 0


def test_the_worker_empties_its_memo_when_told_to_forget() -> None:
    memo = Memo()
    request = {"mode": "step", "answer": CHAINS[0][1][1], "expected": CHAINS[0][1][0],
               "symbols": _symbols(A1)}  # fmt: skip
    first = checker_module._reply(request, memo)
    kept = len(memo)
    assert kept > 0 and first["equivalent"] is True
    assert checker_module._reply(request, memo) == first and len(memo) == kept
    again = checker_module._reply({**request, "forget": True}, memo)
    assert again == first and len(memo) == kept  # emptied, then filled by this check alone
    other = {"answer": "x + x", "expected": "2 x", "symbols": ["x"]}
    checker_module._reply(other, memo)
    assert len(memo) > kept
    checker_module._reply({**other, "forget": True}, memo)
    assert len(memo) < kept  # only the small check's entries are left


class _Recorder:
    """The checker's pipe to its worker, with every request line kept."""

    def __init__(self, pipe):
        self.pipe, self.lines = pipe, []

    def write(self, data: bytes) -> int:
        self.lines.append(json.loads(data))
        return self.pipe.write(data)

    def flush(self) -> None:
        self.pipe.flush()

    def close(self) -> None:
        self.pipe.close()


def test_forget_is_sent_once_with_the_next_request() -> None:
    with ExprChecker() as checker:
        assert checker.check("x + x", "2 x", ["x"]).equivalent
        assert checker._proc is not None
        recorder = _Recorder(checker._proc.stdin)
        checker._proc.stdin = recorder  # type: ignore[assignment]
        checker.forget()
        assert checker.check("x + x", "2 x", ["x"]).equivalent
        assert checker.check("x x", "x^2", ["x"]).equivalent
        assert [line.get("forget") for line in recorder.lines] == [True, None]


def test_a_grade_tells_the_checker_a_new_submission_begins(tmp_path: Path) -> None:
    # two submissions through one checker, as a batch grades them: each written part starts
    # with a forget, so the second student's checks find nothing of the first's
    from grader.course import registry
    from grader.course.content import solution_dir
    from grader.engine.grade import grade_submission

    assignment = registry.load(registry.resolve_id("a1"))
    calls: list[str] = []
    with ExprChecker() as checker:
        real = checker.forget

        def forget() -> None:
            calls.append("forget")
            real()

        checker.forget = forget  # type: ignore[method-assign]
        (tmp_path / "s").mkdir()  # the written answers alone: the code part finds no file
        shutil.copy(solution_dir(assignment.id) / "answers.toml", tmp_path / "s")
        for student in ("one@uni.edu", "two@uni.edu"):
            grade_submission(tmp_path / "s", assignment, student=student, checker=checker)
    assert calls == ["forget", "forget"]


# ----------------------------------------------- exp's range check, read from the raw parts

_LIMIT = numeric.EXP_LIMIT


def _exp_arg_by_comparison(z) -> bool:
    """The range check for exp(z) by plain comparisons of numbers (what the parts replace)."""
    re_part = z.real if isinstance(z, mpc) else z
    im_part = z.imag if isinstance(z, mpc) else mpf(0)
    if abs(im_part) > numeric.TRIG_LIMIT:
        raise numeric.Undefined
    if re_part > _LIMIT:
        raise numeric.Undefined
    return bool(re_part >= -_LIMIT)


_VALUES = [0, 1, -1, 0.5, 1e-300, -1e-300, 65535, 65535.999999, 65536, 65536.0000001, 65537,
           -65535.999999, -65536, -65536.0000001, 131072, -131072, 1e30, -1e30, 3.25, -7.5,
           float("inf"), float("-inf"), float("nan")]  # fmt: skip


@pytest.mark.parametrize("x", _VALUES)
def test_the_range_check_of_exp_reads_its_parts_as_the_comparisons_decide(x: float) -> None:
    with mpmath.workdps(numeric.DIGITS):
        for z in (mpf(x), mpf(x) * (1 + mpf(10) ** -25), mpc(x, 0.5), mpc(x, 2.0**41)):
            try:
                want = _exp_arg_by_comparison(z)
            except numeric.Undefined:
                with pytest.raises(numeric.Undefined):
                    numeric._exp_arg(z)
                continue
            assert numeric._exp_arg(z) is want, z
