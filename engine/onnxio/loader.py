"""Read an ONNX file's structure without its weights, and check it is sound.

Analysis needs structure, types and shapes only. Weights are never read: the
file is mapped and large initializers' bytes skipped at the wire level
(:mod:`splitscope.engine.onnxio.wire`), large initializers become typed graph inputs before shape
inference, and external-data files are only checked to exist and be long enough. Every failure
raises a typed :class:`splitscope.engine.errors.ModelLoadError` with a one-line message.
"""

from __future__ import annotations

import functools
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, helper
from splitscope.engine.errors import (
    EmptyGraphError,
    ExternalDataError,
    InvalidGraphError,
    ModelDecodeError,
    ModelLoadError,
    ModelNotFoundError,
    UnsupportedOpsetError,
)
from splitscope.engine.model import DTYPE_SIZES, Initializers, size_in_bytes
from splitscope.engine.onnxio.wire import CHUNK_BYTES, WireError, node_chunks, read_structure

# Initializers at most this many elements keep their values: shape vectors,
# axes, zero points and scalars that static checks and shape inference read.
SMALL_INITIALIZER_ELEMENTS = 1024

_TWO_GB = 2**31


def dtype_name(elem_type: int) -> str | None:
    """ONNX element type number to its name (``FLOAT``, ``INT64`` ...), None if unset; one string a type (the
    enum's lookup makes a new one at every call, and every tensor of a model asks)."""
    name = _DTYPE_NAMES.get(elem_type)
    if name is None and elem_type != 0:
        try:
            name = TensorProto.DataType.Name(elem_type)
        except ValueError:
            name = f"TYPE{elem_type}"
        if len(_DTYPE_NAMES) < 256:
            _DTYPE_NAMES[elem_type] = name
    return name


_DTYPE_NAMES: dict[int, str] = {}


@dataclass(slots=True)
class LoadedModel:
    """A model proto with large weights stripped, and what was learnt loading it."""

    proto: onnx.ModelProto
    path: Path | None
    initializers: Initializers
    """Main-graph initializers (shape and size only)."""
    file_bytes: int
    warnings: list[str] = field(default_factory=list)


def _safe(text: object, limit: int = 120) -> str:
    """A name from the file, printable and short, for a one-line message (bytes: not UTF-8, shown as such)."""
    if not isinstance(text, str):
        text = repr(text)
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tensor_bytes(t: TensorProto) -> int | None:
    """Bytes the tensor's data takes on disk, None when its type has no fixed size."""
    dt = dtype_name(t.data_type)
    size = DTYPE_SIZES.get(dt or "")
    if not size:
        return None
    return size_in_bytes(_numel(t.dims), dt)


def _external_record(t: TensorProto, where: str) -> tuple[str, int, int | None]:
    """(location, offset, length) of an external tensor, checked to be well formed."""
    seen: dict[str, str] = {}
    for e in t.external_data:
        if e.key in seen:
            raise ExternalDataError(
                f"Initializer '{_safe(t.name)}'{where} gives its external-data key '{_safe(e.key)}' twice: the "
                "model is damaged; re-save it with onnx.save(..., save_as_external_data=True)."
            )
        seen[e.key] = e.value
    loc = seen.get("location", "")
    if not loc or any(not c.isprintable() for c in loc):
        raise ExternalDataError(
            f"Initializer '{_safe(t.name)}'{where} names external file {_safe(repr(loc))}, which is not a usable "
            "file name: the model is damaged; re-save it with its weights (save_as_external_data=True)."
        )
    numbers: dict[str, int | None] = {}
    for key in ("offset", "length"):
        raw = seen.get(key)
        if raw is None or raw == "":
            numbers[key] = None
            continue
        if not (raw.isascii() and raw.isdigit()):
            raise ExternalDataError(
                f"Initializer '{_safe(t.name)}'{where} has external-data {key} {_safe(repr(raw))}, not a "
                "whole number of bytes at or above 0: the model is damaged; re-save it with its weights."
            )
        numbers[key] = int(raw)
    return loc, numbers["offset"] or 0, numbers["length"]


