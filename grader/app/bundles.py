"""The two zips an instructor uploads or hands out: the Gradescope autograder and the student handout."""

from __future__ import annotations

import importlib
import stat
import zipfile
from pathlib import Path

from grader.app.gradescope import ASSIGNMENT_FILE
from grader.course.content import assignment_dir
from grader.course.registry import ASSIGNMENT_IDS

_PACKAGE = Path(__file__).resolve().parents[1]  # the grader package
_SKIP_PARTS = {"__pycache__", ".pytest_cache", "_content", "samples"}

# The requirements of the autograder image: ranges that resolve on every Python from 3.10
# (Ubuntu 22.04) to 3.13 (Ubuntu 24.04 is 3.12), never the build machine's exact versions.
REQUIREMENTS = (
    "numpy>=1.24,<3",
    "scipy>=1.10,<2",  # students' code may call it (a1's handout: scipy.special.expit)
    "sympy>=1.12,<2",  # the expression checker's fallback
    "mpmath>=1.3,<2",  # the expression checker's numeric check
    "gradescope-utils>=0.5,<1",  # instructors' unittest modules
    "nbformat>=5.7,<6",  # notebook submissions
    'tomli>=2.0,<3; python_version < "3.11"',  # answers.toml before tomllib
)
# The CPU build of torch, pinned: it exists for CPython 3.10 to 3.13 (checked by
# tests/test_packaging.py against the plain index).
TORCH_PIN = "torch==2.13.0"

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image (Ubuntu 22.04 or 24.04).
# Everything goes into a virtual environment of its own (24.04's system Python refuses
# `pip install` outside one, PEP 668); run_autograder uses it.
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-python3}"
ROOT="${SEQGRADE_GRADESCOPE_ROOT:-/autograder}"
# Outside source/ (which the sandbox hides from student code): the worker runs this interpreter.
VENV="${SEQGRADE_VENV:-$ROOT/venv}"
# --system-site-packages: a torch already in the image is reused instead of downloaded again.
# Without a pip of its own when the interpreter's pip serves the venv (3 s less per build);
# otherwise a venv with its own pip, as before. Ubuntu ships venv's pip bootstrap separately
# (python3-venv): install it when venv fails.
if ! { "$PY" -m venv --system-site-packages --without-pip "$VENV" >/dev/null 2>&1 \
        && "$VENV/bin/python" -c "import pip" >/dev/null 2>&1; }; then
    rm -rf "$VENV"
    if ! "$PY" -m venv --system-site-packages "$VENV" >/dev/null 2>&1; then
        rm -rf "$VENV"
        apt-get update && apt-get install -y python3 python3-venv python3-pip
        PY=python3
        "$PY" -m venv --system-site-packages "$VENV"
    fi
fi
VPY="$VENV/bin/python"
# An interpreter that is itself a venv's (an instructor trying the bundle locally) would give
# the new venv the base installation's packages, not its own: add its own, so a torch already
# installed there is reused too.
"$PY" -c "import site, sys; sys.prefix != sys.base_prefix and print(*site.getsitepackages(), sep=chr(10))" \
    > "$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_outer_venv.pth" || true
# The CPU-only torch build (about 0.2 GB instead of 3-4 GB of CUDA libraries), pinned; the
# plain index only if PyTorch's CPU index cannot be reached. Skipped when torch is there
# (found, not imported: an import takes seconds).
if [ "${SEQGRADE_SKIP_TORCH:-0}" != "1" ] \
    && ! "$VPY" -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is None)"; then
    "$VPY" -m pip install --no-cache-dir "@TORCH_PIN@" --index-url https://download.pytorch.org/whl/cpu \
        || "$VPY" -m pip install --no-cache-dir "@TORCH_PIN@"
fi
# pip only when a requirement (or one of theirs) is missing or out of range: a local try in an
# environment that has them all is answered in a tenth of the 1-2 s pip takes to say so.
if ! "$VPY" - requirements.txt >/dev/null 2>&1 <<'PY'
import sys
from importlib.metadata import distribution
from pip._vendor.packaging.requirements import Requirement
todo = [(Requirement(r), ()) for r in map(str.strip, open(sys.argv[1])) if r and r[0] != "#"]
seen = set()
while todo:  # each requirement, and theirs, under the extras asked of them
    req, extras = todo.pop()
    if req.marker and not any(req.marker.evaluate({"extra": e}) for e in ("", *extras)):
        continue
    dist = distribution(req.name)  # raises when it is missing
    assert req.specifier.contains(dist.version, prereleases=True), req
    key = (req.name.lower(), *sorted(req.extras))
    if key not in seen:
        seen.add(key)
        todo += [(Requirement(r), tuple(req.extras)) for r in dist.requires or ()]
