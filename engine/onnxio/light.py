"""A first, light pass over an ONNX file: the main graph's structure straight from the wire format.

The full load (:func:`splitscope.engine.onnxio.loader.load_model`, then
:func:`splitscope.engine.onnxio.graph.graph_from_onnx`) decodes every node's attributes, checks each node
against its schema and records every type; on a 200k-node LLM export that is most of a minute's work
before anything can be shown. The first view needs much less: each node's name, op, domain, scope and
the tensors it reads and writes, and which tensors are weights. This module reads just those, without
ONNX or protobuf imported, skipping attributes (so bodies too), types and weight bytes field by field; the
*preview* model (:mod:`splitscope.engine.split.preview`) is made of them, and the window shows it until
the full model replaces it.

Anything the pass cannot read (bytes that are not protobuf, an external-data-only quirk, a graph it finds
cyclic) returns None: the full load then says what is wrong in its own words.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from array import array
from pathlib import Path

import numpy as np
from splitscope.engine.heap import drop_in_steps
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
        "weight_names",
        "weight_rows",
    )

    def __init__(self) -> None:
        self.name = ""
        self.names: list[str] = []
        self.ops: list[str] = []
        self.domains: list[str] = []
        self.tensor_names: list[str] = []
        """The names the nodes read and write, each once: first the inputs' in the order they are first read, then
        the outputs' that no node reads (the order a table interning every input, then every output, gives)."""
        self.in_off, self.in_rows = array("i", [0]), array("i")
        self.out_off, self.out_rows = array("i", [0]), array("i")
        self.meta: dict[int, dict[str, str]] = {}
        """Node index to its metadata_props, for the nodes that have any."""
        self.weight_names: list[str] = []
        """The initializers' names, as read (sparse ones too)."""
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
    def weights(self) -> set[str]:
        """The initializers' names."""
        return set(self.weight_names)

    def _by_name(self, rows: array[int], off: array[int]) -> list[list[str]]:
        names = self.tensor_names
        return [[names[r] if r >= 0 else "" for r in rows[off[i] : off[i + 1]]] for i in range(len(off) - 1)]


_SHARDS = 256
"""Dicts the names are spread over by hash: a dict of a million names grows in one step that holds the interpreter
for tens of milliseconds (and is freed in one); 256 of them grow and go a few thousand names at a time."""


_MASK = _SHARDS - 1


class _Interned:
    """The nodes' tensor names as the reader meets them: raw bytes to a row, inputs and outputs apart, each over
    :data:`_SHARDS` dicts (decoded once each at the end, in :meth:`finish`)."""

    __slots__ = ("ins", "n_in", "n_out", "outs")

    def __init__(self) -> None:
        self.ins: list[dict[bytes, int]] = [{} for _ in range(_SHARDS)]
        self.outs: list[dict[bytes, int]] = [{} for _ in range(_SHARDS)]
        self.n_in = self.n_out = 0

    def finish(self, out: LightGraph) -> None:
        """Decode the names, number the outputs' rows after the inputs' (an output also read keeps its row) and
        find each initializer's row; the lookups are let go of a few at a time."""
        ins, outs, mask = self.ins, self.outs, _MASK
        names = [""] * self.n_in
        for d in ins:
            for k, r in d.items():
                names[r] = k.decode()
        out_keys = [b""] * self.n_out
        for d in outs:
            for k, r in d.items():
                out_keys[r] = k
        drop_in_steps(outs, step=8)
        remap = array("i", bytes(4 * len(out_keys)))
        for r, k in enumerate(out_keys):
            shard = ins[hash(k) & mask]
            have = shard.get(k)
            if have is None:
                have = shard[k] = len(names)
                names.append(k.decode())
            remap[r] = have
        drop_in_steps(out_keys)
        if len(out.out_rows):
            rows = np.frombuffer(out.out_rows, np.int32).copy()
            made = rows >= 0
            rows[made] = np.frombuffer(remap, np.int32)[rows[made]]
            out.out_rows = array("i", rows.tobytes())
        for w in out.weight_names:
            k = w.encode()
            shard = ins[hash(k) & mask]
            r = shard.get(k)
            if r is None:  # a weight no node reads
                r = shard[k] = len(names)
                names.append(w)
            out.weight_rows.append(r)
        drop_in_steps(ins, step=8)
        out.tensor_names = names


