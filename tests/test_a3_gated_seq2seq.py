"""a3 (gated RNNs, attention, beam search, BLEU): the solution scores full, the handout scores
zero cleanly, every misconception is named from a student-style mistake, mutants separate, and
the written expected answers agree with outside authorities (torch, autograd, nltk, hand work).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from conftest import FAST, ROOT, code_questions, only, write_submission
from conftest import load_module as _load

from grader import catalog
from grader.engine.checks import compare
from grader.engine.grade import grade_submission
from grader.engine.trusted import run_trusted as _run_trusted
from grader.mutants import concrete
from grader.questions import WrittenQuestion
from grader.suites import a3_gated_seq2seq as suite

HANDOUT = ROOT / "assignments" / "a3_gated_seq2seq"
SOLUTION = ROOT / "solutions" / "a3_gated_seq2seq"
A3 = suite.ASSIGNMENT
A3_IDS = (
    "lstm-gate-order",
    "lstm-output-uses-old-cell",
    "gru-update-flipped",
    "gru-reset-before-matmul",
    "attention-no-softmax",
    "additive-missing-tanh",
    "multiplicative-transposed",
    "beam-no-length-normalization",
    "bleu-no-brevity-penalty",
    "bleu-shortest-reference",
    "bleu-unclipped-counts",
    "bleu-arithmetic-mean",
    # field conventions the handout excludes (tests/test_a3_field_conventions.py)
    "bleu-smoothed",
    "bleu-sentence-average",
    "beam-eos-score-dropped",
    "beam-finished-leave-the-beam",
    # slips the mutation runs showed (benchmarks/mutation_testing.py)
    "beam-stops-after-first-step",
    "beam-length-normalize-inverted",
    # greedy decoding
    "greedy-returns-bos",
    "greedy-ignores-eos",
    "greedy-ties-to-larger-id",
    "eos-compared-by-identity",
)
SOLUTION_SOURCE = (SOLUTION / "gated_seq2seq.py").read_text()


ANSWER_KEY = _load("_a3_answer_key", SOLUTION / "answer_key.py")
VARIANT = _load("_a3_variant", HANDOUT / "variant.py")


_submit = functools.partial(write_submission, "gated_seq2seq.py")


_only = functools.partial(only, A3)


_code_questions = functools.partial(code_questions, A3)


def _replace(source: str, old: str, new: str) -> str:
    assert old in source, old
    return source.replace(old, new)


def run_trusted(fn, case):
    """The trusted output, a mutant's AnyOf read as its first option."""
    return concrete(_run_trusted(fn, case))


# ------------------------------------------------------------------ whole submissions


def test_a3_has_100_points_and_every_graded_function():
    assert A3.total_points == 100
    assert [q.function for q in _code_questions()] == [
        "lstm_cell",
        "gru_cell",
        "dot_scores",
        "multiplicative_scores",
        "reduced_rank_scores",
        "additive_scores",
        "attend",
        "beam_search",
        "corpus_bleu",
        "greedy_decode",
    ]
    assert {q.function for q in _code_questions() if q.forbidden} == {"lstm_cell", "gru_cell"}
    ids = {m for q in _code_questions() for m in q.mutants}
    assert ids == set(A3_IDS)
    assert all(catalog.get(m).section for m in A3_IDS)


