# question: a6.span_corruption
"""T5 span corruption: mark each span with its sentinel."""


def span_corruption(tokens, spans, sentinel_ids):
    tokens = [int(t) for t in tokens]
    inputs = list(tokens)
    targets = []
    for k, (start, length) in reversed(list(enumerate(spans))):
        inputs.insert(start, sentinel_ids[k])  # from the right, so earlier starts stay valid
    for k, (start, length) in enumerate(spans):
        targets += [sentinel_ids[k]] + tokens[start:start + length]
    targets.append(sentinel_ids[len(spans)])
    return inputs, targets