def _read_graph(b: _Buf, p: int, g1: int, out: LightGraph) -> None:
    names, ops, domains = out.names, out.ops, out.domains
    meta = out.meta
    seen = _Interned()
    node = _NodeReader(b, out, seen)
    while p < g1:
        k, p = varint(b, p)
        if k & 7 != 2:
            p = skip(b, p, k & 7)
            continue
        n, p = varint(b, p)
        e = p + n
        if e > g1:
            raise WireError("truncated")
        if k == _GRAPH_NODE:
            name, op, domain = node.read(p, e, len(names), meta)
            names.append(name)
            ops.append(op)
            domains.append(domain)
        elif k == _GRAPH_INIT:
            out.weight_names.append(string_field(b, p, e, _TENSOR_NAME))
        elif k == _GRAPH_SPARSE_INIT:
            _read_sparse(b, p, e, out.weight_names)
        elif k == _GRAPH_INPUT:
            out.graph_inputs.append(string_field(b, p, e, _VALUE_NAME))
        elif k == _GRAPH_OUTPUT:
            out.graph_outputs.append(string_field(b, p, e, _VALUE_NAME))
        elif k == _GRAPH_NAME:
            out.name = b[p:e].decode()
        p = e
    node.done()
    seen.finish(out)


class _NodeReader:
    """Reads one NodeProto at a time (:meth:`read`), its inputs and outputs straight into the graph's rows."""

    __slots__ = ("b", "in_off", "in_rows", "ins", "n_in", "n_out", "out_off", "out_rows", "outs", "seen")

    def __init__(self, b: _Buf, out: LightGraph, seen: _Interned) -> None:
        self.b = b
        self.in_rows, self.in_off, self.out_rows, self.out_off = out.in_rows, out.in_off, out.out_rows, out.out_off
        self.seen = seen
        self.ins, self.outs = seen.ins, seen.outs
        self.n_in = self.n_out = 0

    def done(self) -> None:
        """Hand the counts of distinct names over (:meth:`_Interned.finish` reads them)."""
        self.seen.n_in, self.seen.n_out = self.n_in, self.n_out

    def read(self, q: int, e: int, idx: int, meta: dict[int, dict[str, str]]) -> tuple[str, str, str]:
        """The NodeProto at ``b[q:e]``: its name, op and domain (its rows appended, its metadata into ``meta``).
        The light pass's innermost loop: the varints of its keys and lengths, almost always one byte, are read
        inline; a name is looked up by its bytes (numbered in first-met order), decoded once the graph is read."""
        b, ins, outs, in_rows, out_rows = self.b, self.ins, self.outs, self.in_rows, self.out_rows
        n_in, n_out = self.n_in, self.n_out
        name = op = domain = ""
        while q < e:
            kk = b[q]
            q += 1
            if kk >= 0x80:
                kk, q = varint(b, q - 1)
            if kk & 7 != 2:
                q = skip(b, q, kk & 7)
                continue
            m = b[q]
            q += 1
            if m >= 0x80:
                m, q = varint(b, q - 1)
            if kk in _NODE_IO:
                r = -1
                if m:
                    key = b[q : q + m]
                    d = (ins if kk == _NODE_IN else outs)[hash(key) & _MASK]
                    r = d.get(key, -1)
                    if r < 0 and kk == _NODE_IN:
                        r = d[key] = n_in
                        n_in += 1
                    elif r < 0:
                        r = d[key] = n_out
                        n_out += 1
                (in_rows if kk == _NODE_IN else out_rows).append(r)
            elif kk == _NODE_NAME:
                name = b[q : q + m].decode()
            elif kk == _NODE_OP:
                op = b[q : q + m].decode()
            elif kk == _NODE_DOMAIN:
                domain = b[q : q + m].decode()
            elif kk == _NODE_META:
                _read_meta(b, q, q + m, meta.setdefault(idx, {}))
            q += m
        if q != e:
            raise WireError("truncated node")
        self.n_in, self.n_out = n_in, n_out
        self.in_off.append(len(in_rows))
        self.out_off.append(len(out_rows))
        return name, op, domain


def _read_meta(b: _Buf, q: int, e: int, into: dict[str, str]) -> None:
    """One metadata_props entry (a StringStringEntryProto) into ``into``."""
    into[string_field(b, q, e, _ENTRY_KEY)] = string_field(b, q, e, _ENTRY_VALUE)


def _read_sparse(b: _Buf, q: int, e: int, weights: list[str]) -> None:
    """A sparse initializer: its ``values`` is a TensorProto named as the weight."""
    while q < e:
        kk, q = varint(b, q)
        if kk == _SPARSE_VALUES:
            m, q = varint(b, q)
            weights.append(string_field(b, q, q + m, _TENSOR_NAME))
            q += m
        else:
            q = skip(b, q, kk & 7)


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