def test_a3_two_students_get_different_numbers_and_full_marks(tmp_path):
    ids = ("ada.lovelace@example.edu", "s1234567")
    seeds = [VARIANT.seed_for(s) for s in ids]
    assert seeds[0] != seeds[1]
    for q in _code_questions():
        hidden = [[c for c in q.cases(seed) if not c.visible] for seed in seeds]
        if q.function == "beam_search":  # hand-built trees are shared, the random ones differ
            random = [[c for c in h if "beam_size=" in c.name] for h in hidden]
            a, b = ([run_trusted(q.reference, c) for c in r] for r in random)
            assert len(a) == 7 and a != b, q.id
            continue
        a, b = (run_trusted(q.reference, c) for c in (hidden[0][-1], hidden[1][-1]))
        assert compare(a, b, q.tolerance, exact=q.integer), q.id
    assert VARIANT.numbers(ids[0]) != VARIANT.numbers(ids[1])
    for i, sid in enumerate(ids):
        folder = _submit(tmp_path, SOLUTION_SOURCE, ANSWER_KEY.render(sid), name=f"s{i}")
        report = grade_submission(folder, A3, student=sid, limits=FAST)
        assert report.score == 100, [
            (q.question_id, q.feedback) for q in report.questions if q.score < q.max_score
        ]
    # The default-variant answers are not the answers of another student.
    other = grade_submission(
        _submit(tmp_path, SOLUTION_SOURCE, ANSWER_KEY.render(None), name="x"),
        _only("a3.w_attn_scores", "a3.w_bleu_brevity"),
        student=ids[0],
        limits=FAST,
    )
    assert other.score < other.max_score


TORCH_STYLE = """
import math
import torch


def _t(x):
    return torch.as_tensor(x, dtype=torch.float32)


def lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    x, h, c, Wi, Wh, bi, bh = map(_t, (x, h, c, weight_ih, weight_hh, bias_ih, bias_hh))
    H = h.shape[0]
    pre = x @ Wi.T + bi + h @ Wh.T + bh
    i = torch.sigmoid(pre[0:H]); f = torch.sigmoid(pre[H:2 * H])
    g = torch.tanh(pre[2 * H:3 * H]); o = torch.sigmoid(pre[3 * H:])
    c2 = f * c + i * g
    return o * torch.tanh(c2), c2


def gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    x, h, Wi, Wh, bi, bh = map(_t, (x, h, weight_ih, weight_hh, bias_ih, bias_hh))
    H = h.shape[0]
    a, b = x @ Wi.T + bi, h @ Wh.T + bh
    r = torch.sigmoid(a[:H] + b[:H])
    z = torch.sigmoid(a[H:2 * H] + b[H:2 * H])
    n = torch.tanh(a[2 * H:] + r * b[2 * H:])
    return (1 - z) * n + z * h


def dot_scores(s, H):
    return _t(H) @ _t(s)


def multiplicative_scores(s, H, W):
    return _t(s) @ _t(W) @ _t(H).T


def reduced_rank_scores(s, H, U, V):
    return (_t(H) @ _t(V).T) @ (_t(U) @ _t(s))


def additive_scores(s, H, W1, W2, v):
    return torch.tanh(_t(H) @ _t(W1).T + _t(W2) @ _t(s)) @ _t(v)


def attend(scores, H):
    alpha = torch.softmax(_t(scores), dim=-1)
    return alpha, alpha @ _t(H)
"""


def test_a3_torch_float32_style_gets_full_marks(tmp_path):
    # Cells and attention in torch float32; beam search and BLEU in plain Python loops.
    tail = SOLUTION_SOURCE[
        SOLUTION_SOURCE.index(
            "# ---------------------------------------------------------------- decoding"
        ) :
    ]
    source = TORCH_STYLE + "\nimport numpy as np\nfrom collections import Counter\n\n" + tail
    code_only = dataclasses.replace(A3, questions=tuple(_code_questions()))
    report = grade_submission(_submit(tmp_path, source), code_only, limits=FAST)
    assert report.score == code_only.total_points, [
        q.feedback for q in report.questions if q.score < q.max_score
    ]


