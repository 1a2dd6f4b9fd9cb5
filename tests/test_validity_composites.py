"""Mistakes charged once and named where they are made: two deviations of one function named
together, composites that call an earlier function without a declared dependency, a helper's
mistake named at the helper, NaN everywhere naming nothing.

Each submission is the course solution with a planted edit. Expected values come from outside
the engine: numpy's own `std(ddof=1)` and the notes' LayerNorm for the Annotated Transformer's
variant, the notes' GloVe weighting (capped at 1) for the uncapped one.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from conftest import ROOT

from grader.engine.combos import combine, together
from grader.mutants import Forms

pytestmark = pytest.mark.usefixtures("trusted_outputs_kept")

A1 = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text()
A4 = (ROOT / "solutions" / "a4_transformer" / "transformer.py").read_text()

LN_RIGHT = "return gamma * (x - mu) / np.sqrt(var + eps) + beta"
LN_UNBIASED = (
    "return gamma * (x - mu) / np.sqrt(x.var(axis=-1, ddof=1, keepdims=True) + eps) + beta"
)
LN_EPS_OUTSIDE = "return gamma * (x - mu) / (np.sqrt(var) + eps) + beta"
# The Annotated Transformer's LayerNorm: a * (x - mean) / (x.std(-1, keepdim=True) + eps) + b,
# torch's std being the unbiased one
LN_ANNOTATED = "return gamma * (x - mu) / (x.std(axis=-1, ddof=1, keepdims=True) + eps) + beta"
LN_QUESTIONS = ("a4.layer_norm", "a4.encoder_block", "a4.decoder_block")


def _planted(src: str, old: str, new: str) -> str:
    out = src.replace(old, new, 1)
    assert out != src, old
    return out


def _by_id(report) -> dict:
    return {q.question_id: q for q in report.questions}


def test_the_annotated_transformer_layernorm_differs_from_the_notes():
    """The control the naming below rests on: numpy's unbiased std plus eps is not LN."""
    x = np.array([[1.0, 0.0, -1.0, 2.0]])
    notes = (x - x.mean()) / np.sqrt(x.var() + 1e-5)
    annotated = (x - x.mean()) / (x.std(ddof=1) + 1e-5)
    assert not np.allclose(notes, annotated, rtol=1e-4)


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (LN_UNBIASED, ["layernorm-unbiased-variance"]),
        (LN_EPS_OUTSIDE, ["layernorm-eps-outside-sqrt"]),
        (LN_ANNOTATED, ["layernorm-unbiased-variance", "layernorm-eps-outside-sqrt"]),
    ],
)
def test_each_layernorm_deviation_alone_and_together(grade_files, edit, named):
    src = _planted(A4, LN_RIGHT, edit)
    r = _by_id(grade_files("a4", {"transformer.py": src}, questions=LN_QUESTIONS))
    ln = r["a4.layer_norm"]
    assert ln.score < ln.max_score and sorted(ln.misconceptions) == sorted(named), ln.feedback
    for qid in ("a4.encoder_block", "a4.decoder_block"):
        block = r[qid]  # the same helper, the same words: carried, not charged again
        assert block.score == block.max_score, block.feedback
        assert block.misconceptions == [], block.feedback
        assert {c["misconception"] for c in block.carried} <= set(named)
        assert block.carried and all(c["from"] == "a4.layer_norm" for c in block.carried)


def test_the_right_layernorm_is_unaffected(grade_files):
    r = _by_id(grade_files("a4", {"transformer.py": A4}, questions=LN_QUESTIONS))
    assert all(q.score == q.max_score and not q.misconceptions for q in r.values())


def test_a_composite_calling_an_undeclared_earlier_function_is_not_charged_again(grade_files):
    """glove_loss declares no dependency; the student's calls their own glove_weight."""
    src = _planted(
        A1, "return np.minimum((X / x_max) ** alpha, 1.0)", "return (X / x_max) ** alpha"
    )
    r = _by_id(
        grade_files("a1", {"word_vectors.py": src}, questions=("a1.glove_weight", "a1.glove_loss"))
    )
    assert r["a1.glove_weight"].misconceptions == ["glove-weight-uncapped"]
    loss = r["a1.glove_loss"]
    assert loss.score == loss.max_score and loss.carried_points == loss.max_score, loss.feedback
    assert loss.carried == [{"from": "a1.glove_weight", "misconception": "glove-weight-uncapped"}]
    assert "Follow-through" in loss.feedback and "glove_weight" in loss.feedback


def test_an_inlined_uncapped_weight_is_the_composite_s_own_mistake(grade_files):
    """Control: the same mistake written inside glove_loss (its glove_weight right) is charged
    in glove_loss, since the student's loss does not call the weighting function."""
    old = "return float(np.sum(glove_weight(X[pos], x_max, alpha) * r**2))"
    src = _planted(A1, old, "return float(np.sum((X[pos] / x_max) ** alpha * r**2))")
    r = _by_id(
        grade_files("a1", {"word_vectors.py": src}, questions=("a1.glove_weight", "a1.glove_loss"))
    )
    assert r["a1.glove_weight"].score == r["a1.glove_weight"].max_score
    loss = r["a1.glove_loss"]
    assert loss.score < loss.max_score and loss.carried == []
    assert loss.misconceptions == ["glove-weight-uncapped"], loss.feedback


