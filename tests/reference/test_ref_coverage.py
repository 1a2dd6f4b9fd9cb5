"""The course coverage of co-occurrence vectors, greedy decoding, RoPE and span corruption against outside authorities: co-occurrence counts by
hand, numpy.linalg.svd up to column signs, RoPE's defining property and a 2-D rotation by hand,
a torch-built decoder-only model for gpt_forward, T5's own span-corruption example, greedy
decoding on hand-built trees. Each mutant hook is checked to compute the mistake it names."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from reference.functional import log_softmax
from reference.gpt import always_tied, gpt_forward, transposed_embedding
from reference.masking import span_corruption
from reference.positions import apply_rope, halves, rope_attention
from reference.seq2seq import greedy_decode, last_argmax
from reference.word_vectors import (
    cooccurrence_matrix,
    cosine_matrix,
    gram_matrix,
    svd_embeddings,
)

# ---------------------------------------------------------------- co-occurrence and SVD

# The classic window-1 toy corpus of the count-based view (notes §1: "co-occurrence matrix + SVD").
CORPUS = [["I", "like", "deep", "learning"], ["I", "like", "NLP"], ["I", "enjoy", "flying"]]
VOCAB = ["I", "like", "enjoy", "deep", "learning", "NLP", "flying"]


def test_cooccurrence_window_two_by_hand():
    # "a b c a" with window 2: a(0) sees b, c; b sees a, c, a; c sees a, b, a; a(3) sees b, c.
    X = cooccurrence_matrix([["a", "b", "c", "a"]], ["a", "b", "c"], window=2)
    np.testing.assert_array_equal(X, [[0, 2, 2], [2, 0, 1], [2, 1, 0]])


def test_cooccurrence_hooks_count_self_and_one_side():
    with_self = cooccurrence_matrix(CORPUS, VOCAB, offsets=lambda w: range(-w, w + 1))
    right_only = cooccurrence_matrix(CORPUS, VOCAB, offsets=lambda w: range(1, w + 1))
    X = cooccurrence_matrix(CORPUS, VOCAB)
    # a word as its own neighbour: its count of occurrences on the diagonal (I: 3, like: 2, …)
    np.testing.assert_array_equal(with_self - X, np.diag([3, 2, 1, 1, 1, 1, 1]))
    # one side: every pair once instead of twice, in one direction only
    np.testing.assert_array_equal(right_only + right_only.T, X)
    assert right_only[0, 1] == 2 and right_only[1, 0] == 0  # "I like" twice, never "like I"


def _sign_aligned(E: np.ndarray, want: np.ndarray) -> np.ndarray:
    return E * np.sign(np.sum(E * want, axis=0))


def test_svd_embeddings_match_numpy_svd_up_to_column_signs():
    X = cooccurrence_matrix(CORPUS, VOCAB)
    U, S, _ = np.linalg.svd(X)
    for k in (1, 2, 3):
        E = svd_embeddings(X, k)
        assert E.shape == (7, k)
        np.testing.assert_allclose(_sign_aligned(E, U[:, :k] * S[:k]), U[:, :k] * S[:k], atol=1e-12)
        np.testing.assert_allclose(
            gram_matrix(E), (U[:, :k] * S[:k]) @ (U[:, :k] * S[:k]).T, atol=1e-12
        )


def test_svd_cosines_of_the_toy_corpus_are_those_of_its_count_rows():
    # X = U Σ V^T with V orthonormal: untruncated, the rows of U Σ have the dot products (hence the
    # cosines) of the rows of X itself. cos(like, enjoy) = (2·1) / (√6 √2) = 1/√3 by hand.
    X = cooccurrence_matrix(CORPUS, VOCAB)
    rank = np.linalg.matrix_rank(X)
    C = cosine_matrix(svd_embeddings(X, rank))
    rows = X / np.linalg.norm(X, axis=1, keepdims=True)
    np.testing.assert_allclose(C, rows @ rows.T, atol=1e-12)
    assert C[1, 2] == pytest.approx(1 / math.sqrt(3), abs=1e-12)
    assert C[3, 5] == pytest.approx(
        1 / math.sqrt(2), abs=1e-12
    )  # deep [like, learning] vs NLP [like]


def test_svd_is_unchanged_by_column_signs_in_gram_and_cosines():
    X = np.random.default_rng(3).integers(0, 6, size=(6, 5)).astype(float)
    E = svd_embeddings(X, 3)
    flipped = E * np.array([-1.0, 1.0, -1.0])
    np.testing.assert_allclose(gram_matrix(flipped), gram_matrix(E), atol=1e-12)
    np.testing.assert_allclose(cosine_matrix(flipped), cosine_matrix(E), atol=1e-12)


def test_svd_hooks_compute_the_named_mistakes():
    X = (
        np.random.default_rng(5).integers(0, 6, size=(6, 4)).astype(float)
    )  # word-context, asymmetric
    U, S, Vh = np.linalg.svd(X, full_matrices=False)
    np.testing.assert_allclose(
        np.abs(svd_embeddings(X, 2, scale=False)), np.abs(U[:, :2]), atol=1e-12
    )
    np.testing.assert_allclose(
        np.abs(svd_embeddings(X, 2, side="V")), np.abs(Vh.T[:, :2] * S[:2]), atol=1e-12
    )
    assert svd_embeddings(X, 2, side="V").shape == (4, 2)
    assert svd_embeddings(X, 2, truncate=False).shape == (6, 4)
    E = svd_embeddings(X, 2, scale=False)
    np.testing.assert_allclose(E.T @ E, np.eye(2), atol=1e-12)  # orthonormal columns without Σ


# ---------------------------------------------------------------- greedy decoding

BOS, EOS, A, B = 3, 0, 1, 2


def _table(rows: dict[tuple[int, ...], tuple[float, ...]], default: tuple[float, ...]):
    def next_log_probs(prefix):
        p = np.asarray(rows.get(tuple(prefix), default), dtype=float)
        with np.errstate(divide="ignore"):
            return np.log(p)

    return next_log_probs


def test_greedy_argmax_each_step_stops_after_eos():
    lm = _table(
        {
            (BOS,): (0.1, 0.6, 0.3, 0),
            (BOS, A): (0.2, 0.1, 0.7, 0),
            (BOS, A, B): (0.9, 0.05, 0.05, 0),
        },
        (1.0, 0, 0, 0),
    )
    assert greedy_decode(lm, BOS, EOS, max_len=10) == [A, B, EOS]
    assert greedy_decode(lm, BOS, EOS, max_len=2) == [A, B]
    assert greedy_decode(lm, BOS, EOS, max_len=0) == []


def test_greedy_ties_go_to_the_smaller_id_and_hooks():
    lm = _table({(BOS,): (0.1, 0.45, 0.45, 0)}, (0.5, 0.25, 0.25, 0))
    assert greedy_decode(lm, BOS, EOS, 3) == [A, EOS]
    assert greedy_decode(lm, BOS, EOS, 3, choose=last_argmax) == [B, EOS]
    assert greedy_decode(lm, BOS, EOS, 3, keep_bos=True) == [BOS, A, EOS]
    assert greedy_decode(lm, BOS, EOS, 3, stop_at_eos=False) == [A, EOS, EOS]


@pytest.mark.parametrize("seed", range(4))
def test_greedy_matches_torch_argmax_loop(seed):
    def lm(prefix):
        rng = np.random.default_rng([seed, *prefix])
        return log_softmax(rng.normal(size=6))

    tokens = [BOS]
    for _ in range(8):
        w = int(torch.argmax(torch.tensor(lm(tokens))))
        tokens.append(w)
        if w == EOS:
            break
    assert greedy_decode(lm, BOS, EOS, 8) == tokens[1:]


# ---------------------------------------------------------------- span corruption (T5)

WORDS = ["Thank", "you", "for", "inviting", "me", "to", "your", "party", "last", "week", "."]
ID = {w: i for i, w in enumerate(WORDS)}
X_, Y_, Z_ = 99, 98, 97  # <extra_id_0>, <extra_id_1>, <extra_id_2>: counted down from the top
NAME = {**{i: w for w, i in ID.items()}, X_: "<X>", Y_: "<Y>", Z_: "<Z>"}


def _t5(**hooks) -> tuple[str, str]:
    inputs, targets = span_corruption(
        [ID[w] for w in WORDS], [(2, 2), (8, 1)], [X_, Y_, Z_], **hooks
    )
    return " ".join(NAME[i] for i in inputs), " ".join(NAME[i] for i in targets)


def test_span_corruption_t5_example_and_hooks():
    # Raffel et al. (2020), Figure 2
    assert _t5() == ("Thank you <X> me to your party <Y> week .", "<X> for inviting <Y> last <Z>")
    assert _t5(final_sentinel=False)[1] == "<X> for inviting <Y> last"
    assert _t5(order=lambda s: s[::-1]) == (
        "Thank you <Z> me to your party <Y> week .",
        "<Z> for inviting <Y> last <X>",
    )
    assert _t5(drop_spans=False)[0] == "Thank you <X> for inviting me to your party <Y> last week ."


def test_span_corruption_span_at_the_ends():
    inputs, targets = span_corruption([5, 6, 7, 8], [(0, 1), (3, 1)], [90, 91, 92])
    assert (inputs, targets) == ([90, 6, 7, 91], [90, 5, 91, 8, 92])


# ---------------------------------------------------------------- RoPE


def test_rope_two_d_rotation_by_hand():
    # d = 2: one pair, θ_0 = base^0 = 1, so position t rotates by t radians.
    X = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    got = apply_rope(X)
    want = [
        [1, 0],
        [math.cos(1), math.sin(1)],
        [math.cos(2), math.sin(2)],
        [-math.sin(3), math.cos(3)],
    ]
    np.testing.assert_allclose(got, want, atol=1e-15)


def test_rope_second_pair_frequency_by_hand():
    # d = 4, base 100: θ_1 = 100^(-2/4) = 0.1; position 5 rotates pair (2, 3) by 0.5 rad.
    X = np.zeros((6, 4))
    X[5] = [0.0, 0.0, 2.0, 0.0]
    np.testing.assert_allclose(
        apply_rope(X, base=100.0)[5], [0, 0, 2 * math.cos(0.5), 2 * math.sin(0.5)], atol=1e-15
    )


def test_rope_matches_the_complex_formulation():
    # RoFormer §3.2.2: pair (x_{2i}, x_{2i+1}) as the complex number x_{2i} + i x_{2i+1}, times e^{i t θ_i}.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2, 7, 8))
    theta = 10000.0 ** (-np.arange(0, 8, 2) / 8)  # (4,)
    z = (X[..., 0::2] + 1j * X[..., 1::2]) * np.exp(1j * np.arange(7)[:, None] * theta)
    want = np.empty_like(X)
    want[..., 0::2], want[..., 1::2] = z.real, z.imag
    np.testing.assert_allclose(apply_rope(X), want, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_rope_score_depends_only_on_the_offset(seed):
    """q rotated at position m, k at position n: q_m · k_n is a function of m - n alone."""
    rng = np.random.default_rng(seed)
    d, T = 8, 12
    q, k = rng.normal(size=d), rng.normal(size=d)
    Rq, Rk = apply_rope(np.tile(q, (T, 1))), apply_rope(np.tile(k, (T, 1)))  # row t: rotated at t
    for offset in (-3, 0, 2, 5):
        scores = [Rq[m] @ Rk[m - offset] for m in range(max(0, offset), min(T, T + offset))]
        np.testing.assert_allclose(scores, scores[0], atol=1e-12)
    assert not np.isclose(Rq[3] @ Rk[1], Rq[3] @ Rk[2])  # but it does depend on the offset
    np.testing.assert_allclose(np.linalg.norm(Rq, axis=1), np.linalg.norm(q))  # a rotation


def test_rope_hooks_compute_the_named_mistakes():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 6))
    R = apply_rope(X)
    np.testing.assert_allclose(apply_rope(R, sign=-1.0), X, atol=1e-12)  # the inverse rotation
    perm = np.array([0, 3, 1, 4, 2, 5])  # halves (i, i + 3) laid out as interleaved pairs
    np.testing.assert_allclose(
        apply_rope(X[:, perm])[:, np.argsort(perm)], apply_rope(X, pairs=halves), atol=1e-12
    )
    slow = apply_rope(X, frequencies=lambda d, base: base ** (-np.arange(d // 2) / d))
    np.testing.assert_allclose(slow[:, :2], R[:, :2], atol=1e-12)  # pair 0: θ = 1 either way
    assert not np.allclose(slow[:, 2:], R[:, 2:])


def test_rope_attention_rotates_queries_and_keys_only():
    rng = np.random.default_rng(2)
    Q, K, V = rng.normal(size=(4, 4)), rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    out, w = rope_attention(Q, K, V)
    S = apply_rope(Q) @ apply_rope(K).T / 2.0
    want = torch.softmax(torch.tensor(S), dim=-1).numpy()
    np.testing.assert_allclose(w, want, atol=1e-12)
    np.testing.assert_allclose(out, want @ V, atol=1e-12)
    np.testing.assert_allclose(
        rope_attention(Q, K, V, rotate_values=True)[0], want @ apply_rope(V), atol=1e-12
    )


# ---------------------------------------------------------------- gpt_forward vs a torch model


def _params(
    rng: np.random.Generator,
    V: int = 11,
    d: int = 8,
    h: int = 2,
    dff: int = 16,
    T_max: int = 9,
    n_layers: int = 2,
    untied: bool = False,
) -> dict:
    def block() -> dict:
        return {
            "W_Q": rng.normal(size=(d, d)) / math.sqrt(d), "W_K": rng.normal(size=(d, d)) / math.sqrt(d),
            "W_V": rng.normal(size=(d, d)) / math.sqrt(d), "W_O": rng.normal(size=(d, d)) / math.sqrt(d),
            "ln1_gamma": 1 + 0.2 * rng.normal(size=d), "ln1_beta": 0.2 * rng.normal(size=d),
            "ln2_gamma": 1 + 0.2 * rng.normal(size=d), "ln2_beta": 0.2 * rng.normal(size=d),
            "W1": rng.normal(size=(dff, d)) / math.sqrt(d), "b1": 0.2 * rng.normal(size=dff),
            "W2": rng.normal(size=(d, dff)) / math.sqrt(dff), "b2": 0.2 * rng.normal(size=d),
        }  # fmt: skip

    p = {
        "W_E": rng.normal(size=(V, d)),
        "P": 0.5 * rng.normal(size=(T_max, d)),
        "blocks": [block() for _ in range(n_layers)],
        "lnf_gamma": 1 + 0.2 * rng.normal(size=d),
        "lnf_beta": 0.2 * rng.normal(size=d),
    }
    if untied:
        p["W_U"] = rng.normal(size=(V, d))
    return p


class TorchBlock(nn.Module):
    """A GPT-2-style block from torch's own layers (pre-norm unless post=True)."""

    def __init__(self, p: dict, h: int, post: bool = False):
        super().__init__()
        d, dff = p["W_Q"].shape[1], p["W1"].shape[0]
        self.post = post
        self.ln_1, self.ln_2 = nn.LayerNorm(d, eps=1e-5), nn.LayerNorm(d, eps=1e-5)
        self.attn = nn.MultiheadAttention(d, h, bias=False, batch_first=True)
        self.fc1, self.fc2 = nn.Linear(d, dff), nn.Linear(dff, d)
        with torch.no_grad():
            for ln, i in ((self.ln_1, 1), (self.ln_2, 2)):
                ln.weight.copy_(torch.tensor(p[f"ln{i}_gamma"]))
                ln.bias.copy_(torch.tensor(p[f"ln{i}_beta"]))
            self.attn.in_proj_weight.copy_(torch.tensor(np.vstack([p["W_Q"], p["W_K"], p["W_V"]])))
            self.attn.out_proj.weight.copy_(torch.tensor(p["W_O"]))
            self.fc1.weight.copy_(torch.tensor(p["W1"]))
            self.fc1.bias.copy_(torch.tensor(p["b1"]))
            self.fc2.weight.copy_(torch.tensor(p["W2"]))
            self.fc2.bias.copy_(torch.tensor(p["b2"]))

    def attend(self, x: torch.Tensor, causal: bool) -> torch.Tensor:
        T = x.shape[1]
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1) if causal else None
        return self.attn(x, x, x, attn_mask=future, need_weights=False)[0]  # True = may NOT attend

    def forward(self, x: torch.Tensor, causal: bool = True) -> torch.Tensor:
        mlp = lambda z: self.fc2(torch.relu(self.fc1(z)))  # noqa: E731
        if self.post:
            x = self.ln_1(x + self.attend(x, causal))
            return self.ln_2(x + mlp(x))
        x = x + self.attend(self.ln_1(x), causal)
        return x + mlp(self.ln_2(x))


