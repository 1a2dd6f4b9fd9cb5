"""a1 against the conventions of the implementations students copy (issue 33, item 2).

Each convention a widely used implementation follows and the handout excludes has a catalog
entry; its mutant is checked here against the outside implementation itself (scipy's softmax)
or against a port of the original code written from its source, not from `reference/`:

- scipy.special.softmax(x) with no axis: one softmax over every entry (axis=None);
- word2vec.c's SGNS loop: `if (target == word) continue;` drops a noise sample equal to o;
- glove.c's cost: `cost += 0.5 * fdiff * diff` (a factor ½);
- PyTorch GloVe code that ends with `loss.mean()` (over the nonzero pairs, or over all entries);
- gensim's KeyedVectors.most_similar(positive=[b, c], negative=[a]): unit vectors, then their mean;
- GloVe's cooccur.c: a neighbour d positions away adds 1/d (its default distance weighting).

A student who follows one of them loses the points where the outputs differ and reads that
entry; a correct file keeps full marks; two conventions at once are never named as one of them.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest
from conftest import ROOT, grade_question
from test_validity_a1a3a6 import judge

from grader import catalog
from grader.engine.trusted import run_trusted
from grader.suites import a1_word_vectors as a1

pytestmark = pytest.mark.usefixtures("trusted_outputs_kept")

scipy_special = pytest.importorskip("scipy.special")
torch = pytest.importorskip("torch")

SEEDS = range(6)
SOLUTION = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text()
Q = {q.id: q for q in a1.ASSIGNMENT.questions if hasattr(q, "mutants")}
NEW = {
    "softmax-over-all-entries": "a1.softmax",
    "sgns-true-word-skipped": "a1.neg_sampling",
    "glove-loss-halved": "a1.glove_loss",
    "glove-loss-averaged": "a1.glove_loss",
    "analogy-inputs-normalized": "a1.analogy",
    "cooccurrence-distance-weighted": "a1.cooccurrence",
}


def _mutant(mid: str):
    return Q[NEW[mid]].mutants[mid]


def _options(value):
    return value.options if hasattr(value, "options") else (value,)


def _close(a, b) -> bool:
    if isinstance(a, tuple):
        return all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str):
        return a == b
    return bool(np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-9))


# ---------------------------------------------------------------- the outside implementations


def _log_sigmoid(z: float) -> float:
    return min(z, 0.0) - math.log1p(math.exp(-abs(z)))


def word2vec_c_sgns(v_c, o, U, neg_indices):
    """word2vec.c's skip-gram negative-sampling step, read as a loss and its gradients: d = 0 is
    the target (label 1), d > 0 the samples, skipped when equal to the target word."""
    v_c, U = np.asarray(v_c, dtype=float), np.asarray(U, dtype=float)
    loss, neu1e, grad_U = 0.0, np.zeros_like(v_c), np.zeros_like(U)
    for d, target in enumerate([o, *[int(k) for k in neg_indices]]):
        if d > 0 and target == o:
            continue  # if (target == word) continue;
        label = 1.0 if d == 0 else 0.0
        f = float(U[target] @ v_c)
        loss -= _log_sigmoid(f) if label else _log_sigmoid(-f)
        g = label - math.exp(_log_sigmoid(f))  # word2vec.c's g, without its learning rate
        neu1e -= g * U[target]
        grad_U[target] -= g * v_c
    return loss, neu1e, grad_U


def glove_c_cost(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    """glove.c's cost over the nonzero records: diff, fdiff, `cost += 0.5 * fdiff * diff`."""
    cost = 0.0
    for i, j in zip(*np.nonzero(X)):
        diff = float(W[i] @ W_tilde[j]) + b[i] + b_tilde[j] - math.log(X[i, j])
        fdiff = diff if X[i, j] > x_max else (X[i, j] / x_max) ** alpha * diff
        cost += 0.5 * fdiff * diff
    return cost


