"""FP16 / BF16 mixed precision the TensorRT 11 way: the reduced type lives in the ONNX model, with Cast nodes
at the borders of the part kept in FP32 (TensorRT 11 has no FP16/BF16 builder flags; a strongly typed
network runs each tensor in the type the model gives it).

What runs in the reduced type: every node of the default domain whose float inputs and outputs the ONNX
schema lets be FP16/BF16 (checked per input against the operator's type constraints at the model's opset:
``Resize``'s scales, for one, stay FP32), except

- the nodes the user keeps, and the op types of :data:`KEEP_OPS` (normalisations, reductions, ``Pow``,
  ``Exp``, ``Softmax``: the sums of squares and exponentials that overflow FP16's 65504 or lose too much
  of BF16's 8-bit mantissa), unless ``default_keep=False``;
- nodes whose output exceeded :data:`FP16_SAFE` on the calibration data (FP16 only: their values would
  overflow or sit too close to it for the sums that follow);
- (FP16) nodes reading a weight past FP16's 65504 (a BatchNormalization's running variance of 1e8 in
  PP-OCRv4's text detector): stored in FP16 it would be infinite, and ONNX Runtime's constant folding then
  zeroes the whole output map;
- (FP16) a 3-D Transpose moving the first axis before a MatMul: ONNX Runtime 1.30-1.32's CPU optimiser
  crashes on it in FP16 (:func:`_crashes_ort_cpu`); in FP32 between Casts it runs;
- control flow (``If``, ``Loop``, ``Scan``), ``Cast``, Q/DQ, constants and nodes of other domains, which
  stay as written.

Weights used only by reduced nodes are stored in the reduced type (half the bytes); a tensor crossing a
border gets one ``Cast`` named after it (``<tensor>_Cast_fp16`` making ``<tensor>_fp16``), so the graph view
shows what it converts. Graph inputs and outputs keep their FP32 type.

Accuracy is measured on an *emulation*: the FP32 model with every tensor of the reduced part rounded to the
reduced type (a Cast there and back), products and sums in FP32. ONNX Runtime's CPU provider has no FP16
kernels for most ops and none for BF16, so the written model itself is not what is run for accuracy.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LOW = {"fp16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}
LOW_TYPE_STR = {"fp16": "tensor(float16)", "bf16": "tensor(bfloat16)"}
KEEP_OPS = frozenset(
    {
        "LayerNormalization",
        "SimplifiedLayerNormalization",
        "SkipLayerNormalization",
        "RMSNormalization",
        "GroupNormalization",
        "InstanceNormalization",
        "LpNormalization",
        "MeanVarianceNormalization",
        "ReduceMean",
        "ReduceSum",
        "ReduceSumSquare",
        "ReduceL1",
        "ReduceL2",
        "ReduceLogSum",
        "ReduceLogSumExp",
        "ReduceProd",
        "CumSum",
        "Pow",
        "Exp",
        "Log",
        "Softmax",
        "LogSoftmax",
    }
)
NEUTRAL_OPS = frozenset(
    {
        "Cast",
        "CastLike",
        "Constant",
        "ConstantOfShape",
        "QuantizeLinear",
        "DequantizeLinear",
        "If",
        "Loop",
        "Scan",
        "Identity",
        "Shape",
        "Size",
    }
)
FOLLOWERS = frozenset({"Identity"})
"""Ops that take the type their readers want (an exporter's shared weights come through Identity)."""
FP16_SAFE = 16384.0
FP16_MAX = 65504.0
"""A quarter of FP16's largest value: an activation above it on the calibration data stays in FP32."""


@dataclass(slots=True)
class CastPlan:
    """Which nodes run in the reduced type, and which inputs of each are made reduced."""

    precision: str
    low: list[str] = field(default_factory=list)
    """Names of the nodes that run in the reduced type."""
    excluded: list[str] = field(default_factory=list)
    """Nodes that could run reduced but are kept in FP32 (by the user, by default, or by the data)."""
    reasons: dict[str, str] = field(default_factory=dict)
    low_inputs: dict[str, list[int]] = field(default_factory=dict)
    """Node name → the positions of its inputs made reduced."""
    followers: list[str] = field(default_factory=list)
    """Nodes of :data:`FOLLOWERS` made reduced because their readers are (no arithmetic of their own)."""
    low_outputs: dict[str, list[int]] = field(default_factory=dict)
    """Node name → the positions of its FP32 outputs that become reduced (never its bool or integer ones)."""

    def compute(self) -> list[str]:
        """The reduced nodes that do arithmetic (the ones worth a sensitivity run)."""
        skip = set(self.followers)
        return [n for n in self.low if n not in skip]


def _label(n: onnx.NodeProto) -> str:
    return n.name or (n.output[0] if n.output else n.op_type)


def infer_types(m: onnx.ModelProto) -> dict[str, int]:
    """Element type of every tensor ONNX's shape inference can type."""
    try:
        inferred = onnx.shape_inference.infer_shapes(m, check_type=False, strict_mode=False, data_prop=False)
    except Exception:  # noqa: BLE001 - inference failure only makes the plan more conservative
        inferred = m
    g = inferred.graph
    types = {
        v.name: v.type.tensor_type.elem_type
        for v in [*g.input, *g.value_info, *g.output]
        if v.type.HasField("tensor_type")
    }
    types.update({i.name: i.data_type for i in g.initializer})
    return types


def _allowed(
    schema: onnx.defs.OpSchema, formals: list[onnx.defs.OpSchema.FormalParameter], k: int, type_str: str
) -> tuple[str | None, bool]:
    """The type parameter of input/output ``k`` and whether it allows ``type_str``."""
    if not formals:
        return None, False
    f = formals[min(k, len(formals) - 1)]
    if k >= len(formals) and f.option != onnx.defs.OpSchema.FormalParameterOption.Variadic:
        return None, False
    cons = {c.type_param_str: c.allowed_type_strs for c in schema.type_constraints}
    if f.type_str in cons:
        return f.type_str, type_str in cons[f.type_str]
    return None, f.type_str == type_str


def plan(
    model: onnx.ModelProto,
    precision: str,
    keep: set[str] | None = None,
    default_keep: bool = True,
    absmax: dict[str, float] | None = None,
    types: dict[str, int] | None = None,
    only: set[str] | None = None,
    force: set[str] | None = None,
) -> CastPlan:
    """Which nodes of ``model`` run in ``precision`` (``fp16`` or ``bf16``); see the module docstring.
    ``only``: the candidates are these nodes alone (nodes pinned to FP16 in an INT8/FP8 model); ``force``:
    nodes the user pinned to the reduced type, kept neither by default nor by the data."""
    if precision not in LOW:
        raise ValueError(precision)
    low_str = LOW_TYPE_STR[precision]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13)
    types = types if types is not None else infer_types(model)
    p = CastPlan(precision)
    body_reads = _subgraph_reads(model.graph)
    why = _KeepRules(
        precision,
        keep or set(),
        force or set(),
        default_keep,
        {x for n in model.graph.node if n.op_type == "MatMul" for x in n.input},
        _weights_beyond_fp16(model.graph) if precision == "fp16" else {},
        absmax,
    )
    for n in model.graph.node:
        label = _label(n)
        if only is not None and label not in only:
            continue
        if not _may_reduce(n, body_reads, types):
            continue
        try:
            schema = onnx.defs.get_schema(n.op_type, opset, "")
        except onnx.defs.SchemaError:
            continue
        slots = _low_slots(n, schema, types, low_str)
        if slots is None:
            continue
        low_inputs, low_outputs = slots
        reason = why.reason(n, label, low_inputs)
        if reason:
            p.excluded.append(label)
            p.reasons[label] = reason
            continue
        p.low.append(label)
        p.low_inputs[label] = low_inputs
        p.low_outputs[label] = low_outputs
    if only is None:
        _followers(model.graph, p, types, body_reads)
    return p


