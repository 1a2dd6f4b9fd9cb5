"""The methods `dataclasses` writes for the grader's records, compiled once and kept as bytecode.

`@dataclass` writes each class's `__init__`, `__repr__`, `__eq__` (and a frozen class's
`__setattr__`, `__delattr__`, `__hash__`) as source text and compiles it at every import: for
the 40 records a single grade imports, about 45 ms of its 120 ms of the grader's own imports
(benchmarks/bench.py, the README's speed table). Python keeps no bytecode for that text, so
this module does, the way it keeps a module's: the text is the key (the same text compiles to
the same code, so a stale entry can never be used for another class), and the code objects are
stored with `marshal` in `grader/__pycache__/`, named by the interpreter's cache tag, written only
where a `.pyc` would be (not under `PYTHONDONTWRITEBYTECODE` or `-B`) and read only if whole.

Only the compiling is cached: `dataclasses` still builds every class itself, running the cached
code exactly as it would have run what it compiled. Classes of other packages (the `globals`
`dataclasses` passes name their module) are compiled as usual and never stored.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import marshal
import os
import sys
from pathlib import Path
from types import CodeType
from typing import Any

OURS = ("grader", "reference")
"""The packages whose records are cached (by the module name in the globals they are built in)."""
MAX_ENTRIES = 4000
"""Past this many texts (old versions of edited records pile up in a checkout), the file is
rewritten with this run's texts only."""


class DataclassCache:
    """The texts compiled for our records, by text; loaded from `path`, saved back at exit when
    this process compiled one it did not find there."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes: dict[str, CodeType] = _read(path)
        self.used: set[str] = set()
        self.compiled = 0

    def exec(self, source: Any, globals: Any = None, locals: Any = None) -> None:
        """`exec` as `dataclasses` calls it, with the compiling of our records' text cached."""
        ours = (
            isinstance(source, str)
            and isinstance(globals, dict)
            and str(globals.get("__name__", "")).split(".", 1)[0] in OURS
        )
        if not ours:
            return builtins.exec(source, globals, locals)
        code = self.codes.get(source)
        if code is None:
            code = self.codes[source] = compile(source, "<string>", "exec")
            self.compiled += 1
        self.used.add(source)
        return builtins.exec(code, globals, locals)

    def save(self) -> None:
        """Write the codes (atomically: a batch's processes may save at once), if there are new
        ones and bytecode may be written; a folder that cannot be written to is left as it is."""
        if not self.compiled or sys.dont_write_bytecode:
            return
        keep = self.codes
        if len(keep) > MAX_ENTRIES:
            keep = {k: v for k, v in keep.items() if k in self.used}
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(exist_ok=True)
            tmp.write_bytes(marshal.dumps(keep))
            os.replace(tmp, self.path)
        except OSError:
            import contextlib

            with contextlib.suppress(OSError):
                tmp.unlink()
        self.compiled = 0


def _read(path: Path) -> dict[str, CodeType]:
    """The stored codes, or none when the file is missing, unreadable or not wholly ours."""
    try:
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, CodeType) for k, v in data.items()
    ):
        return {}
    return data


def default_path() -> Path:
    tag = sys.implementation.cache_tag or "python"
    return Path(__file__).resolve().parent / "__pycache__" / f"dataclass-methods.{tag}.marshal"


def install(path: Path | None = None) -> DataclassCache:
    """Route `dataclasses`' compiling of our records through a cache, once per process. (Python
    3.10 to 3.13 compile them with a call of `exec` by its name, which a global of the module
    `dataclasses` answers before the builtin; a version that compiled otherwise would simply
    not use the cache.)"""
    current = getattr(dataclasses, "exec", None)
    if isinstance(getattr(current, "__self__", None), DataclassCache):
        return current.__self__
    cache = DataclassCache(path or default_path())
    dataclasses.exec = cache.exec  # type: ignore[attr-defined] # a module global shadows the builtin
    atexit.register(cache.save)
    return cache
