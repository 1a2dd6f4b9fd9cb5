"""Validity of a1, a3 and a6 (issue 17): every plausible slip docked, only the right mistake named,
correct code in the common forms at full marks.

Students' functions are written here from their definitions (the notes' formulas, numpy only) in
the forms the issue lists, and judged as the engine judges a case: `compare` with the reference,
`explain` with the question's mutants, `verdict` over the cases. The reference itself is held to
torch, autograd and nltk in tests/reference/.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import ROOT

from grader import catalog
from grader.engine.checks import compare
from grader.engine.diagnosis import explain, verdict
from grader.engine.trusted import materialize, run_trusted, trusted_mutants
from grader.questions import CodeQuestion
from grader.suites import a1_word_vectors as a1
from grader.suites import a3_gated_seq2seq as a3
from grader.suites import a6_pretraining_scale as a6

pytestmark = pytest.mark.usefixtures("trusted_outputs_kept")

SEEDS = range(6)


def _q(assignment, qid: str) -> CodeQuestion:
    q = assignment.question(qid)
    assert isinstance(q, CodeQuestion)
    return q


def judge(q: CodeQuestion, fn, seed: int) -> tuple[int, list[str]]:
    """(cases failed, misconceptions named) for a student function, as the engine judges them."""
    per_case, failed = [], 0
    for case in q.cases(seed):
        args, kwargs = materialize(case.args), dict(materialize(tuple(case.kwargs.items())))
        try:
            with np.errstate(all="ignore"):
                got = fn(*args, **kwargs)
        except (ArithmeticError, ValueError, ZeroDivisionError):
            failed += 1
            continue
        want = run_trusted(q.reference, case)
        if compare(got, want, q.tolerance, exact=q.integer):
            failed += 1
            per_case.append(
                explain(
                    got,
                    want,
                    case.args,
                    dict(case.kwargs),
                    trusted_mutants(q.mutants),
                    q.tolerance,
                    exact=q.integer,
                )
            )
    return failed, verdict(per_case, failed)


# ---------------------------------------------------------------- a1: SGNS, as the handout asks

SGNS = _q(a1.ASSIGNMENT, "a1.neg_sampling")


def _sig_one_over(x):
    return 1.0 / (1.0 + np.exp(-x))  # exp(-x) = inf for x << 0 gives 1/inf = 0: finite


def _sig_piecewise(x):
    x = np.asarray(x, dtype=np.float64)
    return np.where(
        x >= 0, 1.0 / (1.0 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1.0 + np.exp(-np.abs(x)))
    )


def _sig_ratio(x):
    return np.exp(x) / (1.0 + np.exp(x))  # inf/inf = NaN at x = 1000


def _sig_branch_moved(x):
    """The piecewise-stable form with its branch point moved from 0 to 1."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 1, 1.0 / (1.0 + e), e / (1.0 + e))


def sgns_with(sig, dtype=np.float64, accumulate_o=True):
    """SGNS from its definition: a sigmoid, then log; grad_U accumulated per draw (or row o
    assigned after the noise rows when `accumulate_o` is False)."""

    def student(v_c, o, U, neg):
        v_c, U = np.asarray(v_c, dtype=dtype), np.asarray(U, dtype=dtype)
        s_o, s_k = U[o] @ v_c, U[neg] @ v_c
        loss = -np.log(sig(s_o)) - np.sum(np.log(sig(-s_k)))
        d_o, d_k = sig(s_o) - 1.0, sig(s_k)
        grad_v = d_o * U[o] + d_k @ U[neg]
        grad_U = np.zeros_like(U)
        if accumulate_o:
            grad_U[o] += d_o * v_c
        np.add.at(grad_U, neg, np.outer(d_k, v_c))
        if not accumulate_o:
            grad_U[o] = d_o * v_c
        return float(loss), grad_v.astype(np.float64), grad_U.astype(np.float64)

    return student


