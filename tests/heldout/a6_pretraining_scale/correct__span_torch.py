# question: a6.span_corruption
"""T5 span corruption with torch tensors, returned as tensors."""

import torch


def span_corruption(tokens, spans, sentinel_ids):
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    keep = torch.ones(len(tokens), dtype=torch.bool)
    inputs, targets = [], []
    pos = 0
    for k, (start, length) in enumerate(spans):
        keep[start:start + length] = False
        inputs.append(tokens[pos:start])
        inputs.append(torch.tensor([sentinel_ids[k]]))
        targets.append(torch.tensor([sentinel_ids[k]]))
        targets.append(tokens[start:start + length])
        pos = start + length
    inputs.append(tokens[pos:])
    targets.append(torch.tensor([sentinel_ids[len(spans)]]))
    return torch.cat(inputs), torch.cat(targets)