def test_a3_lstm_module_is_a_library_shortcut(tmp_path):
    cheat = """
    import torch
    cell = torch.nn.LSTMCell(x.shape[0], h.shape[0]).double()
    with torch.no_grad():
        cell.weight_ih.copy_(torch.as_tensor(weight_ih)); cell.weight_hh.copy_(torch.as_tensor(weight_hh))
        cell.bias_ih.copy_(torch.as_tensor(bias_ih)); cell.bias_hh.copy_(torch.as_tensor(bias_hh))
        h2, c2 = cell(torch.as_tensor(x)[None], (torch.as_tensor(h)[None], torch.as_tensor(c)[None]))
    return h2[0], c2[0]
"""
    start = SOLUTION_SOURCE.index('    """torch.nn.LSTMCell: blocks i, f, g, o')
    end = SOLUTION_SOURCE.index("def gru_cell")
    source = SOLUTION_SOURCE[:start] + cheat + "\n\n" + SOLUTION_SOURCE[end:]
    report = grade_submission(_submit(tmp_path, source), _only("a3.lstm_cell"), limits=FAST)
    q = report.questions[0]
    assert (
        q.score == 0
        and q.misconceptions == ["uses-library-shortcut"]
        and "torch.nn.LSTMCell" in q.feedback
    )


# ------------------------------------------------------------------ named mistakes

MISTAKES: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "lstm-gate-order": (
        "a3.lstm_cell",
        [("i, f, g, o = np.split(gates, 4)", "f, i, o, g = np.split(gates, 4)")],
    ),
    "lstm-output-uses-old-cell": (
        "a3.lstm_cell",
        [("h_new = o * np.tanh(c_new)", "h_new = o * np.tanh(c)")],
    ),
    "gru-update-flipped": (
        "a3.gru_cell",
        [("return (1.0 - z) * n + z * h", "return z * n + (1.0 - z) * h")],
    ),
    "gru-reset-before-matmul": (
        "a3.gru_cell",
        [
            (
                "n = np.tanh(i_n + r * h_n)",
                "k = h.shape[0]\n    n = np.tanh(i_n + weight_hh[2 * k:] @ (r * h) + bias_hh[2 * k:])",
            )
        ],
    ),
    "attention-no-softmax": (
        "a3.attend",
        [("alpha = _softmax(scores)", "alpha = np.asarray(scores)")],
    ),
    "additive-missing-tanh": (
        "a3.additive_scores",
        [("return np.tanh(H @ W1.T + W2 @ s) @ v", "return (H @ W1.T + W2 @ s) @ v")],
    ),
    "multiplicative-transposed": (
        "a3.multiplicative_scores",
        [("return H @ (W.T @ s)", "return H @ (W @ s)")],
    ),
    "beam-no-length-normalization": (
        "a3.beam_search",
        [("return score / n if length_normalize and n > 0 else score", "return score")],
    ),
    "bleu-no-brevity-penalty": (
        "a3.corpus_bleu",
        [("return bp * math.exp(log_sum / max_n)", "return math.exp(log_sum / max_n)")],
    ),
    "bleu-shortest-reference": (
        "a3.corpus_bleu",
        [
            (
                "r += min((len(ref) for ref in refs), key=lambda L: (abs(L - len(cand)), L))",
                "r += min(len(ref) for ref in refs)",
            )
        ],
    ),
    "bleu-unclipped-counts": (
        "a3.corpus_bleu",
        [
            (
                "matched += sum(min(k, max_ref[g]) for g, k in counts.items())",
                "matched += sum(k for g, k in counts.items() if max_ref[g] > 0)",
            )
        ],
    ),
    "bleu-sentence-average": (  # nltk's sentence_bleu, averaged over the candidates
        "a3.corpus_bleu",
        [
            (
                "def corpus_bleu(candidates, references, max_n=4):\n"
                '    """Corpus BLEU: clipped n-gram precisions, geometric mean, brevity penalty."""\n',
                "def corpus_bleu(candidates, references, max_n=4):\n"
                '    """The mean of the sentences\' BLEU scores."""\n'
                "    scores = [_bleu([c], [r], max_n) for c, r in zip(candidates, references)]\n"
                "    return sum(scores) / len(scores)\n\n\n"
                "def _bleu(candidates, references, max_n=4):\n",
            )
        ],
    ),
    "bleu-smoothed": (  # nltk's method1: epsilon 0.1 matches for a zero count
        "a3.corpus_bleu",
        [
            (
                "        if matched == 0 or total == 0:\n            return 0.0\n",
                "        if total == 0:\n            return 0.0\n        if matched == 0:\n"
                "            matched = 0.1\n",
            )
        ],
    ),
    "beam-eos-score-dropped": (
        "a3.beam_search",
        [
            (
                "                finished.append((tokens, score))",
                "                finished.append((tokens, score - float(np.asarray("
                "next_log_probs(tokens[:-1]))[eos])))",
            )
        ],
    ),
    "beam-finished-leave-the-beam": (  # fairseq's step
        "a3.beam_search",
        [
            (
                "        live = []\n        for tokens, score in candidates[:beam_size]:\n"
                "            if tokens[-1] == eos:\n                finished.append((tokens, score))\n"
                "            else:\n                live.append((tokens, score))",
                "        top = candidates[: 2 * beam_size]\n"
                "        finished += [c for c in top[:beam_size] if c[0][-1] == eos]\n"
                "        live = [c for c in top if c[0][-1] != eos][:beam_size]",
            )
        ],
    ),
    # the stop test inverted (cosmic-ray's `>=` -> `<`; `not live` -> `live` does the same)
    "beam-stops-after-first-step": (
        "a3.beam_search",
        [
            (
                "if len(finished) >= beam_size or not live:",
                "if len(finished) < beam_size or not live:",
            )
        ],
    ),
    "beam-length-normalize-inverted": (
        "a3.beam_search",
        [
            (
                "return score / n if length_normalize and n > 0 else score",
                "return score / n if not length_normalize and n > 0 else score",
            )
        ],
    ),
    "bleu-arithmetic-mean": (
        "a3.corpus_bleu",
        [
            ("log_sum += math.log(matched / total)", "log_sum += matched / total"),
            ("return bp * math.exp(log_sum / max_n)", "return bp * (log_sum / max_n)"),
        ],
    ),
    "greedy-returns-bos": (
        "a3.greedy",
        [
            (
                "        if w == eos:\n            break\n    return tokens[1:]",
                "        if w == eos:\n            break\n    return tokens",
            )
        ],
    ),
    "greedy-ignores-eos": (
        "a3.greedy",
        [
            (
                "        if w == eos:\n            break\n    return tokens[1:]",
                "    return tokens[1:]",
            )
        ],
    ),
    # right on every id CPython caches (< 257), wrong past them
    "eos-compared-by-identity": (
        "a3.greedy",
        [("        if w == eos:\n            break", "        if w is eos:\n            break")],
    ),
    "greedy-ties-to-larger-id": (
        "a3.greedy",
        [
            (
                "w = int(np.argmax(logp))  # the first maximum: the smaller id on a tie",
                "w = int(len(logp) - 1 - np.argmax(logp[::-1]))",
            )
        ],
    ),
}


