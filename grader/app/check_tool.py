"""`check.py`, the handouts' check-as-you-go tool: a question's visible cases, judged as the grader does.

The tool is one standalone file (the standard library and numpy; torch only for the a5 inputs),
shipped in the `.py` handout (`python check.py layer_norm`) and written by the notebook handout's
`%%writefile check.py` cell (`check("layer_norm")`, `check_all()`). It holds:

- the grader's own comparison code, copied at bundle time from `grader.engine.checks` (with the
  `Tolerance` record it imports) and `grader.engine.code.case_line`, so a visible case passes or
  fails with the same words as in the grader's feedback;
- each code question's visible cases: their arguments and the reference's output on them,
  encoded as the grader sends them to the sandbox (`grader.sandbox.session.to_wire`), with
  arrays as lists. Visible cases are the ones whose inputs and expected outputs the feedback shows
  anyway; no hidden case, reference function, mutant or solution is in the file.

Questions judged by a custom judge (properties over all their outputs, e.g. random procedures)
are only run on their visible case: check() says it ran and what it returned.
"""

from __future__ import annotations

import inspect
import io
import json
from typing import Any

import numpy as np

from grader import records as report_records
from grader.course import registry
from grader.engine import checks, code
from grader.engine.trusted import run_trusted
from grader.questions import Case, CodeQuestion, Tolerance
from grader.sandbox.session import to_wire

CHECK_FILE = "check.py"


def _lists(data: Any, blobs: list[bytes]) -> Any:
    """Wire data with every `{"__nd__": i}` blob replaced by its dtype, shape and entries."""
    if isinstance(data, list):
        return [_lists(v, blobs) for v in data]
    if isinstance(data, dict) and len(data) != 1:  # a special argument's own spec (`__lm__`)
        return {k: _lists(v, blobs) for k, v in data.items()}
    if isinstance(data, dict):
        ((tag, inner),) = data.items()
        if tag == "__nd__":
            a = np.load(io.BytesIO(blobs[inner]), allow_pickle=False)
            return {"__nd__": [a.dtype.str, list(a.shape), a.ravel().tolist()]}
        return {tag: _lists(inner, blobs)}
    return data


def _wire(value: Any) -> Any:
    blobs: list[bytes] = []
    return _lists(to_wire(value, blobs), blobs)


def _visible(q: CodeQuestion) -> list[Case]:
    """The question's visible cases that are the same for every variant (compared on another
    seed, inputs included): what the tool checks is what every student's grading runs."""

    def key(c: Case) -> str:
        return json.dumps([c.name, _wire(tuple(c.args)), _wire(dict(c.kwargs))], sort_keys=True)

    other = {key(c) for c in q.cases(0x5EED) if c.visible}
    return [c for c in q.cases(0) if c.visible and key(c) in other]


def cases_payload(assignment_id: str) -> list[dict[str, Any]]:
    """Every code question's visible cases with the reference's output on them (plain JSON)."""
    a = registry.load(registry.resolve_id(assignment_id))
    out: list[dict[str, Any]] = []
    for q in a.questions:
        if not isinstance(q, CodeQuestion):
            continue
        cases = []
        for case in _visible(q):
            entry = {"name": case.name, "args": _wire(tuple(case.args))}
            entry["kwargs"] = _wire(dict(case.kwargs))
            if q.custom is None:
                entry["want"] = _wire(run_trusted(q.reference, case))
            cases.append(entry)
        out.append(
            {
                "id": q.id,
                "function": q.function,
                "title": q.title,
                "rtol": q.tolerance.rtol,
                "atol": q.tolerance.atol,
                "exact": q.integer,
                "names": list(q.output_names),
                "torch": q.torch_inputs,
                "custom": q.custom is not None,
                "cases": cases,
            }
        )
    return out


