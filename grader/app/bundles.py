"""The two zips an instructor uploads or hands out: the Gradescope autograder and the student handout."""

from __future__ import annotations

import importlib
import importlib.metadata
import stat
import zipfile
from pathlib import Path

from grader.app.gradescope import ASSIGNMENT_FILE
from grader.course.content import assignment_dir
from grader.course.registry import ASSIGNMENT_IDS

_PACKAGE = Path(__file__).resolve().parents[1]  # the grader package
_SKIP_PARTS = {"__pycache__", ".pytest_cache", "_content", "samples"}

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu 22.04).
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-python3}"
if ! "$PY" -m pip --version >/dev/null 2>&1; then
    apt-get update && apt-get install -y python3 python3-pip
fi
# The CPU-only torch build (about 0.2 GB instead of 3-4 GB of CUDA libraries); the default
# index only if PyTorch's CPU index cannot be reached. Skipped when torch is already there.
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
    "$PY" -m pip install --no-cache-dir torch --index-url https://download.pytorch.org/whl/cpu \
        || "$PY" -m pip install --no-cache-dir torch
fi
"$PY" -m pip install --no-cache-dir -r requirements.txt
# Student code runs as a dedicated unprivileged uid (see grader/sandbox/launcher.py): it must neither
# read the grader (this folder) nor write the results folder.
ROOT="${SEQGRADE_GRADESCOPE_ROOT:-/autograder}"
chmod -R go-rwx "$(pwd)"
mkdir -p "$ROOT/results"
chmod 700 "$ROOT/results"
echo "seqgrade autograder installed"
"""

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this as root for every submission, from /autograder.
ROOT="${SEQGRADE_GRADESCOPE_ROOT:-/autograder}"
cd "$ROOT/source" || exit 0
exec "${PYTHON:-python3}" -m grader.app.gradescope
"""


def _pinned_requirements() -> str:
    lines = ["# pinned by `seqgrade autograder`; torch comes from PyTorch's CPU index in setup.sh"]
    for dist in ("numpy", "sympy", "lark", "gradescope-utils"):
        try:
            lines.append(f"{dist}=={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            lines.append(dist)
    return "\n".join(lines) + "\n"


def _add_tree(zf: zipfile.ZipFile, folder: Path, arcroot: str, keep=lambda rel: True) -> None:
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if any(p in _SKIP_PARTS for p in rel.parts) or path.suffix == ".pyc" or not path.is_file():
            continue
        if keep(rel):
            zf.write(path, f"{arcroot}/{rel.as_posix()}" if arcroot else rel.as_posix())


def _add_text(zf: zipfile.ZipFile, name: str, text: str, executable: bool = False) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, text)


def build_autograder(assignment_id: str, out: Path) -> Path:
    """setup.sh and run_autograder at the root, the grader with only this assignment's suite."""
    others = {aid for aid in ASSIGNMENT_IDS if aid != assignment_id}

    def keep_grader(rel: Path) -> bool:
        # Neither another assignment's hidden suite nor its instructor tests.
        return not (rel.parts[0] == "suites" and len(rel.parts) > 1
                    and any(rel.parts[1].startswith(o) for o in others))

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        _add_text(zf, "setup.sh", SETUP_SH, executable=True)
        _add_text(zf, "run_autograder", RUN_AUTOGRADER, executable=True)
        _add_text(zf, "requirements.txt", _pinned_requirements())
        _add_text(zf, ASSIGNMENT_FILE, assignment_id + "\n")
        _add_tree(zf, _PACKAGE, "grader", keep_grader)
        _add_tree(zf, Path(importlib.import_module("reference").__file__).parent, "reference")
        # The handout travels too: the grader loads its variant tool to recompute student numbers.
        _add_tree(zf, assignment_dir(assignment_id), f"grader/_content/assignments/{assignment_id}")
    return out


def build_handout(assignment_id: str, out: Path) -> Path:
    """The student bundle: the assignment's folder only (README, stub, answers template, public tests, variant tool)."""
    folder = assignment_dir(assignment_id)
    if not folder.is_dir():
        raise FileNotFoundError(f"no handout folder for {assignment_id}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        _add_tree(zf, folder, assignment_id)
    return out
