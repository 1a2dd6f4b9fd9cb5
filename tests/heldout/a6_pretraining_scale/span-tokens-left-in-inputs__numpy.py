# question: a6.span_corruption
"""T5 span corruption with numpy slices."""

import numpy as np


def span_corruption(tokens, spans, sentinel_ids):
    tokens = np.asarray(tokens, dtype=np.int64)
    pieces, targets = [], []
    pos = 0
    for k, (start, length) in enumerate(spans):
        pieces.append(tokens[pos:start])
        pieces.append(np.array([sentinel_ids[k]]))
        pieces.append(tokens[start:start + length])
        targets.append(np.concatenate([[sentinel_ids[k]], tokens[start:start + length]]))
        pos = start + length
    pieces.append(tokens[pos:])
    targets.append(np.array([sentinel_ids[len(spans)]]))
    return np.concatenate(pieces).tolist(), np.concatenate(targets).astype(np.int64).tolist()
