"""Print a complete answers.toml for one student's variant of a3.

    python answer_key.py [STUDENT_ID] > answers.toml

Standalone: it reads the student's numbers from the handout's variant.py and computes the
answers with this folder's solution (gated_seq2seq.py).
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
VARIANT = HERE.parent.parent / "assignments" / "a3_gated_seq2seq" / "variant.py"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def answers(student: str | None) -> dict[str, object]:
    variant = _load("_a3_variant", VARIANT)
    sol = _load("_a3_solution", HERE / "gated_seq2seq.py")
    n = variant.numbers(student)
    s, H = np.array(n["attention_s"], float), np.array(n["attention_H"], float)
    e = sol.dot_scores(s, H)
    alpha, a = sol.attend(e, H)

    def logs(row):
        return np.array([math.log(p) if p > 0 else -math.inf for p in row])

    tree = {tuple(k): logs(v) for k, v in n["beam_tree"].items()}
    default = logs(n["beam_default"])

    def lm(prefix):
        return tree.get(tuple(prefix), default)

    beam = {
        norm: sol.beam_search(lm, 0, 1, n["beam_size"], n["beam_max_len"], length_normalize=norm)
        for norm in (True, False)
    }
    c = sum(n["bleu_candidate_lengths"])
    r = sum(
        min(lens, key=lambda L, c_i=c_i: (abs(L - c_i), L))
        for c_i, lens in zip(n["bleu_candidate_lengths"], n["bleu_reference_lengths"])
    )
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return {**_written_round1(e, alpha, a, beam, bp), "greedy_vs_best": _greedy_vs_best(sol, n)}


def _greedy_vs_best(sol, n) -> list[float]:
    """[P(greedy's output), P(the best output ending in <eos>)] on the student's two-step tree."""
    p_a, q_a, q_b = n["greedy_p_a"], n["greedy_q_a"], n["greedy_q_b"]
    rows = {(0,): [0.0, 0.0, p_a, 1 - p_a], (0, 2): [0.0, q_a, (1 - q_a) / 2, (1 - q_a) / 2],
            (0, 3): [0.0, q_b, 1 - q_b, 0.0]}

    def lm(prefix):
        with np.errstate(divide="ignore"):
            return np.log(np.array(rows.get(tuple(prefix), [0.0, 1.0, 0.0, 0.0])))

    def prob(tokens):
        return math.exp(sum(lm([0, *tokens[:i]])[t] for i, t in enumerate(tokens)))

    greedy = [int(t) for t in sol.greedy_decode(lm, 0, 1, 2)]
    return [prob(greedy), max(prob(t) for t in ([1], [2, 1], [3, 1]))]


def _written_round1(e, alpha, a, beam, bp) -> dict[str, object]:
    return {
        "lstm_carry": "d/dc_prev c_t = f_t",
        "gru_merges": "A",
        "attn_scores": [float(x) for x in e],
        "attn_weights": [float(x) for x in alpha],
        "attn_output": [float(x) for x in a],
        "params_multiplicative": "d_s d_h",
        "params_reduced_rank": "k(d_s + d_h)",
        "params_additive": "k(d_s + d_h) + k",
        "beam_normalized": [int(t) for t in beam[True]],
        "beam_raw": [int(t) for t in beam[False]],
        "bleu_brevity_penalty": bp,
    }


def _toml(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def render(student: str | None) -> str:
    who = student or "the default variant"
    lines = [f"# a3 answers for {who}"]
    lines += [f"{k} = {_toml(v)}" for k, v in answers(student).items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(sys.argv[1] if len(sys.argv) > 1 else None), end="")


def to_toml(student: str | None) -> str:
    """The answers.toml text for a student's variant (the same name in every answer key)."""
    return render(student)
