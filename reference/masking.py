"""Pretraining objectives' inputs and targets: BERT masking, next-token targets, T5 spans (notes §7).

IGNORE_INDEX = -100 marks a position without a target (torch's cross_entropy default).

Hooks for mutants: `span_corruption(..., order=..., drop_spans=False, final_sentinel=False)`
(sentinels in another order, the span's tokens left in the inputs, no closing sentinel).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from reference.functional import log_softmax

IGNORE_INDEX = -100


def bert_mask(
    tokens: np.ndarray,
    rng: np.random.Generator,
    mask_id: int,
    vocab_size: int,
    special_ids: Sequence[int] = (),
    p: float = 0.15,
) -> tuple[np.ndarray, np.ndarray]:
    """BERT's masked-LM corruption: select each non-special token with probability p; 80/10/10.

    Selected: label = original; input = mask_id (80%), a uniform id in [0, vocab_size) (10%,
    which may equal the original), unchanged (10%). Unselected: label = -100, input unchanged.

    Exact draws (reproducible for a given Generator state; the grader judges students by
    distribution and invariants, not by these draws), always all three, each of length N:
      1. u = rng.random(N);   selected = (u < p) & not special
      2. r = rng.random(N);   mask where r < 0.8, random where 0.8 <= r < 0.9, keep otherwise
      3. ids = rng.integers(0, vocab_size, size=N)   (used only at "random" positions)
    """
    tokens = np.asarray(tokens)
    if tokens.ndim != 1:
        raise ValueError(f"expected tokens of shape (N,), got {tokens.shape}")
    N = tokens.shape[0]
    u = rng.random(N)  # (N,)
    r = rng.random(N)  # (N,)
    random_ids = rng.integers(0, vocab_size, size=N)  # (N,)
    special = np.isin(tokens, np.asarray(list(special_ids), dtype=tokens.dtype))  # (N,)
    selected = (u < p) & ~special  # (N,)
    inputs = tokens.copy()
    inputs[selected & (r < 0.8)] = mask_id
    use_random = selected & (r >= 0.8) & (r < 0.9)
    inputs[use_random] = random_ids[use_random]
    labels = np.where(selected, tokens, IGNORE_INDEX)  # (N,)
    return inputs, labels


def next_token_targets(tokens: np.ndarray, pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """inputs = tokens[:, :-1], targets = tokens[:, 1:] with pad_id -> -100: y_t = s_{t+1}."""
    tokens = np.asarray(tokens)
    if tokens.ndim != 2 or tokens.shape[1] < 2:
        raise ValueError(f"expected tokens of shape (B, T) with T >= 2, got {tokens.shape}")
    inputs = tokens[:, :-1].copy()  # (B, T-1)
    targets = np.where(tokens[:, 1:] == pad_id, IGNORE_INDEX, tokens[:, 1:])  # (B, T-1)
    return inputs, targets


def token_cross_entropy(
    logits: np.ndarray, targets: np.ndarray, ignore_index: int = IGNORE_INDEX
) -> float:
    """Mean over non-ignored positions of -log softmax(logits)[target]; NaN when none is left (as torch)."""
    logits = np.asarray(logits, dtype=np.float64)
    targets = np.asarray(targets)
    if logits.shape[:-1] != targets.shape:
        raise ValueError(f"expected targets of shape {logits.shape[:-1]}, got {targets.shape}")
    keep = targets != ignore_index  # (...,)
    if not np.any(keep):
        return float("nan")
    logp = log_softmax(logits[keep])  # (n, V)
    return float(-np.mean(logp[np.arange(logp.shape[0]), targets[keep]]))


def causal_lm_loss(logits: np.ndarray, tokens: np.ndarray, pad_id: int) -> float:
    """L = mean over t < T-1 with tokens[b, t+1] != pad of -log softmax(logits[b, t])[tokens[b, t+1]]."""
    _, targets = next_token_targets(tokens, pad_id)  # (B, T-1)
    return token_cross_entropy(np.asarray(logits)[:, :-1], targets)  # logits (B, T-1, V)


def in_order(sentinels: list[int]) -> list[int]:
    """The sentinels as given: span k gets sentinel_ids[k] (<extra_id_k>), the end the next one."""
    return list(sentinels)


def span_corruption(
    tokens: Sequence[int],
    spans: Sequence[tuple[int, int]],
    sentinel_ids: Sequence[int],
    *,
    order: Callable[[list[int]], list[int]] = in_order,
    drop_spans: bool = True,
    final_sentinel: bool = True,
) -> tuple[list[int], list[int]]:
    """T5 span corruption: each (start, length) span -> sentinel k in the inputs; targets list
    sentinel k then the span's tokens, for every span in order, then one final sentinel.

    Example (Raffel et al. 2020, Fig. 2): "Thank you <X> me to your party <Y> week ." and
    targets "<X> for inviting <Y> last <Z>". Spans must be sorted, non-empty and
    non-overlapping; sentinel_ids needs len(spans) + 1 ids (T5 counts them down from the top
    of the vocabulary: <extra_id_0> = V - 1, …).

    Hooks: `order(sentinels)` reorders the len(spans) + 1 sentinels used; `drop_spans=False`
    leaves each span's tokens in the inputs after its sentinel; `final_sentinel=False` ends
    the targets without the closing sentinel.
    """
    tokens = list(tokens)
    if len(sentinel_ids) < len(spans) + 1:
        raise ValueError(f"expected {len(spans) + 1} sentinel ids, got {len(sentinel_ids)}")
    sentinels = order([int(s) for s in sentinel_ids[: len(spans) + 1]])
    inputs: list[int] = []
    targets: list[int] = []
    pos = 0
    for k, (start, length) in enumerate(spans):
        if length <= 0 or start < pos or start + length > len(tokens):
            raise ValueError(
                f"expected sorted, non-empty, non-overlapping spans inside {len(tokens)} tokens; "
                f"got span {k} = ({start}, {length})"
            )
        span = tokens[start : start + length]
        inputs += tokens[pos:start] + [sentinels[k]] + ([] if drop_spans else span)
        targets += [sentinels[k]] + span
        pos = start + length
    inputs += tokens[pos:]
    if final_sentinel:
        targets.append(sentinels[len(spans)])
    return inputs, targets
