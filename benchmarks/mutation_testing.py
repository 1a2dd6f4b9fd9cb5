"""Mutation testing of the instructor's solutions: does every plausible slip lose points, and
is the mistake named on a killed mutant really the mutant's mistake?

Run by hand, from the repository:

    python benchmarks/mutation_testing.py a2 a5 -j 2            # every mutant of a2's and a5's solution
    python benchmarks/mutation_testing.py a4 --limit 200        # an evenly spread sample of 200
    python benchmarks/mutation_testing.py a5 --show-equivalent  # list the equivalent mutants too
    python benchmarks/mutation_testing.py a6 --operators cosmic-ray --limit 100 -j 1
    python benchmarks/mutation_testing.py a3 --multi 30 -j 1    # 30 files of two or three mutants

1. Mutants. Every function of `solutions/<id>/<code file>` is mutated one point at a time on its
   AST: arithmetic and comparison operators, a binary operation reduced to one operand (a
   deleted max shift), constants (axes, indices, epsilons, defaults), `.T` and `.transpose`
   dropped or added to a matrix product's operand, sum/mean, min/max, exp/log and log/log2 swapped, statements deleted, adjacent
   arguments swapped, keyword arguments dropped, slice bounds dropped, masks un-inverted,
   accumulators overwritten (`+=` as `=`). Mutants identical to the solution are left out.
   `--operators cosmic-ray`: the mutants are cosmic-ray's instead (its operator plugins and its
   own `mutate_code`, every occurrence of every operator that takes no configuration), each
   attributed to the top-level function it changes (mutants outside functions left out).
   `--multi N`: N files, each holding two or three of the single mutants in different
   functions (spread evenly, fixed seed); every question of a mutated function must lose
   points where its single mutant alone did ("docked"), a question of an unmutated function
   must not (the mistake is charged once, where it is made), and no name may be given that
   does not reproduce the question's function in the combined file.
2. Grading. Many mutants in ONE submission (tests/heldout_harness.py's packing idea): each
   mutant is a module of its own, the code file re-exports its functions under numbered names,
   and each code question whose function reaches the mutated function is duplicated, one per
   mutant (bans dropped: a mutant of the solution calls no library shortcut). A mutant is
   killed when it loses points. A multi-mistake file is graded alone, as a student's file is:
   follow-through reads the calls in the student's own code file and the questions' own ids,
   which a pack's re-exports and numbered duplicates hide.
3. Survivors (full marks) are diff-tested in-process against the solution on the questions'
   own cases for several seeds and on edge inputs made from them (every float array scaled
   by 1000, by 1e-3, negated, zeroed; optional arguments dropped): no difference means an
   equivalent mutant, a difference a real escape (listed with the input that shows it). A
   random procedure (a question with its own judge whose cases hand it generators) is compared
   by distribution instead: on each case, fresh generators for both, what each output position
   holds (the argument's entry, a scalar argument, another value) pooled, and a chi-squared
   homogeneity test (`different_distribution`); one draw compared exactly proves nothing.
   An identity comparison with a string literal (`ffn is not "swiglu"`, cosmic-ray's `==` ->
   `is not`) is not equivalent: on the interned strings a student's own calls pass it is `!=`.
   It survives only where the grader hands the function equal strings that are not the
   literal's object (the sandbox's decoded arguments): a real escape, listed as one.
4. Namings. A killed mutant named with id M: on random inputs (the cases of other seeds),
   every output the mutated function gets wrong must be explained by M's mutant (the engine's
   own criterion; an output with NaN or inf that M does not explain is no evidence either way,
   as in the engine, but M must explain some case); otherwise it is a wrong naming (listed). In
   a multi-mistake file a name given to a mutated function's question is checked against that
   function's own mistake alone (the composite over the solution's helpers, as follow-through
   judges it).

Prints per assignment: mutants, killed, equivalent, escaped, mutation score = killed /
(killed + escaped), wrong namings and their share of the named killed mutants. Exit status 0
whatever the figures (1 when a grading failed).

It stays one script (about 1,300 lines), run by path and loaded by path by its tests; its
sections follow the four steps above (operators and mutants, grading packs, in-process checks,
the report), each readable on its own.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from grader import sandbox  # noqa: E402
from grader.app import pool_process  # noqa: E402
from grader.app.batch import end_with  # noqa: E402
from grader.course import registry  # noqa: E402
from grader.engine.checks import compare  # noqa: E402
from grader.engine.diagnosis import explain, finite  # noqa: E402
from grader.engine.grade import grade_submission  # noqa: E402
from grader.engine.sandbox_words import RESTARTS_SPENT  # noqa: E402
from grader.engine.trusted import materialize, plain, run_trusted, trusted_mutants  # noqa: E402
from grader.questions import Assignment, Case, CodeQuestion, Rng  # noqa: E402
from grader.sandbox import zygote  # noqa: E402

# A correct call takes milliseconds; a mutant that loops (a deleted `i += 2`) is killed at 1 s.
LIMITS = sandbox.Limits(call_seconds=1.0, submission_seconds=3600.0)
PACK = 20  # mutants per submission (small enough that the loopers spread over the processes)
DIFF_SEEDS = (11, 12, 13, 14, 15)  # random inputs for the diff test and the naming check
CALL_SECONDS = 5  # in-process calls (diff test, naming check)
# A question with its own judge grades a random procedure by invariants and distributions: one
# draw compared exactly proves nothing (a different but equally valid draw), so a survivor there
# is compared with the solution by distribution, over fresh generators (`same_distribution`).
RANDOM_CAVEAT = " [graded by distribution: possibly an equally valid draw, check by hand]"
DRAWS = 8  # fresh generators per case in the distribution test
P_DIFFERENT = 1e-6  # a chi-squared homogeneity p-value below this: the distributions differ


@dataclasses.dataclass(frozen=True)
class Mutant:
    index: int
    function: str  # the top-level function mutated
    line: int
    operator: str  # the family: "binop", "constant", "delete", ...
    change: str  # "`a - b` -> `a + b`"
    source: str  # the whole mutated file
    parts: tuple[Mutant, ...] = ()  # a multi-mistake file: its single mutants

    @property
    def functions(self) -> set[str]:
        return {p.function for p in self.parts} if self.parts else {self.function}

    def label(self) -> str:
        return f"#{self.index} {self.function} line {self.line} [{self.operator}]: {self.change}"


@dataclasses.dataclass
class Result:
    mutant: Mutant
    questions: list[str]  # the question ids it was graded on
    score: float = 0.0
    max_score: float = 0.0
    named: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # question id -> ids
    error: str | None = None
    status: str = ""  # killed | equivalent | escaped | unreached | error
    evidence: str = ""  # the input that shows an escape
    wrong_names: list[str] = dataclasses.field(default_factory=list)  # "qid: M (why)"
    scores: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)  # qid ->


# ---------------------------------------------------------------------------- mutation operators

BINOP_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Add: (ast.Sub,),
    ast.Sub: (ast.Add,),
    ast.Mult: (ast.Div,),
    ast.Div: (ast.Mult, ast.FloorDiv),
    ast.FloorDiv: (ast.Div,),
    ast.Pow: (ast.Mult,),
    ast.MatMult: (ast.Mult,),
    ast.Mod: (ast.FloorDiv,),
}
CMP_SWAPS: dict[type, tuple[type, ...]] = {
    ast.Lt: (ast.LtE, ast.Gt),
    ast.LtE: (ast.Lt,),
    ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt,),
    ast.Eq: (ast.NotEq,),
    ast.NotEq: (ast.Eq,),
    ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
}
NAME_SWAPS = {
    "sum": ("mean",),
    "mean": ("sum",),
    "max": ("min",),
    "min": ("max",),
    "amax": ("amin",),
    "amin": ("amax",),
    "argmax": ("argmin",),
    "argmin": ("argmax",),
    "exp": ("log",),
    "log": ("log2", "exp"),
    "zeros": ("ones",),
    "ones": ("zeros",),
    "zeros_like": ("ones_like",),
    "ones_like": ("zeros_like",),
    "float64": ("float32",),
    "tanh": ("sigmoid",),
    "sqrt": ("abs",),
}
DROPPED_CALLS = {"transpose", "permute", "contiguous", "clone", "copy", "detach", "float", "item"}

Edit = Callable[[ast.AST], ast.AST | None]  # the node (a private copy) -> its replacement


def _const(value: Any) -> ast.expr:
    if isinstance(value, (int, float)) and value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def _with_op(op_type: type) -> Edit:
    def edit(node: ast.AST) -> ast.AST:
        node.op = op_type()
        return node

    return edit


def _binop_edits(node: ast.BinOp) -> Iterator[tuple[str, str, Edit]]:
    for new in BINOP_SWAPS.get(type(node.op), ()):
        yield "binop", new.__name__, _with_op(new)
    yield "operand", "left only", lambda n: n.left
    yield "operand", "right only", lambda n: n.right
    if isinstance(node.op, ast.MatMult):
        for side in ("left", "right"):

            def edit(n: ast.AST, side: str = side) -> ast.AST:
                setattr(n, side, ast.Attribute(getattr(n, side), "T", ast.Load()))
                return n

            yield "transpose", f"{side} operand transposed", edit


def _compare_edits(node: ast.Compare) -> Iterator[tuple[str, str, Edit]]:
    if len(node.ops) != 1:
        return
    for new in CMP_SWAPS.get(type(node.ops[0]), ()):

        def edit(n: ast.AST, new: type = new) -> ast.AST:
            n.ops = [new()]
            return n

        yield "compare", new.__name__, edit


def _constant_edits(node: ast.Constant) -> Iterator[tuple[str, str, Edit]]:
    v = node.value
    if isinstance(v, bool):
        yield "constant", str(not v), lambda n: ast.Constant(not v)
    elif isinstance(v, int):
        for new in (v + 1, v - 1):
            yield "constant", str(new), lambda n, new=new: _const(new)
    elif isinstance(v, float):
        options = {0.0, 2.0 * v, v + 1.0} if v else {1.0, 1e-3}
        for new in sorted(options - {v}):
            yield "constant", repr(new), lambda n, new=new: _const(new)
    elif isinstance(v, str) and v in ("-inf", "inf"):
        other = "inf" if v == "-inf" else "-inf"
        yield "constant", other, lambda n: ast.Constant(other)


def _name_edits(node: ast.AST) -> Iterator[tuple[str, str, Edit]]:
    name = node.attr if isinstance(node, ast.Attribute) else node.id
    for new in NAME_SWAPS.get(name, ()):

        def edit(n: ast.AST, new: str = new) -> ast.AST:
            if isinstance(n, ast.Attribute):
                n.attr = new
            else:
                n.id = new
            return n

        yield "name", f"{name} -> {new}", edit
    if isinstance(node, ast.Attribute) and node.attr in ("T", "mT"):
        yield "transpose", "drop .T", lambda n: n.value


def _call_edits(node: ast.Call) -> Iterator[tuple[str, str, Edit]]:
    f = node.func
    if isinstance(f, ast.Attribute) and f.attr in DROPPED_CALLS:
        yield (
            "transpose" if f.attr in ("transpose", "permute") else "call",
            f"drop .{f.attr}()",
            lambda n: n.func.value,
        )
    for i in range(len(node.args) - 1):
        if not any(isinstance(a, ast.Starred) for a in node.args[i : i + 2]):

            def edit(n: ast.AST, i: int = i) -> ast.AST:
                n.args[i], n.args[i + 1] = n.args[i + 1], n.args[i]
                return n

            yield "swap-args", f"args {i} and {i + 1} swapped", edit
    for k, kw in enumerate(node.keywords):
        if kw.arg is not None:

            def edit(n: ast.AST, k: int = k) -> ast.AST:
                del n.keywords[k]
                return n

            yield "keyword", f"drop {kw.arg}=", edit


def _slice_edits(node: ast.Slice) -> Iterator[tuple[str, str, Edit]]:
    for part in ("lower", "upper"):
        if getattr(node, part) is not None:

            def edit(n: ast.AST, part: str = part) -> ast.AST:
                setattr(n, part, None)
                return n

            yield "slice", f"drop {part} bound", edit


def _unary_edits(node: ast.UnaryOp) -> Iterator[tuple[str, str, Edit]]:
    label = {ast.USub: "sign", ast.Invert: "mask", ast.Not: "mask"}.get(type(node.op))
    if label:
        yield label, f"drop {type(node.op).__name__}", lambda n: n.operand


def _tuple_edits(node: ast.Tuple) -> Iterator[tuple[str, str, Edit]]:
    for i in range(len(node.elts) - 1):

        def edit(n: ast.AST, i: int = i) -> ast.AST:
            n.elts[i], n.elts[i + 1] = n.elts[i + 1], n.elts[i]
            return n

        yield "swap-args", f"tuple items {i} and {i + 1} swapped", edit


def _statement_edits(node: ast.stmt) -> Iterator[tuple[str, str, Edit]]:
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return  # a docstring
    if not isinstance(node, (ast.FunctionDef, ast.Return)):
        yield "delete", "statement deleted", lambda n: ast.Pass()
    if isinstance(node, ast.AugAssign):
        yield "accumulate", "`+=` as `=`", lambda n: ast.Assign([n.target], n.value)


def edits_of(node: ast.AST) -> Iterator[tuple[str, str, Edit]]:
    """Every single-point change of one node: (family, what, edit)."""
    if isinstance(node, ast.stmt):
        yield from _statement_edits(node)
    if isinstance(node, ast.BinOp):
        yield from _binop_edits(node)
    elif isinstance(node, ast.AugAssign) and type(node.op) in BINOP_SWAPS:
        for new in BINOP_SWAPS[type(node.op)]:
            yield "binop", f"augmented {new.__name__}", _with_op(new)
    elif isinstance(node, ast.Compare):
        yield from _compare_edits(node)
    elif isinstance(node, ast.Constant):
        yield from _constant_edits(node)
    elif isinstance(node, (ast.Attribute, ast.Name)):
        yield from _name_edits(node)
    elif isinstance(node, ast.Call):
        yield from _call_edits(node)
    elif isinstance(node, ast.Slice):
        yield from _slice_edits(node)
    elif isinstance(node, ast.UnaryOp):
        yield from _unary_edits(node)
    elif isinstance(node, ast.Tuple):
        yield from _tuple_edits(node)


# ---------------------------------------------------------------------------- generating mutants


def _replace(parent: ast.AST, old: ast.AST, new: ast.AST) -> None:
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list):
            for i, item in enumerate(value):
                if item is old:
                    value[i] = new
                    return
    raise LookupError("node not found under its parent")


def _joined(tree: ast.Module, parts: list[str]) -> str:
    """The module's source from its statements' sources, as `ast.unparse(tree)` writes it."""
    out = ""
    for stmt, part in zip(tree.body, parts):
        if out:
            defines = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            out += "\n\n" if defines else "\n"
        out += part
    return out


def _mutated_text(pickled: bytes, ni: int, parent: int, edit: Edit) -> str | None:
    """The function's text with its node `ni` (walk order) edited: `pickled` is the function,
    unpickled into a private copy; `parent` is the walk index of the node's parent (-1: none)."""
    fn = pickle.loads(pickled)
    nodes = list(ast.walk(fn))
    target = nodes[ni]
    new = edit(target)
    if new is None:
        return None
    if new is not target:
        _replace(nodes[parent], target, new)
    ast.fix_missing_locations(fn)
    try:
        return ast.unparse(ast.Module(body=[fn], type_ignores=[]))
    except (ValueError, TypeError):
        return None


