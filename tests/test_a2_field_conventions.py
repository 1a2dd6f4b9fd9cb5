"""a2 against the conventions of the implementations students copy (issue 33, item 2).

- torch.nn.RNN computes h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh): two biases. A
  student who hands b_h to both gets 2 b_h (`rnn-bias-counted-twice`); with one of them zero,
  torch.nn.RNN is the handout's RNN and keeps full marks.
- Karpathy's min-char-rnn clips every entry (`np.clip(dparam, -5, 5)`), as
  torch.nn.utils.clip_grad_value_ does (`clip-by-value`); torch.nn.utils.clip_grad_norm_ (over
  all the arrays, error_if_nonfinite aside) is the handout's rule, its 1e-6 in the denominator
  within the tolerance.

torch itself is the authority for every expected value here.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from conftest import ROOT, grade_question
from test_validity_a1a3a6 import judge

from grader import catalog
from grader.engine.trusted import run_trusted
from grader.suites import a2_rnn_bptt as a2

pytestmark = pytest.mark.usefixtures("trusted_outputs_kept")

torch = pytest.importorskip("torch")

SOLUTION = (ROOT / "solutions" / "a2_rnn_bptt" / "rnn.py").read_text()
SEEDS = range(6)
FORWARD = a2.ASSIGNMENT.question("a2.rnn_forward")
CLIP = a2.ASSIGNMENT.question("a2.clip_by_global_norm")


def torch_rnn(X, W_x, W_h, b_h, h0=None, *, b_hh=None):
    """(Z, Hs) of torch.nn.RNN (tanh, one layer) with b_ih = b_h and b_hh = b_hh (default b_h,
    as a student who fills both biases with it); Z read back from torch's own weights."""
    X, W_x, W_h, b_h = (
        torch.tensor(np.asarray(a), dtype=torch.float64) for a in (X, W_x, W_h, b_h)
    )
    H, D = W_x.shape
    rnn = torch.nn.RNN(D, H, nonlinearity="tanh").double()
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(W_x)
        rnn.weight_hh_l0.copy_(W_h)
        rnn.bias_ih_l0.copy_(b_h)
        rnn.bias_hh_l0.copy_(b_h if b_hh is None else torch.tensor(np.asarray(b_hh)))
        h = (
            torch.zeros(1, 1, H, dtype=torch.float64)
            if h0 is None
            else torch.tensor(h0).view(1, 1, H)
        )
        out, _ = rnn(X[:, None, :], h)
        Hs = out[:, 0, :]
        H_prev = torch.cat([h.view(1, H), Hs[:-1]])
        Z = X @ rnn.weight_ih_l0.T + rnn.bias_ih_l0 + H_prev @ rnn.weight_hh_l0.T + rnn.bias_hh_l0
    return Z.numpy(), Hs.numpy()


def torch_rnn_one_bias(X, W_x, W_h, b_h, h0=None):
    return torch_rnn(X, W_x, W_h, b_h, h0, b_hh=np.zeros(np.shape(b_h)))


def _torch_clipped(grads, max_norm, clip):
    """The gradients after torch's `clip` (clip_grad_value_ or clip_grad_norm_) on parameters
    holding them as their .grad."""
    params = {
        k: torch.nn.Parameter(torch.zeros(np.shape(g), dtype=torch.float64))
        for k, g in grads.items()
    }
    for k, p in params.items():
        p.grad = torch.tensor(np.asarray(grads[k], dtype=np.float64))
    clip(list(params.values()), max_norm)
    return {k: p.grad.numpy() for k, p in params.items()}


def torch_clip_value(grads, max_norm):
    return _torch_clipped(grads, max_norm, torch.nn.utils.clip_grad_value_)


