"""FLOPs and bytes moved per node, from shapes alone.

Counts follow the usual convention: a multiply-accumulate is 2 FLOPs; cheap
element-wise ops count 1 per output element; transcendental and normalisation
ops count a small constant per element. Shapes are those at the dims in force: each
tensor's concrete shape where inference at those values typed it, else its symbolic
shape evaluated at ``dims``. Nodes whose shapes are unknown (a dim without a value) get None.
"""

from __future__ import annotations

import math

import numpy as np
from splitscope.engine.model import Graph, Node, Tensor

_ELEMENTWISE_1 = {
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Max",
    "Min",
    "Sum",
    "Mean",
    "Neg",
    "Abs",
    "Relu",
    "LeakyRelu",
    "PRelu",
    "Clip",
    "Sign",
    "Ceil",
    "Floor",
    "Round",
    "Reciprocal",
    "Sqrt",
    "Pow",
    "Mod",
    "Equal",
    "Greater",
    "GreaterOrEqual",
    "Less",
    "LessOrEqual",
    "And",
    "Or",
    "Xor",
    "Not",
    "Where",
    "IsNaN",
    "IsInf",
    "ThresholdedRelu",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "BitwiseNot",
    "BitShift",
    "QuantizeLinear",
    "DequantizeLinear",
    "Shrink",
}
_ELEMENTWISE_4 = {
    "Sigmoid",
    "HardSigmoid",
    "Tanh",
    "Exp",
    "Log",
    "Erf",
    "Gelu",
    "Elu",
    "Selu",
    "Celu",
    "Softplus",
    "Softsign",
    "HardSwish",
    "Mish",
    "Swish",
    "Sin",
    "Cos",
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Asinh",
    "Acosh",
    "Atanh",
}
_SOFTMAX = {"Softmax", "LogSoftmax", "Hardmax"}
_NORMS = {
    "LayerNormalization": 8,
    "InstanceNormalization": 8,
    "GroupNormalization": 8,
    "RMSNormalization": 6,
    "BatchNormalization": 2,
    "LpNormalization": 3,
    "MeanVarianceNormalization": 6,
    "SimplifiedLayerNormalization": 6,
    "SkipLayerNormalization": 9,
}
_REDUCE = {
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
    "ArgMax",
    "ArgMin",
    "CumSum",
}
_POOL = {"MaxPool", "AveragePool", "LpPool"}
_GLOBAL_POOL = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}


def _t(graph: Graph, name: str) -> Tensor | None:
    return graph.tensors.get(name) if name else None


def _numel(graph: Graph, name: str, dims: dict[str, int]) -> int | None:
    t = _t(graph, name)
    return t.numel(dims) if t is not None else None


def _shape(graph: Graph, name: str, dims: dict[str, int]) -> list[int] | None:
    t = _t(graph, name)
    shape = t.resolved(dims) if t is not None else None
    return list(shape) if shape is not None else None


def node_flops(graph: Graph, node: Node, dims: dict[str, int] | None = None) -> int | None:
    """FLOPs of one inference of ``node``; 0 for pure data movement, None when unknown."""
    dims = dims or {}
    op = node.op_type
    if node.is_custom_domain and node.function is None:
        return None  # an opaque custom kernel: its cost is unknown until measured
    out0 = node.outputs[0] if node.outputs else ""
    if op in ("Conv", "ConvInteger", "QLinearConv", "DeformConv"):
        w_idx = 3 if op == "QLinearConv" else 1
        w = _shape(graph, node.inputs[w_idx], dims) if len(node.inputs) > w_idx else None
        y = _numel(graph, out0, dims)
        if w is None or y is None or len(w) < 2:
            return None
        per_out = math.prod(w[1:])  # Cin/group * k...
        flops = 2 * y * per_out
        if len(node.inputs) > 2 and node.inputs[2] and op == "Conv":
            flops += y
        return flops
    if op == "ConvTranspose":
        x = _shape(graph, node.inputs[0], dims)
        w = _shape(graph, node.inputs[1], dims)
        if x is None or w is None or len(w) < 2:
            return None
        return 2 * math.prod(x) * math.prod(w[1:])
    if op in ("MatMul", "MatMulInteger", "QLinearMatMul"):
        a = _shape(graph, node.inputs[0], dims)
        y = _numel(graph, out0, dims)
        if a is None or y is None or not a:
            return None
        return 2 * y * a[-1]
    if op == "Gemm":
        a = _shape(graph, node.inputs[0], dims)
        y = _numel(graph, out0, dims)
        if a is None or y is None or len(a) != 2:
            return None
        k = a[0] if node.attributes.get("transA", 0) else a[1]
        return 2 * y * k + (y if len(node.inputs) > 2 and node.inputs[2] else 0)
    if op == "Einsum":
        shapes = [_shape(graph, x, dims) for x in node.inputs]
        eq = node.attributes.get("equation")
        if not isinstance(eq, str) or not shapes or any(sh is None for sh in shapes):
            return None
        return einsum_flops(eq, [sh for sh in shapes if sh is not None])
    if op in ("Attention", "MultiHeadAttention", "GroupQueryAttention"):
        q = _shape(graph, node.inputs[0], dims)
        k = _shape(graph, node.inputs[1], dims) if len(node.inputs) > 1 else None
        if q is None or k is None:
            return None
        if len(q) == 4 and len(k) == 4:  # (B, H, S, D)
            b, h, sq, d = q
            skv = k[2]
            return 4 * b * h * sq * skv * d + 5 * b * h * sq * skv
        if len(q) == 3 and len(k) == 3:  # (B, S, H*D)
            b, sq, hd = q
            skv = k[1]
            return 4 * b * sq * skv * hd
        return None
    if op in ("LSTM", "GRU", "RNN"):
        x = _shape(graph, node.inputs[0], dims)
        w = _shape(graph, node.inputs[1], dims)
        r = _shape(graph, node.inputs[2], dims)
        if x is None or w is None or r is None:
            return None
        seq, batch = x[0], x[1]
        return 2 * seq * batch * (math.prod(w) + math.prod(r))
    y = _numel(graph, out0, dims)
    if op in _ELEMENTWISE_1:
        return y
    if op in _ELEMENTWISE_4:
        return None if y is None else 4 * y
    if op in _SOFTMAX:
        return None if y is None else 5 * y
    if op in _NORMS:
        return None if y is None else _NORMS[op] * y
    if op in _REDUCE or op in _GLOBAL_POOL:
        return _numel(graph, node.inputs[0], dims)
    if op in _POOL:
        k = node.attributes.get("kernel_shape")
        if y is None or not isinstance(k, list):
            return None
        return y * math.prod(k)
    if op == "Resize" or op == "Upsample":
        mode = node.attributes.get("mode", "nearest")
        if y is None:
            return None
        return y * (1 if mode == "nearest" else 4 if mode == "linear" else 16)
    if op in ("TopK", "NonMaxSuppression"):
        x = _numel(graph, node.inputs[0], dims) if node.inputs else None
        return None if x is None else x * max(1, int(math.log2(max(x, 2))))
    return 0


