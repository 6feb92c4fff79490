"""Write the quantized model as TensorRT 11 wants it: Q/DQ pairs in the ONNX (it has no calibrator and no
precision flags any more).

Placement (TensorRT fuses a DequantizeLinear into the op that consumes it, and a QuantizeLinear into the op
that produces its input, so Q/DQ belong on the *inputs* of the ops that have quantized kernels):

- ``Conv``, ``ConvTranspose``, ``Gemm``, ``MatMul``: every activation input (both inputs of an attention
  ``MatMul``) gets a per-tensor, symmetric Q/DQ (zero point 0), and the weight (an initializer) a per-channel
  symmetric Q/DQ on its output-channel axis (axis 0 for Conv and for Gemm with ``transB``, 1 for
  ConvTranspose, MatMul and Gemm without it);
- ``Add`` whose other input comes from a quantized op (a residual): the residual input, so TensorRT can fuse
  the add into the convolution in INT8;
- ``MaxPool``, ``AveragePool``, ``GlobalAveragePool``: their input, so pooling runs in INT8.

Nodes the user keeps in higher precision get no Q/DQ. Each QuantizeLinear and DequantizeLinear is named
after the tensor it wraps (``<tensor>_QuantizeLinear``), so the graph view shows what it quantizes.
FP8 (E4M3) uses the same placement with float8e4m3fn zero points (opset 19 or newer), for Hopper and newer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from splitscope.engine.calib.methods import QMAX
from splitscope.engine.onnxio.writer import ModelWriter

QUANTIZED_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul"}
POOLS = {"MaxPool", "AveragePool", "GlobalAveragePool"}


@dataclass(slots=True)
class QdqPlan:
    """Which tensors get Q/DQ: activation tensors (per-tensor) and weights (per-channel, with their axis)."""

    activations: list[str] = field(default_factory=list)
    weights: dict[str, int] = field(default_factory=dict)
    excluded: list[str] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)
    """Names of the nodes quantized."""


def plan(model: onnx.ModelProto, keep: set[str] | None = None) -> QdqPlan:
    """Where Q/DQ go in ``model`` (see the module docstring); ``keep``: node names left in float."""
    keep = keep or set()
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    p = QdqPlan()
    acts: dict[str, None] = {}
    quantized_outputs: set[str] = set()
    for n in g.node:
        label = n.name or n.output[0]
        if n.op_type in QUANTIZED_OPS | POOLS and label in keep:
            p.excluded.append(label)
            continue
        if n.op_type in QUANTIZED_OPS and any(
            i in producer and producer[i].op_type == "DequantizeLinear" for i in n.input[:2]
        ):
            continue  # quantized already (a Q/DQ export): never a second pair on top of the first
        if n.op_type in QUANTIZED_OPS:
            p.nodes.append(label)
            quantized_outputs.update(n.output)
            data_inputs = n.input[:2]  # data and weight; a Conv bias stays in float
            for k, name in enumerate(data_inputs):
                if not name:
                    continue
                if name in inits:
                    if k == 1 and len(inits[name].dims) >= 2:
                        p.weights[name] = _weight_axis(n)
                else:
                    acts.setdefault(name)
        elif n.op_type in POOLS and n.input and n.input[0] not in inits:
            p.nodes.append(label)
            acts.setdefault(n.input[0])
    for n in g.node:
        if n.op_type == "Add" and len(n.input) == 2 and (n.name or n.output[0]) not in keep:
            a, b = n.input
            if a in quantized_outputs and b not in inits and b in producer:
                acts.setdefault(b)
            elif b in quantized_outputs and a not in inits and a in producer:
                acts.setdefault(a)
    p.activations = list(acts)
    return p


def _weight_axis(n: onnx.NodeProto) -> int:
    if n.op_type == "Conv":
        return 0
    if n.op_type == "ConvTranspose":
        return 1
    if n.op_type == "Gemm":
        trans_b = next((a.i for a in n.attribute if a.name == "transB"), 0)
        return 0 if trans_b else 1
    return 1  # MatMul: weight [K, N], channels on N


def write(
    model: onnx.ModelProto | str | os.PathLike[str],
    writer: ModelWriter,
    amax: dict[str, float],
    qplan: QdqPlan,
    precision: str = "int8",
) -> dict[str, int]:
    """Stage ``model`` (a model with its weights loaded, or its path) with Q/DQ per ``qplan`` and the activation
    ranges ``amax`` in ``writer`` (a model with external data keeps it external). Returns counts."""
    m = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))
    m, counts = apply(m, amax, qplan, precision)
    writer.save(m)
    return counts


def apply(
    m: onnx.ModelProto, amax: dict[str, float], qplan: QdqPlan, precision: str = "int8"
) -> tuple[onnx.ModelProto, dict[str, int]]:
    """The model with Q/DQ inserted (``m`` is changed and returned, or a converted copy for FP8), and counts."""
    qmax = QMAX[precision]
    zp_type = TensorProto.INT8 if precision == "int8" else TensorProto.FLOAT8E4M3FN
    m = _at_least(m, 19 if precision == "fp8" else 13)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    new_nodes: list[onnx.NodeProto] = []
    new_inits: list[onnx.TensorProto] = []
    rename: dict[str, str] = {}
    done_acts = done_w = 0
    for name in qplan.activations:
        a = amax.get(name, 0.0)
        if not a or not np.isfinite(a):
            continue
        scale = np.float32(a / qmax)
        dq = _qdq(
            name,
            numpy_helper.from_array(np.array(scale, dtype=np.float32), f"{name}_scale"),
            helper.make_tensor(f"{name}_zero_point", zp_type, [], [0]),
            None,
            new_nodes,
            new_inits,
        )
        rename[name] = dq
        done_acts += 1
    for name, axis in qplan.weights.items():
        w = numpy_helper.to_array(inits[name]).astype(np.float32)
        red = tuple(d for d in range(w.ndim) if d != axis)
        per = np.max(np.abs(w), axis=red)
        scale = np.where(per > 0, per / qmax, 1.0).astype(np.float32)
        zp = helper.make_tensor(f"{name}_zero_point", zp_type, [scale.size], [0] * scale.size)
        dq = _qdq(name, numpy_helper.from_array(scale, f"{name}_scale"), zp, axis, new_nodes, new_inits)
        rename[name] = dq
        done_w += 1
    quantized = set(qplan.nodes)
    for n in g.node:
        label = n.name or n.output[0]
        if label in quantized or (n.op_type == "Add" and label not in qplan.excluded):
            for k, i in enumerate(n.input):
                if i in rename and (label in quantized or i in qplan.activations):
                    n.input[k] = rename[i]
    # Q/DQ right after their producers (ONNX wants nodes in topological order): put them first is wrong for
    # activations, so insert each pair before its first consumer.
    order = list(g.node)
    first_use: dict[str, int] = {}
    for k, n in enumerate(order):
        for i in n.input:
            first_use.setdefault(i, k)
    pairs: dict[int, list[onnx.NodeProto]] = {}
    for qn in new_nodes:
        if qn.op_type == "QuantizeLinear":
            dq_name = qn.output[0].replace("_quantized", "_dequantized")
            pos = first_use.get(dq_name, len(order))
            pairs.setdefault(pos, []).append(qn)
        else:
            pos = first_use.get(qn.output[0], len(order))
            pairs.setdefault(pos, []).append(qn)
    merged: list[onnx.NodeProto] = []
    for k, n in enumerate(order):
        merged.extend(pairs.pop(k, []))
        merged.append(n)
    for rest in pairs.values():
        merged.extend(rest)
    del g.node[:]
    g.node.extend(merged)
    g.initializer.extend(new_inits)
    return m, {
        "activations": done_acts,
        "weights": done_w,
        "weights_per_channel": done_w,
        "weights_per_tensor": 0,
        "nodes": len(qplan.nodes),
    }


def _qdq(
    name: str,
    scale: onnx.TensorProto,
    zp: onnx.TensorProto,
    axis: int | None,
    nodes: list[onnx.NodeProto],
    inits: list[onnx.TensorProto],
) -> str:
    kw: dict[str, Any] = {} if axis is None else {"axis": axis}
    q_out, dq_out = f"{name}_quantized", f"{name}_dequantized"
    nodes.append(
        helper.make_node("QuantizeLinear", [name, scale.name, zp.name], [q_out], name=f"{name}_QuantizeLinear", **kw)
    )
    nodes.append(
        helper.make_node(
            "DequantizeLinear", [q_out, scale.name, zp.name], [dq_out], name=f"{name}_DequantizeLinear", **kw
        )
    )
    inits.extend([scale, zp])
    return dq_out


def _at_least(m: onnx.ModelProto, version: int) -> onnx.ModelProto:
    """The model at ``version`` of the default opset or newer: converted by onnx's version converter (ops whose
    attributes became inputs, such as ReduceMean's axes at 18, are rewritten), not just relabelled."""
    current = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 0)
    if current >= version:
        return m
    from onnx import version_converter

    try:
        return version_converter.convert_version(m, version)
    except Exception as e:  # noqa: BLE001 - the converter raises plain RuntimeError/ValueError for unsupported ops
        from splitscope.engine.errors import SplitscopeError

        raise SplitscopeError(
            f"The model is at opset {current}; FP8 Q/DQ needs opset {version} and onnx's "
            f"converter failed ({str(e).splitlines()[0][:150]}): re-export at opset {version}."
        ) from None
