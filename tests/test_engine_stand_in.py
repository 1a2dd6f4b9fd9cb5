"""Follow-through past a helper that raises, at the sandbox's level: a call may have some of the
submission's functions answered by the grader's trusted ones, and the grader answers nothing
else.

The trusted stand-ins here are the tests' own lambdas (2·x), so the expected values are by hand.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import FAST as LIMITS
from conftest import ROOT, only

from grader.course import registry
from grader.engine.grade import grade_submission
from grader.records import Category
from grader.sandbox.session import WorkerSession

FAST = LIMITS

SOURCE = """
import numpy as np

def helper(x):
    raise ValueError("my helper gives up")

def top(x):
    return helper(x) + 1.0

def keep(x):
    global SAVED
    SAVED = helper          # the stand-in itself, kept for later
    return helper(x)

def later(x):
    return SAVED(x)

def uses_absent(x):
    return never_written(x) + 1.0

def forge(x):
    # the stand-in's closure reaches the worker's own callback: ask for a function the
    # grader did not replace (an oracle for another question, if the grader answered it)
    tools = next(c.cell_contents for c in helper.__closure__ if isinstance(c.cell_contents, dict))
    return tools["ask"]("top", (x,), {}, False)
"""


@pytest.fixture
def session():
    s = WorkerSession({"mod.py": SOURCE.encode()}, "mod", limits=FAST)
    yield s
    s.close()


def _double(x):
    return 2.0 * np.asarray(x)


X = np.array([1.0, -2.0, 3.0])


def test_a_replaced_helper_is_answered_by_the_trusted_one_for_that_call_only(session):
    plain = session.call("top", (X,), {})
    assert plain.failure is not None and plain.failure.exception_type == "ValueError"
    replaced = session.call("top", (X,), {}, replace={"helper": _double})
    assert replaced.failure is None, replaced.failure
    np.testing.assert_allclose(replaced.value, 2.0 * X + 1.0)
    again = session.call("top", (X,), {})  # the student's own helper is back
    assert again.failure is not None and again.failure.exception_type == "ValueError"


def test_a_helper_the_file_lacks_is_answered_for_that_call_only(session):
    """A function left out with its syntax error, or never written: the stand-in is put in the
    module's names for the call, and taken out after it."""
    plain = session.call("uses_absent", (X,), {})
    assert plain.failure is not None and plain.failure.exception_type == "NameError"
    replaced = session.call("uses_absent", (X,), {}, replace={"never_written": _double})
    assert replaced.failure is None, replaced.failure
    np.testing.assert_allclose(replaced.value, 2.0 * X + 1.0)
    again = session.call("uses_absent", (X,), {})
    assert again.failure is not None and again.failure.exception_type == "NameError"


def test_a_trusted_function_that_refuses_its_arguments_raises_in_the_submission(session):
    out = session.call("top", (X,), {}, replace={"helper": lambda x, y: x})
    assert out.failure is not None and out.failure.exception_type == "RuntimeError"
    assert session.call("top", (X,), {}, replace={"helper": _double}).failure is None


def test_a_forged_callback_for_a_name_not_replaced_gets_nothing(session):
    out = session.call("forge", (X,), {}, replace={"helper": _double})
    assert out.failure is not None and out.failure.kind == "protocol", out.failure
    assert out.value is None
    ok = session.call("top", (X,), {}, replace={"helper": _double})  # restarted, still works
    assert ok.failure is None and np.allclose(ok.value, 2.0 * X + 1.0)


def test_a_kept_stand_in_answers_nothing_outside_its_call(session):
    first = session.call("keep", (X,), {}, replace={"helper": _double})
    assert first.failure is None and np.allclose(first.value, 2.0 * X)
    out = session.call("later", (X,), {})
    assert out.failure is not None and out.failure.kind == "protocol", out.failure
    assert out.value is None


# ---------------------------------------------------------------- a4: a LayerNorm that raises

A4 = (ROOT / "solutions" / "a4_transformer" / "transformer.py").read_text()
LN_VAR = "    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)\n"
LN_RAISES = '    if x.ndim > 2:\n        raise ValueError("one sequence at a time")\n' + LN_VAR
OWN_RESIDUAL = ("        return U + ffn(ln(U, 2))\n", "        return ffn(ln(U, 2))\n")
BLOCKS = ("a4.encoder_block", "a4.decoder_block")
QUESTIONS = ("a4.layer_norm", *BLOCKS)