def test_a3_other_gate_orders_are_named_too(tmp_path):
    # i, f, o, g (the candidate last) is another natural misreading of torch's blocks.
    source = _replace(
        SOLUTION_SOURCE, "i, f, g, o = np.split(gates, 4)", "i, f, o, g = np.split(gates, 4)"
    )
    report = grade_submission(_submit(tmp_path, source), _only("a3.lstm_cell"), limits=FAST)
    assert report.questions[0].misconceptions == ["lstm-gate-order"]


def test_a3_attention_normalised_by_the_plain_sum_is_no_softmax(tmp_path):
    # Dividing the scores by their sum (no exp) is the other natural form of a missing softmax.
    source = _replace(
        SOLUTION_SOURCE, "alpha = _softmax(scores)", "alpha = np.asarray(scores) / np.sum(scores)"
    )
    report = grade_submission(_submit(tmp_path, source), _only("a3.attend"), limits=FAST)
    assert report.questions[0].misconceptions == ["attention-no-softmax"]
    assert report.questions[0].score < report.questions[0].max_score


def test_a3_a_beam_that_keeps_every_candidate_is_docked_but_not_named(tmp_path):
    """No pruning to the beam coincides with the raw-score winner on some trees; the student
    got right cases where a missing normalisation shows, so it is not the mistake: name none."""
    source = _replace(
        SOLUTION_SOURCE,
        "for tokens, score in candidates[:beam_size]:",
        "for tokens, score in candidates:",
    )
    for student in ("ann@uni.edu", "bob@uni.edu", "cy@uni.edu", "di@uni.edu"):
        folder = _submit(tmp_path, source, name=student.split("@")[0])
        report = grade_submission(folder, _only("a3.beam_search"), student=student, limits=FAST)
        q = report.questions[0]
        assert q.score < q.max_score, student
        assert q.misconceptions == [], (student, q.feedback)


