"""Float32 versions of the instructor's solutions, as student-style code files.

A student may compute in float32 (the README allows it). Each version here is the solution's
own source with a wrapper appended: every public function gets its floating-point inputs
rounded to float32 and returns its floating-point outputs in float32 (NumPy arrays, torch
tensors, Python numbers, inside tuples, lists and dicts). Internal calls between the public
functions go through the wrapper too, so every boundary is float32, as in a float32 student's
code; integer inputs (indices, lengths, token ids) are left alone.
"""

from __future__ import annotations

from pathlib import Path

from conftest import ROOT

CODE_FILES = {
    "a1_word_vectors": "word_vectors.py",
    "a2_rnn_bptt": "rnn.py",
    "a3_gated_seq2seq": "gated_seq2seq.py",
    "a4_transformer": "transformer.py",
    "a5_shapes_debugging": "fixed.py",
    "a6_pretraining_scale": "pretraining.py",
    "a7_classification_ngrams": "classify.py",
}

WRAPPER = '''

# ---------------------------------------------------------------- float32 everywhere (tests/)
import inspect as _inspect

import numpy as _np


def _f32(x):
    """x with every floating-point array, tensor or number in float32 (ints untouched)."""
    if isinstance(x, _np.ndarray):
        return x.astype(_np.float32) if x.dtype.kind == "f" else x
    if type(x).__module__.startswith("torch") and hasattr(x, "is_floating_point"):
        return x.float() if x.is_floating_point() else x
    if isinstance(x, float):
        return float(_np.float32(x))
    if isinstance(x, tuple):
        return tuple(_f32(v) for v in x)
    if isinstance(x, list):
        return [_f32(v) for v in x]
    if isinstance(x, dict):
        return {k: _f32(v) for k, v in x.items()}
    return x


def _float32(f):
    def call(*args, **kwargs):
        return _f32(f(*_f32(args), **_f32(kwargs)))

    call.__name__, call.__doc__, call.__wrapped__ = f.__name__, f.__doc__, f
    return call


for _name, _fn in list(globals().items()):
    if _inspect.isfunction(_fn) and not _name.startswith("_") and _fn.__module__ == __name__:
        globals()[_name] = _float32(_fn)
'''


def float32_source(aid: str) -> tuple[str, str]:
    """(code file name, source) of the float32 version of assignment `aid`'s solution."""
    name = CODE_FILES[aid]
    return name, (ROOT / "solutions" / aid / name).read_text() + WRAPPER


def write_submission(aid: str, folder: Path) -> Path:
    """A submission folder holding the float32 code file and the solution's answers.toml."""
    folder.mkdir(parents=True, exist_ok=True)
    name, source = float32_source(aid)
    (folder / name).write_text(source)
    (folder / "answers.toml").write_text((ROOT / "solutions" / aid / "answers.toml").read_text())
    return folder
