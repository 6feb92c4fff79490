"""A first, light pass over an ONNX file: the main graph's structure straight from the wire format.

The full load (:func:`splitscope.engine.onnxio.loader.load_model`, then
:func:`splitscope.engine.onnxio.graph.graph_from_onnx`) decodes every node's attributes, checks each node
against its schema and records every type; on a 200k-node LLM export that is most of a minute's work
before anything can be shown. The first view needs much less: each node's name, op, domain, scope and
the tensors it reads and writes, and which tensors are weights. This module reads just those, without
ONNX or protobuf imported: one walk over the graph's fields finds where each node and weight lies, and the
nodes' fields are then read a column at a time (:mod:`splitscope.engine.onnxio.columns`: all first fields, all
second fields, ...), attributes, bodies, types and weight bytes skipped by their lengths; tensor names are
numbered by a hash of their bytes. The *preview* model (:mod:`splitscope.engine.split.preview`) is made of
them, and the window shows it until the full model replaces it.

Anything the pass cannot read (bytes that are not protobuf, two names whose bytes hash alike, a graph it finds
cyclic) returns None: the full load then says what is wrong in its own words.
"""

from __future__ import annotations

import contextlib
import itertools
import mmap
import os
from array import array
from pathlib import Path

import numpy as np
from splitscope.engine.model.coded import Coded
from splitscope.engine.onnxio.columns import Fields, fields, intern, read_at
from splitscope.engine.onnxio.wire import WireError, skip, string_field, varint

# Tags (field number << 3 | wire type) of the fields read.
_MODEL_GRAPH = 7 << 3 | 2
_MODEL_IR = 1 << 3 | 0
_MODEL_OPSET = 8 << 3 | 2
_GRAPH_NODE = 1 << 3 | 2
_GRAPH_NAME = 2 << 3 | 2
_GRAPH_INIT = 5 << 3 | 2
_GRAPH_INPUT = 11 << 3 | 2
_GRAPH_OUTPUT = 12 << 3 | 2
_GRAPH_SPARSE_INIT = 15 << 3 | 2
_NODE_IN = 1 << 3 | 2
_NODE_OUT = 2 << 3 | 2
_NODE_NAME = 3 << 3 | 2
_NODE_OP = 4 << 3 | 2
_NODE_DOMAIN = 7 << 3 | 2
_NODE_META = 9 << 3 | 2
_NODE_IO = (_NODE_IN, _NODE_OUT)
_TENSOR_NAME = 8 << 3 | 2
_VALUE_NAME = 1 << 3 | 2
_SPARSE_VALUES = 1 << 3 | 2
_OPSET_DOMAIN = 1 << 3 | 2
_OPSET_VERSION = 2 << 3 | 0
_ENTRY_KEY = 1 << 3 | 2
_ENTRY_VALUE = 2 << 3 | 2


_Buf = bytes | mmap.mmap
"""What the pass reads: the file's bytes, or a map of it."""

_READ_WHOLE = 256 * 2**20
"""Files up to this size are read whole; larger ones (weights inline) are mapped and only their structure paged in."""


class LightGraph:
    """The main graph's columns: per node its name, op, domain and metadata; its inputs and outputs as rows of
    :attr:`tensor_names` (-1: an omitted optional one), the rows flat with each node's end in ``*_off``."""

    __slots__ = (
        "domains",
        "graph_inputs",
        "graph_outputs",
        "in_off",
        "in_rows",
        "ir_version",
        "meta",
        "name",
        "names",
        "ops",
        "opsets",
        "out_off",
        "out_rows",
        "tensor_names",
        "weight_rows",
    )

    def __init__(self) -> None:
        self.name = ""
        self.names: list[str] = []
        self.ops: Coded[str] = Coded()
        self.domains: Coded[str] = Coded()
        self.tensor_names: list[str] = []
        """The names the nodes read and write, each once: first the inputs' in the order they are first read, then
        the outputs' that no node reads (the order a table interning every input, then every output, gives)."""
        self.in_off, self.in_rows = array("i", [0]), array("i")
        self.out_off, self.out_rows = array("i", [0]), array("i")
        self.meta: dict[int, dict[str, str]] = {}
        """Node index to its metadata_props, for the nodes that have any."""
        self.weight_rows = array("i")
        """Each initializer's row of :attr:`tensor_names` (one no node reads is added after the nodes' names)."""
        self.graph_inputs: list[str] = []
        self.graph_outputs: list[str] = []
        self.opsets: dict[str, int] = {}
        self.ir_version = 0

    @property
    def inputs(self) -> list[list[str]]:
        """Each node's inputs by name ('' for an omitted one)."""
        return self._by_name(self.in_rows, self.in_off)

    @property
    def outputs(self) -> list[list[str]]:
        """Each node's outputs by name."""
        return self._by_name(self.out_rows, self.out_off)

    @property
    def weight_names(self) -> list[str]:
        """The initializers' names, as read (sparse ones too)."""
        return [self.tensor_names[r] for r in self.weight_rows]

    @property
    def weights(self) -> set[str]:
        """The initializers' names."""
        return set(self.weight_names)

    def _by_name(self, rows: array[int], off: array[int]) -> list[list[str]]:
        names = self.tensor_names
        return [[names[r] if r >= 0 else "" for r in rows[off[i] : off[i + 1]]] for i in range(len(off) - 1)]


