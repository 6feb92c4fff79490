"""The protobuf wire format, read by hand: the primitives (:func:`varint`, :func:`skip`, :func:`string_field`) and an
ONNX file's structure without its weight bytes. The light first pass (:mod:`splitscope.engine.onnxio.light`) reads
the graph's columns with the same primitives.

``onnx.load`` decodes every byte of every weight. Analysis needs the graph,
and of each large initializer only its name, type and dims. This module maps
the file and rewrites the ModelProto with large initializers' data fields
dropped (their name, dims, type and external-data record kept), so decoding
touches kilobytes instead of gigabytes, and a single file over protobuf's 2 GiB
limit can still be analysed.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# ModelProto.graph, GraphProto.initializer
_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
# TensorProto fields holding data: float_data, int32_data, string_data, int64_data,
# raw_data, double_data, uint64_data
_TENSOR_DATA_FIELDS = frozenset({4, 5, 6, 7, 9, 10, 11})
_TENSOR_DIMS = 1
_TENSOR_DATA_TYPE = 2
_TENSOR_RAW_DATA = 9
# Bytes per element of the fixed-size ONNX element types (TensorProto.DataType numbers).
_ELEMENT_BYTES = {
    1: 4,
    2: 1,
    3: 1,
    4: 2,
    5: 2,
    6: 4,
    7: 8,
    9: 1,
    10: 2,
    11: 8,
    12: 4,
    13: 8,
    14: 8,
    15: 16,
    16: 2,
    17: 1,
    18: 1,
    19: 1,
    20: 1,
}


# Protobuf's largest field number; ONNX's messages use small ones.
_MAX_FIELD = 2**29 - 1
# More top-level fields than any ONNX model has (a model has a dozen kinds, repeated for opsets,
# functions and metadata): past this the bytes are not a model, however they parse.
_MAX_MODEL_FIELDS = 1_000_000


class WireError(ValueError):
    """The bytes are not well-formed protobuf (truncated or not ONNX)."""


Buf = bytes | memoryview | mmap.mmap
"""What the reader reads: a file's bytes, a view of them, or a map of the file."""


def varint(b: Buf, p: int) -> tuple[int, int]:
    """The varint at ``b[p]`` and the position after it (``IndexError`` past the end of ``b``)."""
    r = b[p]
    if r < 0x80:
        return r, p + 1
    r &= 0x7F
    s = 7
    p += 1
    while True:
        x = b[p]
        p += 1
        r |= (x & 0x7F) << s
        if x < 0x80:
            return r, p
        s += 7
        if s > 63:
            raise WireError("varint too long")


def skip(b: Buf, p: int, wt: int) -> int:
    """The position after the payload of wire type ``wt`` that starts at ``b[p]``."""
    if wt == 0:
        while b[p] >= 0x80:
            p += 1
        return p + 1
    if wt == 2:
        n, p = varint(b, p)
        return p + n
    if wt == 1:
        return p + 8
    if wt == 5:
        return p + 4
    raise WireError(f"wire type {wt} is not valid protobuf")


def string_field(b: Buf, p: int, e: int, tag: int) -> str:
    """The first field of key ``tag`` (a string) of the message ``b[p:e]``, or ''."""
    while p < e:
        k, p = varint(b, p)
        if k & 7 == 2:
            n, p = varint(b, p)
            if k == tag:
                return bytes(b[p : p + n]).decode()
            p += n
        else:
            p = skip(b, p, k & 7)
    return ""


def _varint(buf: Buf, pos: int, end: int) -> tuple[int, int]:
    """:func:`varint`, held to ``buf[:end]``."""
    try:
        if pos < end:
            v, p = varint(buf, pos)
            if p <= end:
                return v, p
    except IndexError:
        pass
    except WireError:
        if pos + 10 <= end:  # ten bytes, all continued, inside the field: too long; otherwise cut short
            raise
    raise WireError("truncated varint")


