# question: a6.span_corruption
"""T5 span corruption, one position at a time."""


def span_corruption(tokens, spans, sentinel_ids):
    starts = {start: (k, length) for k, (start, length) in enumerate(spans)}
    inputs, targets = [], []
    t = 0
    while t < len(tokens):
        if t in starts:
            k, length = starts[t]
            inputs.append(int(sentinel_ids[k]))
            targets.append(int(sentinel_ids[k]))
            targets.extend(int(x) for x in tokens[t:t + length])
            t += length
        else:
            inputs.append(int(tokens[t]))
            t += 1
    targets.append(int(sentinel_ids[len(spans)]))
    return inputs, targets
