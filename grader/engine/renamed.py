"""Files submitted under another name than the one the assignment asks for: Colab's `Copy of
transformer.ipynb`, a browser's `transformer (1).py`, an editor's `transformer.py.txt`,
`A4_transformer_final.ipynb`, `answers (2).toml`. When the asked-for file is missing and one
file unambiguously stands in for it, that file is graded under the asked-for name, and the
feedback says so.

A stand-in is, in this order: the one file of the same kind whose name holds the asked-for
stem (`transformer`) once a `Copy of` and a ` (1)` are set aside; else, for the code, the one
notebook whose name holds it; else the only `.py` file, or the only notebook, of the
submission. The handout's own files (`test_public.py`, `variant.py`, `check.py`) and test files
(`test_*.py`, `*_test.py`) never stand in. Two candidates of equal rank: none is chosen.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath

HANDOUT_FILES = frozenset({"test_public.py", "variant.py", "check.py", "conftest.py", "setup.py"})
_COPY = re.compile(r"^(?:copy[ _]of[ _]|copie[ _]de[ _])+", re.IGNORECASE)
_NUMBERED = re.compile(r"[ _-]*\(\d+\)$")
_ANSWERS_SUFFIXES = (".toml", ".toml.txt")


def _core(name: str) -> str:
    """`Copy of Transformer (1)` -> `transformer`: lower case, separators as `_`."""
    stem = _NUMBERED.sub("", _COPY.sub("", name))
    return re.sub(r"[\s\-]+", "_", stem.strip().lower())


def _split(path: str, suffixes: tuple[str, ...]) -> tuple[str, str] | None:
    """(folder, stem) of `path` when its name ends with one of `suffixes`."""
    p = PurePosixPath(path)
    for suffix in suffixes:
        if p.name.lower().endswith(suffix):
            folder = "" if str(p.parent) == "." else str(p.parent)
            return folder, p.name[: -len(suffix)]
    return None


def _eligible(path: str) -> bool:
    name = PurePosixPath(path).name
    return not (
        name in HANDOUT_FILES
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name.startswith("_")
    )


def _one(found: list[str]) -> str | None:
    return found[0] if len(found) == 1 else None


def _named(paths: Iterable[str], suffixes: tuple[str, ...], stem: str) -> str | None:
    """The one path of this kind whose name is the stem (set asides apart), else the one whose
    name holds it."""
    rows = [(p, _split(p, suffixes)) for p in paths if _eligible(p)]
    kinds = [(p, _core(s[1])) for p, s in rows if s is not None]
    want = _core(stem)
    exact = [p for p, core in kinds if core == want]
    if exact:
        return _one(exact)
    return _one([p for p, core in kinds if want in core])


def stand_ins(paths: list[str], code_file: str | None, answers_file: str) -> dict[str, str]:
    """Path -> the asked-for name it stands in for (in its own folder), for the code file (or
    its notebook) and the answers file (`answers.toml`), when the asked-for file is not among
    `paths`."""
    names = {PurePosixPath(p).name for p in paths}
    out: dict[str, str] = {}
    if code_file and code_file.endswith(".py"):
        stem = code_file[:-3]
        notebook = f"{stem}.ipynb"
        if code_file not in names and notebook not in names:
            py = _named(paths, (".py", ".py.txt"), stem)  # .txt: an editor's "Save as"
            nb = None if py else _named(paths, (".ipynb",), stem)
            if py is None and nb is None:
                all_py = [p for p in paths if p.endswith(".py") and _eligible(p)]
                all_nb = [p for p in paths if p.endswith(".ipynb") and _eligible(p)]
                py = _one(all_py) if not all_nb else None
                nb = _one(all_nb) if not all_py else None
            if py is not None:
                out[py] = code_file
            elif nb is not None:
                out[nb] = notebook
    if answers_file not in names:
        answers = _named(paths, _ANSWERS_SUFFIXES, answers_file.removesuffix(".toml"))
        if answers is None:
            answers = _one([p for p in paths if _split(p, _ANSWERS_SUFFIXES) and _eligible(p)])
        if answers is not None:
            out[answers] = answers_file
    return {p: _sibling(p, name) for p, name in out.items()}


def _sibling(path: str, name: str) -> str:
    parent = PurePosixPath(path).parent
    return name if str(parent) == "." else f"{parent}/{name}"


def note(original: str, graded_as: str) -> str:
    """What the feedback says of a stand-in."""
    return (
        f"`{original}` was graded as `{PurePosixPath(graded_as).name}`, the name the assignment "
        "asks for: name it so next time"
    )
