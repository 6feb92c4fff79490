"""Read an ONNX file's structure without its weights, and check it is sound.

Analysis needs structure, types and shapes only. Weights are never read: the
file is mapped and large initializers' bytes skipped at the wire level
(:mod:`splitscope.engine.onnxio.wire`), large initializers become typed graph inputs before shape
inference, and external-data files are only checked to exist and be long enough. Every failure
raises a typed :class:`splitscope.engine.errors.ModelLoadError` with a one-line message.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

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
from splitscope.engine.model import DTYPE_SIZES, Initializer
from splitscope.engine.onnxio.wire import WireError, read_structure

# Initializers at most this many elements keep their values: shape vectors,
# axes, zero points and scalars that static checks and shape inference read.
SMALL_INITIALIZER_ELEMENTS = 1024

_TWO_GB = 2**31


def dtype_name(elem_type: int) -> str | None:
    """ONNX element type number to its name (``FLOAT``, ``INT64`` ...), None if unset."""
    if elem_type == 0:
        return None
    try:
        return TensorProto.DataType.Name(elem_type)
    except ValueError:
        return f"TYPE{elem_type}"


@dataclass(slots=True)
class LoadedModel:
    """A model proto with large weights stripped, and what was learnt loading it."""

    proto: onnx.ModelProto
    path: Path | None
    initializers: dict[str, Initializer]
    """Main-graph initializers (shape and size only)."""
    file_bytes: int
    warnings: list[str] = field(default_factory=list)


def _external_location(t: TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in t.external_data}


def _check_external(t: TensorProto, base: Path | None, where: str) -> None:
    info = _external_location(t)
    loc = info.get("location", "")
    if base is None:
        raise ExternalDataError(
            f"Initializer '{t.name}' keeps its weights in external file '{loc}', but the model was "
            "given as bytes without a folder: open it from its file instead.")
    target = (base / loc).resolve()
    if not loc or os.path.isabs(loc) or (base.resolve() not in target.parents and target != base.resolve()):
        raise ExternalDataError(
            f"Initializer '{t.name}'{where} names external file '{loc}' outside the model's folder; "
            "re-save the model with its weights next to it (onnx.save(..., save_as_external_data=True)).")
    if not target.is_file():
        raise ExternalDataError(
            f"Weights file '{loc}' (initializer '{t.name}'{where}) is missing from {base}: copy it next "
            "to the model, or re-export the model with its weights.")
    size = target.stat().st_size
    offset = int(info.get("offset", "0") or 0)
    length = info.get("length")
    need = offset + (int(length) if length else 0)
    if need > size:
        raise ExternalDataError(
            f"Weights file '{loc}' is {size} bytes but initializer '{t.name}'{where} needs bytes up to "
            f"{need}: the file is truncated; copy it again.")


def _numel(dims: list[int] | tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _strip_graph(g: onnx.GraphProto, base: Path | None, record: dict[str, Initializer] | None,
                 where: str) -> None:
    """Check external data and replace large initializers of ``g`` (and nested graphs) by inputs."""
    keep: list[TensorProto] = []
    as_inputs: list[onnx.ValueInfoProto] = []
    for t in g.initializer:
        external = t.data_location == TensorProto.EXTERNAL
        if external:
            _check_external(t, base, where)
        n = _numel(t.dims)
        dt = dtype_name(t.data_type) or "FLOAT"
        if record is not None:
            record[t.name] = Initializer(t.name, dt, tuple(t.dims), int(n * DTYPE_SIZES.get(dt, 4)), external)
        if external or n > SMALL_INITIALIZER_ELEMENTS:
            as_inputs.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
        else:
            keep.append(t)
    if as_inputs:
        del g.initializer[:]
        g.initializer.extend(keep)
        known = {i.name for i in g.input}
        g.input.extend(v for v in as_inputs if v.name not in known)
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                _strip_graph(a.g, base, None, f" in {node.name or node.op_type}/{a.name}")
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    _strip_graph(sub, base, None, f" in {node.name or node.op_type}/{a.name}")
            elif a.type == onnx.AttributeProto.TENSOR and a.t.data_location == TensorProto.EXTERNAL:
                _check_external(a.t, base, f" (Constant {node.name})")


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
                "or upgrade the onnx package.")
    if m.ir_version > onnx.IR_VERSION:
        raise UnsupportedOpsetError(
            f"The model has IR version {m.ir_version}, newer than this onnx {onnx.__version__} reads "
            f"(up to {onnx.IR_VERSION}): upgrade the onnx package or re-export with an older IR.")


def decode_model(data: bytes, source: str) -> onnx.ModelProto:
    """Decode bytes as a ModelProto, raising :class:`ModelDecodeError` on anything but a model."""
    if not data:
        raise ModelDecodeError(f"{source} is empty (0 bytes): re-export or copy the model again.")
    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise ModelDecodeError(
            f"{source} is not a readable ONNX model ({e}): the file is truncated or not ONNX; "
            "re-export or re-download it.") from None
    if m.ir_version <= 0 or not m.HasField("graph") or not m.opset_import:
        raise ModelDecodeError(
            f"{source} decodes as protobuf but is not an ONNX model (no IR version, graph or opset): "
            "the file is damaged or of another format.")
    return m


def _check_structure(m: onnx.ModelProto, source: str) -> None:
    g = m.graph
    if len(g.node) == 0:
        raise EmptyGraphError(f"{source} has no nodes: there is nothing to analyse; check the export.")
    produced = {o for n in g.node for o in n.output if o}
    produced.update(i.name for i in g.input)
    produced.update(t.name for t in g.initializer)
    produced.update(t.name for t in g.sparse_initializer if t.values.name)
    for out in g.output:
        if out.name not in produced:
            raise InvalidGraphError(
                f"Graph output '{out.name}' of {source} is produced by no node: the model is "
                "truncated or malformed; re-export it.")
    for idx, n in enumerate(g.node):
        for i in n.input:
            if i and i not in produced:
                raise InvalidGraphError(
                    f"Node '{n.name or '#' + str(idx)}' ({n.op_type}) reads '{i}', which no node, input or "
                    f"initializer of {source} provides: the model is truncated or malformed; re-export it.")


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
    if not p.exists():
        raise ModelNotFoundError(f"No such file: {p}. Check the path and try again.")
    if not p.is_file():
        raise ModelNotFoundError(f"{p} is a folder, not an .onnx file: choose the model file inside it.")
    size = p.stat().st_size
    try:
        data = read_structure(p, SMALL_INITIALIZER_ELEMENTS)
    except WireError as e:
        raise ModelDecodeError(
            f"{p.name} is not a readable ONNX model ({e}): the file is truncated or not ONNX; "
            "re-export or re-download it.") from None
    except OSError as e:
        raise ModelLoadError(f"Cannot read {p}: {e.strerror}. Check permissions and try again.") from None
    if len(data) >= _TWO_GB:
        raise ModelDecodeError(
            f"{p.name} holds over 2 GiB of graph structure, more than protobuf can decode: split it or "
            "save its constants as external data.")
    m = decode_model(data, p.name)
    del data
    return prepare_model(m, p, size)


def prepare_model(m: onnx.ModelProto, path: Path | None, file_bytes: int = 0) -> LoadedModel:
    """Validate a decoded model and strip its large weights (in place)."""
    source = path.name if path else "the model"
    _check_opsets(m)
    _check_structure(m, source)
    inits: dict[str, Initializer] = {}
    _strip_graph(m.graph, path.parent if path else None, inits, "")
    for f in m.functions:
        for n in f.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    _strip_graph(a.g, path.parent if path else None, None, f" in function {f.name}")
    return LoadedModel(m, path, inits, file_bytes)
