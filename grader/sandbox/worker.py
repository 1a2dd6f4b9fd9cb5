"""The student's side of grading: a standalone worker that imports the submission and runs calls.

This file runs inside the sandbox as a script, where the `grader` package is out of reach,
so it depends on the standard library and numpy only (torch when the submission uses it).
The trusted parent imports it too, for the wire format (`write_message`, `read_message`,
`encode`) and for the special arguments (`build_lm`), so both sides share one definition.

Wire format: a message is a JSON header plus binary blobs (arrays as `.npy` bytes):
    u32 json_length, u32 n_blobs, json bytes, then per blob: u64 length, bytes.
Values: JSON scalars and lists; {"__tuple__": [...]}; {"__dict__": [[key, value], ...]};
{"__nd__": i} (blob i, an .npy file read with allow_pickle=False); and, as arguments only,
{"__rng__": seed} (numpy.random.default_rng(seed)) and {"__lm__": {...}} (a table
next_log_probs function for beam search).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import struct
import sys
import traceback
from typing import Any, BinaryIO

import numpy as np

MAX_DEPTH = 32
MAX_ITEMS = 200_000  # list/tuple/dict entries per message (arrays are not counted here)
MAX_BLOB_BYTES = 512 << 20
MAX_JSON_BYTES = 64 << 20
_NUMERIC_KINDS = "biufc"


class WireError(Exception):
    """A message that does not follow the wire format (or breaks its limits)."""


# --------------------------------------------------------------------------- framing


def write_message(stream: BinaryIO, header: Any, blobs: list[bytes]) -> None:
    body = json.dumps(header, allow_nan=True).encode()
    parts = [struct.pack(">II", len(body), len(blobs)), body]
    for blob in blobs:
        parts.append(struct.pack(">Q", len(blob)))
        parts.append(blob)
    stream.write(b"".join(parts))
    stream.flush()


def read_message(read_exact) -> tuple[Any, list[bytes]]:
    """Read one message with `read_exact(n) -> bytes` (which raises EOFError on a short read)."""
    n_json, n_blobs = struct.unpack(">II", read_exact(8))
    if n_json > MAX_JSON_BYTES or n_blobs > MAX_ITEMS:
        raise WireError("message too large")
    header = json.loads(read_exact(n_json))
    blobs = []
    total = 0
    for _ in range(n_blobs):
        (size,) = struct.unpack(">Q", read_exact(8))
        total += size
        if total > MAX_BLOB_BYTES:
            raise WireError("arrays too large")
        blobs.append(read_exact(size))
    return header, blobs


# --------------------------------------------------------------------------- values


def _array_to_blob(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def blob_to_array(blob: bytes) -> np.ndarray:
    a = np.load(io.BytesIO(blob), allow_pickle=False)
    if not isinstance(a, np.ndarray) or a.dtype.kind not in _NUMERIC_KINDS:
        raise WireError("an array must hold numbers or booleans")
    return a


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
        raise TypeError("the value is nested too deeply")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
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
        return {"__dict__": [[encode(k, blobs, depth + 1), encode(v, blobs, depth + 1)] for k, v in value.items()]}
    raise TypeError(f"an object of type {type(value).__name__}")


def decode(data: Any, blobs: list[bytes], *, specials: bool = False, as_torch: bool = False, depth: int = 0) -> Any:
    """The inverse of `encode`, strict: only the documented forms are accepted."""
    if depth > MAX_DEPTH:
        raise WireError("nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v, blobs, specials=specials, as_torch=as_torch, depth=depth + 1) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise WireError("unexpected value in message")
    ((tag, inner),) = data.items()
    if tag == "__nd__":
        if not isinstance(inner, int) or not 0 <= inner < len(blobs):
            raise WireError("bad array reference")
        a = blob_to_array(blobs[inner])
        if as_torch:
            import torch

            return torch.from_numpy(a.copy())
        return a
    if tag == "__tuple__" and isinstance(inner, list):
        return tuple(decode(v, blobs, specials=specials, as_torch=as_torch, depth=depth + 1) for v in inner)
    if tag == "__dict__" and isinstance(inner, list):
        out = {}
        for pair in inner:
            if not isinstance(pair, list) or len(pair) != 2:
                raise WireError("bad dict entry")
            key = decode(pair[0], blobs, depth=depth + 1)
            if not isinstance(key, (str, int, bool, type(None), float, tuple)):
                raise WireError("bad dict key")
            out[key] = decode(pair[1], blobs, specials=specials, as_torch=as_torch, depth=depth + 1)
        return out
    if specials and tag == "__rng__" and isinstance(inner, int):
        return np.random.default_rng(inner)
    if specials and tag == "__lm__" and isinstance(inner, dict):
        return build_lm(inner)
    raise WireError(f"unexpected tag {tag!r}")


def build_lm(spec: dict) -> Any:
    """A `next_log_probs(prefix)` function from a table {prefix: log-probs} with a default row."""
    table = {tuple(int(t) for t in prefix): np.asarray(row, dtype=np.float64) for prefix, row in spec["table"]}
    default = np.asarray(spec["default"], dtype=np.float64)

    def next_log_probs(prefix: Any) -> np.ndarray:
        key = tuple(int(t) for t in prefix)
        return table.get(key, default).copy()

    return next_log_probs


# --------------------------------------------------------------------------- the worker


class _Tripwires:
    """Wrappers around forbidden library calls that record their use during a call."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.active = False

    def install(self, names: list[str]) -> None:
        for dotted in names:
            if dotted.endswith(".*"):
                owner = _resolve(dotted[:-2])
                if owner is None:
                    continue
                for attr in dir(owner):
                    if not attr.startswith("_") and callable(getattr(owner, attr, None)):
                        self._wrap(owner, attr, f"{dotted[:-2]}.{attr}")
            else:
                parent_name, _, attr = dotted.rpartition(".")
                owner = _resolve(parent_name)
                if owner is not None and hasattr(owner, attr):
                    self._wrap(owner, attr, dotted)

    def _wrap(self, owner: Any, attr: str, label: str) -> None:
        original = getattr(owner, attr)
        if isinstance(original, type):
            # A class (a module such as torch.nn.LSTMCell): record its construction.
            init = original.__init__

            def patched_init(obj, *a, __init=init, __label=label, **k):
                self._hit(__label)
                return __init(obj, *a, **k)

            with contextlib.suppress(TypeError, AttributeError):
                original.__init__ = patched_init
            return

        def wrapper(*a, __orig=original, __label=label, **k):
            self._hit(__label)
            return __orig(*a, **k)

        with contextlib.suppress(TypeError, AttributeError):
            setattr(owner, attr, wrapper)

    def _hit(self, label: str) -> None:
        if self.active and label not in self.hits:
            self.hits.append(label)