def _check_external(t: TensorProto, base: Path | None, where: str) -> None:
    loc, offset, length = _external_record(t, where)
    name = _safe(t.name)
    if base is None:
        raise ExternalDataError(
            f"Initializer '{name}' keeps its weights in external file '{_safe(loc)}', but the model was "
            "given as bytes without a folder: open it from its file instead."
        )
    target = (base / loc).resolve()
    if os.path.isabs(loc) or (base.resolve() not in target.parents and target != base.resolve()):
        raise ExternalDataError(
            f"Initializer '{name}'{where} names external file '{_safe(loc)}' outside the model's folder; "
            "re-save the model with its weights next to it (onnx.save(..., save_as_external_data=True))."
        )
    try:
        st = target.stat()
    except OSError:
        raise ExternalDataError(
            f"Weights file '{_safe(loc)}' (initializer '{name}'{where}) is missing from {base.resolve()}: copy it next "
            "to the model, or re-export the model with its weights."
        ) from None
    if not stat.S_ISREG(st.st_mode):
        raise ExternalDataError(
            f"Weights file '{_safe(loc)}' (initializer '{name}'{where}) is not a regular file (a folder, pipe or "
            "device): copy the real weights file next to the model."
        )
    need = _tensor_bytes(t)
    if length is not None and need is not None and length < need:
        raise ExternalDataError(
            f"Initializer '{name}'{where} is {need} bytes ({dtype_name(t.data_type)}{list(t.dims)}) but its "
            f"external-data length says {length}: the model is damaged; re-save it with its weights."
        )
    end = offset + (length if length is not None else (need or 0))
    if end > st.st_size:
        raise ExternalDataError(
            f"Weights file '{_safe(loc)}' is {st.st_size} bytes but initializer '{name}'{where} needs bytes up to "
            f"{end}: the file is truncated; copy it again."
        )


_MAX_DIM = 2**40
"""No real tensor has a dimension this long; a larger one (or a negative one) is damage."""
_MAX_ELEMENTS = 2**48
"""Nor this many elements (256 T)."""


def _check_tensor_size(t: TensorProto, where: str) -> None:
    """An initializer's dims must be sane and match the data it holds."""
    if any(d < 0 or d > _MAX_DIM for d in t.dims):
        raise ModelDecodeError(
            f"Initializer '{_safe(t.name)}'{where} has dims {list(t.dims)}: a dimension is negative or impossibly "
            "large; the model is damaged; re-export it."
        )
    size = DTYPE_SIZES.get(dtype_name(t.data_type) or "")
    n = _numel(t.dims)
    if n > _MAX_ELEMENTS:
        raise ModelDecodeError(
            f"Initializer '{_safe(t.name)}'{where} has dims {list(t.dims)}: {n} elements, more than any real tensor; "
            "the model is damaged; re-export it."
        )
    have = None
    if t.HasField("raw_data"):
        if size and size >= 1:
            have, need = len(t.raw_data), n * int(size)
    elif n > SMALL_INITIALIZER_ELEMENTS:
        pass  # large: its data was stripped by the wire reader (which checked raw_data's length itself)
    else:
        for f in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
            values = getattr(t, f)
            if len(values):
                # int32_data packs 2-byte and smaller types one per value; complex types take two.
                per = 2 if t.data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128) else 1
                have, need = len(values), n * per
                if size and size < 1:  # 4-bit and 2-bit types pack several per value
                    have = need = None
                break
    if have is not None and have != need:
        raise ModelDecodeError(
            f"Initializer '{_safe(t.name)}'{where} has dims {list(t.dims)} ({n} elements) but holds {have} "
            f"{'bytes' if t.HasField('raw_data') else 'values'} instead of {need}: the model is damaged; re-export it."
        )


def _check_value_dims(g: onnx.GraphProto, source: str) -> None:
    """Declared dimensions past any real tensor (they make shape inference allocate without bound) are damage;
    a negative one (``-1`` for a dynamic batch, common in older exports) is read as unknown."""
    for vi in chain(g.input, g.output, g.value_info):
        tt = vi.type.tensor_type if vi.type.HasField("tensor_type") else None
        if tt is None or not tt.HasField("shape"):
            continue
        for d in tt.shape.dim:
            if not d.HasField("dim_value"):
                continue
            if d.dim_value < 0:
                d.ClearField("dim_value")
            elif d.dim_value > _MAX_DIM:
                raise InvalidGraphError(
                    f"Tensor '{_safe(vi.name)}' of {source} is declared with dimension {d.dim_value}, which no "
                    "tensor can have: the model is damaged; re-export it."
                )


