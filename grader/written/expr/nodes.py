"""The parsed expression tree: its node kinds and the walks over it that every reader shares."""

from __future__ import annotations

# Tree nodes are tuples: ("num", Fraction, text), ("sym", name), ("const", name),
# ("+"|"-"|"*"|"/"|"^", left, right), ("neg", operand), ("call", fname, (args...)),
# and ("imul", left, right) for a product written without `*`.


def _children(tree: tuple) -> tuple[tuple, ...]:
    kind = tree[0]
    if kind in ("num", "sym", "const"):
        return ()
    if kind == "call":
        return tuple(tree[2])
    if kind == "neg":
        return (tree[1],)
    return (tree[1], tree[2])


def postorder(tree: tuple) -> list[tuple]:
    """Every node once, children before parents, without recursion (long sums are deep)."""
    out: list[tuple] = []
    stack: list[tuple[tuple, bool]] = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            out.append(node)
            continue
        stack.append((node, True))
        for child in reversed(_children(node)):
            stack.append((child, False))
    return out


def spine(tree: tuple, family: tuple[str, ...]) -> tuple[tuple, list[tuple[str, tuple]]]:
    """A left-nested chain a op b op c ... as (a, [(op, b), (op, c), ...]), without recursion."""
    rest: list[tuple[str, tuple]] = []
    node = tree
    while node[0] in family:
        rest.append((node[0], node[2]))
        node = node[1]
    rest.reverse()
    return node, rest
