"""a6 — Pretraining and scale: BPE, BERT masking, next-token targets, parameter counts.

Instructor's solution, written the way a student would (numpy and the standard library only).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

END = "</w>"


# ---------------------------------------------------------------- BPE


def _merge(symbols, a, b):
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def bpe_learn(word_counts, num_merges):
    """Learn num_merges BPE merges from a {word: count} table."""
    corpus = {tuple(word) + (END,): n for word, n in word_counts.items() if n > 0}
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for symbols, n in corpus.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += n
        if not pairs:
            break
        # highest count first, then the lexicographically smallest pair
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        new_corpus = Counter()
        for symbols, n in corpus.items():
            new_corpus[_merge(symbols, *best)] += n
        corpus = new_corpus
    return merges


def bpe_segment(word, merges):
    """Split a word into subwords by applying the merges in learned order."""
    symbols = tuple(word) + (END,)
    for a, b in merges:
        symbols = _merge(symbols, a, b)
    return list(symbols)


# ---------------------------------------------------------------- masking objectives


def bert_mask(tokens, rng, mask_id, vocab_size, special_ids=(), p=0.15):
    """BERT's masked-LM corruption with the 80/10/10 rule; labels -100 where nothing is predicted."""
    tokens = np.asarray(tokens)
    n = tokens.shape[0]
    selected = (rng.random(n) < p) & ~np.isin(tokens, list(special_ids))  # (N,)
    action = rng.random(n)  # (N,)
    random_ids = rng.integers(0, vocab_size, size=n)  # (N,)
    inputs = tokens.copy()
    to_mask = selected & (action < 0.8)
    to_random = selected & (action >= 0.8) & (action < 0.9)
    inputs[to_mask] = mask_id
    inputs[to_random] = random_ids[to_random]
    labels = np.where(selected, tokens, -100)
    return inputs, labels


def next_token_targets(tokens, pad_id):
    """inputs = tokens[:, :-1]; targets = tokens[:, 1:] with padding replaced by -100."""
    tokens = np.asarray(tokens)
    inputs = tokens[:, :-1]  # (B, T-1)
    targets = tokens[:, 1:].copy()  # (B, T-1)
    targets[targets == pad_id] = -100
    return inputs, targets


def span_corruption(tokens, spans, sentinel_ids):
    """T5: each span -> its sentinel in the inputs; targets = sentinel, span tokens, …, final sentinel."""
    tokens = [int(t) for t in tokens]
    inputs, targets = [], []
    pos = 0
    for k, (start, length) in enumerate(spans):
        inputs += tokens[pos:start] + [int(sentinel_ids[k])]
        targets += [int(sentinel_ids[k])] + tokens[start : start + length]
        pos = start + length
    inputs += tokens[pos:]
    targets.append(int(sentinel_ids[len(spans)]))
    return inputs, targets


# ---------------------------------------------------------------- parameter counts


def transformer_parameter_count(vocab_size, max_positions, d_model, n_layers, d_ff, tied_embeddings=True,
                                biases=True, ffn="gelu", norm="layernorm"):
    """Parameter counts of a GPT-style decoder, per component and in total."""
    d = d_model

    def linear(n_in, n_out):
        return n_in * n_out + (n_out if biases else 0)

    norm_size = {"layernorm": 2 * d, "rmsnorm": d}[norm]
    attention = 4 * linear(d, d)  # W_Q, W_K, W_V, W_O
    if ffn == "gelu":
        feed_forward = linear(d, d_ff) + linear(d_ff, d)
    elif ffn == "swiglu":
        feed_forward = 2 * linear(d, d_ff) + linear(d_ff, d)
    else:
        raise ValueError(f"unknown ffn {ffn!r}")
    norms = 2 * norm_size
    per_block = attention + feed_forward + norms
    counts = {
        "token_embedding": vocab_size * d,
        "position_embedding": max_positions * d,
        "attention_per_block": attention,
        "ffn_per_block": feed_forward,
        "norms_per_block": norms,
        "per_block": per_block,
        "blocks": n_layers * per_block,
        "final_norm": norm_size,
        "lm_head": 0 if tied_embeddings else vocab_size * d,
    }
    counts["total"] = (counts["token_embedding"] + counts["position_embedding"] + counts["blocks"]
                       + counts["final_norm"] + counts["lm_head"])
    return counts
