"""Issue 15 items 8 and 11 (the decoder's part): a forged frame costs the grader nothing.

The worker is the student's process, so everything it sends is untrusted. The decoder must
refuse, cheaply and as the submission's fault, frames that would make the trusted side
allocate without bound: one blob referenced many times, deep nesting, an array header that
promises more entries than the bytes hold, oversized headers, huge integers, bad JSON.
"""

from __future__ import annotations

import io
import json
import os
import struct
import threading
import time
import tracemalloc

import numpy as np
import pytest

from grader.sandbox import wire
from grader.sandbox.wire import WireError


def frame(header: object, blobs: list[bytes] = (), raw_json: bytes | None = None) -> bytes:
    body = raw_json if raw_json is not None else json.dumps(header).encode()
    out = [struct.pack(">II", len(body), len(blobs)), body]
    for b in blobs:
        out += [struct.pack(">Q", len(b)), b]
    return b"".join(out)


def reader(data: bytes):
    stream = io.BytesIO(data)

    def read_exact(n: int) -> bytes:
        chunk = stream.read(n)
        if len(chunk) < n:
            raise EOFError
        return chunk

    return read_exact


def npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def receive(data: bytes) -> object:
    header, blobs = wire.read_message(reader(data))
    return wire.decode(header["value"], blobs)


def test_an_honest_frame_round_trips():
    blobs: list[bytes] = []
    value = (np.arange(6.0).reshape(2, 3), [1, 2, {"k": np.int64(3)}], None, "s", 2.5)
    data = frame({"value": wire.encode(value, blobs)}, blobs)
    got = receive(data)
    np.testing.assert_array_equal(got[0], value[0])
    assert got[1:] == ([1, 2, {"k": 3}], None, "s", 2.5)
    assert got[0].flags.writeable  # a copy the trusted side may change