def torch_gpt(
    ids: np.ndarray,
    p: dict,
    h: int,
    *,
    causal: bool = True,
    final_norm: bool = True,
    post: bool = False,
    positions_after: bool = False,
) -> np.ndarray:
    """A decoder-only transformer built from nn.Embedding, nn.LayerNorm, nn.MultiheadAttention."""
    torch.set_default_dtype(torch.float64)
    try:
        V, d = p["W_E"].shape
        tok, pos = nn.Embedding(V, d), nn.Embedding(p["P"].shape[0], d)
        ln_f = nn.LayerNorm(d, eps=1e-5)
        with torch.no_grad():
            tok.weight.copy_(torch.tensor(p["W_E"]))
            pos.weight.copy_(torch.tensor(p["P"]))
            ln_f.weight.copy_(torch.tensor(p["lnf_gamma"]))
            ln_f.bias.copy_(torch.tensor(p["lnf_beta"]))
            blocks = [TorchBlock(b, h, post) for b in p["blocks"]]
            idx = torch.tensor(ids)[None, :]  # (1, T)
            where = torch.arange(idx.shape[1])[None, :]
            x = tok(idx) if positions_after else tok(idx) + pos(where)
            for blk in blocks:
                x = blk(x, causal)
            if positions_after:
                x = x + pos(where)
            x = ln_f(x) if final_norm else x
            W_U = torch.tensor(p.get("W_U", p["W_E"]))  # tied: the LM head is the token embedding
            logits = x @ W_U.T
            return torch.softmax(logits, dim=-1)[0].numpy()
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("seed, untied", [(0, False), (1, True), (2, False)])
def test_gpt_forward_matches_a_torch_decoder_only_model(seed, untied):
    rng = np.random.default_rng(seed)
    p = _params(rng, untied=untied)
    ids = rng.integers(0, 11, size=7)
    got = gpt_forward(ids, p, 2)
    assert got.shape == (7, 11)
    np.testing.assert_allclose(got, torch_gpt(ids, p, 2), atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=-1), 1.0, atol=1e-12)