def _may_reduce(n: onnx.NodeProto, body_reads: set[str], types: dict[str, int]) -> bool:
    """Whether ``n`` is a standard op that could run in the reduced type at all (not neutral, no body, not read by
    a body by name, every type known)."""
    if n.domain not in ("", "ai.onnx") or n.op_type in NEUTRAL_OPS:
        return False
    if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute):
        return False
    if any(o in body_reads for o in n.output):  # an If/Loop body reads it in FP32 by name
        return False
    # a type shape inference could not give (after a custom op): leave the node as written
    return not any(name and name not in types for name in (*n.input, *n.output))


def _low_slots(
    n: onnx.NodeProto, schema: onnx.defs.OpSchema, types: dict[str, int], low_str: str
) -> tuple[list[int], list[int]] | None:
    """The float inputs and outputs of ``n`` its schema lets run in ``low_str``, or None where the node cannot
    (no input can; an output's type parameter is not one the reduced inputs set; an input sharing a reduced
    parameter cannot be reduced)."""
    params_low: set[str] = set()
    low_inputs: list[int] = []
    for k, name in enumerate(n.input):
        if not name or types.get(name) != TensorProto.FLOAT:
            continue
        param, ok = _allowed(schema, list(schema.inputs), k, low_str)
        if ok:
            low_inputs.append(k)
            if param:
                params_low.add(param)
    if not low_inputs:
        return None
    low_outputs: list[int] = []
    for k, name in enumerate(n.output):
        if not name or types.get(name) != TensorProto.FLOAT:
            continue
        param, ok = _allowed(schema, list(schema.outputs), k, low_str)
        if not ok or param not in params_low:
            return None
        low_outputs.append(k)
    # Inputs that share a type parameter with a reduced one must be reduced too (or the node stays FP32).
    shared = {
        k
        for k, name in enumerate(n.input)
        if name
        and types.get(name) == TensorProto.FLOAT
        and _allowed(schema, list(schema.inputs), k, low_str)[0] in params_low
    }
    return (low_inputs, low_outputs) if shared <= set(low_inputs) else None