def _compiles(text: str) -> bool:
    """Does the function's text compile? (Only its own text can fail: the rest of the module is
    the solution's, which compiles, so this is what compiling the whole mutated module says.)"""
    try:
        compile(text, "<mutant>", "exec")
    except (SyntaxError, ValueError, TypeError):
        return False
    return True


def generate(path: Path) -> list[Mutant]:
    """Every single-point mutant of the file's top-level functions (duplicates left out)."""
    tree = ast.parse(path.read_text())
    parts = [ast.unparse(ast.Module(body=[stmt], type_ignores=[])) for stmt in tree.body]
    original = ast.unparse(tree)
    if _joined(tree, parts) != original:  # the splice must write exactly what unparse writes
        raise RuntimeError(f"{path}: its statements do not join into ast.unparse's text")
    seen = {original}
    out: list[Mutant] = []
    for fi, fn in enumerate(tree.body):
        if not isinstance(fn, ast.FunctionDef):
            continue
        # One pickled copy per function, unpickled per edit (copy.deepcopy's work, several
        # times faster); a copy walks in the same order, so a node's parent is known by index.
        blob = pickle.dumps(fn, protocol=pickle.HIGHEST_PROTOCOL)
        walked = list(ast.walk(fn))
        parent_of = {id(c): k for k, p in enumerate(walked) for c in ast.iter_child_nodes(p)}
        for ni, node in enumerate(walked):
            for family, what, edit in edits_of(node):
                text = _mutated_text(blob, ni, parent_of.get(id(node), -1), edit)
                if text is None:
                    continue
                source = _joined(tree, [*parts[:fi], text, *parts[fi + 1 :]])
                if source in seen or not _compiles(text):
                    continue
                seen.add(source)
                snippet = (
                    ast.unparse(node).splitlines()[0][:60]
                    if not isinstance(node, ast.FunctionDef)
                    else fn.name
                )
                out.append(
                    Mutant(
                        len(out),
                        fn.name,
                        getattr(node, "lineno", fn.lineno),
                        family,
                        f"`{snippet}`: {what}",
                        source,
                    )
                )
    return out