def _resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    obj = sys.modules.get(parts[0])
    if obj is None:
        return None
    for p in parts[1:]:
        obj = getattr(obj, p, None)
        if obj is None:
            return None
    return obj


def _student_error(exc: BaseException, student_files: set[str]) -> dict:
    """The exception as the student should see it: their own frames only, never ours."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.basename(f.filename) in student_files]
    where = None
    if isinstance(exc, SyntaxError) and exc.filename and os.path.basename(exc.filename) in student_files:
        where = {"file": os.path.basename(exc.filename), "line": exc.lineno, "text": (exc.text or "").strip()}
    elif frames:
        f = frames[-1]
        where = {"file": os.path.basename(f.filename), "line": f.lineno, "text": (f.line or "").strip()}
    try:
        message = str(exc)
    except BaseException:  # noqa: BLE001 - a hostile __str__
        message = "<unprintable>"
    return {"type": type(exc).__name__, "message": message[:600], "where": where}


class _BlockedFinder:
    """Refuses to import the grader's own packages from student code (best effort without root)."""

    BLOCKED = ("grader", "reference", "solutions", "seqgrade")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.BLOCKED:
            raise ImportError(f"importing {name!r} is not allowed in a submission")
        return None


def _serve() -> None:
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    # Student output goes to stderr (captured by the parent); input reads hit end-of-file.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdin = open(os.devnull)  # noqa: SIM115
    sys.stdout = os.fdopen(1, "w", buffering=1, errors="replace", closefd=False)
    here = os.getcwd()
    sys.path[:] = [here] + [p for p in sys.path if p and not _holds_grader(p)]
    sys.meta_path.insert(0, _BlockedFinder())

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
        write_message(proto_out, header, blobs or [])

    trip = _Tripwires()
    module = None
    student_files: set[str] = set()
    while True:
        try:
            request, blobs = read_message(read_exact)
        except EOFError:
            return
        op = request.get("op")
        if op == "hello":
            for name in request.get("preload", []):
                with contextlib.suppress(ImportError):
                    __import__(name)
            trip.install(list(request.get("tripwires", [])))
            student_files = set(request.get("files", []))
            reply({"ok": True, "torch": "torch" in sys.modules})
        elif op == "import":
            try:
                trip.active = True
                import importlib

                module = importlib.import_module(request["module"])
                reply({"ok": True, "tripped": trip.hits})
            except BaseException as exc:  # noqa: BLE001 - anything the student's import does
                reply({"ok": False, "error": _student_error(exc, student_files)})
            finally:
                trip.active = False
                trip.hits = []
        elif op == "call":
            _call(request, blobs, module, trip, student_files, reply)
        elif op == "unittest":
            reply(_run_unittest(str(request.get("name", "tests")), str(request.get("source", ""))))
        elif op == "bye":
            return