def _entries(b: _Buf, p: int, e: int) -> array[int]:
    """Where each field of the message ``b[p:e]`` starts: the one walk in order (each field's end is the next's
    start); the fields themselves are read a column at a time (:func:`fields`)."""
    at = array("q")
    put = at.append
    while p < e:
        put(p)
        k = b[p]
        p += 1
        if k >= 0x80:
            k, p = varint(b, p - 1)
        if k & 7 == 2:
            n = b[p]
            if n < 0x80:
                p += n + 1
            elif b[p + 1] < 0x80:  # two bytes: a node's usual length
                p += (n & 0x7F | b[p + 1] << 7) + 2
            else:
                n, p = varint(b, p)
                p += n
        else:
            p = skip(b, p, k & 7)
    if p != e:
        raise WireError("truncated graph")
    return at


_TEXT_CHUNK = 1 << 14
"""Strings gathered per step (numpy's repeat of their bytes' places holds the interpreter: about 10 ms a step)."""


class _Reader:
    """Strings out of the buffer: a field's bytes decoded, or numbered by content."""

    __slots__ = ("b", "u8")

    def __init__(self, b: _Buf) -> None:
        self.b = b
        self.u8 = np.frombuffer(b, np.uint8)

    def text(self, at: np.ndarray, size: np.ndarray) -> list[str]:
        """Each string (size -1: none, read as ''): a slice of the strings gathered and decoded at once."""
        out: list[str] = []
        size = np.maximum(size, 0)
        for c0 in range(0, len(at), _TEXT_CHUNK):
            a, n = at[c0 : c0 + _TEXT_CHUNK], size[c0 : c0 + _TEXT_CHUNK]
            ends = np.cumsum(n)
            raw = self.u8[np.repeat(a - (ends - n), n) + np.arange(int(ends[-1]) if len(ends) else 0)].tobytes()
            whole = raw.decode()
            if len(whole) == len(raw):  # ASCII: a character per byte
                cut = [0, *ends.tolist()]
                out += [whole[i:j] for i, j in itertools.pairwise(cut)]
            else:
                out += [raw[i - k : i].decode() for i, k in zip(ends.tolist(), n.tolist(), strict=True)]
        return out

    def coded(self, at: np.ndarray, size: np.ndarray) -> Coded[str]:
        """Each string, for a column of few distinct values (op types, domains): each decoded once, the rows codes."""
        rows, firsts = intern(self.u8, at, np.maximum(size, 0))
        distinct = self.text(at[firsts], size[firsts])
        return Coded.of_codes(distinct, array("I", rows.astype(np.uint32).tobytes()))

    def names_of(self, spans: np.ndarray, number: int) -> tuple[np.ndarray, np.ndarray]:
        """``(at, size)`` of the string field ``number`` of each message at ``spans`` (its rows: start, end)."""
        return fields(self.u8, spans[:, 0], spans[:, 1]).last_of(number, len(spans))


def _spans(u8: np.ndarray, at: array[int], end: int) -> dict[int, np.ndarray]:
    """The graph's fields by number, each a (start, end) row per field."""
    pos = np.frombuffer(at, np.int64)
    number, wire, start, size, after = read_at(u8, pos.copy())
    if np.any(after[:-1] != pos[1:]) or (len(after) and after[-1] != end):
        raise WireError("the graph's fields do not follow one another")
    spans = np.stack([start, start + size], axis=1)
    return {k: spans[(number == k) & (wire == 2)] for k in (_GRAPH_NODE >> 3, _GRAPH_INIT >> 3, 11, 12, 15, 2)}


