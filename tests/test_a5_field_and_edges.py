"""a5 against the loss conventions of widely used code (issue 33, item 2), its hidden cases at
the edges of the input domain (item 4), and what they are named (item 5).

The handout's causal LM loss is torch's cross_entropy(..., ignore_index=pad_id) with its default
reduction="mean": one mean over the batch's real targets. Keras-style per-sample losses (each
sequence's mean, then the batch's) and reduction="sum" differ; each is a catalog entry whose
mutant is held to torch here. The edges: masked scores hundreds apart up to 1000 (an exp
without the max shift overflows: softmax-unstable, reused from a1) and logits spread over ±1000
(log(softmax) underflows to log 0: a slip no catalogued mistake reproduces, docked and named
nothing). Each edge's control is the question without its edge cases.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import ROOT, grade_question
from test_case_stability import KEYS, _plain

import grader.suites.a5_shapes_debugging as suite
from grader import catalog, sandbox
from grader.course import variants
from grader.mutants import AnyOf

SOLUTION = (ROOT / "solutions" / "a5_shapes_debugging" / "fixed.py").read_text()
README = (ROOT / "assignments" / "a5_shapes_debugging" / "README.md").read_text()
A5 = suite.ASSIGNMENT
LOSS = A5.question("a5.causal_lm_loss")
SOFTMAX = A5.question("a5.masked_softmax")
EDGE = "domain edge"
SEEDS = range(6)
FAST = sandbox.Limits(call_seconds=20.0, submission_seconds=180.0)


def _torch_losses(logits, tokens, pad_id):
    """torch's per-target losses (B, T-1) and the real-target mask."""
    lg, tok = torch.tensor(logits), torch.tensor(tokens)
    V = lg.shape[-1]
    nll = F.cross_entropy(
        lg[:, :-1].reshape(-1, V), tok[:, 1:].reshape(-1), ignore_index=pad_id, reduction="none"
    ).reshape(tok.shape[0], -1)
    return nll, (tok[:, 1:] != pad_id).to(nll.dtype)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_loss_conventions_are_torchs(seed):
    for case in LOSS.cases(seed):
        logits, tokens, pad_id = case.args
        nll, keep = _torch_losses(logits, tokens, pad_id)
        mean = F.cross_entropy(
            torch.tensor(logits)[:, :-1].reshape(-1, logits.shape[-1]),
            torch.tensor(tokens)[:, 1:].reshape(-1),
            ignore_index=pad_id,
        ).item()
        per_sequence = ((nll * keep).sum(1) / keep.sum(1)).mean().item()
        summed = (nll * keep).sum().item()
        assert float(LOSS.reference(*map(torch.tensor, (logits, tokens)), pad_id)) == pytest.approx(
            mean, rel=1e-10
        )
        assert LOSS.mutants["lm-loss-mean-per-sequence"](logits, tokens, pad_id) == pytest.approx(
            per_sequence, rel=1e-10
        )
        assert LOSS.mutants["lm-loss-summed"](logits, tokens, pad_id) == pytest.approx(
            summed, rel=1e-10
        )
        if not case.visible:  # rows of different lengths: the three differ
            assert len({round(mean, 6), round(per_sequence, 6), round(summed, 6)}) == 3


@pytest.mark.parametrize("seed", SEEDS)
def test_the_unshifted_softmax_overflows_on_the_edge_only(seed):
    for case in SOFTMAX.cases(seed):
        scores, mask = case.args
        out = SOFTMAX.mutants["softmax-unstable"](scores, mask)
        with np.errstate(all="ignore"):
            plain = torch.exp(torch.tensor(scores)) * torch.tensor(np.asarray(mask))
            plain = plain / plain.sum(-1, keepdim=True)
        if EDGE in case.name:  # its forms: NaN where a row overflows, as torch makes it
            assert isinstance(out, AnyOf) and not torch.isfinite(plain).all()
            np.testing.assert_array_equal(out.options[1], plain.numpy())
        else:
            m = torch.broadcast_to(torch.tensor(np.asarray(mask)), plain.shape)
            want = torch.softmax(torch.tensor(scores).masked_fill(~m, float("-inf")), -1)
            np.testing.assert_allclose(out, want.numpy(), rtol=1e-12, atol=1e-15)