def test_one_blob_referenced_400_times_is_refused_cheaply():
    blob = npy(np.zeros(1 << 20))  # 8 MiB
    data = frame({"value": [{"__nd__": 0}] * 400}, [blob])
    tracemalloc.start()
    started = time.monotonic()
    with pytest.raises(WireError, match="repeated array reference"):
        receive(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.monotonic() - started < 1.0
    assert peak < 64 << 20  # one decoded copy at most, never 400


@pytest.mark.parametrize("shape", [(10**13,), (10**7, 10**6), (2**40, 2**40)])
def test_an_array_header_promising_more_than_its_bytes_is_refused_before_allocating(shape):
    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
    text = repr(header).encode()
    text += b" " * (63 - (10 + len(text)) % 64) + b"\n"
    blob = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + b"\x00" * 64
    with pytest.raises(WireError, match="entries over"):
        receive(frame({"value": {"__nd__": 0}}, [blob]))


def test_object_arrays_and_pickles_are_refused():
    blob = npy(np.array([1.0, 2.0]))
    forged = blob.replace(b"'<f8'", b"'|O' ")
    with pytest.raises(WireError):
        receive(frame({"value": {"__nd__": 0}}, [forged]))
    with pytest.raises(WireError):
        receive(frame({"value": {"__nd__": 0}}, [b"\x80\x04garbage"]))


def test_deep_nesting_is_refused_by_the_parser_and_by_the_decoder():
    deep = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(WireError, match="nested too deeply"):
        receive(frame(None, raw_json=b'{"value": ' + deep + b"}"))
    shallow_but_deep = json.loads("[" * 40 + "]" * 40)
    with pytest.raises(WireError, match="nested too deeply"):
        receive(frame({"value": shallow_but_deep}))


@pytest.mark.parametrize("raw", [b"{not json", b"\xff\xfe\x00", b'{"value": NaN', b""])
def test_bad_json_is_a_wire_error(raw):
    with pytest.raises(WireError):
        receive(frame(None, raw_json=raw))


def test_huge_integers_are_refused_both_ways():
    with pytest.raises(WireError):
        receive(frame(None, raw_json=b'{"value": ' + b"9" * 5000 + b"}"))
    with pytest.raises(WireError, match="integer too large"):
        receive(frame(None, raw_json=b'{"value": ' + str(10**400).encode() + b"}"))
    with pytest.raises(TypeError, match="integer too large"):
        wire.encode(10**400, [])
    assert receive(frame({"value": wire.encode(2**63 - 1, [])})) == 2**63 - 1


def test_oversized_headers_and_counts_are_refused_before_reading_them():
    with pytest.raises(WireError, match="header of"):
        wire.read_message(reader(struct.pack(">II", 2**32 - 1, 0)))
    with pytest.raises(WireError, match="arrays in one message"):
        wire.read_message(reader(struct.pack(">II", 2, 2**31) + b"{}"))
    blob_sizes = struct.pack(">II", 2, 1) + b"{}" + struct.pack(">Q", 2**62)
    with pytest.raises(WireError, match="MiB in one message"):
        wire.read_message(reader(blob_sizes))


def test_too_many_entries_are_refused():
    with pytest.raises(WireError, match="entries in one message"):
        receive(frame({"value": [[0] * 1000] * 300}))


# ------------------------------------------ the grader's reading of the worker's stream


class _Pipe:
    """A stand-in for the worker's process: only its stdout, one end of a real pipe."""

    def __init__(self) -> None:
        read, self.write = os.pipe()
        self.stdout = os.fdopen(read, "rb", buffering=0)

    def send(self, data: bytes) -> None:
        os.write(self.write, data)


def _session_reading(pipe: _Pipe, *ids: str):
    from grader.sandbox.session import WorkerSession

    s = WorkerSession({"m.py": b""}, "m")
    s.proc = pipe  # type: ignore[assignment]
    s._expect = list(ids)
    return s


def test_replies_are_read_as_a_stream_however_their_bytes_arrive() -> None:
    # the worker's bytes are read as many as are there and kept: two replies in one write are
    # two replies, a reply in one-byte pieces is one, arrays and all
    a = np.arange(6.0).reshape(2, 3)
    blob = wire._array_to_blob(a)
    first = frame({"id": "one", "ok": True}, [blob])
    second = frame({"id": "two", "ok": False})
    pipe = _Pipe()
    s = _session_reading(pipe, "one", "two", "three")
    pipe.send(first + second)
    header, blobs = s._receive(5.0)
    assert header["id"] == "one" and np.array_equal(wire.blob_to_array(blobs[0]), a)
    assert s._receive(5.0)[0] == {"id": "two", "ok": False}  # already read, nothing waited for
    third = frame({"id": "three", "value": list(range(50))}, [blob, blob[:-8] + blob[-8:]])
    sender = threading.Thread(
        target=lambda: [pipe.send(third[i : i + 1]) for i in range(len(third))]
    )
    sender.start()
    header, blobs = s._receive(5.0)
    sender.join()
    assert header["value"] == list(range(50)) and blobs == [blob, blob]


def test_a_new_worker_reads_nothing_its_predecessor_sent() -> None:
    old, new = _Pipe(), _Pipe()
    s = _session_reading(old, "one")
    old.send(frame({"id": "one"}) + b"\x00\x00\x00\x05")  # a reply, then the start of another
    assert s._receive(5.0)[0] == {"id": "one"}
    s.proc, s._expect = new, ["two"]  # type: ignore[assignment]
    new.send(frame({"id": "two"}))
    assert s._receive(5.0)[0] == {"id": "two"}  # not read after the old worker's 4 bytes


def test_a_reply_cut_short_waits_for_its_deadline_only() -> None:
    from grader.sandbox.session import _Timeout

    pipe = _Pipe()
    s = _session_reading(pipe, "one")
    pipe.send(frame({"id": "one"})[:-3])
    t = time.monotonic()
    with pytest.raises(_Timeout):
        s._receive(0.3)
    assert time.monotonic() - t < 3.0
