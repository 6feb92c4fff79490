"""Reading a child process's output: the standard library only (the early preview reads with it before numpy or Qt
is imported)."""

from __future__ import annotations

import io

READ_STEP = 1 << 24
"""Bytes read per call (each a copy into the buffer, the interpreter let go of while the pipe is read)."""


def read_exactly(stream: io.BufferedReader, size: int) -> bytearray | None:
    """The next ``size`` bytes of ``stream``, read into one buffer a step at a time (no joined copy of hundreds of
    megabytes holding the interpreter); None when the stream ends first."""
    buf = bytearray(size)
    view, got = memoryview(buf), 0
    while got < size:
        k = stream.readinto(view[got : got + READ_STEP])
        if not k:
            return None
        got += k
    return buf