def einsum_flops(equation: str, shapes: list[list[int]]) -> int | None:
    """FLOPs of an Einsum evaluated pairwise, the naive way: with an index summed over, a multiply and an add for each
    point of the space of every index (``ij,jk->ik``: 2·i·j·k), without one a multiply (an outer product); one
    operand (a transpose, a trace, a sum) reads each of its elements once. None for an equation that does not fit
    the shapes."""
    eq = equation.replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        return None
    sizes: dict[str, int] = {}
    ellipsis: list[list[int]] = []
    for term, shape in zip(terms, shapes, strict=True):
        letters = term.replace("...", "")
        extra = len(shape) - len(letters)
        if extra < 0 or (extra and "..." not in term):
            return None
        head = term.split("...")[0] if "..." in term else term
        dims = list(shape)
        if "..." in term:
            ellipsis.append(dims[len(head) : len(head) + extra])
            dims = dims[: len(head)] + dims[len(head) + extra :]
        for c, d in zip(letters, dims, strict=True):
            if sizes.get(c, 1) not in (1, d) and d != 1:
                return None
            sizes[c] = max(sizes.get(c, 1), d)
    try:
        space = math.prod(np.broadcast_shapes(*(tuple(e) for e in ellipsis))) if ellipsis else 1
    except ValueError:
        return None
    space *= math.prod(sizes.values())
    if len(shapes) == 1:
        return math.prod(shapes[0])
    out = rhs if "->" in eq else "".join(sorted(c for c in sizes if lhs.count(c) == 1))
    summed = any(c not in out for c in sizes)
    return (len(shapes) - 1) * (2 if summed else 1) * space


def node_bytes(graph: Graph, node: Node, dims: dict[str, int] | None = None) -> int | None:
    """Bytes read plus bytes written by one inference of ``node``; None when nothing is known."""
    total = 0
    known = False
    for name in (*node.all_inputs, *node.outputs):
        t = _t(graph, name)
        if t is None:
            continue
        b = t.nbytes(dims)
        if b is not None:
            total += b
            known = True
    return total if known else None


def fill_costs(graph: Graph, dims: dict[str, int] | None = None) -> None:
    """Set ``flops`` and ``bytes`` on every node of ``graph`` and of its nested graphs.

    A node with bodies (If, Loop, Scan, a function call) counts what its bodies
    count (both If branches: an upper bound).
    """
    for node in graph.nodes:
        for sub in node.subgraphs.values():
            fill_costs(sub, dims)
        if (
            node.function is not None
            and node.function.nodes
            and node.function.nodes[0].bytes is None
            and node.function.nodes[0].flops is None
        ):
            fill_costs(node.function, dims)
        node.flops = node_flops(graph, node, dims)
        node.bytes = node_bytes(graph, node, dims)
        bodies = [*node.subgraphs.values(), *([node.function] if node.function else [])]
        if bodies:
            node.flops = (node.flops or 0) + sum(n.flops or 0 for b in bodies for n in b.nodes)
