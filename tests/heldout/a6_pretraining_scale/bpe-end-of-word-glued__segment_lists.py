# question: a6.bpe_segment
"""pretraining.py in plain lists; a word to segment ends in its last letter + '</w>'."""

END = "</w>"


def _apply(symbols, pair):
    a, b = pair
    out = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def bpe_learn(word_counts, num_merges):
    words = [[list(w) + [END], c] for w, c in word_counts.items() if c > 0]
    merges = []
    for _ in range(num_merges):
        counts = {}
        for symbols, c in words:
            for i in range(len(symbols) - 1):
                key = (symbols[i], symbols[i + 1])
                counts[key] = counts.get(key, 0) + c
        if not counts:
            break
        best_count = max(counts.values())
        best = min(k for k, v in counts.items() if v == best_count)
        merges.append(best)
        for entry in words:
            entry[0] = _apply(entry[0], best)
    return merges


def bpe_segment(word, merges):
    symbols = list(word[:-1]) + [word[-1] + END]
    for pair in merges:
        symbols = _apply(symbols, tuple(pair))
    return symbols


def bert_mask(tokens, rng, mask_id, vocab_size, special_ids=(), p=0.15):
    specials = {int(s) for s in special_ids}
    inputs, labels = [], []
    for tok in [int(t) for t in tokens]:
        if tok in specials or rng.random() >= p:
            inputs.append(tok)
            labels.append(-100)
            continue
        labels.append(tok)
        r = rng.random()
        if r < 0.8:
            inputs.append(mask_id)
        elif r < 0.9:
            inputs.append(int(rng.integers(0, vocab_size)))
        else:
            inputs.append(tok)
    return inputs, labels


def next_token_targets(tokens, pad_id):
    rows = [[int(t) for t in row] for row in tokens]
    inputs = [row[:-1] for row in rows]
    targets = [[-100 if t == pad_id else t for t in row[1:]] for row in rows]
    return inputs, targets


def transformer_parameter_count(vocab_size, max_positions, d_model, n_layers, d_ff, tied_embeddings=True,
                                biases=True, ffn="gelu", norm="layernorm"):
    d = d_model
    shapes_attn = [(d, d)] * 4
    shapes_ffn = [(d, d_ff), (d_ff, d)] if ffn == "gelu" else [(d, d_ff), (d, d_ff), (d_ff, d)]
    attention = sum(i * o + (o if biases else 0) for i, o in shapes_attn)
    feed = sum(i * o + (o if biases else 0) for i, o in shapes_ffn)
    one_norm = 2 * d if norm == "layernorm" else d
    per_block = attention + feed + 2 * one_norm
    res = {
        "token_embedding": vocab_size * d,
        "position_embedding": max_positions * d,
        "attention_per_block": attention,
        "ffn_per_block": feed,
        "norms_per_block": 2 * one_norm,
        "per_block": per_block,
        "blocks": n_layers * per_block,
        "final_norm": one_norm,
        "lm_head": 0 if tied_embeddings else vocab_size * d,
    }
    res["total"] = (res["token_embedding"] + res["position_embedding"] + res["blocks"]
                    + res["final_norm"] + res["lm_head"])
    return res


def span_corruption(tokens, spans, sentinel_ids):
    inputs, targets = [], []
    t = 0
    for k in range(len(spans)):
        start, length = spans[k]
        while t < start:
            inputs.append(int(tokens[t]))
            t += 1
        inputs.append(sentinel_ids[k])
        targets.append(sentinel_ids[k])
        for _ in range(length):
            targets.append(int(tokens[t]))
            t += 1
    while t < len(tokens):
        inputs.append(int(tokens[t]))
        t += 1
    targets.append(sentinel_ids[len(spans)])
    return inputs, targets
