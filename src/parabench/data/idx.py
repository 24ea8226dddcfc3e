"""The IDX file format (MNIST-style arrays): a strict reader and a writer, gzipped when the name ends in .gz."""

import gzip
import math
import struct
import zlib
from io import BufferedReader
from pathlib import Path

import numpy as np

from parabench.errors import DataError
from parabench.io import write_atomic

UINT8_TYPE_CODE = 0x08
MAX_DIMS = 4


def read_idx(path: Path, max_data_bytes: int) -> np.ndarray:
    """Read an unsigned-byte IDX file, checking its header against its size.

    The file is read as a stream, never past what its header declares (plus one byte, to detect trailing data),
    and a header declaring more than `max_data_bytes` (the dataset's known size) is refused before reading on: a
    gzip file that decompresses without bound costs no memory.
    """
    with _opened(path) as stream:
        head = _read_up_to(path, stream, 4)
        if len(head) < 4:
            raise DataError(f"{path} is truncated: {len(head)} bytes, shorter than the 4-byte IDX magic number")
        if head[0:2] != b"\0\0":
            raise DataError(f"{path} is not an IDX file: its magic number starts with {head[0:2].hex()}, not 0000")
        type_code, ndim = head[2], head[3]
        if type_code != UINT8_TYPE_CODE:
            raise DataError(f"{path} has IDX type code 0x{type_code:02x}; only 0x08 (unsigned byte) is supported")
        if not 1 <= ndim <= MAX_DIMS:
            raise DataError(f"{path} declares {ndim} dimensions; expected 1 to {MAX_DIMS}")
        shape_bytes = _read_up_to(path, stream, 4 * ndim)
        if len(shape_bytes) < 4 * ndim:
            raise DataError(f"{path} is truncated inside its header ({4 + len(shape_bytes)} of {4 + 4 * ndim} bytes)")
        dims = struct.unpack(f">{ndim}I", shape_bytes)
        expected = math.prod(dims)
        if expected > max_data_bytes:
            raise DataError(
                f"{path} declares shape {dims} ({expected:,} bytes), more than this dataset's "
                f"{max_data_bytes:,}; it is not the file expected (refused before decompressing it)"
            )
        data = _read_up_to(path, stream, expected + 1)
    if len(data) < expected:
        raise DataError(f"{path} is truncated: shape {dims} needs {expected} data bytes, found {len(data)}")
    if len(data) > expected:
        raise DataError(f"{path} has trailing bytes after the {expected} bytes of shape {dims}")
    return np.frombuffer(data, dtype=np.uint8).reshape(dims).copy()


def write_idx(path: Path, array: np.ndarray) -> None:
    """Write a uint8 array as IDX, atomically; gzip it (with a fixed header) when the name ends in .gz."""
    if array.dtype != np.uint8 or not 1 <= array.ndim <= MAX_DIMS:
        raise ValueError(f"write_idx takes uint8 arrays of 1 to {MAX_DIMS} dims, got {array.dtype} {array.shape}")
    header = bytes([0, 0, UINT8_TYPE_CODE, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + np.ascontiguousarray(array).tobytes()
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    write_atomic(path, lambda tmp: tmp.write_bytes(data))


def _opened(path: Path) -> gzip.GzipFile | BufferedReader:
    """The file as a byte stream, decompressed when its name ends in .gz."""
    try:
        return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")
    except FileNotFoundError as error:
        raise DataError(f"{path} does not exist") from error


def _read_up_to(path: Path, stream: gzip.GzipFile | BufferedReader, size: int) -> bytes:
    """At most `size` bytes of the stream; a broken gzip stream is a DataError naming the file."""
    try:
        return stream.read(size)
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise DataError(f"{path} is not a valid gzip file: {error}") from error
