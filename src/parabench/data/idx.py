"""The IDX file format (MNIST-style arrays): a strict reader and a writer, gzipped when the name ends in .gz."""

import gzip
import math
import struct
import zlib
from pathlib import Path

import numpy as np

from parabench.errors import DataError
from parabench.io import write_atomic

UINT8_TYPE_CODE = 0x08
MAX_DIMS = 4


def read_idx(path: Path) -> np.ndarray:
    """Read an unsigned-byte IDX file, checking its header against its size."""
    data = _read_bytes(path)
    if len(data) < 4:
        raise DataError(f"{path} is truncated: {len(data)} bytes, shorter than the 4-byte IDX magic number")
    if data[0:2] != b"\0\0":
        raise DataError(f"{path} is not an IDX file: its magic number starts with {data[0:2].hex()}, not 0000")
    type_code, ndim = data[2], data[3]
    if type_code != UINT8_TYPE_CODE:
        raise DataError(f"{path} has IDX type code 0x{type_code:02x}; only 0x08 (unsigned byte) is supported")
    if not 1 <= ndim <= MAX_DIMS:
        raise DataError(f"{path} declares {ndim} dimensions; expected 1 to {MAX_DIMS}")
    header_size = 4 + 4 * ndim
    if len(data) < header_size:
        raise DataError(f"{path} is truncated inside its header ({len(data)} of {header_size} bytes)")
    dims = struct.unpack(f">{ndim}I", data[4:header_size])
    expected, actual = math.prod(dims), len(data) - header_size
    if actual < expected:
        raise DataError(f"{path} is truncated: shape {dims} needs {expected} data bytes, found {actual}")
    if actual > expected:
        raise DataError(f"{path} has {actual - expected} trailing bytes after the {expected} bytes of shape {dims}")
    return np.frombuffer(data, dtype=np.uint8, offset=header_size).reshape(dims).copy()


def write_idx(path: Path, array: np.ndarray) -> None:
    """Write a uint8 array as IDX, atomically; gzip it (with a fixed header) when the name ends in .gz."""
    if array.dtype != np.uint8 or not 1 <= array.ndim <= MAX_DIMS:
        raise ValueError(f"write_idx takes uint8 arrays of 1 to {MAX_DIMS} dims, got {array.dtype} {array.shape}")
    header = bytes([0, 0, UINT8_TYPE_CODE, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    data = header + np.ascontiguousarray(array).tobytes()
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    write_atomic(path, lambda tmp: tmp.write_bytes(data))


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed when its name ends in .gz."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as stream:
                return stream.read()
        return path.read_bytes()
    except FileNotFoundError as error:
        raise DataError(f"{path} does not exist") from error
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise DataError(f"{path} is not a valid gzip file: {error}") from error