def test_the_entries_and_the_handout_say_which_rule_the_handout_wants():
    assert 'reduction="mean"' in README and "not a mean per sequence, not the sum" in README
    per = catalog.get("lm-loss-mean-per-sequence").explanation
    assert "Keras" in per and "every real target of the batch together" in per
    summed = catalog.get("lm-loss-summed").explanation
    assert 'reduction="sum"' in summed and "divided by their number" in summed


# ---------------------------------------------------------------- the edges


EARLIER = {  # (cases before the edges, sha256 over KEYS) from main 25bad84
    "a5.masked_softmax": (4, "1810c25b51279680ed11679d8f678a0fb511f468154313ab56a2b1ae802c9b72"),
    "a5.causal_lm_loss": (4, "ae62ed2a4f7a58a8b9f07788b977aa1929c4c61736835826828ecc6b033da7bc"),
    "a5.split_heads": (4, "c9bd6bb112e96613c2d5d46a58ee63d7bc62236dac09494461bc5ac57b846962"),
    "a5.masked_mean_pool": (3, "a41e706f6732f5d664afc92d839dd19809c90f1406ee7d4f346516eab346fad1"),
}


@pytest.mark.parametrize("qid", sorted(EARLIER))
def test_the_earlier_cases_are_unchanged_and_the_edges_come_after(qid):
    n, pinned = EARLIER[qid]
    q = A5.question(qid)
    h = hashlib.sha256()
    for key in KEYS:
        cases = list(q.cases(variants.seed_for(A5.id, key)))
        assert all(EDGE in c.name and not c.visible for c in cases[n:])
        h.update(pickle.dumps(_plain(cases[:n]), protocol=4))
    assert h.hexdigest() == pinned


def test_every_graded_function_declares_its_domain():
    code = {q.function for q in (*suite.CODE_QUESTIONS, *suite.TASK_QUESTIONS)}
    assert code == set(suite.DOMAINS)


def _replace(function: str, body: str) -> str:
    start = SOLUTION.index(f"def {function}(")
    doc_end = SOLUTION.index('"""', SOLUTION.index('"""', start) + 3) + 3
    end = SOLUTION.find("\ndef ", doc_end)
    end = len(SOLUTION) if end < 0 else end + 1
    return SOLUTION[:doc_end] + "\n" + body.rstrip() + "\n\n" + SOLUTION[end:]


def _without_edges(q):
    return dataclasses.replace(
        q, cases=lambda seed: [c for c in q.cases(seed) if EDGE not in c.name]
    )


SLIPS = {
    # log of the softmax: the target's probability underflows to 0 when its logit is ~1000 below
    # the row's largest, and -log 0 = inf; no catalogued mistake makes it inf there
    "log of softmax": (
        LOSS,
        "causal_lm_loss",
        """
    B, T, V = logits.shape
    logp = torch.log(torch.softmax(logits[:, :-1], dim=-1))
    y = tokens[:, 1:]
    nll = -logp.gather(-1, y[..., None])[..., 0]
    keep = y != pad_id
    return nll[keep].mean()
""",
        [],
    ),
    # shifted by the row minimum: wrong once a row spans more than 709.78; its NaN rows are not
    # the unshifted softmax's (rows spanning less stay finite), so it supports no name
    "min shift": (
        SOFTMAX,
        "masked_softmax",
        """
    e = torch.exp(scores - scores.amin(dim=-1, keepdim=True)) * mask
    return e / e.sum(dim=-1, keepdim=True)
""",
        [],
    ),
}


@pytest.mark.parametrize("label", sorted(SLIPS))
def test_a_slip_only_the_edge_catches_is_docked(tmp_path, label):
    q, function, body, named = SLIPS[label]
    source = _replace(function, body)
    with_edge = grade_question(A5.id, tmp_path, source, q, "ed@uni.edu", FAST)
    assert with_edge.score < with_edge.max_score
    assert with_edge.misconceptions == named, with_edge.feedback
    # the control, with the same limits
    without = grade_question(A5.id, tmp_path, source, _without_edges(q), "ned@uni.edu", FAST)
    assert without.score == without.max_score and without.misconceptions == []
    right = grade_question(A5.id, tmp_path, SOLUTION, q, "sol@uni.edu", FAST)
    assert right.score == right.max_score
