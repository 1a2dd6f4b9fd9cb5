"""Print a complete answers.toml for one student's variant of assignment 1.

    python answer_key.py [STUDENT_ID] > answers.toml

Standalone: the numbers come from the handout's variant.py (beside this file or in
../../assignments/a1_word_vectors/), the computations from this folder's word_vectors.py.
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
            spec = importlib.util.spec_from_file_location(f"_a1_key_{name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise FileNotFoundError(f"{name}.py not found in {', '.join(map(str, candidates))}")


variant = _load("variant", [HERE / "variant.py", HERE.parent.parent / "assignments" / "a1_word_vectors" / "variant.py"])
wv = _load("word_vectors", [HERE / "word_vectors.py"])


def answers(student: str | None) -> str:
    n = variant.numbers(student)
    v_c = np.array(n["v_c"], dtype=np.float64)
    U = np.array([n["u_a"], n["u_b"], n["u_c"]], dtype=np.float64)  # rows u_a, u_b, u_c
    grad = wv.naive_softmax_loss_and_gradient(v_c, 0, U)[1]
    p_n = wv.noise_distribution(np.array(n["noise_counts"], dtype=np.float64))
    p_word = float(p_n[n["noise_words"].index(n["noise_word"])])
    return "\n".join([
        f"# answer key for variant seed {variant.seed_for(student)}",
        'skipgram_grad_symbolic = ["d/dv_c (-log(p_a))", "-u_a + p_a u_a + p_b u_b + p_c u_c"]',
        'observed_minus_expected = "A"',
        f"skipgram_anchor_grad = [{grad[0]:.6f}, {grad[1]:.6f}]",
        'sgns_grad_symbolic = "(sigmoid(u_o v_c) - 1) u_o + sigmoid(u_1 v_c) u_1 + sigmoid(u_2 v_c) u_2"',
        'why_three_quarters = "C"',
        f"noise_probability = {p_word:.6f}",
        'why_exclude_inputs = "B"',
        "",
    ])


if __name__ == "__main__":
    sys.stdout.write(answers(sys.argv[1] if len(sys.argv) > 1 else None))


def to_toml(student: str | None) -> str:
    """The answers.toml text for a student's variant (the same name in every answer key)."""
    return answers(student)