def _functions(tree: ast.Module) -> dict[str, str]:
    return {f.name: ast.unparse(f) for f in tree.body if isinstance(f, ast.FunctionDef)}


def generate_cosmic_ray(path: Path) -> list[Mutant]:
    """Every mutant cosmic-ray's operators make of the file (its `mutate_code`, occurrence by
    occurrence), kept when it compiles, changes exactly one top-level function and is new."""
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator, operator_names

    text = path.read_text()
    tree = ast.parse(text)
    original = _functions(tree)
    seen = {ast.unparse(tree)}
    out: list[Mutant] = []
    for name in operator_names():
        try:
            operator = get_operator(name)()
        except TypeError:  # an operator that needs configuration (VariableReplacer, ...)
            continue
        k = 0
        while (source := mutate_code(text, operator, k)) is not None:
            k += 1
            try:
                mutated = ast.parse(source)
                compile(source, "<mutant>", "exec")
            except (SyntaxError, ValueError):
                continue
            key = ast.unparse(mutated)
            if key in seen:
                continue
            seen.add(key)
            changed = [f for f, body in _functions(mutated).items() if original.get(f) != body]
            if len(changed) != 1 or _functions(mutated).keys() != original.keys():
                continue
            line = next(
                (
                    i + 1
                    for i, (a, b) in enumerate(zip(text.splitlines(), source.splitlines()))
                    if a != b
                ),
                0,
            )
            operator_name = name.removeprefix("core/")
            new_line = source.splitlines()[line - 1].strip()[:60] if line else ""
            out.append(
                Mutant(
                    len(out),
                    changed[0],
                    line,
                    operator_name.split("_")[0],
                    f"{operator_name} #{k - 1}: `{new_line}`",
                    source,
                )
            )
    return out