def test_a3_every_catalog_id_has_a_student_style_mistake():
    assert set(MISTAKES) == set(A3_IDS)


@pytest.mark.parametrize("mid", A3_IDS)
def test_a3_mistake_is_named(tmp_path, mid):
    qid, edits = MISTAKES[mid]
    source = SOLUTION_SOURCE
    for old, new in edits:
        source = _replace(source, old, new)
    report = grade_submission(_submit(tmp_path, source), _only(qid), limits=FAST)
    q = report.questions[0]
    assert q.misconceptions == [mid], (q.misconceptions, q.feedback)
    assert q.score < q.max_score
    assert catalog.get(mid).title in q.feedback


# ------------------------------------------------------------------ hidden cases


def test_a3_mutants_pairwise_separated_on_hidden_cases():
    for q in _code_questions():
        if not q.mutants:
            continue
        hidden = [c for c in q.cases(0) if not c.visible]
        fns = {"reference": q.reference, **q.mutants}
        outs = {}
        for name, f in fns.items():
            outs[name] = []
            for c in hidden:
                try:
                    outs[name].append(run_trusted(f, c))
                except ValueError:  # a transposed W that does not fit (d_s != d_h)
                    outs[name].append(None)
        for a, b in itertools.combinations(fns, 2):
            assert any(
                x is not None and y is not None and compare(y, x, q.tolerance, exact=q.integer)
                for x, y in zip(outs[a], outs[b])
            ), (q.id, a, b)


def test_a3_every_catalog_id_reachable_from_a_hidden_case():
    # A mutant's output differs from the reference's on some hidden case, and from every other
    # mutant's on some hidden case (not always the same one: `w is eos` and a decoder ignoring
    # eos agree wherever the ids are large), so a student with exactly that mistake is explained
    # by it alone over the hidden cases.
    reached = set()
    for q in _code_questions():
        hidden = [c for c in q.cases(0) if not c.visible]
        outs: dict[str, list[Any]] = {}
        for name, f in [("reference", q.reference), *q.mutants.items()]:
            outs[name] = []
            for c in hidden:
                try:
                    outs[name].append(run_trusted(f, c))
                except ValueError:
                    outs[name].append(None)

        def apart(a: str, b: str, q: Any = q, outs: dict[str, list[Any]] = outs) -> bool:
            return any(
                x is not None and y is not None and compare(x, y, q.tolerance, exact=q.integer)
                for x, y in zip(outs[a], outs[b])
            )

        for mid in q.mutants:
            if apart(mid, "reference") and all(apart(mid, m) for m in q.mutants if m != mid):
                reached.add(mid)
    assert reached == set(A3_IDS)


def _closest(n: int, refs: list[list[str]]) -> list[str]:
    return min(refs, key=lambda r: (abs(len(r) - n), len(r)))


