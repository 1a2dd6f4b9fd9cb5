# question: a6.span_corruption
"""T5 span corruption, taking sentinels off a stack."""


def span_corruption(tokens, spans, sentinel_ids):
    stack = list(sentinel_ids[: len(spans) + 1])
    inputs, targets = [], []
    pos = 0
    for start, length in spans:
        s = stack.pop()
        inputs += list(tokens[pos:start]) + [s]
        targets += [s] + list(tokens[start:start + length])
        pos = start + length
    inputs += list(tokens[pos:])
    targets.append(stack.pop())
    return [int(t) for t in inputs], [int(t) for t in targets]
