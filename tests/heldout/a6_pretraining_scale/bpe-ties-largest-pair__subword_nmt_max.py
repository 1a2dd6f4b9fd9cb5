# question: a6.bpe_learn
"""pretraining.py, BPE on strings; the most frequent pair found as subword-nmt finds it."""

import re

import numpy as np
import torch


def bpe_learn(word_counts, num_merges):
    vocab = {" ".join(word) + " </w>": n for word, n in word_counts.items() if n > 0}
    merges = []
    for _ in range(num_merges):
        stats = {}
        for word, freq in vocab.items():
            s = word.split()
            for a, b in zip(s, s[1:]):
                stats[(a, b)] = stats.get((a, b), 0) + freq
        if not stats:
            break
        best = max(stats, key=lambda x: (stats[x], x))
        merges.append(best)
        pat = re.compile(r"(?<!\S)" + re.escape(best[0] + " " + best[1]) + r"(?!\S)")
        vocab = {pat.sub(best[0] + best[1], w): f for w, f in vocab.items()}
    return merges


def bpe_segment(word, merges):
    s = " ".join(word) + " </w>"
    for a, b in merges:
        s = re.sub(r"(?<!\S)" + re.escape(a + " " + b) + r"(?!\S)", (a + b).replace("\\", "\\\\"), s)
    return s.split()


def bert_mask(tokens, rng, mask_id, vocab_size, special_ids=(), p=0.15):
    t = torch.as_tensor(np.asarray(tokens), dtype=torch.long)
    n = t.numel()
    special = torch.zeros(n, dtype=torch.bool)
    for s in special_ids:
        special |= t == int(s)
    sel = (torch.from_numpy(rng.random(n)) < p) & ~special
    kind = torch.from_numpy(rng.random(n))
    rand_ids = torch.from_numpy(rng.integers(0, vocab_size, size=n))
    inputs = torch.where(sel & (kind < 0.8), torch.tensor(mask_id), t)
    inputs = torch.where(sel & (kind >= 0.8) & (kind < 0.9), rand_ids, inputs)
    labels = torch.where(sel, t, torch.tensor(-100))
    return inputs, labels


def next_token_targets(tokens, pad_id):
    t = torch.as_tensor(np.asarray(tokens))
    targets = t[:, 1:].masked_fill(t[:, 1:] == pad_id, -100)
    return t[:, :-1], targets


def transformer_parameter_count(vocab_size, max_positions, d_model, n_layers, d_ff, tied_embeddings=True,
                                biases=True, ffn="gelu", norm="layernorm"):
    d = d_model
    bias = 1 if biases else 0
    attention = 4 * d * d + 4 * d * bias
    if ffn == "swiglu":
        mlp = 3 * d * d_ff + (2 * d_ff + d) * bias
    else:
        mlp = 2 * d * d_ff + (d_ff + d) * bias
    g = d if norm == "rmsnorm" else 2 * d
    per_block = attention + mlp + 2 * g
    head = 0 if tied_embeddings else vocab_size * d
    total = vocab_size * d + max_positions * d + n_layers * per_block + g + head
    return {"token_embedding": vocab_size * d, "position_embedding": max_positions * d,
            "attention_per_block": attention, "ffn_per_block": mlp, "norms_per_block": 2 * g,
            "per_block": per_block, "blocks": n_layers * per_block, "final_norm": g,
            "lm_head": head, "total": total}


def span_corruption(tokens, spans, sentinel_ids):
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    pieces_in, pieces_out, pos = [], [], 0
    for k, (start, length) in enumerate(spans):
        sentinel = torch.tensor([sentinel_ids[k]])
        pieces_in += [tokens[pos:start], sentinel]
        pieces_out += [sentinel, tokens[start:start + length]]
        pos = start + length
    pieces_in.append(tokens[pos:])
    pieces_out.append(torch.tensor([sentinel_ids[len(spans)]]))
    return torch.cat(pieces_in), torch.cat(pieces_out)
