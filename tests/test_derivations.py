"""Derivations checked step by step: one test set per derivation question of a1-a4.

Each set holds correct chains in several notations (plain, LaTeX, a TOML array, with and
without the defined names), each classic broken step named at the step where it happens, a
right result reached through one broken step (scored the question's share), and hostile
chains. The correct steps are the notes' derivations; sympy differentiates each question's
defining function independently to confirm the keys the tests rely on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import sympy

from grader.app.expr_equal import expr_equal_cli
from grader.suites import a1_word_vectors, a2_rnn_bptt, a3_gated_seq2seq, a4_transformer
from grader.written.answers import parse_answers
from grader.written.expr.checker import ExprChecker
from grader.written.grading import WrittenResult, grade_written
from grader.written.question import option

A1 = a1_word_vectors.ASSIGNMENT.question("a1.w_skipgram_grad")
A2 = a2_rnn_bptt.ASSIGNMENT.question("a2.w_bptt_factor")
A3 = a3_gated_seq2seq.ASSIGNMENT.question("a3.w_lstm_carry")
A4 = a4_transformer.ASSIGNMENT.question("a4.w_softmax_derivation")
TQ = "'" * 3


@pytest.fixture(scope="module")
def checker() -> Iterator[ExprChecker]:
    with ExprChecker() as j:
        yield j


def grade(q, toml_value: str, checker: ExprChecker) -> WrittenResult:
    return grade_written(q, parse_answers(f"{q.key} = {toml_value}\n"), {}, checker)


def array(*steps: str) -> str:
    return json.dumps(list(steps), ensure_ascii=False)


# ------------------------------------------------- the keys, against sympy's derivatives


def test_the_keys_are_the_derivatives_sympy_takes() -> None:
    ua, ub, uc, v = sympy.symbols("u_a u_b u_c v_c", real=True)
    S = sympy.exp(ua * v) + sympy.exp(ub * v) + sympy.exp(uc * v)
    p = {w: sympy.exp(u * v) / S for w, u in zip("abc", (ua, ub, uc))}
    J = -sympy.log(p["a"])
    assert sympy.simplify(sympy.diff(J, v) - (-ua + p["a"] * ua + p["b"] * ub + p["c"] * uc)) == 0

    w_h, w_x, x, b, h_prev = sympy.symbols("w_h w_x x_t b h_prev", real=True)
    h_t = sympy.tanh(w_h * h_prev + w_x * x + b)
    assert sympy.simplify(sympy.diff(h_t, h_prev) - w_h * (1 - h_t**2)) == 0

    f, i, g, c = sympy.symbols("f_t i_t g_t c_prev", real=True)
    assert sympy.diff(f * c + i * g, c) == f

    sa, sb, sc = sympy.symbols("s_a s_b s_c", real=True)
    Z = sympy.exp(sa) + sympy.exp(sb) + sympy.exp(sc)
    assert (
        sympy.simplify(sympy.diff(sympy.exp(sa) / Z, sb) + sympy.exp(sa) * sympy.exp(sb) / Z**2)
        == 0
    )


def test_every_derivation_question_accepts_steps() -> None:
    for q in (A1, A2, A3, A4):
        assert option(q, "steps") is True and q.answer_kind == "expression"
        assert option(q, "step_share") == 0.5


# ------------------------------------------------------------------ correct chains

SOFTMAX_SUM = "exp(u_a v_c) + exp(u_b v_c) + exp(u_c v_c)"
CORRECT = {
    "a1": (
        A1,
        [
            array(
                "J = -log(p_a)",
                "d/dv_c J",
                f"-u_a + (u_a exp(u_a v_c) + u_b exp(u_b v_c) + u_c exp(u_c v_c))/({SOFTMAX_SUM})",
                "-u_a + p_a u_a + p_b u_b + p_c u_c",
            ),
            f'"dJ/dv_c = d/dv_c (-u_a v_c + log({SOFTMAX_SUM})) = (p_a - 1) u_a + p_b u_b + p_c u_c"',
            TQ
            + r"$\frac{\partial J}{\partial v_c} = \frac{\partial}{\partial v_c} \left(-\log p_a\right)"
            r" = -u_a + p_a u_a + p_b u_b + p_c u_c$" + TQ,
            '"-u_a + p_a u_a + p_b u_b + p_c u_c"',
        ],
    ),
    "a2": (
        A2,
        [
            array("d/dh_prev tanh(w_h h_prev + w_x x_t + b)", "tanh'(z_t) w_h", "w_h (1 - h_t^2)"),
            '"dh_t/dh_prev = d/dh_prev h_t = (1 - tanh(z_t)^2) w_h = w_h (1 - h_t^2)"',
            TQ + r"$\frac{\partial h_t}{\partial h_{t-1}} = \frac{\partial}{\partial h_{prev}}"
            r" \tanh(z_t) = \tanh'(z_t) w_h = w_h (1 - \tanh^2(w_h h_{prev} + w_x x_t + b))$" + TQ,
            '"w_h - w_h h_t^2"',
        ],
    ),
    "a3": (
        A3,
        [
            '"dc_t/dc_prev = d/dc_prev (f_t c_prev + i_t g_t) = f_t"',
            array("d/dc_prev c_t", "f_t + 0 i_t g_t", "f_t"),
            TQ + r"$\frac{\partial c_t}{\partial c_{t-1}} = \frac{\partial}{\partial c_{prev}}"
            r" \left(f_t c_{prev} + i_t g_t\right) = f_t$" + TQ,
            '"f_t"',
        ],
    ),
    "a4": (
        A4,
        [
            array("dp_a/ds_b = d/ds_b (exp(s_a)/S)", "-exp(s_a) exp(s_b)/S^2", "-p_a p_b"),
            '"d/ds_b (exp(s_a)/(exp(s_a) + exp(s_b) + exp(s_c))) = -exp(s_a + s_b)/S^2 = -p_a p_b"',
            TQ
            + r"$\frac{\partial p_a}{\partial s_b} = \frac{\partial}{\partial s_b} \frac{e^{s_a}}{S}"
            r" = -\frac{e^{s_a} e^{s_b}}{S^2} = -p_a p_b$" + TQ,
            array(
                "S = exp(s_a) + exp(s_b) + exp(s_c)", "p_a = exp(s_a)/S", "d/ds_b p_a", "-p_a p_b"
            ),
        ],
    ),
}


@pytest.mark.parametrize(
    ("which", "n"), [(k, n) for k in CORRECT for n in range(len(CORRECT[k][1]))]
)
def test_correct_chains_in_every_notation_score_full(
    checker: ExprChecker, which: str, n: int
) -> None:
    q, chains = CORRECT[which]
    r = grade(q, chains[n], checker)
    assert r.status == "correct", r.feedback
    assert r.score == q.points and r.passed
    assert "does not follow" not in r.feedback


def test_a_derivative_step_is_shown_as_written_never_its_result(checker: ExprChecker) -> None:
    r = grade(A2, array("d/dh_prev h_t", "w_h"), checker)
    assert "1. `d/dh_prev(h_t)`" in r.feedback
    assert "h_t^2" not in r.feedback and "tanh(z_t)^2" not in r.feedback
    r = grade(A2, array("tanh'(z_t) w_h", "w_h"), checker)
    assert "`tanh'(z_t) w_h`" in r.feedback and "tanh(z_t)^2" not in r.feedback


def test_the_last_step_must_write_the_result_out(checker: ExprChecker) -> None:
    r = grade(A2, array("d/dh_prev h_t", "tanh'(z_t) w_h"), checker)
    assert r.status == "wrong" and r.score == 0
    assert "still asks for a derivative" in r.feedback


# ------------------------------------------------------------------ broken steps

# (question, chain, the step that breaks, catalog id): each classic broken step of the notes
BROKEN = [
    (A1, array("d/dv_c (-log(p_a))", "-u_a + u_a exp(u_a v_c) + u_b exp(u_b v_c) + u_c exp(u_c v_c)"),
     2, "skipgram-grad-unnormalized"),
    (A1, array("d/dv_c (-log(p_a))", "-u_a + p_a u_a + p_b u_b + p_c u_c",
               "u_a - p_a u_a - p_b u_b - p_c u_c"), 3, "skipgram-grad-sign"),
    (A1, array("d/dv_c (-log(p_a))", "-u_a"), 2, "skipgram-grad-no-expectation"),
    (A2, array("d/dh_prev h_t", "tanh'(z_t) w_h", "(1 - tanh(z_t)) w_h"), 3,
     "bptt-tanh-prime-one-minus-tanh"),
    (A2, array("d/dh_prev h_t", "w_h h_t (1 - h_t)"), 2, "bptt-tanh-prime-sigmoid-form"),
    (A2, array("d/dh_prev h_t", "tanh'(z_t) w_h", "w_h (1 - z_t^2)"), 3,
     "bptt-derivative-of-preactivation"),
    (A2, '"dh_t/dh_prev = d/dh_prev h_t = 1 - h_t^2"', 2, "bptt-factor-missing-recurrent-weight"),
    (A2, array("d/dh_prev h_t", "w_h"), 2, "bptt-missing-tanh-derivative"),
    (A3, '"d/dc_prev (f_t c_prev + i_t g_t) = 1"', 2, "lstm-carry-identity"),
    (A3, array("d/dc_prev c_t", "f_t (1 - f_t)"), 2, "lstm-carry-gate-derivative"),
    (A4, array("d/ds_b (exp(s_a)/S)", "exp(s_a) exp(s_b)/S^2", "p_a p_b"), 2,
     "softmax-jacobian-sign"),
    (A4, array("d/ds_b p_a", "p_a (1 - p_b)"), 2, "softmax-jacobian-delta-misplaced"),
    (A4, array("d/ds_b (exp(s_a)/S)", "-exp(s_a) exp(s_b)/S"), 2,
     "softmax-jacobian-quotient-denominator"),
    (A4, array("d/ds_b p_a", "0"), 2, "softmax-jacobian-diagonal-only"),
]  # fmt: skip


@pytest.mark.parametrize(("q", "chain", "step", "mid"), BROKEN, ids=[b[3] for b in BROKEN])
def test_each_classic_broken_step_is_named_at_its_step(
    checker: ExprChecker, q, chain: str, step: int, mid: str
) -> None:
    r = grade(q, chain, checker)
    assert r.status == "wrong" and r.score == 0, r.feedback
    assert r.misconceptions == [mid]
    assert f"Step {step - 1} → {step} is not an equality" in r.feedback
    assert f"Step {step} matches a known mistake" in r.feedback
    assert f"{step}. " in r.feedback and "(does not follow)" in r.feedback


def test_the_hidden_state_differentiated_is_named_on_the_result(checker: ExprChecker) -> None:
    # every step follows, but the chain differentiates h_t instead of c_t from its first step
    r = grade(A3, array("d/dc_prev h_t", "o_t (1 - tanh(c_t)^2) f_t"), checker)
    assert r.status == "wrong" and r.misconceptions == ["lstm-carry-through-output"]
    assert "Every step follows from the one before" in r.feedback
    assert "the first step already differs" in r.feedback


def test_a_wrong_result_never_shows_the_expected_one(checker: ExprChecker) -> None:
    for q, chain, _, _ in BROKEN:
        key = str(q.expected({})).replace(" ", "")
        if key in chain.replace(" ", ""):
            continue  # the student wrote it as a step of their own
        r = grade(q, chain, checker)
        assert key not in r.feedback.replace(" ", "").replace("*", ""), (q.id, r.feedback)


# ------------------------------------------------------------------ scoring


@pytest.mark.parametrize(
    ("q", "chain"),
    [
        (A2, array("d/dh_prev h_t", "(1 - tanh(z_t)) w_h", "w_h (1 - h_t^2)")),
        (A4, array("d/ds_b (exp(s_a)/S)", "-exp(s_a) exp(s_b)/S", "-p_a p_b")),
        (A1, array("d/dv_c (-log(p_a))", "-u_a", "-u_a + p_a u_a + p_b u_b + p_c u_c")),
        (A3, '"d/dc_prev c_t = f_t c_prev = f_t"'),
    ],
)
def test_a_right_result_through_one_broken_step_earns_the_share(
    checker: ExprChecker, q, chain
) -> None:
    r = grade(q, chain, checker)
    assert r.status == "wrong" and not r.passed
    assert r.score == pytest.approx(q.points * 0.5)
    assert "**Right result, but a step does not follow.**" in r.feedback
    assert f"Score: 50% of the points ({q.points * 0.5:g} of {q.points:g})" in r.feedback


def test_an_unreadable_step_breaks_the_chain_and_is_named(checker: ExprChecker) -> None:
    r = grade(A4, array("d/ds_b p_a", "-p_a p_b +", "-p_a p_b"), checker)
    assert r.score == pytest.approx(1.0)
    assert "Step 2 (`-p_a p_b +`) could not be read" in r.feedback
    assert "3. `-p_a*p_b` (not checked)" in r.feedback


def test_a_wrong_definition_is_named(checker: ExprChecker) -> None:
    r = grade(A4, array("S = exp(s_a) + exp(s_b)", "d/ds_b p_a", "-p_a p_b"), checker)
    assert r.score == pytest.approx(1.0)
    assert "Step 1 defines S as `exp(s_a) + exp(s_b)`, which is not its definition" in r.feedback


def test_a_wrong_result_through_sound_steps_scores_nothing(checker: ExprChecker) -> None:
    r = grade(A2, array("w_h (1 - h_t)", "w_h - w_h h_t"), checker)
    assert r.status == "wrong" and r.score == 0


def test_hidden_derivations_say_only_right_or_wrong(checker: ExprChecker) -> None:
    import dataclasses

    hidden = dataclasses.replace(A2, visibility="hidden")
    r = grade(hidden, array("d/dh_prev h_t", "(1 - tanh(z_t)) w_h"), checker)
    assert r.feedback == "**Not correct.**"


# ------------------------------------------------------------------ hostile chains


def test_hundreds_of_steps_are_refused_before_any_check(checker: ExprChecker) -> None:
    start = time.monotonic()
    r = grade(A4, array(*(["-p_a p_b"] * 500)), checker)
    assert r.status == "unreadable" and "at most 30 steps" in r.feedback
    chained = grade(A4, '"' + " = ".join(["-p_a p_b"] * 500) + '"', checker)
    assert chained.status == "unreadable"
    assert time.monotonic() - start < 2.0


def test_a_huge_step_is_refused(checker: ExprChecker) -> None:
    r = grade(A4, array("d/ds_b p_a", "-p_a p_b" + " + 0" * 600), checker)
    assert r.status == "unreadable" and "too long" in r.feedback


def test_hostile_steps_cost_only_their_links(checker: ExprChecker) -> None:
    start = time.monotonic()
    nest = "(" * 200 + "s_a" + ")" * 200
    r = grade(A4, array("d/ds_b p_a", "9^9^9^9", nest, "d/ds_b d/ds_b p_a", "-p_a p_b"), checker)
    assert r.status == "wrong" and r.score == pytest.approx(1.0)
    assert "(could not be read)" in r.feedback
    assert time.monotonic() - start < 10.0


def test_non_string_steps_are_refused_with_the_form(checker: ExprChecker) -> None:
    r = grade(A3, '[["f_t"], "f_t"]', checker)
    assert r.status == "unreadable"
    assert "each step is an expression in quotes" in r.feedback


# ------------------------------------------------------------------ seqgrade expr-equal --steps


def test_expr_equal_steps_prints_each_step(capsys: pytest.CaptureFixture[str]) -> None:
    code = expr_equal_cli(
        [
            "--steps",
            "dh/dz = d/dz tanh(z) = 1 - tanh(z) = 1 - h",
            "1 - h^2",
            "--symbols",
            "z,h",
            "--define",
            "h = tanh(z)",
        ]  # fmt: skip
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["equivalent"] is False and out["first_problem"] == 2
    assert out["label"] == "dh/dz" and out["share"] == 0.0
    assert [s["state"] for s in out["steps"]] == ["first", "broken", "follows"]


def test_expr_equal_steps_takes_a_json_array(capsys: pytest.CaptureFixture[str]) -> None:
    code = expr_equal_cli(["--steps", '["d/dx (x^3 + x)", "3 x^2 + 1"]', "3x^2 + 1"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["equivalent"] is True and out["share"] == 1.0
    assert expr_equal_cli(["--steps", "[broken", "x"]) == 2


def test_a_derivation_past_its_time_budget_stops_checking(
    checker: ExprChecker, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grader.written import derivation

    monkeypatch.setattr(derivation, "CHAIN_SECONDS", 0.0)
    r = grade(A4, array("d/ds_b p_a", "-p_a p_b"), checker)
    assert r.score == 0 and "Checking stopped before the end of your derivation" in r.feedback


def test_a_fresh_worker_loads_sympy_outside_the_step_limit() -> None:
    # importing sympy alone can take longer than a step's limit on a loaded machine
    with ExprChecker(timeout=1.0) as fresh:
        v = fresh.check_step("d/dz tanh(z)", None, ["z"])
        assert v.error is None and v.interpreted == "d/dz(tanh(z))"
        assert fresh.check_step("1 - tanh(z)^2", "d/dz tanh(z)", ["z"]).equivalent


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ('"d/ds_b p_a = = -p_a p_b"', "is empty (two `=` in a row"),
        ("true", "expected a derivation: steps joined by `=` in one string"),
        ('["S = exp(s_a) + exp(s_b) + exp(s_c)"]', "the derivation has no step to grade"),
    ],
)
def test_a_derivation_refusal_teaches_the_form(checker: ExprChecker, typed: str, says: str) -> None:
    r = grade(A4, typed, checker)
    assert r.status == "unreadable" and says in r.feedback
    assert "or a derivation: steps joined by `=` in one string, or a TOML array of steps" in (
        r.feedback
    )
    assert "p_a p_b" not in r.feedback.split("This question asks")[1]  # the example is no answer
