"""a2's hidden cases at the edges of the input domain (issue 33, item 4; the suite's DOMAINS).

Each edge kills a slip that passes every other case: column states stacked and `.squeeze()`d
(one step, T = 1, loses an axis), a clipping factor c/‖g‖ taken before the test (a zero gradient: ZeroDivisionError,
or 0/0 = NaN, which names nothing), targets squeezed to a 0-d array (T = 1), and a one-hot built
with `k is y` (targets above 256). The control without the edge case shows the case is what
kills it; the instructor's solution and its float32 version keep full marks on every edge.
"""

from __future__ import annotations

import dataclasses
import warnings

import float32_solutions
import pytest
from conftest import FAST, ROOT, slipped
from test_validity_a1a3a6 import judge

from grader.engine.grade import grade_submission
from grader.suites import a2_rnn_bptt as a2

SOLUTION = (ROOT / "solutions" / "a2_rnn_bptt" / "rnn.py").read_text()
SEEDS = range(6)


def _q(qid: str):
    return a2.ASSIGNMENT.question(qid)


def _student(new: str, function: str):
    """The solution with `function` redefined after it; any error it raises is a failed case."""
    return slipped("a2_rnn_bptt", function, new, errors_fail=True)


SQUEEZED = _student(
    """
def rnn_forward(X, W_x, W_h, b_h, h0=None):
    # column vectors, min-char-rnn style, stacked and squeezed back to rows
    X, W_x, W_h = (np.asarray(a, dtype=np.float64) for a in (X, W_x, W_h))
    b = np.asarray(b_h, dtype=np.float64).reshape(-1, 1)
    h = np.zeros((W_h.shape[0], 1)) if h0 is None else np.asarray(h0, dtype=np.float64).reshape(-1, 1)
    zs, hs = [], []
    for x in X:
        z = W_x @ x.reshape(-1, 1) + W_h @ h + b
        h = np.tanh(z)
        zs.append(z)
        hs.append(h)
    return np.array(zs).squeeze(), np.array(hs).squeeze()
""",
    "rnn_forward",
)
FACTOR_FIRST = _student(
    """
def clip_by_global_norm(grads, max_norm):
    arrays = {k: np.asarray(g, dtype=np.float64) for k, g in grads.items()}
    norm = float(np.sqrt(sum(float(np.sum(g**2)) for g in arrays.values())))
    scale = min(1.0, max_norm / norm)  # ZeroDivisionError for a zero gradient
    return {k: scale * g for k, g in arrays.items()}
""",
    "clip_by_global_norm",
)
ZERO_OVER_ZERO = _student(
    """
def clip_by_global_norm(grads, max_norm):
    arrays = {k: np.asarray(g, dtype=np.float64) for k, g in grads.items()}
    norm = np.sqrt(sum(np.sum(g**2) for g in arrays.values()))
    return {k: g / norm * min(norm, max_norm) for k, g in arrays.items()}  # 0/0 = NaN at norm 0
""",
    "clip_by_global_norm",
)
SQUEEZED_TARGETS = _student(
    """
def sequence_perplexity(logits, targets):
    A = np.asarray(logits, dtype=np.float64).squeeze()
    A = A - A.max(axis=-1, keepdims=True)
    logp = A - np.log(np.exp(A).sum(axis=-1, keepdims=True))
    y = np.asarray(targets).squeeze()
    ce = float(-logp[np.arange(len(y)), y].mean())  # len() of a 0-d array raises when T = 1
    return ce, float(np.exp(ce))
""",
    "sequence_perplexity",
)
IDENTITY_ONEHOT = _student(
    """
def sequence_perplexity(logits, targets):
    A = np.asarray(logits, dtype=np.float64)
    A = A - A.max(axis=1, keepdims=True)
    logp = A - np.log(np.exp(A).sum(axis=1, keepdims=True))
    V = A.shape[1]
    onehot = np.array([[1.0 if k is y else 0.0 for k in range(V)] for y in np.asarray(targets).tolist()])
    ce = float(-(onehot * logp).sum(axis=1).mean())
    return ce, float(np.exp(ce))
""",
    "sequence_perplexity",
)

