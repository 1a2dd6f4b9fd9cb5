"""Round 8 of the speed work: the .npy bytes the wire writes without np.save are np.save's own."""

from __future__ import annotations

import io

import numpy as np
import pytest

from grader.sandbox import wire

DTYPES = (
    np.float64, np.float32, np.float16, np.longdouble, np.int8, np.int16, np.int32, np.int64,
    np.uint8, np.uint64, np.bool_, np.complex64, np.complex128, ">f8", ">i4",
)  # fmt: skip
SHAPES = ((), (0,), (1,), (3,), (2, 3), (0, 5), (5, 0), (2, 3, 4), (1,) * 30, (10**12, 0))


def _np_save(a: np.ndarray) -> bytes:
    """The outside authority: numpy's own writer."""
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _array(dtype, shape) -> np.ndarray:
    if 0 in shape:
        return np.zeros(shape, dtype)
    return np.random.default_rng(8).normal(size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_quick_bytes_are_np_save_bytes(dtype, shape):
    a = _array(dtype, shape)
    quick = wire._npy_bytes_1_0(a)
    assert quick is not None  # a plain C-ordered array of numbers takes the quick path
    assert quick == _np_save(a)
    assert np.array_equal(wire.blob_to_array(quick), a, equal_nan=a.dtype.kind in "fc")


def test_a_long_shape_pads_as_np_save_does():
    a = np.zeros((123456789012, 0))  # a first axis of many digits: less growth padding
    assert wire._npy_bytes_1_0(a) == _np_save(a)


@pytest.mark.parametrize(
    "a",
    [
        np.asfortranarray(np.arange(6.0).reshape(2, 3)),  # Fortran order
        np.arange(10.0)[::2],  # not contiguous
        np.ma.masked_array([1.0, 2.0]),  # a subclass
        np.array([("a", 1)], dtype=[("n", "U1"), ("v", "i4")]),  # fields
        np.array(["x"]),  # not numbers
        np.array([np.datetime64("2026-01-01")]),
    ],
    ids=["fortran", "strided", "subclass", "fields", "str", "datetime"],
)
def test_other_arrays_go_to_np_save(a):
    """Control: what the quick path does not claim is left to np.save, bytes unchanged."""
    assert wire._npy_bytes_1_0(a) is None
    if a.dtype.kind in "biufc" and a.dtype.names is None:
        assert wire._array_to_blob(a) == _np_save(a)


def test_the_quick_path_is_used_by_the_wire(monkeypatch):
    """Control that the path is live: np.save is not called for a plain float array."""

    def refuse(*args, **kwargs):
        raise AssertionError("np.save called")

    monkeypatch.setattr(np, "save", refuse)
    a = np.arange(12.0).reshape(3, 4)
    blob = wire._array_to_blob(a)
    assert np.array_equal(wire.blob_to_array(blob), a)
    with pytest.raises(AssertionError):
        wire._array_to_blob(np.asfortranarray(a))
