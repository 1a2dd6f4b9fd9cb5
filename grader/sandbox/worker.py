"""The student's side of grading: a standalone worker that imports the submission and runs calls.

This file runs inside the sandbox as a script, where the `grader` package is out of reach,
so it depends on the standard library and numpy only (torch when the submission uses it).
The trusted parent imports it too, for the wire format (`write_message`, `read_message`,
`encode`, `decode`), so both sides share one definition.

Wire format: a message is a JSON header plus binary blobs (arrays as `.npy` bytes):
    u32 json_length, u32 n_blobs, json bytes, then per blob: u64 length, bytes.
Values: JSON scalars and lists; {"__tuple__": [...]}; {"__dict__": [[key, value], ...]};
{"__nd__": i} (blob i, an .npy file checked and read without pickle, each blob referenced
once); and, as arguments only, {"__rng__": seed} (numpy.random.default_rng(seed)) and
{"__lm__": {...}} (a table next_log_probs function for beam search). The decoder is strict
and bounded: nesting depth, entries, integer sizes, array headers and the bytes it builds
are capped, so that a forged frame costs the grader nothing but a `WireError`.

Library shortcuts (see `_make_guard`): the entry points an assignment bans are wrapped the
moment their library is imported (before the student's module runs, whatever its source
says). While a question that bans one runs, calling it is refused with `ShortcutRefused`:
a shortcut never yields a value, whatever the submission does to the record of hits.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import os
import struct
import sys
import traceback
from typing import Any, BinaryIO

import numpy as np

MAX_DEPTH = 32  # nesting of lists, tuples and dicts in one value
MAX_ITEMS = 200_000  # list/tuple/dict entries per message (arrays are not counted here)
MAX_BLOB_BYTES = 512 << 20  # array bytes per message, on the wire and once decoded
MAX_JSON_BYTES = 8 << 20  # arrays travel as blobs: the JSON part of a message stays small
MAX_NPY_HEADER = 4096  # bytes of an .npy header (a dict of dtype, order and shape)
_INT_LIMIT = 1 << 64  # integers travel exactly below 2**64; beyond that they are refused
_NUMERIC_KINDS = "biufc"


class WireError(Exception):
    """A message that does not follow the wire format (or breaks its limits)."""


class ShortcutRefused(BaseException):  # noqa: N818 - a BaseException: `except Exception` must not swallow it
    """A banned library entry point was called while a question that bans it was running."""


# --------------------------------------------------------------------------- framing


def write_message(stream: BinaryIO, header: Any, blobs: list[bytes]) -> None:
    body = json.dumps(header, allow_nan=True).encode()
    parts = [struct.pack(">II", len(body), len(blobs)), body]
    for blob in blobs:
        parts.append(struct.pack(">Q", len(blob)))
        parts.append(blob)
    stream.write(b"".join(parts))
    stream.flush()


def parse_json(body: bytes) -> Any:
    """JSON; deep nesting, bad bytes, bad syntax and 4300-digit integers are a WireError
    (the decoder then refuses integers beyond 2**64)."""
    try:
        return json.loads(body)
    except RecursionError:
        raise WireError("nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise WireError(f"not valid JSON ({str(exc)[:80]})") from None


def read_message(read_exact) -> tuple[Any, list[bytes]]:
    """Read one message with `read_exact(n) -> bytes` (which raises EOFError on a short read)."""
    n_json, n_blobs = struct.unpack(">II", read_exact(8))
    if n_json > MAX_JSON_BYTES:
        raise WireError(f"a header of {n_json} bytes (at most {MAX_JSON_BYTES})")
    if n_blobs > 4096:
        raise WireError(f"{n_blobs} arrays in one message")
    header = parse_json(read_exact(n_json))
    blobs = []
    total = 0
    for _ in range(n_blobs):
        (size,) = struct.unpack(">Q", read_exact(8))
        total += size
        if total > MAX_BLOB_BYTES:
            raise WireError(f"arrays of more than {MAX_BLOB_BYTES >> 20} MiB in one message")
        blobs.append(read_exact(size))
    return header, blobs


# --------------------------------------------------------------------------- values


def _array_to_blob(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def blob_to_array(blob: bytes) -> np.ndarray:
    """An .npy blob as an array, checked before anything is allocated: numbers only, and a
    header whose shape accounts for exactly the bytes that follow it."""
    buf = io.BytesIO(blob)
    try:
        version = np.lib.format.read_magic(buf)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(
                buf, max_header_size=MAX_NPY_HEADER
            )
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(
                buf, max_header_size=MAX_NPY_HEADER
            )
        else:
            raise WireError(f"an array in .npy format {version}")
    except (ValueError, TypeError, SyntaxError, OverflowError, struct.error) as exc:
        raise WireError(f"an unreadable array header ({str(exc)[:80]})") from None
    if dtype.kind not in _NUMERIC_KINDS or dtype.hasobject or dtype.fields is not None:
        raise WireError("an array must hold numbers or booleans")
    if len(shape) > 32 or any(not isinstance(n, int) or n < 0 for n in shape):
        raise WireError(f"an array of shape {str(shape)[:80]}")
    count = 1
    for n in shape:
        count *= n
    offset = buf.tell()
    if count * dtype.itemsize != len(blob) - offset:
        raise WireError(f"an array header for {count} entries over {len(blob) - offset} bytes")
    flat = np.frombuffer(blob, dtype=dtype, count=count, offset=offset)
    return flat.reshape(shape, order="F" if fortran else "C").copy()


def _torch_to_numpy(x: Any) -> np.ndarray:
    t = x.detach().cpu()
    if t.is_conj():
        t = t.resolve_conj()
    if str(t.dtype) in ("torch.bfloat16", "torch.float16"):
        t = t.float()
    return np.array(t.numpy(), copy=True)


def _is_tensor(x: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def encode(value: Any, blobs: list[bytes], depth: int = 0) -> Any:
    """Turn a value into JSON-able data plus array blobs; refuse anything else with TypeError."""
    if depth > MAX_DEPTH:
        raise TypeError("a value nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        if not -_INT_LIMIT < value < _INT_LIMIT:
            raise TypeError("an integer too large to compare (more than 19 digits)")
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, np.generic):
        if value.dtype.kind not in _NUMERIC_KINDS:
            raise TypeError(f"a numpy scalar of dtype {value.dtype}")
        return encode(value.item(), blobs, depth + 1)
    if isinstance(value, np.ndarray) or _is_tensor(value):
        a = _torch_to_numpy(value) if _is_tensor(value) else np.array(value, copy=True)
        if type(a) is not np.ndarray:
            a = np.asarray(a).view(np.ndarray)
        if a.dtype.kind not in _NUMERIC_KINDS:
            raise TypeError(f"an array of dtype {a.dtype} (expected numbers)")
        blobs.append(_array_to_blob(a))
        return {"__nd__": len(blobs) - 1}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v, blobs, depth + 1) for v in value]}
    if isinstance(value, list):
        if len(value) > MAX_ITEMS:
            raise TypeError("a list that is too long")
        return [encode(v, blobs, depth + 1) for v in value]
    if isinstance(value, dict):
        return {
            "__dict__": [
                [encode(k, blobs, depth + 1), encode(v, blobs, depth + 1)] for k, v in value.items()
            ]
        }
    raise TypeError(f"an object of type {type(value).__name__}")


class _Budget:
    """What one decode may still build: entries, and each blob at most once."""

    def __init__(self, n_blobs: int) -> None:
        self.items = MAX_ITEMS
        self.unused = set(range(n_blobs))

    def take(self, n: int) -> None:
        self.items -= n
        if self.items < 0:
            raise WireError(f"more than {MAX_ITEMS} entries in one message")

    def blob(self, i: Any) -> int:
        if not isinstance(i, int) or isinstance(i, bool) or i not in self.unused:
            raise WireError("a bad or repeated array reference")
        self.unused.discard(i)
        return i


def decode(data: Any, blobs: list[bytes], *, specials: bool = False, as_torch: bool = False) -> Any:
    """The inverse of `encode`, strict: only the documented forms, within the limits above."""
    return _decode(data, blobs, _Budget(len(blobs)), specials, as_torch, 0)


def _decode(
    data: Any, blobs: list[bytes], budget: _Budget, specials: bool, as_torch: bool, depth: int
) -> Any:
    if depth > MAX_DEPTH:
        raise WireError("nested too deeply")
    if data is None or isinstance(data, (bool, float, str)):
        return data
    if isinstance(data, int):
        if not -_INT_LIMIT < data < _INT_LIMIT:
            raise WireError("an integer too large")
        return data
    if isinstance(data, list):
        budget.take(len(data))
        return [_decode(v, blobs, budget, specials, as_torch, depth + 1) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise WireError("unexpected value in message")
    ((tag, inner),) = data.items()
    if tag == "__nd__":
        a = blob_to_array(blobs[budget.blob(inner)])
        if as_torch:
            import torch

            return torch.from_numpy(a)
        return a
    if tag == "__tuple__" and isinstance(inner, list):
        budget.take(len(inner))
        return tuple(_decode(v, blobs, budget, specials, as_torch, depth + 1) for v in inner)
    if tag == "__dict__" and isinstance(inner, list):
        budget.take(len(inner))
        out = {}
        for pair in inner:
            if not isinstance(pair, list) or len(pair) != 2:
                raise WireError("bad dict entry")
            key = _decode(pair[0], blobs, budget, False, False, depth + 1)
            if not isinstance(key, (str, int, bool, type(None), float, tuple)):
                raise WireError("bad dict key")
            out[key] = _decode(pair[1], blobs, budget, specials, as_torch, depth + 1)
        return out
    if specials and tag == "__rng__" and isinstance(inner, int):
        return np.random.default_rng(inner)
    if specials and tag == "__lm__" and isinstance(inner, dict):
        return build_lm(inner)
    raise WireError(f"unexpected tag {str(tag)[:40]!r}")


def build_lm(spec: dict) -> Any:
    """A `next_log_probs(prefix)` function from a table {prefix: log-probs} with a default row."""
    table = {
        tuple(int(t) for t in prefix): np.asarray(row, dtype=np.float64)
        for prefix, row in spec["table"]
    }
    default = np.asarray(spec["default"], dtype=np.float64)

    def next_log_probs(prefix: Any) -> np.ndarray:
        key = tuple(int(t) for t in prefix)
        return table.get(key, default).copy()

    return next_log_probs


# --------------------------------------------------------------------------- library shortcuts

# Names under a banned module that are not shortcuts: grad-mode switches and legacy wrappers
# compute nothing (`with torch.no_grad():` in a manual backward pass is fine).
_NOT_SHORTCUTS = frozenset(
    {
        "no_grad",
        "enable_grad",
        "set_grad_enabled",
        "inference_mode",
        "set_multithreading_enabled",
        "detect_anomaly",
        "set_detect_anomaly",
        "Variable",
        "variable",
        "grad_mode",
        "enforce_grad_layout_policy",
    }
)
_WRAPPED_METHODS = ("__init__", "forward")  # of a banned class: building it, and running it


# The guard is built from closures, created when the worker starts (before any student code
# runs) and reachable from nothing the submission can name: no module attribute to patch (a
# `_Tripwires._hit` to switch off), and at run time the wrappers call no global or builtin (the
# submission may have replaced `builtins.any` or `fnmatch` by then); the factories below bind
# the built-ins they need when they are called. State shared between them: `state` (phase:
# "import" records and allows, "call" refuses what `banned` names, "idle" allows; the student's
# file names) and `hits` (entry point, student file, line, function).


def _make_hit(
    state: dict[str, Any], hits: list[tuple[str, str, int, str]], refused: type[BaseException]
) -> Any:
    """hit(labels): called by every wrapper before the original runs."""
    _getframe = sys._getframe

    def matches(label: str, patterns: tuple[str, ...]) -> bool:
        for p in patterns:  # noqa: SIM110 - no builtins at run time (the student may replace any())
            if label == p or (p[-1:] == "*" and label.startswith(p[:-1])):
                return True
        return False

    def where() -> tuple[str, int, str]:
        frame = _getframe(2)
        files = state["files"]
        while frame is not None:
            base = frame.f_code.co_filename.rpartition("/")[2]
            if base in files:
                return base, frame.f_lineno, frame.f_code.co_name
            frame = frame.f_back
        return "", 0, ""

    def hit(labels: list[str]) -> None:
        phase = state["phase"]
        for label in labels:
            if phase == "call" and matches(label, state["banned"]):
                hits.append((label, *where()))
                raise refused(f"`{label}` is not allowed in this question")
        if phase == "import":
            hits.append((labels[0], *where()))

    return hit


def _make_wrap(hit: Any, labels_of: dict[int, list[str]], originals: dict[int, Any]) -> Any:
    """wrap(owner, name, label): put a guard in front of one entry point (a function, or a
    class's `__init__` and `forward`); an entry point already guarded just gains the label."""
    _getattr, _setattr, _isinstance, _type, _id, _callable = (
        getattr,
        setattr,
        isinstance,
        type,
        id,
        callable,
    )
    function_type = type(_make_wrap)

    def guarded(original: Any, labels: list[str]) -> Any:
        def guard(*args: Any, **kwargs: Any) -> Any:
            hit(labels)
            return original(*args, **kwargs)

        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:  # noqa: SIM105 - no contextlib at run time: see above
                _setattr(guard, attr, _getattr(original, attr))
            except (AttributeError, TypeError):
                pass
        return guard

    def wrap(owner: Any, name: str, label: str) -> None:
        original = _getattr(owner, name, None)
        if original is None or not _callable(original):
            return
        known = labels_of.get(_id(original))
        if known is not None:  # one entry point under several banned names
            if label not in known:
                known.append(label)
            return
        labels = [label]
        if _isinstance(original, type):
            for method in _WRAPPED_METHODS:
                fn = original.__dict__.get(method)
                if _type(fn) is function_type:
                    try:  # noqa: SIM105
                        _setattr(original, method, guarded(fn, labels))
                    except (AttributeError, TypeError):
                        pass
            labels_of[_id(original)] = labels
            return
        wrapper = guarded(original, labels)
        try:
            _setattr(owner, name, wrapper)
        except (AttributeError, TypeError):
            return
        labels_of[_id(original)] = labels
        originals[_id(original)] = wrapper

    return wrap


def _make_expand() -> Any:
    """expand(pattern) -> [(owner, attribute, label)]: the exact entry points a pattern names
    (a wildcard covers the owner's public API, `__all__` when it has one, minus grad-mode
    switches; an exact name also covers its native twin at the library's top level)."""
    _getattr, _dir, _type, _len, _modules, _import = (
        getattr,
        dir,
        type,
        len,
        sys.modules,
        __import__,
    )
    not_shortcuts = _NOT_SHORTCUTS  # bound now: the submission may rebind the module's name

    def resolve(dotted: str) -> Any:
        parts = dotted.split(".")
        obj = _modules.get(parts[0])
        for i in range(1, _len(parts)):
            if obj is None:
                return None
            nxt = _getattr(obj, parts[i], None)
            if nxt is None:  # a submodule not imported yet
                try:
                    _import(".".join(parts[: i + 1]))
                except Exception:  # noqa: BLE001 - not a module: the name does not exist
                    return None
                nxt = _getattr(obj, parts[i], None)
            obj = nxt
        return obj

    def expand(pattern: str) -> list[tuple[Any, str, str]]:
        owner_name, _, last = pattern.rpartition(".")
        owner = resolve(owner_name)
        if owner is None:
            return []
        if "*" not in last:
            # `torch.nn.functional.layer_norm` runs `torch.layer_norm`: the same computation one
            # layer down, under the same name, is the same entry point (a native twin)
            top = _modules.get(pattern.split(".")[0])
            twin = _getattr(top, last, None) if top is not owner else None
            twins = (
                [(top, last, pattern)]
                if _type(twin).__name__ == "builtin_function_or_method"
                else []
            )
            return [(owner, last, pattern), *twins]
        public = _getattr(owner, "__all__", None)
        names = (
            list(public)
            if public is not None
            else [n for n in _dir(owner) if not n.startswith("_")]
        )
        prefix = last[:-1] if last.endswith("*") else None
        out = []
        for name in names:
            if name in not_shortcuts or (prefix is not None and not name.startswith(prefix)):
                continue
            value = _getattr(owner, name, None)
            if value is not None and _type(value).__name__ != "module":
                out.append((owner, name, f"{owner_name}.{name}"))
        return out

    return expand


def _make_mirror(originals: dict[int, Any]) -> Any:
    """mirror(top): every other name a wrapped function has in its library (`torch._C._nn.…`,
    a module's own global, `torch._VF.…`, which resolves names lazily) gets the wrapper too."""
    _getattr, _setattr, _dir, _isinstance, _id, _modules, _list = (
        getattr,
        setattr,
        dir,
        isinstance,
        id,
        sys.modules,
        list,
    )

    def mirror(top: str) -> None:
        for mod_name, module in _list(_modules.items()):
            if module is None or not (mod_name == top or mod_name.startswith(top + ".")):
                continue
            space = _getattr(module, "__dict__", None)
            if not _isinstance(space, dict):
                continue
            for name, value in _list(space.items()):
                wrapper = originals.get(_id(value))
                if wrapper is not None and wrapper is not value:
                    space[name] = wrapper
        vf = _getattr(_modules.get(top), "_VF", None)
        inner = _getattr(vf, "vf", None)
        for name in _dir(inner) if inner is not None else []:
            wrapper = originals.get(_id(_getattr(inner, name, None)))
            if wrapper is not None:
                try:  # noqa: SIM105
                    _setattr(vf, name, wrapper)
                except (AttributeError, TypeError):
                    pass

    return mirror


def _make_mapped() -> Any:
    """mapped(top): whether files of a library's folder are mapped into this process (its native
    libraries stay mapped once loaded, whatever becomes of its modules)."""
    _open = open

    def mapped(top: str) -> bool:
        try:
            with _open("/proc/self/maps", "rb") as fh:
                return f"/{top}/".encode() in fh.read()
        except OSError:
            return False

    return mapped


def _make_guard(refused: type[BaseException]) -> dict[str, Any]:
    """The shortcut guard: configure(patterns, files), begin(phase, banned) -> not bypassed,
    end() -> (hits, bypassed), install_loaded(), watches(name) (for the import hook)."""
    _modules = sys.modules
    state: dict[str, Any] = {
        "phase": "idle",
        "banned": (),
        "files": frozenset(),
        "wanted": (),
        "tops": frozenset(),
    }
    hits: list[tuple[str, str, int, str]] = []
    done: set[str] = set()  # libraries whose entry points are wrapped
    labels_of: dict[int, list[str]] = {}  # id(original) -> the banned names it answers to
    originals: dict[int, Any] = {}  # id(original function) -> its wrapper (for aliases)
    wrap = _make_wrap(_make_hit(state, hits, refused), labels_of, originals)
    expand, mirror, mapped = _make_expand(), _make_mirror(originals), _make_mapped()

    def install_loaded() -> None:
        """Wrap the entry points of every banned library that is loaded now (idempotent)."""
        for top in state["tops"]:
            if top in done or top not in _modules:
                continue
            done.add(top)
            for pattern in state["wanted"]:
                if pattern.split(".")[0] == top:
                    for owner, name, label in expand(pattern):
                        wrap(owner, name, label)
            mirror(top)

    def bypassed() -> bool:
        """A banned library loaded without passing the import hook (it was removed, or its module
        dropped from sys.modules after use): its native libraries stay mapped into the process."""
        missed = False
        for top in state["tops"]:
            if top not in done and (top in _modules or mapped(top)):
                missed = True
        install_loaded()
        return missed

    def configure(patterns: list[str], files: list[str]) -> None:
        state["wanted"] = tuple(str(p) for p in patterns)
        state["tops"] = frozenset(p.split(".")[0] for p in state["wanted"])
        state["files"] = frozenset(str(f).rpartition("/")[2] for f in files)
        install_loaded()

    def begin(phase: str, banned: tuple[str, ...] = ()) -> bool:
        missed = bypassed()
        hits.clear()
        state["phase"], state["banned"] = phase, tuple(str(p) for p in banned)
        return not missed

    def end() -> tuple[list[tuple[str, str, int, str]], bool]:
        state["phase"], state["banned"] = "idle", ()
        missed = bypassed()
        found = list(hits)
        hits.clear()
        return found, missed

    return {
        "configure": configure,
        "begin": begin,
        "end": end,
        "install_loaded": install_loaded,
        "watches": lambda name: name in state["tops"] and name not in done,
    }


class _AfterLoad:
    """A loader that runs `then()` once its module has been executed (the import hook's half)."""

    def __init__(self, inner: Any, then: Any) -> None:
        self._inner, self._then = inner, then

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__spec__.loader = module.__loader__ = self._inner
        self._inner.exec_module(module)
        self._then()


class _ImportHook:
    """Wraps a banned library's entry points the moment it is imported, however it is imported
    (`import torch`, `importlib.import_module("to" + "rch")`, `__import__`)."""

    def __init__(self, guard: dict[str, Any]) -> None:
        from importlib.machinery import PathFinder

        self._find = PathFinder.find_spec
        self._guard = guard

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if "." in name or not self._guard["watches"](name):
            return None
        spec = self._find(name, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _AfterLoad(spec.loader, self._guard["install_loaded"])
        return spec


# --------------------------------------------------------------------------- the worker


def _student_error(exc: BaseException, student_files: set[str]) -> dict:
    """The exception as the student should see it: their own frames only, never ours."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if os.path.basename(f.filename) in student_files
    ]
    where = None
    if (
        isinstance(exc, SyntaxError)
        and exc.filename
        and os.path.basename(exc.filename) in student_files
    ):
        where = {
            "file": os.path.basename(exc.filename),
            "line": exc.lineno,
            "text": (exc.text or "").strip(),
        }
    elif frames:
        f = frames[-1]
        where = {
            "file": os.path.basename(f.filename),
            "line": f.lineno,
            "text": (f.line or "").strip(),
        }
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        message = "<unprintable>"
    etype = type(exc)
    builtin = etype.__module__ == "builtins" and getattr(builtins, etype.__name__, None) is etype
    return {
        "type": etype.__name__,
        "builtin": builtin,
        "message": message[:600],
        "where": where,
    }


class _BlockedFinder:
    """Refuses to import the grader's own packages from student code (best effort without root)."""

    BLOCKED = ("grader", "reference", "solutions", "seqgrade")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.BLOCKED:
            raise ImportError(f"importing {name!r} is not allowed in a submission")
        return None


def _hits_json(hits: list[tuple[str, str, int, str]]) -> dict[str, Any]:
    labels: list[str] = []
    for h in hits:
        if h[0] not in labels:
            labels.append(h[0])
    return {"tripped": labels[:20], "tripped_at": [list(h) for h in hits[:20]]}


def _serve() -> None:
    """The request loop. Everything it relies on after the student's import is bound here, in
    locals, before any student code runs (patching this module's globals changes nothing)."""
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    # Student output goes to stderr (captured by the parent); input reads hit end-of-file.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull)  # noqa: SIM115
    sys.stdout = os.fdopen(1, "w", buffering=1, errors="replace", closefd=False)
    guard = _make_guard(ShortcutRefused)
    # Bound now: a submission that rewrites this module's globals (`_call`, `_hits_json`,
    # `write_message`, found through sys.modules["__main__"]) changes nothing below.
    tools = {
        "begin": guard["begin"],
        "end": guard["end"],
        "hits": _hits_json,
        "error": _student_error,
        "encode": encode,
        "decode": decode,
    }
    receive, call, load, dumps, pack = read_message, _call, _import_student, json.dumps, struct.pack
    import _thread

    threads = _thread._count  # Python threads alive besides the main one (the student's)

    def read_exact(n: int) -> bytes:
        chunks, got = [], 0
        while got < n:
            chunk = proto_in.read(n - got)
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def reply(header: dict, blobs: list[bytes] | None = None) -> None:
        blobs = blobs or []
        body = dumps({**header, "threads": threads()}, allow_nan=True).encode()
        parts = [pack(">II", len(body), len(blobs)), body]
        for blob in blobs:
            parts += [pack(">Q", len(blob)), blob]
        proto_out.write(b"".join(parts))

    state: dict[str, Any] = {"module": None, "files": set(), "bypassed": False}
    while True:
        try:
            request, blobs = receive(read_exact)
        except EOFError:
            return
        op = request.get("op") if isinstance(request, dict) else None
        rid = (
            request.get("id") if isinstance(request, dict) else None
        )  # echoed: the parent matches replies
        if op == "hello":
            _hello(request, guard, state)
            reply({"ok": True, "torch": "torch" in sys.modules, "id": rid})
        elif op == "import":
            reply({**load(request, tools, state), "id": rid})
        elif op == "call":
            header, out_blobs = call(request, blobs, tools, state)
            reply({**header, "id": rid}, out_blobs)
        elif op == "bye":
            return
        else:
            reply(
                {
                    "ok": False,
                    "error": {
                        "type": "GraderError",
                        "message": f"unknown request {op!r}",
                        "where": None,
                    },
                    "id": rid,
                }
            )


def _hello(request: dict, guard: dict[str, Any], state: dict[str, Any]) -> None:
    """Preload the libraries, arm the shortcut guard, then let the submission's folder be imported from."""
    for name in request.get("preload", []):
        with contextlib.suppress(ImportError):
            __import__(name)
    state["files"] = {str(f) for f in request.get("files", [])}
    guard["configure"](list(request.get("tripwires", [])), sorted(state["files"]))
    sys.meta_path.insert(0, _ImportHook(guard))
    sys.meta_path.insert(0, _BlockedFinder())
    here = os.getcwd()
    sys.path[:] = [here] + [p for p in sys.path if p and not _holds_grader(p)]


def _import_student(request: dict, tools: dict[str, Any], state: dict[str, Any]) -> dict:
    import importlib

    tools["begin"]("import")
    try:
        state["module"] = importlib.import_module(str(request.get("module")))
        error = None
    except BaseException as exc:  # noqa: BLE001 - anything the student's import does
        error = tools["error"](exc, state["files"])
    hits, bypassed = tools["end"]()
    state["bypassed"] = state["bypassed"] or bypassed
    out = {"ok": error is None, **tools["hits"](hits), "tampered": state["bypassed"]}
    if error is not None:
        out["error"] = error
    return out


def _call(
    request: dict, blobs: list[bytes], tools: dict[str, Any], state: dict[str, Any]
) -> tuple[dict, list[bytes]]:
    name = str(request.get("function"))
    module = state["module"]
    fn = getattr(module, name, None) if module is not None else None
    if fn is None or not callable(fn):
        return {
            "ok": False,
            "error": {
                "type": "MissingFunction",
                "message": f"no function named {name}",
                "where": None,
            },
        }, []
    try:
        torch_inputs = bool(request.get("torch", False))
        args = tools["decode"](request["args"], blobs, specials=True, as_torch=torch_inputs)
        kwargs = tools["decode"](request["kwargs"], blobs, specials=True, as_torch=torch_inputs)
    except Exception as exc:  # noqa: BLE001
        return {
            "ok": False,
            "error": {"type": "GraderError", "message": f"bad request: {exc}", "where": None},
        }, []
    banned = tuple(str(p) for p in request.get("banned", []))
    if not tools["begin"]("call", banned):
        state["bypassed"] = True
    error = None
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, ShortcutRefused included
        error = tools["error"](exc, state["files"])
    hits, bypassed = tools["end"]()
    state["bypassed"] = state["bypassed"] or bypassed
    extra = {**tools["hits"](hits), "tampered": state["bypassed"]}
    if error is not None:
        return {"ok": False, "error": error, **extra}, []
    out_blobs: list[bytes] = []
    try:
        data = tools["encode"](value, out_blobs)
    except BaseException as exc:  # noqa: BLE001 - a hostile __array__ or __len__
        msg = (
            str(exc)
            if isinstance(exc, TypeError)
            else f"{type(exc).__name__} while reading the result"
        )
        return {
            "ok": False,
            "error": {"type": "BadOutput", "message": f"returned {msg}", "where": None},
            **extra,
        }, []
    return {"ok": True, "value": data, **extra}, out_blobs


def _holds_grader(path: str) -> bool:
    try:
        return os.path.isdir(os.path.join(path, "grader")) and os.path.isfile(
            os.path.join(path, "grader", "sandbox", "worker.py")
        )
    except OSError:
        return False


if __name__ == "__main__":
    _serve()
