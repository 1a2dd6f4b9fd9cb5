"""Print a complete answers.toml for one student's variant of a5.

    python answer_key.py [STUDENT_ID] > answers.toml

Standalone: it reads the handout's variant.py (a copy next to this file, or the one in
assignments/a5_shapes_debugging/) and this folder's fixed.py for the block shapes.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WALKTHROUGH = {"B": 2, "T": 4, "d": 8, "n_heads": 2, "d_ff": 32}  # notes §6
SHAPE_KEYS = (
    "q_heads",
    "scores",
    "context_heads",
    "context",
    "ffn_hidden",
    "block_out",
    "ln_stats",
    "bn_stats",
)


def _load(name: str, candidates: list[Path]):
    for path in candidates:
        if path.is_file():
            spec = importlib.util.spec_from_file_location(f"_a5_{name}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise FileNotFoundError(f"{name}.py not found in {', '.join(map(str, candidates))}")


variant = _load(
    "variant", [HERE / "variant.py", HERE.parent.parent / "assignments" / HERE.name / "variant.py"]
)
fixed = _load("fixed", [HERE / "fixed.py"])


def answers(student: str | None) -> dict:
    walk = fixed.block_shapes(**WALKTHROUGH)
    numbers = variant.numbers(student)
    mine = fixed.block_shapes(**{k: numbers[k] for k in ("B", "T", "d", "n_heads", "d_ff")})
    out: dict = {}
    out.update({f"walk_{k}": list(walk[k]) for k in SHAPE_KEYS})
    out.update({f"var_{k}": list(mine[k]) for k in SHAPE_KEYS})
    out.update(
        {"axis_ffn": "C", "axis_layer_norm": "C", "axis_attention": "B", "axis_batch_norm": "A, B"}
    )
    out.update(
        {
            "bug_split_heads": "D",
            "bug_merge_heads": "G",
            "bug_masked_softmax": "B",
            "bug_causal_lm_loss": "J",
            "bug_masked_mean_pool": "C",
            "bug_block_shapes": "I",
        }
    )
    masks = {"tagging": "A", "next_token": "D", "classification": "C", "decoder": "B"}
    reads = {"tagging": "A", "next_token": "B", "classification": "C"}
    out["mask_task_1"] = masks[numbers["mask_tasks"][0]]
    out["mask_task_2"] = masks[numbers["mask_tasks"][1]]
    out["loss_task"] = reads[numbers["loss_task"]]
    return out


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
    print(f"# a5 answers for {student!r}" if student else "# a5 answers for the default variant")
    for key, value in answers(student).items():
        print(f"{key} = {_toml(value)}")


if __name__ == "__main__":
    main(sys.argv)