@dataclass(frozen=True)
class _KeepRules:
    """Why a node that could run in the reduced type stays in FP32: the user, the default keep list, ONNX
    Runtime's transpose bug, a weight or an output FP16 cannot hold."""

    precision: str
    keep: set[str]
    force: set[str]
    default_keep: bool
    reads_matmul: set[str]
    big_weights: dict[str, float]
    absmax: dict[str, float] | None

    def reason(self, n: onnx.NodeProto, label: str, low_inputs: list[int]) -> str | None:
        """Why ``n`` (``label``) stays in FP32; None where it is reduced."""
        if label in self.keep:
            return "kept by the user"
        if label in self.force:  # pinned to the reduced type: neither the default keep nor the data holds it
            return None
        if self.default_keep and n.op_type in KEEP_OPS:
            return f"{n.op_type} is kept in FP32 by default (it overflows or loses precision)"
        fp16 = self.precision == "fp16"
        if fp16 and ort_has_transpose_bug() and _crashes_ort_cpu(n, self.reads_matmul):
            return ORT_TRANSPOSE_REASON
        big = next((n.input[k] for k in low_inputs if n.input[k] in self.big_weights), None)
        if big is not None:
            return (
                f"its weight '{big}' reaches {self.big_weights[big]:.3g}, past FP16's 65504 "
                "(a BatchNormalization's running variance, say): stored in FP16 it would be infinite"
            )
        if fp16 and self.absmax:
            top = max((self.absmax.get(o, 0.0) for o in n.output), default=0.0)
            if top > FP16_SAFE:
                return f"its output reached {top:.3g} on the calibration data (FP16 tops out at 65504)"
        return None


def _weights_beyond_fp16(g: onnx.GraphProto) -> dict[str, float]:
    """Weights (initializers with their data, Constant nodes) whose largest magnitude FP16 cannot hold."""
    out: dict[str, float] = {}
    tensors = [(t.name, t) for t in g.initializer]
    for n in g.node:
        if n.op_type == "Constant" and n.output:
            value = next((a.t for a in n.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR), None)
            if value is not None:
                tensors.append((n.output[0], value))
    for name, t in tensors:
        if t.data_type not in (TensorProto.FLOAT, TensorProto.DOUBLE) or t.data_location == TensorProto.EXTERNAL:
            continue
        try:
            a = numpy_helper.to_array(t)
        except Exception:  # noqa: BLE001 - unreadable: left to the writer's own checks
            continue
        if a.size:
            top = float(np.max(np.abs(a)))
            if top > FP16_MAX:
                out[name] = top
    return out


ORT_TRANSPOSE_REASON = (
    "kept in FP32: ONNX Runtime 1.30-1.32's CPU optimiser crashes on an FP16 3-D Transpose "
    "moving the first axis before a MatMul (MatmulTransposeFusion, then NchwcTransformer)"
)


