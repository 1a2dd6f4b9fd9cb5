"""The one check every staff file's table gets: its keys are among those known, or the error
names the unknown ones and lists what may be written instead."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any


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