def _grader_code() -> str:
    """The grader's comparison and feedback code as one block: `Tolerance`, `checks`, the
    feedback records and their rendering (`grader.records`), and how a visible wrong case is
    told (`grader.engine.code.case_line` and what it calls)."""
    body = inspect.getsource(checks)
    body = body.replace("from __future__ import annotations\n", "")
    body = body.replace("from grader.questions import Tolerance\n", "")
    head, _, rest = body.partition('"""\n\n')  # checks' docstring, then its code
    tolerance = inspect.getsource(Tolerance)
    records = inspect.getsource(report_records).replace("from __future__ import annotations\n", "")
    told = [
        inspect.getsource(f)
        for f in (
            code._reason_category,
            code._output_name,
            code._inputs,
            code._mismatch_record,
            code.case_line,
        )
    ]
    return "\n".join(
        [
            f"# ---- grader.engine.checks (seqgrade {_version()}), copied verbatim ----",
            "from dataclasses import dataclass, replace",
            "",
            "",
            tolerance,
            rest if rest else body,
            "",
            "# ---- grader.records, copied verbatim ----",
            records,
            "",
            "# ---- grader.engine.code's words for a visible case, copied verbatim ----",
            "Case = object  # the copied functions name it in annotations",
            *(
                f"{name} = {value!r}"  # the named limits the copied functions read
                for name, value in vars(code).items()
                if name.isupper() and type(value) in (int, float)
            ),
            *told,
        ]
    )


def _version() -> str:
    from grader import __version__

    return __version__