_TENSOR_KINDS = frozenset(
    {
        onnx.AttributeProto.TENSOR,
        onnx.AttributeProto.TENSORS,
        onnx.AttributeProto.SPARSE_TENSOR,
        onnx.AttributeProto.SPARSE_TENSORS,
    }
)


def _attribute_tensors(a: onnx.AttributeProto):  # type: ignore[no-untyped-def]
    """The TensorProtos one attribute holds (its own, not those of nested graphs)."""
    if a.type == onnx.AttributeProto.TENSOR:
        yield a.t
    elif a.type == onnx.AttributeProto.TENSORS:
        yield from a.tensors
    elif a.type == onnx.AttributeProto.SPARSE_TENSOR:
        yield from (a.sparse_tensor.values, a.sparse_tensor.indices)
    elif a.type == onnx.AttributeProto.SPARSE_TENSORS:
        for sp in a.sparse_tensors:
            yield from (sp.values, sp.indices)


def _numel(dims: Iterable[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _strip_graph(g: onnx.GraphProto, base: Path | None, record: Initializers | None, where: str) -> None:
    """Check external data and replace large initializers of ``g`` (and nested graphs) by inputs.

    Sparse initializers always become typed inputs (analysis needs their dense shape only).
    """
    keep: list[TensorProto] = []
    as_inputs: list[onnx.ValueInfoProto] = []
    for t in g.initializer:
        if type(t.name) is bytes:
            raise text_error("The model", f"initializer {t.name!r}{where}")
        external = t.data_location == TensorProto.EXTERNAL
        if external:
            _check_external(t, base, where)
        else:
            _check_tensor_size(t, where)
        n = _numel(t.dims)
        dt = dtype_name(t.data_type) or "FLOAT"
        if record is not None:
            record.add(t.name, dt, tuple(t.dims), size_in_bytes(n, dt), external)
        if external or n > SMALL_INITIALIZER_ELEMENTS:
            as_inputs.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        else:
            keep.append(t)
    for sp in g.sparse_initializer:
        for part in (sp.values, sp.indices):
            if part.data_location == TensorProto.EXTERNAL:
                _check_external(part, base, f" (sparse){where}")
        name = sp.values.name
        if type(name) is bytes:
            raise text_error("The model", f"sparse initializer {name!r}{where}")
        dt = dtype_name(sp.values.data_type) or "FLOAT"
        if record is not None and name:
            stored = size_in_bytes(_numel(sp.values.dims), dt) + _numel(sp.indices.dims) * 8
            record.add(name, dt, tuple(sp.dims), stored, False)
        if name:
            as_inputs.append(helper.make_tensor_value_info(name, sp.values.data_type, list(sp.dims)))
    if as_inputs:
        del g.initializer[:]
        _extend_in_steps(g.initializer, keep)
        del g.sparse_initializer[:]
        known = {i.name for i in g.input}
        _extend_in_steps(g.input, [v for v in as_inputs if v.name not in known])
    _strip_nodes(g.node, base, where)


EXTEND_STEP = 20_000
"""Messages one ``extend`` of a repeated field copies: a few milliseconds of the interpreter each (a million at once
held it for about half a second, the window's thread waiting)."""


def _extend_in_steps(repeated: Any, items: list[Any]) -> None:
    """``repeated.extend(items)`` a step at a time, the interpreter released between steps."""
    for at in range(0, len(items), EXTEND_STEP):
        repeated.extend(items[at : at + EXTEND_STEP])
        time.sleep(0)


def _strip_nodes(nodes, base: Path | None, where: str) -> None:  # type: ignore[no-untyped-def]
    """One pass over nodes (of a graph or a function): external data of attribute tensors, and the graphs
    nested in them, checked and stripped by :func:`_strip_graph`."""
    for node in nodes:
        for a in node.attribute:
            kind = a.type
            if kind == onnx.AttributeProto.GRAPH:
                _strip_graph(a.g, base, None, f" in {_safe(node.name or node.op_type)}/{_safe(a.name)}{where}")
            elif kind == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    _strip_graph(sub, base, None, f" in {_safe(node.name or node.op_type)}/{_safe(a.name)}{where}")
            elif kind in _TENSOR_KINDS:
                for t in _attribute_tensors(a):
                    if t.data_location == TensorProto.EXTERNAL:
                        _check_external(t, base, f" (node {_safe(node.name or node.op_type)}{where})")


def _check_opsets(m: onnx.ModelProto) -> None:
    known = {"": onnx.defs.onnx_opset_version(), "ai.onnx": onnx.defs.onnx_opset_version()}
    try:
        known["ai.onnx.ml"] = onnx.defs.get_schema("LinearClassifier", domain="ai.onnx.ml").since_version
        known["ai.onnx.ml"] = max(known["ai.onnx.ml"], 5)
    except Exception:  # noqa: BLE001 - ml schemas absent in some builds
        pass
    for imp in m.opset_import:
        top = known.get(imp.domain)
        if top is not None and (imp.version > top or imp.version < 1):
            dom = imp.domain or "ai.onnx"
            raise UnsupportedOpsetError(
                f"The model imports opset {imp.version} of '{dom}', but this installation knows "
                f"versions 1 to {top} (onnx {onnx.__version__}): re-export with opset <= {top}, "
                "or upgrade the onnx package."
            )
    if m.ir_version > onnx.IR_VERSION:
        raise UnsupportedOpsetError(
            f"The model has IR version {m.ir_version}, newer than this onnx {onnx.__version__} reads "
            f"(up to {onnx.IR_VERSION}): upgrade the onnx package or re-export with an older IR."
        )


def decode_model(data: bytes, source: str) -> onnx.ModelProto:
    """Decode bytes as a ModelProto, raising :class:`ModelDecodeError` on anything but a model."""
    if not data:
        raise ModelDecodeError(f"{source} is empty (0 bytes): re-export or copy the model again.")
    m = onnx.ModelProto()
    try:
        split = node_chunks(data) if len(data) > 4 * CHUNK_BYTES else None
        if split is None:
            m.ParseFromString(data)
        else:  # a large graph in steps, so that no one decode holds the interpreter long (the window's thread runs)
            m.ParseFromString(split[0])
            for chunk in split[1]:
                m.graph.MergeFromString(chunk)
                time.sleep(0)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise ModelDecodeError(
            f"{source} is not a readable ONNX model ({e}): the file is truncated or not ONNX; "
            "re-export or re-download it."
        ) from None
    if m.ir_version <= 0 or not m.HasField("graph") or not m.opset_import:
        raise ModelDecodeError(
            f"{source} decodes as protobuf but is not an ONNX model (no IR version, graph or opset): "
            "the file is damaged or of another format."
        )
    return m


@functools.cache
def _text_fields(descriptor: Any) -> tuple[tuple[tuple[str, bool], ...], tuple[tuple[str, bool], ...]]:
    """(string fields, message fields) of a message type, each as (name, repeated)."""
    strings: list[tuple[str, bool]] = []
    messages: list[tuple[str, bool]] = []
    for f in descriptor.fields:
        repeated = bool(getattr(f, "is_repeated", None) if hasattr(f, "is_repeated") else f.label == f.LABEL_REPEATED)
        if f.type == f.TYPE_STRING:
            strings.append((f.name, repeated))
        elif f.type == f.TYPE_MESSAGE:
            messages.append((f.name, repeated))
    return tuple(strings), tuple(messages)


def _bad_text(msg: Any, path: str) -> str | None:
    """Where a message (or one nested in it) holds a string that is not valid UTF-8.

    protobuf hands such a string field back as ``bytes``; ONNX requires UTF-8. Nodes are
    skipped: :func:`splitscope.engine.onnxio.graph.build_graph` checks the strings it reads
    from every node anyway (a walk here costs a quarter of a second at 50k nodes).
    """
    if type(msg) is TensorProto:  # the many initializers, fast: a tensor's only strings
        return _bad_tensor_text(msg, path)
    strings, messages = _text_fields(msg.DESCRIPTOR)
    for name, repeated in strings:
        value = getattr(msg, name)
        if any(isinstance(v, bytes) for v in value) if repeated else isinstance(value, bytes):
            return f"{path}.{name}"
    for name, repeated in messages:
        if name == "node":
            continue
        if repeated:
            for k, sub in enumerate(getattr(msg, name)):
                where = _bad_text(sub, f"{path}.{name}[{k}]")
                if where:
                    return where
        elif msg.HasField(name):
            where = _bad_text(getattr(msg, name), f"{path}.{name}")
            if where:
                return where
    return None


def _bad_tensor_text(t: TensorProto, path: str) -> str | None:
    if type(t.name) is bytes or type(t.doc_string) is bytes:
        return f"{path}.name"
    for e in (*t.external_data, *t.metadata_props) if len(t.external_data) or len(t.metadata_props) else ():
        if type(e.key) is bytes or type(e.value) is bytes:
            return f"{path}.external_data"
    return None


def text_error(source: str, where: str) -> ModelDecodeError:
    """The error for a string that is not valid UTF-8 at ``where``."""
    return ModelDecodeError(
        f"{source} holds text that is not valid UTF-8, as ONNX requires (at {_safe(where)}): the file is "
        "damaged or was written by a broken exporter; re-export it."
    )


def _check_text(m: onnx.ModelProto, source: str) -> None:
    where = _bad_text(m, "model")
    if where is not None:
        raise text_error(source, where)


def _check_structure(m: onnx.ModelProto, source: str) -> None:
    g = m.graph
    if len(g.node) == 0:
        raise EmptyGraphError(f"{source} has no nodes: there is nothing to analyse; check the export.")
    produced = {o for n in g.node for o in n.output if o}
    produced.update(i.name for i in g.input)
    produced.update(t.name for t in g.initializer)
    produced.update(t.values.name for t in g.sparse_initializer if t.values.name)
    for out in g.output:
        if out.name not in produced:
            raise InvalidGraphError(
                f"Graph output '{out.name}' of {source} is produced by no node: the model is "
                "truncated or malformed; re-export it."
            )
    for idx, n in enumerate(g.node):
        for i in n.input:
            if i and i not in produced:
                raise InvalidGraphError(
                    f"Node '{n.name or '#' + str(idx)}' ({n.op_type}) reads '{i}', which no node, input or "
                    f"initializer of {source} provides: the model is truncated or malformed; re-export it."
                )


def load_model(path: str | os.PathLike[str]) -> LoadedModel:
    """Load an ONNX file's structure (never its weights) and validate it.

    Parameters
    ----------
    path
        The ``.onnx`` file. External-data files are looked up next to it.

    Raises
    ------
    ModelLoadError
        With a one-line message for a missing, empty, truncated or malformed file,
        missing external data, an unknown opset or an empty graph.
    """
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        st = None
    if st is None:
        raise ModelNotFoundError(f"No such file: {_safe(str(p), 300)}. Check the path and try again.")
    if stat.S_ISDIR(st.st_mode):
        raise ModelNotFoundError(
            f"{_safe(str(p), 300)} is a folder, not an .onnx file: choose the model file inside it."
        )
    if not stat.S_ISREG(st.st_mode):
        raise ModelNotFoundError(
            f"{_safe(str(p), 300)} is not a regular file (a pipe, socket or device): save the "
            "model to a file and open that."
        )
    size = st.st_size
    try:
        data = read_structure(p, SMALL_INITIALIZER_ELEMENTS)
    except WireError as e:
        raise ModelDecodeError(
            f"{p.name} is not a readable ONNX model ({e}): the file is truncated or not ONNX; "
            "re-export or re-download it."
        ) from None
    except OSError as e:
        raise ModelLoadError(f"Cannot read {p}: {e.strerror}. Check permissions and try again.") from None
    if len(data) >= _TWO_GB:
        raise ModelDecodeError(
            f"{p.name} holds over 2 GiB of graph structure, more than protobuf can decode: split it or "
            "save its constants as external data."
        )
    m = decode_model(data, p.name)
    del data
    return prepare_model(m, p, size)


def prepare_model(m: onnx.ModelProto, path: Path | None, file_bytes: int = 0) -> LoadedModel:
    """Validate a decoded model and strip its large weights (in place)."""
    source = path.name if path else "the model"
    _check_opsets(m)
    _check_text(m, source)
    _check_structure(m, source)
    _check_value_dims(m.graph, source)
    inits = Initializers()
    _strip_graph(m.graph, path.parent if path else None, inits, "")
    inits.names.compact()
    for f in m.functions:
        _strip_nodes(f.node, path.parent if path else None, f" in function {_safe(f.name)}")
    return LoadedModel(m, path, inits, file_bytes)
