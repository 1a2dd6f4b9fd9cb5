"""Issue 15 item 2 and issue 17: library bans that hold, and only name exact entry points.

Student-style files (the instructor's solution with some functions rewritten, as a student
would) graded end to end. A shortcut reached by a computed name is refused while the
question that bans it runs, whatever the file does to the worker's own state; it costs the
questions whose function reaches it, naming the call, the function and the line; the
constructs that reach it are flagged "needs review". Correct code that only looks like a
shortcut (`torch.no_grad()`, a layer object's own `.backward()`, an LSTM cell built from
`torch.nn.Sigmoid()` modules) keeps full marks.
"""

from __future__ import annotations

import dataclasses

import pytest

from grader import sandbox
from grader.course import registry
from grader.course.content import solution_dir
from grader.engine import shortcuts
from grader.engine.grade import grade_submission
from grader.questions import CodeQuestion

LIMITS = sandbox.Limits(call_seconds=20.0, submission_seconds=180.0)

# ----------------------------------------------------------------------------- student files

AUTOGRAD_BY_COMPUTED_NAME = """
import importlib as _importlib

_t = _importlib.import_module("to" + "rch")


def bptt_final_state(X, W_x, W_h, b_h, y, h0=None):
    params = {k: _t.tensor(np.asarray(v, dtype=np.float64), requires_grad=True)
              for k, v in (("W_x", W_x), ("W_h", W_h), ("b_h", b_h))}
    H = params["W_h"].shape[0]
    h = _t.zeros(H, dtype=_t.float64) if h0 is None else _t.as_tensor(np.asarray(h0, dtype=np.float64))
    for x in _t.as_tensor(np.asarray(X, dtype=np.float64)):
        h = _t.tanh(x @ params["W_x"].T + h @ params["W_h"].T + params["b_h"])
    loss = 0.5 * ((h - _t.as_tensor(np.asarray(y, dtype=np.float64))) ** 2).sum()
    getattr(loss, "back" + "ward")()
    return {k: v.grad.numpy() for k, v in params.items()}
"""

SWITCH_OFF_THE_CHECKS = (
    """
import sys as _sys

_main = _sys.modules["__main__"]
_main._Tripwires = type("_Tripwires", (), {})
_sys.modules["__main__"]._Tripwires._hit = lambda *a: None
for _name in ("_hit", "_call", "_hits_json", "_make_guard", "write_message", "_import_student", "_serve"):
    try:
        setattr(_main, _name, lambda *a, **k: None)
    except Exception:
        pass
for _method in ("begin", "end", "bypassed", "install_loaded", "watches"):
    try:
        setattr(_main._ShortcutGuard, _method, lambda *a, **k: True)
    except Exception:
        pass
"""
    + AUTOGRAD_BY_COMPUTED_NAME
)

IMPORT_HOOK_REMOVED = """
import importlib as _importlib
import sys as _sys

_sys.meta_path[:] = [f for f in _sys.meta_path if "Hook" not in type(f).__name__]
_t = _importlib.import_module("to" + "rch")
""" + AUTOGRAD_BY_COMPUTED_NAME.split("\n", 4)[4]

IMPORT_HOOK_REMOVED_AND_MODULES_DROPPED = IMPORT_HOOK_REMOVED.replace(
    '_t = _importlib.import_module("to" + "rch")\n',
    '_t = _importlib.import_module("to" + "rch")\n'
    'for _name in [n for n in _sys.modules if n == "torch" or n.startswith("torch.")]:\n'
    "    del _sys.modules[_name]\n",
)