def test_a3_hidden_cases_have_the_designed_features():
    q = A3.question("a3.multiplicative_scores")
    shapes = [c.args[2].shape for c in q.cases(0) if not c.visible]
    assert any(a != b for a, b in shapes) and any(a == b for a, b in shapes)
    square = [c.args[2] for c in q.cases(0) if c.args[2].shape[0] == c.args[2].shape[1]]
    assert all(not np.allclose(W, W.T) for W in square)
    bleu_cases = [c for c in A3.question("a3.corpus_bleu").cases(0) if not c.visible]
    kinds = {"short": 0, "tie": 0, "long": 0, "zero": 0, "every-longer": 0}
    for c in bleu_cases:
        cands, refs = c.args
        c_total = sum(map(len, cands))
        r_total = sum(len(_closest(len(cand), rs)) for cand, rs in zip(cands, refs))
        if "BLEU 0)" in c.name:  # the zero-precision branch: some p_n is 0
            kinds["zero"] += 1
            assert run_trusted(suite.bleu.corpus_bleu, c) == 0.0
            continue
        if "longer than all its references" in c.name:  # the domain's edge: c > every r
            kinds["every-longer"] += 1
            assert all(len(cand) > max(map(len, rs)) for cand, rs in zip(cands, refs))
            continue
        # a repeated word in every other corpus (clipping matters)
        assert any(max(cand.count(w) for w in cand) >= 3 for cand in cands)
        if "longer than the references" in c.name:  # BP = 1, and an inverted condition is not
            kinds["long"] += 1
            assert c_total > r_total
            continue
        assert c_total <= r_total  # BP != 1
        if "equally far" in c.name:  # a tie, the longer reference listed first
            kinds["tie"] += 1
            cand, rs = cands[0], [len(r) for r in refs[0]]
            n = len(cand)
            assert n - 1 >= 0 and (n + (rs[0] - n)) == rs[0] and (2 * n - rs[0]) in rs and rs[0] > n
        else:  # closest != shortest somewhere
            kinds["short"] += 1
            assert c_total < sum(min(len(r) for r in rs) for rs in refs)
            assert any(_closest(len(cand), rs) != min(rs, key=len) for cand, rs in zip(cands, refs))
    # more long corpora than short ones: an inverted condition must not look like "no penalty"
    assert (
        kinds["tie"] == 1
        and kinds["zero"] == 2  # no 4-gram in common; one-word candidates (no bigram at all)
        and kinds["every-longer"] == 1
        and kinds["long"] > kinds["short"] + kinds["tie"]
    )


# nltk warns, as it should, on the cases with no n-gram in common (BLEU 0): they are on purpose.
@pytest.mark.filterwarnings("ignore:\\s*The hypothesis contains 0 counts:UserWarning")
def test_a3_bleu_hidden_cases_agree_with_nltk():
    from nltk.translate.bleu_score import corpus_bleu as nltk_bleu

    for c in A3.question("a3.corpus_bleu").cases(0):
        cands, refs = c.args
        max_n = c.kwargs.get("max_n", 4)
        want = nltk_bleu(refs, cands, weights=tuple([1.0 / max_n] * max_n))
        assert run_trusted(suite.bleu.corpus_bleu, c) == pytest.approx(want, rel=1e-12)


def test_a3_cell_hidden_cases_agree_with_torch():
    torch = pytest.importorskip("torch")
    for c in A3.question("a3.lstm_cell").cases(0):
        x, h, cc, Wi, Wh, bi, bh = (torch.tensor(a) for a in c.args)
        cell = torch.nn.LSTMCell(x.shape[0], h.shape[0]).double()
        with torch.no_grad():
            for p, v in zip(
                (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh), (Wi, Wh, bi, bh)
            ):
                p.copy_(v)
            h2, c2 = cell(x[None], (h[None], cc[None]))
        got = run_trusted(suite.gated.lstm_cell, c)
        np.testing.assert_allclose(got[0], h2[0].numpy(), rtol=1e-10)
        np.testing.assert_allclose(got[1], c2[0].numpy(), rtol=1e-10)
    for c in A3.question("a3.gru_cell").cases(0):
        x, h, Wi, Wh, bi, bh = (torch.tensor(a) for a in c.args)
        cell = torch.nn.GRUCell(x.shape[0], h.shape[0]).double()
        with torch.no_grad():
            for p, v in zip(
                (cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh), (Wi, Wh, bi, bh)
            ):
                p.copy_(v)
            want = cell(x[None], h[None])[0].numpy()
        np.testing.assert_allclose(run_trusted(suite.gated.gru_cell, c), want, rtol=1e-10)
    assert run_trusted(
        suite.gated.gru_cell, A3.question("a3.gru_cell").cases(0)[0]
    ) == pytest.approx([0.41])