def each_field(buf: Buf, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """Yield (field number, wire type, field start, payload start, payload end) over buf[start:end]."""
    pos = start
    while pos < end:
        fstart = pos
        key, pos = _varint(buf, pos, end)
        num, wt = key >> 3, key & 7
        if num == 0 or num > _MAX_FIELD:
            # Zero bytes (a file padded or overwritten with zeros) read as field 0: stop at once.
            raise WireError(f"field number {num} at byte {fstart} is not valid protobuf")
        if wt == 0:
            pstart = pos
            _, pos = _varint(buf, pos, end)
            yield num, wt, fstart, pstart, pos
        elif wt in (1, 5):  # fixed64, fixed32
            pos += 8 if wt == 1 else 4
            if pos > end:
                raise WireError("truncated fixed-width field")
            yield num, wt, fstart, pos - (8 if wt == 1 else 4), pos
        elif wt == 2:
            length, pstart = _varint(buf, pos, end)
            pos = pstart + length
            if pos > end:
                raise WireError("truncated length-delimited field")
            yield num, wt, fstart, pstart, pos
        else:
            raise WireError(f"wire type {wt} is not valid protobuf")


def _encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _numel(buf: memoryview, start: int, end: int) -> int:
    n = 1
    for num, wt, _, ps, pe in each_field(buf, start, end):
        if num != _TENSOR_DIMS:
            continue
        if wt == 0:
            d, _ = _varint(buf, ps, pe)
            n *= d if d < 2**63 else 0  # a negative dim (two's complement): no elements
        elif wt == 2:  # packed
            pos = ps
            while pos < pe:
                d, pos = _varint(buf, pos, pe)
                n *= d
    return n


def _strip_tensor(buf: memoryview, start: int, end: int, max_elements: int) -> bytes | None:
    """The TensorProto without its data fields, or None to keep it as it is."""
    if end - start <= 4 * max_elements + 256:
        return None
    numel = _numel(buf, start, end)
    if numel <= max_elements:
        return None
    parts = []
    data_type = 0
    raw = -1
    for num, _, fs, ps, pe in each_field(buf, start, end):
        if num == _TENSOR_DATA_TYPE:
            data_type, _ = _varint(buf, ps, pe)
        elif num == _TENSOR_RAW_DATA:
            raw = pe - ps
        if num not in _TENSOR_DATA_FIELDS:
            parts.append(bytes(buf[fs:pe]))
    size = _ELEMENT_BYTES.get(data_type)
    if raw >= 0 and size is not None and raw != numel * size:
        raise WireError(f"an initializer's dims say {numel} elements ({numel * size} bytes) but it holds {raw} bytes")
    return b"".join(parts)


def _strip_graph(buf: memoryview, start: int, end: int, max_elements: int) -> bytes | None:
    """The GraphProto at ``buf[start:end]`` without its large initializers' data; None when it has none to drop."""
    out: list[bytes] = []
    run_start = start
    for num, _, fs, ps, pe in each_field(buf, start, end):
        if num != _GRAPH_INITIALIZER:
            continue
        stripped = _strip_tensor(buf, ps, pe, max_elements)
        if stripped is None:
            continue
        out.append(bytes(buf[run_start:fs]))
        out.append(_encode_varint((_GRAPH_INITIALIZER << 3) | 2) + _encode_varint(len(stripped)) + stripped)
        run_start = pe
    if not out:
        return None
    out.append(bytes(buf[run_start:end]))
    return b"".join(out)


def read_structure(path: str | os.PathLike[str], max_elements: int) -> bytes:
    """The model file's bytes with the data of initializers over ``max_elements`` elements dropped.

    Raises
    ------
    WireError
        When the file is not well-formed protobuf.
    """
    with open(Path(path), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return b""
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            with contextlib.suppress(AttributeError, OSError, ValueError):  # no madvise (Windows) or not honoured
                mm.madvise(mmap.MADV_WILLNEED)  # a page read on first touch holds the interpreter while it is read
            buf = memoryview(mm)
            try:
                out: list[bytes] = []
                run_start = 0
                for count, (num, wt, fs, ps, pe) in enumerate(each_field(buf, 0, size)):
                    if count > _MAX_MODEL_FIELDS:
                        raise WireError(f"over {_MAX_MODEL_FIELDS} top-level fields, more than any ONNX model has")
                    if num != _MODEL_GRAPH or wt != 2:
                        continue
                    graph = _strip_graph(buf, ps, pe, max_elements)
                    if graph is None:
                        continue
                    out.append(bytes(buf[run_start:fs]))
                    out.append(_encode_varint((_MODEL_GRAPH << 3) | 2) + _encode_varint(len(graph)) + graph)
                    run_start = pe
                if out:
                    out.append(bytes(buf[run_start:size]))
                    return b"".join(out)
            finally:
                buf.release()
        # Nothing to drop (small weights, or external data): the file as it is, read with the interpreter let go of
        # (copying a 600 MB structure in memory held it for 0.8 s).
        f.seek(0)
        return f.read()


_GRAPH_NODE = 1
_GRAPH_NAME = 2
_GRAPH_INPUT = 11
_GRAPH_OUTPUT = 12
_TENSOR_NAME = 8


class ModelLayout:
    """Where each part of a serialized model sits, so a model less some nodes can be written
    by copying byte ranges instead of decoding and re-encoding its weights."""

    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        end = len(data)
        self.model_fields: list[tuple[int, int]] = []
        self.graph_name = b""
        self.nodes: list[tuple[int, int]] = []
        self.initializers: dict[str, tuple[int, int]] = {}
        for num, wt, fs, ps, pe in each_field(self.data, 0, end):
            if num != _MODEL_GRAPH or wt != 2:
                self.model_fields.append((fs, pe))
                continue
            for gnum, _, gfs, gps, gpe in each_field(self.data, ps, pe):
                if gnum == _GRAPH_NODE:
                    self.nodes.append((gfs, gpe))
                elif gnum == _GRAPH_NAME:
                    self.graph_name = bytes(self.data[gps:gpe])
                elif gnum == _GRAPH_INITIALIZER:
                    for tnum, _, _, tps, tpe in each_field(self.data, gps, gpe):
                        if tnum == _TENSOR_NAME:
                            self.initializers[bytes(self.data[tps:tpe]).decode("utf-8", "replace")] = (gfs, gpe)
                            break

    def write(self, keep: list[int], initializers: list[str], inputs: list[bytes], outputs: list[bytes]) -> bytes:
        """Serialized model with only the ``keep`` nodes (by index) and the named initializers.

        ``inputs`` and ``outputs`` are serialized ValueInfoProtos for the new graph's I/O.
        """
        d = self.data
        graph: list[bytes | memoryview] = []
        if self.graph_name:
            graph.append(_encode_varint((_GRAPH_NAME << 3) | 2) + _encode_varint(len(self.graph_name)))
            graph.append(self.graph_name)
        graph.extend(d[s:e] for s, e in (self.nodes[i] for i in keep))
        graph.extend(d[s:e] for s, e in (self.initializers[n] for n in initializers if n in self.initializers))
        for num, items in ((_GRAPH_INPUT, inputs), (_GRAPH_OUTPUT, outputs)):
            for b in items:
                graph.append(_encode_varint((num << 3) | 2) + _encode_varint(len(b)))
                graph.append(b)
        glen = sum(len(x) for x in graph)
        parts: list[bytes | memoryview] = [d[s:e] for s, e in self.model_fields]
        parts.append(_encode_varint((_MODEL_GRAPH << 3) | 2) + _encode_varint(glen))
        parts.extend(graph)
        return b"".join(parts)


CHUNK_BYTES = 2 << 20
"""Node bytes a chunk of :func:`node_chunks` holds: decoding one holds the interpreter a few milliseconds."""


def _split_out(buf: memoryview, start: int, end: int, numbers: frozenset[int]) -> tuple[bytes, list[bytes]]:
    """buf[start:end] without its length-delimited fields numbered in ``numbers``, and those fields in order, in
    chunks of about :data:`CHUNK_BYTES`."""
    rest: list[bytes] = []
    chunks: list[bytes] = []
    current: list[bytes] = []
    size = 0
    run = start
    for num, wt, f0, _p0, p1 in each_field(buf, start, end):
        if num not in numbers or wt != 2:
            continue
        if f0 > run:  # only what lies between: a million fields side by side left as many empty pieces to join
            rest.append(bytes(buf[run:f0]))
        run = p1
        current.append(bytes(buf[f0:p1]))
        size += p1 - f0
        if size >= CHUNK_BYTES:
            chunks.append(b"".join(current))
            current, size = [], 0
    rest.append(bytes(buf[run:end]))
    if current:
        chunks.append(b"".join(current))
    return b"".join(rest), chunks


_GRAPH_REPEATED = frozenset({1, 5, 13})
"""The main graph's fields :func:`node_chunks` decodes in steps: nodes, initializers and value infos (each a
million at a million nodes; decoding the initializers in one call held the interpreter for over half a second)."""


def node_chunks(data: bytes) -> tuple[bytes, list[bytes]] | None:
    """The model's bytes without its main graph's nodes, initializers and value infos, and those fields in chunks of
    about :data:`CHUNK_BYTES`, in order: decoding the first and merging each chunk into the graph gives the same
    model as decoding it whole (each repeated field keeps its order), in steps short enough for the window's thread
    to run between them. None when the model is not laid out as one graph field (decode it whole)."""
    buf = memoryview(data)
    try:
        graphs = [
            (fs, ps, pe) for num, wt, fs, ps, pe in each_field(buf, 0, len(data)) if num == _MODEL_GRAPH and wt == 2
        ]
        if len(graphs) != 1:
            return None
        fs, ps, pe = graphs[0]
        graph, chunks = _split_out(buf, ps, pe, _GRAPH_REPEATED)
        head = bytes(buf[:fs]) + _encode_varint((_MODEL_GRAPH << 3) | 2) + _encode_varint(len(graph)) + graph
        return head + bytes(buf[pe:]), chunks
    except WireError:
        return None
    finally:
        buf.release()


def parse_in_chunks(message: Any, data: bytes | bytearray, repeated: frozenset[int]) -> None:
    """``message.ParseFromString(data)`` in steps: its other fields first, then the fields numbered in ``repeated``
    (repeated messages: a graph's nodes, its value_info) merged a chunk at a time, the interpreter released between
    chunks. The same message as one parse; a large GraphProto no longer holds the window's thread for its whole
    decode."""
    import time

    buf = memoryview(data)
    try:
        rest, chunks = _split_out(buf, 0, len(data), repeated)
    except WireError:
        message.ParseFromString(data)  # let protobuf say what is wrong
        return
    finally:
        buf.release()
    message.ParseFromString(rest)
    for chunk in chunks:
        message.MergeFromString(chunk)
        time.sleep(0)