MANUAL_BPTT_UNDER_NO_GRAD = """
import torch


def bptt_final_state(X, W_x, W_h, b_h, y, h0=None):
    with torch.no_grad():
        X = torch.as_tensor(np.asarray(X, dtype=np.float64))
        W_x, W_h, b_h = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (W_x, W_h, b_h))
        h = torch.zeros(W_h.shape[0], dtype=torch.float64) if h0 is None else torch.as_tensor(np.asarray(h0, dtype=np.float64))
        states = [h]
        for x in X:
            h = torch.tanh(x @ W_x.T + h @ W_h.T + b_h)
            states.append(h)
        g_h = h - torch.as_tensor(np.asarray(y, dtype=np.float64))  # dL/dh_{T-1}
        g_Wx, g_Wh, g_b = torch.zeros_like(W_x), torch.zeros_like(W_h), torch.zeros_like(b_h)
        for t in range(len(X) - 1, -1, -1):
            g_z = g_h * (1 - states[t + 1] ** 2)
            g_Wx += torch.outer(g_z, X[t])
            g_Wh += torch.outer(g_z, states[t])
            g_b += g_z
            g_h = g_z @ W_h
    return {"W_x": g_Wx, "W_h": g_Wh, "b_h": g_b}
"""

NUMPY_LAYER_WITH_ITS_OWN_BACKWARD = """
import torch  # the file uses torch elsewhere; the layer below is numpy


class TanhRNNLayer:
    def __init__(self, W_x, W_h, b_h):
        self.W_x, self.W_h, self.b_h = (np.asarray(a, dtype=np.float64) for a in (W_x, W_h, b_h))

    def forward(self, X, h0=None):
        self.X = np.asarray(X, dtype=np.float64)
        h = np.zeros(self.W_h.shape[0]) if h0 is None else np.asarray(h0, dtype=np.float64)
        self.states = [h]
        for x in self.X:
            h = np.tanh(x @ self.W_x.T + h @ self.W_h.T + self.b_h)
            self.states.append(h)
        return h

    def backward(self, g_h):
        g_Wx, g_Wh, g_b = np.zeros_like(self.W_x), np.zeros_like(self.W_h), np.zeros_like(self.b_h)
        for t in range(len(self.X) - 1, -1, -1):
            g_z = g_h * (1 - self.states[t + 1] ** 2)
            g_Wx += np.outer(g_z, self.X[t])
            g_Wh += np.outer(g_z, self.states[t])
            g_b += g_z
            g_h = g_z @ self.W_h
        return {"W_x": g_Wx, "W_h": g_Wh, "b_h": g_b}


def bptt_final_state(X, W_x, W_h, b_h, y, h0=None):
    layer = TanhRNNLayer(W_x, W_h, b_h)
    h = layer.forward(X, h0)
    return layer.backward(h - np.asarray(y, dtype=np.float64))
"""

LSTM_FROM_ACTIVATION_MODULES = """
import torch

_sigmoid_module = torch.nn.Sigmoid()
_tanh_module = torch.nn.Tanh()


def lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    x, h, c, W_ih, W_hh, b_ih, b_hh = (torch.as_tensor(np.asarray(a, dtype=np.float64))
                                       for a in (x, h, c, weight_ih, weight_hh, bias_ih, bias_hh))
    i, f, g, o = (W_ih @ x + b_ih + W_hh @ h + b_hh).chunk(4)
    c_new = _sigmoid_module(f) * c + _sigmoid_module(i) * _tanh_module(g)
    return _sigmoid_module(o) * _tanh_module(c_new), c_new
"""

LAYER_NORM_BY_LIBRARY = """
import torch
import torch.nn.functional as F


def layer_norm(x, gamma, beta, eps=1e-5):
    x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    gamma, beta = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (gamma, beta))
    return F.layer_norm(x, x.shape[-1:], gamma, beta, eps).numpy()
"""

LAYER_NORM_BY_COMPUTED_NAME = """
import importlib


def layer_norm(x, gamma, beta, eps=1e-5):
    torch = importlib.import_module("torch")
    functional = importlib.import_module("torch.nn.functional")
    x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    gamma, beta = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (gamma, beta))
    norm = getattr(functional, "layer_" + "norm")
    return norm(x, x.shape[-1:], gamma, beta, eps).numpy()
"""

LAYER_NORM_ONE_LAYER_DOWN = """
import torch


def layer_norm(x, gamma, beta, eps=1e-5):
    x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    gamma, beta = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (gamma, beta))
    return torch.layer_norm(x, x.shape[-1:], gamma, beta, eps).numpy()
"""


# ----------------------------------------------------------------------------- helpers


