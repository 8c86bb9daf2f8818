"""Pickles read without running code.

A pickle names the functions and classes that rebuild its objects, and pickle.load imports and calls
whatever it names (os.system, …): a crafted file runs code as it is read. The pickled formats trustcal
reads (CIFAR-10's batches, a loss_history.npy) hold plain data (dict, list, tuple, str, bytes, int,
float, bool, None) and NumPy arrays, so they are read by an unpickler that resolves only the names
those need and refuses any other before anything is called. Checkpoints are read by torch.load with
weights_only=True, PyTorch's own restricted unpickler (trustcal.training.checkpoints)."""

from __future__ import annotations

import logging
import pickle
import warnings

log = logging.getLogger(__name__)


# NumPy's reconstruction of arrays, dtypes and scalars, under NumPy 2's module names and NumPy 1's
# (which NumPy 2 still reads); _frombuffer is the array form of pickle protocol 5.
NUMPY_PICKLE_GLOBALS = frozenset(
    {
        (module, name)
        for module in ("numpy._core.multiarray", "numpy.core.multiarray")
        for name in ("_reconstruct", "scalar")
    }
    | {(module, "_frombuffer") for module in ("numpy._core.numeric", "numpy.core.numeric")}
    | {("numpy", "ndarray"), ("numpy", "dtype")}
)


def _latin1_bytes(text: str, encoding: str = "utf-8", errors: str = "strict") -> bytes:
    """What a protocol-2 pickle of ``bytes`` written by Python 3 calls, ``_codecs.encode(text, "latin1")``;
    no other codec."""
    if encoding not in ("latin1", "latin-1") or errors != "strict" or not isinstance(text, str):
        raise RefusedPickle(f"it calls _codecs.encode with encoding {encoding!r}, which plain bytes never need")
    return text.encode("latin1")


def _empty_bytes(*args) -> bytes:
    """What a protocol-2 pickle of ``b""`` calls: ``bytes()``, without arguments."""
    if args:
        raise RefusedPickle("it calls bytes with arguments, which plain bytes never need")
    return b""


# Plain bytes in a protocol-2 pickle written by Python 3: stand-ins that do what the pickle asks of them, no more.
_BYTES_STAND_INS = {
    ("_codecs", "encode"): _latin1_bytes,
    ("builtins", "bytes"): _empty_bytes,
    ("__builtin__", "bytes"): _empty_bytes,
}
PLAIN_PICKLE_GLOBALS = NUMPY_PICKLE_GLOBALS | frozenset(_BYTES_STAND_INS)


class RefusedPickle(pickle.UnpicklingError):
    """A pickle names a function or class outside what :func:`load_plain_pickle` admits (or asks one of
    them for more than plain data); the message, in words that follow the file's name, says which."""


class _PlainUnpickler(pickle.Unpickler):
    def __init__(self, fh, admitted: frozenset, what: str, encoding: str):
        super().__init__(fh, encoding=encoding)
        self._admitted, self._what = admitted, what

    def find_class(self, module: str, name: str):
        if (module, name) not in self._admitted:
            raise RefusedPickle(f"it names {module}.{name}, which {self._what} never needs; not loaded")
        if (module, name) in _BYTES_STAND_INS:
            return _BYTES_STAND_INS[module, name]
        with warnings.catch_warnings():  # NumPy 2 on numpy.core.numeric: renamed numpy._core.numeric
            warnings.simplefilter("ignore", DeprecationWarning)
            return super().find_class(module, name)

    def persistent_load(self, pid):
        raise RefusedPickle(f"it holds a persistent id, which {self._what} never needs; not loaded")


def load_plain_pickle(fh, what: str, *, admitted: frozenset = PLAIN_PICKLE_GLOBALS, encoding: str = "ASCII"):
    """The object pickled in the binary file ``fh``, built from plain data and NumPy arrays only.

    Any function or class the pickle names outside ``admitted`` (by default NumPy's array
    reconstruction and the calls plain bytes need) raises :class:`RefusedPickle` before it is
    imported or called, so a crafted file cannot run code; ``what`` names the format in that
    message ("a CIFAR-10 batch"). ``encoding`` is pickle's, for strings written by Python 2
    (``"latin1"`` for CIFAR-10's batches, as torchvision reads them). A damaged pickle raises
    what :func:`pickle.load` raises (``UnpicklingError``, ``EOFError``, ``ValueError``, …).
    """
    return _PlainUnpickler(fh, admitted, what, encoding).load()