def torch_clip_norm(grads, max_norm):
    return _torch_clipped(grads, max_norm, torch.nn.utils.clip_grad_norm_)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_bias_hook_is_torch_nn_rnn_with_both_biases(seed):
    for case in FORWARD.cases(seed):
        got = run_trusted(FORWARD.mutants["rnn-bias-counted-twice"], case)
        want = torch_rnn(*case.args, **case.kwargs)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
        for g, w in zip(
            run_trusted(FORWARD.reference, case), torch_rnn_one_bias(*case.args, **case.kwargs)
        ):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_clip_hooks_are_torchs(seed):
    for case in CLIP.cases(seed):
        got = run_trusted(CLIP.mutants["clip-by-value"], case)
        for k, v in torch_clip_value(*case.args).items():
            np.testing.assert_allclose(got[k], v, rtol=1e-12)
        want = run_trusted(CLIP.reference, case)
        for k, v in torch_clip_norm(*case.args).items():
            np.testing.assert_allclose(want[k], v, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize(
    "mid, q, student",
    [
        ("rnn-bias-counted-twice", FORWARD, torch_rnn),
        ("clip-by-value", CLIP, torch_clip_value),
    ],
    ids=["torch-nn-rnn-both-biases", "clip-grad-value"],
)
def test_a_student_who_follows_torch_is_docked_and_named(mid, q, student):
    for seed in SEEDS:
        failed, named = judge(q, student, seed)
        assert failed >= 1 and named == [mid], (seed, failed, named)
    entry = catalog.get(mid)
    assert entry.credit == 0.0 and "handout" in entry.explanation


@pytest.mark.parametrize(
    "q, student",
    [(FORWARD, torch_rnn_one_bias), (CLIP, torch_clip_norm)],
    ids=["nn-rnn-b_hh-0", "clip-grad-norm"],
)
def test_torch_set_to_the_handouts_rule_keeps_full_marks(q, student):
    for seed in SEEDS:
        assert judge(q, student, seed) == (0, []), seed


# ---------------------------------------------------------------- controls (issue 33, item 5)

BOTH = """
def rnn_forward(X, W_x, W_h, b_h, h0=None):
    # torch's two biases both set to b_h, and h0 forgotten: two deviations at once
    X, W_x, W_h, b_h = (np.asarray(a, dtype=np.float64) for a in (X, W_x, W_h, b_h))
    h = np.zeros(W_h.shape[0])
    Z, Hs = [], []
    for x in X:
        z = x @ W_x.T + b_h + h @ W_h.T + b_h
        h = np.tanh(z)
        Z.append(z)
        Hs.append(h)
    return np.array(Z), np.array(Hs)
"""


_grade = functools.partial(grade_question, "a2_rnn_bptt")


def test_two_deviations_at_once_are_never_named_as_one_alone(tmp_path):
    alone = {"rnn-bias-counted-twice", "rnn-h0-ignored"}
    for student in ("ann@uni.edu", "bob@uni.edu"):
        q = _grade(tmp_path, SOLUTION + "\n\n" + BOTH, "a2.rnn_forward", student)
        assert q.score < q.max_score, student
        # nothing, or both together; never one of the two alone
        assert q.misconceptions == [] or set(q.misconceptions) == alone, (student, q.misconceptions)


def test_each_deviation_alone_is_named_by_the_engine(tmp_path):
    one = BOTH.replace(
        "h = np.zeros(W_h.shape[0])", "h = np.zeros(W_h.shape[0]) if h0 is None else np.asarray(h0)"
    )
    q = _grade(tmp_path, SOLUTION + "\n\n" + one, "a2.rnn_forward", "ann@uni.edu")
    assert q.misconceptions == ["rnn-bias-counted-twice"] and q.score < q.max_score


# ---------------------------------------------------------------- KenLM's log10


def kenlm_style(logits, targets):
    """Scores as KenLM reports them: log10 p per token, total, ppl = 10^(-total / N)."""
    logits = np.asarray(logits, dtype=np.float64)
    total = 0.0
    for row, y in zip(logits, np.asarray(targets).tolist()):
        m = row.max()
        total += (row[y] - m - np.log(np.exp(row - m).sum())) / np.log(10.0)  # log10 p
    return -total / len(logits), float(10.0 ** (-total / len(logits)))


def test_kenlms_log10_scores_are_docked_and_named():
    q = a2.ASSIGNMENT.question("a2.sequence_perplexity")
    for seed in SEEDS:
        for case in q.cases(seed):
            got = run_trusted(q.mutants["ce-in-log10"], case)
            assert any(np.allclose(o, kenlm_style(*case.args), rtol=1e-12) for o in got.options)
            # the perplexity is the same in any base: the CE is what differs
            assert kenlm_style(*case.args)[1] == pytest.approx(run_trusted(q.reference, case)[1])
        failed, named = judge(q, kenlm_style, seed)
        assert failed >= 1 and named == ["ce-in-log10"], (seed, failed, named)