def grade(tmp_path, aid: str, extra: str, *, lift_bans: bool = False):
    a = registry.load(aid)
    if lift_bans:
        a = dataclasses.replace(
            a,
            questions=tuple(
                dataclasses.replace(q, forbidden=()) if isinstance(q, CodeQuestion) else q
                for q in a.questions
            ),
        )
    a = dataclasses.replace(
        a, questions=tuple(q for q in a.questions if isinstance(q, CodeQuestion))
    )
    folder = tmp_path / ("lifted" if lift_bans else "sub")
    folder.mkdir()
    (folder / a.code_file).write_text(
        (solution_dir(a.id) / a.code_file).read_text() + "\n\n" + extra
    )
    report = grade_submission(folder, a, limits=LIMITS)
    assert not report.grader_error, report.grader_error
    return {q.question_id: q for q in report.questions}


# The a4 questions whose solution calls the student's own `layer_norm` (the blocks, and the
# GPT forward pass of a4, x = x + attn(ln_1(x)) ...).
LAYER_NORM_USERS = {"a4.layer_norm", "a4.encoder_block", "a4.decoder_block", "a4.gpt_forward"}


def lost(results) -> set[str]:
    return {qid for qid, q in results.items() if q.score < q.max_score}


# ----------------------------------------------------------------------------- bans that hold


@pytest.mark.slow
def test_autograd_reached_by_computed_names_is_refused(tmp_path):
    results = grade(tmp_path, "a2", AUTOGRAD_BY_COMPUTED_NAME)
    assert lost(results) == {"a2.bptt_final_state"}
    q = results["a2.bptt_final_state"]
    assert q.score == 0 and q.misconceptions == ["uses-library-shortcut"]
    assert (
        "torch.Tensor.backward" in q.feedback
        and "`bptt_final_state`" in q.feedback
        and "line" in q.feedback
    )
    assert "Needs review" in q.feedback and "import importlib" in q.feedback
    assert any("import importlib" in item for item in q.needs_review)  # for the class report
    # the control: without the ban the same code is right (it is the ban that costs it)
    assert lost(grade(tmp_path, "a2", AUTOGRAD_BY_COMPUTED_NAME, lift_bans=True)) == set()


@pytest.mark.slow
def test_patching_the_workers_names_switches_nothing_off(tmp_path):
    results = grade(tmp_path, "a2", SWITCH_OFF_THE_CHECKS)
    assert lost(results) == {"a2.bptt_final_state"}
    q = results["a2.bptt_final_state"]
    assert q.misconceptions == ["uses-library-shortcut"] and "torch.Tensor.backward" in q.feedback
    assert "_Tripwires" in q.feedback and "Needs review" in q.feedback


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra",
    [IMPORT_HOOK_REMOVED, IMPORT_HOOK_REMOVED_AND_MODULES_DROPPED],
    ids=["hook_removed", "and_modules_dropped"],
)
def test_a_library_loaded_around_the_import_hook_costs_every_banned_question(tmp_path, extra):
    assert "del _sys.modules" in IMPORT_HOOK_REMOVED_AND_MODULES_DROPPED
    results = grade(tmp_path, "a2", extra)
    assert lost(results) == {"a2.bptt_final_state", "a2.bptt_sequence_ce", "a2.clip_by_global_norm"}
    assert all(
        "needs review" in results[qid].feedback and results[qid].needs_review
        for qid in lost(results)
    )


@pytest.mark.slow
def test_a_shortcut_costs_the_questions_that_reach_it_naming_call_function_and_line(tmp_path):
    results = grade(tmp_path, "a4", LAYER_NORM_BY_LIBRARY)
    assert lost(results) == LAYER_NORM_USERS & set(results)
    assert {"a4.sdpa", "a4.mha", "a4.rms_norm", "a4.positions"} <= set(
        results
    )  # these keep their marks
    own = results["a4.layer_norm"].feedback
    assert "`layer_norm` uses `torch.nn.functional.layer_norm` (line" in own
    assert "through your `layer_norm`" in results["a4.encoder_block"].feedback


