# question: a6.span_corruption
"""T5 span corruption with lists."""


def span_corruption(tokens, spans, sentinel_ids):
    tokens = list(tokens)
    inputs, targets = [], []
    prev = 0
    for k, (start, length) in enumerate(spans):
        inputs.extend(tokens[prev:start])
        inputs.append(sentinel_ids[k])
        targets.append(sentinel_ids[k])
        targets.extend(tokens[start:start + length])
        prev = start + length
    inputs.extend(tokens[prev:])
    return inputs, targets