_RUNNER = r'''
# ---- the check-as-you-go runner ----
import sys as _sys
import traceback as _traceback

_QUESTIONS = json.loads(_PAYLOAD)


def _decode(data, as_torch=False):
    """The grader's wire form back to Python values, as the sandbox gives them to your code."""
    if isinstance(data, list):
        return [_decode(v, as_torch) for v in data]
    if not isinstance(data, dict):
        return data
    ((tag, inner),) = data.items()
    if tag == "__nd__":
        dtype, shape, flat = inner
        a = np.array(flat, dtype=np.dtype(dtype)).reshape(shape)
        if as_torch:
            # By name: a submission folder that holds this file is not taken for one using torch.
            import importlib

            return importlib.import_module("torch").from_numpy(a)
        return a
    if tag == "__tuple__":
        return tuple(_decode(v, as_torch) for v in inner)
    if tag == "__dict__":
        return {_decode(k): _decode(v, as_torch) for k, v in inner}
    if tag == "__rng__":
        return np.random.default_rng(inner)
    if tag == "__lm__":
        table = {tuple(int(t) for t in p): np.asarray(r, dtype=np.float64) for p, r in inner["table"]}
        default = np.asarray(inner["default"], dtype=np.float64)
        return lambda prefix: table.get(tuple(int(t) for t in prefix), default).copy()
    raise ValueError(f"unknown tag {tag!r}")


def _as_returned(value, depth=0):
    """Your return value as the grader receives it: tensors as numpy arrays, numpy scalars as
    Python numbers, tuples, lists and dicts kept; anything else cannot be graded."""
    if depth > 64:
        raise TypeError("a value nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        t = value.detach().cpu()
        if str(t.dtype) in ("torch.bfloat16", "torch.float16"):
            t = t.float()
        return np.array(t.numpy(), copy=True)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"an array of dtype {value.dtype} (expected numbers)")
        return np.array(value, copy=True)
    if isinstance(value, tuple):
        return tuple(_as_returned(v, depth + 1) for v in value)
    if isinstance(value, list):
        return [_as_returned(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {_as_returned(k, depth + 1): _as_returned(v, depth + 1) for k, v in value.items()}
    raise TypeError(f"an object of type {type(value).__name__}")


def _find(question):
    key = str(question).strip()
    for q in _QUESTIONS:
        if key in (q["id"], q["function"], q["id"].split(".", 1)[-1]):
            return q
    names = ", ".join(q["function"] for q in _QUESTIONS)
    raise KeyError(f"no question {key!r}: the questions are {names}")


class _Case:
    """What case_line reads of a case: its name, its arguments, and that it is visible."""

    def __init__(self, name, args=(), kwargs=None):
        self.name, self.args, self.kwargs, self.visible = name, args, kwargs or {}, True


def _raised(exc):
    frames = [f for f in _traceback.extract_tb(exc.__traceback__) if f.filename != __file__]
    where = f" at line {frames[-1].lineno}: `{(frames[-1].line or '').strip()}`" if frames else ""
    return f"raised `{type(exc).__name__}: {exc}`{where}"


def _run_question(q, functions):
    """(passed, lines): the question's visible cases on `functions` (a namespace)."""
    fn = functions.get(q["function"])
    if not callable(fn):
        return False, [f"- ✘ no function named `{q['function']}` is defined yet"]
    tol = Tolerance(rtol=q["rtol"], atol=q["atol"])
    lines, passed = [], True
    for case in q["cases"]:
        args = _decode(case["args"], q["torch"])
        kwargs = _decode(case["kwargs"], q["torch"])
        try:
            got = _as_returned(fn(*args, **kwargs))
        except TypeError as exc:
            if "object of type" in str(exc) or "dtype" in str(exc):
                lines.append(f"- ✘ {case['name']}: returned {exc}")
            else:
                lines.append(f"- ✘ {case['name']}: {_raised(exc)}")
            passed = False
            continue
        except Exception as exc:  # noqa: BLE001 - your function's error, shown as the grader does
            lines.append(f"- ✘ {case['name']}: {_raised(exc)}")
            passed = False
            continue
        if q["custom"]:
            lines.append(
                f"- ✔ {case['name']}: ran and returned {preview(got)} (this question is judged on "
                "properties of all its outputs; the grader checks them on its own cases)"
            )
            continue
        want = _decode(case["want"])
        mismatches = compare(got, want, tol, exact=q["exact"], names=tuple(q["names"]))
        if mismatches:
            passed = False
            line = case_line(_Case(case["name"], args, kwargs), mismatches, got, want)
            lines.append(line)
        else:
            lines.append(f"- ✔ {case['name']}")
    return passed, lines


def _caller_namespace(depth):
    frame = _sys._getframe(depth + 1)
    return frame.f_globals


def check(question, functions=None):
    """Run one question's visible cases (by function name or question id) on your functions;
    prints ✔/✘ with the grader's words and returns whether they all passed."""
    q = _find(question)
    namespace = functions if functions is not None else _caller_namespace(1)
    if not isinstance(namespace, dict):
        namespace = vars(namespace)
    passed, lines = _run_question(q, namespace)
    mark = "✔" if passed else "✘"
    print(f"{mark} {q['function']} ({q['id']}): {q['title']}")
    print("\n".join(lines))
    return passed


def check_all(functions=None):
    """check() on every question; returns the number that passed."""
    namespace = functions if functions is not None else _caller_namespace(1)
    n = 0
    for q in _QUESTIONS:
        n += bool(check(q["id"], namespace))
        print()
    print(f"{n} of {len(_QUESTIONS)} questions pass their visible cases "
          "(the grader also runs hidden cases)")
    return n


def main(argv):
    """`python check.py [QUESTION ...]`: the questions' visible cases on the code file."""
    import importlib

    _sys.path.insert(0, ".")
    try:
        module = importlib.import_module(_STEM)
    except Exception as exc:  # noqa: BLE001 - the student's import error, shown
        print(f"✘ `{_STEM}.py` could not be imported: {_raised(exc)}")
        return 1
    if len(argv) > 1:
        results = [check(q, module) for q in argv[1:]]
        return 0 if all(results) else 1
    return 0 if check_all(module) == len(_QUESTIONS) else 1


if __name__ == "__main__":
    _sys.exit(main(_sys.argv))
'''


def source(assignment_id: str) -> str:
    """The text of the assignment's `check.py`."""
    aid = registry.resolve_id(assignment_id)
    a = registry.load(aid)
    stem = (a.code_file or "").removesuffix(".py")
    payload = json.dumps(cases_payload(aid), separators=(",", ":"), allow_nan=True)
    header = (
        f'"""Check as you go ({aid}): each question\'s visible cases, judged with the grader\'s own\n'
        "comparison and tolerances. Passing them is a good sign, not a guarantee: the grader also\n"
        "runs hidden cases.\n\n"
        f"    python check.py layer_norm     # one question (function name or question id)\n"
        f"    python check.py                # every question\n\n"
        'In a notebook: `from check import check, check_all`, then `check("layer_norm")`.\n'
        "Standalone: the standard library and numpy only.\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "import json\n\n"
        "import numpy as np\n\n"
        f"_STEM = {stem!r}\n"
        f"_PAYLOAD = {payload!r}\n\n"
    )
    return header + _grader_code() + _RUNNER