@functools.cache
def ort_has_transpose_bug() -> bool:
    """Whether the installed ONNX Runtime is one of the releases whose CPU optimiser crashes on the pattern of
    :func:`_crashes_ort_cpu` (1.30-1.32: seen on 1.32.0): elsewhere the Transpose runs in FP16 as planned."""
    from importlib import metadata

    for dist in ("onnxruntime", "onnxruntime-gpu"):
        try:
            major, minor = (int(x) for x in metadata.version(dist).split(".")[:2])
        except (metadata.PackageNotFoundError, ValueError):
            continue
        return (major, minor) in ((1, 30), (1, 31), (1, 32))
    return False


def _crashes_ort_cpu(n: onnx.NodeProto, reads_matmul: set[str]) -> bool:
    """A Transpose that ONNX Runtime's CPU provider (1.30-1.32, default optimisation level) segfaults on when
    it is FP16: rank 3, the first axis moved (``perm=[1, 0, 2]``: attention's sequence-first layout), its
    output read by a MatMul. The CPU provider has no FP16 MatMul, so it inserts a Cast; MatmulTransposeFusion
    swaps Transpose and Cast, and NchwcTransformer then reads a null pointer. The same Transpose in FP32
    (Casts around it) loads and runs."""
    if n.op_type != "Transpose" or not n.output or n.output[0] not in reads_matmul:
        return False
    perm = next((list(a.ints) for a in n.attribute if a.name == "perm"), None)
    return perm is not None and len(perm) == 3 and perm[0] != 0