@pytest.mark.parametrize("sig", [_sig_one_over, _sig_piecewise], ids=["one_over", "piecewise"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a1_sigmoid_then_log_gets_full_marks(sig, dtype):
    for seed in SEEDS:
        assert judge(SGNS, sgns_with(sig, dtype), seed) == (0, []), seed


def test_a1_sgns_extremes_need_a_finite_sigmoid_not_a_log_sigmoid():
    """Every loss term on the hidden cases is log σ(x) with x > -50: σ then log is exact there."""
    for seed in SEEDS:
        for case in SGNS.cases(seed):
            v_c, o, U, neg = case.args
            assert U[o] @ v_c > -50 and np.all(-(U[neg] @ v_c) > -50), (seed, case.name)


def test_a1_overflowing_sigmoid_is_named_and_its_advice_fits():
    for seed in SEEDS:
        failed, named = judge(SGNS, sgns_with(_sig_ratio), seed)
        assert failed >= 2 and named == ["sigmoid-unstable"], seed
    text = catalog.get("sigmoid-unstable").explanation
    assert "NaN" in text and "log-sigmoid" not in text


def test_a1_sigmoid_branch_point_off_zero_is_docked():
    for seed in SEEDS:
        failed, _ = judge(SGNS, sgns_with(_sig_branch_moved), seed)
        assert failed >= 1, seed


def test_a1_row_o_overwritten_is_named_and_the_handout_promises_o_among_negatives():
    for seed in SEEDS:
        failed, named = judge(SGNS, sgns_with(_sig_piecewise, accumulate_o=False), seed)
        assert failed >= 1 and named == ["sgns-outside-row-overwritten"], seed
    assert "row o of grad_U" in catalog.get("sgns-outside-row-overwritten").explanation
    readme = (ROOT / "assignments" / "a1_word_vectors" / "README.md").read_text()
    assert "`neg_indices` may contain `o`" in readme


# ---------------------------------------------------------------- a1: softmax, GloVe, analogy

SOFTMAX = _q(a1.ASSIGNMENT, "a1.softmax")


def _softmax_shift(shift):
    def student(x, axis=-1):
        x = np.asarray(x, dtype=np.float64)
        e = np.exp(x - shift(x, axis))
        return e / e.sum(axis=axis, keepdims=True)

    return student


def test_a1_softmax_min_shift_fails_and_is_named_unstable():
    student = _softmax_shift(lambda x, axis: x.min(axis=axis, keepdims=True))
    for seed in SEEDS:
        assert judge(SOFTMAX, student, seed) == (1, ["softmax-unstable"]), seed
    assert judge(SOFTMAX, _softmax_shift(lambda x, axis: x.max(axis=axis, keepdims=True)), 0) == (
        0,
        [],
    )


def test_a1_softmax_over_the_middle_axis_is_named_wrong_axis():
    def middle(x, axis=-1):  # axis=-2 hard-coded: on 3-D inputs neither the last axis nor 0
        x = np.asarray(x, dtype=np.float64)
        ax = -2 if x.ndim > 1 else -1
        e = np.exp(x - x.max(axis=ax, keepdims=True))
        return e / e.sum(axis=ax, keepdims=True)

    for seed in SEEDS:
        failed, named = judge(SOFTMAX, middle, seed)
        assert failed >= 2 and named == ["softmax-wrong-axis"], seed


GLOVE = _q(a1.ASSIGNMENT, "a1.glove_loss")


def _glove(include_zeros: bool, log=np.log):
    def student(W, Wt, b, bt, X, x_max=100.0, alpha=0.75):
        pred = W @ Wt.T + b[:, None] + bt[None, :]
        f = np.minimum((X / x_max) ** alpha, 1.0)
        keep = np.ones_like(X, dtype=bool) if include_zeros else X > 0
        return float(np.sum((f * (pred - log(X)) ** 2)[keep]))

    return student


def test_a1_glove_a_shared_nan_is_no_evidence():
    """log(X - 1) gives NaN at every count of 1 and below (another mistake): not "zeros included";
    the real mistake is named."""
    for seed in SEEDS:
        failed, named = judge(
            GLOVE, _glove(False, log=lambda X: np.log(np.where(X > 0, X - 0.5, X))), seed
        )
        assert failed >= 3 and "glove-zero-counts-included" not in named, seed
        failed, named = judge(GLOVE, _glove(True), seed)
        assert failed >= 1 and named == ["glove-zero-counts-included"], seed


ANALOGY = _q(a1.ASSIGNMENT, "a1.analogy")


def _analogy(norms, eps: float):
    def student(E, vocab, a, b, c):
        E = np.asarray(E, dtype=np.float64)
        i = {w: k for k, w in enumerate(vocab)}
        t = E[i[b]] - E[i[a]] + E[i[c]]
        sims = E @ t / (norms(E) * np.linalg.norm(t) + eps)
        for w in (a, b, c):
            sims[i[w]] = -np.inf
        return vocab[int(np.argmax(sims))]

    return student


def test_a1_analogy_global_norm_or_large_epsilon_is_docked():
    per_row = _analogy(lambda E: np.linalg.norm(E, axis=1), 1e-12)
    whole = _analogy(lambda E: np.linalg.norm(E), 1e-12)
    large_eps = _analogy(lambda E: np.linalg.norm(E, axis=1), 1.0)
    for seed in SEEDS:
        assert judge(ANALOGY, per_row, seed) == (0, []), seed
        assert judge(ANALOGY, whole, seed)[0] >= 3, seed
        assert judge(ANALOGY, large_eps, seed)[0] >= 3, seed


# ---------------------------------------------------------------- a3: attend, BLEU, beam search

ATTEND = _q(a3.ASSIGNMENT, "a3.attend")


def _attend_shift(shift):
    def student(scores, H):
        e = np.exp(scores - shift(scores))
        alpha = e / e.sum()
        return alpha, alpha @ H

    return student


def test_a3_attend_needs_the_max_shift():
    for seed in SEEDS:
        assert judge(ATTEND, _attend_shift(np.max), seed) == (0, []), seed
        assert judge(ATTEND, _attend_shift(np.min), seed)[0] >= 1, seed
        assert judge(ATTEND, _attend_shift(lambda s: 0.0), seed)[0] >= 2, seed


BLEU = _q(a3.ASSIGNMENT, "a3.corpus_bleu")


def _ngrams(tokens, n):
    out: dict[tuple, int] = {}
    for i in range(len(tokens) - n + 1):
        out[tuple(tokens[i : i + n])] = out.get(tuple(tokens[i : i + n]), 0) + 1
    return out


def bleu_with(closest, penalty, zero=lambda: 0.0):
    """Corpus BLEU from the handout's definition, with the reference-length choice, the
    penalty and the zero-precision branch given."""

    def student(cands, refs, max_n=4):
        logs = []
        for n in range(1, max_n + 1):
            m = t = 0
            for cand, rs in zip(cands, refs):
                cg = _ngrams(cand, n)
                best = {g: max(_ngrams(r, n).get(g, 0) for r in rs) for g in cg}
                m += sum(min(k, best[g]) for g, k in cg.items())
                t += sum(cg.values())
            if m == 0:
                return zero()
            logs.append(math.log(m / t))
        c = sum(len(x) for x in cands)
        r = sum(closest(len(x), [len(y) for y in rs]) for x, rs in zip(cands, refs))
        return penalty(c, r) * math.exp(sum(logs) / max_n)

    return student


def _closest(c, lens):
    return min(lens, key=lambda r: (abs(r - c), r))


def _bp(c, r):
    return 1.0 if c > r else math.exp(1 - r / c)


def test_a3_bleu_by_definition_gets_full_marks_and_every_slip_is_docked():
    def raises():
        raise ValueError("math domain error")

    slips = {
        "tie to the longer": bleu_with(
            lambda c, lens: min(lens, key=lambda r: (abs(r - c), -r)), _bp
        ),
        "first of the tied": bleu_with(lambda c, lens: min(lens, key=lambda r: abs(r - c)), _bp),
        "zero branch raises": bleu_with(_closest, _bp, zero=raises),
        "zero branch 1.0": bleu_with(_closest, _bp, zero=lambda: 1.0),
        "inverted penalty": bleu_with(_closest, lambda c, r: 1.0 if c < r else math.exp(1 - r / c)),
    }
    for seed in SEEDS:
        assert judge(BLEU, bleu_with(_closest, _bp), seed) == (0, []), seed
        for what, student in slips.items():
            failed, named = judge(BLEU, student, seed)
            assert failed >= 1 and "bleu-no-brevity-penalty" not in named, (seed, what)
        assert judge(BLEU, bleu_with(_closest, lambda c, r: 1.0), seed)[1] == [
            "bleu-no-brevity-penalty"
        ]


BEAM = _q(a3.ASSIGNMENT, "a3.beam_search")


def beam_with(length=lambda t: len(t) - 1, start=0.0, steps=lambda n: n):
    """Beam search from the handout's text, with the normaliser, the start score and the
    number of steps given."""

    def student(lm, bos, eos, k, max_len, length_normalize=True):
        live, done = [([bos], start)], []
        for _ in range(steps(max_len)):
            cands = [(t + [w], s + float(lp)) for t, s in live for w, lp in enumerate(lm(list(t)))]
            cands.sort(key=lambda x: -x[1])
            live = []
            for t, s in cands[:k]:
                (done if t[-1] == eos else live).append((t, s))
            if len(done) >= k or not live:
                break
        pool = done or live

        def key(h):
            n = length(h[0])
            return h[1] / n if length_normalize and n > 0 else h[1]

        return max(pool, key=key)[0][1:]

    return student


def test_a3_beam_slips_are_docked_and_not_read_as_no_normalisation():
    slips = {
        "bos counted": beam_with(length=len),
        "start score 1": beam_with(start=1.0),
        "one step short": beam_with(steps=lambda n: max(n - 1, 0)),
    }
    for seed in SEEDS:
        assert judge(BEAM, beam_with(), seed) == (0, []), seed
        for what, student in slips.items():
            failed, named = judge(BEAM, student, seed)
            assert failed >= 1 and named == [], (seed, what)
    raw = beam_with(length=lambda t: 0)
    assert judge(BEAM, raw, 0)[1] == ["beam-no-length-normalization"]


def test_a3_beam_max_len_zero_is_the_empty_answer():
    cases = [c for c in BEAM.cases(0) if "max_len=0" in c.name]
    assert len(cases) == 2  # with and without length normalisation
    assert all(run_trusted(BEAM.reference, case) == [] for case in cases)
    assert "`max_len = 0`" in (ROOT / "assignments" / "a3_gated_seq2seq" / "README.md").read_text()


def test_a3_declares_no_follow_through_dependency():
    """`attend(scores, H)` takes the scores; no a3 function calls an earlier graded function."""
    assert all(not q.depends_on for q in a3.ASSIGNMENT.questions if isinstance(q, CodeQuestion))


# ---------------------------------------------------------------- a6

BPE = _q(a6.ASSIGNMENT, "a6.bpe_learn")


def test_a6_bpe_dropping_words_seen_once_is_docked():
    def student(word_counts, num_merges):
        return a6.bpe.bpe_learn({w: n for w, n in word_counts.items() if n > 1}, num_merges)

    for seed in SEEDS:
        assert judge(BPE, student, seed)[0] >= 1, seed


BERT = _q(a6.ASSIGNMENT, "a6.bert_mask")


def _bert_outputs(student, seed):
    cases = list(BERT.cases(seed))
    return cases, [student(*materialize(c.args), **dict(c.kwargs)) for c in cases]


def test_a6_bert_default_p_is_exercised_and_a_wrong_ignore_label_is_not_labels_all_positions():
    assert any("p" not in c.kwargs for c in BERT.cases(0))

    def default_03(tokens, rng, mask_id, vocab_size, special_ids=(), p=0.3):
        return a6.masking.bert_mask(tokens, rng, mask_id, vocab_size, special_ids, p)

    def label_100(tokens, rng, mask_id, vocab_size, special_ids=(), p=0.15):
        inputs, labels = a6.masking.bert_mask(tokens, rng, mask_id, vocab_size, special_ids, p)
        return inputs, np.where(labels == -100, 100, labels)

    for seed in SEEDS[:3]:
        j = BERT.custom(*_bert_outputs(default_03, seed))
        assert j.fraction < 1, seed
        j = BERT.custom(*_bert_outputs(label_100, seed))
        assert j.fraction < 1 and "bert-labels-all-positions" not in j.misconceptions, seed


NEXT = _q(a6.ASSIGNMENT, "a6.next_token_targets")


def test_a6_untruncated_inputs_with_right_targets_are_not_targets_not_shifted():
    def student(tokens, pad_id):
        tokens = np.asarray(tokens)
        return tokens, np.where(tokens[:, 1:] == pad_id, -100, tokens[:, 1:])

    for seed in SEEDS:
        failed, named = judge(NEXT, student, seed)
        assert failed >= 3 and named == ["lm-inputs-not-truncated"], seed


PARAMS = _q(a6.ASSIGNMENT, "a6.transformer_parameter_count")


def test_a6_swiglu_without_its_down_matrix_is_not_two_matrices():
    def student(V, P, d, L, d_ff, tied_embeddings=True, biases=True, ffn="gelu", norm="layernorm"):
        out = a6.params.transformer_parameter_count(
            V, P, d, L, d_ff, tied_embeddings, biases, ffn, norm
        )
        if ffn == "swiglu":  # the two input matrices, the down projection forgotten
            b = 1 if biases else 0
            wrong = 2 * (d * d_ff + b * d_ff)
            delta = wrong - out["ffn_per_block"]
            out = dict(
                out,
                ffn_per_block=wrong,
                per_block=out["per_block"] + delta,
                blocks=out["blocks"] + L * delta,
                total=out["total"] + L * delta,
            )
        return out

    for seed in SEEDS:
        failed, named = judge(PARAMS, student, seed)
        assert failed >= 3 and "params-swiglu-two-matrices" not in named, seed


def test_a6_a_merge_looking_at_the_wrong_position_is_docked_and_not_named(grade_files):
    """`symbols[1] == b` for `symbols[i + 1] == b` in the merge: its segmentations agree with
    bpe-no-end-of-word's on some hidden words by coincidence, but on the visible "lowest" (where
    that mistake shows) it gives neither the right answer nor that mistake's. Naming it would
    be wrong; a mistake that explains only some failed cases is held to every case it shows on."""
    source = (ROOT / "solutions" / "a6_pretraining_scale" / "pretraining.py").read_text()
    wrong = source.replace("symbols[i + 1] == b", "symbols[1] == b", 1)
    assert wrong != source
    for student in ("ada@example.edu", "bo@example.edu", "cy@example.edu"):
        (q,) = grade_files(
            "a6", {"pretraining.py": wrong}, student=student, questions=("a6.bpe_segment",)
        ).questions
        assert q.score < q.max_score and q.misconceptions == [], (student, q.feedback)
