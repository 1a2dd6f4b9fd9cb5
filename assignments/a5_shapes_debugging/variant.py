"""Your own numbers for the written questions of a5 (shapes and debugging).

    python variant.py YOUR_KEY

prints the block sizes your answers.toml must use for the `var_*` questions, and the tasks of
your visibility questions (`mask_task_1`, `mask_task_2`, `loss_task`). YOUR_KEY is your variant key: the email address of your Gradescope account (spaces
and capitals do not matter), unless your instructor says the course uses your student
id (SID). Gradescope's feedback names the key your numbers were computed for.
Without a key you get the default variant. The grader recomputes the same numbers from
the same key.
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np

_BATCHES = (2, 3)
_HEADS = (4, 6, 8, 12)
_HEAD_SIZES = (16, 32, 64)
_LENGTHS = (5, 7, 9, 10, 11)
# The tasks of the visibility questions, as the README describes them.
MASK_TASKS = {
    "tagging": "tagging every token of one full sentence (no padding)",
    "next_token": "next-token prediction on a padded batch",
    "classification": "sequence classification of a padded batch",
    "decoder": "a translation decoder's self-attention over one target sentence (no padding)",
}
LOSS_TASKS = {
    "tagging": "tagging every token of a padded batch",
    "next_token": "next-token prediction on a padded batch",
    "classification": "sequence classification of a padded batch",
}


def seed_for(student: str | None) -> int:
    """0 without an id; otherwise the first 8 hex digits of sha256 of the normalised id."""
    if not student or not student.strip():
        return 0
    return int(hashlib.sha256(student.strip().lower().encode()).hexdigest()[:8], 16)


def numbers(student: str | None) -> dict:
    """Your encoder block: B sequences of T tokens, width d = h * d_h, h heads, d_ff = 4d.

    The sizes are chosen so that B, T, h and d_h are all different (a swapped axis shows).
    """
    rng = np.random.default_rng([5, seed_for(student)])
    B = int(rng.choice(_BATCHES))
    h = int(rng.choice(_HEADS))
    d_h = int(rng.choice(_HEAD_SIZES))
    T = int(rng.choice(_LENGTHS))
    d = h * d_h
    tasks = np.random.default_rng([55, seed_for(student)])  # its own stream: the sizes stay
    mask_tasks = [str(t) for t in tasks.choice(list(MASK_TASKS), size=2, replace=False)]
    loss_task = str(tasks.choice(list(LOSS_TASKS)))
    return {
        "B": B,
        "T": T,
        "d": d,
        "n_heads": h,
        "d_ff": 4 * d,
        "mask_tasks": mask_tasks,
        "loss_task": loss_task,
    }


def main(argv: list[str]) -> None:
    student = argv[1] if len(argv) > 1 else None
    n = numbers(student)
    print(
        f"variant for the key {student.strip().lower()!r} (seed {seed_for(student)})"
        if student
        else "default variant (no key)"
    )
    print()
    print(
        f"your block (var_* questions): B = {n['B']}, T = {n['T']}, d = {n['d']}, "
        f"h = {n['n_heads']} (d_h = {n['d'] // n['n_heads']}), d_ff = {n['d_ff']}"
    )
    print(f"mask_task_1:  {MASK_TASKS[n['mask_tasks'][0]]}")
    print(f"mask_task_2:  {MASK_TASKS[n['mask_tasks'][1]]}")
    print(f"loss_task:    {LOSS_TASKS[n['loss_task']]}")


if __name__ == "__main__":
    main(sys.argv)
