"""A generated class for measuring code similarity: disguised copies and independent solutions.

Independent solutions are the held-out `correct__*` files and the instructor's solution of each
assignment, written separately in different styles (loops, lists, numpy, torch, einsum).
Copies are made from each whole solution by program, not by hand: every local name renamed,
the top-level functions put in another order, the comments and docstrings replaced, and all
three at once.
"""

from __future__ import annotations

import ast
import io
import itertools
import keyword
import random
import tokenize
from dataclasses import dataclass

import heldout_harness  # noqa: E402  (the held-out cases, generated from their declared edits)

from grader.course import registry
from grader.course.content import solution_dir

# Held-out files built from the instructor's solution (checked with diff), not written apart:
# a7's is the solution with float32 wrappers appended, a1's two the solution with one function
# rewritten. They join the class as copies of the solution.
NOT_INDEPENDENT = {
    ("a7_classification_ngrams", "correct__float32.py"): "wrapped",
    ("a1_word_vectors", "correct__sgns_one_over_then_log.py"): "edited",
    ("a1_word_vectors", "correct__sgns_torch_log_of_sigmoid.py"): "edited",
}


@dataclass(frozen=True)
class Case:
    """A named code in the class, and the solution it was made from (None: written on its own)."""

    name: str
    assignment: str  # full id
    code: str
    copy_of: str | None = None  # the name of the code it disguises
    disguise: str = ""  # "renamed", "reordered", "recommented", "all"


def independent(assignment: str) -> dict[str, str]:
    """The assignment's independently written correct solutions, by name."""
    a = registry.load(assignment)
    out = {f"{assignment}/solution": (solution_dir(a.id) / a.code_file).read_text()}
    for path in sorted(heldout_harness.folder(assignment).glob("correct__*.py")):
        if (assignment, path.name) not in NOT_INDEPENDENT:
            out[f"{assignment}/{path.stem}"] = path.read_text()
    return out


def _local_names(tree: ast.Module) -> set[str]:
    """Names assigned inside functions and the parameters of helpers (the graded functions keep
    their names and signatures)."""
    names: set[str] = set()
    graded = {n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")}
    for node in ast.walk(tree):
        if node in graded:  # the grader may pass these by keyword: the signature stays
            continue
        if isinstance(node, (ast.FunctionDef, ast.Lambda)):
            args = node.args
            for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
                names.add(arg.arg)
            for arg in (args.vararg, args.kwarg):
                if arg is not None:
                    names.add(arg.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return {n for n in names - top if not keyword.iskeyword(n) and n != "self"}


def renamed(code: str, seed: int = 0) -> str:
    """Every local variable and helper parameter given another name (keyword arguments follow)."""
    rng = random.Random(seed)
    names = sorted(_local_names(ast.parse(code)))
    words = ["alpha", "beta", "gamma", "delta", "val", "tmp", "acc", "res", "buf", "item"]
    new = {n: f"{rng.choice(words)}_{i}" for i, n in enumerate(names)}
    out, previous = [], None
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        text = tok.string
        after_dot = previous is not None and previous.string == "."
        if tok.type == tokenize.NAME and text in new and not after_dot:
            text = new[text]
        out.append((tok.type, text, tok.start, tok.end, tok.line))
        previous = tok
    return tokenize.untokenize([(t, s) for t, s, *_ in out])


def reordered(code: str, seed: int = 0) -> str:
    """The top-level functions and classes in a shuffled order, the rest kept before them."""
    tree = ast.parse(code)
    lines = code.splitlines(keepends=True)
    blocks, rest = [], []
    for node in tree.body:
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        text = "".join(lines[start - 1 : node.end_lineno])
        (blocks if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else rest).append(text)
    order = list(range(len(blocks)))
    rng = random.Random(seed)
    while len(order) > 1 and order == sorted(order):
        rng.shuffle(order)
    return "".join(rest) + "\n\n" + "\n\n".join(blocks[i] for i in order)


def recommented(code: str) -> str:
    """Comments and docstrings removed, new comments and blank lines put in."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            body[0] = ast.Pass() if len(body) == 1 else None
            node.body = [b for b in body if b is not None]
    out = []
    for i, line in enumerate(ast.unparse(tree).splitlines()):
        out.append(line)
        if i % 4 == 3:
            indent = line[: len(line) - len(line.lstrip())]
            out += [f"{indent}# step {i // 4}: see my notes", ""]
    return "\n".join(out) + "\n"


def disguised(code: str, seed: int = 0) -> dict[str, str]:
    """The four disguises of one solution."""
    return {
        "renamed": renamed(code, seed),
        "reordered": reordered(code, seed),
        "recommented": recommented(code),
        "all": recommented(reordered(renamed(code, seed), seed)),
    }


def build(assignments: list[str]) -> list[Case]:
    """Each assignment's independent solutions, and four disguised copies of every whole one."""
    cases = []
    for aid in assignments:
        for k, (name, code) in enumerate(independent(aid).items()):
            cases.append(Case(name, aid, code))
            whole = "solution" in name or "# question: all" in code.split("\n", 1)[0]
            if whole:
                for how, copy in disguised(code, seed=k).items():
                    cases.append(Case(f"{name}~{how}", aid, copy, copy_of=name, disguise=how))
        for (owner, file), how in NOT_INDEPENDENT.items():
            if owner == aid:
                code = (heldout_harness.folder(aid) / file).read_text()
                cases.append(Case(f"{aid}/{file}", aid, code, f"{aid}/solution", how))
    return cases


def pairs(cases: list[Case]) -> tuple[list[tuple[Case, Case]], list[tuple[Case, Case]]]:
    """(copies, independents): each copy with its original; each two independent solutions."""
    by_name = {c.name: c for c in cases}
    copies = [(by_name[c.copy_of], c) for c in cases if c.copy_of]
    originals = [c for c in cases if c.copy_of is None]
    independents = [
        (a, b) for a, b in itertools.combinations(originals, 2) if a.assignment == b.assignment
    ]
    return copies, independents
