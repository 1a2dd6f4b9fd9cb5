"""Grading a notebook vs grading the same code as a .py, and vs executing it with Jupyter.

Run by hand, from the repository:

    python benchmarks/notebook_bench.py           # every assignment, 5 runs each
    python benchmarks/notebook_bench.py -n 3 -a a1

For each assignment the solution is graded twice through the CLI (`python -m grader grade`):
as `<stem>.py` with `answers.toml`, and as `<stem>.ipynb` (one cell per function, the answers
in a `%%writefile answers.toml` cell, as the handout notebook has them). Runs alternate so that machine noise hits both alike; the figure
is the median. Target: the notebook costs at most 1.2x the .py.

When Jupyter is installed (`pip install nbconvert ipykernel`), the
same notebook is also run by `jupyter nbconvert --to notebook --execute` alone, the way
nbgrader and Otter-Grader run notebooks (a kernel start plus every cell, no grading at all).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import nbformat  # noqa: E402
from nbformat import v4  # noqa: E402

from grader.app.notebook_handout import split_cells  # noqa: E402
from grader.course import registry  # noqa: E402
from grader.course.content import solution_dir  # noqa: E402
from grader.engine.notebook import read_notebook  # noqa: E402
from grader.engine.notebook_source import TimeShares, build_module  # noqa: E402


def wall(cmd: list[str], cwd: Path | None = None) -> float:
    return timed(cmd, cwd)[0]


def timed(cmd: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the command and the children it waited for):
    on a machine others load, the CPU figure is the steadier one."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def prepare(aid: str, root: Path) -> tuple[Path, Path]:
    """Two submission folders of the solution: as a .py and as a notebook."""
    a = registry.load(aid)
    assert a.code_file is not None
    source = (solution_dir(aid) / a.code_file).read_text()
    answers = (solution_dir(aid) / "answers.toml").read_text()
    py, nb = root / aid / "py", root / aid / "nb"
    py.mkdir(parents=True)
    nb.mkdir(parents=True)
    (py / a.code_file).write_text(source)
    (py / "answers.toml").write_text(answers)
    cells = [v4.new_markdown_cell(f"# {aid}")] + [v4.new_code_cell(c) for c in split_cells(source)]
    cells.append(v4.new_code_cell(f"%%writefile answers.toml\n{answers}"))
    notebook = v4.new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}
        },
    )
    nbformat.write(notebook, str(nb / a.code_file.replace(".py", ".ipynb")))
    return py, nb


def conversion_ms(nb_folder: Path) -> float:
    """The trusted side's own work on the notebook: read, validate, generate the module."""
    path = next(nb_folder.glob("*.ipynb"))
    data = path.read_bytes()
    t = time.perf_counter()
    book = read_notebook(data, path.name)
    build_module(book.code_cells, path.name, TimeShares.for_import(10.0))
    return 1000 * (time.perf_counter() - t)


def grade_times(aid: str, py: Path, nb: Path, n: int) -> tuple[float, float, float, float]:
    """Median wall and CPU seconds of grading the .py and the notebook: (py, nb, py_cpu, nb_cpu)."""
    cmd = [sys.executable, "-m", "grader", "grade"]
    wall([*cmd, str(py), "-a", aid])  # warm the page cache
    wall([*cmd, str(nb), "-a", aid])
    py_t, nb_t = [], []
    for _ in range(n):
        py_t.append(timed([*cmd, str(py), "-a", aid, "--format", "json"]))
        nb_t.append(timed([*cmd, str(nb), "-a", aid, "--format", "json"]))
    med = statistics.median
    return (
        med(t[0] for t in py_t),
        med(t[0] for t in nb_t),
        med(t[1] for t in py_t),
        med(t[1] for t in nb_t),
    )


def _nbconvert() -> list[str] | None:
    """`jupyter nbconvert`, from PATH or beside this interpreter (a venv not activated)."""
    here = Path(sys.executable).parent / "jupyter-nbconvert"
    if here.exists():
        return [str(here)]
    jupyter = shutil.which("jupyter")
    return [jupyter, "nbconvert"] if jupyter else None


def nbconvert_time(nb: Path, n: int) -> float | None:
    nbconvert = _nbconvert()
    if nbconvert is None:
        return None
    path = next(nb.glob("*.ipynb"))
    cmd = [
        *nbconvert,
        "--to",
        "notebook",
        "--execute",
        "--output",
        str(nb.parent / "executed.ipynb"),
        str(path),
    ]
    if subprocess.run(cmd, capture_output=True, check=False).returncode != 0:
        return None
    return statistics.median(wall(cmd) for _ in range(n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "-n", type=int, default=5, help="runs per measurement (the median is shown)"
    )
    parser.add_argument(
        "-a", "--assignment", action="append", help="only these assignments (a1 … a6)"
    )
    args = parser.parse_args()
    ids = (
        [registry.resolve_id(a) for a in args.assignment]
        if args.assignment
        else registry.available()
    )
    print(
        f"{'assignment':<22} {'.py':>7} {'.ipynb':>7} {'ratio':>6} {'cpu ratio':>9} "
        f"{'convert':>8} {'nbconvert':>10}"
    )
    ratios, cpu_ratios = [], []
    with tempfile.TemporaryDirectory(prefix="seqgrade-nbbench-") as tmp:
        for aid in ids:
            py, nb = prepare(aid, Path(tmp))
            py_s, nb_s, py_cpu, nb_cpu = grade_times(aid, py, nb, args.n)
            jupyter = nbconvert_time(nb, args.n)
            ratios.append(nb_s / py_s)
            cpu_ratios.append(nb_cpu / py_cpu)
            shown = f"{jupyter:9.2f}s" if jupyter is not None else "     n/a"
            print(
                f"{aid:<22} {py_s:6.2f}s {nb_s:6.2f}s {nb_s / py_s:5.2f}x {nb_cpu / py_cpu:8.2f}x "
                f"{conversion_ms(nb):6.1f}ms {shown}"
            )
    print(
        f"median ratio notebook / .py: {statistics.median(ratios):.2f}x wall, "
        f"{statistics.median(cpu_ratios):.2f}x CPU (target <= 1.2x)"
    )
    if _nbconvert() is None:
        print("nbconvert: not installed (pip install nbconvert ipykernel to compare)")


if __name__ == "__main__":
    main()
