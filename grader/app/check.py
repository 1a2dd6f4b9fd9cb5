"""`seqgrade check ID`: validate an assignment as authored, before students see it.

Checks, each reported on its own line with what is wrong:
1. catalog: every misconception id the assignment names (mutants, written wrong forms, the
   shortcut ban) is in the catalog;
2. mutants: on the hidden cases of several variants, every mutant differs from the reference
   and from every other mutant of its question on at least one hidden case, and every written
   wrong form differs from the expected answer;
3. grades: the solution (with the answer key's answers.toml for each variant) scores full marks
   for several keys, and the handout as given (the stub and the blank template) scores zero;
4. handout: nothing hidden in `assignments/<id>/` (no answer key, suite or solution file; no stub
   holding its solution's body; no template value that is the answer);
5. public tests: the handout's `test_public.py` passes on the solution.
Exit status 0 when every check passes, 1 otherwise.
"""

from __future__ import annotations

import ast
import importlib.util
import itertools
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import numpy as np
import tomllib

from grader import catalog
from grader.course import registry, variants
from grader.course.content import assignment_dir, solution_dir
from grader.engine.checks import compare
from grader.engine.trusted import run_trusted
from grader.mutants import concrete
from grader.questions import Assignment, CodeQuestion, WrittenQuestion
from grader.reports.render import reason

KEYS: tuple[str | None, ...] = (None, "check-a@example.edu", "check-b@example.edu")
NUMERIC = ("number", "array")
PUBLIC_TESTS_SECONDS = 300


@dataclass
class Finding:
    """The outcome of one check: its name, a one-line summary and every problem found."""

    name: str
    summary: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


# --------------------------------------------------------------------------- 1. catalog


def named_ids(assignment: Assignment, keys: Sequence[str | None] = KEYS) -> dict[str, list[str]]:
    """Every misconception id the assignment names, with the questions that name it."""
    named: dict[str, list[str]] = {}
    for q in assignment.questions:
        ids: list[str] = []
        if isinstance(q, CodeQuestion):
            ids += list(q.mutants) + (["uses-library-shortcut"] if q.forbidden else [])
        elif q.wrong_forms is not None:
            for key in keys:
                ids += [
                    wf.misconception for wf in q.wrong_forms(variants.numbers(assignment.id, key))
                ]
        for mid in dict.fromkeys(ids):
            named.setdefault(mid, []).append(q.id)
    return named


def check_catalog(assignment: Assignment, keys: Sequence[str | None] = KEYS) -> Finding:
    named = named_ids(assignment, keys)
    known = set(catalog.all_ids())
    problems = [
        f"{mid} (named by {', '.join(qs)}) is not in the catalog: register it in grader/catalog/"
        for mid, qs in sorted(named.items())
        if mid not in known
    ]
    return Finding("catalog", f"{len(named)} misconception ids named", problems)


def check_visible_cases(assignment: Assignment, keys: Sequence[str | None] = KEYS) -> Finding:
    """Every code question has a visible case for every key: a hidden case shows only its
    category (docs/feedback.md), so the student must be able to reproduce a failure somewhere."""
    problems = []
    code = [q for q in assignment.questions if isinstance(q, CodeQuestion)]
    for q in code:
        for key in keys:
            if not any(c.visible for c in q.cases(variants.seed_for(assignment.id, key))):
                problems.append(
                    f"{q.id} has no visible case (key {key or 'default'}): mark a worked "
                    "example `visible=True`, so a student can see what a failure looks like"
                )
                break
    return Finding(
        "visible cases", f"{len(code)} code questions, each with a visible case", problems
    )


# --------------------------------------------------------------------------- 2. mutants


def _hidden_outputs(q: CodeQuestion, seed: int) -> dict[str, list[Any]]:
    """The reference's and every mutant's output on each hidden case (None where it raised)."""
    out: dict[str, list[Any]] = {}
    hidden = [c for c in q.cases(seed) if not c.visible]
    for name, fn in {"the reference": q.reference, **q.mutants}.items():
        row = []
        for case in hidden:
            try:
                with np.errstate(all="ignore"):
                    row.append(concrete(run_trusted(fn, case)))
            except Exception:  # noqa: BLE001 - a mutant that does not apply to this case
                row.append(None)
        out[name] = row
    return out


