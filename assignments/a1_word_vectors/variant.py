"""Your own numbers for the written questions of assignment 1 (word vectors).

    python variant.py YOUR_KEY

prints them. YOUR_KEY is your variant key: the email address of your Gradescope account (spaces
and capitals do not matter), unless your instructor says the course uses your student
id (SID). Gradescope's feedback names the key your numbers were computed for.
Without a key you get the default variant (the notes' own numbers), which is what the
grader uses when it does not know who you are. Standalone: stdlib + numpy only.
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np

_COORDS = (-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0)  # hand-friendly coordinates for u_a, u_b, u_c
_WORDS = ("the", "cat", "sat", "on", "mat", "dog", "ran", "far")


def seed_for(student: str | None) -> int:
    """0 without an id; else the first 8 hex digits of sha256 of the trimmed, lower-cased id."""
    if not student or not student.strip():
        return 0
    return int(hashlib.sha256(student.strip().lower().encode()).hexdigest()[:8], 16)


def numbers(student: str | None) -> dict:
    """The numbers of your variant: the skip-gram anchor (o = a) and the noise-distribution counts."""
    seed = seed_for(student)
    if seed == 0:  # the notes' numeric anchor, and counts 81, 16, 1 (fourth powers: 3^4, 2^4, 1^4)
        return {
            "v_c": [1.0, 0.0],
            "u_a": [2.0, 0.0],
            "u_b": [0.0, 1.0],
            "u_c": [1.0, 0.0],
            "noise_words": ["the", "cat", "mat"],
            "noise_counts": [81, 16, 1],
            "noise_word": "mat",
        }
    rng = np.random.default_rng([1, seed])
    v_c = [float(rng.choice([0.5, 1.0, 1.5])), float(rng.choice([-0.5, 0.0, 0.5]))]
    us: list[list[float]] = []
    while len(us) < 3:  # three different outside vectors
        u = [float(rng.choice(_COORDS)), float(rng.choice(_COORDS))]
        if u not in us:
            us.append(u)
    roots = sorted(int(k) for k in rng.choice(np.arange(1, 7), size=3, replace=False))[::-1]
    words = [str(w) for w in rng.choice(_WORDS, size=3, replace=False)]
    return {
        "v_c": v_c,
        "u_a": us[0],
        "u_b": us[1],
        "u_c": us[2],
        "noise_words": words,
        "noise_counts": [k**4 for k in roots],  # fourth powers, so count^(3/4) is a whole number
        "noise_word": words[-1],  # the rarest word
    }


def _show(student: str | None) -> str:
    n = numbers(student)
    fmt = lambda v: "(" + ", ".join(f"{x:g}" for x in v) + ")"  # noqa: E731
    counts = ", ".join(f"{w}: {c}" for w, c in zip(n["noise_words"], n["noise_counts"]))
    return "\n".join([
        (f"variant key {student.strip().lower()!r}, seed {seed_for(student)}" if seed_for(student)
         else "default variant (no key): the notes' numbers"),
        "",
        "Skip-gram anchor (questions skipgram_anchor_grad), vocabulary {a, b, c}, true outside word o = a:",
        f"  v_c = {fmt(n['v_c'])}",
        f"  u_a = {fmt(n['u_a'])}",
        f"  u_b = {fmt(n['u_b'])}",
        f"  u_c = {fmt(n['u_c'])}",
        "",
        f"Unigram counts (question noise_probability): {counts}",
        f"  the word asked about: {n['noise_word']}",
    ])


if __name__ == "__main__":
    print(_show(sys.argv[1] if len(sys.argv) > 1 else None))
