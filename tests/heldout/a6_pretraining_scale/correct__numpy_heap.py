# question: all
"""pretraining.py, numpy vectorised, BPE with tuple keys and a sorted tie-break."""

from collections import defaultdict

import numpy as np


def _merge_word(word, pair):
    a, b = pair
    out, i = [], 0
    while i < len(word):
        if word[i] == a and i + 1 < len(word) and word[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(word[i])
            i += 1
    return tuple(out)


def bpe_learn(word_counts, num_merges):
    corpus = defaultdict(int)
    for w, c in word_counts.items():
        if c > 0:
            corpus[tuple(w) + ("</w>",)] += c
    merges = []
    while len(merges) < num_merges:
        pairs = defaultdict(int)
        for word, c in corpus.items():
            for i in range(len(word) - 1):
                pairs[word[i], word[i + 1]] += c
        if not pairs:
            break
        ranked = sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))
        best = ranked[0][0]
        merges.append(best)
        merged = defaultdict(int)
        for word, c in corpus.items():
            merged[_merge_word(word, best)] += c
        corpus = merged
    return merges


def bpe_segment(word, merges):
    w = tuple(word) + ("</w>",)
    for pair in merges:
        w = _merge_word(w, pair)
    return list(w)


def bert_mask(tokens, rng, mask_id, vocab_size, special_ids=(), p=0.15):
    tokens = np.asarray(tokens, dtype=np.int64)
    n = tokens.size
    candidates = ~np.isin(tokens, np.asarray(list(special_ids), dtype=np.int64))
    selected = candidates & (rng.random(n) < p)
    choice = rng.choice(3, size=n, p=[0.8, 0.1, 0.1])   # 0 mask, 1 random, 2 keep
    inputs = tokens.copy()
    inputs[selected & (choice == 0)] = mask_id
    rand = selected & (choice == 1)
    inputs[rand] = rng.integers(0, vocab_size, size=int(rand.sum()))
    labels = np.full(n, -100, dtype=np.int64)
    labels[selected] = tokens[selected]
    return inputs, labels


def next_token_targets(tokens, pad_id):
    tokens = np.asarray(tokens)
    targets = np.where(tokens[:, 1:] == pad_id, -100, tokens[:, 1:])
    return tokens[:, :-1].copy(), targets


def transformer_parameter_count(vocab_size, max_positions, d_model, n_layers, d_ff, tied_embeddings=True,
                                biases=True, ffn="gelu", norm="layernorm"):
    d = d_model
    b = int(bool(biases))
    attention = 4 * (d * d + b * d)
    n_up = 2 if ffn == "swiglu" else 1
    feed_forward = n_up * (d * d_ff + b * d_ff) + (d_ff * d + b * d)
    norm_size = d * (2 if norm == "layernorm" else 1)
    per_block = attention + feed_forward + 2 * norm_size
    out = {
        "token_embedding": vocab_size * d, "position_embedding": max_positions * d,
        "attention_per_block": attention, "ffn_per_block": feed_forward,
        "norms_per_block": 2 * norm_size, "per_block": per_block, "blocks": n_layers * per_block,
        "final_norm": norm_size, "lm_head": 0 if tied_embeddings else vocab_size * d,
    }
    out["total"] = int(sum(out[k] for k in ("token_embedding", "position_embedding", "blocks", "final_norm", "lm_head")))
    return out


def span_corruption(tokens, spans, sentinel_ids):
    tokens = np.asarray(tokens, dtype=np.int64)
    keep = np.ones(len(tokens), dtype=bool)
    for start, length in spans:
        keep[start:start + length] = False
    starts = np.array([s for s, _ in spans], dtype=np.int64)
    # each span's sentinel goes in front of the first kept token after it (or at the end)
    inputs = np.insert(tokens, starts, np.asarray(sentinel_ids[: len(spans)], dtype=np.int64))
    keep = np.insert(keep, starts, True)
    targets = []
    for k, (start, length) in enumerate(spans):
        targets += [int(sentinel_ids[k])] + tokens[start:start + length].tolist()
    return inputs[keep], np.array(targets + [int(sentinel_ids[len(spans)])])
