"""A model handed from one process to another: pickled with its columns out of band, its name tables' indexes made
again in the new process (a string's hash is the process's own): at their first lookup, or by :func:`index_arrived`.

A model is a few hundred objects whose weight is in its columns (``array.array``) and its name tables (one string
each). Pickled as they are, a 1M-node preview is 313 MB read back in one call of ``pickle.loads`` that holds the
interpreter for 160 ms. Here each column and each name table's string travels as a buffer beside a small pickle
of the objects; reading it back, each is rebuilt by a Python call of its own, between which other threads run (the
window paints while a worker reads the model).
"""

from __future__ import annotations

import io
import pickle
import threading
import weakref
from array import array
from collections.abc import Sequence
from typing import Any

from splitscope.engine.model.names import Names


def _array(typecode: str, buf: memoryview) -> array[Any]:
    a = array(typecode)
    a.frombytes(buf)
    return a


def _names(state: dict[str, Any], blob: memoryview) -> Names:
    t = Names.__new__(Names)
    for k, v in state.items():
        setattr(t, k, v)
    t._blob = str(blob, "utf-8")
    t._hash, t._slots = array("q"), array("q")
    t.index_later()  # hashes are this process's: not made on the way to the first view (0.1 s at 200k nodes)
    if t.indexed:
        with _arrived_lock:
            _arrived.add(t)
    return t


_arrived: weakref.WeakSet[Names] = weakref.WeakSet()
"""Name tables read back whose index is not made yet (:func:`index_arrived`)."""
_arrived_lock = threading.Lock()


def index_arrived() -> None:
    """Make the index of every name table read back since the last call and still alive (each in steps that let
    other threads run): a worker's call, so that no lookup on the window's thread has to."""
    with _arrived_lock:
        tables = list(_arrived)
        _arrived.clear()
    for t in tables:
        t.ensure_index()


_REMADE = frozenset({"__weakref__", "_blob", "_hash", "_slots"})
"""A name table's parts not pickled as they are: its string (a buffer), and its index (made again here)."""


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is array:
            return _array, (obj.typecode, pickle.PickleBuffer(obj))
        if type(obj) is Names:
            state = {k: getattr(obj, k) for k in Names.__slots__ if k not in _REMADE}
            return _names, (state, pickle.PickleBuffer(obj._blob.encode()))
        return NotImplemented


def dumps(obj: object) -> tuple[bytes, list[pickle.PickleBuffer]]:
    """``obj`` pickled (protocol 5), its columns and name strings apart as buffers."""
    buffers: list[pickle.PickleBuffer] = []
    out = io.BytesIO()
    _Pickler(out, protocol=5, buffer_callback=buffers.append).dump(obj)
    return out.getvalue(), buffers


def loads(data: bytes | bytearray | memoryview, buffers: Sequence[bytes | bytearray | memoryview]) -> Any:
    """What :func:`dumps` pickled, from its stream and buffers."""
    return pickle.loads(data, buffers=buffers)