def _planted(src: str, old: str, new: str) -> str:
    assert src.count(old) == 1, old
    return src.replace(old, new)


def _by_id(report) -> dict:
    return {q.question_id: q for q in report.questions}


def test_the_control_the_a4_tests_rest_on():
    """The planted LayerNorm raises on a batch (3-d) and is right on one sequence, by hand."""
    space: dict = {}
    exec(_planted(A4, LN_VAR, LN_RAISES), space)  # noqa: S102 - the course solution, edited
    x = np.array([[1.0, 0.0, -1.0, 2.0]])
    by_hand = (x - x.mean()) / np.sqrt(x.var() + 1e-5)
    np.testing.assert_allclose(space["layer_norm"](x, np.ones(4), np.zeros(4)), by_hand)
    with pytest.raises(ValueError):
        space["layer_norm"](x[None], np.ones(4), np.zeros(4))


def test_a_crashing_layernorm_is_charged_once_not_in_the_blocks(grade_files):
    src = _planted(A4, LN_VAR, LN_RAISES)
    r = _by_id(grade_files("a4", {"transformer.py": src}, questions=QUESTIONS))
    ln = r["a4.layer_norm"]
    assert ln.score < ln.max_score, ln.feedback
    for qid in BLOCKS:
        block = r[qid]
        assert block.score == pytest.approx(block.max_score), block.feedback
        assert 0 < block.carried_points <= block.max_score
        assert block.misconceptions == [], block.feedback
        assert (
            "judged with the reference's `layer_norm` in place of yours, which raised on these "
            "inputs (question 1); not charged again here"
        ) in block.feedback


LN_DEF = "def layer_norm(x, gamma, beta, eps=1e-5):\n"


@pytest.mark.parametrize(
    "how,missing",
    [
        ("syntax", "was left out of the file with its syntax error"),
        ("deleted", "is not in the file"),
    ],
)
def test_a_layernorm_the_file_lacks_is_charged_once_not_in_the_blocks(grade_files, how, missing):
    """Left out with its syntax error, or never written, as a stub that raises is: the blocks
    that call it are judged with the reference's in its place."""
    assert A4.count(LN_DEF) == 1
    if how == "syntax":
        src = _planted(A4, LN_VAR, LN_VAR.replace("keepdims=True)", "keepdims=True"))
    else:
        start = A4.index(LN_DEF)
        end = A4.index("\ndef ", start + 1) + 1
        src = A4[:start] + A4[end:]
    r = _by_id(grade_files("a4", {"transformer.py": src}, questions=QUESTIONS))
    assert r["a4.layer_norm"].score == 0, r["a4.layer_norm"].feedback
    for qid in BLOCKS:
        block = r[qid]
        assert block.score == pytest.approx(block.max_score), block.feedback
        assert block.misconceptions == [], block.feedback
        assert (
            f"judged with the reference's `layer_norm` (question 1) in place of yours, which "
            f"{missing}; not charged again here"
        ) in block.feedback


def test_a_block_also_wrong_on_its_own_gets_nothing_from_the_stand_in(grade_files):
    src = _planted(_planted(A4, LN_VAR, LN_RAISES), *OWN_RESIDUAL)
    r = _by_id(grade_files("a4", {"transformer.py": src}, questions=QUESTIONS))
    enc, dec = r["a4.encoder_block"], r["a4.decoder_block"]
    assert enc.score < enc.max_score / 2, enc.feedback
    by_label = {c.summary.label: c.summary.category for c in enc.cases}
    pre = [label for label in by_label if "pre-norm" in label]
    assert pre and all(by_label[label] not in (Category.PASSED, Category.CARRIED) for label in pre)
    # the residual is left out of the pre-norm path only: the post-norm batch, right with the
    # reference's LayerNorm, still earns its follow-through share
    assert by_label["hidden case 2: post-norm, batched"] is Category.CARRIED, enc.feedback
    assert dec.score == pytest.approx(dec.max_score), dec.feedback  # control: still right


def test_a_correct_file_is_unaffected(grade_files):
    r = _by_id(grade_files("a4", {"transformer.py": A4}, questions=QUESTIONS))
    for q in r.values():
        assert q.score == q.max_score and q.carried_points == 0, q.feedback
        assert "in place of yours" not in q.feedback


