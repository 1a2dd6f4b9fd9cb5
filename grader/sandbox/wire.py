"""The wire format between the grader and its worker: one codec, used by both sides.

Standard library and numpy only, nothing of `grader`: the session ships this file beside the
worker script into the sandbox (as `WIRE_FILE`), where the worker loads it by path.

A message is a JSON header plus binary blobs (arrays as `.npy` bytes):
    u32 json_length, u32 n_blobs, json bytes, then per blob: u64 length, bytes.
Values: JSON scalars and lists; {"__tuple__": [...]}; {"__dict__": [[key, value], ...]};
{"__nd__": i} (blob i, an .npy file checked and read without pickle, each blob referenced
once); and, as arguments only, {"__rng__": seed} (numpy.random.default_rng(seed)) and
{"__lm__": {...}} (a table next_log_probs function for beam search). The decoder is strict
and bounded: nesting depth, entries, integer sizes, array headers and the bytes it builds
are capped, so that a forged frame costs the grader nothing but a `WireError`.
"""

from __future__ import annotations

import io
import json
import re
import struct
import sys
from functools import lru_cache
from typing import Any, BinaryIO

import numpy as np

WIRE_FILE = "seqgrade_wire.py"  # the name this file has beside the worker in the sandbox
MAX_DEPTH = 32  # nesting of lists, tuples and dicts in one value
MAX_ITEMS = 200_000  # list/tuple/dict entries per message (arrays are not counted here)
MAX_BLOB_BYTES = 512 << 20  # array bytes per message, on the wire and once decoded
MAX_JSON_BYTES = 8 << 20  # arrays travel as blobs: the JSON part of a message stays small
MAX_NPY_HEADER = 4096  # bytes of an .npy header (a dict of dtype, order and shape)
_INT_LIMIT = 1 << 64  # integers travel exactly below 2**64; beyond that they are refused
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
    """`np.save`'s bytes of `a`: built here for a plain C-ordered array of numbers (about a
    tenth of np.save's cost: a grade sends hundreds), else by np.save itself."""
    quick = _npy_bytes_1_0(a)
    if quick is not None:
        return quick
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _npy_bytes_1_0(a: np.ndarray) -> bytes | None:
    """What `np.save` writes for an exact ndarray of a built-in number dtype in C order (format
    1.0: the header's dict in sorted keys, padded for a shape that may grow, then to a multiple
    of 64 bytes); None for anything else. tests/test_speed_round8.py holds it to np.save."""
    if type(a) is not np.ndarray or not a.flags.c_contiguous or a.dtype.kind not in "biufc":
        return None
    if a.dtype.names is not None or a.dtype.subdtype is not None or a.dtype.metadata:
        return None
    shape = a.shape
    text = f"{{'descr': '{a.dtype.str}', 'fortran_order': False, 'shape': {shape!r}, }}"
    if shape:
        text += " " * (21 - len(repr(shape[0])))  # numpy's GROWTH_AXIS_MAX_DIGITS
    size = len(text) + 1  # with the closing newline
    pad = 64 - (10 + size) % 64
    if size + pad > 65535:
        return None
    head = _NPY_1_0 + struct.pack("<H", size + pad) + text.encode("latin1")
    return head + b" " * pad + b"\n" + a.tobytes()


# The header `np.save` writes (format 1.0), read without numpy's literal_eval (about 20 us an
# array): exactly this text, else the general reader below decides. What it accepts, the general
# reader reads the same (descr, order and shape), and the same checks follow.
_NPY_1_0 = b"\x93NUMPY\x01\x00"
_NPY_HEADER_1_0 = re.compile(
    rb"\{'descr': '([<>|]?[biufc][0-9]{1,2})', 'fortran_order': (True|False), "
    rb"'shape': \(([0-9]{1,19},|[0-9]{1,19}(?:, [0-9]{1,19})+|)\), \} *\n"
)


def _npy_header_1_0(blob: bytes) -> tuple[tuple[int, ...], bool, np.dtype, int, int] | None:
    """(shape, fortran order, dtype, entries, data offset) of a blob whose header is `np.save`'s
    own text, checked; None for any other header (the general reader then reads or refuses it)."""
    if blob[:8] != _NPY_1_0 or len(blob) < 10:
        return None
    size = blob[8] | (blob[9] << 8)
    if size > MAX_NPY_HEADER:
        return None
    read = _read_header_1_0(blob[10 : 10 + size])
    return None if read is None else (*read, 10 + size)


@lru_cache(maxsize=256)  # the arrays of a grade share a few shapes and dtypes
def _read_header_1_0(text: bytes) -> tuple[tuple[int, ...], bool, np.dtype, int] | None:
    """`_npy_header_1_0` of the header's text (the same text, the same answer)."""
    found = _NPY_HEADER_1_0.fullmatch(text)
    if found is None:
        return None
    descr, fortran, dims = found.groups()
    try:
        dtype = np.dtype(descr.decode("ascii"))
    except TypeError:
        return None
    shape = tuple(int(n) for n in dims.split(b",") if n.strip())
    return shape, fortran == b"True", dtype, _entries(shape, dtype)


def blob_to_array(blob: bytes) -> np.ndarray:
    """An .npy blob as an array, checked before anything is allocated: numbers only, and a
    header whose shape accounts for exactly the bytes that follow it."""
    quick = _npy_header_1_0(blob)
    if quick is not None:
        return _array_of(blob, *quick)
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
    except Exception as exc:  # noqa: BLE001 - numpy's reader raises many kinds (TokenError too)
        raise WireError(f"an unreadable array header ({str(exc)[:80]})") from None
    return _array_of(blob, shape, fortran, dtype, _entries(shape, dtype), buf.tell())


def _entries(shape: Any, dtype: np.dtype) -> int:
    """How many entries a read header describes, once its dtype and shape are checked."""
    if dtype.kind not in _NUMERIC_KINDS or dtype.hasobject or dtype.fields is not None:
        raise WireError("an array must hold numbers or booleans")
    if len(shape) > 32 or any(not isinstance(n, int) or n < 0 for n in shape):
        raise WireError(f"an array of shape {str(shape)[:80]}")
    count = 1
    for n in shape:
        count *= n
    return count


def _array_of(
    blob: bytes, shape: Any, fortran: bool, dtype: np.dtype, count: int, offset: int
) -> np.ndarray:
    """The array a checked header describes, once its entries match the bytes that follow it."""
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


_NAME_CHARS = re.compile(r"[A-Za-z0-9_]{1,64}")


def _as_literal(text: str) -> str:
    """An argument string as the student's own call would pass it: CPython interns a string
    literal made of name characters ("swiglu"), so `ffn is "swiglu"` holds in the student's
    runs; a decoded string is a new object, and the same code would fail only when graded."""
    return sys.intern(text) if _NAME_CHARS.fullmatch(text) else text


def _decode(
    data: Any, blobs: list[bytes], budget: _Budget, specials: bool, as_torch: bool, depth: int
) -> Any:
    if depth > MAX_DEPTH:
        raise WireError("nested too deeply")
    if isinstance(data, str):
        return _as_literal(data) if specials else data
    if data is None or isinstance(data, (bool, float)):
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