@pytest.mark.slow
def test_a_shortcut_by_computed_name_is_refused_where_it_runs(tmp_path):
    results = grade(tmp_path, "a4", LAYER_NORM_BY_COMPUTED_NAME)
    assert lost(results) == LAYER_NORM_USERS & set(results)
    q = results["a4.layer_norm"]
    assert (
        q.misconceptions == ["uses-library-shortcut"]
        and "torch.nn.functional.layer_norm" in q.feedback
    )
    assert "`getattr` with a computed name" in q.feedback


@pytest.mark.slow
def test_a_banned_function_s_native_twin_is_the_same_shortcut(tmp_path):
    """`torch.layer_norm` is what `torch.nn.functional.layer_norm` runs: banned with it."""
    results = grade(tmp_path, "a4", LAYER_NORM_ONE_LAYER_DOWN)
    assert lost(results) == LAYER_NORM_USERS & set(results)
    q = results["a4.layer_norm"]
    assert q.misconceptions == ["uses-library-shortcut"] and "line" in q.feedback


# ----------------------------------------------------------------------------- issue 17: not shortcuts


@pytest.mark.slow
@pytest.mark.parametrize(
    "aid, extra",
    [
        ("a2", MANUAL_BPTT_UNDER_NO_GRAD),
        ("a2", NUMPY_LAYER_WITH_ITS_OWN_BACKWARD),
        ("a3", LSTM_FROM_ACTIVATION_MODULES),
    ],
    ids=["no_grad", "own_backward", "activation_modules"],
)
def test_correct_code_that_only_looks_like_a_shortcut_keeps_full_marks(tmp_path, aid, extra):
    results = grade(tmp_path, aid, extra)
    assert lost(results) == set(), {qid: results[qid].feedback[:400] for qid in lost(results)}
    assert not any("Needs review" in q.feedback for q in results.values())


# ----------------------------------------------------------------------------- the source scan alone

NO_AUTOGRAD = ("torch.Tensor.backward", "torch.autograd.*", "torch.func.*")
A4 = ("torch.nn.functional.layer_norm", "torch.nn.LayerNorm", "torch.nn.Transformer*")


CLIP_IN_A_HELPER_MODULE = """import numpy as np
import torch


def clip_by_global_norm(grads, max_norm):
    params = []
    for k, g in grads.items():
        p = torch.nn.Parameter(torch.zeros(np.shape(g), dtype=torch.float64))
        p.grad = torch.tensor(np.asarray(g, dtype=np.float64))
        params.append((k, p))
    torch.nn.utils.clip_grad_norm_([p for _, p in params], max_norm)
    return {k: p.grad.numpy() for k, p in params}
"""


@pytest.mark.slow
def test_a_shortcut_in_the_students_own_module_is_read_where_it_is_written(tmp_path):
    """The code file imports the graded function from the student's `helpers.py`: the source
    scan reads that module (the call, the function and helpers.py's line, before any call), as
    it reads the code file; the held-out harness's packed submissions rely on it."""
    a = registry.load("a2")
    q = a.question("a2.clip_by_global_norm")
    folder = tmp_path / "sub"
    folder.mkdir()
    solution = (solution_dir(a.id) / a.code_file).read_text()
    (folder / a.code_file).write_text(solution + "\n\nfrom helpers import clip_by_global_norm\n")
    (folder / "helpers.py").write_text(CLIP_IN_A_HELPER_MODULE)
    report = grade_submission(folder, dataclasses.replace(a, questions=(q,)), limits=LIMITS)
    (r,) = report.questions
    assert r.score == 0 and r.misconceptions == ["uses-library-shortcut"], r.feedback
    line = CLIP_IN_A_HELPER_MODULE.splitlines().index(
        "    torch.nn.utils.clip_grad_norm_([p for _, p in params], max_norm)"
    )
    assert (
        f"`clip_by_global_norm` uses `torch.nn.utils.clip_grad_norm_` (`helpers.py` line {line + 1})"
        in r.feedback
    ), r.feedback


