"""Giving freed memory back to the operating system.

Reading a model's structure and inferring its shapes run in C++ (protobuf, ONNX's shape inference), which allocate
hundreds of thousands of small blocks from the C heap. Freed, they leave the heap full of free pages between the few
blocks still in use, and glibc gives back only what lies at the top of its heap: measured on the 50k-node export,
50 analyses in one process held 261 MB of resident memory with 18 MB in use (``bench/bench_memory.py``). After a
large piece of work is dropped, :func:`give_back_free_memory` asks the C library to release every free page it
holds (glibc's ``malloc_trim``); elsewhere (macOS, Windows, musl) it does nothing, their allocators return large
free regions on their own.

The interpreter's own small-object arenas (1 MiB each) go back only when every block in them is free. On Python 3.11
the type attribute cache keeps a strong reference to each name it was asked with, and C code that looks an attribute
up by a C string (``ndarray.cumsum``, among others, on every call) asks with a new string each time: up to 4096 such
strings, allocated while a large model's objects filled the heap, each pin an arena the model's objects have
otherwise left. Measured on the 50k-node export: one more arena after every analysis, 50 analyses 1.14-1.17x the
resident memory of the first, until the cache was cleared. :func:`give_back_free_memory` clears that cache there
(``sys._clear_type_cache``, 5-8 microseconds). A loop of large lists with a new attribute name looked up each step
held 64 more arenas on 3.10 and 3.11, none once cleared; 3.12 and 3.13 cache only interned names and held none.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

_trim: Callable[[int], int] | None = None
_lock = threading.Lock()
_looked = False
_TYPE_CACHE_HOLDS_NAMES = sys.implementation.name == "cpython" and sys.version_info < (3, 12)


def _malloc_trim() -> Callable[[int], int] | None:
    global _trim, _looked
    with _lock:
        if not _looked:
            _looked = True
            if sys.platform.startswith("linux"):
                try:
                    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                    fn = libc.malloc_trim  # glibc only
                except (OSError, AttributeError):
                    fn = None
                if fn is not None:
                    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
                    _trim = fn
        return _trim


def give_back_free_memory() -> bool:
    """Release the C heap's free pages to the operating system; whether the C library could be asked.

    A few milliseconds after a large model (it walks the heap's free blocks); the GIL is released meanwhile
    (a ``ctypes`` call), so a window's thread is not held."""
    if _TYPE_CACHE_HOLDS_NAMES:
        sys._clear_type_cache()  # refilled by the next lookups: microseconds
    fn = _malloc_trim()
    if fn is None:
        return False
    fn(0)
    return True


def give_back_when_freed(obj: object) -> None:
    """:func:`give_back_free_memory` on a thread of its own once ``obj`` (a replaced model's node table) is freed,
    whichever thread lets go of it last: the window no longer knows when its panels have all let go of a model, and
    a 200k-node model is freed in the caller's step, in milliseconds."""

    def soon() -> None:
        threading.Thread(target=give_back_free_memory, name="give-back", daemon=True).start()

    weakref.finalize(obj, soon).atexit = False  # a model alive at exit: nothing to give back


def drop_in_steps(*columns: list[Any], step: int = 20_000) -> None:
    """Empty large lists a slice at a time. Freeing a few hundred thousand small objects in one go holds the
    interpreter throughout (the light pass's columns of a 200k-node export: 72 ms, which the window's thread waits
    out); between slices the other threads get their turn."""
    for column in columns:
        while column:
            del column[-step:]


def empty_in_steps(mapping: dict[Any, Any], step: int = 20_000) -> None:
    """Empty a large dict a few items at a time (:func:`drop_in_steps` for a dict: the scope tree's lookup of 394k
    tuples at a million nodes held the interpreter 87 ms when it went in one)."""
    pop = mapping.popitem
    while mapping:
        for _ in range(min(step, len(mapping))):
            pop()
