"""Feedback a student can act on (issue 18): labelled hidden cases, precise diagnoses, the
terminal table's reasons and rounded scores.

The texts asserted here are the ones a student reads; where a figure is asserted it comes from
the handout or the points of the question (never from the code under test).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from grader import catalog
from grader.course.registry import ASSIGNMENT_IDS, load
from grader.engine.grade import grade_submission
from grader.questions import CodeQuestion
from grader.records import CaseRecord, CaseSummary, Category, GradeReport, QuestionResult
from grader.reports import render
from grader.written.answers import parse_answers
from grader.written.expr.checker import ExprChecker
from grader.written.grading import grade_written

# ---------------------------------------------------------------- 1. every hidden case has a label

# A numbering prefix ("hidden case 2", "hidden corpus 1", "long stream 3") says nothing by itself.
_NUMBERING = re.compile(r"^(hidden\s+)?([\w-]+\s+){0,2}?\d+\s*[:,]?\s*")


def _description(name: str) -> str:
    """What a case name says beyond its numbering: "hidden case 2: h0 given" -> "h0 given"."""
    return _NUMBERING.sub("", name, count=1).strip(" :,()")


@pytest.mark.parametrize("aid", ASSIGNMENT_IDS)
def test_every_hidden_case_names_what_it_exercises(aid: str) -> None:
    unlabelled, repeated = [], []
    for q in load(aid).questions:
        if not isinstance(q, CodeQuestion):
            continue
        for seed in (0, 1, 7, 12345):
            names = [c.name for c in q.cases(seed) if not c.visible]
            for name in names:
                rest = _description(name)
                # a description holds words (sizes alone such as "(3, 5)" do not say what is tested)
                if not re.search(r"[A-Za-z_]", rest):
                    unlabelled.append(f"{q.id} (seed {seed}): {name!r}")
            if len(set(names)) != len(names):
                repeated.append(f"{q.id} (seed {seed}): {names}")
    assert not unlabelled, "hidden cases without a label:\n" + "\n".join(unlabelled)
    assert not repeated, "hidden cases of one question with the same label:\n" + "\n".join(repeated)


def _arrays(value) -> list[np.ndarray]:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _arrays(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in _arrays(v)]
    return []


@pytest.mark.parametrize("aid", ASSIGNMENT_IDS)
def test_no_hidden_label_shows_an_input_value(aid: str) -> None:
    """A decimal number in a label (an eps or a p the case sets) is never one of the case's
    random input entries."""
    leaks = []
    for q in load(aid).questions:
        if not isinstance(q, CodeQuestion):
            continue
        for case in (c for c in q.cases(3) if not c.visible):
            settings = {float(v) for v in case.kwargs.values() if isinstance(v, (int, float))}
            shown = {float(x) for x in re.findall(r"\d+\.\d+", case.name)} - settings
            floats = [a for a in _arrays((case.args, dict(case.kwargs))) if a.dtype.kind == "f"]
            entries = {round(abs(float(v)), 2) for a in floats for v in a.ravel() if v != round(v)}
            leaks += [f"{q.id}: {case.name!r} shows {x}" for x in shown if round(x, 2) in entries]
    assert not leaks, leaks


def test_the_label_check_rejects_a_bare_number() -> None:
    assert _description("hidden case 2") == ""
    assert _description("hidden corpus 3") == ""
    assert _description("hidden case 1: (3, 5)") == "3, 5"
    assert _description("hidden case 2: T=5, D=4, H=3, h0 given") == "T=5, D=4, H=3, h0 given"
    assert _description("long stream 1: N = 20000 tokens") == "N = 20000 tokens"


# ---------------------------------------------------------------- student-style submissions

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


def _submission(
    tmp_path: Path,
    aid: str,
    code_patches: dict[str, str] = {},  # noqa: B006
    answers: dict[str, str] = {},  # noqa: B006
) -> Path:
    """The instructor's solution with a student's mistakes patched in (each patch must apply)."""
    folder = tmp_path / aid
    folder.mkdir()
    for src in (SOLUTIONS / aid).iterdir():
        if src.suffix not in (".py", ".toml") or src.name == "answer_key.py":
            continue
        text = src.read_text()
        for old, new in (code_patches if src.suffix == ".py" else {}).items():
            assert old in text, old
            text = text.replace(old, new)
        if src.suffix == ".toml":
            for key, line in answers.items():
                text = re.sub(rf"(?m)^{key}\s*=.*$", lambda _m, line=line: line, text)
        (folder / src.name).write_text(text)
    return folder


def _grade(folder: Path, aid: str):
    return grade_submission(folder, load(aid))


def _by_function(report) -> dict[str, object]:
    return {q.function or q.question_id: q for q in report.questions}


# ---------------------------------------------------------------- 2. diagnoses: the decoder's shared parts

_LN_DOWN_TOKENS = {
    "    mu = x.mean(axis=-1, keepdims=True)\n    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)": "    mu = x.mean(axis=-2, keepdims=True)\n    var = ((x - mu) ** 2).mean(axis=-2, keepdims=True)",
}
_SOFTMAX_DOWN_COLUMNS = {
    "    x = x - np.max(x, axis=-1, keepdims=True)\n    e = np.exp(x)\n    return e / np.sum(e, axis=-1, keepdims=True)": "    x = x - np.max(x, axis=-2, keepdims=True)\n    e = np.exp(x)\n    return e / np.sum(e, axis=-2, keepdims=True)",
}
_MASK_TRUE_MEANS_HIDDEN = {
    """        mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
        scores = np.where(mask, scores, -np.inf)
        # a row with no allowed key would be NaN: give it zero weights instead
        empty = ~np.any(mask, axis=-1, keepdims=True)
        scores = np.where(empty, 0.0, scores)
    weights = _softmax(scores)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)""": """        scores = np.where(mask, -np.inf, scores)  # True = hidden (the wrong way round)
    weights = _softmax(scores)""",
}


@pytest.mark.parametrize(
    ("patches", "mid"),
    [
        (_LN_DOWN_TOKENS, "layernorm-wrong-axis"),
        (_SOFTMAX_DOWN_COLUMNS, "softmax-wrong-axis"),
        (_MASK_TRUE_MEANS_HIDDEN, "mask-inverted"),
    ],
    ids=["layernorm-axis", "softmax-axis", "mask-polarity"],
)
def test_the_decoder_block_names_a_mistake_of_a_shared_part(
    tmp_path: Path, patches, mid: str
) -> None:
    """With follow-through off, the blocks name the shared part's mistake as the encoder does;
    with it on (the default), they carry it from where it was charged and keep their points."""
    folder = _submission(tmp_path, "a4_transformer", patches)
    no_ft = dataclasses.replace(load("a4_transformer"), follow_through=0.0)
    q = _by_function(grade_submission(folder, no_ft))
    for function in ("encoder_block", "decoder_block"):
        assert q[function].score < q[function].max_score
        assert q[function].misconceptions == [mid], (function, q[function].feedback)
        assert f"(`{mid}`)" in q[function].feedback
    q = _by_function(_grade(folder, "a4_transformer"))
    for function in ("encoder_block", "decoder_block"):
        assert q[function].misconceptions == [], (function, q[function].feedback)
        assert [c["misconception"] for c in q[function].carried] == [mid]
        assert q[function].score == pytest.approx(q[function].max_score), q[function].feedback


def test_a_fully_masked_row_is_explained_as_such(tmp_path: Path) -> None:
    report = _grade(
        _submission(tmp_path, "a4_transformer", _MASK_TRUE_MEANS_HIDDEN), "a4_transformer"
    )
    sdpa = _by_function(report)["scaled_dot_product_attention"]
    assert sdpa.misconceptions == ["mask-inverted"]
    assert "every key of this query row is masked: the softmax of all −inf is NaN" in sdpa.feedback


# ---------------------------------------------------------------- 2. wordings that match the outputs


def test_missing_mean_in_the_gradients_only_says_the_loss_is_right() -> None:
    text = catalog.worded("ce-sum-not-mean", "bptt_sequence_ce", right=("loss",)).explanation
    assert text.startswith("Your loss is right")
    assert "gradients are T times too large" in text


def test_a_summed_loss_says_loss_and_gradients() -> None:
    text = catalog.worded("ce-sum-not-mean", "bptt_sequence_ce", right=()).explanation
    assert text.startswith("Your loss and your gradients are both T times too large")


def test_perplexity_has_its_own_wording() -> None:
    text = catalog.worded(
        "ce-sum-not-mean", "sequence_perplexity", right=("perplexity",)
    ).explanation
    assert "perplexity = exp(CE)" in text and "gradient" not in text


def test_padding_mask_polarity_has_its_own_wording() -> None:
    padding = catalog.worded("mask-inverted", "padding_mask").explanation
    attention = catalog.worded("mask-inverted", "scaled_dot_product_attention").explanation
    assert "True at the real tokens" in padding and "padding" in padding
    assert padding != attention and "attn_mask" in attention


def test_the_generic_wording_holds_without_a_place() -> None:
    m = catalog.get("ce-sum-not-mean")
    assert catalog.worded("ce-sum-not-mean").explanation == m.explanation
    assert "loss is right" not in m.explanation  # never claims what it cannot know


# ---------------------------------------------------------------- 6, 7. the terminal table


def _result(
    number: str, title: str, score: float, max_score: float, lead: str = "", **kw
) -> QuestionResult:
    return QuestionResult(
        question_id=f"q{number}",
        title=title,
        number=number,
        kind="code",
        function="f",
        score=score,
        max_score=max_score,
        lead=lead,
        visibility="visible",
        **kw,
    )


def test_points_show_what_the_points_allow() -> None:
    assert render.points(8 / 6) == "1.33"
    assert render.points(16.333333) == "16.33"
    assert render.points(8) == "8" and render.points(0.5) == "0.5" and render.points(-0.0) == "0"


def test_titles_are_shortened_at_a_word_boundary() -> None:
    title = "Multi-head cross-attention over the encoder memory with padding"
    short = render.shorten(title, 30)
    assert len(short) <= 30 and short.endswith("…")
    assert title.startswith(short[:-1]) and title[len(short) - 1] == " "  # cut before a space


def test_the_table_says_why_points_were_lost_and_how_to_see_everything() -> None:
    differ = CaseSummary(
        label="hidden case 2: T=5, D=4, H=3, h0 given",
        category=Category.VALUES,
        outputs=(("Hs", Category.VALUES),),
    )
    report = GradeReport(
        assignment_id="a2_rnn_bptt",
        student="alice",
        seed=1,
        questions=[
            _result(
                "1",
                "Forward pass",
                8 / 6,
                8,
                cases=[
                    CaseRecord(
                        visible=True, summary=CaseSummary(label="slides", category=Category.PASSED)
                    ),
                    CaseRecord(visible=False, summary=differ),
                ],
            ),
            _result("2", "A function left as the stub", 0, 4, "Not attempted.", not_attempted=True),
            _result("3", "BPTT", 5, 10, "…", misconceptions=["bptt-derivative-of-preactivation"]),
            _result("4", "Clipping", 10, 10, "all passed"),
        ],
        execution_time=1.0,
        isolated=True,
    )
    text = render.table(report)
    assert "1.33/8" in text and "total 16.33 / 32" in text
    assert "1.3333" not in text
    lost = text.split("where points were lost:")[1]
    assert "1. Forward pass: hidden case 2: T=5, D=4, H=3, h0 given: Hs: values differ" in lost
    assert "2. A function left as the stub: not attempted" in lost
    assert "3. BPTT: diagnosis: 1 - z^2 instead of 1 - h^2" in lost
    assert "Clipping" not in lost
    assert text.rstrip().endswith(
        "seqgrade grade SUBMISSION -a a2_rnn_bptt --student alice --format md"
    )
    md = render.markdown(report)
    assert "# a2_rnn_bptt: 16.33 / 32" in md and "— 1.33/8" in md


_GRADIENTS_NOT_AVERAGED = {"    g_a /= T  # divide by T once, at the loss derivative\n": ""}


def test_a_student_missing_1_over_T_in_the_gradients_sees_it_in_the_table(tmp_path: Path) -> None:
    report = _grade(_submission(tmp_path, "a2_rnn_bptt", _GRADIENTS_NOT_AVERAGED), "a2_rnn_bptt")
    ce = _by_function(report)["bptt_sequence_ce"]
    assert ce.misconceptions == ["ce-sum-not-mean"]
    assert "`loss`" not in ce.feedback  # the loss is right: no line says it differs
    text = render.table(report)
    assert f"{ce.number}. " in text.split("where points were lost:")[1]
    assert "cross-entropy summed over positions, not averaged" in text


# ---------------------------------------------------------------- 3. answers as students write them

# answers.toml lines as a student types them: in a "…" basic string TOML reads `\t` as a TAB
_TANH_ANSWERS = """\
relation = "1 - tanh(z)^2"
latex_power = "$1 - \\tanh^2(z)$"
latex_power_literal = '$1 - \\tanh^2(z)$'
no_dollars = "1 - \\tanh(z)^2"
preactivation = "1 - z^2"
"""


@pytest.fixture(scope="module")
def checker():
    with ExprChecker() as j:
        yield j


def _tanh_question(key: str):
    q = load("a2_rnn_bptt").question("a2.w_tanh_derivative")
    return dataclasses.replace(q, key=key)


@pytest.mark.parametrize("key", ["relation", "latex_power", "latex_power_literal"])
def test_right_answers_in_the_forms_students_write_them(checker, key: str) -> None:
    r = grade_written(_tanh_question(key), parse_answers(_TANH_ANSWERS), {}, checker)
    assert r.passed and r.score == r.max_score, r.feedback
    assert "tanh(z)^2" in r.feedback  # how it was read


def test_a_tab_eaten_by_toml_says_so_and_suggests_a_literal_string(checker) -> None:
    r = grade_written(_tanh_question("no_dollars"), parse_answers(_TANH_ANSWERS), {}, checker)
    assert not r.passed
    assert "TAB" in r.feedback and "literal string in single quotes" in r.feedback


def test_the_relation_does_not_accept_the_preactivation(checker) -> None:
    r = grade_written(_tanh_question("preactivation"), parse_answers(_TANH_ANSWERS), {}, checker)
    assert not r.passed and r.misconceptions == ["bptt-derivative-of-preactivation"]
