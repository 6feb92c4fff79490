"""Is a node well formed ONNX? Checked against the op's schema, before anything trusts it.

A node that breaks its schema (an attribute of the wrong type, too many inputs,
a Loop body without its iteration inputs, a TopK whose K is not one value)
is not a TensorRT question: ONNX itself rejects it, and the real parser has been
seen to crash its process on some of them. Such a node is shown as needing work,
with the defect as the reason, and it is cut from the model before the parser
is asked about the rest.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import onnx
from onnx import AttributeProto, TensorProto
from splitscope.engine.model import Graph, Node, Tensor

_STANDARD = {"": "", "ai.onnx": "", "ai.onnx.ml": "ai.onnx.ml"}
_DTYPE_ATTRS = ("to", "dtype", "output_dtype")
_ATTR_NAMES = {v: k for k, v in AttributeProto.AttributeType.items()}
_STRUCTURAL = frozenset({"Loop", "If", "TopK"})


@functools.lru_cache(maxsize=8192)
def _schema(op: str, domain: str, version: int) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(op, version, domain)
    except onnx.defs.SchemaError:
        return None


@functools.lru_cache(maxsize=8192)
def _spec(op: str, domain: str, version: int) -> tuple[int, int, int, dict[str, int], tuple[str, ...]] | None:
    """(since_version, min_input, min_output, attribute types, required attributes) of an op's schema.

    Cached: the schema's ``attributes`` are rebuilt by the binding at every access.
    """
    schema = _schema(op, domain, version)
    if schema is None:
        return None
    attrs = schema.attributes
    types = {name: int(a.type) for name, a in attrs.items()}  # pyright: ignore[reportArgumentType] - pybind enums
    return (
        schema.since_version,
        schema.min_input,
        schema.min_output,
        types,
        tuple(n for n, a in attrs.items() if a.required),
    )


def _valid_dtype(v: int, optional: bool) -> bool:
    """An element type number ONNX defines; 0 (unset) only where the attribute is optional (``output_dtype``
    and ``dtype`` default to 0, meaning "from the inputs"; Cast's ``to`` has no default)."""
    if v == 0:
        return optional
    if v < 0:
        return False
    try:
        TensorProto.DataType.Name(v)
    except ValueError:
        return False
    return True


def node_defect(
    pn: onnx.NodeProto,
    opsets: Mapping[str, int],
    tensors: Mapping[str, Tensor] | None = None,
    constants: Mapping[str, list[object]] | None = None,
    attributes: list[onnx.AttributeProto] | None = None,
    node: Node | None = None,
) -> str:
    """What makes ``pn`` malformed ONNX, or '' when nothing is found.

    ``opsets`` maps domains (``ai.onnx`` for the default) to the imported version;
    ``tensors`` and ``constants``, when given, let input shapes and values be checked; ``attributes``:
    the node's attributes, and ``node`` its graph-model node, when the caller already read them (each
    protobuf field access costs; this runs for every node of every model).
    """
    op_type, raw_domain = (node.op_type, node.domain) if node is not None else (pn.op_type, pn.domain)
    domain = _STANDARD.get(raw_domain)
    if domain is None:
        return ""  # custom domain: no schema to hold it to
    version = opsets.get(domain or "ai.onnx", opsets.get("", 0)) if domain == "" else opsets.get(domain, 0)
    if version <= 0:
        return ""
    spec = _spec(op_type, domain, version)
    if spec is None:
        # Not in the schema at this opset: either unknown (the table decides), or an op used below the opset
        # that defines it (ONNX Runtime's optimizer writes LayerNormalization at opset 14, and TensorRT imports
        # it): not malformed enough to keep from the parser.
        return ""
    since, min_input, min_output, types, required = spec
    # Too few inputs or outputs only: extra ones (ReduceMean-13 given its opset-18 axes input) are
    # common in exports and TensorRT's importers read them by position (pinned by the agreement test).
    n_in, n_out = (len(node.inputs), len(node.outputs)) if node is not None else (len(pn.input), len(pn.output))
    if n_in < min_input:
        return f"it has {n_in} input{'s' if n_in != 1 else ''}; {op_type}-{since} needs at least {min_input}"
    if n_out < min_output:
        return f"it has {n_out} output{'s' if n_out != 1 else ''}; {op_type}-{since} gives at least {min_output}"
    given = set()
    for a in pn.attribute if attributes is None else attributes:
        name = a.name
        given.add(name)
        want = types.get(name)
        if want is None:
            continue
        kind = a.type
        if kind != want and not a.ref_attr_name:
            return (
                f"attribute '{name}' is {_ATTR_NAMES.get(kind, kind)}, but {op_type} requires "
                f"{_ATTR_NAMES.get(want, want)}"
            )
        if (
            kind == AttributeProto.INT
            and name in _DTYPE_ATTRS
            and not a.ref_attr_name
            and not _valid_dtype(a.i, optional=name != "to")
        ):
            return f"attribute '{name}' = {a.i} is not an ONNX element type"
    for name in required:
        if name not in given:
            return f"required attribute '{name}' is missing"
    return _structural(pn, tensors, constants) if op_type in _STRUCTURAL else ""


def _structural(
    pn: onnx.NodeProto, tensors: Mapping[str, Tensor] | None, constants: Mapping[str, list[object]] | None
) -> str:
    op = pn.op_type
    if op not in _STRUCTURAL:
        return ""
    if op == "Loop":
        body = next((a.g for a in pn.attribute if a.name == "body" and a.type == AttributeProto.GRAPH), None)
        if body is not None and (len(body.input) < 2 or len(body.output) < 1):
            return (
                f"its body has {len(body.input)} inputs and {len(body.output)} outputs; a Loop body takes the "
                "iteration number and the condition first and returns the condition"
            )
        if body is not None and len(body.input) - 2 != len(pn.input) - 2:
            return (
                f"its body carries {len(body.input) - 2} loop values, but the node passes {max(len(pn.input) - 2, 0)}"
            )
    elif op == "If":
        branches = {a.name: a.g for a in pn.attribute if a.type == AttributeProto.GRAPH}
        counts = {k: len(g.output) for k, g in branches.items()}
        if len(set(counts.values())) > 1 or any(c != len(pn.output) for c in counts.values()):
            return (
                f"its branches return {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))} values, "
                f"but the node has {len(pn.output)} outputs"
            )
    elif op == "TopK" and len(pn.input) > 1 and tensors is not None:
        return topk_k_defect(pn.input[1], tensors, constants)
    return ""


def topk_k_defect(k: str, tensors: Mapping[str, Tensor], constants: Mapping[str, list[object]] | None) -> str:
    """TopK's K must be one value (shape [1], or a scalar) and not negative.

    Checked when the graph is built and again once shapes are inferred (a K computed at run time
    has a shape only then); a K of shape [0] or [1, 2] crashed the TensorRT-RTX 1.7 parser process.
    """
    t = tensors.get(k)
    if t is not None and t.shape is not None and all(isinstance(d, int) for d in t.shape):
        numel = 1
        for d in t.shape:
            numel *= int(d)  # type: ignore[arg-type]
        if len(t.shape) > 1 or numel != 1:
            return f"K has shape {list(t.shape)}; TopK takes K as one value (shape [1])"
    values = constants.get(k) if constants is not None else None
    if values is not None and len(values) == 1 and isinstance(values[0], int) and values[0] < 0:
        return f"K = {values[0]} is negative"
    return ""


def shape_defects(graph: Graph) -> None:
    """After shape inference: the checks that need shapes, on nodes that had no defect yet, in the graph and
    in every body (each against its own tensors)."""
    for g, node in graph.walk():
        if node.op_type == "TopK" and not node.defect and len(node.inputs) > 1 and node.domain in ("", "ai.onnx"):
            node.defect = topk_k_defect(node.inputs[1], g.tensors, g.constants)
