"""reference/visibility.py against torch's own masks and the a5/a6 loss conventions.

torch's conventions are the other way round for padding: `key_padding_mask` is True at the
keys to IGNORE, and `generate_square_subsequent_mask` is a float mask (−inf = hidden); ours
is one boolean mask, True = may attend (torch's boolean `attn_mask` polarity).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reference import masking
from reference import visibility as vis

LENGTHS = np.array([3, 5, 1])
T = 5


def _torch_mask(task: str) -> np.ndarray:
    key_padding = torch.arange(T)[None, :] >= torch.tensor(LENGTHS)[:, None]  # True = ignore
    allowed = ~key_padding[:, None, :].expand(-1, T, -1)
    if task == "next_token":
        future = torch.nn.Transformer.generate_square_subsequent_mask(T) == float("-inf")
        allowed = allowed & ~future
    return allowed.numpy()


@pytest.mark.parametrize("task", vis.TASKS)
def test_task_mask_is_torchs_padding_and_causal_masks(task):
    np.testing.assert_array_equal(vis.task_mask(task, LENGTHS, T), _torch_mask(task))


def test_task_mask_keeps_the_real_outputs_of_a_padded_sentence():
    """With the mask, a sentence's real outputs do not depend on its padding (slides: "Adding a
    pad row with arbitrary values leaves the three real block outputs unchanged")."""
    rng = np.random.default_rng(0)
    q, k, v = (torch.tensor(rng.normal(size=(1, 1, T, 4))) for _ in range(3))
    for task in vis.TASKS:
        mask = torch.tensor(vis.task_mask(task, np.array([3]), T))[:, None]  # (1, 1, T, T)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        k2, v2 = k.clone(), v.clone()
        k2[..., 3:, :] += 100.0
        v2[..., 3:, :] -= 100.0
        out2 = torch.nn.functional.scaled_dot_product_attention(q, k2, v2, attn_mask=mask)
        torch.testing.assert_close(out[..., :3, :], out2[..., :3, :])


def test_next_token_positions_are_the_targets_of_the_lm_loss():
    tokens = np.array([[5, 6, 7, 0, 0], [5, 6, 7, 8, 9], [5, 0, 0, 0, 0]])  # pad 0, LENGTHS
    _, targets = masking.next_token_targets(tokens, pad_id=0)  # (B, T-1), -100 at padding
    read = vis.task_loss_positions("next_token", LENGTHS, T)
    np.testing.assert_array_equal(read[:, :-1], targets != masking.IGNORE_INDEX)
    assert not read[:, -1].any()  # the last position has no next token


def test_loss_positions_by_hand():
    np.testing.assert_array_equal(
        vis.task_loss_positions("tagging", LENGTHS, T).sum(axis=1), LENGTHS
    )
    assert not vis.task_loss_positions("classification", LENGTHS, T).any()
    np.testing.assert_array_equal(
        vis.task_loss_positions("next_token", LENGTHS, T).sum(axis=1), LENGTHS - 1
    )


def test_hooks():
    assert not vis.task_mask("tagging", LENGTHS, T, causal_tasks=vis.TASKS)[0, 0, 1]
    assert vis.task_mask("next_token", LENGTHS, T, causal_tasks=())[0, 0, 2]
    assert vis.task_mask("tagging", LENGTHS, T, pad_keys=False).all()
    assert not vis.task_mask("tagging", LENGTHS, T, pad_queries=True)[0, 4].any()
    assert vis.task_loss_positions("next_token", LENGTHS, T, through_last=True).sum() == 9
    assert vis.task_loss_positions("tagging", LENGTHS, T, lengths_ignored=True).all()
    assert (
        vis.task_loss_positions("classification", LENGTHS, T, pooled_reads_tokens=True).sum() == 9
    )
    with pytest.raises(ValueError, match="expected a task"):
        vis.task_mask("translation", LENGTHS, T)
