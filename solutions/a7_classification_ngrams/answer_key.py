"""Print a complete answers.toml for one student's variant of a7.

    python answer_key.py [STUDENT_KEY] > answers.toml

Standalone: it reads the handout's variant.py (beside this folder's twin in assignments/, or
a copy placed next to this file) and uses this folder's classify.py for the numbers.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _load(name: str, candidates: list[Path]):
    for path in candidates:
        if path.is_file():
            spec = importlib.util.spec_from_file_location(f"_a7_{name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise FileNotFoundError(f"{name}.py not found in {', '.join(map(str, candidates))}")


variant = _load("variant", [HERE / "variant.py", HERE.parent.parent / "assignments" / HERE.name / "variant.py"])
classify = _load("classify", [HERE / "classify.py"])


def answers(student: str | None) -> dict:
    n = variant.numbers(student)
    q, a, b = (np.array(n[k], dtype=float) for k in ("query", "candidate_A", "candidate_B"))
    _, grad = classify.softmax_cross_entropy(np.array(n["logits"]), n["label"])
    counts = classify.ngram_counts(n["corpus"], 2)
    V = len({w for s in n["corpus"] for w in s}) + 1
    first, second = n["bigram"]
    return {
        "cosine_query_A": round(classify.cosine_similarity(q, a), 6),
        "nearest_by_dot": "A" if q @ a > q @ b else "B",
        "nearest_by_cosine": "A" if classify.cosine_similarity(q, a) > classify.cosine_similarity(q, b) else "B",
        "ce_gradient": [round(float(x), 6) for x in grad],
        "bigram_prob": round(classify.ngram_prob(counts, V, (first,), second), 6),
        "sentence_perplexity": round(classify.ngram_perplexity(counts, V, [n["test_sentence"]], 2), 6),
        "unsmoothed_infinite": "C",
    }


def _toml(value) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


def to_toml(student: str | None) -> str:
    """The answers.toml text for a student's variant (the same name in every answer key)."""
    return "".join(f"{key} = {_toml(value)}\n" for key, value in answers(student).items())


def main(argv: list[str]) -> None:
    student = argv[1] if len(argv) > 1 else None
    print(f"# a7 answers for {student!r}" if student else "# a7 answers for the default variant")
    print(to_toml(student), end="")


if __name__ == "__main__":
    main(sys.argv)
