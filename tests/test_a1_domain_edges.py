"""a1's hidden cases at the edges of the input domain (issue 33, item 4; the suite's DOMAINS).

Each edge kills a slip that passes every other case: a softmax that handles a non-last axis by
`x.T` (right for 2-D arrays, another axis on a middle axis of a 3-D one: named
softmax-wrong-axis, which it is), a one-hot built with `w is o` (the outside word's id above
256), a noise row found with `k is w` (ids above 256), and co-occurrence offsets indexed through
`np.array(ids)` (an empty sentence makes a float array: IndexError). The control without the
edge case shows the case is what kills it; the solution keeps full marks on every edge.
"""

from __future__ import annotations

import dataclasses
import warnings

import pytest
from conftest import FAST, ROOT, slipped
from test_validity_a1a3a6 import judge

from grader.engine.grade import grade_submission
from grader.suites import a1_word_vectors as a1

SOLUTION = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text()
SEEDS = range(6)


def _q(qid: str):
    return a1.ASSIGNMENT.question(qid)


def _student(new: str, function: str):
    """The solution with `function` redefined after it; any error it raises is a failed case."""
    return slipped("a1_word_vectors", function, new, errors_fail=True)


TRANSPOSED = """
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    if axis not in (-1, x.ndim - 1):
        return softmax(x.T).T  # .T reverses every axis: right in 2-D only
    z = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=-1, keepdims=True)
"""
IS_O = """
def naive_softmax_loss_and_gradient(v_c, o, U):
    v_c = np.asarray(v_c, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    scores = U @ v_c
    y_hat = softmax(scores)
    m = scores.max()
    loss = float(-(scores[o] - m - np.log(np.sum(np.exp(scores - m)))))
    y = np.array([1.0 if w is o else 0.0 for w in range(len(scores))])  # `is`: only up to 256
    grad_v_c = U.T @ (y_hat - y)
    return loss, grad_v_c, np.outer(y_hat - y, v_c)
"""
IS_K = """
def neg_sampling_loss_and_gradient(v_c, o, U, neg_indices):
    v_c = np.asarray(v_c, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    neg = np.asarray(neg_indices, dtype=np.int64).tolist()
    s_o = U[o] @ v_c
    s_k = U[neg] @ v_c
    loss = float(-_log_sigmoid(s_o) - np.sum(_log_sigmoid(-s_k)))
    d_o, d_k = _sigmoid(s_o) - 1.0, _sigmoid(s_k)
    grad_v_c = d_o * U[o] + d_k @ U[neg]
    grad_U = np.zeros_like(U)
    grad_U[o] += d_o * v_c
    for w in range(U.shape[0]):  # each noise row, found with `is`: only up to 256
        grad_U[w] += sum(d for k, d in zip(neg, d_k) if k is w) * v_c
    return loss, grad_v_c, grad_U
"""
ARRAY_IDS = """
def cooccurrence_matrix(corpus, vocab, window=1):
    idx = {w: i for i, w in enumerate(vocab)}
    X = np.zeros((len(vocab), len(vocab)))
    for sentence in corpus:
        ids = np.array([idx[w] for w in sentence])  # float64 when the sentence is empty
        for k in range(1, window + 1):
            np.add.at(X, (ids[:-k], ids[k:]), 1.0)
            np.add.at(X, (ids[k:], ids[:-k]), 1.0)
    return X
"""
ZERO_EXCLUSION = """
def analogy(E, vocab, a, b, c):
    E = np.asarray(E, dtype=np.float64)
    idx = {w: i for i, w in enumerate(vocab)}
    target = E[idx[b]] - E[idx[a]] + E[idx[c]]
    sims = E @ target / (np.linalg.norm(E, axis=1) * np.linalg.norm(target) + 1e-12)
    for w in (a, b, c):
        sims[idx[w]] = 0  # 0 is not below every cosine: an input wins when all point away
    return vocab[int(np.argmax(sims))]
"""
SLIPS = [
    ("a1.softmax", TRANSPOSED, "softmax", "a middle axis", ["softmax-wrong-axis"]),
    ("a1.naive_softmax", IS_O, "naive_softmax_loss_and_gradient", "o above 256", []),
    ("a1.neg_sampling", IS_K, "neg_sampling_loss_and_gradient", "above 256", []),
    ("a1.cooccurrence", ARRAY_IDS, "cooccurrence_matrix", "an empty sentence", []),
    ("a1.analogy", ZERO_EXCLUSION, "analogy", "points away", []),
]
IDS = [
    "softmax-transposed",
    "skipgram-is-o",
    "sgns-is-k",
    "cooccurrence-array-ids",
    "analogy-excluded-by-zero",
]