def _differ(q: CodeQuestion, a: Any, b: Any) -> bool:
    if a is None or b is None:
        return False
    try:  # both ways: a boolean expected output also asks for booleans (mask-not-boolean)
        return any(
            compare(x, y, q.tolerance, exact=q.integer, names=q.output_names)
            for x, y in ((a, b), (b, a))
        )
    except TypeError:
        return True  # not even comparable: certainly told apart


def unseparated(q: CodeQuestion, seeds: Sequence[int]) -> list[tuple[str, str]]:
    """Pairs (mutant, other) whose outputs agree on every hidden case for some seed."""
    if q.custom is not None or not q.mutants:
        return []
    found: dict[tuple[str, str], None] = {}
    for seed in seeds:
        outs = _hidden_outputs(q, seed)
        for a, b in itertools.combinations(outs, 2):
            if not any(_differ(q, x, y) for x, y in zip(outs[a], outs[b])):
                found[(b, a) if a == "the reference" else (a, b)] = None
    return list(found)


def _same_written(q: WrittenQuestion, got: Any, want: Any) -> bool:
    if q.answer_kind in NUMERIC:
        g, w = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
        return g.shape == w.shape and bool(
            np.all(np.abs(g - w) <= q.tolerance.atol + q.tolerance.rtol * np.abs(w))
        )
    return " ".join(str(got).split()) == " ".join(str(want).split())


def _lifted(assignment: Assignment, q: CodeQuestion) -> set[str]:
    """The mutants of `q` that lift a dependency's mistakes (follow-through, docs/conventions.md): one
    that the composite's cases cannot show, or that coincides with the composite's own mistake,
    is named at its root, never here, so it need not be told apart."""
    deps = [d for d in assignment.questions if isinstance(d, CodeQuestion) and d.id in q.depends_on]
    return {m for d in deps for m in d.mutants} & set(q.mutants)


def check_mutants(assignment: Assignment, keys: Sequence[str | None] = KEYS) -> Finding:
    seeds = sorted({variants.seed_for(assignment.id, k) for k in keys})
    problems, counted = [], 0
    for q in assignment.questions:
        if isinstance(q, CodeQuestion):
            counted += len(q.mutants)
            lifted = _lifted(assignment, q)
            for a, b in unseparated(q, seeds):
                if a in lifted or b in lifted:
                    continue  # a dependency's mistake kept for follow-through: charged at its root
                problems.append(
                    f"{q.id}: {a} and {b} give the same output on every hidden case "
                    "(add a hidden case that tells them apart)"
                )
        elif q.wrong_forms is not None:
            for key in keys:
                numbers = variants.numbers(assignment.id, key)
                want = q.expected(numbers)
                for wf in q.wrong_forms(numbers):
                    counted += 1
                    if q.answer_kind in NUMERIC + ("choice", "shape") and _same_written(
                        q, wf.answer, want
                    ):
                        problems.append(
                            f"{q.id}: the wrong form for {wf.misconception} equals the expected "
                            f"answer for the variant {key or 'default'}"
                        )
    return Finding(
        "mutants",
        f"{counted} mutants and wrong forms on the hidden cases of {len(seeds)} variants",
        sorted(dict.fromkeys(problems)),
    )


# --------------------------------------------------------------------------- 3. grades


def _answer_key(solution: Path) -> Callable[[str | None], str] | None:
    """The solution's answer key (`answer_key.py`): key -> the answers.toml text of that variant."""
    path = solution / "answer_key.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("_seqgrade_check_answer_key", path)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, "to_toml", None) or getattr(module, "answers", None)


def _short(report: Any, full: bool) -> list[str]:
    """The questions that did not score as they should: full marks on their own work (solution;
    points carried through from an earlier wrong answer do not count) or zero (stub)."""
    out = []
    for r in report.questions:
        scored = f"{r.question_id} scored {r.score:g}/{r.max_score:g}"
        if (r.score < r.max_score - 1e-9) if full else (r.score > 1e-9):
            out.append(f"{scored}: {reason(r)[:160]}")
        elif full and r.carried_points > 1e-9:
            earlier = ", ".join(dict.fromkeys(c["from"] for c in r.carried))
            out.append(f"{scored} only by follow-through from {earlier or 'an earlier question'}")
    return out


