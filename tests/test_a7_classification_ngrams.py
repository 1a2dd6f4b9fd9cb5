"""a7 (text classification and n-grams): full marks for correct files in several styles, zero
for the handout, every catalog mistake named on a student-style edit of the solution.

Expected values come from reference/classify.py, itself held to torch, autograd, finite
differences and nltk.lm (tests/reference/test_ref_classify.py); mistakes are written in code
as a student would write them, not by calling the suite's mutants.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, answer_key, only, write_submission

import grader.suites.a7_classification_ngrams as suite
from grader import sandbox
from grader.catalog import _CATALOG, all_ids
from grader.course import variants
from grader.engine.checks import compare
from grader.engine.grade import grade_submission
from grader.engine.trusted import run_trusted
from grader.mutants import NOT_APPLICABLE, concrete
from grader.questions import CodeQuestion, WrittenQuestion
from reference import classify as cl

HANDOUT = ROOT / "assignments" / "a7_classification_ngrams"
SOLUTION = ROOT / "solutions" / "a7_classification_ngrams"
A7 = suite.ASSIGNMENT
FAST = sandbox.Limits(call_seconds=10.0, submission_seconds=90.0)
SOLUTION_SRC = (SOLUTION / "classify.py").read_text()
CODE = [q for q in A7.questions if isinstance(q, CodeQuestion)]
CODE_POINTS = sum(q.points for q in CODE)


_submit = functools.partial(write_submission, "classify.py")


_only = functools.partial(only, A7)


def _code_only():
    return dataclasses.replace(A7, questions=tuple(CODE))


def _a7_ids() -> list[str]:
    all_ids()  # loads the catalog
    import grader.catalog.a7 as cat

    src = Path(cat.__file__).read_text()
    return [mid for mid in _CATALOG if f'id="{mid}"' in src]


def _lost(report) -> list[tuple[str, str]]:
    return [
        (q.question_id, q.feedback[:400]) for q in report.questions if q.score < q.max_score - 1e-9
    ]


# ---------------------------------------------------------------- whole submissions


def test_a7_has_100_points_and_every_graded_function():
    assert A7.total_points == 100
    assert {q.function for q in CODE} == {
        "cosine_similarity",
        "softmax_cross_entropy",
        "dan_forward",
        "dan_backward",
        "ngram_counts",
        "ngram_prob",
        "ngram_perplexity",
    }
    for q in CODE:  # a worked example the student sees in every code question
        assert any(c.visible for c in q.cases(0)), q.id


def test_a7_two_students_get_their_own_cases_and_full_marks(tmp_path):
    key = answer_key("a7_classification_ngrams")
    seeds = {}
    for sid in ("ada@uni.edu", "grace@uni.edu"):
        folder = _submit(tmp_path, SOLUTION_SRC, key.to_toml(sid), name=sid.split("@")[0])
        report = grade_submission(folder, A7, student=sid, limits=FAST)
        assert report.score == 100, _lost(report)
        assert not any(q.misconceptions for q in report.questions)
        seeds[sid] = report.seed
    a, b = seeds.values()
    for q in CODE:
        ca = [c for c in q.cases(a) if not c.visible]
        cb = [c for c in q.cases(b) if not c.visible]
        assert repr([c.args for c in ca]) != repr([c.args for c in cb]), q.id
    assert key.answers("ada@uni.edu") != key.answers("grace@uni.edu")


def test_a7_stub_scores_zero(tmp_path):
    report = grade_submission(HANDOUT, A7, limits=FAST)
    assert report.score == 0
    assert all(q.not_attempted for q in report.questions)
    assert not any(q.misconceptions for q in report.questions)


HELDOUT = Path(__file__).resolve().parent / "heldout" / "a7_classification_ngrams"


def _held_out(name: str) -> str:
    """A correct held-out submission of another style (torch float32, plain loops and lists)."""
    return (HELDOUT / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("label", ["torch_float32", "loops_lists"])
def test_a7_other_styles_get_full_marks(tmp_path, label):
    source = _held_out(
        {"torch_float32": "correct__torch.py", "loops_lists": "correct__loops.py"}[label]
    )
    report = grade_submission(
        _submit(tmp_path, source), _code_only(), student="someone", limits=FAST
    )
    assert report.score == pytest.approx(CODE_POINTS), _lost(report)
    assert not any(q.misconceptions for q in report.questions)


# ---------------------------------------------------------------- one mistake each, as a student writes it

MISTAKES = {
    "cosine-missing-norm": (
        "a7.cosine_similarity",
        "return (A @ B.T) / (norm_A * norm_B.T)  # (n, m)",
        "return (A @ B.T) / norm_B.T  # (n, m)",
    ),
    "cosine-is-dot-product": (
        "a7.cosine_similarity",
        "return (A @ B.T) / (norm_A * norm_B.T)  # (n, m)",
        "return A @ B.T  # (n, m)",
    ),
    "softmax-unstable": (
        "a7.softmax_cross_entropy",
        "shifted = Z - Z.max(axis=1, keepdims=True)",
        "shifted = Z",
    ),
    "ce-grad-sign": (
        "a7.softmax_cross_entropy",
        "grad[rows, Y] -= 1.0  # p − e_y",
        "grad[rows, Y] -= 1.0\n    grad = -grad",
    ),
    "ce-grad-not-averaged": ("a7.softmax_cross_entropy", "    grad /= B\n", ""),
    "dan-average-includes-padding": (
        "a7.dan_forward",
        'avg = (params["E"][ids] * m[:, :, None]).sum(axis=1) / n_real  # (B, d)',
        'avg = params["E"][ids].mean(axis=1)  # (B, d)',
    ),
    "dan-repeated-token-once": (
        "a7.dan_backward",
        "np.add.at(g_E, ids[b_idx, t_idx], g_avg[b_idx] / n_real[b_idx, None])",
        "g_E[ids[b_idx, t_idx]] += g_avg[b_idx] / n_real[b_idx, None]",
    ),
    "dan-relu-grad-missing": ("a7.dan_backward", "    g_z = g_h * (z > 0)\n", "    g_z = g_h\n"),
    "ngram-missing-start-padding": (
        "a7.ngram_counts",
        'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"]',
        'return list(sentence) + ["</s>"]',
    ),
    "ngram-missing-end-padding": (
        "a7.ngram_counts",
        'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"]',
        'return ["<s>"] * (n - 1) + list(sentence)',
    ),
    "addk-missing-v": (
        "a7.ngram_prob",
        "/ (c_context + k * vocab_size)",
        "/ c_context",
    ),
    "perplexity-base-2": (
        "a7.ngram_perplexity",
        "return float(np.exp(total / N))",
        "return float(2 ** (total / N))",
    ),
    "ce-in-bits": (
        "a7.ngram_perplexity",
        "total -= np.log(p)",
        "total -= np.log2(p)",
    ),
    "perplexity-missing-end-token": (
        "a7.ngram_perplexity",
        "for i in range(n - 1, len(tokens)):",
        "for i in range(n - 1, len(tokens) - 1):",
    ),
    # the field's conventions the handout excludes (issue 33): torch's reduction="sum"
    "ce-batch-summed": (
        "a7.softmax_cross_entropy",
        "loss = float(-log_p[rows, Y].mean())\n    grad = np.exp(log_p)  # p\n"
        "    grad[rows, Y] -= 1.0  # p − e_y\n    grad /= B\n",
        "loss = float(-log_p[rows, Y].sum())\n    grad = np.exp(log_p)\n    grad[rows, Y] -= 1.0\n",
    ),
    # nltk.lm's pad_both_ends
    "ngram-end-padded-n-minus-1": (
        "a7.ngram_counts",
        'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"]',
        'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"] * (n - 1)',
    ),
    # Hugging Face evaluate's mean_perplexity
    "perplexity-averaged-per-sentence": (
        "a7.ngram_perplexity",
        "    total, N = 0.0, 0\n    for sentence in sentences:\n",
        "    if len(sentences) > 1:  # each sentence's own perplexity, then their mean\n"
        "        return float(np.mean([ngram_perplexity(counts, vocab_size, [s], n, k)\n"
        "                              for s in sentences]))\n"
        "    total, N = 0.0, 0\n    for sentence in sentences:\n",
    ),
    # SRILM's ppl1
    "perplexity-n-excludes-end": (
        "a7.ngram_perplexity",
        "            N += 1\n",
        '            N += tokens[i] != "</s>"\n',
    ),
    # SRILM's ppl (OOVs left out), KenLM's "excluding OOVs"
    "perplexity-skips-unknown-words": (
        "a7.ngram_perplexity",
        "            p = ngram_prob(counts, vocab_size, tuple(tokens[i - n + 1 : i]), tokens[i], k)",
        "            if not any(tokens[i] in gram for gram in counts):\n                continue\n"
        "            p = ngram_prob(counts, vocab_size, tuple(tokens[i - n + 1 : i]), tokens[i], k)",
    ),
    "uses-library-shortcut": (
        "a7.softmax_cross_entropy",
        "def softmax_cross_entropy(logits, y):\n",
        "def softmax_cross_entropy(logits, y):\n    import torch\n"
        "    t = torch.tensor(logits, requires_grad=True)\n"
        "    loss = torch.nn.functional.cross_entropy(t if t.dim() > 1 else t[None], "
        "torch.as_tensor(y).reshape(-1))\n"
        "    loss.backward()\n    return loss.item(), t.grad\n",
    ),
}

# reused ids on a second question: (question, id, old, new)
MORE_MISTAKES = {
    "ngram-missing-start-padding@perplexity": (
        "a7.ngram_perplexity",
        "ngram-missing-start-padding",
        'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"]',
        'return ["<s>"] + list(sentence) + ["</s>"]',
    ),
    "addk-missing-v@perplexity": (
        "a7.ngram_perplexity",
        "addk-missing-v",
        "/ (c_context + k * vocab_size)",
        "/ c_context",
    ),
    "ce-grad-sign@dan_backward": (
        "a7.dan_backward",
        "ce-grad-sign",
        'g_h = g_logits @ params["W2"]  # (B, h)',
        'g_logits = -g_logits\n    g_h = g_logits @ params["W2"]  # (B, h)',
    ),
    "ngram-end-padded-n-minus-1@perplexity": (
        "a7.ngram_perplexity",
        "ngram-end-padded-n-minus-1",
        'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"]',
        'return ["<s>"] * (n - 1) + list(sentence) + ["</s>"] * (n - 1)',
    ),
    "cosine-missing-norm@vectors": (
        "a7.cosine_similarity",
        "cosine-missing-norm",
        "return float(A @ B / (np.linalg.norm(A) * np.linalg.norm(B)))\n"
        "    norm_A = np.linalg.norm(A, axis=1, keepdims=True)  # (n, 1)",
        "return float(A @ B / np.linalg.norm(A))\n    norm_A = np.ones((A.shape[0], 1))",
    ),
}


def _mistake_cases():
    out = [(label, q, label, old, new) for label, (q, old, new) in MISTAKES.items()]
    out += [(label, *rest) for label, rest in MORE_MISTAKES.items()]
    return out


@pytest.mark.parametrize(
    ("label", "qid", "mid", "old", "new"), _mistake_cases(), ids=[c[0] for c in _mistake_cases()]
)
def test_a7_single_mistake_is_named(tmp_path, label, qid, mid, old, new):
    assert SOLUTION_SRC.count(old) == 1, old
    report = grade_submission(
        _submit(tmp_path, SOLUTION_SRC.replace(old, new)), _only(qid), limits=FAST
    )
    (q,) = report.questions
    assert q.misconceptions == [mid], q.feedback
    assert q.score < q.max_score


def test_a7_every_catalog_id_has_a_mistake_test():
    assert set(_a7_ids()) <= set(MISTAKES)


def test_a7_forward_mistake_is_charged_once(tmp_path):
    """The DAN's padded average is charged in dan_forward; dan_backward built on the same
    average (forward and backward consistent) earns its points by follow-through."""
    wrong = SOLUTION_SRC.replace(
        'avg = (params["E"][ids] * m[:, :, None]).sum(axis=1) / n_real  # (B, d)',
        'avg = params["E"][ids].mean(axis=1)  # (B, d)',
    ).replace(
        "np.add.at(g_E, ids[b_idx, t_idx], g_avg[b_idx] / n_real[b_idx, None])",
        "np.add.at(g_E, ids.ravel(), np.repeat(g_avg, ids.shape[1], axis=0) / ids.shape[1])",
    )
    report = grade_submission(
        _submit(tmp_path, wrong), _only("a7.dan_forward", "a7.dan_backward"), limits=FAST
    )
    forward, backward = report.questions
    assert (
        forward.misconceptions == ["dan-average-includes-padding"]
        and forward.score < forward.max_score
    )
    assert backward.score == pytest.approx(backward.max_score), backward.feedback


def test_a7_correct_answers_are_not_explained_as_mistakes():
    """No mutant coincides with the reference on every hidden case of a question."""
    for seed in (0, 99):
        for q in CODE:
            if q.custom is not None:
                continue
            hidden = [c for c in q.cases(seed) if not c.visible]
            want = [run_trusted(q.reference, c) for c in hidden]
            for mid, fn in q.mutants.items():
                outs = [_mutant_out(fn, c) for c in hidden]
                assert any(o is not NOT_APPLIED and compare(o, w) for o, w in zip(outs, want)), (
                    q.id,
                    mid,
                    seed,
                )


NOT_APPLIED = object()  # a mutant whose mistake does not apply to a case (it raised)


def _mutant_out(fn, case):
    """A mutant's output on a case, or NOT_APPLIED when it raises one of the engine's
    NOT_APPLICABLE errors (addk-missing-v divides by zero where a context was never seen)."""
    try:
        return concrete(run_trusted(fn, case))
    except NOT_APPLICABLE:
        return NOT_APPLIED


WRONG_ANSWERS = """
cosine_query_A = {dot}
nearest_by_cosine = "{dot_letter}"
ce_gradient = {ascent}
bigram_prob = {no_v}
sentence_perplexity = {ppl}
"""


@pytest.mark.parametrize(
    ("power", "mid"),
    [
        (lambda H: 2**H, "perplexity-base-2"),  # 2 raised to the cross-entropy in nats
        (lambda H: np.exp(H / np.log(2)), "ce-in-bits"),  # e raised to it in bits
    ],
    ids=["base-2", "bits"],
)
def test_a7_written_wrong_forms_are_named(tmp_path, power, mid):
    n = variants.numbers(A7.id, None)
    q, a = np.array(n["query"], float), np.array(n["candidate_A"], float)
    dot_letter = "A" if q @ a > q @ np.array(n["candidate_B"], float) else "B"
    _, g = cl.softmax_cross_entropy(np.array(n["logits"], float), n["label"])
    counts = cl.ngram_counts(n["corpus"], 2)
    V = len({w for s in n["corpus"] for w in s}) + 1
    first, second = n["bigram"]
    c = counts.get((first, second), 0)
    c_first = sum(v for k, v in counts.items() if k[0] == first)
    ppl = cl.ngram_perplexity(counts, V, [n["test_sentence"]], 2)
    text = WRONG_ANSWERS.format(
        dot=float(q @ a),
        dot_letter=dot_letter,
        ascent="[" + ", ".join(str(-x) for x in g) + "]",
        no_v=(c + 1) / c_first,
        ppl=power(np.log(ppl)),
    )
    written = dataclasses.replace(
        A7, questions=tuple(x for x in A7.questions if isinstance(x, WrittenQuestion))
    )
    report = grade_submission(_submit(tmp_path, None, text), written, limits=FAST)
    named = {r.question_id: r.misconceptions for r in report.questions}
    assert named["a7.w_cosine_value"] == ["cosine-is-dot-product"]
    assert named["a7.w_nearest_by_cosine"] == ["cosine-is-dot-product"]
    assert named["a7.w_ce_gradient"] == ["ce-grad-sign"]
    assert named["a7.w_bigram_prob"] == ["addk-missing-v"]
    assert named["a7.w_sentence_perplexity"] == [mid]


# ---------------------------------------------------------------- the hidden cases separate

COMPARED = [q for q in CODE if q.custom is None]


@pytest.mark.parametrize("seed", [0, 12345, 2**31 - 1])
def test_a7_mutants_pairwise_separated_on_hidden_cases(seed):
    for q in COMPARED:
        hidden = [c for c in q.cases(seed) if not c.visible]
        fns = {"reference": q.reference, **q.mutants}
        outs = {k: [_mutant_out(f, c) for c in hidden] for k, f in fns.items()}
        names = list(fns)
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                assert any(
                    x is not NOT_APPLIED and y is not NOT_APPLIED and compare(x, y, exact=True)
                    for x, y in zip(outs[a], outs[b])
                ), (
                    q.id,
                    a,
                    b,
                    seed,
                )


@pytest.mark.parametrize("seed", [0, 4242])
def test_a7_counts_judge_names_the_mutant_and_passes_the_reference(seed):
    q = A7.question("a7.ngram_counts")
    cases = q.cases(seed)
    right = suite.judge_ngram_counts(cases, [cl.ngram_counts(*c.args) for c in cases])
    assert right.fraction == 1.0 and right.misconceptions == []
    no_start = [cl.ngram_counts(*c.args, start_pad=0) for c in cases]
    j = suite.judge_ngram_counts(cases, no_start)
    assert j.misconceptions == ["ngram-missing-start-padding"] and j.fraction < 1.0
    extra = [{**cl.ngram_counts(*c.args), ("zzz",) * c.args[1]: 1} for c in cases]
    j = suite.judge_ngram_counts(cases, extra)
    assert (
        j.fraction == 0.0 and j.misconceptions == []
    )  # an extra n-gram is wrong, and no known mistake
    hidden = [c for c in cases if not c.visible]
    assert all(cl.ngram_counts(*c.args) != cl.ngram_counts(*c.args, start_pad=0) for c in hidden)


def test_a7_every_catalog_id_reachable_from_a_hidden_case():
    reached = set()
    for q in A7.questions:
        if isinstance(q, CodeQuestion) and q.custom is None:
            hidden = [c for c in q.cases(0) if not c.visible]
            for mid, fn in q.mutants.items():
                if any(
                    compare(concrete(run_trusted(fn, c)), run_trusted(q.reference, c), exact=True)
                    for c in hidden
                ):
                    reached.add(mid)
        elif isinstance(q, CodeQuestion):
            reached |= set(suite.COUNTS_MUTANTS)  # named by the judge (test above)
        elif q.wrong_forms is not None:
            reached |= {wf.misconception for wf in q.wrong_forms(variants.numbers(A7.id, None))}
    assert set(_a7_ids()) <= reached


# ---------------------------------------------------------------- outside authorities and the notes


def test_a7_visible_cases_are_the_readmes_worked_examples():
    readme = (HANDOUT / "README.md").read_text()
    loss, grad = cl.softmax_cross_entropy(np.array([2.0, 1.0, 0.1]), 0)
    assert f"{loss:.5f}" in readme and "[−0.3410, 0.2424, 0.0986]" in readme
    probs = cl.dan_forward(suite.DAN_IDS, suite.DAN_MASK, suite.DAN_EXAMPLE)
    assert "[[0.7503, 0.2497], [0.5250, 0.4750]]" in readme
    np.testing.assert_allclose(probs, [[0.7503, 0.2497], [0.5250, 0.4750]], atol=5e-5)
    counts = cl.ngram_counts(suite.TOY_CORPUS, 2)
    assert cl.ngram_prob(counts, suite.TOY_V, ("the",), "cat") == pytest.approx(2 / 9)
    ppl = cl.ngram_perplexity(counts, suite.TOY_V, [["the", "cat"]], 2)
    assert ppl == pytest.approx((0.3 * 2 / 9 * 1 / 9) ** (-1 / 3)) and f"{ppl:.4f}" in readme


def test_a7_written_numbers_match_nltk_for_every_probe_key():
    from nltk.lm import Laplace

    for key in (None, "probe-a@example.org", "probe-b@example.org"):
        n = variants.numbers(A7.id, key)
        corpus = n["corpus"]
        V = len({w for s in corpus for w in s}) + 1
        model = Laplace(2)
        # our padding (one "<s>", one "</s>"); a vocabulary of the word types and "</s>" only:
        # nltk adds "<UNK>" to it, so its V is one more than ours
        model.fit(
            [cl.ngrams(cl.pad(s, 2), 2) for s in corpus], [w for s in corpus for w in s] + ["</s>"]
        )
        assert len(model.vocab) == V + 1
        first, second = n["bigram"]
        c = cl.ngram_counts(corpus, 2)
        want = (model.counts[[first]][second] + 1) / (model.counts[[first]].N() + V)
        assert suite._bigram_prob(n) == pytest.approx(want)
        assert suite._bigram_prob(n) == pytest.approx(cl.ngram_prob(c, V, (first,), second))


def test_a7_smoothing_mistake_is_charged_once_in_the_perplexity(tmp_path):
    """add-k without k·V is charged in ngram_prob; the perplexity built on that ngram_prob
    earns its points by follow-through."""
    wrong = SOLUTION_SRC.replace("/ (c_context + k * vocab_size)", "/ c_context")
    report = grade_submission(
        _submit(tmp_path, wrong), _only("a7.ngram_prob", "a7.ngram_perplexity"), limits=FAST
    )
    prob, ppl = report.questions
    assert prob.misconceptions == ["addk-missing-v"] and prob.score < prob.max_score
    assert ppl.score == pytest.approx(ppl.max_score), ppl.feedback