def _subgraph_reads(g: onnx.GraphProto) -> set[str]:
    """Outer tensors the bodies of If/Loop/Scan nodes read by name (at any depth)."""
    out: set[str] = set()

    def walk(body: onnx.GraphProto) -> None:
        made = (
            {o for n in body.node for o in n.output} | {i.name for i in body.input} | {i.name for i in body.initializer}
        )
        for n in body.node:
            out.update(x for x in n.input if x and x not in made)
            for a in n.attribute:
                for sub in [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs):
                    walk(sub)

    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                walk(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    walk(sub)
    return out


def _followers(g: onnx.GraphProto, p: CastPlan, types: dict[str, int], body_reads: set[str]) -> None:
    """An Identity runs reduced when every reader of its output reads it in the reduced type."""
    readers: dict[str, list[tuple[str, int]]] = {}
    for n in g.node:
        for k, name in enumerate(n.input):
            readers.setdefault(name, []).append((_label(n), k))
    outputs = {o.name for o in g.output}
    low = set(p.low)
    for n in reversed(g.node):
        if n.op_type not in FOLLOWERS or not n.input or types.get(n.input[0]) != TensorProto.FLOAT:
            continue
        r = readers.get(n.output[0], [])
        if (
            r
            and n.output[0] not in outputs
            and n.output[0] not in body_reads
            and all(lbl in low and k in p.low_inputs[lbl] for lbl, k in r)
        ):
            label = _label(n)
            p.low.append(label)
            p.low_inputs[label] = [0]
            p.low_outputs[label] = [0]
            p.followers.append(label)
            low.add(label)


def _low_array(a: np.ndarray, precision: str) -> np.ndarray:
    """``a`` rounded to the reduced type, as float32 (for the emulation)."""
    if precision == "fp16":
        return np.clip(a, -65504, 65504).astype(np.float16).astype(np.float32)
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000  # round to nearest even
    return rounded.astype(np.uint32).view(np.float32)


def _low_initializer(t: onnx.TensorProto, precision: str) -> onnx.TensorProto:
    a = numpy_helper.to_array(t).astype(np.float32)
    if precision == "fp16":
        return numpy_helper.from_array(np.clip(a, -65504, 65504).astype(np.float16), t.name)
    bits = np.ascontiguousarray(a).view(np.uint32)
    hi = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    out = onnx.TensorProto()
    out.name, out.data_type = t.name, TensorProto.BFLOAT16
    out.dims.extend(a.shape)
    out.raw_data = hi.tobytes()
    return out


def _reduced_outputs(g: onnx.GraphProto, labels: list[str], cplan: CastPlan) -> set[str]:
    """The FP32 outputs of the plan's nodes that become reduced (``labels``: each node's label, taken before
    any renaming)."""
    low = set(cplan.low)
    return {
        n.output[k]
        for n, lbl in zip(g.node, labels, strict=True)
        if lbl in low
        for k in cplan.low_outputs.get(lbl, [])
        if k < len(n.output) and n.output[k]
    }


def _rename_outputs(g: onnx.GraphProto, names: set[str], suffix: str) -> dict[str, str]:
    """Graph outputs in ``names`` produced under ``<name>_<suffix>`` instead (producer and readers); inner → outer."""
    inner = {o.name: f"{o.name}_{suffix}" for o in g.output if o.name in names}
    for n in g.node:
        for j, x in enumerate(n.output):
            if x in inner:
                n.output[j] = inner[x]
        for i, x in enumerate(n.input):
            if x in inner:
                n.input[i] = inner[x]
    return {v: k for k, v in inner.items()}


def _store_low(g: onnx.GraphProto, inits: dict[str, TensorProto], names: list[str], precision: str) -> set[str]:
    """Store the FP32 weights among ``names`` (used only in the reduced type) in ``precision``; those stored."""
    stored: set[str] = set()
    graph_inputs = {i.name: i for i in g.input}
    for name in names:
        if name in inits and inits[name].data_type == TensorProto.FLOAT:
            inits[name].CopyFrom(_low_initializer(inits[name], precision))
            if name in graph_inputs:  # IR < 4 lists initializers as graph inputs: their type follows
                graph_inputs[name].type.tensor_type.elem_type = LOW[precision]
            stored.add(name)
    return stored


def apply(m: onnx.ModelProto, cplan: CastPlan) -> tuple[onnx.ModelProto, dict[str, int]]:
    """The model with the plan's nodes in the reduced type and Casts at the borders (``m`` is changed)."""
    precision, low_t = cplan.precision, LOW[cplan.precision]
    g = m.graph
    labels = [_label(n) for n in g.node]  # before any output is renamed
    low_nodes = set(cplan.low)
    inits = {i.name: i for i in g.initializer}
    finals = _rename_outputs(g, _reduced_outputs(g, labels, cplan), precision)  # graph outputs keep FP32
    low_out = _reduced_outputs(g, labels, cplan)
    wants_low: dict[str, None] = {}
    wants_f32: dict[str, None] = dict.fromkeys(finals)
    read_f32: set[str] = set(_subgraph_reads(g))
    for n, lbl in zip(g.node, labels, strict=True):
        lows = set(cplan.low_inputs.get(lbl, [])) if lbl in low_nodes else set()
        for k, name in enumerate(n.input):
            if name and k in lows:
                wants_low.setdefault(name)
            elif name in low_out:
                wants_f32.setdefault(name)
            elif name:
                read_f32.add(name)
    stored_low = _store_low(g, inits, [n for n in wants_low if n not in read_f32], precision)
    converted = len(stored_low)
    position = {o: k for k, n in enumerate(g.node) for o in n.output}
    casts: list[tuple[int, onnx.NodeProto]] = []
    to_low: dict[str, str] = {}
    to_f32: dict[str, str] = {}
    for name in wants_low:
        if name not in stored_low and name not in low_out:
            to_low[name] = f"{name}_{precision}"
            casts.append(
                (
                    position.get(name, -1),
                    helper.make_node("Cast", [name], [to_low[name]], name=f"{name}_Cast_{precision}", to=low_t),
                )
            )
    for name in wants_f32:
        to_f32[name] = finals.get(name, f"{name}_fp32")
        casts.append(
            (
                position.get(name, -1),
                helper.make_node(
                    "Cast",
                    [name],
                    [to_f32[name]],
                    name=f"{to_f32[name]}_Cast_fp32" if name in finals else f"{name}_Cast_fp32",
                    to=TensorProto.FLOAT,
                ),
            )
        )
    for n, lbl in zip(g.node, labels, strict=True):
        lows = set(cplan.low_inputs.get(lbl, [])) if lbl in low_nodes else set()
        for k, name in enumerate(n.input):
            if k in lows and name in to_low:
                n.input[k] = to_low[name]
            elif k not in lows and name in to_f32:
                n.input[k] = to_f32[name]
    _insert(g, casts)
    del g.value_info[:]  # types changed; TensorRT and ONNX Runtime infer them again
    return m, {"nodes": len(low_nodes), "casts": len(casts), "weights": converted}


def _insert(g: onnx.GraphProto, casts: list[tuple[int, onnx.NodeProto]]) -> None:
    after: dict[int, list[onnx.NodeProto]] = {}
    for pos, c in casts:
        after.setdefault(pos, []).append(c)
    merged = list(after.pop(-1, []))
    for k, n in enumerate(g.node):
        merged.append(n)
        merged.extend(after.pop(k, []))
    del g.node[:]
    g.node.extend(merged)