PY
then
    "$VPY" -m pip install --no-cache-dir -r requirements.txt
fi
# Student code runs as a dedicated unprivileged uid (see grader/sandbox/): it must neither
# read the grader (this folder, the environment's own files apart) nor write the results folder.
chmod -R go-rwx "$(pwd)"
chmod -R go+rX "$VENV"
mkdir -p "$ROOT/results"
chmod 700 "$ROOT/results"
echo "seqgrade autograder installed in $VENV"
""".replace("@TORCH_PIN@", TORCH_PIN)

# Gradescope runs this as root for every submission, from /autograder. Every path, even a
# missing source folder or a Python that cannot start, ends with a results file.
RUN_AUTOGRADER = r"""#!/usr/bin/env bash
ROOT="${SEQGRADE_GRADESCOPE_ROOT:-/autograder}"
RESULTS="$ROOT/results/results.json"
fail() {
    mkdir -p "$ROOT/results"
    printf '{"score": 0.0, "execution_time": 0.0, "output": "The grader could not start: %s. Please tell your instructor.", "output_format": "md", "visibility": "visible", "stdout_visibility": "hidden", "tests": [{"name": "Grader error", "number": "0", "score": 0.0, "max_score": 0.0, "status": "failed", "output": "The grader could not start: %s. Please tell your instructor.", "output_format": "md", "visibility": "visible", "extra_data": {"question": "grader-error", "kind": "error", "function": null, "misconceptions": []}}], "extra_data": {"assignment": null, "grader_version": "unknown"}}\n' "$1" "$1" > "$RESULTS"
    echo "seqgrade: $1" >&2
    exit 0
}
cd "$ROOT/source" || fail "the autograder source folder is missing"
PY="${SEQGRADE_VENV:-$ROOT/venv}/bin/python"
[ -x "$PY" ] || PY="${PYTHON:-python3}"
rm -f "$RESULTS"
"$PY" -m grader.app.gradescope
status=$?
[ -s "$RESULTS" ] || fail "the grading process ended with status $status before writing results"
exit 0
"""


def _requirements() -> str:
    lines = [
        "# seqgrade's autograder requirements: ranges for Python 3.10-3.13; torch comes from setup.sh"
    ]
    return "\n".join([*lines, *REQUIREMENTS]) + "\n"


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


def build_autograder(assignment_id: str, out: Path, extra: dict[str, Path] | None = None) -> Path:
    """setup.sh and run_autograder at the root, the grader with only this assignment's suite;
    `extra`: more files by their name in the bundle (the term's files, grader/course/term.py)."""
    others = {aid for aid in ASSIGNMENT_IDS if aid != assignment_id}

    def keep_grader(rel: Path) -> bool:
        # Neither another assignment's hidden suite nor its instructor tests.
        return not (
            rel.parts[0] == "suites"
            and len(rel.parts) > 1
            and any(rel.parts[1].startswith(o) for o in others)
        )

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        _add_text(zf, "setup.sh", SETUP_SH, executable=True)
        _add_text(zf, "run_autograder", RUN_AUTOGRADER, executable=True)
        _add_text(zf, "requirements.txt", _requirements())
        _add_text(zf, ASSIGNMENT_FILE, assignment_id + "\n")
        _add_tree(zf, _PACKAGE, "grader", keep_grader)
        _add_tree(zf, Path(importlib.import_module("reference").__file__).parent, "reference")
        # The handout travels too: the grader loads its variant tool to recompute student numbers.
        _add_tree(zf, assignment_dir(assignment_id), f"grader/_content/assignments/{assignment_id}")
        for name, path in sorted((extra or {}).items()):
            zf.write(path, name)
    return out


def build_handout(assignment_id: str, out: Path) -> Path:
    """The student bundle: the assignment's folder (README, stub, answers template, public tests,
    variant tool) and `check.py`, the check-as-you-go tool (grader.app.check_tool)."""
    from grader.app import check_tool

    folder = assignment_dir(assignment_id)
    if not folder.is_dir():
        raise FileNotFoundError(f"no handout folder for {assignment_id}")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        _add_tree(zf, folder, assignment_id)
        _add_text(zf, f"{assignment_id}/{check_tool.CHECK_FILE}", check_tool.source(assignment_id))
    return out