FORGER = """

def encoder_block(X, params, n_heads, norm="pre", key_padding_mask=None):
    cells = getattr(layer_norm, "__closure__", None) or ()
    tools = [c.cell_contents for c in cells if isinstance(c.cell_contents, dict)]
    if not tools:
        raise ValueError("not yet")          # fails, so that the grader re-runs it
    return tools[0]["ask"](                  # the reference's encoder_block, if it answered
        "encoder_block", (X, params, n_heads),
        {"norm": norm, "key_padding_mask": key_padding_mask}, False)
"""


def test_a_forged_callback_for_the_composite_itself_gets_nothing(grade_files):
    src = _planted(A4, LN_VAR, LN_RAISES) + FORGER  # the later definition wins
    r = _by_id(grade_files("a4", {"transformer.py": src}, questions=QUESTIONS))
    enc = r["a4.encoder_block"]
    assert enc.score == 0 and enc.carried_points == 0, enc.feedback
    dec = r["a4.decoder_block"]  # the other questions keep what they earn
    assert dec.score == pytest.approx(dec.max_score), dec.feedback


def test_with_follow_through_off_a_crashing_layernorm_costs_the_blocks(submit):
    a4 = dataclasses.replace(only(registry.load("a4"), *QUESTIONS), follow_through=0.0)
    folder = submit({"transformer.py": _planted(A4, LN_VAR, LN_RAISES)})
    r = _by_id(grade_submission(folder, a4, limits=LIMITS))
    for qid in BLOCKS:
        assert r[qid].score < r[qid].max_score and r[qid].carried_points == 0, r[qid].feedback
        assert "in place of yours" not in r[qid].feedback


A1 = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text()
GW_RIGHT = "    return np.minimum((X / x_max) ** alpha, 1.0)\n"
GW_RAISES = '    if X.size > 5:\n        raise ValueError("too many counts")\n' + GW_RIGHT


def test_an_undeclared_helper_that_raises_is_charged_at_the_helper(grade_files):
    """glove_loss declares no dependency on glove_weight; the student's calls it, and it raises
    on more than five counts (every case of the loss)."""
    src = _planted(A1, GW_RIGHT, GW_RAISES)
    r = _by_id(
        grade_files("a1", {"word_vectors.py": src}, questions=("a1.glove_weight", "a1.glove_loss"))
    )
    gw, loss = r["a1.glove_weight"], r["a1.glove_loss"]
    assert gw.score < gw.max_score
    assert loss.score == pytest.approx(loss.max_score), loss.feedback
    assert loss.carried_points == pytest.approx(loss.max_score)
    assert "judged with the reference's `glove_weight` in place of yours, which raised" in (
        loss.feedback
    )


# ------------------------------------------- a1: a softmax that hangs or ends the process

SOFTMAX_Z = "    z = x - np.max(x, axis=axis, keepdims=True)\n"
STOPS = {  # on more than three logits (every hidden case; the notes' three logits pass)
    "hangs": "    if x.size > 3:\n        import time\n        time.sleep(60)\n",
    "ends the process": "    if x.size > 3:\n        import os\n        os._exit(3)\n",
}
SHORT = dataclasses.replace(LIMITS, call_seconds=1.0)  # a hang costs a second, not ten
SKIPGRAM = ("a1.softmax", "a1.naive_softmax")


