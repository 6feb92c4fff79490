"""An independent count of the FLOPs that dominate a model (Conv, ConvTranspose, MatMul, Gemm): the shapes come from
ONNX Runtime running the model (every operand exposed as an output), not from shape inference, and the formulas
are the textbook ones written out here."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper as h

DOMINANT = ("Conv", "ConvTranspose", "MatMul", "Gemm")


def measured_flops(path: str | Path, feeds: dict[str, np.ndarray]) -> int:
    m = onnx.load(str(path))
    wanted: list[str] = []
    for n in m.graph.node:
        if n.op_type in DOMINANT:
            wanted += [n.input[0], n.input[1], n.output[0]]
    have = {o.name for o in m.graph.output}
    for name in dict.fromkeys(wanted):
        if name not in have:
            m.graph.output.append(h.make_value_info(name, onnx.TypeProto()))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # the graph as written
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    values = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds), strict=True))
    inits = {i.name: tuple(i.dims) for i in m.graph.initializer}

    def shape(name: str) -> tuple[int, ...]:
        return tuple(values[name].shape) if name in values else inits[name]

    total = 0
    for n in m.graph.node:
        if n.op_type not in DOMINANT:
            continue
        y = math.prod(shape(n.output[0]))
        bias = y if len(n.input) > 2 and n.input[2] else 0
        if n.op_type == "Conv":  # each output: Cin/group x kernel multiply-adds
            total += 2 * y * math.prod(shape(n.input[1])[1:]) + bias
        elif n.op_type == "ConvTranspose":  # each input element: Cout/group x kernel multiply-adds
            total += 2 * math.prod(shape(n.input[0])) * math.prod(shape(n.input[1])[1:])
        elif n.op_type == "MatMul":
            total += 2 * y * shape(n.input[0])[-1]
        else:
            a = shape(n.input[0])
            trans_a = any(x.name == "transA" and x.i for x in n.attribute)
            total += 2 * y * (a[0] if trans_a else a[1]) + bias
    return total