def test_a_helper_s_unnamed_mistake_is_not_named_as_the_caller_s(grade_files):
    """A softmax with floor division: no catalogued mistake. The skip-gram gradient that calls
    it is judged with the reference's softmax in its place: its own logic is right, so it keeps
    its points by follow-through, and no mistake of the skip-gram's own is named for it."""
    src = _planted(
        A1,
        "return e / np.sum(e, axis=axis, keepdims=True)",
        "return e // np.sum(e, axis=axis, keepdims=True)",
    )
    r = _by_id(
        grade_files("a1", {"word_vectors.py": src}, questions=("a1.softmax", "a1.naive_softmax"))
    )
    soft, loss = r["a1.softmax"], r["a1.naive_softmax"]
    assert soft.score < soft.max_score and soft.misconceptions == []
    assert loss.misconceptions == [], loss.feedback
    assert loss.score == loss.max_score and loss.carried_points == loss.max_score, loss.feedback
    assert "judged with the reference's `softmax` in place of yours" in loss.feedback
    assert "(question 1); not charged again here" in loss.feedback


def test_a_nan_producing_slip_names_nothing(grade_files):
    """`W_E[ids] ** P`: a negative base to a fractional power, NaN everywhere after the first
    block; that NaN is no evidence of any catalogued mistake."""
    old = 'x = W_E[ids] + np.asarray(params["P"], dtype=np.float64)[: len(ids)]'
    src = _planted(A4, old, old.replace("W_E[ids] +", "W_E[ids] **"))
    for key in ("s1", "bob@x.org"):
        (gpt,) = grade_files(
            "a4", {"transformer.py": src}, questions=("a4.gpt_forward",), student=key
        ).questions
        assert gpt.score == 0 and gpt.misconceptions == [], gpt.feedback


# ---------------------------------------------------------------- combining mutants


def _ln(x, gamma, beta, eps=1e-5, *, variance="pop", outside=False):
    x = np.asarray(x, dtype=np.float64)
    var = x.var(-1, keepdims=True, ddof=1 if variance == "unbiased" else 0)
    return (
        gamma
        * (x - x.mean(-1, keepdims=True))
        / ((np.sqrt(var) + eps) if outside else np.sqrt(var + eps))
        + beta
    )


def _maker(**hooks):
    return lambda x, gamma, beta, eps=1e-5, **kw: _ln(x, gamma, beta, eps, **hooks, **kw)


def test_mutants_from_one_maker_combine_like_partials():
    x = np.random.default_rng(0).normal(size=(3, 5))
    g, b = np.ones(5), np.zeros(5)
    want = g * (x - x.mean(-1, keepdims=True)) / (x.std(-1, ddof=1, keepdims=True) + 1e-5) + b
    for a, c in (
        (_maker(variance="unbiased"), _maker(outside=True)),
        (partial(_ln, variance="unbiased"), partial(_ln, outside=True)),
    ):
        both = combine(a, c)
        assert both is not None and np.allclose(both(x, g, b), want)
    assert combine(_maker(variance="unbiased"), partial(_ln, outside=True)) is None  # two makers
    pairs = together({"u": _maker(variance="unbiased"), "o": _maker(outside=True)}, 2)
    assert list(pairs) == [("u", "o")]


def test_a_form_that_does_not_apply_is_skipped_and_a_bug_is_not():
    def no_axis(x):
        return np.asarray(x).sum(axis=3)  # numpy's AxisError: this form does not apply

    def bug(x):
        return {}["missing"]  # KeyError: a bug of ours, not "does not apply"

    assert Forms(no_axis, lambda x: x + 1)(np.zeros(2)).tolist() == [1.0, 1.0]
    with pytest.raises(KeyError):
        Forms(bug, lambda x: x)(np.zeros(2))


def test_each_form_runs_on_arguments_no_other_form_wrote_into() -> None:
    # the copies stand in for copy.deepcopy: arrays copied, aliases kept aliases (tied weights),
    # a generator's state copied (every form draws the same numbers), the caller's left as given
    import copy

    W = np.arange(4.0).reshape(2, 2)
    params = {"W_E": W, "W_U": W, "blocks": [{"W_Q": np.ones(2)}] * 2}
    seen = []

    def writes(p, rng):
        seen.append((p["W_E"] is p["W_U"], p["blocks"][0] is p["blocks"][1], rng.random()))
        p["W_E"] += 100.0
        p["blocks"][0]["W_Q"][:] = -1.0
        return p["W_U"].sum()

    rng = np.random.default_rng(7)
    out = Forms(writes, writes)(params, rng)
    first = copy.deepcopy(rng).random()
    assert out.options == (406.0, 406.0)  # each form saw W_E and W_U as one array, from 0..3
    assert seen == [(True, True, first), (True, True, first)]
    assert W.tolist() == [[0.0, 1.0], [2.0, 3.0]] and params["blocks"][0]["W_Q"].tolist() == [1, 1]
    assert rng.random() == first  # the caller's generator was not drawn from


A6 = (ROOT / "solutions" / "a6_pretraining_scale" / "pretraining.py").read_text()


@pytest.mark.parametrize(
    "edit, named",
    [
        ("return n_in * n_out + (0 if biases else n_out)", []),  # the flag read the wrong way
        ("return n_in * n_out", ["params-missing-biases"]),  # control: biases always dropped
    ],
)
def test_a_flag_read_the_wrong_way_is_not_named_as_the_mistake_it_matches_on_some_cases(
    grade_files, edit, named
):
    """`biases` read the wrong way round: on models with biases it matches the catalogued
    `params-missing-biases`, on models without them it adds biases, which that mistake does
    not compute (there it predicts the right count). A name must reproduce every failed case
    with a value: this one names nothing; biases always dropped is named."""
    src = _planted(A6, "return n_in * n_out + (n_out if biases else 0)", edit)
    (r,) = grade_files(
        "a6", {"pretraining.py": src}, questions=("a6.transformer_parameter_count",)
    ).questions
    assert r.score < r.max_score
    assert r.misconceptions == named, r.feedback
