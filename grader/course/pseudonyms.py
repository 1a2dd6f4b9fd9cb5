"""Blind review: each student gets a stable pseudonym (kept in a private mapping file, reused on
every run) that replaces their names, emails, SIDs and folder names wherever the report and the
gradebook would show them."""

from __future__ import annotations

import csv
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

COLUMNS = ("pseudonym", "identity", "submission", "name", "email", "sid")


def read_mapping(path: Path) -> dict[str, str]:
    """identity (the variant key, else the folder name) -> pseudonym, from the mapping file."""
    if not Path(path).is_file():
        return {}
    rows = csv.DictReader(Path(path).read_text(encoding="utf-8").splitlines())
    return {r["identity"]: r["pseudonym"] for r in rows if r.get("identity") and r.get("pseudonym")}


def assign(identities: Iterable[str], known: Mapping[str, str]) -> dict[str, str]:
    """A pseudonym for every identity: the known one, else a new random `anon-xxxxxx` (random, so
    that it says nothing about the student, not even their order)."""
    out = dict(known)
    used = set(out.values())
    for ident in identities:
        if ident not in out:
            name = f"anon-{secrets.token_hex(3)}"
            while name in used:
                name = f"anon-{secrets.token_hex(3)}"
            out[ident] = name
            used.add(name)
    return out


def write_mapping(path: Path, rows: Iterable[Mapping[str, str]]) -> None:
    """The private mapping file (pseudonym, identity, submission, name, email, sid)."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.DictWriter(fh, COLUMNS, lineterminator="\n", extrasaction="ignore")
        out.writeheader()
        out.writerows(sorted(rows, key=lambda r: r["pseudonym"]))
    Path(path).chmod(0o600)


def scrub(value: Any, replace: Mapping[str, str]) -> Any:
    """`value` (a results.json) with every occurrence of the strings in `replace` swapped, longest
    first (so that `ada@uni.edu` goes before `ada`); keys are left as they are."""
    order = sorted((k for k in replace if k), key=len, reverse=True)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            for k in order:
                if k in v:
                    v = v.replace(k, replace[k])
            return v
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(value)
