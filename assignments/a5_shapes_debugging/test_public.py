"""Public tests for fixed.py: run `python -m pytest -q` in this folder.

They check the notes' walkthrough shapes, simple properties (split then merge is the
identity, masked weights are exactly 0, padding does not change the loss or the pooled
vector) and agree with torch's own functions on small inputs. Passing them does not
guarantee full marks: the grader runs further hidden cases.
"""

from __future__ import annotations

import math

import fixed
import pytest
import torch
import torch.nn.functional as F

torch.manual_seed(0)


def _out(x) -> torch.Tensor:
    """Your output as a float64 tensor: float32 work is fine (the tolerances fit it)."""
    return torch.as_tensor(x).to(torch.float64)


# ---------------------------------------------------------------- split / merge heads


def test_split_heads_walkthrough_shape_and_head_content():
    x = torch.arange(64, dtype=torch.float64).reshape(2, 4, 8)  # notes §6: B=2, T=4, d=8
    out = fixed.split_heads(x, 2)
    assert tuple(out.shape) == (2, 2, 4, 4)  # (B, h, T, d_h)
    # head 1 of sequence 0 holds features 4:8 of every position
    assert torch.equal(_out(out)[0, 1], x[0, :, 4:8])


def test_split_heads_with_T_different_from_d_h():
    x = torch.randn(3, 5, 12, dtype=torch.float64)
    out = _out(fixed.split_heads(x, 3))
    assert tuple(out.shape) == (3, 3, 5, 4)
    for i in range(3):
        assert torch.allclose(out[:, i], x[:, :, 4 * i : 4 * (i + 1)])


def test_merge_heads_inverts_split_heads():
    x = torch.randn(2, 6, 8, dtype=torch.float64)
    heads = _out(fixed.split_heads(x, 4))
    back = _out(fixed.merge_heads(heads))
    assert tuple(back.shape) == (2, 6, 8)
    assert torch.allclose(back, x)


def test_merge_heads_concatenates_heads_in_order():
    x = torch.randn(2, 3, 5, 4, dtype=torch.float64)  # (B, h, T, d_h)
    out = _out(fixed.merge_heads(x))
    assert tuple(out.shape) == (2, 5, 12)
    assert torch.allclose(out, torch.cat([x[:, i] for i in range(3)], dim=-1))


# ---------------------------------------------------------------- masked softmax


def test_masked_softmax_zero_at_masked_keys_and_rows_sum_to_one():
    scores = torch.randn(2, 2, 4, 4, dtype=torch.float64) * 3
    lengths = torch.tensor([2, 3])
    mask = (torch.arange(4)[None, :] < lengths[:, None])[
        :, None, None, :
    ]  # (B, 1, 1, T): True = real key
    w = _out(fixed.masked_softmax(scores, mask))
    assert tuple(w.shape) == (2, 2, 4, 4)
    assert torch.all(w[0, :, :, 2:] == 0) and torch.all(w[1, :, :, 3:] == 0)
    assert torch.allclose(w.sum(-1), torch.ones(2, 2, 4, dtype=torch.float64))


def test_masked_softmax_agrees_with_torch_attention():
    q, k, v = (torch.randn(2, 6, 4, dtype=torch.float64) for _ in range(3))  # (B, T, d_k)
    mask = torch.ones(6, 6, dtype=torch.bool).tril()  # causal, True = may attend
    scores = q @ k.transpose(-1, -2) / math.sqrt(4)
    w = _out(fixed.masked_softmax(scores, mask))
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # the outside authority
    assert torch.allclose(w @ v, want, atol=1e-6)


# ---------------------------------------------------------------- causal LM loss


def test_causal_lm_loss_no_padding_matches_cross_entropy_on_shifted_targets():
    logits = torch.randn(2, 5, 7, dtype=torch.float64)
    tokens = torch.tensor([[1, 2, 3, 4, 5], [6, 5, 4, 3, 2]])
    want = F.cross_entropy(logits[:, :-1].reshape(-1, 7), tokens[:, 1:].reshape(-1))
    got = _out(fixed.causal_lm_loss(logits, tokens, pad_id=0))
    assert got.shape == () and torch.allclose(got, want)


