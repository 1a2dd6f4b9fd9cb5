"""Print a complete answers.toml for one student's variant of a6.

    python answer_key.py [STUDENT_ID] > answers.toml

Standalone: it reads the handout's variant.py (beside this folder's twin in assignments/, or
a copy placed next to this file) and uses this folder's pretraining.py for the BPE merges.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _load(name: str, candidates: list[Path]):
    for path in candidates:
        if path.is_file():
            spec = importlib.util.spec_from_file_location(f"_a6_{name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise FileNotFoundError(f"{name}.py not found in {', '.join(map(str, candidates))}")


variant = _load("variant", [HERE / "variant.py", HERE.parent.parent / "assignments" / HERE.name / "variant.py"])
pretraining = _load("pretraining", [HERE / "pretraining.py"])


def answers(student: str | None) -> dict:
    n = variant.numbers(student)
    d, layers = n["d_model"], n["n_layers"]
    merges = pretraining.bpe_learn(n["bpe_corpus"], n["bpe_num_merges"])
    gpt2 = pretraining.transformer_parameter_count(50257, 1024, 768, 12, 3072)["total"]
    return {
        "per_block_formula": "12d^2 + 13d",
        "gpt2_small_total": gpt2,
        "estimate_12nd2": 12 * layers * d**2,
        "swiglu_ffn": 3 * n["swiglu_d"] * n["swiglu_d_ff"],
        "rmsnorm_vs_layernorm": "C",
        "bert_80_10_10": "B",
        "objectives": "D",
        "bpe_by_hand": [f"{a} {b}" for a, b in merges],
    }


def _toml(value) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def to_toml(student: str | None) -> str:
    """The answers.toml text for a student's variant (the same name in every answer key)."""
    return "".join(f"{key} = {_toml(value)}\n" for key, value in answers(student).items())


def main(argv: list[str]) -> None:
    student = argv[1] if len(argv) > 1 else None
    print(f"# a6 answers for {student!r}" if student else "# a6 answers for the default variant")
    for key, value in answers(student).items():
        print(f"{key} = {_toml(value)}")


if __name__ == "__main__":
    main(sys.argv)
