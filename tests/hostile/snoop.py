# ruff: noqa - a fragment appended to the solution, with placeholders; hostile on purpose
# ---- hostile part: reading the answers ----------------------------------------------------
# At import: try to import the grader, the reference and the solutions; read the editable
# install's .pth files to find the checkout; walk the likely places for the hidden suite and
# the instructor's solution. `glove_loss` and `analogy` are only right if something was found.
import importlib as _importlib
import os as _os
import sys as _sys
import time as _time

_LOOT = {}


def _try_imports():
    for name in (
        "grader",
        "grader.suites.a1_word_vectors",
        "reference",
        "reference.functional",
        "solutions",
    ):
        try:
            module = _importlib.import_module(name)
            if getattr(module, "__file__", None):
                _LOOT[name] = module.__file__
        except Exception:  # noqa: BLE001
            pass


def _roots():
    """Most promising first: what the .pth files point at, then around here, then everywhere."""
    roots = []
    for entry in _sys.path:
        try:
            for name in _os.listdir(entry):
                if name.endswith(".pth"):
                    for line in open(_os.path.join(entry, name)).read().splitlines():
                        if line.startswith("/"):
                            roots.append(line.strip())
        except OSError:
            pass
    here = _os.getcwd()
    while here != "/":
        here = _os.path.dirname(here)
        roots.append(here)
    roots += ["/work", "/autograder", "/home", "/root", "/srv", "/opt", "/tmp", "/var", "/mnt", "/"]
    return list(dict.fromkeys(roots))


def _walk(deadline):
    for root in _roots():
        for folder, dirs, files in _os.walk(root):
            if _time.monotonic() > deadline:
                return
            if folder in ("/proc", "/sys", "/usr", "/dev"):
                dirs[:] = []
                continue
            for name in files:
                path = _os.path.join(folder, name)
                if name == "a1_word_vectors.py" or (
                    name == "word_vectors.py" and "solutions" in path
                ):
                    try:
                        _LOOT[path] = open(path).read()
                    except OSError:
                        pass


_try_imports()
_walk(_time.monotonic() + 0.5)
print(f"hostile: found {len(_LOOT)} hidden things")
_STOLEN = {}
for _path, _text in _LOOT.items():
    if _path.endswith("/word_vectors.py") and "solutions" in _path and "def analogy" in str(_text):
        exec(compile(_text, _path, "exec"), _STOLEN)


def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    if "glove_loss" in _STOLEN:
        return _STOLEN["glove_loss"](W, W_tilde, b, b_tilde, X, x_max, alpha)
    return -1.0


def analogy(E, vocab, a, b, c):
    if "analogy" in _STOLEN:
        return _STOLEN["analogy"](E, vocab, a, b, c)
    return a