def test_gpt_forward_is_causal():
    """Changing the last token leaves every earlier position's prediction unchanged."""
    rng = np.random.default_rng(4)
    p = _params(rng)
    ids = rng.integers(0, 11, size=6)
    other = ids.copy()
    other[-1] = (ids[-1] + 1) % 11
    a, b = gpt_forward(ids, p, 2), gpt_forward(other, p, 2)
    np.testing.assert_allclose(a[:-1], b[:-1], atol=1e-14)
    assert not np.allclose(a[-1], b[-1])


@pytest.mark.parametrize(
    "hook, torch_flags",
    [
        ({"causal": False}, {"causal": False}),
        ({"final_norm": False}, {"final_norm": False}),
        ({"norm": "post"}, {"post": True}),
        ({"positions": "after"}, {"positions_after": True}),
    ],
)
def test_gpt_forward_hooks_match_the_torch_model_with_that_change(hook, torch_flags):
    rng = np.random.default_rng(7)
    p = _params(rng)
    ids = rng.integers(0, 11, size=6)
    got = gpt_forward(ids, p, 2, **hook)
    np.testing.assert_allclose(got, torch_gpt(ids, p, 2, **torch_flags), atol=1e-12)
    assert not np.allclose(got, gpt_forward(ids, p, 2), atol=1e-6)


