"""Notebooks run by seqgrade against the same notebooks run by a real Jupyter kernel.

The authority is nbclient + ipykernel, the libraries `jupyter nbconvert --execute` uses: each
notebook of the corpus runs top to bottom in a fresh kernel, then a probe cell calls every
graded function on its question's visible cases. seqgrade runs the same notebook as it grades
it (`use_notebook`: the generated module, in the sandbox's worker) and makes the same calls.
Which functions are defined and what they return must agree exactly; the differences that remain
by design (docs/notebooks.md, "What differs from a real kernel") are asserted as such.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import numpy as np
import pytest
from conftest import FAST, ROOT
from nbformat import v4

from grader.app import check_tool, notebook_handout
from grader.course import content, registry
from grader.engine import notebook
from grader.engine.locate import Located
from grader.questions import CodeQuestion
from grader.sandbox import runtime
from grader.sandbox.session import WorkerSession

nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

pytestmark = pytest.mark.slow
ASSIGNMENTS = registry.available()

# The corpus's extra cells: each is what real notebooks carry.
MAGICS = v4.new_code_cell("%matplotlib inline\n%time _warm = sum(range(10))\n%load_ext autoreload")
PIP = v4.new_code_cell("!pip --version\nfiles = !ls")
PLOT = v4.new_code_cell(
    "import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([0, 1], [1, 0])\nplt.show()"
)
DISPLAY = v4.new_code_cell("from IPython.display import display\ndisplay({'a': 1})\n'shown'")
INPUT = v4.new_code_cell("answer = input('continue? ')")
TQDM = v4.new_code_cell("from tqdm.auto import tqdm\nfor _ in tqdm(range(50)):\n    pass")
RAISES = v4.new_code_cell("ratio = 1 / 0")
LATER = v4.new_code_cell("print(helper_defined_later())")
HELPER = v4.new_code_cell("def helper_defined_later():\n    return 42")
IMPORTS = v4.new_code_cell(
    "import matplotlib.pyplot as plt\nimport numpy as np\nimport pandas as pd\nimport torch"
)
# Trains longer than a cell that runs code may compute when grading (2.5 s of CPU with the
# tests' 10 s import limit: it is stopped there).
TRAIN = v4.new_code_cell(
    "import time\nstart, w = time.process_time(), 0.0\n"
    "while time.process_time() - start < 3.0:\n    w += 1e-9\ntrained = w"
)
PROBE_FILE = "probe.json"


def _solution_cells(aid: str) -> list:
    a = registry.load(aid)
    text = (ROOT / "solutions" / aid / a.code_file).read_text()
    return [v4.new_code_cell(c) for c in notebook_handout.split_cells(text)]


def _redefined(aid: str, cells: list) -> list:
    """A wrong first version of the first function, redefined right further down."""
    first = next(c for c in cells if c.source.lstrip().startswith("def "))
    name = first.source.split("def ", 1)[1].split("(")[0]
    wrong = v4.new_code_cell(f"def {name}(*args, **kwargs):\n    return None")
    return [wrong, *cells]


def _colab(cells: list) -> nbformat.NotebookNode:
    """A notebook as Colab exports it: its metadata, and ids and `colab` fields on cells."""
    out = []
    for i, c in enumerate(cells):
        c = nbformat.from_dict(json.loads(json.dumps(c)))
        c.metadata = {"id": f"c{i:04d}x", "colab": {"base_uri": "https://localhost:8080/"}}
        if c.cell_type == "code":
            c.metadata["outputId"] = f"o{i:04d}"
        out.append(c)
    nb = v4.new_notebook(cells=out)
    nb.metadata = {
        "colab": {"provenance": [], "name": "Copy of handout.ipynb", "toc_visible": True},
        "kernelspec": {"name": "python3", "display_name": "Python 3"},
        "language_info": {"name": "python"},
        "accelerator": "GPU",
    }
    nb.nbformat_minor = 0
    return nb


def corpus() -> list[tuple[str, str, nbformat.NotebookNode]]:
    """(id, assignment, notebook): every solution as a notebook, then a4 the ways notebooks are
    handed in: with everything a working notebook carries (magics, `!pip`, imports, a progress
    bar, a plot, a display), mid-work (a wrong first version redefined further down, a call to
    a function defined later, a raising cell, an `input()`), and with a training cell."""
    items = []
    for aid in ASSIGNMENTS:
        items.append((f"{aid}-solution", aid, v4.new_notebook(cells=_solution_cells(aid))))
    aid = "a4_transformer"
    sol = _solution_cells(aid)
    variants = {
        "everyday": [MAGICS, PIP, IMPORTS, TQDM, *sol, PLOT, DISPLAY],
        "mid-work": _redefined(aid, [LATER, sol[0], RAISES, *sol[1:], INPUT, HELPER]),
        "training": [*sol[:3], TRAIN, *sol[3:]],
    }
    for name, cells in variants.items():
        items.append((f"a4-{name}", aid, v4.new_notebook(cells=cells)))
    items.append(("a3-colab", "a3_gated_seq2seq", _colab(_solution_cells("a3_gated_seq2seq"))))
    return items


CORPUS = corpus()


def _probe(aid: str) -> str:
    """The kernel's last cell: each graded function on its visible cases, as the grader
    receives the return values (check.py's own decoding and conversion)."""
    return (
        "import json as _j, check as _c\n"
        "_out = {}\n"
        "for _q in _c._QUESTIONS:\n"
        "    _f = globals().get(_q['function'])\n"
        "    _rows = []\n"
        "    for _case in _q['cases']:\n"
        "        if not callable(_f):\n"
        "            _rows.append(None); continue\n"
        "        _args = _c._decode(_case['args'], _q['torch'])\n"
        "        _kw = _c._decode(_case['kwargs'], _q['torch'])\n"
        "        try:\n"
        "            _rows.append(_c._as_returned(_f(*_args, **_kw)))\n"
        "        except Exception as _e:\n"
        "            _rows.append('raised ' + type(_e).__name__)\n"
        "    _out[_q['function']] = _rows\n"
        "import pickle as _p\n"
        f"open({PROBE_FILE!r}, 'wb').write(_p.dumps(_out))\n"
        "_names = sorted(k for k in globals() if not k.startswith('_'))\n"
        "open('names.json', 'w').write(_j.dumps(_names))\n"
    )


def _kernel_run(aid: str, nb: nbformat.NotebookNode, folder: Path) -> tuple[dict, set[str], Any]:
    """Run the notebook in a fresh ipykernel (errors allowed, as "Run all" continues with
    nbclient's allow_errors), then the probe; returns the probe's outputs and global names."""
    (folder / check_tool.CHECK_FILE).write_text(check_tool.source(aid))
    run = nbformat.reads(nbformat.writes(nb), as_version=4)
    run.cells.append(v4.new_code_cell(_probe(aid)))
    client = nbclient.NotebookClient(
        run,
        timeout=300,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    import pickle

    out = pickle.loads((folder / PROBE_FILE).read_bytes())
    names = set(json.loads((folder / "names.json").read_text()))
    return out, names, run


def _seqgrade_run(aid: str, nb: nbformat.NotebookNode) -> tuple[dict, Located]:
    """The same notebook as seqgrade grades it: the generated module in the sandbox's worker,
    each graded function called on the same visible cases."""
    a = registry.load(aid)
    located = Located(files={notebook.notebook_name(a.code_file): nbformat.writes(nb).encode()})
    notebook.use_notebook(located, a.code_file, FAST.call_seconds)
    py = {k: v for k, v in located.files.items() if k.endswith(".py")}
    uses_torch = a.preload_torch or b"import torch" in py[a.code_file]
    session = WorkerSession(
        py,
        a.code_file[:-3],
        preload=runtime.preload(uses_torch),
        limits=FAST,
        hide=content.grader_trees(),
    )
    session.start()
    out: dict[str, list] = {}
    try:
        notebook.cell_notes(session, located)
        payload = {q["id"]: q for q in check_tool.cases_payload(aid)}
        for q in a.questions:
            if not isinstance(q, CodeQuestion):
                continue
            rows: list[Any] = []
            names = [c["name"] for c in payload[q.id]["cases"]]
            for case in [c for c in q.cases(0) if c.visible and c.name in names]:
                got = session.call(
                    q.function, case.args, dict(case.kwargs), torch_inputs=q.torch_inputs
                )
                if got.ok:
                    rows.append(got.value)
                elif got.failure is not None and "no function named" in got.failure.message:
                    rows.append(None)
                else:
                    rows.append(
                        "raised " + _raised_type(got.failure.message if got.failure else "")
                    )
            out[q.function] = rows
    finally:
        session.close()
    return out, located


def _raised_type(message: str) -> str:
    """`raised ZeroDivisionError: …` (the grader's words) -> `ZeroDivisionError`."""
    words = message.replace("`", " ").split()
    return next(
        (w.rstrip(":") for w in words if w.rstrip(":").endswith(("Error", "Exception"))), message
    )


# The kernel runs numpy's BLAS with every core, the sandbox's worker with one thread: a matrix
# product or an SVD then rounds differently in the last bits on some CPUs (seen on an AMD EPYC,
# where the entries that should be 0 came out as 2.9e-16 in one and another tiny number in the
# other). Floats agree to 1e-12, everything else exactly.
FLOAT_AGREEMENT = 1e-12


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            return bool(
                np.allclose(a, b, rtol=FLOAT_AGREEMENT, atol=FLOAT_AGREEMENT, equal_nan=True)
            )
        return np.array_equal(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


# Functions whose columns are singular vectors, each defined only up to its sign: LAPACK picks
# the sign, and with another thread count it may pick the other one (the grader accepts either).
SIGN_FREE = {"svd_embeddings"}


def _signed(x: Any) -> Any:
    """Each column of a 2-D float array with its largest entry made positive."""
    if not (isinstance(x, np.ndarray) and x.ndim == 2 and x.dtype.kind == "f"):
        return x
    rows = np.argmax(np.abs(x), axis=0)
    return x * np.where(x[rows, np.arange(x.shape[1])] < 0, -1.0, 1.0)


# Globals a kernel has that seqgrade leaves out on purpose (docs/notebooks.md).
KERNEL_ONLY = {"In", "Out", "exit", "quit", "get_ipython", "open"}


@pytest.mark.parametrize(("name", "aid", "nb"), CORPUS, ids=[c[0] for c in CORPUS])
def test_seqgrade_defines_and_returns_what_a_kernel_does(
    name: str, aid: str, nb: nbformat.NotebookNode, tmp_path: Path
):
    kernel, kernel_names, executed = _kernel_run(aid, nb, tmp_path)
    ours, located = _seqgrade_run(aid, nb)
    assert set(kernel) == set(ours)
    for function in kernel:
        assert len(kernel[function]) == len(ours[function]), function
        for k, o in zip(kernel[function], ours[function]):
            if function in SIGN_FREE:
                k, o = _signed(k), _signed(o)
            assert _same(k, o), (function, k, o)
    defined = {f for f, rows in ours.items() if rows and rows[0] is not None}
    assert defined == {q.function for q in registry.load(aid).questions if hasattr(q, "function")}
    notes = " ".join(located.notes)
    # The differences by design, each visible in the kernel's run and named when grading.
    if name == "a4-mid-work":
        assert _errored(executed, "ZeroDivisionError")
        assert _errored(executed, "NameError") and "helper_defined_later" in kernel_names
        assert _errored(executed, "StdinNotImplementedError")  # no one at the keyboard
    if name == "a4-training":
        assert "trained" in kernel_names  # the kernel runs it to the end; grading stops it
        problems = " ".join(located.notebook.cell_problems)
        assert "code cell 4 (`import time`) was stopped after" in problems, problems
    if name == "a4-everyday":
        assert "IPython magics and shell escapes are not run when grading" in notes


def _errored(nb: nbformat.NotebookNode, ename: str) -> bool:
    return any(
        o.get("output_type") == "error" and o.get("ename") == ename
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )
