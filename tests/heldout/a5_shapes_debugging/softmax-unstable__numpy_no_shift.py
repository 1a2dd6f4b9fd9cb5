# question: a5.masked_softmax
"""fixed.py in numpy; the softmax exponentiates the scores as they are."""

import numpy as np


def split_heads(x, n_heads):
    a = x.numpy()
    B, T, d = a.shape
    return a.reshape(B, T, n_heads, d // n_heads).transpose(0, 2, 1, 3)


def merge_heads(x):
    a = x.numpy()
    B, h, T, dh = a.shape
    return np.ascontiguousarray(a.transpose(0, 2, 1, 3)).reshape(B, T, h * dh)


def masked_softmax(scores, mask):
    s = scores.numpy()
    m = np.broadcast_to(mask.numpy(), s.shape)
    s = np.where(m, s, -np.inf)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def causal_lm_loss(logits, tokens, pad_id):
    z = logits.numpy()[:, :-1]
    y = tokens.numpy()[:, 1:]
    mx = z.max(axis=-1, keepdims=True)
    logp = z - mx - np.log(np.exp(z - mx).sum(axis=-1, keepdims=True))
    nll = -np.take_along_axis(logp, y[..., None], axis=-1)[..., 0]
    keep = y != pad_id
    return np.float64(nll[keep].sum() / keep.sum())


def masked_mean_pool(H, lengths):
    a = H.numpy()
    n = lengths.numpy()
    m = (np.arange(a.shape[1])[None, :] < n[:, None]).astype(a.dtype)
    return (a * m[:, :, None]).sum(axis=1) / n[:, None]


def block_shapes(B, T, d, n_heads, d_ff):
    X = np.zeros((B, T, d))
    h = n_heads
    qh = X.reshape(B, T, h, d // h).transpose(0, 2, 1, 3)
    S = qh @ qh.swapaxes(-1, -2)
    Ch = S @ qh
    C = Ch.transpose(0, 2, 1, 3).reshape(B, T, d)
    hidden = np.zeros((B, T, d_ff))
    res = {"input": X, "q": X, "q_heads": qh, "scores": S, "weights": S, "context_heads": Ch,
           "context": C, "attn_out": C, "ffn_hidden": hidden, "ffn_out": X, "block_out": X,
           "ln_stats": X.mean(axis=-1), "bn_stats": X.mean(axis=(0, 1))}
    return {k: tuple(int(n) for n in v.shape) for k, v in res.items()}


def task_mask(task, lengths, T):
    n = lengths.numpy()
    keys = np.arange(T)[None, None, :] < n[:, None, None]  # (B, 1, T)
    mask = np.broadcast_to(keys, (len(n), T, T))
    if task == "next_token":
        mask = mask & np.tri(T, dtype=bool)
    return mask


def task_loss_positions(task, lengths, T):
    n = lengths.numpy()[:, None]
    t = np.arange(T)[None, :]
    if task == "tagging":
        return t < n
    if task == "next_token":
        return t + 1 < n
    return np.zeros((len(n), T), dtype=bool)
