"""Visibility and loss positions for a task (Week 06 slides, "Task heads select rows or combine
them", "Padding is a visibility and output-selection problem", "Next-token prediction changes
visibility and target alignment").

Bidirectional visibility is legitimate when the whole input is available for the target
(tagging, sequence classification); next-token prediction must not see the future (causal).
Padding is masked as a key everywhere, and padded positions are never read by the loss.

Hooks for the mistakes the grader names (the correct behaviour is every default):
`task_mask(..., causal_tasks=..., pad_keys=False, pad_queries=True)`,
`task_loss_positions(..., through_last=True, lengths_ignored=True, pooled_reads_tokens=True)`.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np

TASKS = ("tagging", "classification", "next_token")
CAUSAL_TASKS = ("next_token",)


def _check(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"expected a task in {TASKS}, got {task!r}")


def real_positions(lengths: np.ndarray, T: int) -> np.ndarray:
    """(B, T) bool: True at t < lengths[b]."""
    lengths = np.asarray(lengths, dtype=np.int64)  # (B,)
    return np.arange(T)[None, :] < lengths[:, None]  # (B, T)


def task_mask(
    task: str,
    lengths: np.ndarray,
    T: int,
    *,
    causal_tasks: Collection[str] = CAUSAL_TASKS,
    pad_keys: bool = True,
    pad_queries: bool = False,
) -> np.ndarray:
    """(B, T, T) bool, True where query t may attend to key s.

    Keys s < lengths[b] for every task; and s <= t (causal) for next-token prediction. Hooks:
    `causal_tasks` the tasks that get the causal restriction; `pad_keys=False` lets every key
    be seen; `pad_queries=True` also empties the padded query rows.
    """
    _check(task)
    lengths = np.asarray(lengths, dtype=np.int64)  # (B,)
    B = lengths.shape[0]
    real = real_positions(lengths, T)  # (B, T)
    mask = np.ones((B, T, T), dtype=bool)  # (B, T_q, T_k)
    if pad_keys:
        mask &= real[:, None, :]  # keys
    if pad_queries:
        mask &= real[:, :, None]  # queries
    if task in causal_tasks:
        mask &= np.tril(np.ones((T, T), dtype=bool))[None]  # key s <= query t
    return mask


def task_loss_positions(
    task: str,
    lengths: np.ndarray,
    T: int,
    *,
    through_last: bool = False,
    lengths_ignored: bool = False,
    pooled_reads_tokens: bool = False,
) -> np.ndarray:
    """(B, T) bool: the positions whose output the loss reads.

    Tagging: every real token (t < length). Next-token prediction: t <= length − 2 (the target
    of position t is the token at t + 1). Classification: none (the loss reads the pooled
    vector). Hooks: `through_last` lets next-token prediction read the last real token too;
    `lengths_ignored` treats every row as T long (padding read); `pooled_reads_tokens` makes
    classification read every real token.
    """
    _check(task)
    lengths = np.asarray(lengths, dtype=np.int64)  # (B,)
    if lengths_ignored:
        lengths = np.full_like(lengths, T)
    real = real_positions(lengths, T)  # (B, T)
    if task == "tagging":
        return real
    if task == "next_token":
        return real if through_last else real_positions(lengths - 1, T)
    return real.copy() if pooled_reads_tokens else np.zeros_like(real)
