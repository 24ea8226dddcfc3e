"""Unpickle a checksum-verified file, admitting only the globals that plain data and numpy arrays need.

A pickle names the functions it calls when loaded; pickle.load calls any of them (os.system included). Dicts,
lists, strings and numbers come from pickle opcodes and need no global. numpy arrays need a few (which ones
depends on the numpy version that wrote the file and on the pickle protocol), protocol 2 needs a few builtins
for sets and bytes, and nothing else is admitted.
"""

import hashlib
import pickle
from pathlib import Path
from typing import Any, BinaryIO

from parabench.errors import DataError

NUMPY_GLOBALS = frozenset(
    (module, name)
    for numpy_core in ("numpy.core", "numpy._core")  # numpy 1 and numpy 2 spell the module differently
    for module, name in (
        (f"{numpy_core}.multiarray", "_reconstruct"),  # an array (protocols 2 to 4)
        (f"{numpy_core}.multiarray", "scalar"),  # a numpy scalar such as np.int64(3)
        (f"{numpy_core}.numeric", "_frombuffer"),  # an array (protocol 5)
    )
) | {("numpy", "ndarray"), ("numpy", "dtype")}
PLAIN_DATA_BUILTINS = frozenset({"set", "frozenset", "bytes", "bytearray", "complex"})
BUILTINS_MODULES = frozenset({"builtins", "__builtin__"})  # protocol 2 pickles say __builtin__
LATIN1 = frozenset({"latin1", "latin-1"})


def load_restricted(path: Path, expected_sha256: str) -> Any:
    """Check the file's sha256, then unpickle it with only plain-data and numpy-array globals admitted."""
    actual = file_sha256(path)
    if actual != expected_sha256.lower():
        raise DataError(
            f"{path} has sha256 {actual}, expected {expected_sha256.lower()}; it was not unpickled. "
            "The file changed since it was fetched: delete it and run the download stage again."
        )
    with path.open("rb") as stream:
        try:
            return _RestrictedUnpickler(stream, path).load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, AttributeError) as error:
            raise DataError(
                f"{path} is not a valid pickle of plain data and numpy arrays ({type(error).__name__}: {error}); "
                "delete it and run the download stage again"
            ) from error


def file_sha256(path: Path) -> str:
    """The sha256 of the file's bytes."""
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


class _RestrictedUnpickler(pickle.Unpickler):
    """An Unpickler whose find_class admits numpy's array reconstructors and plain-data builtins only."""

    def __init__(self, stream: BinaryIO, path: Path) -> None:
        super().__init__(stream)
        self._path = path

    def find_class(self, module: str, name: str) -> Any:
        """The global `module.name` if it is admitted; otherwise refuse the whole file."""
        if (module, name) in NUMPY_GLOBALS:
            return super().find_class(module, name)
        if module in BUILTINS_MODULES and name in PLAIN_DATA_BUILTINS:
            return super().find_class("builtins", name)
        if (module, name) == ("_codecs", "encode"):
            return self._latin1_encode
        raise DataError(
            f"{self._path} refers to the global {module}.{name}, which a data file has no reason to call; "
            "refused to unpickle it (only numpy arrays and plain Python data are admitted). "
            "Delete the file and get it from its official source."
        )

    def _latin1_encode(self, text: str, encoding: str) -> bytes:
        """_codecs.encode as protocol 2 uses it for bytes (latin-1 only)."""
        if encoding not in LATIN1:
            raise DataError(f"{self._path} calls _codecs.encode with encoding {encoding!r}; only latin-1 is admitted")
        return text.encode("latin-1")
