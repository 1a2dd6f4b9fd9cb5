"""reference/attention.py against the slides' microscope, torch, and attention's own symmetries."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from reference.attention import (
    attend_heads,
    attention_cost,
    causal_mask,
    cross_attention,
    masked_softmax,
    merge_heads,
    multi_head_attention,
    padding_mask,
    scaled_dot_product_attention,
    split_heads,
)
from reference.ffn import linear

# ---- the the/cat/sleeps microscope (slides 001, Part 3, "A three-token microscope") ----
X3 = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]], dtype=float)
W_Q1 = np.array([[1, 0, 0, 0], [0, 1, 0, 0]], dtype=float)
W_K1 = np.array([[0, 0, 1, 0], [0, 0, 0, 1]], dtype=float)
W_V1 = np.array([[1, 0, 1, 0], [0, 1, 0, 2]], dtype=float)
# head 2 (slides: "W_Q2=W_K1, W_K2=W_Q1, W_V2=[[0,1,1,0],[1,0,0,-1]]"), W_O from the ledger
W_V2 = np.array([[0, 1, 1, 0], [1, 0, 0, -1]], dtype=float)
W_O_TWO_HEADS = np.array(
    [[1, 0, 0.5, 0], [0, 1, 0, 0.5], [0.5, 0, 1, 0], [0, 0.5, 0, 1]], dtype=float
)

TOL = dict(atol=5e-5, rtol=0)  # the slides round to 4 decimals


def t64(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float64)


def microscope_qkv():
    return linear(X3, W_Q1), linear(X3, W_K1), linear(X3, W_V1)


def test_microscope_projections():
    Q, K, V = microscope_qkv()
    # slides: "Queries, keys, and values keep different information"
    np.testing.assert_allclose(Q, [[1, 0], [0, 1], [1, 1]])
    np.testing.assert_allclose(K, [[1, 0], [0, 1], [0, 0]])
    np.testing.assert_allclose(V, [[2, 0], [0, 3], [1, 1]])


def test_microscope_row1_scores_and_weights():
    Q, K, V = microscope_qkv()
    out, A = scaled_dot_product_attention(Q, K, V)
    # slides: S_{1,:} ≈ (0, 0.7071, 0); A_{1,:} ≈ (0.2483, 0.5035, 0.2483); O_1 ≈ (0.7448, 1.7587)
    np.testing.assert_allclose(np.log(A[1] / A[1, 0]), [0, 0.7071, 0], **TOL)
    np.testing.assert_allclose(A[1], [0.2483, 0.5035, 0.2483], **TOL)
    np.testing.assert_allclose(out[1], [0.7448, 1.7587], **TOL)


def test_microscope_full_weights_and_outputs():
    Q, K, V = microscope_qkv()
    out, A = scaled_dot_product_attention(Q, K, V)
    # slides: "Matrix attention performs the same calculation for every query"
    np.testing.assert_allclose(
        A, [[0.5035, 0.2483, 0.2483], [0.2483, 0.5035, 0.2483], [0.4011, 0.4011, 0.1978]], **TOL
    )
    np.testing.assert_allclose(out, [[1.2552, 0.9930], [0.7448, 1.7587], [1.0000, 1.4011]], **TOL)


def test_microscope_causal_row():
    Q, K, V = microscope_qkv()
    out, A = scaled_dot_product_attention(Q, K, V, causal_mask(3))
    # slides: A^causal_{1,:} ≈ (0.3302, 0.6698, 0.0000), O^causal_1 ≈ (0.6605, 2.0093)
    np.testing.assert_allclose(A[1], [0.3302, 0.6698, 0.0], **TOL)
    assert A[1, 2] == 0.0
    np.testing.assert_allclose(out[1], [0.6605, 2.0093], **TOL)


def test_microscope_two_heads_concat_and_output_projection():
    W_Q = np.vstack([W_Q1, W_K1])  # head 2's W_Q = head 1's W_K
    W_K = np.vstack([W_K1, W_Q1])
    W_V = np.vstack([W_V1, W_V2])
    concat, _ = attend_heads(X3, X3, W_Q, W_K, W_V, np.eye(4), 2)
    # slides: head outputs table and [O1 | O2]_{t=1} ≈ (0.7448, 1.7587, 1.0000, 0.1978)
    np.testing.assert_allclose(concat[:, 2:], [[1.0, 0.6044], [1.0, 0.1978], [1.0, 0.3333]], **TOL)
    np.testing.assert_allclose(concat[1], [0.7448, 1.7587, 1.0000, 0.1978], **TOL)
    mha = multi_head_attention(X3, W_Q, W_K, W_V, W_O_TWO_HEADS, 2)
    # slides: MHA(X)_{t=1} ≈ (1.2448, 1.8576, 1.3724, 1.0771)
    np.testing.assert_allclose(mha[1], [1.2448, 1.8576, 1.3724, 1.0771], **TOL)


# ---- torch.nn.functional.scaled_dot_product_attention ----


def _random_qkv(rng, lead, Tq=5, Tk=5, dk=4, dv=3):
    return (
        rng.normal(size=(*lead, Tq, dk)),
        rng.normal(size=(*lead, Tk, dk)),
        rng.normal(size=(*lead, Tk, dv)),
    )


@pytest.mark.parametrize("lead", [(), (2,), (2, 3)], ids=["unbatched", "batch", "batch-heads"])
@pytest.mark.parametrize("kind", ["none", "causal", "padding", "both"])
def test_sdpa_matches_torch(lead, kind):
    rng = np.random.default_rng(len(lead) * 10 + len(kind))
    Q, K, V = _random_qkv(rng, lead)
    T = 5
    mask = None
    if kind in ("causal", "both"):
        mask = causal_mask(T)
    if kind in ("padding", "both"):
        keys_real = np.arange(T) < 3  # keys 3, 4 are padding, every row keeps key 0
        mask = keys_real[None, :] if mask is None else mask & keys_real[None, :]
    out, A = scaled_dot_product_attention(Q, K, V, mask)
    expected = F.scaled_dot_product_attention(
        t64(Q), t64(K), t64(V), attn_mask=None if mask is None else torch.as_tensor(mask)
    )
    np.testing.assert_allclose(out, expected.numpy(), atol=1e-12)
    np.testing.assert_allclose(A.sum(-1), 1.0, atol=1e-12)
    if mask is not None:
        assert np.all(np.broadcast_to(A, A.shape)[..., ~np.broadcast_to(mask, (T, T))] == 0.0)


def test_sdpa_cross_lengths_match_torch():
    rng = np.random.default_rng(1)
    Q, K, V = _random_qkv(rng, (2,), Tq=3, Tk=6)
    out, A = scaled_dot_product_attention(Q, K, V)
    expected = F.scaled_dot_product_attention(t64(Q), t64(K), t64(V))
    assert A.shape == (2, 3, 6)
    np.testing.assert_allclose(out, expected.numpy(), atol=1e-12)


def test_fully_masked_row_gives_zero_weights_and_zero_output():
    rng = np.random.default_rng(2)
    Q, K, V = _random_qkv(rng, ())
    mask = np.ones((5, 5), dtype=bool)
    mask[2] = False
    out, A = scaled_dot_product_attention(Q, K, V, mask)
    assert np.all(A[2] == 0.0) and np.all(out[2] == 0.0)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(np.delete(A, 2, axis=0).sum(-1), 1.0)


def test_masked_softmax_large_scores_are_stable():
    scores = np.array([[1000.0, 999.0, -1000.0]])
    w = masked_softmax(scores, np.array([[True, True, False]]))
    expected = torch.softmax(torch.tensor([1000.0, 999.0], dtype=torch.float64), -1).numpy()
    np.testing.assert_allclose(w[0, :2], expected)
    assert w[0, 2] == 0.0


def test_scale_hook_changes_only_the_scale():
    rng = np.random.default_rng(3)
    Q, K, V = _random_qkv(rng, (2,), dk=9)
    out_default, _ = scaled_dot_product_attention(Q, K, V)
    out_explicit, _ = scaled_dot_product_attention(Q, K, V, scale=1 / 3)
    out_unscaled, _ = scaled_dot_product_attention(Q, K, V, scale=1.0)
    np.testing.assert_allclose(out_default, out_explicit)
    torch_unscaled = F.scaled_dot_product_attention(t64(Q), t64(K), t64(V), scale=1.0)
    np.testing.assert_allclose(out_unscaled, torch_unscaled.numpy(), atol=1e-12)
    assert not np.allclose(out_default, out_unscaled)


# ---- masks ----


def test_causal_mask_matches_tril():
    np.testing.assert_array_equal(causal_mask(6), torch.ones(6, 6).tril().bool().numpy())
    assert causal_mask(4).dtype == bool


def test_padding_mask_true_at_real_tokens():
    m = padding_mask(np.array([3, 0, 5]), 5)
    np.testing.assert_array_equal(
        m,
        [[1, 1, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]],
    )
    with pytest.raises(ValueError, match="lengths"):
        padding_mask(np.array([6]), 5)


# ---- heads ----


def test_split_heads_matches_torch_view_transpose():
    x = np.arange(2 * 3 * 8, dtype=float).reshape(2, 3, 8)
    expected = torch.as_tensor(x).view(2, 3, 2, 4).transpose(1, 2).numpy()
    np.testing.assert_array_equal(split_heads(x, 2), expected)
    # head i holds features i*d_h:(i+1)*d_h of every position
    np.testing.assert_array_equal(split_heads(x, 2)[:, 1], x[..., 4:8])
    np.testing.assert_array_equal(merge_heads(split_heads(x, 2)), x)
    with pytest.raises(ValueError, match="divisible"):
        split_heads(x, 3)


# ---- torch.nn.MultiheadAttention with the weights mapped ----


def _torch_mha(W_Q, W_K, W_V, W_O, n_heads):
    d = W_Q.shape[1]
    mha = torch.nn.MultiheadAttention(d, n_heads, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(t64(np.vstack([W_Q, W_K, W_V])))
        mha.out_proj.weight.copy_(t64(W_O))
    return mha.eval()


def _random_mha_weights(rng, d=8):
    return [rng.normal(size=(d, d)) / math.sqrt(d) for _ in range(4)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_mha_matches_torch_multihead_attention(causal, padded):
    rng = np.random.default_rng(4)
    B, T, d, h = 3, 5, 8, 2
    X = rng.normal(size=(B, T, d))
    W_Q, W_K, W_V, W_O = _random_mha_weights(rng, d)
    kpm = padding_mask(np.array([5, 3, 1]), T) if padded else None
    out = multi_head_attention(X, W_Q, W_K, W_V, W_O, h, causal=causal, key_padding_mask=kpm)
    mha = _torch_mha(W_Q, W_K, W_V, W_O, h)
    expected, weights = mha(
        t64(X),
        t64(X),
        t64(X),
        # torch's nn.MultiheadAttention reads boolean masks as True = may NOT attend
        attn_mask=torch.as_tensor(~causal_mask(T)) if causal else None,
        key_padding_mask=torch.as_tensor(~kpm) if padded else None,
        need_weights=True,
        average_attn_weights=False,
    )
    np.testing.assert_allclose(out, expected.detach().numpy(), atol=1e-12)
    mask = None if not causal else causal_mask(T)
    if padded:
        mask = (mask if mask is not None else True) & kpm[:, None, None, :]
    _, ours = attend_heads(X, X, W_Q, W_K, W_V, W_O, h, mask)
    np.testing.assert_allclose(ours, weights.detach().numpy(), atol=1e-12)


def test_mha_unbatched_matches_torch():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(4, 8))
    W = _random_mha_weights(rng)
    out = multi_head_attention(X, *W, 4, causal=True)
    expected, _ = _torch_mha(*W, 4)(
        t64(X), t64(X), t64(X), attn_mask=torch.as_tensor(~causal_mask(4))
    )
    assert out.shape == (4, 8)
    np.testing.assert_allclose(out, expected.detach().numpy(), atol=1e-12)


def test_mha_two_leading_axes_equal_loop():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(2, 3, 4, 8))
    W = _random_mha_weights(rng)
    kpm = rng.random((2, 3, 4)) < 0.7
    kpm[..., 0] = True
    out = multi_head_attention(X, *W, 2, causal=True, key_padding_mask=kpm)
    for i in range(2):
        for j in range(3):
            one = multi_head_attention(X[i, j], *W, 2, causal=True, key_padding_mask=kpm[i, j])
            np.testing.assert_allclose(out[i, j], one, atol=1e-12)


def test_cross_attention_matches_torch_with_memory_padding():
    rng = np.random.default_rng(7)
    B, T, S, d, h = 2, 3, 6, 8, 2
    Y = rng.normal(size=(B, T, d))
    memory = rng.normal(size=(B, S, d))
    W = _random_mha_weights(rng, d)
    mpm = padding_mask(np.array([6, 2]), S)
    out = cross_attention(Y, memory, *W, h, mpm)
    expected, _ = _torch_mha(*W, h)(
        t64(Y), t64(memory), t64(memory), key_padding_mask=torch.as_tensor(~mpm)
    )
    assert out.shape == (B, T, d)
    np.testing.assert_allclose(out, expected.detach().numpy(), atol=1e-12)


# ---- properties ----


def test_unmasked_self_attention_is_permutation_equivariant():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(6, 8))
    W = _random_mha_weights(rng)
    perm = rng.permutation(6)
    np.testing.assert_allclose(
        multi_head_attention(X[perm], *W, 2), multi_head_attention(X, *W, 2)[perm], atol=1e-12
    )


def test_causal_outputs_ignore_later_tokens():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(6, 8))
    W = _random_mha_weights(rng)
    X2 = X.copy()
    X2[4:] = rng.normal(size=(2, 8)) * 10
    a = multi_head_attention(X, *W, 2, causal=True)
    b = multi_head_attention(X2, *W, 2, causal=True)
    np.testing.assert_allclose(a[:4], b[:4], atol=1e-12)
    assert not np.allclose(a[4:], b[4:])


def test_padded_key_row_leaves_real_rows_unchanged():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(3, 8))
    W = _random_mha_weights(rng)
    padded = np.vstack([X, rng.normal(size=(1, 8)) * 100])  # a pad row with arbitrary values
    out_real = multi_head_attention(X, *W, 2)
    out_padded = multi_head_attention(
        padded, *W, 2, key_padding_mask=np.array([True, True, True, False])
    )
    np.testing.assert_allclose(out_padded[:3], out_real, atol=1e-12)


# ---- cost ----


def test_attention_cost_is_quadratic_in_T_and_linear_in_d():
    c = attention_cost(128, 64, 4)
    assert c["score_macs"] == 128 * 128 * 64  # notes §5: O(T² d)
    assert c["value_macs"] == 128 * 128 * 64
    assert c["score_memory"] == 4 * 128 * 128
    assert attention_cost(256, 64, 4)["score_macs"] == 4 * c["score_macs"]  # T -> 2T: ×4
    assert attention_cost(128, 128, 4)["score_macs"] == 2 * c["score_macs"]
    assert c["projection_macs"] == 4 * 128 * 64 * 64


# ---- the hooks issue 17's mutants use: output projection, mask combination, a scale of d_k ----


def test_project_hook_identity_is_torch_mha_with_an_identity_output_projection():
    rng = np.random.default_rng(17)
    X = rng.normal(size=(2, 4, 6))
    W_Q, W_K, W_V, _ = _random_mha_weights(rng, 6)
    out = multi_head_attention(X, W_Q, W_K, W_V, np.zeros((6, 6)), 2, project=lambda x, W: x)
    expected, _ = _torch_mha(W_Q, W_K, W_V, np.eye(6), 2)(t64(X), t64(X), t64(X))
    np.testing.assert_allclose(out, expected.detach().numpy(), atol=1e-12)


def test_project_hook_receives_w_o_and_defaults_to_the_transposed_product():
    rng = np.random.default_rng(18)
    X = rng.normal(size=(4, 6))
    W_Q, W_K, W_V, W_O = _random_mha_weights(rng, 6)
    plain = multi_head_attention(X, W_Q, W_K, W_V, W_O, 2)
    np.testing.assert_allclose(
        multi_head_attention(X, W_Q, W_K, W_V, W_O.T, 2, project=lambda x, W: x @ W),
        plain,
        atol=1e-12,
    )


def test_combine_hook_or_lets_a_query_see_what_either_mask_allows():
    rng = np.random.default_rng(19)
    T, d, h = 4, 6, 2
    X = rng.normal(size=(2, T, d))
    W_Q, W_K, W_V, W_O = _random_mha_weights(rng, d)
    kpm = padding_mask(np.array([4, 2]), T)

    def either(*masks):
        return np.logical_or(*[m for m in masks if m is not None])

    out = multi_head_attention(
        X, W_Q, W_K, W_V, W_O, h, causal=True, key_padding_mask=kpm, combine=either
    )
    allowed = causal_mask(T)[None, None] | kpm[:, None, None, :]  # (B, 1, T, T)
    mha = _torch_mha(W_Q, W_K, W_V, W_O, h)
    expected, _ = mha(
        t64(X), t64(X), t64(X), attn_mask=torch.as_tensor(~np.repeat(allowed[:, 0], h, axis=0))
    )
    np.testing.assert_allclose(out, expected.detach().numpy(), atol=1e-12)
    default = multi_head_attention(X, W_Q, W_K, W_V, W_O, h, causal=True, key_padding_mask=kpm)
    assert not np.allclose(out, default)  # the OR differs where causal and padding disagree


def test_scale_hook_may_be_a_function_of_d_k():
    rng = np.random.default_rng(20)
    Q, K, V = rng.normal(size=(3, 5)), rng.normal(size=(4, 5)), rng.normal(size=(4, 2))
    by_value = scaled_dot_product_attention(Q, K, V, scale=1 / 5)
    by_function = scaled_dot_product_attention(Q, K, V, scale=lambda dk: 1 / dk)
    np.testing.assert_allclose(by_function[0], by_value[0], atol=1e-15)
    expected = F.scaled_dot_product_attention(t64(Q), t64(K), t64(V), scale=1 / 5)
    np.testing.assert_allclose(by_function[0], expected.numpy(), atol=1e-12)