def check_grades(
    assignment: Assignment, solution: Path, handout: Path, keys: Sequence[str | None] = KEYS
) -> Finding:
    from grader.engine.grade import grade_submission
    from grader.written.expr.checker import ExprChecker

    key_text = _answer_key(solution)
    problems: list[str] = []
    if key_text is None:
        problems.append(
            f"{solution / 'answer_key.py'} is missing: the solution's answers for each variant"
        )
    checker = ExprChecker()
    try:
        with tempfile.TemporaryDirectory(prefix="seqgrade-check-") as tmp:
            for i, key in enumerate(keys if key_text is not None else ()):
                folder = Path(tmp) / f"solution_{i}"
                shutil.copytree(
                    solution, folder, ignore=shutil.ignore_patterns("answer_key.py", "__pycache__")
                )
                (folder / "answers.toml").write_text(key_text(key), encoding="utf-8")
                report = grade_submission(folder, assignment, student=key, checker=checker)
                problems += [
                    f"solution, variant {key or 'default'}: {p}" for p in _short(report, full=True)
                ]
            stub = grade_submission(handout, assignment, student=None, checker=checker)
            problems += [f"stub: {p}" for p in _short(stub, full=False)]
    finally:
        checker.close()
    return Finding(
        "grades", f"the solution for {len(keys)} variant keys, the stub as handed out", problems
    )


# --------------------------------------------------------------------------- 4. handout


