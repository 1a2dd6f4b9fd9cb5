"""reference/blocks.py and shapes_torch.py: the encoder-block microscope, torch layers, a5 shapes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from reference import shapes_torch
from reference.attention import causal_mask, padding_mask, scaled_dot_product_attention
from reference.blocks import (
    block_shapes,
    decoder_block,
    encoder_block,
    masked_mean_pool,
    mean_pool,
    pre_norm_sublayer,
    sequence_classification_logits,
    token_classification_logits,
)
from reference.ffn import linear, relu
from reference.norms import layer_norm

TOL = dict(atol=5e-5, rtol=0)  # the slides round to 4 decimals


def t64(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float64)


# ---- the complete pre-norm block microscope (slides 001, Part 4, "A complete block microscope") ----
H_IN = np.array([[1, 0, -1, 2], [0, 2, 1, -1], [2, 1, 0, 1]], dtype=float)
MICRO = {
    "W_Q": np.array([[1, 0, 0.5, 0], [0, 1, 0, 0.5]]),
    "W_K": np.array([[0.5, 0, 1, 0], [0, 0.5, 0, 1]]),
    "W_V": np.array([[1.0, 0, 0, 0], [0, 0, 1, 0]]),
    "W_O": np.array([[1.0, 0], [0, 1], [0.5, 0], [0, 0.5]]),
    "ln1_gamma": np.ones(4),
    "ln1_beta": np.zeros(4),
    "ln2_gamma": np.ones(4),
    "ln2_beta": np.zeros(4),
    "W1": np.array([[1, 0, -0.5, 0], [0, 1, 0, 0.5], [0.5, -0.5, 0.5, 0]]),
    "b1": np.array([0, 0.1, -0.1]),
    "W2": np.array([[0.5, 0, 0.2], [0, 0.5, -0.2], [0.3, -0.1, 0.1], [-0.2, 0.2, 0.4]]),
    "b2": np.array([0, -0.05, 0.05, 0]),
}
# slides: "All rows survive both residual additions"
U_ROWS = [
    [1.5366, -0.9101, -0.7317, 1.5450],
    [0.5650, 0.9637, 1.2825, -1.5182],
    [2.3129, 0.4733, 0.1565, 0.7366],
]
OUT_ROWS = [
    [2.3595, -1.0547, -0.1974, 1.4428],
    [0.5963, 0.8824, 1.3481, -1.4556],
    [3.4916, 0.3136, 0.9027, 0.5284],
]


def test_microscope_attention_branch_pieces():
    X = layer_norm(H_IN, MICRO["ln1_gamma"], MICRO["ln1_beta"])
    q, k, v = (linear(X, MICRO[w]) for w in ("W_Q", "W_K", "W_V"))
    # slides: q_0 ≈ (-0.2236, 0.2236), k_0 ≈ (-1.1180, 1.1180), v_0 ≈ (0.4472, -1.3416)
    np.testing.assert_allclose(q[0], [-0.2236, 0.2236], **TOL)
    np.testing.assert_allclose(k[0], [-1.1180, 1.1180], **TOL)
    np.testing.assert_allclose(v[0], [0.4472, -1.3416], **TOL)
    O, A = scaled_dot_product_attention(q, k, v)
    # slides: A_{0,:} ≈ (0.4176, 0.2545, 0.3279), O_0 ≈ (0.5366, -0.9101)
    np.testing.assert_allclose(A[0], [0.4176, 0.2545, 0.3279], **TOL)
    np.testing.assert_allclose(O[0], [0.5366, -0.9101], **TOL)
    B_att = linear(O, MICRO["W_O"])
    # slides: B_att,0 ≈ (0.5366, -0.9101, 0.2683, -0.4550); U_0 = h_0 + B_att,0
    np.testing.assert_allclose(B_att[0], [0.5366, -0.9101, 0.2683, -0.4550], **TOL)
    np.testing.assert_allclose(H_IN + B_att, U_ROWS, **TOL)


def test_microscope_mlp_branch_pieces():
    U = np.array(U_ROWS)
    R = layer_norm(U, MICRO["ln2_gamma"], MICRO["ln2_beta"])
    # slides: R_0 ≈ (0.9950, -1.0740, -0.9231, 1.0021) (from the rounded U, hence 2e-4)
    np.testing.assert_allclose(R[0], [0.9950, -1.0740, -0.9231, 1.0021], atol=2e-4)
    Z = linear(R, MICRO["W1"], MICRO["b1"])
    J = relu(Z)
    B_mlp = linear(J, MICRO["W2"], MICRO["b2"])
    # slides: Z_0 ≈ (1.4566, -0.4730, 0.4730), J_0 ≈ (1.4566, 0, 0.4730), B_mlp,0 ≈ (0.8229, -0.1446, 0.5343, -0.1021)
    np.testing.assert_allclose(Z[0], [1.4566, -0.4730, 0.4730], atol=2e-4)
    np.testing.assert_allclose(J[0], [1.4566, 0.0, 0.4730], atol=2e-4)
    np.testing.assert_allclose(B_mlp[0], [0.8229, -0.1446, 0.5343, -0.1021], atol=2e-4)


def test_microscope_encoder_block_all_rows_and_intermediates():
    seen = []

    def recording_wrap(x, norm, sublayer):  # the `wrap` hook, used here to watch U
        out = pre_norm_sublayer(x, norm, sublayer)
        seen.append(out)
        return out

    out = encoder_block(H_IN, MICRO, 1, wrap=recording_wrap)
    np.testing.assert_allclose(seen[0], U_ROWS, **TOL)
    np.testing.assert_allclose(out, OUT_ROWS, **TOL)
    np.testing.assert_allclose(encoder_block(H_IN, MICRO, 1, norm="pre"), out)


def test_microscope_block_with_a_pad_row():
    # slides: "Adding a pad row with arbitrary values leaves the three real block outputs unchanged"
    padded = np.vstack([H_IN, [[7.0, -3.0, 11.0, 0.5]]])
    out = encoder_block(padded, MICRO, 1, key_padding_mask=np.array([1, 1, 1, 0], dtype=bool))
    np.testing.assert_allclose(out[:3], OUT_ROWS, **TOL)


def test_microscope_block_is_permutation_equivariant():
    # slides: "The complete numeric block passes the permutation check"
    perm = np.array([2, 0, 1])
    np.testing.assert_allclose(
        encoder_block(H_IN[perm], MICRO, 1), encoder_block(H_IN, MICRO, 1)[perm], atol=1e-12
    )


# ---- torch.nn.TransformerEncoderLayer / TransformerDecoderLayer ----


def _random_encoder_params(rng, d=8, d_ff=16):
    s = 1 / math.sqrt(d)
    p = {w: rng.normal(size=(d, d)) * s for w in ("W_Q", "W_K", "W_V", "W_O")}
    for i in (1, 2, 3):
        p[f"ln{i}_gamma"] = 1 + 0.1 * rng.normal(size=d)
        p[f"ln{i}_beta"] = 0.1 * rng.normal(size=d)
    p.update(
        W1=rng.normal(size=(d_ff, d)) * s,
        b1=rng.normal(size=d_ff) * 0.1,
        W2=rng.normal(size=(d, d_ff)) / math.sqrt(d_ff),
        b2=rng.normal(size=d) * 0.1,
    )
    return p


def _load_mha(mha, W_Q, W_K, W_V, W_O):
    mha.in_proj_weight.copy_(t64(np.vstack([W_Q, W_K, W_V])))
    mha.in_proj_bias.zero_()  # the handout's attention has no biases
    mha.out_proj.weight.copy_(t64(W_O))
    mha.out_proj.bias.zero_()


def _load_ln(ln, gamma, beta):
    ln.weight.copy_(t64(gamma))
    ln.bias.copy_(t64(beta))


def _load_ffn(layer, p):
    layer.linear1.weight.copy_(t64(p["W1"]))
    layer.linear1.bias.copy_(t64(p["b1"]))
    layer.linear2.weight.copy_(t64(p["W2"]))
    layer.linear2.bias.copy_(t64(p["b2"]))


@pytest.mark.parametrize("norm", ["pre", "post"])
@pytest.mark.parametrize("padded", [False, True])
def test_encoder_block_matches_torch_encoder_layer(norm, padded):
    rng = np.random.default_rng(20)
    B, T, d, h, d_ff = 3, 5, 8, 2, 16
    p = _random_encoder_params(rng, d, d_ff)
    X = rng.normal(size=(B, T, d))
    kpm = padding_mask(np.array([5, 2, 4]), T) if padded else None
    layer = torch.nn.TransformerEncoderLayer(
        d, h, d_ff, dropout=0.0, activation="relu", batch_first=True,
        norm_first=(norm == "pre"), dtype=torch.float64,
    )  # fmt: skip
    with torch.no_grad():
        _load_mha(layer.self_attn, p["W_Q"], p["W_K"], p["W_V"], p["W_O"])
        _load_ln(layer.norm1, p["ln1_gamma"], p["ln1_beta"])
        _load_ln(layer.norm2, p["ln2_gamma"], p["ln2_beta"])
        _load_ffn(layer, p)
    layer.train()  # dropout is 0; train mode keeps torch off its fused inference fast path
    expected = layer(t64(X), src_key_padding_mask=None if kpm is None else torch.as_tensor(~kpm))
    out = encoder_block(X, p, h, norm=norm, key_padding_mask=kpm)
    np.testing.assert_allclose(out, expected.detach().numpy(), atol=1e-10)


@pytest.mark.parametrize("padded", [False, True])
def test_decoder_block_matches_torch_decoder_layer(padded):
    rng = np.random.default_rng(21)
    B, T, S, d, h, d_ff = 2, 4, 6, 8, 2, 16
    p = _random_encoder_params(rng, d, d_ff)
    for src, dst in zip(("W_Q", "W_K", "W_V", "W_O"), ("C_Q", "C_K", "C_V", "C_O")):
        p[dst] = rng.normal(size=p[src].shape) / math.sqrt(d)
    Y, memory = rng.normal(size=(B, T, d)), rng.normal(size=(B, S, d))
    mpm = padding_mask(np.array([6, 3]), S) if padded else None
    layer = torch.nn.TransformerDecoderLayer(
        d, h, d_ff, dropout=0.0, activation="relu", batch_first=True, norm_first=True,
        dtype=torch.float64,
    )  # fmt: skip
    with torch.no_grad():
        _load_mha(layer.self_attn, p["W_Q"], p["W_K"], p["W_V"], p["W_O"])
        _load_mha(layer.multihead_attn, p["C_Q"], p["C_K"], p["C_V"], p["C_O"])
        for i in (1, 2, 3):
            _load_ln(getattr(layer, f"norm{i}"), p[f"ln{i}_gamma"], p[f"ln{i}_beta"])
        _load_ffn(layer, p)
    layer.train()
    expected = layer(
        t64(Y),
        t64(memory),
        tgt_mask=torch.as_tensor(~causal_mask(T)),  # torch: True = may NOT attend
        memory_key_padding_mask=None if mpm is None else torch.as_tensor(~mpm),
    )
    out = decoder_block(Y, memory, p, h, memory_padding_mask=mpm)
    np.testing.assert_allclose(out, expected.detach().numpy(), atol=1e-10)


def test_decoder_block_is_causal_and_hooks_change_it():
    rng = np.random.default_rng(22)
    p = _random_encoder_params(rng)
    for w in ("C_Q", "C_K", "C_V", "C_O"):
        p[w] = rng.normal(size=(8, 8)) / math.sqrt(8)
    Y, memory = rng.normal(size=(5, 8)), rng.normal(size=(3, 8))
    Y2 = Y.copy()
    Y2[3:] += 5.0
    a, b = decoder_block(Y, memory, p, 2), decoder_block(Y2, memory, p, 2)
    np.testing.assert_allclose(a[:3], b[:3], atol=1e-12)
    not_causal = decoder_block(Y, memory, p, 2, causal=False)
    assert not np.allclose(not_causal[:3], a[:3])


def test_block_params_missing_key_is_named():
    p = dict(MICRO)
    del p["b2"]
    with pytest.raises(ValueError, match="b2"):
        encoder_block(H_IN, p, 1)
    with pytest.raises(ValueError, match="'pre' or 'post'"):
        encoder_block(H_IN, MICRO, 1, norm="middle")


# ---- task heads ----


def test_token_classification_logits_match_torch_linear():
    rng = np.random.default_rng(23)
    H, W_o, b_o = rng.normal(size=(2, 3, 4)), rng.normal(size=(5, 4)), rng.normal(size=5)
    expected = F.linear(t64(H), t64(W_o), t64(b_o)).numpy()
    np.testing.assert_allclose(token_classification_logits(H, W_o, b_o), expected, atol=1e-12)


def test_masked_mean_pool_equals_mean_of_real_rows():
    rng = np.random.default_rng(24)
    H = rng.normal(size=(3, 5, 4))
    lengths = np.array([5, 2, 1])
    pooled = masked_mean_pool(H, lengths)
    for b, n in enumerate(lengths):
        np.testing.assert_allclose(pooled[b], H[b, :n].mean(axis=0), atol=1e-12)
    with pytest.raises(ValueError, match="at least one real token"):
        masked_mean_pool(H, np.array([5, 0, 1]))


def test_mean_pool_invariant_to_real_permutation_and_padding_content():
    rng = np.random.default_rng(25)
    H = rng.normal(size=(6, 4))
    mask = np.array([1, 0, 1, 1, 0, 1], dtype=bool)
    base = mean_pool(H, mask)
    shuffled = H.copy()
    real = np.flatnonzero(mask)
    shuffled[real] = H[rng.permutation(real)]
    np.testing.assert_allclose(mean_pool(shuffled, mask), base, atol=1e-12)
    garbage = H.copy()
    garbage[~mask] = [np.nan, np.inf, 1e300, -7]
    np.testing.assert_allclose(mean_pool(garbage, mask), base, atol=1e-12)
    W_o, b_o = rng.normal(size=(3, 4)), rng.normal(size=3)
    np.testing.assert_allclose(
        sequence_classification_logits(garbage, mask, W_o, b_o), base @ W_o.T + b_o
    )


# ---- a5: block shapes ----


def test_block_shapes_notes_walkthrough():
    # notes §6, "Full shape walkthrough of one block": B=2, T=4, d=8, h=2, d_ff=32
    s = block_shapes(2, 4, 8, 2, 32)
    assert s["input"] == (2, 4, 8)
    assert s["q"] == (2, 4, 8)
    assert s["q_heads"] == (2, 2, 4, 4)  # (B, h, T, d_h)
    assert s["scores"] == (2, 2, 4, 4)  # (B, h, T, T)
    assert s["context_heads"] == (2, 2, 4, 4)
    assert s["context"] == (2, 4, 8)  # heads merged
    assert s["ffn_hidden"] == (2, 4, 32)
    assert s["block_out"] == (2, 4, 8)
    assert s["ln_stats"] == (2, 4)  # notes §6: LayerNorm statistics (B, T)
    assert s["bn_stats"] == (8,)  # BatchNorm statistics (d,)


def test_block_shapes_match_a_torch_traced_block():
    B, T, d, h, d_ff = 3, 5, 12, 3, 20
    x = torch.randn(B, T, d, dtype=torch.float64)
    W = torch.randn(d, d, dtype=torch.float64)
    seen = {"input": x.shape}
    q = x @ W.T  # (B, T, d)
    seen["q"] = q.shape
    qh = q.view(B, T, h, d // h).transpose(1, 2)  # (B, h, T, d_h), nanoGPT's split
    seen["q_heads"] = qh.shape
    att = qh @ qh.transpose(-2, -1)  # (B, h, T, T)
    seen["scores"] = att.shape
    w = att.softmax(-1)
    seen["weights"] = w.shape
    ctx = w @ qh  # (B, h, T, d_h)
    seen["context_heads"] = ctx.shape
    merged = ctx.transpose(1, 2).contiguous().view(B, T, d)
    seen["context"] = merged.shape
    seen["attn_out"] = (merged @ W.T).shape
    ffn = torch.nn.Sequential(torch.nn.Linear(d, d_ff), torch.nn.ReLU()).double()
    hidden = ffn(x)
    seen["ffn_hidden"] = hidden.shape
    seen["ffn_out"] = torch.nn.Linear(d_ff, d).double()(hidden).shape
    seen["block_out"] = x.shape
    seen["ln_stats"] = torch.var_mean(x, dim=-1)[1].shape
    seen["bn_stats"] = torch.nn.BatchNorm1d(d).double()(x.reshape(-1, d)).shape[1:]
    expected = {k: tuple(v) for k, v in seen.items()}
    assert block_shapes(B, T, d, h, d_ff) == expected
    with pytest.raises(ValueError, match="divisible"):
        block_shapes(B, T, 10, 3, d_ff)


# ---- a5: the torch-facing functions ----


def test_torch_split_merge_heads():
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    expected = x.view(2, 5, 3, 4).transpose(1, 2)
    out = shapes_torch.split_heads(x, 3)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float64
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(shapes_torch.merge_heads(out), x)
    assert shapes_torch.split_heads(x.float(), 3).dtype == torch.float32


def test_torch_masked_softmax_matches_masked_fill():
    scores = torch.randn(2, 3, 4, 4, dtype=torch.float64)
    mask = torch.tril(torch.ones(4, 4, dtype=torch.bool))
    expected = scores.masked_fill(~mask, float("-inf")).softmax(-1)
    out = shapes_torch.masked_softmax(scores, mask)
    torch.testing.assert_close(out, expected)
    assert torch.all(out[..., ~mask] == 0)


def test_torch_causal_lm_loss_matches_cross_entropy():
    g = torch.Generator().manual_seed(0)
    B, T, V, pad = 3, 6, 7, 0
    logits = torch.randn(B, T, V, dtype=torch.float64, generator=g)
    tokens = torch.randint(1, V, (B, T), generator=g)
    tokens[1, 4:] = pad
    tokens[2, 2:] = pad
    targets = tokens[:, 1:].masked_fill(tokens[:, 1:] == pad, -100)
    expected = F.cross_entropy(
        logits[:, :-1].reshape(-1, V), targets.reshape(-1), ignore_index=-100
    )
    out = shapes_torch.causal_lm_loss(logits, tokens, pad)
    assert out.shape == () and out.dtype == torch.float64
    torch.testing.assert_close(out, expected)


def test_torch_masked_mean_pool():
    H = torch.randn(2, 4, 3, dtype=torch.float64)
    lengths = torch.tensor([4, 2])
    out = shapes_torch.masked_mean_pool(H, lengths)
    torch.testing.assert_close(out, torch.stack([H[0].mean(0), H[1, :2].mean(0)]))


# ---- the documented hooks run and change the result (the grader derives mutants from them) ----


def test_documented_hooks_are_usable():
    from reference import attention
    from reference.functional import softmax
    from reference.positions import interleave, sinusoidal_positions

    rng = np.random.default_rng(26)
    p = _random_encoder_params(rng)
    for w in ("C_Q", "C_K", "C_V", "C_O"):
        p[w] = rng.normal(size=(8, 8)) / math.sqrt(8)
    X, memory = rng.normal(size=(2, 5, 8)), rng.normal(size=(2, 3, 8))
    base = encoder_block(X, p, 2)
    variants = [
        encoder_block(X, p, 2, wrap=lambda x, n, f: n(x) + f(n(x))),
        encoder_block(X, p, 2, activation=lambda z: z),
        encoder_block(
            X,
            p,
            2,
            layer_norm=lambda x, g, b, eps: layer_norm(
                x, g, b, eps, variance=lambda v, axis: np.var(v, axis=axis, keepdims=True, ddof=1)
            ),
        ),  # fmt: skip
    ]
    for v in variants:
        assert v.shape == base.shape and not np.allclose(v, base)
    dec = decoder_block(X, memory, p, 2)
    dec_keys = decoder_block(
        X, memory, p, 2,
        cross_attention=lambda q, mem, *a, **k: attention.cross_attention(q, q, *a[:-1]),
    )  # fmt: skip
    assert dec_keys.shape == dec.shape and not np.allclose(dec_keys, dec)
    Q, K, V = rng.normal(size=(3, 4, 4))
    mask = causal_mask(4)
    after, _ = scaled_dot_product_attention(Q, K, V, mask, weights_fn=lambda s, m: softmax(s) * m)
    zero_fill, _ = scaled_dot_product_attention(
        Q, K, V, mask, weights_fn=lambda s, m: attention.masked_softmax(s, m, fill=0.0)
    )
    ref, _ = scaled_dot_product_attention(Q, K, V, mask)
    assert not np.allclose(after, ref) and not np.allclose(zero_fill, ref)
    swapped = sinusoidal_positions(3, 4, layout=lambda s, c: interleave(c, s))
    np.testing.assert_allclose(swapped[:, 0::2], sinusoidal_positions(3, 4)[:, 1::2])
