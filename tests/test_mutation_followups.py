"""What the whole mutation runs (benchmarks/mutation_testing.py, issue 33) showed, fixed:

- a composite whose own code is right, over an earlier graded function of the student's that
  returns wrong values with no mistake named there (a1's `glove_weight` capped at 2 instead of
  1, under `glove_loss`; a2's `rnn_forward` without its recurrent term, under the BPTT
  questions), was charged again: it is now judged with the reference's function in its place;
- a name supported only by outputs that are NaN everywhere (a4's `_softmax` shifting by the
  max down the wrong axis: NaN after the causal mask's -inf, in `gpt_forward`) is not given;
- a6's BERT judge named `bert-masks-specials` for a selection `(u < p) | ~special` (every
  ordinary token selected too): it now names a mistake only when that mistake's own outputs
  fail the same checks; `bpe-no-end-of-word` was named for a merge that never applies to a
  right symbol made by an earlier merge (`symbols[i + 1] is b`): a domain edge nests merges to
  the right;
- the benchmark read a random procedure's equally valid draw as an escape (bert_mask's random
  and unchanged 10% bands swapped), and a NaN the named mistake has no value for as evidence
  against the name (the engine does not).

Controls: the solution keeps full marks; a composite with a mistake of its own over the wrong
helper still loses points; a mistake the suite names keeps its name. The expectations are the
grades' shape (full marks or not, which name), never a value computed by the code under test.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from conftest import FAST, ROOT

from grader.course import registry
from grader.engine.diagnosis import Explanation, verdict
from grader.engine.grade import grade_submission


def _solution(aid: str) -> str:
    a = registry.load(aid)
    return (ROOT / "solutions" / a.id / a.code_file).read_text()


def _plant(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"the solution no longer reads {old!r}"
    return source.replace(old, new)


def _grade(tmp_path, aid: str, source: str, qids: tuple[str, ...]):
    a = registry.load(aid)
    folder = tmp_path / aid
    folder.mkdir(parents=True)
    (folder / a.code_file).write_text(source)
    questions = tuple(a.question(q) for q in qids)
    report = grade_submission(folder, dataclasses.replace(a, questions=questions), limits=FAST)
    return {q.question_id: q for q in report.questions}


# ---------------------------------------------------------------- wrong values, not named

A1 = ("a1.glove_weight", "a1.glove_loss")
CAP_2 = (
    "return np.minimum((X / x_max) ** alpha, 1.0)",
    "return np.minimum((X / x_max) ** alpha, 2.0)",
)
OWN_LOSS_SLIP = ("* r**2))", "* np.abs(r)))")


def test_a1_solution_keeps_full_marks(tmp_path):
    r = _grade(tmp_path, "a1", _solution("a1"), A1)
    assert all(q.score == q.max_score for q in r.values())


def test_a1_a_wrong_glove_weight_is_not_charged_again_in_glove_loss(tmp_path):
    r = _grade(tmp_path, "a1", _plant(_solution("a1"), *CAP_2), A1)
    weight, loss = r["a1.glove_weight"], r["a1.glove_loss"]
    assert weight.score < weight.max_score
    assert loss.score == loss.max_score and loss.carried_points == loss.max_score
    assert "judged with the reference's `glove_weight` in place of yours" in loss.feedback
    assert "was wrong on these inputs" in loss.feedback
    assert loss.misconceptions == []


def test_a1_glove_loss_with_its_own_slip_over_a_wrong_weight_still_loses_points(tmp_path):
    source = _plant(_plant(_solution("a1"), *CAP_2), *OWN_LOSS_SLIP)
    r = _grade(tmp_path, "a1", source, A1)
    assert r["a1.glove_loss"].score < r["a1.glove_loss"].max_score
    alone = _grade(tmp_path / "alone", "a1", _plant(_solution("a1"), *OWN_LOSS_SLIP), A1)
    assert alone["a1.glove_loss"].score < alone["a1.glove_loss"].max_score
    assert alone["a1.glove_weight"].score == alone["a1.glove_weight"].max_score


A2 = ("a2.rnn_forward", "a2.bptt_final_state", "a2.bptt_sequence_ce")
NO_RECURRENCE = ("X[t] @ W_x.T + h @ W_h.T", "X[t] @ W_x.T")


def test_a2_a_forward_pass_without_its_recurrence_is_charged_once(tmp_path):
    source = _solution("a2")
    assert source.count(NO_RECURRENCE[0]) == 1
    r = _grade(tmp_path, "a2", source.replace(*NO_RECURRENCE), A2)
    assert r["a2.rnn_forward"].score < r["a2.rnn_forward"].max_score
    for qid in A2[1:]:
        assert r[qid].score == r[qid].max_score, (qid, r[qid].feedback)
    solution = _grade(tmp_path / "solution", "a2", source, A2)
    assert all(q.score == q.max_score for q in solution.values())


# ---------------------------------------------------------------- NaN everywhere names nothing


def test_verdict_gives_no_name_supported_only_by_blank_matches():
    blank = Explanation("softmax-wrong-axis", 0, 0, blank=True)
    assert verdict([[blank], [blank], []], 3) == []  # a finite wrong case it does not explain
    assert verdict([[blank], [blank]], 2) == ["softmax-wrong-axis"]  # NaN wherever it fails
    solid = Explanation("softmax-wrong-axis", 0, 0)
    assert verdict([[blank], [solid], []], 3) == ["softmax-wrong-axis"]
    other = Explanation("mask-ignored", 0, 1)
    assert verdict([[blank, other], [blank, other], [other]], 3) == ["mask-ignored"]


A4_CODE = tuple(q.id for q in registry.load("a4").questions if hasattr(q, "function"))
SHIFT_DOWN_COLUMNS = (
    "x = x - np.max(x, axis=-1, keepdims=True)",
    "x = x - np.max(x, axis=0, keepdims=True)",
)


def test_a4_a_helper_softmax_shifted_down_the_wrong_axis_is_not_named_in_gpt_forward(tmp_path):
    source = _plant(_solution("a4"), *SHIFT_DOWN_COLUMNS)
    r = _grade(tmp_path, "a4", source, A4_CODE)
    gpt = r["a4.gpt_forward"]
    assert gpt.score < gpt.max_score
    assert "softmax-wrong-axis" not in gpt.misconceptions
    assert r["a4.sdpa"].score < r["a4.sdpa"].max_score


def test_a4_solution_keeps_full_marks(tmp_path):
    r = _grade(tmp_path, "a4", _solution("a4"), A4_CODE)
    assert all(q.score == q.max_score for q in r.values())


# ---------------------------------------------------------------- a judge names by the same rule

BERT_SELECT = "selected = (rng.random(n) < p) & ~np.isin(tokens, list(special_ids))"


def test_a6_bert_selecting_every_ordinary_token_is_not_named_specials_masked(tmp_path):
    # `|` for `&`: every ordinary token is selected, and the specials at rate p. Specials
    # selected like any token (bert-masks-specials) would select ordinary tokens at rate p:
    # it does not reproduce the selection rate, so nothing is named.
    either = _plant(_solution("a6"), BERT_SELECT, BERT_SELECT.replace(") & ~", ") | ~"))
    q = _grade(tmp_path, "a6", either, ("a6.bert_mask",))["a6.bert_mask"]
    assert q.score < q.max_score
    assert q.misconceptions == [], q.misconceptions


def test_a6_bert_specials_selected_like_any_token_keeps_its_name(tmp_path):
    ignored = _plant(_solution("a6"), BERT_SELECT, BERT_SELECT.replace("list(special_ids)", "[]"))
    q = _grade(tmp_path, "a6", ignored, ("a6.bert_mask",))["a6.bert_mask"]
    assert q.score < q.max_score
    assert q.misconceptions == ["bert-masks-specials"]


# ---------------------------------------------------------------- a random procedure's survivors

RANDOM_BAND = "to_random = selected & (action >= 0.8) & (action < 0.9)"


def _bert_of(bench, source: str):
    return bench.load_module(source, "bert_variant").bert_mask


def test_the_runner_reads_the_10_percent_bands_swapped_as_the_same_distribution():
    # `action > 0.9` for the random ids: the random 10% and the unchanged 10% trade places in
    # [0.8, 1); BERT's 80/10/10 rule is met either way (Devlin et al. 2019, section 3.1)
    from test_mutation_targets import _benchmark_module

    bench = _benchmark_module()
    solution = _solution("a6")
    q = registry.load("a6").question("a6.bert_mask")
    swapped = _plant(solution, RANDOM_BAND, RANDOM_BAND.replace("(action < 0.9)", "(action > 0.9)"))
    same = bench.different_distribution(_bert_of(bench, solution), _bert_of(bench, swapped), q)
    assert same is None
    # controls: random ids from half the vocabulary, and 70/20/10, are other distributions
    half = _plant(
        solution, "rng.integers(0, vocab_size, size=n)", "rng.integers(0, vocab_size // 2, size=n)"
    )
    assert bench.different_distribution(_bert_of(bench, solution), _bert_of(bench, half), q)
    split = _plant(
        solution, "to_mask = selected & (action < 0.8)", "to_mask = selected & (action < 0.7)"
    )
    split = _plant(split, RANDOM_BAND, RANDOM_BAND.replace("0.8", "0.7"))
    assert bench.different_distribution(_bert_of(bench, solution), _bert_of(bench, split), q)


def test_the_distribution_test_reads_nan_and_inf_as_their_own_outcomes():
    # a rare value is read as its decile of the finite range; NaN, inf and -inf are bins of
    # their own (not a decile computed from them), and the same value is one code on both sides
    from test_mutation_targets import _benchmark_module

    bench = _benchmark_module()

    def cells(values):
        out = np.empty((len(values), 1, 2))
        out[:, 0, 0], out[:, 0, 1] = bench.VALUE, values
        return out

    rare = [float(v) for v in range(1000)]  # each under 1% of the positions: deciles
    want, got = bench._binned(
        [cells(rare + [np.nan] * 10), cells(rare + [np.inf] * 5 + [-np.inf] * 5)]
    )
    assert want[:1000].tolist() == got[:1000].tolist()
    assert len(set(want[:1000].ravel().tolist())) == 10  # the ten deciles
    nan, inf, minus_inf = want[-1, 0], got[-6, 0], got[-1, 0]
    assert len({nan, inf, minus_inf} | set(want[:1000].ravel().tolist())) == 13


# ---------------------------------------------------------------- the runner's naming check

CLIP = "scale = 1.0 if norm <= max_norm else max_norm / norm"


def test_the_runner_takes_a_nan_where_the_mistake_has_no_value_as_no_evidence_against_it():
    # `norm is max_norm` (never true): every gradient rescaled by c/||g||, so a zero gradient
    # becomes 0 * (c/0) = NaN, where the catalog's clip-always-rescales has no value of its own
    from test_mutation_targets import _benchmark_module

    bench = _benchmark_module()
    q = registry.load("a2").question("a2.clip_by_global_norm")
    always = bench.load_module(_plant(_solution("a2"), CLIP, "scale = max_norm / norm"), "always")
    assert bench._unexplained(q, "clip-always-rescales", always) is None
    # controls: a finite output the mistake does not compute rules it out; so does a name
    # that explains no case at all
    half = bench.load_module(_plant(_solution("a2"), CLIP, "scale = 0.5"), "half")
    assert bench._unexplained(q, "clip-always-rescales", half)
    nan = bench.load_module(_plant(_solution("a2"), CLIP, "scale = float('nan')"), "nan")
    assert "explained on no case" in bench._unexplained(q, "clip-always-rescales", nan)


# ---------------------------------------------------------------- BPE merges nested to the right

MERGE_TEST = "symbols[i] == a and symbols[i + 1] == b"


def test_a6_a_merge_that_never_applies_to_merged_symbols_is_not_named_no_end_of_word(tmp_path):
    # `symbols[i + 1] is b`: a right symbol made by an earlier merge (a new string) is never
    # the merge's own; the edge case (c, d), (b, cd), (a, bcd) shows it where "</w>" plays no part
    identity = _plant(_solution("a6"), MERGE_TEST, "symbols[i] == a and symbols[i + 1] is b")
    q = _grade(tmp_path, "a6", identity, ("a6.bpe_segment",))["a6.bpe_segment"]
    assert q.score < q.max_score
    assert q.misconceptions == [], q.misconceptions
    assert "✘ domain edge: merges whose right symbol was merged before" in q.feedback


def test_a6_segmenting_without_end_of_word_keeps_its_name_with_the_nested_edge(tmp_path):
    bare = _plant(
        _solution("a6"),
        "symbols = tuple(word) + (END,)\n    for a, b",
        "symbols = tuple(word)\n    for a, b",
    )
    q = _grade(tmp_path, "a6", bare, ("a6.bpe_segment",))["a6.bpe_segment"]
    assert q.score < q.max_score
    assert q.misconceptions == ["bpe-no-end-of-word"]