def test_scan_follows_helpers_and_module_level_aliases_but_not_unrelated_functions():
    src = (
        "import torch.nn.functional as F\n"
        "norm = F.layer_norm\n"
        "def _helper(x):\n    return norm(x, x.shape[-1:])\n"
        "def block(x):\n    return _helper(x) + 1\n"
        "def positions(T):\n    return T\n"
    )
    found = shortcuts.scan(src, A4, "block")
    assert [(f.name, f.line) for f in found] == [("torch.nn.functional.layer_norm", 2)]
    assert shortcuts.scan(src, A4, "positions") == []
    assert "through your" not in shortcuts.describe(
        found, "block"
    )  # a module-level name, not a helper
    helper = shortcuts.scan(
        "import torch\ndef _h(x):\n    return torch.nn.LayerNorm(3)(x)\n"
        "def block(x):\n    return _h(x)\n",
        A4,
        "block",
    )
    assert shortcuts.describe(helper, "block") == (
        "`block` reaches `torch.nn.LayerNorm` through your `_h` (line 3)"
    )


def test_scan_names_exact_entry_points_only():
    no_grad = "import torch\ndef f(x):\n    with torch.no_grad():\n        return x * 2\n"
    assert shortcuts.scan(no_grad, NO_AUTOGRAD, "f") == []
    assert (
        shortcuts.scan(no_grad.replace("torch.no_grad", "torch.autograd.no_grad"), NO_AUTOGRAD, "f")
        == []
    )
    own = (
        "import torch\nclass L:\n    def backward(self, g):\n        return g\n"
        "def f(x):\n    layer = L()\n    return layer.backward(x)\n"
    )
    assert shortcuts.scan(own, NO_AUTOGRAD, "f") == []
    numpy_only = "def f(layer, x):\n    return layer.backward(x)\n"
    assert shortcuts.scan(numpy_only, NO_AUTOGRAD, "f") == []
    tensor = "import torch\ndef f(x):\n    loss = (x ** 2).sum()\n    loss.backward()\n    return x.grad\n"
    assert [(f.name, f.line) for f in shortcuts.scan(tensor, NO_AUTOGRAD, "f")] == [
        ("torch.Tensor.backward", 4)
    ]
    grad = "from torch.autograd import grad\ndef f(x):\n    return grad(x, x)\n"
    assert [f.name for f in shortcuts.scan(grad, NO_AUTOGRAD, "f")] == ["torch.autograd.grad"]


@pytest.mark.parametrize(
    "line, what",
    [
        ("importlib.import_module('to' + 'rch')", "import importlib"),
        ("getattr(F, 'layer_' + 'norm')", "`getattr` with a computed name"),
        ("sys.modules['torch']", "`.modules`"),
        ("exec('import torch')", "`exec`"),
        ("__import__('torch')", "`__import__`"),
        ("sys.modules['__main__']._Tripwires", "_Tripwires"),
        ("f.__closure__[0].cell_contents", "`.__closure__`"),
        ("__import__('subprocess').run(['python', '-c', 'import torch'])", "`__import__`"),
        ("os.system('python -c \\'import torch\\'')", "`os.system` (a new process)"),
        ("x.grad_fn(x)", "`.grad_fn`"),
        ("F.torch.autograd.Variable._execution_engine.run_backward", "`._execution_engine`"),
    ],
)
def test_review_flags_computed_access(line, what):
    src = f"import importlib, os, sys\nimport torch.nn.functional as F\ndef f(x):\n    return {line}\n"
    assert any(what in finding.name for finding in shortcuts.review(src, "f")), shortcuts.review(
        src, "f"
    )


def test_review_flags_a_fresh_interpreter():
    src = "import subprocess\ndef f(x):\n    return subprocess.run(['python', '-c', 'print(1)'])\n"
    assert [f.name for f in shortcuts.review(src, "f")] == ["`import subprocess`"]


def test_review_is_quiet_on_ordinary_code():
    src = (solution_dir("a4_transformer") / "transformer.py").read_text()
    assert shortcuts.review(src, "encoder_block") == []
    assert (
        shortcuts.review("import numpy as np\ndef f(x):\n    return getattr(x, 'shape')\n", "f")
        == []
    )
    main_block = "def f(x):\n    return x\n\nif __name__ == '__main__':\n    print(f(1))\n"
    assert shortcuts.review(main_block, "f") == []