def _bodies(source: str) -> dict[str, str]:
    """Top-level function name -> its body without the docstring, as normalised source."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            body = node.body[1:] if body_has_docstring(node) else node.body
            out[node.name] = "\n".join(ast.unparse(s) for s in body)
    return out


def body_has_docstring(node: ast.FunctionDef) -> bool:
    first = node.body[0] if node.body else None
    return (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )


def _suite_lines(assignment: Assignment) -> set[str]:
    """The hidden suite's case-generation lines (its salts and draws): what a handout must never hold.

    Other suite lines (the notes' microscopes, the visible cases) are public by design.
    """
    spec = importlib.util.find_spec(f"grader.suites.{assignment.id}")
    if spec is None or spec.origin is None:
        return set()
    suite = Path(spec.origin)
    # the suite's own file and the topic modules it is split into (`<id>_parts/`)
    sources = [suite, *sorted((suite.parent / f"{assignment.id}_parts").glob("*.py"))]
    lines = (line.strip() for p in sources for line in p.read_text(encoding="utf-8").splitlines())
    return {
        s
        for s in lines
        if len(s) >= 30 and not s.startswith("#") and any(w in s for w in _HIDDEN_MARKS)
    }


_HIDDEN_MARKS = ("default_rng(", "seed")


def _template_problems(assignment: Assignment, handout: Path) -> list[str]:
    path = handout / "answers.toml"
    try:
        sheet = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        return [f"answers.toml template does not parse: {err}"]
    numbers = variants.numbers(assignment.id, None)
    out = []
    for q in assignment.questions:
        value = sheet.get(q.key) if isinstance(q, WrittenQuestion) else None
        if value in (None, "", []) or q.answer_kind == "text":
            continue
        try:
            same = _same_written(q, value, q.expected(numbers))
        except (ValueError, TypeError):
            same = False
        if same:
            out.append(f"answers.toml gives the answer to {q.id} ({q.key})")
    return out


def check_handout(assignment: Assignment, handout: Path, solution: Path) -> Finding:
    problems = []
    files = [p for p in sorted(handout.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    solved = {p.read_bytes() for p in solution.glob("*") if p.is_file() and p.name != "README.md"}
    suite = _suite_lines(assignment)
    for p in files:
        rel = p.relative_to(handout)
        if p.name in ("answer_key.py", f"{assignment.id}.py") or "_unittests" in str(rel):
            problems.append(f"{rel} is a hidden file (answer key, suite or instructor tests)")
        elif p.read_bytes() in solved:
            problems.append(f"{rel} is a copy of a solution file")
        elif p.suffix in (".py", ".md", ".toml", ".txt", ".ipynb"):
            text = p.read_text(encoding="utf-8", errors="replace")
            leaked = [s for s in suite if s in text]
            if leaked:
                problems.append(
                    f"{rel} holds {len(leaked)} line(s) of the hidden suite, e.g. {leaked[0][:80]!r}"
                )
    functions = {q.function for q in assignment.questions if isinstance(q, CodeQuestion)}
    for sol in sorted(solution.glob("*.py")):
        stub = handout / sol.name
        if sol.name == "answer_key.py" or not stub.is_file():
            continue
        mine, theirs = (
            _bodies(stub.read_text(encoding="utf-8")),
            _bodies(sol.read_text(encoding="utf-8")),
        )
        problems += [
            f"{sol.name}: the stub of {name}() is the solution's body"
            for name in sorted(functions & mine.keys() & theirs.keys())
            if mine[name] == theirs[name]
        ]
    problems += _template_problems(assignment, handout)
    return Finding("handout", f"{len(files)} files in {handout}", problems)


# --------------------------------------------------------------------------- 5. public tests


def pytest_available() -> bool:
    """Whether this interpreter can run `python -m pytest` (found, not imported)."""
    return importlib.util.find_spec("pytest") is not None


def check_public_tests(handout: Path, solution: Path) -> Finding:
    tests = sorted(handout.glob("test_*.py"))
    if not tests:
        return Finding("public tests", "none in the handout")
    if not pytest_available():
        return Finding(
            "public tests",
            f"{', '.join(t.name for t in tests)} not run",
            [
                f"pytest is not installed for {sys.executable}, so the public tests could not run "
                "on the solution: python -m pip install pytest (or seqgrade[dev]), then check again"
            ],
        )
    with tempfile.TemporaryDirectory(prefix="seqgrade-public-") as tmp:
        work = Path(tmp) / handout.name
        shutil.copytree(handout, work, ignore=shutil.ignore_patterns("__pycache__"))
        for sol in solution.glob("*.py"):
            if sol.name != "answer_key.py":
                shutil.copy(sol, work / sol.name)
        try:
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    *(t.name for t in tests),
                ],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=PUBLIC_TESTS_SECONDS,
            )
        except subprocess.TimeoutExpired:
            return Finding(
                "public tests",
                "",
                [f"did not finish within {PUBLIC_TESTS_SECONDS} s on the solution"],
            )
    last = (done.stdout.strip().splitlines() or [""])[-1]
    if done.returncode != 0 and not last:  # pytest said nothing: its error is on stderr
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    problems = (
        []
        if done.returncode == 0
        else [f"fail on the solution: {last}", *done.stdout.strip().splitlines()[-15:-1]]
    )
    return Finding(
        "public tests", f"{', '.join(t.name for t in tests)} on the solution: {last}", problems
    )


# --------------------------------------------------------------------------- the command


def check_assignment(
    assignment: Assignment,
    *,
    solution: Path | None = None,
    handout: Path | None = None,
    keys: Sequence[str | None] = KEYS,
) -> list[Finding]:
    """Every check of an assignment, in order."""
    solution = solution or solution_dir(assignment.id)
    handout = handout or assignment_dir(assignment.id)
    return [
        check_catalog(assignment, keys),
        check_visible_cases(assignment, keys),
        check_mutants(assignment, keys),
        check_grades(assignment, solution, handout, keys),
        check_handout(assignment, handout, solution),
        check_public_tests(handout, solution),
    ]


def report(assignment: Assignment, findings: Sequence[Finding], out: TextIO) -> None:
    out.write(f"seqgrade check {assignment.id}: {assignment.title}\n")
    for f in findings:
        out.write(f"  {'ok    ' if f.ok else 'FAILED'} {f.name}: {f.summary}\n")
        for p in f.problems:
            out.write(f"           - {p}\n")
    failed = sum(not f.ok for f in findings)
    out.write(f"{len(findings) - failed} of {len(findings)} checks passed\n")


def run(assignment_id: str, out: TextIO | None = None) -> int:
    """`seqgrade check ID`: 0 when every check passes, 1 otherwise."""
    out = out or sys.stdout
    try:
        assignment = registry.load(assignment_id)
    except registry.AuthoringError as err:  # a catalog typo stops the suite from loading at all
        out.write(
            f"seqgrade check {assignment_id}\n  FAILED catalog: {err}\n"
            "the other checks need the assignment to load: fix this first\n"
        )
        return 1
    findings = check_assignment(assignment)
    report(assignment, findings, out)
    return 0 if all(f.ok for f in findings) else 1