# ------------------------------------------------------------------ written questions


def _written(key: str) -> WrittenQuestion:
    return next(q for q in A3.questions if isinstance(q, WrittenQuestion) and q.key == key)


def test_a3_written_expected_values_agree_with_outside_authorities():
    torch = pytest.importorskip("torch")
    import sympy
    from nltk.translate.bleu_score import brevity_penalty, closest_ref_length

    v = VARIANT.numbers(None)
    s, H = (
        torch.tensor(v["attention_s"], dtype=torch.float64),
        torch.tensor(v["attention_H"], dtype=torch.float64),
    )
    e = H @ s
    w = torch.softmax(e, dim=0)
    np.testing.assert_allclose(_written("attn_scores").expected(v), e.numpy(), rtol=1e-12)
    np.testing.assert_allclose(_written("attn_weights").expected(v), w.numpy(), rtol=1e-12)
    np.testing.assert_allclose(_written("attn_output").expected(v), (w @ H).numpy(), rtol=1e-12)

    # The LSTM carry: autograd of torch's LSTMCell cell output w.r.t. the old cell is diag(f).
    rng = np.random.default_rng(0)
    cell = torch.nn.LSTMCell(3, 1).double()
    x, h = torch.tensor(rng.normal(size=(1, 3))), torch.tensor(rng.normal(size=(1, 1)))
    c = torch.tensor([[0.7]], dtype=torch.float64, requires_grad=True)
    _, c2 = cell(x, (h, c))
    (dc,) = torch.autograd.grad(c2.sum(), c)
    pre = x @ cell.weight_ih.T + cell.bias_ih + h @ cell.weight_hh.T + cell.bias_hh
    f = torch.sigmoid(pre[0, 1])  # torch's second block is the forget gate
    assert dc.item() == pytest.approx(f.item(), rel=1e-12)
    assert sympy.sympify(_written("lstm_carry").expected(v)) == sympy.Symbol("f_t")

    # Parameter counts: torch modules without biases, d_s = 5, d_h = 7, k = 3.
    d_s, d_h, k = 5, 7, 3
    count = {
        "params_multiplicative": sum(
            p.numel() for p in torch.nn.Bilinear(d_s, d_h, 1, bias=False).parameters()
        ),
        "params_reduced_rank": (
            torch.nn.Linear(d_s, k, bias=False).weight.numel()
            + torch.nn.Linear(d_h, k, bias=False).weight.numel()
        ),
        "params_additive": sum(
            m.weight.numel()
            for m in (
                torch.nn.Linear(d_h, k, bias=False),
                torch.nn.Linear(d_s, k, bias=False),
                torch.nn.Linear(k, 1, bias=False),
            )
        ),
    }
    syms = dict(zip(("d_s", "d_h", "k"), sympy.symbols("d_s d_h k")))
    for key, n in count.items():
        expr = sympy.sympify(_written(key).expected(v), locals=syms)
        assert expr.subs({syms["d_s"]: d_s, syms["d_h"]: d_h, syms["k"]: k}) == n, key

    # BP with nltk's own closest-reference rule and brevity penalty.
    refs = [[["w"] * L for L in lens] for lens in v["bleu_reference_lengths"]]
    cs = v["bleu_candidate_lengths"]
    r = sum(closest_ref_length(rs, c_i) for rs, c_i in zip(refs, cs))
    assert _written("bleu_brevity_penalty").expected(v) == pytest.approx(
        brevity_penalty(r, sum(cs)), rel=1e-12
    )

    # The beam tree by hand (README): step 1 keeps [a] (log .6) and [b] (log .3); step 2 keeps
    # [a eos] (log .3, finished) and [a b] (log .24); step 3 keeps [a b eos] (log .216, finished):
    # two finished, stop. Raw: log .3 = -1.20 > log .216 = -1.53 -> [a eos].
    # Per token: -1.20/2 = -0.60 < -1.53/3 = -0.51 -> [a b eos].
    assert _written("beam_normalized").expected(v) == [2, 3, 1]
    assert _written("beam_raw").expected(v) == [2, 1]