def combine(path: Path, singles: list[Mutant], n: int, seed: int = 0) -> list[Mutant]:
    """n files each holding two or three single mutants of different functions: each mutated
    function's text taken from its mutant, the rest from the solution."""
    tree = ast.parse(path.read_text())
    by_function: dict[str, list[Mutant]] = {}
    for m in singles:
        by_function.setdefault(m.function, []).append(m)
    names = sorted(by_function)
    rng = np.random.default_rng(seed)
    out: list[Mutant] = []
    while len(out) < n and len(names) >= 2:
        chosen = rng.choice(names, size=min(len(names), int(rng.integers(2, 4))), replace=False)
        parts = tuple(
            by_function[f][int(rng.integers(len(by_function[f])))] for f in sorted(chosen)
        )
        body = list(tree.body)
        for part in parts:
            fn = next(
                f
                for f in ast.parse(part.source).body
                if isinstance(f, ast.FunctionDef) and f.name == part.function
            )
            body = [
                fn if isinstance(s, ast.FunctionDef) and s.name == part.function else s
                for s in body
            ]
        source = ast.unparse(ast.Module(body=body, type_ignores=[]))
        out.append(
            Mutant(
                len(out),
                "+".join(p.function for p in parts),
                0,
                "multi",
                " & ".join(f"{p.function}: {p.change}" for p in parts),
                source,
                parts,
            )
        )
    return out


def reach(path: Path) -> dict[str, set[str]]:
    """For each top-level function, the top-level functions it reaches (itself included)."""
    tree = ast.parse(path.read_text())
    fns = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    calls = {
        name: {n.id for n in ast.walk(f) if isinstance(n, ast.Name) and n.id in fns}
        for name, f in fns.items()
    }
    out: dict[str, set[str]] = {}
    for name in fns:
        seen, todo = {name}, [name]
        while todo:
            for c in calls[todo.pop()] - seen:
                seen.add(c)
                todo.append(c)
        out[name] = seen
    return out


# ---------------------------------------------------------------------------- grading packs


def _questions_for(
    mutant: Mutant, assignment: Assignment, reaches: dict[str, set[str]]
) -> list[CodeQuestion]:
    return [
        q
        for q in assignment.questions
        if isinstance(q, CodeQuestion) and mutant.functions & reaches.get(q.function, {q.function})
    ]


def grade_alone(aid: str, mutant: Mutant, reaches: dict[str, set[str]]) -> Result:
    """One file graded as a student's submission (its code questions, bans and follow-through
    as a student's grade has them): a multi-mistake file, whose later questions must see the
    student's own earlier functions under their own names and question ids."""
    assignment = registry.load(aid)
    res = Result(mutant, [q.id for q in _questions_for(mutant, assignment, reaches)])
    code = tuple(q for q in assignment.questions if isinstance(q, CodeQuestion))
    with tempfile.TemporaryDirectory(prefix="mutant-") as tmp:
        folder = Path(tmp) / "sub"
        folder.mkdir()
        (folder / assignment.code_file).write_text(mutant.source)
        report = grade_submission(
            folder,
            dataclasses.replace(assignment, questions=code),
            limits=LIMITS,
            instructor_tests=[],
        )
    for r in report.questions:
        if r.question_id not in res.questions:
            continue
        res.score += r.score
        res.max_score += r.max_score
        res.scores[r.question_id] = (r.score, r.max_score)
        if r.misconceptions:
            res.named[r.question_id] = list(r.misconceptions)
        if r.error and "time budget" in r.error:
            res.error = r.error
    if report.grader_error:
        res.error = report.grader_error
    return res


def grade_pack(aid: str, mutants: list[Mutant], reaches: dict[str, set[str]]) -> list[Result]:
    """Every mutant of the pack in one submission, one duplicated question per (mutant, question);
    multi-mistake files one submission each (grade_alone)."""
    if all(m.parts for m in mutants):
        return [grade_alone(aid, m, reaches) for m in mutants]
    assignment = registry.load(aid)
    results = {
        m.index: Result(m, [q.id for q in _questions_for(m, assignment, reaches)]) for m in mutants
    }
    exports, questions, owner = [], [], {}
    with tempfile.TemporaryDirectory(prefix="mutants-") as tmp:
        folder = Path(tmp) / "sub"
        folder.mkdir()
        for m in mutants:
            module = f"mutant_{m.index:04d}"
            (folder / f"{module}.py").write_text(m.source)
            for q in _questions_for(m, assignment, reaches):
                alias = f"{q.function}__m{m.index:04d}"
                exports.append(f"from {module} import {q.function} as {alias}")
                dup = dataclasses.replace(q, id=f"{q.id}#{m.index}", function=alias, forbidden=())
                questions.append(dup)
                owner[dup.id] = (m.index, q.id)
        (folder / assignment.code_file).write_text("\n".join(exports) + "\n")
        report = grade_submission(
            folder,
            dataclasses.replace(assignment, questions=tuple(questions)),
            limits=LIMITS,
            instructor_tests=[],
        )
    # Mutants that loop or crash restart the pack's worker, and a submission has only so many
    # restarts: a mutant graded after they ran out is graded again in a submission of its own.
    spoiled: set[int] = set()
    for r in report.questions:
        if r.question_id not in owner:
            continue
        idx, qid = owner[r.question_id]
        res = results[idx]
        res.score += r.score
        res.max_score += r.max_score
        res.scores[qid] = (r.score, r.max_score)
        if r.misconceptions:
            res.named[qid] = list(r.misconceptions)
        if r.error and "time budget" in r.error:
            res.error = r.error
        if RESTARTS_SPENT in f"{r.error or ''}\n{r.feedback}":
            spoiled.add(idx)
    if report.grader_error:
        for res in results.values():
            res.error = report.grader_error
    if len(mutants) > 1:
        for m in mutants:
            if m.index in spoiled:
                (results[m.index],) = grade_pack(aid, [m], reaches)
    return list(results.values())


