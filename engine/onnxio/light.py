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

import mmap
import os
from array import array
from pathlib import Path

import numpy as np
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
        "weights",
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
        self.weights: set[str] = set()
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

    def _by_name(self, rows: array[int], off: array[int]) -> list[list[str]]:
        names = self.tensor_names
        return [[names[r] if r >= 0 else "" for r in rows[off[i] : off[i + 1]]] for i in range(len(off) - 1)]


class _Interned:
    """The nodes' tensor names as the reader meets them: raw bytes to a row, inputs and outputs apart (decoded once
    each at the end, in :meth:`finish`)."""

    __slots__ = ("ins", "outs")

    def __init__(self) -> None:
        self.ins: dict[bytes, int] = {b"": -1}
        self.outs: dict[bytes, int] = {b"": -1}

    def finish(self, out: LightGraph) -> None:
        """Decode the names and number the outputs' rows after the inputs' (an output also read keeps its row)."""
        ins, outs = self.ins, self.outs
        del ins[b""], outs[b""]
        names = [k.decode() for k in ins]
        remap = array("i", bytes(4 * len(outs)))
        for k, r in outs.items():
            have = ins.get(k)
            if have is None:
                have = len(names)
                names.append(k.decode())
            remap[r] = have
        if outs:
            rows = np.frombuffer(out.out_rows, np.int32)
            made = rows >= 0
            rows = rows.copy()
            rows[made] = np.frombuffer(remap, np.int32)[rows[made]]
            out.out_rows = array("i", rows.tobytes())
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
            out.weights.add(string_field(b, p, e, _TENSOR_NAME))
        elif k == _GRAPH_SPARSE_INIT:
            _read_sparse(b, p, e, out.weights)
        elif k == _GRAPH_INPUT:
            out.graph_inputs.append(string_field(b, p, e, _VALUE_NAME))
        elif k == _GRAPH_OUTPUT:
            out.graph_outputs.append(string_field(b, p, e, _VALUE_NAME))
        elif k == _GRAPH_NAME:
            out.name = b[p:e].decode()
        p = e
    seen.finish(out)


class _NodeReader:
    """Reads one NodeProto at a time (:meth:`read`), its inputs and outputs straight into the graph's rows."""

    __slots__ = ("b", "in_off", "in_rows", "ins", "out_off", "out_rows", "outs")

    def __init__(self, b: _Buf, out: LightGraph, seen: _Interned) -> None:
        self.b = b
        self.in_rows, self.in_off, self.out_rows, self.out_off = out.in_rows, out.in_off, out.out_rows, out.out_off
        self.ins, self.outs = seen.ins, seen.outs

    def read(self, q: int, e: int, idx: int, meta: dict[int, dict[str, str]]) -> tuple[str, str, str]:
        """The NodeProto at ``b[q:e]``: its name, op and domain (its rows appended, its metadata into ``meta``).
        The light pass's innermost loop: the varints of its keys and lengths, almost always one byte, are read
        inline; a name is looked up by its bytes, decoded only once the graph is read."""
        b, ins, outs, in_rows, out_rows = self.b, self.ins, self.outs, self.in_rows, self.out_rows
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
            if kk == _NODE_IN:
                key = b[q : q + m]
                r = ins.get(key)
                if r is None:
                    r = ins[key] = len(ins) - 1
                in_rows.append(r)
            elif kk == _NODE_OUT:
                key = b[q : q + m]
                r = outs.get(key)
                if r is None:
                    r = outs[key] = len(outs) - 1
                out_rows.append(r)
            elif kk == _NODE_NAME:
                name = b[q : q + m].decode()
            elif kk == _NODE_OP:
                op = b[q : q + m].decode()
            elif kk == _NODE_DOMAIN:
                domain = b[q : q + m].decode()
            elif kk == _NODE_META:
                key_s = string_field(b, q, q + m, _ENTRY_KEY)
                meta.setdefault(idx, {})[key_s] = string_field(b, q, q + m, _ENTRY_VALUE)
            q += m
        if q != e:
            raise WireError("truncated node")
        self.in_off.append(len(in_rows))
        self.out_off.append(len(out_rows))
        return name, op, domain


def _read_sparse(b: _Buf, q: int, e: int, weights: set[str]) -> None:
    """A sparse initializer: its ``values`` is a TensorProto named as the weight."""
    while q < e:
        kk, q = varint(b, q)
        if kk == _SPARSE_VALUES:
            m, q = varint(b, q)
            weights.add(string_field(b, q, q + m, _TENSOR_NAME))
            q += m
        else:
            q = skip(b, q, kk & 7)


def read_light(path: str | os.PathLike[str]) -> LightGraph | None:
    """The main graph's columns, or None when the file is not something this pass reads (the full load says why)."""
    out = LightGraph()
    try:
        with open(Path(path), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            # Indexing bytes is faster than indexing a map of the file; a file of inline weights is mapped.
            b = f.read() if size <= _READ_WHOLE else mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
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