def test_a3_greedy_vs_best_by_hand_for_several_keys():
    # Greedy takes a (P(a) > 1/2), then <eos> (q_a beats the two halves of 1 - q_a): P = p_a q_a.
    # The finished outputs within two tokens are <eos> (P 0), a <eos> and b <eos>: the best is
    # b <eos>, P = (1 - p_a) q_b, which greedy never reaches: it cannot undo its first choice.
    for sid in (None, "ada", "s1234567", "grace@example.edu"):
        v = VARIANT.numbers(sid)
        p_a, q_a, q_b = v["greedy_p_a"], v["greedy_q_a"], v["greedy_q_b"]
        assert p_a > 0.5 and q_a > (1 - q_a) / 2 and (1 - p_a) * q_b > p_a * q_a
        got = _written("greedy_vs_best").expected(v)
        np.testing.assert_allclose(got, [p_a * q_a, (1 - p_a) * q_b], rtol=1e-6)


def test_a3_written_wrong_answers_are_named(tmp_path):
    v = VARIANT.numbers(None)
    raw_weights = [float(x) for x in suite._attn_raw(v)[0]]
    shortest = suite._bp(v, lambda c, lens: min(lens))
    answers = (
        f"attn_weights = {raw_weights}\nbeam_normalized = [2, 1]\nbeam_raw = [1, 3, 2]\n"
        f"bleu_brevity_penalty = {shortest!r}\n"
    )
    only = _only("a3.w_attn_weights", "a3.w_beam_normalized", "a3.w_beam_raw", "a3.w_bleu_brevity")
    report = grade_submission(_submit(tmp_path, SOLUTION_SOURCE, answers), only, limits=FAST)
    named = {q.question_id: q.misconceptions for q in report.questions}
    assert report.score == 0
    assert named == {
        "a3.w_attn_weights": ["attention-no-softmax"],
        "a3.w_beam_normalized": ["beam-no-length-normalization"],
        "a3.w_beam_raw": [],
        "a3.w_bleu_brevity": ["bleu-shortest-reference"],
    }


def test_a3_every_variant_separates_the_written_wrong_forms():
    for sid in (None, "a", "b", "c", "student-42", "zz@example.edu"):
        v = VARIANT.numbers(sid)
        right = _written("bleu_brevity_penalty").expected(v)
        wrongs = [wf.answer for wf in _written("bleu_brevity_penalty").wrong_forms(v)]
        assert right < 1 and all(abs(w - right) > 1e-2 for w in wrongs) and wrongs[0] != wrongs[1]
        for key in ("attn_weights", "attn_output"):
            expected = _written(key).expected(v)
            for wf in _written(key).wrong_forms(v):
                assert np.all(np.isfinite(wf.answer))
                assert not np.allclose(expected, wf.answer, rtol=1e-2)


def test_a3_variant_tool_prints_the_students_numbers():
    out = subprocess.run(
        [sys.executable, str(HANDOUT / "variant.py"), "Ada"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    n = VARIANT.numbers("ada")
    assert str(n["attention_s"]) in out and str(n["bleu_reference_lengths"][0]) in out
    assert VARIANT.seed_for(None) == 0 and VARIANT.seed_for("  ADA ") == VARIANT.seed_for("ada")
