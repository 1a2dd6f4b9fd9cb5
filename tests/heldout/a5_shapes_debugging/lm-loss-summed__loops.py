# question: a5.causal_lm_loss
"""fixed.py with plain loops; the total loss."""

import math

import torch


def split_heads(x, n_heads):
    B, T, d = x.shape
    dh = d // n_heads
    rows = x.tolist()
    out = [[[rows[b][t][i * dh:(i + 1) * dh] for t in range(T)] for i in range(n_heads)] for b in range(B)]
    return torch.tensor(out, dtype=torch.float64)


def merge_heads(x):
    B, h, T, dh = x.shape
    v = x.tolist()
    out = []
    for b in range(B):
        seq = []
        for t in range(T):
            row = []
            for i in range(h):
                row.extend(v[b][i][t])
            seq.append(row)
        out.append(seq)
    return torch.tensor(out, dtype=torch.float64)


def masked_softmax(scores, mask):
    mask = torch.broadcast_to(mask, scores.shape)
    flat_s = scores.reshape(-1, scores.shape[-1]).tolist()
    flat_m = mask.reshape(-1, scores.shape[-1]).tolist()
    out = []
    for s_row, m_row in zip(flat_s, flat_m):
        allowed = [s for s, keep in zip(s_row, m_row) if keep]
        if not allowed:
            out.append([float("nan")] * len(s_row))
            continue
        top = max(allowed)
        e = [math.exp(s - top) if keep else 0.0 for s, keep in zip(s_row, m_row)]
        z = sum(e)
        out.append([v / z for v in e])
    return torch.tensor(out, dtype=torch.float64).reshape(scores.shape)


def causal_lm_loss(logits, tokens, pad_id):
    B, T, V = logits.shape
    total, count = 0.0, 0
    for b in range(B):
        for t in range(T - 1):
            y = int(tokens[b, t + 1])
            if y == pad_id:
                continue
            row = logits[b, t].tolist()
            top = max(row)
            lse = top + math.log(sum(math.exp(v - top) for v in row))
            total += lse - row[y]
            count += 1
    return torch.tensor(total)


def masked_mean_pool(H, lengths):
    B, T, d = H.shape
    out = []
    for b in range(B):
        n = int(lengths[b])
        acc = [0.0] * d
        for t in range(n):
            for j in range(d):
                acc[j] += float(H[b, t, j])
        out.append([a / n for a in acc])
    return torch.tensor(out, dtype=torch.float64)


def block_shapes(B, T, d, n_heads, d_ff):
    dh = d // n_heads
    shapes = {}
    for key in ("input", "q", "context", "attn_out", "ffn_out", "block_out"):
        shapes[key] = (B, T, d)
    for key in ("q_heads", "context_heads"):
        shapes[key] = (B, n_heads, T, dh)
    for key in ("scores", "weights"):
        shapes[key] = (B, n_heads, T, T)
    shapes["ffn_hidden"] = (B, T, d_ff)
    shapes["ln_stats"] = (B, T)
    shapes["bn_stats"] = (d,)
    return shapes


def task_mask(task, lengths, T):
    out = []
    for n in lengths.tolist():
        rows = []
        for t in range(T):
            rows.append([s < n and (task != "next_token" or s <= t) for s in range(T)])
        out.append(rows)
    return out


def task_loss_positions(task, lengths, T):
    out = []
    for n in lengths.tolist():
        if task == "tagging":
            out.append([t < n for t in range(T)])
        elif task == "next_token":
            out.append([t <= n - 2 for t in range(T)])
        else:
            out.append([False] * T)
    return out
