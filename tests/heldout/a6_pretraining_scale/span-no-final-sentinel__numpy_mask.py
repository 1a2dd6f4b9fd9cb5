# question: a6.span_corruption
"""T5 span corruption with a boolean mask over the positions."""

import numpy as np


def span_corruption(tokens, spans, sentinel_ids):
    tokens = np.asarray(tokens)
    inputs, targets = [], []
    in_span = np.zeros(len(tokens), dtype=bool)
    start_of = {}
    for k, (start, length) in enumerate(spans):
        in_span[start:start + length] = True
        start_of[start] = k
    for t, tok in enumerate(tokens.tolist()):
        if t in start_of:
            inputs.append(int(sentinel_ids[start_of[t]]))
            targets.append(int(sentinel_ids[start_of[t]]))
        if in_span[t]:
            targets.append(tok)
        else:
            inputs.append(tok)
    return inputs, targets
