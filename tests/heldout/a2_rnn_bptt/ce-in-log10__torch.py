# question: a2.sequence_perplexity
"""a2 in torch float32; log10 probabilities from log_softmax, perplexity exp of their mean."""

import torch


def _f(a):
    return torch.as_tensor(a, dtype=torch.float32)


def rnn_forward(X, W_x, W_h, b_h, h0=None):
    X, W_x, W_h, b_h = map(_f, (X, W_x, W_h, b_h))
    h = torch.zeros(W_h.shape[0]) if h0 is None else _f(h0)
    zs, hs = [], []
    for x in X:
        z = torch.addmv(torch.addmv(b_h, W_x, x), W_h, h)
        h = torch.tanh(z)
        zs.append(z)
        hs.append(h)
    return torch.stack(zs), torch.stack(hs)


def _bptt(X, W_h, Hs, h_init, direct):
    T = Hs.shape[0]
    H_prev = torch.cat([h_init[None], Hs[:-1]], dim=0)
    Gz = torch.zeros_like(Hs)
    future = torch.zeros(Hs.shape[1])
    for t in range(T - 1, -1, -1):
        Gz[t] = (direct[t] + future) * (1 - Hs[t] * Hs[t])
        future = Gz[t] @ W_h
    return {"W_x": torch.einsum("th,td->hd", Gz, X), "W_h": torch.einsum("th,tk->hk", Gz, H_prev), "b_h": Gz.sum(0)}


def bptt_final_state(X, W_x, W_h, b_h, y, h0=None):
    X, W_h = _f(X), _f(W_h)
    _, Hs = rnn_forward(X, W_x, W_h, b_h, h0)
    h_init = torch.zeros(Hs.shape[1]) if h0 is None else _f(h0)
    direct = torch.zeros_like(Hs)
    direct[-1] = Hs[-1] - _f(y)
    return _bptt(X, W_h, Hs, h_init, direct)


def bptt_sequence_ce(X, W_x, W_h, b_h, W_o, b_o, targets, h0=None):
    X, W_h, W_o, b_o = map(_f, (X, W_h, W_o, b_o))
    y = torch.as_tensor(targets, dtype=torch.long)
    _, Hs = rnn_forward(X, W_x, W_h, b_h, h0)
    T = Hs.shape[0]
    logp = torch.log_softmax(Hs @ W_o.T + b_o, dim=-1)
    loss = -logp[torch.arange(T), y].mean()
    g_a = (logp.exp() - torch.nn.functional.one_hot(y, W_o.shape[0]).float()) / T
    h_init = torch.zeros(Hs.shape[1]) if h0 is None else _f(h0)
    grads = _bptt(X, W_h, Hs, h_init, g_a @ W_o)
    grads["W_o"] = g_a.T @ Hs
    grads["b_o"] = g_a.sum(0)
    return loss.item(), grads


def clip_by_global_norm(grads, max_norm):
    ts = {k: _f(v) for k, v in grads.items()}
    total = torch.sqrt(sum((t.double() ** 2).sum() for t in ts.values()))
    scale = min(1.0, max_norm / float(total)) if float(total) > 0 else 1.0
    return {k: t * scale for k, t in ts.items()}


def sequence_perplexity(logits, targets):
    logp = torch.log_softmax(_f(logits), dim=-1)
    y = torch.as_tensor(targets, dtype=torch.long)
    ce = -(logp[torch.arange(len(y)), y] / torch.log(torch.tensor(10.0))).mean()  # log10 p
    return ce.item(), torch.exp(ce).item()
