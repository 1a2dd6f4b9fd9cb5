"""Held-out files stored as a base file plus declared edits, and the tool that writes the edits.

Most held-out files are one student's program with one mistake: a near-copy of another file of
the same style. Such a file is stored as `<name>.edit` beside the whole files of its
assignment and generated from its base, the way the mutation runner splices a mutant:

    # question: a7.ngram_prob          <- the generated file's first line, verbatim
    # @base correct__loops.py          <- a whole .py file of the same folder
    # @replace ngram_prob              <- base piece `ngram_prob` becomes the text below
    <text, verbatim, up to the next `# @` line>
    # @delete _helper                  <- base piece `_helper` is left out
    # @before cosine_similarity        <- the text below goes before base piece `cosine_similarity`
    <text>

A piece is one top-level statement of the file after its first line, with the blank lines and
comments above it: a `def` or `class` is keyed by its name, an assignment by its targets, the
module docstring by `__doc__`, any other statement by its first line; a repeated key gets `#2`,
`#3`, ...; `__end__` is the text after the last statement and `__eof__` (for `@before`) the end
of the file. The text of a piece is the whole piece, so a replaced function is written out whole.

`python tests/heldout_edits.py <file.py> ...` writes each file's `.edit` against the whole file of
its folder that gives the shortest edit (and leaves the .py alone); add a case by writing the .py,
running this, checking `generate` gives it back, and deleting the .py.
"""

from __future__ import annotations

import ast
import difflib
import functools
import re
import sys
from pathlib import Path

EDIT_SUFFIX = ".edit"
DIRECTIVE = re.compile(r"^# @(base|replace|delete|before) (\S+)$")


def pieces(body: str) -> list[tuple[str, str]]:
    """The file's text after its first line, as (key, text) pieces whose texts join to `body`."""
    tree = ast.parse(body)
    lines = body.splitlines(keepends=True)
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    start = 0  # the first line (0-based) of the next piece
    for n, node in enumerate(tree.body):
        end = node.end_lineno  # 1-based, inclusive: lines[start:end]
        if end <= start:  # a second statement on the line the previous one ended on
            continue
        key = _key(node, n, lines)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key}#{seen[key]}"
        out.append((key, "".join(lines[start:end])))
        start = end
    out.append(("__end__", "".join(lines[start:])))
    return out


@functools.lru_cache(maxsize=256)
def _base_pieces(base_text: str) -> tuple[tuple[str, str], ...]:
    """`pieces` of a base file after its first line, parsed once however many edits it bases."""
    return tuple(pieces(_split_first_line(base_text)[1]))


def _key(node: ast.stmt, index: int, lines: list[str]) -> str:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return "__doc__"
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    if targets and all(isinstance(t, ast.Name) for t in targets):
        return ",".join(t.id for t in targets)
    return "".join(lines[node.lineno - 1].split())  # no spaces: the key is one directive word


def _split_first_line(text: str) -> tuple[str, str]:
    first, _, body = text.partition("\n")
    return first + "\n", body


def parse_edit(text: str) -> tuple[str, str, list[tuple[str, str, str]]]:
    """An edit's (first line, base file name, [(op, key, text), ...])."""
    first, rest = _split_first_line(text)
    lines = rest.splitlines(keepends=True)
    m = DIRECTIVE.match(lines[0].rstrip("\n")) if lines else None
    if not m or m.group(1) != "base":
        raise ValueError(f"an edit's second line is `# @base <file>`, got {lines[:1]}")
    base, ops = m.group(2), []
    for line in lines[1:]:
        m = DIRECTIVE.match(line.rstrip("\n"))
        if m and m.group(1) != "base":
            ops.append([m.group(1), m.group(2), ""])
        elif ops and ops[-1][0] != "delete":
            ops[-1][2] += line
        else:
            raise ValueError(f"text outside a @replace or @before: {line!r}")
    return first, base, [tuple(op) for op in ops]


def apply(edit_text: str, base_text: str) -> str:
    """The file an edit declares, from its base's text."""
    first, _, ops = parse_edit(edit_text)
    replaced = {k: t for op, k, t in ops if op == "replace"} | {
        k: "" for op, k, _ in ops if op == "delete"
    }
    before: dict[str, str] = {}
    for op, k, t in ops:
        if op == "before":
            before[k] = before.get(k, "") + t
    base = _base_pieces(base_text)
    keys = {k for k, _ in base} | {"__eof__"}
    unknown = (set(replaced) | set(before)) - keys
    if unknown:
        raise ValueError(f"the edit names pieces its base does not have: {sorted(unknown)}")
    out = [first]
    for key, text in base:
        out += [before.get(key, ""), replaced.get(key, text)]
    out.append(before.get("__eof__", ""))
    return "".join(out)


def make(target_text: str, base_name: str, base_text: str) -> str:
    """The shortest edit (in these terms) that turns the base into the target."""
    first, body = _split_first_line(target_text)
    base = pieces(_split_first_line(base_text)[1])
    goal = pieces(body)
    out = [first, f"# @base {base_name}\n"]
    matcher = difflib.SequenceMatcher(None, base, goal, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        text = "".join(t for _, t in goal[j1:j2])
        if tag == "equal":
            continue
        if tag == "delete":
            out += [f"# @delete {k}\n" for k, _ in base[i1:i2]]
            continue
        if tag == "insert":
            anchor = base[i1][0] if i1 < len(base) else "__eof__"
            out.append(f"# @before {anchor}\n{text}")
            continue
        out.append(f"# @replace {base[i1][0]}\n{text}")  # the run's first piece takes the text
        out += [f"# @delete {k}\n" for k, _ in base[i1 + 1 : i2]]
    edit = "".join(out)
    if any(DIRECTIVE.match(line) for line in body.splitlines()):
        raise ValueError("the file has a line that reads as an edit directive")
    return edit


def best_edit(path: Path, bases: list[Path]) -> str | None:
    """The shortest edit of `path` against any of `bases`, or None if none is shorter than it."""
    target = path.read_text()
    best = None
    for base in bases:
        if base == path:
            continue
        try:
            edit = make(target, base.name, base.read_text())
        except (SyntaxError, ValueError):
            return None
        if apply(edit, base.read_text()) != target:
            continue
        if best is None or len(edit.splitlines()) < len(best.splitlines()):
            best = edit
    if best is None or len(best.splitlines()) >= len(target.splitlines()):
        return None
    return best


def main(argv: list[str]) -> int:
    for name in argv:
        path = Path(name)
        bases = sorted(p for p in path.parent.glob("*.py") if p != path)
        edit = best_edit(path, bases)
        if edit is None:
            print(f"{path}: no edit shorter than the file; keep it whole")
            continue
        path.with_suffix(EDIT_SUFFIX).write_text(edit)
        print(f"{path.with_suffix(EDIT_SUFFIX)}: {len(edit.splitlines())} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