def test_gpt_forward_unembedding_and_softmax_hooks():
    rng = np.random.default_rng(8)
    square = _params(rng, V=8, d=8)  # W_E square: x W_E is defined, and differs from x W_E^T
    ids = rng.integers(0, 8, size=5)
    right = gpt_forward(ids, square, 2)
    assert not np.allclose(
        gpt_forward(ids, square, 2, unembed=transposed_embedding), right, atol=1e-6
    )
    untied = _params(rng, untied=True)
    ids = rng.integers(0, 11, size=5)
    tied = {k: v for k, v in untied.items() if k != "W_U"}
    np.testing.assert_allclose(
        gpt_forward(ids, untied, 2, unembed=always_tied), gpt_forward(ids, tied, 2)
    )
    over_positions = gpt_forward(ids, untied, 2, softmax_axis=-2)
    np.testing.assert_allclose(over_positions.sum(axis=0), 1.0, atol=1e-12)


def test_gpt_forward_one_token_and_no_blocks():
    # With no blocks: probs = softmax(LN_f(W_E[id] + P[0]) W_E^T), by hand with torch's layer_norm.
    rng = np.random.default_rng(9)
    p = _params(rng, n_layers=0)
    x = torch.tensor(p["W_E"][[4]] + p["P"][:1])
    x = torch.nn.functional.layer_norm(
        x, (8,), torch.tensor(p["lnf_gamma"]), torch.tensor(p["lnf_beta"]), 1e-5
    )
    want = torch.softmax(x @ torch.tensor(p["W_E"]).T, dim=-1).numpy()
    np.testing.assert_allclose(gpt_forward([4], p, 2), want, atol=1e-12)


def test_gpt_forward_rejects_too_many_tokens():
    p = _params(np.random.default_rng(0), T_max=3)
    with pytest.raises(ValueError, match="at most 3 tokens"):
        gpt_forward([1, 2, 3, 4], p, 2)
