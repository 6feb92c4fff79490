"""The protobuf wire format read a column at a time: every field of many messages at once (:func:`fields`), and
byte strings numbered by content (:func:`intern`), in numpy.

A message's fields follow one another, so one message is read in order; but the nodes of a graph are a million
messages side by side, and their first fields, then their second, ... are each one array operation over all of
them. A step reads the key and the length (or value) of one field in every message not yet at its end; steps go on
while any message has fields left. Strings are never made here: a string field is its start and length in the
buffer, and :func:`intern` numbers equal ones alike by a hash of their bytes.

Every operation is over at most :data:`CHUNK` items, most of them numpy calls that let other threads run (the window
keeps painting while a file is read beside it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from splitscope.engine.onnxio.wire import WireError, each_field, varint

_MAX_FIELD = 2**29 - 1
"""Protobuf's largest field number."""

CHUNK = 1 << 17
"""Messages (or strings) per step of the array operations."""


@dataclass(frozen=True, slots=True)
class Fields:
    """The fields read, one row each, in message order and, within a message, in the order written."""

    msg: np.ndarray
    """The message's index among those read (int64)."""
    number: np.ndarray
    """The field number (int64)."""
    wire: np.ndarray
    """The wire type (int64)."""
    at: np.ndarray
    """Where the payload starts (length-delimited), the value (varint: as int64, two's complement), or where the
    fixed-width bytes start."""
    size: np.ndarray
    """The payload's length (length-delimited), else 0."""

    def of(self, number: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(msg, at, size)`` of the length-delimited fields of ``number`` (a string or a message).

        Raises:
            WireError: the field is there with another wire type (not the message it was read as).
        """
        sel = self.number == number
        if np.any(self.wire[sel] != 2):
            raise WireError(f"field {number} is not length-delimited")
        return self.msg[sel], self.at[sel], self.size[sel]

    def last_of(self, number: int, count: int) -> tuple[np.ndarray, np.ndarray]:
        """``(at, size)`` per message of the last field ``number`` in it (a singular field: the last one written
        counts), size -1 where a message has none."""
        msg, at, size = self.of(number)
        last = np.ones(len(msg), np.bool_)
        last[:-1] = msg[1:] != msg[:-1]  # rows in message order: a message's last is before the next message's
        out_at = np.zeros(count, np.int64)
        out_size = np.full(count, -1, np.int64)
        out_at[msg[last]] = at[last]
        out_size[msg[last]] = size[last]
        return out_at, out_size


def _varints(u8: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The varint at each of ``pos`` (uint64) and the position after it. Raises IndexError past the buffer's end."""
    b = u8[pos]
    val = (b & 0x7F).astype(np.uint64)
    n = np.ones(len(pos), np.int64)
    more = np.flatnonzero(b >= 0x80)
    shift = 7
    while more.size:
        if shift > 63:
            raise WireError("varint too long")
        bb = u8[pos[more] + n[more]]
        val[more] |= (bb & 0x7F).astype(np.uint64) << np.uint64(shift)
        n[more] += 1
        more = more[bb >= 0x80]
        shift += 7
    return val, pos + n


def read_at(u8: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, ...]:
    """The field whose key is at each of ``pos``: (number, wire type, at, size, position after); ``pos`` is
    updated in place."""
    key, pos = _varints(u8, pos)
    key = key.astype(np.int64)
    wire, number = key & 7, key >> 3
    if np.any((number == 0) | (number > _MAX_FIELD)):
        raise WireError("a field number that is not valid protobuf")
    at = pos.copy()
    size = np.zeros(len(pos), np.int64)
    for wt, width in ((1, 8), (5, 4)):
        sel = wire == wt
        pos[sel] += width
    for wt in (0, 2):
        sel = np.flatnonzero(wire == wt)
        if sel.size:
            v, after = _varints(u8, pos[sel])
            if wt == 0:
                at[sel] = v.view(np.int64)
                pos[sel] = after
            else:
                if np.any(v > np.uint64(2**62)):
                    raise WireError("length past any file")
                ln = v.astype(np.int64)
                at[sel], size[sel], pos[sel] = after, ln, after + ln
    if np.any((wire == 3) | (wire == 4) | (wire > 5)):
        raise WireError("a wire type that is not valid protobuf")
    return number, wire, at, size, pos


def fields(u8: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Fields:
    """Every field of the messages ``u8[starts[i]:ends[i]]``.

    Raises:
        WireError: a message does not end where its last field does (cut short or not protobuf).
        IndexError: a field runs past the buffer.
    """
    steps: list[tuple[int, np.ndarray, tuple[np.ndarray, ...]]] = []  # (step, messages, their fields)
    tails: list[tuple[int, int, tuple[np.ndarray, ...]]] = []  # (message, step, its fields from there)
    for c0 in range(0, len(starts), CHUNK):
        idx = np.arange(c0, min(c0 + CHUNK, len(starts)), dtype=np.int64)
        pos = starts[idx].astype(np.int64)
        end = ends[idx].astype(np.int64)
        live = pos < end
        idx, pos, end = idx[live], pos[live], end[live]
        k = 0
        while idx.size:
            if k >= _LOCKSTEP and idx.size <= _FEW:  # a few long messages left: one at a time
                tails += [
                    (m, k, _one(u8, p, e)) for m, p, e in zip(idx.tolist(), pos.tolist(), end.tolist(), strict=True)
                ]
                break
            number, wire, at, size, pos = read_at(u8, pos)
            steps.append((k, idx, (number, wire, at, size)))
            if np.any(pos > end):
                raise WireError("a field runs past its message")
            live = pos < end
            idx, pos, end = idx[live], pos[live], end[live]
            k += 1
    # Each message's k-th field goes to the k-th place after the fields of the messages before it: placed, not sorted.
    counts = np.zeros(len(starts), np.int64)
    for _, idx, _ in steps:
        counts[idx] += 1
    for m, _, got in tails:
        counts[m] += len(got[0])
    base = np.cumsum(counts) - counts
    total = int(counts.sum())
    msg = np.repeat(np.arange(len(starts), dtype=np.int64), counts)
    cols = [np.empty(total, np.int64) for _ in range(4)]
    for k, idx, got in steps:
        to = base[idx] + k
        for col, values in zip(cols, got, strict=True):
            col[to] = values
    for m, k, got in tails:
        to = base[m] + k + np.arange(len(got[0]))
        for col, values in zip(cols, got, strict=True):
            col[to] = values
    return Fields(msg, *cols)


_LOCKSTEP = 64
"""Steps after which the messages still being read, if :data:`_FEW`, are read one at a time (an unpacked repeated
field of a million values would otherwise take a million array steps)."""


_FEW = 32
"""A lockstep step costs what reading some 40 fields one at a time does."""


def _one(u8: np.ndarray, p: int, e: int) -> tuple[np.ndarray, ...]:
    """The fields of ``u8[p:e]``, read in order: (number, wire type, at, size) as :func:`read_at` gives them."""
    b = memoryview(u8.data)
    rows: list[tuple[int, int, int, int]] = []
    for number, wt, _, start, after in each_field(b, p, e):
        if wt == 0:
            value, _ = varint(b, start)
            rows.append((number, 0, value - (1 << 64) if value >= 1 << 63 else value, 0))
        else:
            rows.append((number, wt, start, after - start if wt == 2 else 0))
    return tuple(np.array(c, np.int64).reshape(-1) for c in zip(*rows, strict=True)) if rows else _EMPTY


_EMPTY = (np.zeros(0, np.int64),) * 4


# Odd 64-bit constants (splitmix64's and the golden ratio's) for the two hashes.
_K = (
    (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)),
    (np.uint64(0xD6E8FEB86659FD93), np.uint64(0xA0761D6478BD642F), np.uint64(0xE7037ED1A0B428DB)),
)


def _mix(x: np.ndarray, k: tuple[np.uint64, np.uint64, np.uint64]) -> np.ndarray:
    x = x * k[1]
    x ^= x >> np.uint64(31)
    x *= k[2]
    x ^= x >> np.uint64(29)
    return x


def _hashes(words: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two 64-bit hashes of each string ``buffer[starts[i]:starts[i] + lengths[i]]``; ``words`` is the buffer as
    aligned little-endian uint64 (the strings end inside it): the first mixes each 8-byte word with its place, the
    second weighs each word by an odd number of its place; both then mix in the length."""
    n = len(starts)
    nw = (lengths + 7) >> 3
    first = np.cumsum(nw) - nw
    seg = np.repeat(np.arange(n, dtype=np.int64), nw)
    k = np.arange(len(seg), dtype=np.int64) - first[seg]  # the word's place in its string
    q = starts[seg] + 8 * k
    wi = q >> 3
    a = ((q & 7) << 3).astype(np.uint64)
    # The unaligned word: numpy shifts by 64 or more to 0, so an aligned one takes nothing from the next.
    w = (words[wi] >> a) | (words[np.minimum(wi + 1, len(words) - 1)] << (np.uint64(64) - a))
    w &= (np.uint64(1) << ((lengths[seg] - 8 * k) << 3).astype(np.uint64)) - np.uint64(1)  # past the end: 0
    kk = k.astype(np.uint64)
    c1, c2 = _K
    parts = (_mix(w ^ (kk * c1[0]), c1), w * ((kk << np.uint64(1) | np.uint64(1)) * c2[0]))
    has = nw > 0
    out = []
    for x, c in zip(parts, _K, strict=True):
        h = np.zeros(n, np.uint64)
        if len(x):
            h[has] = np.add.reduceat(x, first[has])
        out.append(_mix(h ^ (lengths.astype(np.uint64) * c[0]), c))
    return out[0], out[1]


def intern(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Number the byte strings ``buf[starts[i]:starts[i] + lengths[i]]`` by content: ``(rows, firsts)``, each
    string's row (rows numbered in the order the strings are first met) and each row's first string.

    Two strings are one row when two independent 64-bit hashes of their bytes agree; where one agrees and the other
    does not, :class:`WireError` (the caller reads the file another way).

    Raises:
        WireError: a string ends in the buffer's last seven bytes (past its last aligned word), or a hash collides.
    """
    n_words = len(buf) >> 3
    words = buf[: n_words * 8].view("<u8")
    if len(starts) and int((starts + lengths).max()) > n_words * 8:
        raise WireError("a string in the last bytes of the file")
    h1 = np.empty(len(starts), np.uint64)
    h2 = np.empty(len(starts), np.uint64)
    for c0 in range(0, len(starts), CHUNK):
        sl = slice(c0, c0 + CHUNK)
        h1[sl], h2[sl] = _hashes(words, starts[sl], lengths[sl])
    first, rows = _distinct(h1)
    if np.any(h2 != h2[first[rows]]):
        raise WireError("two names hash alike")
    return rows, first


def _distinct(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``h`` in the order first met: each one's first index, and each value's number.

    An open-addressing table in arrays, filled a round at a time: each value still without a slot claims the slot it
    is at if free (one of the values at a slot wins), takes it if the slot holds its value, and moves to the next
    slot otherwise. Equal values travel together, so they end in one slot; a slot holds one value. A few rounds, the
    table at most half full, each a handful of array operations (a sort took 0.4 s at 3.4M values)."""
    n = len(h)
    bits = max(4, n.bit_length() + 1)  # at least twice the values: a few probes each
    mask = (1 << bits) - 1
    table = np.zeros(mask + 1, np.uint64)
    used = np.zeros(mask + 1, np.bool_)
    slot = (h >> np.uint64(64 - bits)).astype(np.int64)  # the hash's high bits: well mixed
    todo = np.arange(n, dtype=np.int64)
    while todo.size:
        at = slot[todo]
        free = ~used[at]
        table[at[free]] = h[todo[free]]
        used[at[free]] = True
        todo = todo[table[at] != h[todo]]
        slot[todo] = (slot[todo] + 1) & mask
    first = np.full(mask + 1, n, np.int32)
    for c0 in range(0, n, CHUNK):
        np.minimum.at(first, slot[c0 : c0 + CHUNK], np.arange(c0, min(c0 + CHUNK, n), dtype=np.int32))
    mine = first[slot]  # each value's first index
    is_first = mine == np.arange(n)
    number = np.empty(n, np.int32)
    carry = -1
    for c0 in range(0, n, CHUNK):  # a running count in steps (one over millions holds the interpreter)
        part = np.cumsum(is_first[c0 : c0 + CHUNK], dtype=np.int32)
        number[c0 : c0 + CHUNK] = part + carry
        carry += int(part[-1])
    return np.flatnonzero(is_first), number[mine]
