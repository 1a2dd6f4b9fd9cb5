# question: a6.span_corruption
"""T5 span corruption; T5 numbers its sentinels down from the top of the vocabulary."""


def span_corruption(tokens, spans, sentinel_ids):
    tokens = [int(t) for t in tokens]
    sentinels = list(reversed(list(sentinel_ids)))  # the last id is <extra_id_0>
    inputs, targets = [], []
    pos = 0
    for k, (start, length) in enumerate(spans):
        inputs += tokens[pos:start] + [sentinels[k]]
        targets += [sentinels[k]] + tokens[start:start + length]
        pos = start + length
    inputs += tokens[pos:]
    targets.append(sentinels[len(spans)])
    return inputs, targets