def _read_graph(b: _Buf, p: int, g1: int, out: LightGraph) -> None:
    r = _Reader(b)
    by = _spans(r.u8, _entries(b, p, g1), g1)
    nodes = by[_GRAPH_NODE >> 3]
    n = len(nodes)
    f = fields(r.u8, nodes[:, 0], nodes[:, 1])
    out.names = r.text(*f.last_of(_NODE_NAME >> 3, n))
    out.ops = r.coded(*f.last_of(_NODE_OP >> 3, n))
    out.domains = r.coded(*f.last_of(_NODE_DOMAIN >> 3, n))
    _read_meta(r, f, out.meta)
    # Weight names: initializers' (field 8 of a TensorProto) and sparse ones' (their values, a TensorProto).
    w_at, w_size = r.names_of(by[_GRAPH_INIT >> 3], _TENSOR_NAME >> 3)
    sparse = by[_GRAPH_SPARSE_INIT >> 3]
    if len(sparse):
        v_at, v_size = r.names_of(sparse, _SPARSE_VALUES >> 3)
        if np.any(v_size < 0):
            raise WireError("a sparse initializer without values")
        s_at, s_size = r.names_of(np.stack([v_at, v_at + v_size], axis=1), _TENSOR_NAME >> 3)
        w_at, w_size = np.concatenate([w_at, s_at]), np.concatenate([w_size, s_size])
    out.graph_inputs = r.text(*r.names_of(by[_GRAPH_INPUT >> 3], _VALUE_NAME >> 3))
    out.graph_outputs = r.text(*r.names_of(by[_GRAPH_OUTPUT >> 3], _VALUE_NAME >> 3))
    names = by[_GRAPH_NAME >> 3]
    if len(names):
        out.name = b[int(names[-1, 0]) : int(names[-1, 1])].decode()
    _read_rows(r, f, n, (w_at, np.maximum(w_size, 0)), out)


def _read_rows(r: _Reader, f: Fields, n: int, weights: tuple[np.ndarray, np.ndarray], out: LightGraph) -> None:
    """The nodes' inputs and outputs as rows of the tensor names, numbered as :attr:`LightGraph.tensor_names` says;
    each weight's row."""
    sides = []
    for number in (_NODE_IN >> 3, _NODE_OUT >> 3):
        msg, at, size = f.of(number)
        off = np.zeros(n + 1, np.int32)
        np.cumsum(np.bincount(msg, minlength=n), out=off[1:])
        sides.append((off, at, size, size > 0))
    at = np.concatenate([s[1][s[3]] for s in sides] + [weights[0]])
    size = np.concatenate([s[2][s[3]] for s in sides] + [weights[1]])
    rows, firsts = intern(r.u8, at, size)
    out.tensor_names = r.text(at[firsts], size[firsts])
    cols = []
    k = 0
    for _, _, _, named in sides:
        col = np.full(len(named), -1, np.int32)
        m = int(np.count_nonzero(named))
        col[named] = rows[k : k + m]
        k += m
        cols.append(array("i", col.tobytes()))
    out.in_rows, out.out_rows = cols
    out.in_off, out.out_off = (array("i", s[0].tobytes()) for s in sides)
    out.weight_rows = array("i", rows[k:].astype(np.int32).tobytes())


def _read_meta(r: _Reader, f: Fields, meta: dict[int, dict[str, str]]) -> None:
    """Each node's metadata_props (StringStringEntryProto: key, value), for the nodes that have any."""
    msg, at, size = f.of(_NODE_META >> 3)
    if not len(msg):
        return
    entries = np.stack([at, at + size], axis=1)
    keys = r.coded(*r.names_of(entries, _ENTRY_KEY >> 3))
    values = r.text(*r.names_of(entries, _ENTRY_VALUE >> 3))
    for i, key, value in zip(msg.tolist(), keys, values, strict=True):
        meta.setdefault(i, {})[key] = value


def _mapped(fd: int) -> mmap.mmap:
    """The file mapped, its pages asked for ahead (a page read on first touch holds the interpreter while the disk
    answers: a 200k-node export not yet cached held it 363 ms at a time; read ahead, 23 ms)."""
    mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    with contextlib.suppress(AttributeError, OSError, ValueError):  # no madvise (Windows) or not honoured
        mm.madvise(mmap.MADV_WILLNEED)
    return mm


def read_light(path: str | os.PathLike[str]) -> LightGraph | None:
    """The main graph's columns, or None when the file is not something this pass reads (the full load says why)."""
    out = LightGraph()
    try:
        with open(Path(path), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            # Indexing bytes is faster than indexing a map of the file; a file of inline weights is mapped.
            b = f.read() if size <= _READ_WHOLE else _mapped(f.fileno())
        p = 0
        found = False
        while p < size:
            k, p = varint(b, p)
            if k & 7 != 2:
                if k == _MODEL_IR:
                    out.ir_version, p = varint(b, p)
                else:
                    p = skip(b, p, k & 7)
                continue
            n, p = varint(b, p)
            e = p + n
            if e > size:
                raise WireError("truncated")
            if k == _MODEL_GRAPH and not found:
                found = True
                _read_graph(b, p, e, out)
            elif k == _MODEL_OPSET:
                dom = string_field(b, p, e, _OPSET_DOMAIN)
                q, ver = p, 0
                while q < e:
                    kk, q = varint(b, q)
                    if kk == _OPSET_VERSION:
                        ver, q = varint(b, q)
                    else:
                        q = skip(b, q, kk & 7)
                out.opsets[dom or "ai.onnx"] = ver
            p = e
        if not found or p != size:
            return None
    except (WireError, IndexError, ValueError, OSError, MemoryError):
        return None
    return out