def test_causal_lm_loss_ignores_logits_whose_target_is_padding():
    logits = torch.randn(2, 5, 7, dtype=torch.float64)
    tokens = torch.tensor([[1, 2, 3, 4, 5], [6, 5, 4, 0, 0]])  # pad_id 0 occurs among the targets
    base = float(_out(fixed.causal_lm_loss(logits, tokens, 0)))
    changed = logits.clone()
    changed[1, 2:] += 100 * torch.randn(3, 7, dtype=torch.float64)  # targets at t=2, 3 are padding
    assert float(_out(fixed.causal_lm_loss(changed, tokens, 0))) == pytest.approx(base)
    # 4 + 2 scored positions, each CE = log 7 under uniform logits
    assert float(
        _out(fixed.causal_lm_loss(torch.zeros(2, 5, 7), tokens, 0))
    ) == pytest.approx(math.log(7))


def test_causal_lm_loss_uses_the_next_token():
    tokens = torch.tensor([[1, 2, 3]])
    logits = torch.zeros(1, 3, 4, dtype=torch.float64)
    logits[0, 0, 2] = logits[0, 1, 3] = 50.0  # confident and right about the NEXT token
    assert float(_out(fixed.causal_lm_loss(logits, tokens, pad_id=0))) < 1e-6


# ---------------------------------------------------------------- pooling


def test_masked_mean_pool_by_hand():
    H = torch.arange(24, dtype=torch.float64).reshape(2, 4, 3)
    out = _out(fixed.masked_mean_pool(H, torch.tensor([2, 4])))
    assert tuple(out.shape) == (2, 3)
    assert torch.allclose(out[0], torch.tensor([1.5, 2.5, 3.5], dtype=torch.float64))  # rows 0, 1
    assert torch.allclose(out[1], H[1].mean(0))


def test_masked_mean_pool_ignores_padding_rows():
    H = torch.randn(3, 6, 5, dtype=torch.float64)
    lengths = torch.tensor([1, 6, 3])
    base = _out(fixed.masked_mean_pool(H, lengths))
    H2 = H.clone()
    H2[0, 1:] = 1e3
    H2[2, 3:] = -1e3
    assert torch.allclose(_out(fixed.masked_mean_pool(H2, lengths)), base)


# ---------------------------------------------------------------- block shapes


def test_block_shapes_notes_walkthrough():
    s = fixed.block_shapes(2, 4, 8, 2, 32)  # notes §6, "Full shape walkthrough of one block"
    assert tuple(s["input"]) == (2, 4, 8)
    assert tuple(s["q_heads"]) == (2, 2, 4, 4)
    assert tuple(s["context"]) == (2, 4, 8)
    assert tuple(s["ffn_hidden"]) == (2, 4, 32)
    assert tuple(s["block_out"]) == (2, 4, 8)


def test_block_shapes_stats_agree_with_torch_reductions():
    B, T, d, h, d_ff = 3, 5, 12, 4, 48
    s = fixed.block_shapes(B, T, d, h, d_ff)
    X = torch.randn(B, T, d)
    assert tuple(s["ln_stats"]) == tuple(X.mean(dim=-1).shape)  # LayerNorm: per token
    assert tuple(s["bn_stats"]) == tuple(X.mean(dim=(0, 1)).shape)  # BatchNorm: per feature
    Q = torch.randn(B, h, T, d // h)
    assert tuple(s["scores"]) == tuple((Q @ Q.transpose(-1, -2)).shape)


def test_task_mask_worked_example():
    T_, F_ = True, False
    lengths = torch.tensor([3, 2])
    got = torch.as_tensor(fixed.task_mask("next_token", lengths, 4))
    assert got.shape == (2, 4, 4) and got.dtype == torch.bool
    assert got[1].tolist() == [[T_, F_, F_, F_], [T_, T_, F_, F_], [T_, T_, F_, F_], [T_, T_, F_, F_]]
    tagging = torch.as_tensor(fixed.task_mask("tagging", lengths, 4))
    assert tagging[0].tolist() == [[T_, T_, T_, F_]] * 4  # bidirectional, padding hidden


def test_task_loss_positions_worked_example():
    T_, F_ = True, False
    lengths = torch.tensor([3, 2])
    got = torch.as_tensor(fixed.task_loss_positions("next_token", lengths, 4))
    assert got.tolist() == [[T_, T_, F_, F_], [T_, F_, F_, F_]]
    assert not torch.as_tensor(fixed.task_loss_positions("classification", lengths, 4)).any()
    assert torch.as_tensor(fixed.task_loss_positions("tagging", lengths, 4)).sum().item() == 5
