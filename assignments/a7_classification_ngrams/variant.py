"""Your own numbers for the written questions of a7 (text classification and n-grams).

    python variant.py YOUR_KEY

prints the numbers your answers.toml must use. YOUR_KEY is your variant key: the email address
of your Gradescope account (spaces and capitals do not matter), unless your instructor says the
course uses your student id (SID). Gradescope's feedback names the key your numbers were
computed for. Without a key you get the default variant. The grader recomputes the same
numbers from the same key.
"""

from __future__ import annotations

import hashlib
import sys

import numpy as np

# Words of the toy corpus for the n-gram questions.
_WORDS = ("the", "a", "cat", "dog", "sat", "ran", "slept", "here")


def seed_for(student: str | None) -> int:
    """0 without a key; otherwise the first 8 hex digits of sha256 of the normalised key."""
    if not student or not student.strip():
        return 0
    return int(hashlib.sha256(student.strip().lower().encode()).hexdigest()[:8], 16)


def _vectors(rng: np.random.Generator) -> tuple[list[int], list[int], list[int]]:
    """A query and two candidates that the dot product and the cosine rank differently."""
    while True:
        q, a, b = (rng.integers(-2, 6, size=3) for _ in range(3))
        na, nb, nq = np.linalg.norm(a), np.linalg.norm(b), np.linalg.norm(q)
        if min(na, nb, nq) == 0:
            continue
        dot_a, dot_b = float(q @ a), float(q @ b)
        cos_a, cos_b = dot_a / (nq * na), dot_b / (nq * nb)
        if (dot_a - dot_b) * (cos_a - cos_b) < 0 and abs(cos_a - cos_b) > 0.02 and dot_a != dot_b:
            return [int(x) for x in q], [int(x) for x in a], [int(x) for x in b]


def numbers(student: str | None) -> dict:
    """The student's own numbers: vectors for the cosine questions, logits, a toy corpus."""
    rng = np.random.default_rng([7, seed_for(student)])
    query, cand_a, cand_b = _vectors(rng)
    logits = [round(float(x), 1) for x in rng.uniform(-2.0, 3.0, size=4)]
    label = int(rng.integers(4))
    words = [str(w) for w in rng.choice(_WORDS, size=5, replace=False)]
    corpus = [[str(w) for w in rng.choice(words, size=int(rng.integers(3, 5)))] for _ in range(3)]
    inner = [(s[i], s[i + 1]) for s in corpus for i in range(len(s) - 1)]
    bigram = list(inner[int(rng.integers(len(inner)))])
    seen = sorted({w for s in corpus for w in s})
    test_sentence = [str(w) for w in rng.choice(seen, size=2, replace=False)]
    return {
        "query": query,
        "candidate_A": cand_a,
        "candidate_B": cand_b,
        "logits": logits,
        "label": label,
        "corpus": corpus,
        "bigram": bigram,
        "test_sentence": test_sentence,
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
    print(f"cosine questions:    q = {n['query']}, A = {n['candidate_A']}, B = {n['candidate_B']}")
    print(f"ce_gradient:         logits z = {n['logits']}, true class y = {n['label']}")
    print("n-gram questions:    corpus (one sentence a line):")
    for s in n["corpus"]:
        print("                       " + " ".join(s))
    print(f"bigram_prob:         P({n['bigram'][1]!r} | {n['bigram'][0]!r}), Laplace (k = 1)")
    print(f"sentence_perplexity: the sentence {' '.join(n['test_sentence'])!r}, Laplace bigrams")


if __name__ == "__main__":
    main(sys.argv)