# ---------------------------------------------------------------------------- in-process checks


class CallTimeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise CallTimeout


def load_module(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # noqa: S102 - our own solution, mutated
    return module


def _student_args(value: Any, torch_inputs: bool) -> Any:
    """A case argument as the student's process gets it (torch tensors in a5)."""
    value = materialize(value)
    if not torch_inputs:
        return value
    import torch

    def conv(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            return torch.from_numpy(v.copy())
        if isinstance(v, tuple):
            return tuple(conv(x) for x in v)
        if isinstance(v, list):
            return [conv(x) for x in v]
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        return v

    return conv(value)


def call(fn: Callable[..., Any], case: Case, torch_inputs: bool) -> tuple[Any, str | None]:
    """(plain output, None) or (None, the exception's name)."""
    args = _student_args(case.args, torch_inputs)
    kwargs = _student_args(dict(case.kwargs), torch_inputs)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(CALL_SECONDS)
    try:
        with np.errstate(all="ignore"):
            return plain(fn(*args, **kwargs)), None
    except CallTimeout:
        return None, "timeout"
    except Exception as err:  # noqa: BLE001 - a mutant may raise anything
        return None, type(err).__name__
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _kinds(x: Any) -> Any:
    """Int or float, leaf by leaf (exact questions: 4.0 is not the shape entry 4)."""
    if isinstance(x, dict):
        return {k: _kinds(v) for k, v in x.items()}
    if isinstance(x, (tuple, list)):
        return [_kinds(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.dtype.kind
    return type(x).__name__


def same(got: Any, want: Any, q: CodeQuestion) -> bool:
    try:
        if compare(got, want, q.tolerance, exact=q.integer):
            return False
    except TypeError:
        return False
    return not q.integer or _kinds(got) == _kinds(want)


def _scaled(value: Any, f: Callable[[np.ndarray], np.ndarray]) -> Any:
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return f(value)
    if isinstance(value, tuple):
        return tuple(_scaled(v, f) for v in value)
    if isinstance(value, list):
        return [_scaled(v, f) for v in value]
    if isinstance(value, dict):
        return {k: _scaled(v, f) for k, v in value.items()}
    return value


EDGES: tuple[tuple[str, Callable[[np.ndarray], np.ndarray]], ...] = (
    ("x1000", lambda a: a * 1000.0),
    ("x1e-3", lambda a: a * 1e-3),
    ("negated", lambda a: -a),
    ("zeros", np.zeros_like),
)


def inputs(q: CodeQuestion) -> Iterator[tuple[str, Case]]:
    """The question's own cases for several seeds, then edge inputs made from them."""
    for seed in DIFF_SEEDS:
        for case in q.cases(seed):
            yield f"seed {seed}, {case.name}", case
    for seed in DIFF_SEEDS[:2]:
        for case in q.cases(seed):
            for label, f in EDGES:
                yield (
                    f"seed {seed}, {case.name}, {label}",
                    dataclasses.replace(
                        case, args=_scaled(case.args, f), kwargs=_scaled(dict(case.kwargs), f)
                    ),
                )
            if case.kwargs:
                yield (
                    f"seed {seed}, {case.name}, optional arguments dropped",
                    dataclasses.replace(case, kwargs={}),
                )


def diff_test(
    res: Result, solution: types.ModuleType, mutant: types.ModuleType, assignment: Assignment
) -> str | None:
    """The first input on which the mutant's function differs from the solution's (None: none).
    A random procedure's (a question with its own judge, its cases drawing from generators the
    grader seeds) is compared by distribution instead."""
    for qid in res.questions:
        q = assignment.question(qid)
        assert isinstance(q, CodeQuestion)
        if q.custom is not None and any(_draws(c) for c in q.cases(DIFF_SEEDS[0])):
            shown = different_distribution(
                getattr(solution, q.function), getattr(mutant, q.function), q
            )
            if shown:
                return f"{q.function}: {shown}"
            continue
        for label, case in inputs(q):
            want, err = call(getattr(solution, q.function), case, q.torch_inputs)
            if err is not None:
                continue  # outside the solution's domain
            got, err = call(getattr(mutant, q.function), case, q.torch_inputs)
            if err is not None or not same(got, want, q):
                caveat = RANDOM_CAVEAT if q.custom is not None and err is None else ""
                return f"{q.function}: {label}" + (f" (raises {err})" if err else "") + caveat
    return None


def _draws(case: Case) -> bool:
    """Whether a case hands the function a generator the grader seeds."""
    return any(isinstance(a, Rng) for a in (*case.args, *case.kwargs.values()))


def _reseeded(case: Case, k: int) -> Case:
    """The case with every generator seeded afresh (draw k)."""

    def fresh(a: Any) -> Any:
        return (
            Rng(int(np.random.default_rng([a.seed, k]).integers(2**31)))
            if isinstance(a, Rng)
            else a
        )

    return dataclasses.replace(
        case,
        args=tuple(fresh(a) for a in case.args),
        kwargs={key: fresh(v) for key, v in case.kwargs.items()},
    )


# What a position of a random procedure's output holds (`_relations`): an argument array's
# entry there, a scalar argument, another value, or (for a rare other value) its decile.
ARG, SCALAR, VALUE, DECILE = 0.0, 1.0, 2.0, 3.0


def _relations(case: Case, out: Any) -> np.ndarray | None:
    """What a random procedure's output is made of, position by position: for each output array
    (all of one length n), a (kind, which) pair per position, shape (n, arrays, 2). Kind ARG
    (which: the argument array whose entry it is), SCALAR (which scalar argument it equals) or
    VALUE (which: the value itself; `_binned` reads a rare one as its decile). None when the
    output is not 1-D numeric arrays of one length."""
    leaves = [np.asarray(x) for x in (out if isinstance(out, (tuple, list)) else (out,))]
    if not leaves or any(x.ndim != 1 or x.dtype.kind not in "biuf" for x in leaves):
        return None
    n = leaves[0].shape[0]
    if any(x.shape[0] != n for x in leaves):
        return None
    arrays = [np.asarray(a) for a in materialize(case.args) if isinstance(a, np.ndarray)]
    arrays = [a for a in arrays if a.shape == (n,)]
    scalars = [
        a
        for a in (*case.args, *case.kwargs.values())
        if isinstance(a, (int, np.integer)) and not isinstance(a, bool)
    ]
    cells = np.empty((n, len(leaves), 2))
    for i, x in enumerate(leaves):
        kind, which = np.full(n, VALUE), x.astype(float)
        for category, references in ((ARG, arrays), (SCALAR, scalars)):
            for j, a in enumerate(references):  # the first that matches, in order
                hit = (kind == VALUE) & (x == a)
                kind[hit], which[hit] = category, j
        cells[:, i, 0], cells[:, i, 1] = kind, which
    return cells


def _binned(sides: list[np.ndarray]) -> list[np.ndarray]:
    """Each side's `_relations` cells as integer codes, shape (positions, arrays): kind * base +
    which. An other value (VALUE) is kept as itself (its index among the frequent values) when
    it makes at least 1% of the pooled positions of both sides, else read as its decile of the
    pooled finite range (DECILE: a random id's size, not itself; NaN, inf and -inf are bins 10,
    11 and 12)."""
    pooled = np.concatenate(sides)
    kinds, whichs = pooled[..., 0], pooled[..., 1]
    values = whichs[kinds == VALUE]
    distinct, counts = np.unique(values[~np.isnan(values)], return_counts=True)
    frequent = distinct[counts >= 0.01 * len(pooled)]
    finite = values[np.isfinite(values)]
    lo, hi = (finite.min(), finite.max()) if finite.size else (0.0, 0.0)
    width = (hi - lo) / 10 or 1.0
    base = max(len(frequent), 13, int(whichs[kinds != VALUE].max(initial=0)) + 1)
    out = []
    for cells in sides:
        kind, which = cells[..., 0], cells[..., 1]
        value = kind == VALUE
        code = (kind * base + np.where(value, 0, which)).astype(np.int64)  # ARG, SCALAR: which
        v = which[value]
        at = np.minimum(np.searchsorted(frequent, v), max(len(frequent) - 1, 0))
        kept = frequent[at] == v if len(frequent) else np.zeros(v.shape, bool)
        with np.errstate(invalid="ignore"):
            decile = np.select(
                [np.isnan(v), v == np.inf, v == -np.inf],
                [10, 11, 12],
                np.minimum(np.floor((v - lo) / width), 9),
            ).astype(np.int64)
        code[value] = np.where(kept, int(VALUE) * base + at, int(DECILE) * base + decile)
        out.append(code)
    return out


def different_distribution(
    want_fn: Callable[..., Any], got_fn: Callable[..., Any], q: CodeQuestion
) -> str | None:
    """Where a random procedure's outputs are not distributed as the solution's: on each case,
    DRAWS fresh generators each, the categories of `_relations` pooled, a chi-squared
    homogeneity test between the two (None: no difference at P_DIFFERENT, or nothing to
    compare). Drawing order and which uniform range stands for which outcome do not matter:
    `action > 0.9` for "random id" where the solution has `action < 0.9` is the same 10%."""
    from scipy.stats import chi2_contingency

    for case in q.cases(DIFF_SEEDS[0]):
        if not _draws(case):
            continue
        pooled: list[list[np.ndarray]] = [[], []]
        for k in range(DRAWS):
            fresh = _reseeded(case, k)
            for side, fn in enumerate((want_fn, got_fn)):
                out, err = call(fn, fresh, q.torch_inputs)
                if err is not None:
                    return None if side == 0 else f"{case.name} (raises {err})"
                rel = _relations(fresh, out)
                if rel is None:
                    return None
                pooled[side].append(rel)
        shapes = {rel.shape[1] for rel in pooled[0]}, {rel.shape[1] for rel in pooled[1]}
        if len(shapes[0]) > 1:
            return None  # the solution's own outputs are not one kind of thing
        if shapes[1] != shapes[0]:
            return f"{case.name}: returns {sorted(shapes[1])} arrays, not {sorted(shapes[0])}"
        sides = _binned([np.concatenate(p) for p in pooled])
        # a position's category: its cells over the output arrays, as one key; counted per side
        codes = np.concatenate(sides)
        key = np.zeros(len(codes), dtype=np.int64)
        for column in codes.T:  # kept below the number of positions, one array at a time
            _, key = np.unique(key * (column.max() + 1) + column, return_inverse=True)
        key = key.reshape(-1)
        split = len(sides[0])
        table = np.stack(
            [np.bincount(part, minlength=key.max() + 1) for part in (key[:split], key[split:])]
        )
        if table.shape[1] < 2:
            continue
        p = chi2_contingency(table).pvalue
        if p < P_DIFFERENT:
            return f"{case.name}: outputs distributed otherwise over {DRAWS} draws (p = {p:.1e})"
    return None


def check_names(
    res: Result,
    mutant: types.ModuleType,
    assignment: Assignment,
    own: dict[str, types.ModuleType] | None = None,
    carried: Callable[[str], types.ModuleType] | None = None,
) -> list[str]:
    """Namings that do not explain the mutated function's wrong outputs on random inputs. Two or
    three mistakes named on one question are the engine's diagnosis "found together": judged as
    the one combined mistake (grader.engine.combos.combine), when each alone does not explain.
    `own`: in a multi-mistake file, each mutated function's own mistake alone (its single
    mutant's file): a name given to a composite whose own code is mutated must be that mistake,
    the composite judged over the solution's helpers, as the engine's follow-through judges a
    composite's own logic with the reference's function in place of the student's wrong one.
    `carried(function)`: for any other question of such a file, the file with every other mutated
    graded function restored to the solution's (a mistake charged at its own question is not
    evidence here, as the engine's follow-through does not count it either)."""
    from grader.engine.combos import combine

    wrong = []
    for qid, ids in res.named.items():
        q = assignment.question(qid)
        assert isinstance(q, CodeQuestion)
        if own and q.function in own:
            module = own[q.function]
        else:
            module = carried(q.function) if carried is not None else mutant
        claims = [mid for mid in ids if mid in q.mutants]  # not a shortcut's or a judge's id
        whys = {mid: _unexplained(q, mid, module) for mid in claims}
        if len(claims) > 1 and any(whys.values()):
            both: Any = q.mutants[claims[0]]
            for mid in claims[1:]:
                both = combine(both, q.mutants[mid]) if both is not None else None
            if both is not None and not _unexplained(q, tuple(claims), module, both):
                continue  # named together, and together they are what the function computes
        for mid, why in whys.items():
            if why:
                wrong.append(f"{q.function}: {mid} ({why})")
    return wrong


def _unexplained(
    q: CodeQuestion, mid: str | tuple[str, ...], mutant: types.ModuleType, combined: Any = None
) -> str | None:
    """Why `mid` is not what the mutated function computes (None: it is). A wrong output holding
    NaN or inf that the mistake does not explain is no evidence either way (the engine's rule:
    grader/engine/code.py `_contradicted`); a name explained on no case at all is unsupported."""
    checked = explained = 0
    for seed in DIFF_SEEDS:
        for case in q.cases(seed):
            got, err = call(getattr(mutant, q.function), case, q.torch_inputs)
            if err is not None:
                continue
            want = run_trusted(q.reference, case)
            if same(got, want, q):
                continue
            checked += 1
            if explain(
                got,
                want,
                case.args,
                dict(case.kwargs),
                trusted_mutants({mid: combined if combined is not None else q.mutants[mid]}),
                q.tolerance,
                exact=q.integer,
            ):
                explained += 1
            elif finite(got):
                return f"seed {seed}, {case.name}: not what {mid} computes"
    if checked and not explained:
        return f"explained on no case: only NaN or inf where {mid} computes other values"
    return None


def analyse(aid: str, results: list[Result]) -> list[Result]:
    assignment = registry.load(aid)
    path = REPO / "solutions" / aid / assignment.code_file
    solution = load_module(path.read_text(), f"solution_{aid}")
    for res in results:
        if res.error:
            res.status = "error"
            continue
        if not res.questions:
            res.status = "unreached"
            continue
        module = load_module(res.mutant.source, f"mutant_{res.mutant.index}")
        if res.mutant.parts:
            analyse_multi(res, solution, module, assignment)
            continue
        if res.score < res.max_score - 1e-9:
            res.status = "killed"
            res.wrong_names = check_names(res, module, assignment)
        else:
            res.evidence = diff_test(res, solution, module, assignment) or ""
            res.status = "escaped" if res.evidence else "equivalent"
    return results


def analyse_multi(
    res: Result, solution: types.ModuleType, module: types.ModuleType, assignment: Assignment
) -> None:
    """A multi-mistake file: each question of a mutated function must lose points where its
    function, alone, differs from the solution's on the question's cases; a question of an
    unmutated function must keep them; every name must reproduce the question's function."""
    problems = []
    graded = {q.function for q in assignment.questions if isinstance(q, CodeQuestion)}
    in_helper = any(p.function not in graded for p in res.mutant.parts)
    own: dict[str, types.ModuleType] = {}  # a mutated function whose mistake alone shows
    for qid in res.questions:
        q = assignment.question(qid)
        assert isinstance(q, CodeQuestion)
        score, top = res.scores.get(qid, (0.0, 0.0))
        if q.function in res.mutant.functions:
            part = next(p for p in res.mutant.parts if p.function == q.function)
            alone = load_module(part.source, f"part_{part.index}")
            shows = any(
                _differs(getattr(solution, q.function), getattr(alone, q.function), case, q)
                for seed in DIFF_SEEDS[:2]
                for case in q.cases(seed)
            )
            if shows:
                own[q.function] = alone
            # a random procedure graded by distribution: one draw that differs proves nothing
            if shows and score >= top - 1e-9 and q.custom is None:
                problems.append(f"missed: {q.function} ({part.change})")
        elif score < top - 1e-9 and not in_helper:  # a helper's mistake is docked where it is used
            problems.append(f"charged again: {qid} ({score:g}/{top:g}, own function unmutated)")
    mutated_graded = [p.function for p in res.mutant.parts if p.function in graded]

    @cache  # one restored file per question's function, however many names it has
    def carried(function: str) -> types.ModuleType:
        restored = load_module(res.mutant.source, f"carried_{res.mutant.index}_{function}")
        for name in mutated_graded:
            if name != function:
                setattr(restored, name, getattr(solution, name))
        return restored

    res.wrong_names = check_names(res, module, assignment, own, carried)
    res.evidence = "; ".join(problems)
    res.status = "multi-ok" if not problems and not res.wrong_names else "multi-wrong"


def _differs(
    want_fn: Callable[..., Any], got_fn: Callable[..., Any], case: Case, q: CodeQuestion
) -> bool:
    want, err = call(want_fn, case, q.torch_inputs)
    if err is not None:
        return False
    got, err = call(got_fn, case, q.torch_inputs)
    return err is not None or not same(got, want, q)


def _job(job: tuple[str, list[Mutant], dict[str, set[str]]]) -> list[Result]:
    """A pack graded and analysed with the pool process's trusted outputs kept, as a batch's pool
    process grades (the packs of an assignment meet the same cases)."""
    aid, mutants, reaches = job
    with pool_process.keeping():
        return analyse(aid, grade_pack(aid, mutants, reaches))


# ---------------------------------------------------------------------------- report


def summarize_multi(aid: str, results: list[Result]) -> dict[str, float]:
    """Multi-mistake files: how many had every mistake docked once and no name that is not there."""
    files = [r for r in results if r.status.startswith("multi")]
    wrong = [r for r in files if r.status == "multi-wrong"]
    missed = sum(r.evidence.count("missed:") for r in files)
    again = sum(r.evidence.count("charged again:") for r in files)
    named_wrong = sum(1 for r in files if r.wrong_names)
    print(
        f"\n== {aid}: {len(files)} multi-mistake files ({len(results) - len(files)} not graded), "
        f"right {len(files) - len(wrong)}; mistakes missed {missed}, questions charged again "
        f"{again}, files with a wrong naming {named_wrong}"
    )
    for r in wrong:
        print(f"   {r.mutant.label()}\n           {r.evidence} {'; '.join(r.wrong_names)}")
    for r in results:
        if r.status == "error":
            print(f"   ERROR {r.mutant.label()}: {r.error}")
    return {"files": len(files), "missed": missed, "again": again, "wrong": named_wrong}


def summarize(aid: str, results: list[Result], show_equivalent: bool = False) -> dict[str, float]:
    by = {
        s: [r for r in results if r.status == s]
        for s in ("killed", "equivalent", "escaped", "unreached", "error")
    }
    killed, escaped = len(by["killed"]), len(by["escaped"])
    named = [r for r in by["killed"] if r.named]
    wrong = [r for r in named if r.wrong_names]
    score = killed / (killed + escaped) if killed + escaped else 1.0
    share = len(wrong) / len(named) if named else 0.0
    print(
        f"\n== {aid}: {len(results)} mutants, killed {killed}, equivalent {len(by['equivalent'])}, "
        f"escaped {escaped}, unreached {len(by['unreached'])}, errors {len(by['error'])}"
    )
    print(
        f"   mutation score {score:.4f} (killed / non-equivalent); named killed {len(named)}, "
        f"wrong namings {len(wrong)} ({share:.1%} of named)"
    )
    families: dict[str, list[int]] = {}
    for r in results:
        if r.status in ("killed", "escaped"):
            families.setdefault(r.mutant.operator, [0, 0])[r.status == "escaped"] += 1
    print(
        "   by family (killed/escaped): "
        + ", ".join(f"{k} {v[0]}/{v[1]}" for k, v in sorted(families.items()))
    )
    for r in by["escaped"]:
        print(f"   ESCAPED {r.mutant.label()}\n           shown by {r.evidence}")
    for r in wrong:
        print(f"   WRONG NAME {r.mutant.label()}\n           {'; '.join(r.wrong_names)}")
    for r in by["equivalent"] if show_equivalent else ():
        print(f"   equivalent {r.mutant.label()}")
    for r in by["error"]:
        print(f"   ERROR {r.mutant.label()}: {r.error}")
    return {
        "mutants": len(results),
        "killed": killed,
        "equivalent": len(by["equivalent"]),
        "escaped": escaped,
        "score": score,
        "named": len(named),
        "wrong": len(wrong),
        "wrong_share": share,
    }


def table(rows: dict[str, dict[str, float]]) -> None:
    """The figures of every assignment run, one line each (the README's table)."""
    print(
        "\n| assignment | mutants | killed | equivalent | escaped | mutation score | named | wrong namings |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for aid, f in rows.items():
        print(
            f"| {aid} | {f['mutants']} | {f['killed']} | {f['equivalent']} | {f['escaped']} | {f['score']:.3f} "
            f"| {f['named']} | {f['wrong']} ({f['wrong_share']:.1%}) |"
        )


def _start_grader(parent: int) -> None:
    """A pool process: warm templates, as a batch has them, and an end with this run's."""
    end_with(parent)
    zygote.enable_as_wanted()


def pool(jobs: int) -> ProcessPoolExecutor:
    """Processes that grade packs, shared by assignments."""
    ctx = multiprocessing.get_context("spawn")
    return ProcessPoolExecutor(
        max_workers=max(1, jobs),
        mp_context=ctx,
        initializer=_start_grader,
        initargs=(os.getpid(),),
    )


def run(
    aid: str, jobs: int, limit: int | None, operators: str = "ast", multi: int = 0
) -> list[Result]:
    """Every mutant of `aid` (or an evenly spread `limit` of them), graded and analysed on a pool
    of `jobs` processes."""
    with pool(jobs) as graders:
        return list(submit(aid, graders, limit, operators, multi))


def mutants_of(path: Path, operators: str, limit: int | None, multi: int) -> list[Mutant]:
    """The single mutants of one operator set (an even spread of `limit`), or `multi` files
    combining them."""
    mutants = generate_cosmic_ray(path) if operators == "cosmic-ray" else generate(path)
    if multi:
        return combine(path, mutants, multi)
    if limit and len(mutants) > limit:
        step = len(mutants) / limit
        mutants = [mutants[int(i * step)] for i in range(limit)]
    return mutants


def submit(
    aid: str,
    graders: ProcessPoolExecutor,
    limit: int | None,
    operators: str = "ast",
    multi: int = 0,
) -> Iterator[Result]:
    """Send `aid`'s mutants to the pool now (in packs); their results, in order, as they come."""
    assignment = registry.load(aid)
    path = REPO / "solutions" / aid / str(assignment.code_file)
    mutants = mutants_of(path, operators, limit, multi)
    reaches = reach(path)
    work = [(aid, mutants[s : s + PACK], reaches) for s in range(0, len(mutants), PACK)]
    packs = graders.map(_job, work)  # submitted at once: the next assignment's packs queue behind
    return (r for batch in packs for r in batch)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="+", help="a1 … a6 or full ids")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="submissions graded at a time")
    parser.add_argument("--limit", type=int, default=None, help="at most N mutants per assignment")
    parser.add_argument(
        "--show-equivalent", action="store_true", help="list the equivalent mutants too"
    )
    parser.add_argument(
        "--operators",
        choices=("ast", "cosmic-ray"),
        default="ast",
        help="whose mutation operators: this file's AST edits or cosmic-ray's (a dev dependency)",
    )
    parser.add_argument(
        "--multi",
        type=int,
        default=0,
        metavar="N",
        help="grade N files of two or three mutants in different functions instead",
    )
    args = parser.parse_args(argv)
    failed = False
    rows = {}
    started = time.monotonic()
    with pool(args.jobs) as graders:  # one pool, every assignment's packs queued at once
        pending = {
            aid: submit(aid, graders, args.limit, args.operators, args.multi)
            for aid in dict.fromkeys(registry.resolve_id(name) for name in args.assignments)
        }
        for aid, results in pending.items():
            results = list(results)
            if args.multi:
                rows[aid] = summarize_multi(aid, results)
            else:
                rows[aid] = summarize(aid, results, args.show_equivalent)
            failed |= any(r.status == "error" for r in results)
            print(f"   (done {time.monotonic() - started:.0f} s after the start)")
    if not args.multi:
        table(rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
