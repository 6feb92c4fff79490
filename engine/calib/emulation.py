"""The reduced part of a cast plan emulated in FP32, for accuracy where a provider has no FP16/BF16 kernels:
every tensor of the reduced part rounded to the reduced type (a Cast there and back), products and sums in FP32,
and the one kernel known to round twice rounded twice (:func:`emulate`)."""

from __future__ import annotations

import copy

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from splitscope.engine.calib.casts import (
    LOW,
    CastPlan,
    _insert,
    _label,
    _low_array,
    _reduced_outputs,
    _rename_outputs,
)


def emulate(m: onnx.ModelProto, cplan: CastPlan, dims: dict[str, int] | None = None) -> onnx.ModelProto:
    """An FP32 copy of ``m`` with every tensor of the reduced part rounded to the reduced type (for accuracy
    on ONNX Runtime's CPU provider, which has no FP16/BF16 kernels for most ops).

    One kernel rounds twice, and the emulation follows it: ONNX Runtime CUDA's reduced ``Gemm`` with a bias
    and a one-row ``A`` (a classifier at batch 1) writes the product in the reduced type, then adds the bias
    and rounds again (measured on an H200: BENCHMARKS.md). ``dims`` gives the rows of ``A`` at the run's
    sizes."""
    m = copy.deepcopy(m)
    g = m.graph
    labels = [_label(n) for n in g.node]
    low_nodes = set(cplan.low)
    inits = {i.name: i for i in g.initializer}
    round_t = LOW[cplan.precision]
    finals = _rename_outputs(g, _reduced_outputs(g, labels, cplan), "unrounded")
    low_out = _reduced_outputs(g, labels, cplan)
    position = {o: k for k, n in enumerate(g.node) for o in n.output}
    rounded: dict[str, str] = {}
    casts: list[tuple[int, onnx.NodeProto]] = []
    old_ir = m.ir_version < 4

    def rounder(name: str, out: str | None = None) -> str:
        if name not in rounded:
            r = out or f"{name}_rounded"
            if name in inits:
                arr = _low_array(numpy_helper.to_array(inits[name]).astype(np.float32), cplan.precision)
                g.initializer.append(numpy_helper.from_array(arr, r))
                if old_ir:  # IR < 4: every initializer is also a graph input
                    g.input.append(helper.make_tensor_value_info(r, TensorProto.FLOAT, list(arr.shape)))
            else:
                pos = position.get(name, -1)
                casts.append(
                    (
                        pos,
                        helper.make_node(
                            "Cast", [name], [f"{name}_rounded_low"], name=f"{name}_round_down", to=round_t
                        ),
                    )
                )
                casts.append(
                    (
                        pos,
                        helper.make_node(
                            "Cast", [f"{name}_rounded_low"], [r], name=f"{name}_round_up", to=TensorProto.FLOAT
                        ),
                    )
                )
            rounded[name] = r
        return rounded[name]

    for name in low_out:
        rounder(name, finals.get(name))
    for n, lbl in zip(g.node, labels, strict=True):
        lows = set(cplan.low_inputs.get(lbl, [])) if lbl in low_nodes else set()
        for k, name in enumerate(n.input):
            if name in low_out or (k in lows and name):
                n.input[k] = rounder(name)
    biased = {
        n.output[0]
        for n, lbl in zip(g.node, labels, strict=True)
        if lbl in low_nodes
        and n.op_type == "Gemm"
        and len(n.input) > 2
        and n.input[2]
        and next((a.f for a in n.attribute if a.name == "beta"), 1.0) == 1.0
    }
    _insert(g, casts)
    del g.value_info[:]
    _round_product_before_bias(m, cplan, biased, dims)
    return m


def _gemm_rows(m: onnx.ModelProto, dims: dict[str, int] | None) -> dict[int, int]:
    """Rows of ``A`` of each Gemm (by node position) once the inputs' named dims are fixed (a dim not given is 1,
    as the accuracy run's feeds take it); 0 when unknown."""
    fixed = copy.deepcopy(m)
    for i in fixed.graph.input:
        for d in i.type.tensor_type.shape.dim:
            if d.HasField("dim_param") or not d.HasField("dim_value"):
                d.dim_value = int((dims or {}).get(d.dim_param, 1))
    try:
        inferred = onnx.shape_inference.infer_shapes(fixed, check_type=False, strict_mode=False)
    except Exception:  # noqa: BLE001 - no shapes: no Gemm is treated as one-row
        return {}
    g = inferred.graph
    shapes = {
        v.name: [d.dim_value if d.HasField("dim_value") else 0 for d in v.type.tensor_type.shape.dim]
        for v in [*g.input, *g.value_info, *g.output]
        if v.type.HasField("tensor_type")
    }
    shapes.update({i.name: list(i.dims) for i in g.initializer})
    rows: dict[int, int] = {}
    for k, n in enumerate(g.node):
        if n.op_type == "Gemm" and n.input:
            trans_a = next((a.i for a in n.attribute if a.name == "transA"), 0)
            a = shapes.get(n.input[0], [])
            rows[k] = (a[1] if trans_a else a[0]) if len(a) == 2 else 0
    return rows


def _round_product_before_bias(
    m: onnx.ModelProto, cplan: CastPlan, gemm_outputs: set[str], dims: dict[str, int] | None
) -> None:
    """Reduced one-row Gemms with a bias (named by their outputs): the product rounded, then the bias added
    (and that sum rounded as every reduced output is)."""
    g = m.graph
    if not gemm_outputs:
        return
    rows = _gemm_rows(m, dims)
    one_row = {g.node[k].output[0] for k, r in rows.items() if r == 1} & gemm_outputs
    if not one_row:
        return
    round_t = LOW[cplan.precision]
    zero = "splitscope_zero_bias"
    g.initializer.append(numpy_helper.from_array(np.zeros([1], np.float32), zero))
    if m.ir_version < 4:  # IR < 4: every initializer is also a graph input
        g.input.append(helper.make_tensor_value_info(zero, TensorProto.FLOAT, [1]))
    merged: list[onnx.NodeProto] = []
    for n in g.node:
        if n.op_type != "Gemm" or n.output[0] not in one_row:
            merged.append(n)
            continue
        y, bias = n.output[0], n.input[2]
        product = copy.deepcopy(n)
        product.input[2] = zero  # C stays (required before opset 11), zero: the bias is added after the rounding
        product.output[0] = f"{y}_product"
        merged += [
            product,
            helper.make_node(
                "Cast", [f"{y}_product"], [f"{y}_product_low"], name=f"{y}_product_round_down", to=round_t
            ),
            helper.make_node(
                "Cast",
                [f"{y}_product_low"],
                [f"{y}_product_rounded"],
                name=f"{y}_product_round_up",
                to=TensorProto.FLOAT,
            ),
            helper.make_node("Add", [f"{y}_product_rounded", bias], [y], name=f"{y}_bias_add"),
        ]
    del g.node[:]
    g.node.extend(merged)
