"""The written answers of a2 for one student's variant, as a complete answers.toml.

Usage: `python answer_key.py [STUDENT_ID] > answers.toml`. Standalone: it loads the
handout's variant.py (beside this file, or in ../../assignments/a2_rnn_bptt/) and this
folder's rnn.py (the solution), nothing from the grader.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np

HERE = Path(__file__).resolve().parent


def _load(name: str, candidates: list[Path]) -> ModuleType:
    for path in candidates:
        if path.is_file():
            spec = importlib.util.spec_from_file_location(f"_a2_key_{name}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise FileNotFoundError(f"{name}.py not found in {', '.join(map(str, candidates))}")


variant = _load("variant", [HERE / "variant.py", HERE.parent.parent / "assignments" / "a2_rnn_bptt" / "variant.py"])
rnn = _load("rnn", [HERE / "rnn.py"])


def g_matrix(v: dict) -> list[list[float]]:
    """G_t = (g^z_t)^T h_{t-1} for L = 0.5 ||h_2 - y||^2, by the backward ledger."""
    r = v["rnn"]
    X, W_x, W_h, b_h, y = (np.array(r[k], dtype=np.float64) for k in ("X", "W_x", "W_h", "b_h", "y"))
    t_use = int(r["t"])
    _, Hs = rnn.rnn_forward(X, W_x, W_h, b_h)
    T, H = Hs.shape
    g_z = np.zeros((T, H))
    g_h = Hs[-1] - y
    for t in range(T - 1, -1, -1):
        g_z[t] = g_h * (1.0 - Hs[t] ** 2)
        g_h = g_z[t] @ W_h
    h_prev = Hs[t_use - 1] if t_use > 0 else np.zeros(H)
    return np.outer(g_z[t_use], h_prev).tolist()


def answers(student: str | None) -> dict:
    v = variant.numbers(student)
    c = v["clip"]
    clipped = rnn.clip_by_global_norm({"W_h": np.array(c["g_W_h"]), "b_h": np.array(c["g_b_h"])}, c["max_norm"])
    n = v["n"]
    return {
        "tanh_derivative": "1 - h^2",
        "bptt_factor": ["d/dh_prev h_t", "tanh'(z_t) w_h", "w_h (1 - h_t^2)"],
        "bptt_recurrence": "A",
        "g_matrix": g_matrix(v),
        "g0_zero": "C",
        "perplexity": float(np.exp(v["ce_nats"])),
        "teacher_forcing": "B",
        "clipped_b_h": np.asarray(clipped["b_h"]).tolist(),
        "path_factors": [abs(v["r_small"]) ** n, abs(v["r_large"]) ** n],
    }


def _toml(value) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(x) for x in value) + "]"
    return repr(float(value))


def to_toml(student: str | None) -> str:
    who = student.strip() if student and student.strip() else "the default variant (no id)"
    lines = [f"# a2 answer key for {who}"]
    lines += [f"{k} = {_toml(x)}" for k, x in answers(student).items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(to_toml(sys.argv[1] if len(sys.argv) > 1 else None))