def torch_glove_means(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    """The loss of a PyTorch GloVe module: weighted squared errors, `.mean()`ed over the nonzero
    pairs of a batch (the whole matrix here), or over the dense masked matrix."""
    t = {k: torch.tensor(np.asarray(v), dtype=torch.float64) for k, v in locals().items()}
    x = t["X"]
    i, j = torch.nonzero(x > 0, as_tuple=True)
    pred = (t["W"][i] * t["W_tilde"][j]).sum(-1) + t["b"][i] + t["b_tilde"][j]
    f = torch.clamp((x[i, j] / x_max) ** alpha, max=1.0)
    terms = f * (pred - torch.log(x[i, j])) ** 2
    return terms.mean().item(), (terms.sum() / x.numel()).item()


def gensim_most_similar(E, vocab, a, b, c):
    """KeyedVectors.most_similar(positive=[b, c], negative=[a], topn=1), as gensim computes it:
    the mean of the unit input vectors (weights +1, +1, -1), made a unit vector, dotted with every
    vector over its norm; the inputs skipped."""
    E = np.asarray(E, dtype=float)
    norms = np.linalg.norm(E, axis=1)
    keys = {w: i for i, w in enumerate(vocab)}
    mean = np.mean([w * E[keys[k]] / norms[keys[k]] for k, w in ((b, 1), (c, 1), (a, -1))], axis=0)
    mean = mean / np.linalg.norm(mean)
    dists = E @ mean / norms
    for sim in np.argsort(-dists, kind="stable"):
        if vocab[sim] not in (a, b, c):
            return vocab[sim]
    raise AssertionError("no candidate")


def cooccur_c(corpus, vocab, window=1):
    """GloVe's cooccur.c, symmetric, with its default distance weighting: for each word, each of
    the `window` words before it adds 1/distance to both (w1, w2) and (w2, w1); lines separate."""
    ids = {w: i for i, w in enumerate(vocab)}
    X = np.zeros((len(vocab), len(vocab)))
    for line in corpus:
        history = []
        for w in line:
            w2 = ids[w]
            for dist, w1 in enumerate(reversed(history[-window:]), start=1):
                X[w1, w2] += 1.0 / dist
                X[w2, w1] += 1.0 / dist
            history.append(w2)
    return X


def _hidden(qid: str, seed: int):
    return [c for c in Q[qid].cases(seed) if not c.visible]


# ---------------------------------------------------------------- each hook is the outside code


@pytest.mark.parametrize("seed", SEEDS)
def test_the_softmax_hook_is_scipys_default(seed):
    for case in Q["a1.softmax"].cases(seed):
        (x,) = case.args
        axis = case.kwargs.get("axis", -1)
        got = run_trusted(_mutant("softmax-over-all-entries"), case)
        np.testing.assert_allclose(got, scipy_special.softmax(x), rtol=1e-12)
        want = run_trusted(Q["a1.softmax"].reference, case)
        np.testing.assert_allclose(want, scipy_special.softmax(x, axis=axis), rtol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_sgns_hook_is_word2vec_cs_loop(seed):
    for case in Q["a1.neg_sampling"].cases(seed):
        got = run_trusted(_mutant("sgns-true-word-skipped"), case)
        assert _close(tuple(got), word2vec_c_sgns(*case.args))


def test_the_skip_shows_only_where_o_was_drawn():
    for seed in SEEDS:
        drawn = [c for c in _hidden("a1.neg_sampling", seed) if c.args[1] in set(c.args[3])]
        assert len(drawn) >= 2  # the case built for it, and the one with ids above 256


@pytest.mark.parametrize("seed", SEEDS)
def test_the_glove_hooks_are_glove_c_and_torch_means(seed):
    for case in Q["a1.glove_loss"].cases(seed):
        args = tuple(np.asarray(a, dtype=float) for a in case.args)
        kw = case.kwargs
        halved = run_trusted(_mutant("glove-loss-halved"), case)
        assert halved == pytest.approx(glove_c_cost(*args, **kw), rel=1e-12)
        means = torch_glove_means(*args, **kw)
        got = _options(_mutant("glove-loss-averaged")(*case.args, **kw))
        assert [float(g) for g in got] == pytest.approx(list(means), rel=1e-12)
        # the handout's J: twice glove.c's cost
        assert run_trusted(Q["a1.glove_loss"].reference, case) == pytest.approx(2 * halved)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_analogy_hook_is_gensims_most_similar(seed):
    for case in Q["a1.analogy"].cases(seed):
        got = run_trusted(_mutant("analogy-inputs-normalized"), case)
        assert got == gensim_most_similar(*case.args)
    # and the case built for it tells gensim's answer from the handout's
    (case,) = [c for c in _hidden("a1.analogy", seed) if "very different norms" in c.name]
    assert gensim_most_similar(*case.args) != run_trusted(Q["a1.analogy"].reference, case)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_cooccurrence_hook_is_cooccur_c(seed):
    for case in Q["a1.cooccurrence"].cases(seed):
        corpus, vocab, *rest = case.args
        window = rest[0] if rest else case.kwargs.get("window", 1)
        got = run_trusted(_mutant("cooccurrence-distance-weighted"), case)
        np.testing.assert_allclose(got, cooccur_c(corpus, vocab, window), rtol=1e-12)


# ---------------------------------------------------------------- students who follow them


def _scipy_student(x, axis=-1):
    return scipy_special.softmax(x)  # the axis forgotten: scipy's default is every entry


def _torch_glove_mean_student(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    return torch_glove_means(W, W_tilde, b, b_tilde, X, x_max, alpha)[0]


STUDENTS = {
    "softmax-over-all-entries": _scipy_student,
    "sgns-true-word-skipped": word2vec_c_sgns,
    "glove-loss-halved": glove_c_cost,
    "glove-loss-averaged": _torch_glove_mean_student,
    "analogy-inputs-normalized": gensim_most_similar,
    "cooccurrence-distance-weighted": cooccur_c,
}


@pytest.mark.parametrize("mid", sorted(NEW))
def test_a_student_who_follows_the_convention_is_docked_and_named(mid):
    for seed in SEEDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            failed, named = judge(Q[NEW[mid]], STUDENTS[mid], seed)
        assert failed >= 1 and named == [mid], (seed, failed, named)
    entry = catalog.get(mid)
    assert entry.credit == 0.0 and "handout" in entry.explanation


def _handout_glove(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    return 2.0 * glove_c_cost(W, W_tilde, b, b_tilde, X, x_max, alpha)


def _handout_cooccurrence(corpus, vocab, window=1):
    ids = {w: i for i, w in enumerate(vocab)}
    X = np.zeros((len(vocab), len(vocab)))
    for line in corpus:
        for t, w in enumerate(line):
            for s in range(max(0, t - window), min(len(line), t + window + 1)):
                if s != t:
                    X[ids[w], ids[line[s]]] += 1
    return X


@pytest.mark.parametrize(
    "qid, student",
    [
        ("a1.softmax", lambda x, axis=-1: scipy_special.softmax(x, axis=axis)),
        ("a1.glove_loss", _handout_glove),
        ("a1.cooccurrence", _handout_cooccurrence),
    ],
    ids=["scipy-with-axis", "glove-c-doubled", "counts"],
)
def test_the_outside_code_set_to_the_handouts_rule_keeps_full_marks(qid, student):
    for seed in SEEDS:
        assert judge(Q[qid], student, seed) == (0, []), seed


# ---------------------------------------------------------------- controls (issue 33, item 5)
# graded by the engine itself (combinations, NaN weighing), on the solution with one function
# replaced, for three students


def _with(function: str, new: str) -> str:
    """The instructor's solution with `function` redefined at the end (the later one wins)."""
    assert f"def {function}(" in SOLUTION
    return SOLUTION + "\n\n" + new


HALVED_AND_UNCAPPED = """
def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    # glove.c's 0.5, and the weight without its cap: two deviations at once
    cost = 0.0
    for i, j in zip(*np.nonzero(X)):
        diff = float(W[i] @ W_tilde[j]) + b[i] + b_tilde[j] - np.log(X[i, j])
        cost += 0.5 * (X[i, j] / x_max) ** alpha * diff * diff
    return float(cost)
"""
GENSIM_WITHOUT_EXCLUSION = """
def analogy(E, vocab, a, b, c):
    # gensim's unit vectors, and the input words not excluded: two deviations at once
    E = np.asarray(E, dtype=np.float64)
    unit = E / np.linalg.norm(E, axis=1, keepdims=True)
    keys = {w: i for i, w in enumerate(vocab)}
    q = unit[keys[b]] - unit[keys[a]] + unit[keys[c]]
    return vocab[int(np.argmax(unit @ q))]
"""
# an uncatalogued slip that makes NaN: the sum rescaled by (number of zero counts) / (the same
# number), 0/0 = NaN exactly where X has no zero (three hidden cases), right where it has some
GLOVE_NAN_SLIP = """
def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    X = np.asarray(X, dtype=np.float64)
    pos = X > 0
    pred = W @ W_tilde.T + b[:, None] + b_tilde[None, :]
    r = pred[pos] - np.log(X[pos])
    zeros = np.float64(np.sum(~pos))
    with np.errstate(all="ignore"):
        return float(np.sum(glove_weight(X[pos], x_max, alpha) * r**2) * zeros / zeros)
"""
STUDENTS_3 = ("ann@uni.edu", "bob@uni.edu", "cy@uni.edu")


_grade = functools.partial(grade_question, "a1_word_vectors")


@pytest.mark.parametrize(
    "qid, function, new, alone",
    [
        (
            "a1.glove_loss",
            "glove_loss",
            HALVED_AND_UNCAPPED,
            {"glove-loss-halved", "glove-weight-uncapped"},
        ),
        (
            "a1.analogy",
            "analogy",
            GENSIM_WITHOUT_EXCLUSION,
            {"analogy-inputs-normalized", "analogy-inputs-not-excluded"},
        ),
    ],
    ids=["glove-halved+uncapped", "analogy-normalized+not-excluded"],
)
def test_two_deviations_at_once_are_never_named_as_one_of_them(tmp_path, qid, function, new, alone):
    for student in STUDENTS_3:
        q = _grade(tmp_path, _with(function, new), qid, student)
        assert q.score < q.max_score, student
        # nothing, or both together; never one of the two alone
        assert q.misconceptions == [] or set(q.misconceptions) == alone, (student, q.misconceptions)


def test_each_deviation_alone_is_named_by_the_engine(tmp_path):
    halved = _with(
        "glove_loss",
        HALVED_AND_UNCAPPED.replace(
            "(X[i, j] / x_max) ** alpha", "min((X[i, j] / x_max) ** alpha, 1.0)"
        ),
    )
    q = _grade(tmp_path, halved, "a1.glove_loss", "ann@uni.edu")
    assert q.misconceptions == ["glove-loss-halved"] and q.score < q.max_score


def test_a_nan_producing_slip_is_docked_and_named_nothing(tmp_path):
    for student in STUDENTS_3:
        q = _grade(tmp_path, _with("glove_loss", GLOVE_NAN_SLIP), "a1.glove_loss", student)
        assert q.score < q.max_score and q.misconceptions == [], (student, q.misconceptions)


# ---------------------------------------------------------------- hyperwords' SVD weighting


def hyperwords_svd(X, k):
    """hyperwords' SVDEmbedding with eig=0.5 (Levy, Goldberg & Dagan 2015): ut.T * s**0.5."""
    ut, s, _ = np.linalg.svd(np.asarray(X, dtype=float), full_matrices=False)
    return ut[:, :k] * s[:k] ** 0.5


@pytest.mark.parametrize("seed", SEEDS)
def test_hyperwords_eigenvalue_weighting_is_docked_and_named(seed):
    svd = a1.ASSIGNMENT.question("a1.svd_embeddings")
    cases = svd.cases(seed)
    mutant = svd.mutants["svd-sqrt-singular-values"]
    for case in cases:  # the hook is hyperwords' formula (up to column signs: the Gram matrix)
        got, want = run_trusted(mutant, case), hyperwords_svd(*case.args)
        np.testing.assert_allclose(got @ got.T, want @ want.T, rtol=1e-9, atol=1e-9)
    judged = svd.custom(cases, [hyperwords_svd(*c.args) for c in cases])
    assert not all(ok for _, ok, _ in judged.checks)
    assert judged.misconceptions == ["svd-sqrt-singular-values"]
    right = svd.custom(cases, [_usigma(*c.args) for c in cases])
    assert all(ok for _, ok, _ in right.checks) and right.misconceptions == []


def _usigma(X, k):
    """scikit-learn's TruncatedSVD.fit_transform (exact, not randomised): U_k Σ_k."""
    u, s, _ = np.linalg.svd(np.asarray(X, dtype=float), full_matrices=False)
    return u[:, :k] * s[:k]
