"""Declared relations between symbols: "h = tanh(z)" beside the declared names h and z.

They travel with the declared names (one list of strings, through the judge's process
boundary). When a question declares one, both the answer and the expected expression are
compared with every related symbol replaced by its definition, so `1 - tanh(z)^2` and
`1 - h^2` are the same answer where h = tanh(z).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from grader.written.expr.canonical import canonical
from grader.written.expr.errors import ExprError
from grader.written.expr.nodes import BinOp, Call, Neg, Node, Pow, Sym, postorder
from grader.written.expr.parser import read
from grader.written.expr.printing import show
from grader.written.expr.verdict import Verdict

if TYPE_CHECKING:
    from grader.written.expr.memo import Memo


def declarations(symbols: Sequence[str] | None) -> tuple[list[str] | None, dict[str, str]]:
    """The declared names and the relations among them:
    ["h", "z", "h = tanh(z)"] -> (["h", "z"], {"h": "tanh(z)"})."""
    if symbols is None:
        return None, {}
    names: list[str] = []
    relations: dict[str, str] = {}
    for entry in symbols:
        name, sep, definition = str(entry).partition("=")
        name = name.strip()
        if sep:
            relations[name] = definition.strip()
        if name not in names:
            names.append(name)
    return names, relations


def substitute(tree: Node, values: dict[str, Node]) -> Node:
    """`tree` with every symbol named in `values` replaced by its tree (without recursion:
    long sums are deep)."""
    built: dict[int, Node] = {}
    for node in postorder(tree):
        match node:
            case Sym(name):
                new = values.get(name, node)
            case Call(name, args):
                new = Call(name, tuple(built[id(a)] for a in args))
            case Neg(operand):
                new = Neg(built[id(operand)])
            case BinOp(op, left, right):
                new = BinOp(op, built[id(left)], built[id(right)])
            case Pow(base, exponent):
                new = Pow(built[id(base)], built[id(exponent)])
            case _:
                new = node
        built[id(node)] = new
    return built[id(tree)]


def definitions(
    relations: dict[str, str], names: Sequence[str] | None, memo: Memo | None = None
) -> dict[str, Node]:
    """Each related symbol's definition, read with every declared name but its own."""
    return {k: read(v, [n for n in names or () if n != k], memo).tree for k, v in relations.items()}


def related(
    answer: str,
    expected: str,
    names: list[str],
    relations: dict[str, str],
    check: Callable[[str, str, list[str]], Verdict],
    memo: Memo | None = None,
) -> Verdict:
    """`check`'s verdict with every related symbol replaced by its definition on both sides;
    the answer's reading is shown as the student wrote it. `memo`: the texts read before."""
    try:
        want = read(expected, names, memo)
        defined = definitions(relations, names, memo)
    except ExprError as err:
        raise ValueError(
            f"the expected expression {expected!r} or a relation does not parse: {err}"
        ) from err
    try:
        got = read(answer, names, memo)
    except ExprError as err:
        return Verdict(False, str(err), None, None)
    want_tree, got_tree = want.tree, got.tree
    for _ in relations:  # a relation may use another related symbol
        want_tree, got_tree = substitute(want_tree, defined), substitute(got_tree, defined)
    plain = [n for n in names if n not in relations]
    verdict = check(show(got_tree), show(want_tree), plain)
    if verdict.error is not None:
        return verdict
    note = "; ".join(got.notes) or None
    return Verdict(verdict.equivalent, None, got.shown, verdict.method, canonical(got.tree), note)
