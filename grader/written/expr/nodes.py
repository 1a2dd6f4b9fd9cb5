"""The parsed expression tree: its node types (frozen dataclasses) and the walks over it that
every reader shares."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from fractions import Fraction


class Op(enum.Enum):
    """A binary operator other than a power; IMUL is a product written without `*` (`2d`)."""

    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    IMUL = "imul"


@dataclass(frozen=True, slots=True)
class Num:
    """A number literal: its exact value and the text it was written as (`0.5`)."""

    value: Fraction
    text: str


@dataclass(frozen=True, slots=True)
class Sym:
    """A declared symbol (or, in the trusted mode, any name)."""

    name: str


@dataclass(frozen=True, slots=True)
class Const:
    """A named constant."""

    name: str
    """`e` or `pi`."""


@dataclass(frozen=True, slots=True)
class Neg:
    """A unary minus."""

    operand: Node


@dataclass(frozen=True, slots=True)
class BinOp:
    """`left op right` for a sum, difference, product or quotient."""

    op: Op
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Pow:
    """`base ^ exponent`."""

    base: Node
    exponent: Node


@dataclass(frozen=True, slots=True)
class Call:
    """A whitelisted function applied to its arguments: `exp(x)`, `max(a, b)`."""

    name: str
    args: tuple[Node, ...]
    """In the order written; one for most functions, two or more for `max` and `min`."""


Node = Num | Sym | Const | Neg | BinOp | Pow | Call

SUMS = frozenset((Op.ADD, Op.SUB))
PRODUCTS = frozenset((Op.MUL, Op.IMUL, Op.DIV))


def children(node: Node) -> tuple[Node, ...]:
    """A node's operands, left to right."""
    if isinstance(node, BinOp):
        return (node.left, node.right)
    if isinstance(node, Pow):
        return (node.base, node.exponent)
    if isinstance(node, Neg):
        return (node.operand,)
    if isinstance(node, Call):
        return node.args
    return ()


def postorder(tree: Node) -> list[Node]:
    """Every node once, children before parents, without recursion (long sums are deep)."""
    out: list[Node] = []
    stack: list[tuple[Node, bool]] = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            out.append(node)
            continue
        stack.append((node, True))
        for child in reversed(children(node)):
            stack.append((child, False))
    return out


def spine(tree: Node, family: frozenset[Op]) -> tuple[Node, list[tuple[Op, Node]]]:
    """A left-nested chain a op b op c ... as (a, [(op, b), (op, c), ...]), without recursion."""
    rest: list[tuple[Op, Node]] = []
    node = tree
    while isinstance(node, BinOp) and node.op in family:
        rest.append((node.op, node.right))
        node = node.left
    rest.reverse()
    return node, rest
