# question: a5.causal_lm_loss
"""fixed.py in torch float32; the loss summed over the real targets."""

import torch


def split_heads(x, n_heads):
    x = x.float()
    B, T, d = x.shape
    return x.reshape(B, T, n_heads, -1).permute(0, 2, 1, 3).contiguous()


def merge_heads(x):
    x = x.float()
    B, h, T, d_h = x.shape
    return x.permute(0, 2, 1, 3).reshape(B, T, -1)


def masked_softmax(scores, mask):
    s = scores.float()
    mask = torch.broadcast_to(mask, s.shape)
    s = s.masked_fill(~mask, -1e9)
    w = torch.softmax(s, dim=-1)
    return w * mask  # exact zeros where masked


def causal_lm_loss(logits, tokens, pad_id):
    logp = torch.log_softmax(logits.float(), dim=-1)[:, :-1]           # (B, T-1, V)
    y = tokens[:, 1:]
    picked = torch.einsum("btv,btv->bt", logp, torch.nn.functional.one_hot(y, logp.shape[-1]).float())
    keep = (y != pad_id).float()
    return -(picked * keep).sum()  # reduction='sum'


def masked_mean_pool(H, lengths):
    H = H.float()
    T = H.shape[1]
    m = (torch.arange(T).unsqueeze(0) < lengths.unsqueeze(1)).float()   # (B, T)
    return torch.einsum("btd,bt->bd", H, m) / lengths.float().unsqueeze(1)


def block_shapes(B, T, d, n_heads, d_ff):
    h, dh = n_heads, d // n_heads
    btd = (B, T, d)
    return {
        "input": btd, "q": btd, "q_heads": (B, h, T, dh), "scores": (B, h, T, T),
        "weights": (B, h, T, T), "context_heads": (B, h, T, dh), "context": btd,
        "attn_out": btd, "ffn_hidden": (B, T, d_ff), "ffn_out": btd, "block_out": btd,
        "ln_stats": (B, T), "bn_stats": (d,),
    }


def task_mask(task, lengths, T):
    pad = torch.arange(T).expand(len(lengths), T) >= lengths.unsqueeze(1)  # True at padding
    mask = ~pad.unsqueeze(1).repeat(1, T, 1)
    if task == "next_token":
        mask &= ~torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    return mask


def task_loss_positions(task, lengths, T):
    pos = torch.arange(T).unsqueeze(0)
    if task == "classification":
        return torch.zeros(len(lengths), T, dtype=torch.bool)
    last = lengths.unsqueeze(1) - (1 if task == "next_token" else 0)
    return pos < last
