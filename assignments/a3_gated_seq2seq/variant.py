"""Your own numbers for the written questions of a3 (gated RNNs, attention, decoding, BLEU).

    python variant.py YOUR_KEY

prints the numbers the grader will use for you. YOUR_KEY is your variant key: the email address of your Gradescope account (spaces
and capitals do not matter), unless your instructor says the course uses your student
id (SID). Gradescope's feedback names the key your numbers were computed for.
Without a key you get the default variant
(the one the README's examples use). Standalone: the standard library and numpy only.
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np

# The beam-search tree of the written questions: the same for everyone. Token ids:
# 0 = <bos>, 1 = <eos>, 2 = "a", 3 = "b". Each row is P(next token | prefix) over (0, 1, 2, 3);
# <bos> is never generated (probability 0).
BEAM_TREE: dict[tuple[int, ...], tuple[float, float, float, float]] = {
    (0,): (0.0, 0.1, 0.6, 0.3),
    (0, 2): (0.0, 0.5, 0.1, 0.4),
    (0, 3): (0.0, 0.2, 0.7, 0.1),
    (0, 2, 3): (0.0, 0.9, 0.05, 0.05),
    (0, 2, 2): (0.0, 0.4, 0.3, 0.3),
}
BEAM_DEFAULT = (0.0, 0.4, 0.3, 0.3)  # every prefix not listed above
BEAM_SIZE = 2
BEAM_MAX_LEN = 3


def seed_for(student: str | None) -> int:
    """0 without an id; else the first 8 hex digits of sha256 of the trimmed, lower-cased id."""
    if student is None or not student.strip():
        return 0
    return int(hashlib.sha256(student.strip().lower().encode()).hexdigest()[:8], 16)


def _attention(rng: np.random.Generator) -> tuple[list[int], list[list[int]]]:
    """A decoder state s (2,) and three encoder states H (3, 2) with small integer entries."""
    while True:
        s = rng.integers(-1, 3, size=2)
        H = rng.integers(-1, 3, size=(3, 2))
        e = H @ s
        distinct_rows = len({tuple(r) for r in H.tolist()}) == 3
        if np.any(s != 0) and distinct_rows and len(set(e.tolist())) == 3:
            return s.tolist(), H.tolist()


def _brevity(rng: np.random.Generator) -> dict[str, object]:
    """A two-sentence corpus's lengths: the closest reference is not the shortest one."""
    c1 = int(rng.integers(5, 10))
    a = int(rng.integers(1, 3))  # closest reference of sentence 1: c1 + a
    b = int(rng.integers(a + 1, a + 4))  # shortest reference of sentence 1: c1 - b, farther
    c2 = int(rng.integers(4, 9))
    d = int(rng.integers(b + 1, b + 4))  # closest reference of sentence 2: c2 + d
    e = int(rng.integers(2, 6))  # the other reference of sentence 2: c2 + d + e
    return {
        "bleu_candidate_lengths": [c1, c2],
        "bleu_reference_lengths": [sorted([c1 - b, c1 + a]), sorted([c2 + d, c2 + d + e])],
    }


def _greedy(student: str | None) -> dict[str, float]:
    """A two-step tree where greedy's first choice is the wrong one (its own random stream, so the
    other numbers stay what they were): P(a|<bos>) = p_a, P(<eos>|a) = q_a, P(<eos>|b) = q_b."""
    rng = np.random.default_rng([3, 9, seed_for(student)])
    while True:
        p_a = int(rng.integers(55, 71)) / 100
        q_a = int(rng.integers(36, 51)) / 100
        q_b = int(rng.integers(80, 100)) / 100
        if (1 - p_a) * q_b > p_a * q_a + 0.02:
            return {"greedy_p_a": p_a, "greedy_q_a": q_a, "greedy_q_b": q_b}


def numbers(student: str | None) -> dict[str, object]:
    """Your numbers: attention by hand, the BLEU brevity penalty, and the (shared) beam tree."""
    rng = np.random.default_rng([3, seed_for(student)])
    s, H = _attention(rng)
    out: dict[str, object] = {"attention_s": s, "attention_H": H}
    out.update(_brevity(rng))
    out.update(
        beam_tree={k: list(v) for k, v in BEAM_TREE.items()},
        beam_default=list(BEAM_DEFAULT),
        beam_size=BEAM_SIZE,
        beam_max_len=BEAM_MAX_LEN,
    )
    out.update(_greedy(student))
    return out


def _show(student: str | None) -> str:
    n = numbers(student)
    who = f"variant key {student.strip().lower()!r}" if student and student.strip() else "the default variant (no key)"
    lines = [f"a3 numbers for {who} (seed {seed_for(student)})", ""]
    lines.append("Attention by hand (written questions attn_*):")
    lines.append(f"  decoder state s = {n['attention_s']}")
    for i, row in enumerate(n["attention_H"], start=1):
        lines.append(f"  encoder state h_{i} = {row}")
    lines.append("")
    lines.append("BLEU brevity penalty (written question bleu_brevity_penalty):")
    for i, (c, refs) in enumerate(
        zip(n["bleu_candidate_lengths"], n["bleu_reference_lengths"]), start=1
    ):
        lines.append(f"  sentence {i}: candidate length {c}, reference lengths {refs}")
    lines.append("")
    lines.append(
        f"Beam search (questions beam_*): beam_size {n['beam_size']}, max_len {n['beam_max_len']}, "
        "tree in the README (the same for everyone)."
    )
    lines.append("")
    lines.append("Greedy versus the best output (written question greedy_vs_best); ids 0 <bos>, 1 <eos>, 2 a, 3 b:")
    lines.append(f"  P(a | <bos>) = {n['greedy_p_a']}, P(b | <bos>) = {round(1 - n['greedy_p_a'], 2)}")
    lines.append(f"  P(<eos> | <bos> a) = {n['greedy_q_a']}, P(a | <bos> a) = P(b | <bos> a) = "
                 f"{round((1 - n['greedy_q_a']) / 2, 3)}")
    lines.append(f"  P(<eos> | <bos> b) = {n['greedy_q_b']}, P(a | <bos> b) = {round(1 - n['greedy_q_b'], 2)}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(_show(sys.argv[1] if len(sys.argv) > 1 else None))