AUTOGRAD_GRAD_AFTER_REBINDING_THE_EXEMPTIONS = """
import importlib as _importlib
import sys as _sys

# The worker's list of names under a banned module that are not shortcuts: rebinding it before
# torch is imported must not exempt torch.autograd.grad from the `torch.autograd.*` ban.
_sys.modules["__main__"]._NOT_SHORTCUTS = frozenset({"grad", "backward", "functional"})
_t = _importlib.import_module("to" + "rch")
_grad = getattr(_importlib.import_module("torch.autograd"), "grad")


def bptt_final_state(X, W_x, W_h, b_h, y, h0=None):
    params = [_t.tensor(np.asarray(v, dtype=np.float64), requires_grad=True) for v in (W_x, W_h, b_h)]
    H = params[1].shape[0]
    h = _t.zeros(H, dtype=_t.float64) if h0 is None else _t.as_tensor(np.asarray(h0, dtype=np.float64))
    for x in _t.as_tensor(np.asarray(X, dtype=np.float64)):
        h = _t.tanh(x @ params[0].T + h @ params[1].T + params[2])
    loss = 0.5 * ((h - _t.as_tensor(np.asarray(y, dtype=np.float64))) ** 2).sum()
    g = _grad(loss, params)
    return {k: v.numpy() for k, v in zip(("W_x", "W_h", "b_h"), g)}
"""


@pytest.mark.slow
def test_rebinding_the_workers_exemptions_switches_nothing_off(tmp_path):
    results = grade(tmp_path, "a2", AUTOGRAD_GRAD_AFTER_REBINDING_THE_EXEMPTIONS)
    assert "a2.bptt_final_state" in lost(results)
    q = results["a2.bptt_final_state"]
    assert q.score == 0 and q.misconceptions == ["uses-library-shortcut"], q.feedback
    # the control: without the ban the same code is right (it is the ban that costs it)
    lifted = grade(tmp_path, "a2", AUTOGRAD_GRAD_AFTER_REBINDING_THE_EXEMPTIONS, lift_bans=True)
    assert "a2.bptt_final_state" not in lost(lifted)


FAKE_LIBRARY_PROBE = """
import fakelib

NAMES = {names!r}


def probe():
    refused = []
    for name in NAMES:
        try:
            getattr(fakelib, name)()
        except BaseException as exc:
            if type(exc).__name__ != "ShortcutRefused":
                raise
            refused.append(name)
    return refused
"""


def test_the_worker_refuses_exactly_what_the_source_scan_bans():
    """One list of exemptions (`shortcuts.NOT_SHORTCUTS`), sent to the worker at its start:
    under a `fakelib.*` ban the worker refuses a name exactly when the scan matches it."""
    import inspect

    from grader.sandbox import worker
    from grader.sandbox.session import WorkerSession

    exempt = sorted(shortcuts.NOT_SHORTCUTS)
    names = [*exempt, "compute", "no_gradient", "grad", "Variables"]
    fakelib = "".join(f"def {n}():\n    return 1\n\n" for n in names)
    files = {
        "probe.py": FAKE_LIBRARY_PROBE.format(names=names).encode(),
        "fakelib.py": fakelib.encode(),
    }
    session = WorkerSession(
        files,
        "probe",
        tripwires=("fakelib.*",),
        not_shortcuts=tuple(exempt),
        limits=sandbox.Limits(call_seconds=10.0, submission_seconds=60.0),
    )
    session.start()
    try:
        outcome = session.call("probe", (), {}, banned=("fakelib.*",))
    finally:
        session.close()
    assert outcome.ok, outcome.failure
    scanned = [n for n in names if shortcuts.matches(f"fakelib.{n}", ["fakelib.*"])]
    assert outcome.value == scanned == ["compute", "no_gradient", "grad", "Variables"]
    assert not set(outcome.value) & set(exempt)
    # the worker holds no list of its own to drift from
    source = inspect.getsource(worker)
    assert not [n for n in exempt if f'"{n}"' in source]


def test_the_worker_knows_the_codecs_shipped_name():
    from grader.sandbox import wire, worker

    assert worker.WIRE_FILE == wire.WIRE_FILE