# A slip whose output, on some students' edge case, is exactly what a catalogued mistake
# computes: that name is fair there (an exclusion by 0 lets the inputs win, as no exclusion does,
# when the first input in vocabulary order is also the nearest).
ALSO_FAIR = {"a1.analogy": {"analogy-inputs-not-excluded"}}


def _without(q, marker: str):
    return dataclasses.replace(
        q, cases=lambda seed: [c for c in q.cases(seed) if marker not in c.name]
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_every_student_gets_each_edge_hidden(seed):
    for qid, _, _, marker, _ in SLIPS:
        (edge,) = [c for c in _q(qid).cases(seed) if marker in c.name]
        assert not edge.visible
    (big,) = [c for c in _q("a1.naive_softmax").cases(seed) if "above 256" in c.name]
    assert big.args[1] > 256 and big.args[2].shape[0] == 300
    (big,) = [c for c in _q("a1.neg_sampling").cases(seed) if "above 256" in c.name]
    v_c, o, U, neg = big.args
    assert o > 256 and o in set(neg) and sum(k > 256 for k in neg) >= 3
    (empty,) = [c for c in _q("a1.cooccurrence").cases(seed) if "empty sentence" in c.name]
    corpus, vocab, window = empty.args
    assert [] in corpus and any(len(s) == 1 for s in corpus) and window == 2
    assert vocab[-1] not in {w for s in corpus for w in s}  # a word never used: a zero row


@pytest.mark.parametrize("qid, new, function, marker, names", SLIPS, ids=IDS)
def test_each_edge_docks_its_slip(qid, new, function, marker, names):
    q, slip = _q(qid), _student(new, function)
    for seed in SEEDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            failed, named = judge(q, slip, seed)
            assert failed == 1 and (named == names or set(named) <= ALSO_FAIR.get(qid, set())), (
                seed,
                named,
            )
            # the control: without its edge case the slip passes every case
            assert judge(_without(q, marker), slip, seed) == (0, []), seed


@pytest.mark.parametrize("seed", SEEDS)
def test_the_solution_keeps_full_marks_on_the_edges(seed):
    ns: dict = {}
    exec(compile(SOLUTION, "word_vectors.py", "exec"), ns)
    for qid in (
        "a1.softmax",
        "a1.naive_softmax",
        "a1.neg_sampling",
        "a1.cooccurrence",
        "a1.analogy",
    ):
        q = _q(qid)
        assert judge(q, ns[q.function], seed) == (0, []), (qid, seed)


@pytest.mark.parametrize("student", ["ann@uni.edu", "bob@uni.edu"])
def test_the_identity_slip_loses_points_through_the_sandbox(tmp_path, student):
    # o travels to the student's process as a Python int: `is` holds only up to 256 there too
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "word_vectors.py").write_text(SOLUTION + "\n\n" + IS_O)
    only = dataclasses.replace(a1.ASSIGNMENT, questions=(_q("a1.naive_softmax"),))
    (q,) = grade_submission(folder, only, student=student, limits=FAST).questions
    assert q.score < q.max_score and q.misconceptions == [], q.feedback


BEFORE_EDGES = "fc1cf181b9ed45c8adee650b287e46805be9eb7a27127bb3160ad5eb18e0e23c"


def test_the_analogy_cases_before_the_appended_ones_are_the_pinned_ones():
    # tests/test_case_stability.py pins a1.analogy's digest over all its cases; the case appended
    # for gensim's unit vectors changes that digest, the first four cases stay exactly the same
    import hashlib
    import pickle

    from test_case_stability import KEYS, PINNED, _plain

    from grader.course import variants

    q = _q("a1.analogy")
    h = hashlib.sha256()
    for key in KEYS:
        cases = q.cases(variants.seed_for("a1_word_vectors", key))
        assert len(cases) == 6 and "very different norms" in cases[4].name
        assert "points away" in cases[5].name
        h.update(pickle.dumps(_plain(cases[:4]), protocol=4))
    # the digest test_case_stability pinned over these four cases before any was appended
    assert h.hexdigest() == BEFORE_EDGES
    assert PINNED["a1_word_vectors/a1.analogy"] != BEFORE_EDGES  # the pin covers every case
