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
            items = _split_commas(text[1:-1])
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
        return (_joined(symbols, parts) if len(symbols) == len(x) else None) or x
    if not isinstance(x, str):
        return x
    text = x.strip()
    arrow = _ARROW.split(text)
    if len(arrow) == 2:  # `s t -> st`: the right side must be the symbols joined
        left, right = arrow
        symbols = _symbols(left)
        return (_joined(symbols, parts) if "".join(symbols) == right.strip() else None) or x
    inner = text[1:-1] if text[:1] + text[-1:] in ("()", "[]") else None
    if inner is not None or "," in text:
        return _joined(_split_commas(inner or text), parts) or x
    return x


def _joined(symbols: list[str], parts: int) -> str | None:
    """`parts` symbols as the asked-for form `s t`, or None when they are not that."""
    if len(symbols) == parts and all(symbols) and not any(" " in s for s in symbols):
        return " ".join(symbols)
    return None


def _symbols(text: str) -> list[str]:
    """`s t`, `(s, t)`, `('s', 't')`: the symbols."""
    text = text.strip()
    if text[:1] + text[-1:] in ("()", "[]"):
        text = text[1:-1]
    return _split_commas(text) if "," in text else text.split()


def _split_commas(text: str) -> list[str]:
    """`'s', "t"` -> [s, t]: the items between commas, quotes and spaces around them dropped."""
    return [s.strip().strip("'\"").strip() for s in text.split(",")]