def _call(request, blobs, module, trip, student_files, reply) -> None:
    name = request["function"]
    fn = getattr(module, name, None) if module is not None else None
    if fn is None or not callable(fn):
        reply({"ok": False, "error": {"type": "MissingFunction", "message": f"no function named {name}", "where": None}})
        return
    try:
        args = decode(request["args"], blobs, specials=True, as_torch=request.get("torch", False))
        kwargs = decode(request["kwargs"], blobs, specials=True, as_torch=request.get("torch", False))
    except Exception as exc:  # noqa: BLE001
        reply({"ok": False, "error": {"type": "GraderError", "message": f"bad request: {exc}", "where": None}})
        return
    trip.hits = []
    trip.active = True
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt included
        trip.active = False
        reply({"ok": False, "error": _student_error(exc, student_files), "tripped": list(trip.hits)})
        return
    trip.active = False
    out_blobs: list[bytes] = []
    try:
        data = encode(value, out_blobs)
    except BaseException as exc:  # noqa: BLE001 - a hostile __array__ or __len__
        msg = str(exc) if isinstance(exc, TypeError) else f"{type(exc).__name__} while reading the result"
        reply({"ok": False, "error": {"type": "BadOutput", "message": f"returned {msg}", "where": None},
               "tripped": list(trip.hits)})
        return
    reply({"ok": True, "value": data, "tripped": list(trip.hits)}, out_blobs)


def _run_unittest(name: str, source: str) -> dict:
    """Run an instructor's unittest module (gradescope-utils decorators) against the submission."""
    import io
    import types
    import unittest

    try:
        from gradescope_utils.autograder_utils.json_test_runner import JSONTestRunner
    except ImportError as exc:
        return {"ok": False, "error": {"type": "ImportError", "message": f"gradescope-utils: {exc}", "where": None}}
    module = types.ModuleType(name.removesuffix(".py"))
    module.__file__ = name
    try:
        exec(compile(source, name, "exec"), module.__dict__)  # noqa: S102 - the instructor's own test file
        suite = unittest.defaultTestLoader.loadTestsFromModule(module)
        runner = JSONTestRunner(stream=io.StringIO(), buffer=True)
        runner.run(suite)
        tests = runner.json_data.get("tests", [])
    except BaseException as exc:  # noqa: BLE001
        return {"ok": False, "error": {"type": type(exc).__name__, "message": str(exc)[:600], "where": None}}
    return {"ok": True, "tests": tests}


def _holds_grader(path: str) -> bool:
    try:
        return os.path.isdir(os.path.join(path, "grader")) and os.path.isfile(os.path.join(path, "grader", "sandbox", "worker.py"))
    except OSError:
        return False


if __name__ == "__main__":
    _serve()
