"""reference/classify.py against outside authorities: torch (cross_entropy, EmbeddingBag,
autograd), finite differences, nltk.lm, and the study guide's own formulas.

Where a convention differs: nltk's `pad_both_ends` puts n − 1 "</s>" at the end (ours: one),
and its vocabulary length counts "<UNK>" and any "<s>" it saw (ours: the word types plus
"</s>"). The tests feed nltk our padded n-grams and give our functions nltk's vocabulary
length, so the two compute the same formula on the same counts.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
import torch

from reference import classify as cl

# ---------------------------------------------------------------- cosine


def test_cosine_matches_torch_for_every_row_pair():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(4, 6)), rng.normal(size=(3, 6))
    want = torch.nn.functional.cosine_similarity(
        torch.tensor(A)[:, None, :], torch.tensor(B)[None, :, :], dim=-1
    ).numpy()
    np.testing.assert_allclose(cl.cosine_similarity(A, B), want, rtol=1e-12)


def test_cosine_of_two_vectors_is_a_float_and_ignores_length():
    a, b = np.array([1.0, 2.0, 2.0]), np.array([2.0, 0.0, 0.0])
    got = cl.cosine_similarity(a, b)
    assert isinstance(got, float) and got == pytest.approx(2.0 / (3.0 * 2.0))
    assert cl.cosine_similarity(10 * a, b) == pytest.approx(got)


def test_cosine_and_dot_product_can_rank_neighbours_differently():
    q = np.array([1.0, 0.0])
    near_direction, long_vector = np.array([1.0, 0.1]), np.array([3.0, 3.0])
    assert q @ long_vector > q @ near_direction  # the dot product prefers the long vector
    cos = cl.cosine_similarity(np.stack([near_direction, long_vector]), q[None, :])[:, 0]
    assert cos[0] > cos[1]  # the cosine prefers the direction


# ---------------------------------------------------------------- softmax cross-entropy


@pytest.mark.parametrize("scale", [1.0, 50.0, 1000.0])
def test_cross_entropy_matches_torch_batched(scale):
    rng = np.random.default_rng(1)
    z, y = scale * rng.normal(size=(5, 4)), rng.integers(0, 4, size=5)
    t = torch.tensor(z, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(t, torch.tensor(y))
    loss.backward()
    got_loss, got_grad = cl.softmax_cross_entropy(z, y)
    assert got_loss == pytest.approx(loss.item(), rel=1e-12)
    np.testing.assert_allclose(got_grad, t.grad.numpy(), rtol=1e-10, atol=1e-14)


def test_cross_entropy_unbatched_is_p_minus_onehot():
    z = np.array([2.0, 1.0, 0.1])
    p = np.exp(z) / np.exp(z).sum()
    loss, grad = cl.softmax_cross_entropy(z, 0)
    assert loss == pytest.approx(-math.log(p[0]))  # the guide: −log P(correct class)
    np.testing.assert_allclose(grad, p - np.array([1.0, 0.0, 0.0]))
    assert grad.shape == (3,)


def test_cross_entropy_hooks():
    z, y = np.array([[1000.0, 0.0]]), np.array([1])
    with np.errstate(all="ignore"):  # the unshifted exp overflows on purpose
        assert not np.isfinite(cl.softmax_cross_entropy(z, y, stable=False)[0])
    z, y = np.array([[1.0, 2.0], [0.0, 0.5]]), np.array([0, 1])
    g = cl.softmax_cross_entropy(z, y)[1]
    np.testing.assert_allclose(cl.softmax_cross_entropy(z, y, batch_mean_grad=False)[1], 2 * g)
    flip = cl.softmax_cross_entropy(z, y, error=lambda p, yy: -cl.probs_minus_onehot(p, yy))[1]
    np.testing.assert_allclose(flip, -g)


# ---------------------------------------------------------------- DAN


def _dan_problem(seed: int = 3, B: int = 3, T: int = 5, V: int = 7, d: int = 4, h: int = 6):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, V, size=(B, T))
    ids[0, :3] = [2, 2, 5]  # a repeated token in one sentence
    lengths = np.array([3, T, 2])[:B]
    mask = np.arange(T)[None, :] < lengths[:, None]
    params = {
        "E": rng.normal(size=(V, d)),
        "W1": rng.normal(size=(h, d)),
        "b1": rng.normal(size=h),
        "W2": rng.normal(size=(3, h)),
        "b2": rng.normal(size=3),
    }
    return ids, mask, params, rng.integers(0, 3, size=B)


def _torch_dan(ids, mask, params):
    """The DAN built from torch modules: EmbeddingBag(mode="mean") over the real tokens."""
    bag = torch.nn.EmbeddingBag.from_pretrained(
        torch.tensor(params["E"]), mode="mean", freeze=False
    )
    l1 = torch.nn.Linear(params["W1"].shape[1], params["W1"].shape[0]).double()
    l2 = torch.nn.Linear(params["W2"].shape[1], params["W2"].shape[0]).double()
    with torch.no_grad():
        l1.weight.copy_(torch.tensor(params["W1"]))
        l1.bias.copy_(torch.tensor(params["b1"]))
        l2.weight.copy_(torch.tensor(params["W2"]))
        l2.bias.copy_(torch.tensor(params["b2"]))
    flat = torch.tensor(ids[mask])  # the real tokens, sentence after sentence
    offsets = torch.tensor(np.concatenate([[0], np.cumsum(mask.sum(axis=1))[:-1]]))
    logits = l2(torch.relu(l1(bag(flat, offsets))))
    return logits, {"E": bag.weight, "W1": l1.weight, "b1": l1.bias, "W2": l2.weight, "b2": l2.bias}


def test_dan_forward_matches_embedding_bag_mean():
    ids, mask, params, _ = _dan_problem()
    logits, _ = _torch_dan(ids, mask, params)
    want = torch.softmax(logits, dim=-1).detach().numpy()
    np.testing.assert_allclose(cl.dan_forward(ids, mask, params), want, rtol=1e-12)


def test_dan_backward_matches_autograd():
    ids, mask, params, y = _dan_problem()
    logits, leaves = _torch_dan(ids, mask, params)
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(y))
    loss.backward()
    got_loss, grads = cl.dan_backward(ids, mask, params, y)
    assert got_loss == pytest.approx(loss.item(), rel=1e-12)
    assert set(grads) == set(params)
    for k, leaf in leaves.items():
        np.testing.assert_allclose(grads[k], leaf.grad.numpy(), rtol=1e-9, atol=1e-13, err_msg=k)


def test_dan_backward_matches_finite_differences():
    ids, mask, params, y = _dan_problem(seed=8)
    _, grads = cl.dan_backward(ids, mask, params, y)
    eps = 1e-6
    for k in params:
        num = np.zeros_like(params[k])
        for i in np.ndindex(params[k].shape):
            up = {n: v.copy() for n, v in params.items()}
            dn = {n: v.copy() for n, v in params.items()}
            up[k][i] += eps
            dn[k][i] -= eps
            num[i] = (
                cl.dan_backward(ids, mask, up, y)[0] - cl.dan_backward(ids, mask, dn, y)[0]
            ) / (2 * eps)
        np.testing.assert_allclose(grads[k], num, rtol=1e-5, atol=1e-8, err_msg=k)


def test_dan_repeated_token_counts_each_occurrence():
    ids, mask, params, y = _dan_problem()
    _, grads = cl.dan_backward(ids, mask, params, y)

    def buffered(target, ids_, rows, keep):
        target[ids_[keep]] += rows[keep]  # numpy's buffered +=: one write per distinct id

    _, once = cl.dan_backward(ids, mask, params, y, scatter=buffered)
    assert not np.allclose(once["E"][2], grads["E"][2])  # token 2 occurs twice in sentence 0
    np.testing.assert_allclose(once["W1"], grads["W1"])


def test_dan_average_hook_reads_the_padding():
    ids, mask, params, _ = _dan_problem()
    E = params["E"]
    avg = cl.mean_of_all(E[ids], mask)
    np.testing.assert_allclose(avg[1], E[ids[1]].mean(axis=0))
    assert not np.allclose(avg[0], E[ids[0, :3]].mean(axis=0))


# ---------------------------------------------------------------- n-grams

CORPUS = [["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "cat", "ran"]]


def test_counts_by_hand():
    counts = cl.ngram_counts(CORPUS, 2)
    assert counts[("<s>", "the")] == 2 and counts[("the", "cat")] == 1
    assert counts[("sat", "</s>")] == 2 and counts[("<s>", "a")] == 1
    assert sum(counts.values()) == 3 + 3 + 3 + 3  # each sentence: its words plus "</s>"
    tri = cl.ngram_counts(CORPUS, 3)
    assert tri[("<s>", "<s>", "the")] == 2 and tri[("<s>", "the", "cat")] == 1
    assert cl.ngram_counts(CORPUS, 1)[("cat",)] == 2


def test_laplace_by_hand():
    counts = cl.ngram_counts(CORPUS, 2)
    V = 6 + 1  # the, cat, sat, dog, a, ran, and "</s>"
    assert cl.ngram_prob(counts, V, ("the",), "cat") == pytest.approx((1 + 1) / (2 + 7))
    assert cl.ngram_prob(counts, V, ("the",), "ran") == pytest.approx(1 / 9)
    assert cl.ngram_prob(counts, V, ("the",), "cat", k=0.5) == pytest.approx(1.5 / (2 + 3.5))


def _nltk_model(n: int, k: float):
    from nltk.lm import Laplace, Lidstone

    grams = [cl.ngrams(cl.pad(s, n), n) for s in CORPUS]
    vocab = [w for s in CORPUS for w in cl.pad(s, n)]
    model = Laplace(n) if k == 1.0 else Lidstone(k, n)
    model.fit(grams, vocab)
    return model


@pytest.mark.parametrize(("n", "k"), [(2, 1.0), (3, 1.0), (2, 0.1), (3, 0.5)])
def test_prob_matches_nltk_lm(n, k):
    model = _nltk_model(n, k)
    V = len(model.vocab)  # nltk's V: every type it saw ("<s>" too) plus "<UNK>"
    counts = cl.ngram_counts(CORPUS, n)
    for ctx, w in [(("the",), "cat"), (("cat",), "sat"), (("dog",), "ran"), (("sat",), "</s>")]:
        ctx = (("<s>",) * (n - 2) + ctx) if n == 3 else ctx
        assert cl.ngram_prob(counts, V, ctx, w, k) == pytest.approx(
            model.score(w, list(ctx)), rel=1e-12
        )


@pytest.mark.parametrize(("n", "k"), [(2, 1.0), (3, 1.0), (2, 0.25)])
def test_perplexity_matches_nltk_lm(n, k):
    model = _nltk_model(n, k)
    V = len(model.vocab)
    test = [["the", "cat", "ran"], ["a", "dog", "sat"]]
    grams = [g for s in test for g in cl.ngrams(cl.pad(s, n), n)]
    want = model.perplexity(grams)  # 2 ** (−mean log2 P) = exp(−mean ln P)
    got = cl.ngram_perplexity(cl.ngram_counts(CORPUS, n), V, test, n, k)
    assert got == pytest.approx(want, rel=1e-12)
    assert len(grams) == 8  # every word and each "</s>" predicted, never "<s>"


def test_perplexity_is_the_guides_formula():
    counts = cl.ngram_counts(CORPUS, 2)
    ps = [cl.ngram_prob(counts, 7, c, w) for c, w in cl.predictions(["the", "cat"], 2)]
    assert len(ps) == 3  # the | <s>,  cat | the,  </s> | cat
    want = math.exp(-sum(math.log(p) for p in ps) / 3)  # PPL = exp(−(1/N) Σ log P(w_i))
    assert cl.ngram_perplexity(counts, 7, [["the", "cat"]], 2) == pytest.approx(want)


def test_ngram_hooks():
    no_start = cl.ngram_counts(CORPUS, 2, start_pad=0)
    assert ("<s>", "the") not in no_start and sum(no_start.values()) == 9
    counts = cl.ngram_counts(CORPUS, 2)
    assert cl.ngram_prob(
        counts, 7, ("the",), "cat", denominator=lambda c, k, V: c
    ) == pytest.approx(1.0)  # (1 + 1) / 2: no k·V in the denominator
    ppl = partial(cl.ngram_perplexity, counts, 7, [["the", "cat"]], 2)
    assert ppl(exponentiate=lambda H: 2.0**H) == pytest.approx(2.0 ** math.log(ppl()))
    assert len(cl.predictions(["the", "cat"], 2, predict_end=False)) == 2
