"""Reading a list answer as students write one, and saying how it was read: a list written
as a string (`"[2, 3, 1]"`, `"2 3 1"` where the items are numbers), and items that are tuples
of symbols (a6's BPE merges, `"s t"`).

Items of symbols are asked for as the symbols separated by a space. Also read, when every
item then has as many symbols as the question's items have:
- an item as a TOML array of strings: `["s", "t"]` (as `bpe_learn` returns a merge);
- an item as a Python tuple in a string: `"(s, t)"`, `"('s', 't')"`;
- an item with the merged symbol after an arrow: `"s t -> st"` (the arrow's right side must be
  the symbols joined);
- the whole list as one string of tuples: `"(s, t), (e, r)"`.
"""

from __future__ import annotations

import re
from typing import Any

_TUPLE = re.compile(r"\(([^()]*)\)")
_ARROW = re.compile(r"\s*(?:->|→|=>)\s*")
MAX_ITEMS = 1000  # items read; a longer list is left as written
MAX_TEXT = 20_000  # characters of a list written as one string
_NUMBERS = re.compile(r"[+-]?\d+(?:\.\d*)?(?:\s+[+-]?\d+(?:\.\d*)?)+")


def read_list(value: Any, parts: int | None, numeric: bool) -> tuple[Any, str | None]:
    """A list answer as `as_list` reads it, and a note when it was rewritten: a list written
    as a string in brackets (`"[2, 3, 1]"`), numbers separated by spaces where every item
    asked for is a number (`"2 3 1"`), and items of `parts` symbols (`read_items`)."""
    note = None
    if isinstance(value, str) and len(value) <= MAX_TEXT:
        text = value.strip()
        if text[:1] == "[" and text[-1:] == "]" and "[" not in text[1:-1]:
            items = [i.strip().strip("'\"").strip() for i in text[1:-1].split(",")]
            value, note = [i for i in items if i], "the list written as a string was read as a list"
        elif numeric and "," not in text and _NUMBERS.fullmatch(text):
            value, note = text.split(), "numbers separated by spaces were read as a list"
    value, tuples = read_items(value, parts)
    return value, "; ".join(n for n in (note, tuples) if n) or None


def read_items(value: Any, parts: int | None) -> tuple[Any, str | None]:
    """The list answer with its items in the asked-for form where they unambiguously spell
    `parts` symbols, and a note when any was rewritten; the value unchanged otherwise."""
    if parts is None:
        return value, None
    items: list[Any]
    if isinstance(value, str) and _TUPLE.search(value):
        found = _TUPLE.findall(value)
        if not found or _TUPLE.sub("", value).strip(" ,;\n\t"):
            return value, None  # text outside the tuples: not a list of tuples
        items = found
    elif isinstance(value, list):
        items = value
    else:
        return value, None
    if len(items) > MAX_ITEMS:
        return value, None
    out = [_item(x, parts) for x in items]
    if all(isinstance(x, str) for x in out) and out != items:
        return out, "the items were read as symbols separated by a space, such as `a b`"
    if isinstance(value, str):  # tuples that did not all read: the string as written
        return value, None
    return [o if isinstance(o, str) else x for o, x in zip(out, items)], None


def _item(x: Any, parts: int) -> Any:
    """One item in the asked-for form, or the item as it was when it spells no such tuple."""
    if isinstance(x, list):
        symbols = [s.strip() for s in x if isinstance(s, str)]
        if len(symbols) == len(x) == parts and all(symbols) and not any(" " in s for s in symbols):
            return " ".join(symbols)
        return x
    if not isinstance(x, str):
        return x
    text = x.strip()
    arrow = _ARROW.split(text)
    if len(arrow) == 2:
        left, right = arrow
        symbols = _symbols(left)
        if symbols and len(symbols) == parts and "".join(symbols) == right.strip():
            return " ".join(symbols)
        return x
    inner = text[1:-1] if text[:1] + text[-1:] in ("()", "[]") else None
    if inner is not None or "," in text:
        symbols = [s.strip().strip("'\"").strip() for s in (inner or text).split(",")]
        if len(symbols) == parts and all(symbols) and not any(" " in s for s in symbols):
            return " ".join(symbols)
    return x


def _symbols(text: str) -> list[str]:
    """`s t`, `(s, t)`, `('s', 't')`: the symbols."""
    text = text.strip()
    if text[:1] + text[-1:] in ("()", "[]"):
        text = text[1:-1]
    if "," in text:
        return [s.strip().strip("'\"").strip() for s in text.split(",")]
    return text.split()
