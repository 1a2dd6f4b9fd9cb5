"""What every staff file gets: its keys checked against those known (the error names the unknown
ones and lists what may be written instead), and a CSV read however a spreadsheet saved it."""

from __future__ import annotations

import csv
import re
from collections.abc import Collection
from typing import Any

_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+")


def csv_rows(text: str) -> csv.DictReader:
    """The rows of a staff CSV (a byte-order mark already dropped) by its header's names, with
    the separator its header uses: a comma, or the semicolon or tab of a spreadsheet saved in a
    locale whose decimal mark is the comma (whose "5,5" is then read as 5.5 by `number_text`)."""
    lines = text.splitlines()
    header = lines[0] if lines else ""
    separator = next((s for s in (",", ";", "\t") if s in header), ",")
    return csv.DictReader(lines, delimiter=separator)


def number_text(value: str) -> str:
    """A spreadsheet's number as Python reads it: a decimal comma ("5,5") becomes a point."""
    text = value.strip()
    return text.replace(",", ".") if _DECIMAL_COMMA.fullmatch(text) else text


def known_keys(
    table: Any, known: Collection[str], where: str, error: type[Exception], noun: str = "setting"
) -> dict[str, Any]:
    """`table` when it is a table whose keys are all `known`; else `error` with `where` ("term.toml
    [limits]"), the unknown keys and the known ones."""
    if not isinstance(table, dict):
        raise error(f"{where}: a table of {', '.join(known)}")
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise error(
            f"{where}: unknown {noun} {', '.join(map(repr, unknown))} (known: {', '.join(known)})"
        )
    return table