SLIPS = [
    ("a2.rnn_forward", SQUEEZED, "(one step)"),
    ("a2.clip_by_global_norm", FACTOR_FIRST, "a zero gradient"),
    ("a2.clip_by_global_norm", ZERO_OVER_ZERO, "a zero gradient"),
    ("a2.sequence_perplexity", SQUEEZED_TARGETS, "T=1 position"),
    ("a2.sequence_perplexity", IDENTITY_ONEHOT, "targets above 256"),
]
IDS = [
    "squeeze-T1",
    "clip-c-over-0",
    "clip-0-over-0-NaN",
    "perplexity-squeeze-T1",
    "perplexity-is-onehot",
]


def _without(q, *markers: str):
    return dataclasses.replace(
        q, cases=lambda seed: [c for c in q.cases(seed) if not any(m in c.name for m in markers)]
    )


def _markers(qid: str, slip) -> list[str]:
    """Every edge that kills this slip (the squeezed forward pass has two)."""
    return [m for q2, s2, m in SLIPS if q2 == qid and s2 is slip]


@pytest.mark.parametrize("seed", SEEDS)
def test_every_student_gets_each_edge_hidden(seed):
    for qid, _, marker in SLIPS:
        edge = [c for c in _q(qid).cases(seed) if marker in c.name]
        assert len(edge) == 1 and not edge[0].visible, (qid, marker)
    forward = {c.name: c for c in _q("a2.rnn_forward").cases(seed)}
    one_step = next(c for n, c in forward.items() if "(one step)" in n)
    assert one_step.args[0].shape[0] == 1 and "h0" in one_step.kwargs
    big = next(c for c in _q("a2.sequence_perplexity").cases(seed) if "above 256" in c.name)
    assert min(big.args[1]) > 256 and big.args[0].shape[1] == 300


@pytest.mark.parametrize("qid, slip, marker", SLIPS, ids=IDS)
def test_each_edge_docks_its_slip_and_names_nothing(qid, slip, marker):
    q, markers = _q(qid), _markers(qid, slip)
    for seed in SEEDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert judge(q, slip, seed) == (len(markers), []), seed
            others = [m for m in markers if m != marker]
            assert judge(_without(q, *others), slip, seed) == (1, []), seed  # this edge alone
            # the control: without its edge case(s) the slip passes every case
            assert judge(_without(q, *markers), slip, seed) == (0, []), seed


@pytest.mark.parametrize("seed", SEEDS)
def test_the_solution_and_its_float32_version_keep_full_marks_on_the_edges(seed):
    ns: dict = {}
    exec(compile(SOLUTION, "rnn.py", "exec"), ns)
    for qid in {qid for qid, _, _ in SLIPS}:
        q = _q(qid)
        assert judge(q, ns[q.function], seed) == (0, []), (qid, seed)


def test_the_float32_solution_keeps_full_marks(tmp_path):
    folder = tmp_path / "f32"
    folder.mkdir()
    float32_solutions.write_submission("a2_rnn_bptt", folder)
    code = [q for q in a2.ASSIGNMENT.questions if hasattr(q, "mutants")]
    report = grade_submission(
        folder,
        dataclasses.replace(a2.ASSIGNMENT, questions=tuple(code)),
        student="ann@uni.edu",
        limits=FAST,
    )
    assert all(q.score == q.max_score for q in report.questions), [
        (q.question_id, q.feedback) for q in report.questions if q.score < q.max_score
    ]


def test_the_identity_slip_loses_points_through_the_sandbox(tmp_path):
    # targets travel to the student's process as Python ints: `is` holds only up to 256 there too
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "rnn.py").write_text(
        SOLUTION.replace(
            "    ce = float(-logp[np.arange(len(targets)), targets].mean())\n",
            "    V = logp.shape[1]\n"
            "    onehot = np.array([[1.0 if k is y else 0.0 for k in range(V)] for y in targets.tolist()])\n"
            "    ce = float(-(onehot * logp).sum(axis=1).mean())\n",
        )
    )
    only = dataclasses.replace(a2.ASSIGNMENT, questions=(_q("a2.sequence_perplexity"),))
    (q,) = grade_submission(folder, only, student="ann@uni.edu", limits=FAST).questions
    assert q.score < q.max_score and q.misconceptions == []