def _a1_stopped(submit, src: str, monkeypatch) -> tuple[dict, list[str]]:
    """a1's softmax and skip-gram questions graded under SHORT; also which functions were
    re-run with the reference's standing in for the student's."""
    reruns: list[str] = []
    call = WorkerSession.call

    def counted(self, function, *args, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        if kw.get("replace"):
            reruns.append(function)
        return call(self, function, *args, **kw)

    monkeypatch.setattr(WorkerSession, "call", counted)
    a1 = only(registry.load("a1"), *SKIPGRAM)
    report = grade_submission(submit({"word_vectors.py": src}), a1, limits=SHORT)
    return _by_id(report), reruns


@pytest.mark.parametrize("how", list(STOPS))
def test_a_softmax_that_gives_no_answer_is_charged_once_not_in_skipgram(submit, monkeypatch, how):
    """The skip-gram loss calls the student's softmax, which hangs (or ends the process)
    on every hidden case: its own cases then give no answer either, and those after a timeout
    are not run. Re-run with the reference's softmax in its place, each is right: the mistake is
    charged in question 1 only."""
    r, _ = _a1_stopped(submit, _planted(A1, SOFTMAX_Z, STOPS[how] + SOFTMAX_Z), monkeypatch)
    soft, skip = r["a1.softmax"], r["a1.naive_softmax"]
    assert soft.score < soft.max_score / 2, soft.feedback
    assert skip.score == pytest.approx(skip.max_score), skip.feedback
    hidden = [c for c in skip.cases if not c.visible]
    assert hidden and all(c.summary.category is Category.CARRIED for c in hidden), skip.feedback
    assert skip.carried_points == pytest.approx(skip.max_score * len(hidden) / len(skip.cases))
    assert skip.misconceptions == [], skip.feedback
    assert (
        "judged with the reference's `softmax` (question 1) in place of yours, with which these "
        "cases gave no answer"
    ) in skip.feedback
    # the stop is the softmax's, a failed run there only (the class report lists run failures)
    assert soft.error is not None and skip.error is None, (soft.error, skip.error)


SCORES = "    scores = U @ v_c  # (V,)\n"
OWN_HANG = (
    SCORES,
    SCORES + "    if U.shape[0] > 3:\n        import time\n        time.sleep(60)\n",
)


def test_a_skipgram_that_hangs_by_itself_is_re_run_once_and_earns_nothing(submit, monkeypatch):
    """The softmax raises on every hidden case, and the skip-gram loss hangs by itself on them
    (more than three words): the one re-run with the reference's softmax hangs too, so no other
    case is re-run (each would cost a call's time limit) and the question earns nothing there."""
    raises = "    if x.size > 3:\n        raise ValueError('too many logits')\n"
    src = _planted(_planted(A1, SOFTMAX_Z, raises + SOFTMAX_Z), *OWN_HANG)
    r, reruns = _a1_stopped(submit, src, monkeypatch)
    skip = r["a1.naive_softmax"]
    hidden = [c for c in skip.cases if not c.visible]
    assert reruns == ["naive_softmax_loss_and_gradient"], reruns
    assert skip.carried_points == 0 and "in place of yours" not in skip.feedback, skip.feedback
    assert hidden[0].summary.category is Category.TIMEOUT, skip.feedback
    assert skip.error is not None and "did not return" in skip.error, skip.error
    assert all(c.summary.category is Category.NOT_RUN for c in hidden[1:]), skip.feedback
    assert skip.score == pytest.approx(skip.max_score / len(skip.cases)), skip.feedback


# ---------------------------------------------------------------- names that are not the mistake

A6 = (ROOT / "solutions" / "a6_pretraining_scale" / "pretraining.py").read_text()
MERGE_SCAN = "        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:\n"
MERGE_SCAN_EARLY = "        if i + 2 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:\n"


def test_the_early_stopping_merge_differs_from_the_handout_s():
    """The control: the planted `_merge` never merges a word's last pair, by hand."""
    space: dict = {}
    exec(_planted(A6, MERGE_SCAN, MERGE_SCAN_EARLY), space)  # noqa: S102 - the solution, edited
    assert space["_merge"](("l", "o", "w"), "o", "w") == ("l", "o", "w")
    assert space["_merge"](("o", "w", "x"), "o", "w") == ("ow", "x")


@pytest.mark.parametrize("student", ["ada@example.edu", "bo@example.edu"])
def test_a_shared_merge_that_stops_one_pair_early_is_named_as_no_caller_s_mistake(
    grade_files, student
):
    """The shared `_merge` is no graded function: whatever it gets wrong is not a catalogued
    mistake of bpe_learn or bpe_segment (neither leaves out the end-of-word symbol)."""
    src = _planted(A6, MERGE_SCAN, MERGE_SCAN_EARLY)
    r = _by_id(
        grade_files(
            "a6",
            {"pretraining.py": src},
            student=student,
            questions=("a6.bpe_learn", "a6.bpe_segment"),
        )
    )
    learn, segment = r["a6.bpe_learn"], r["a6.bpe_segment"]
    assert learn.score < learn.max_score and learn.misconceptions == [], learn.feedback
    # segmenting, a scan that never merges the last pair (always one with "</w>") computes
    # exactly bpe-no-end-of-word's second form ("</w>" tacked on, never merged): that name fits
    assert segment.score < segment.max_score, segment.feedback
