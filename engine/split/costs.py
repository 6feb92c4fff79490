"""FLOPs and bytes moved per node, from shapes alone.

Counts follow the usual convention: a multiply-accumulate is 2 FLOPs; cheap
element-wise ops count 1 per output element; transcendental and normalisation
ops count a small constant per element. Shapes are those at the dims in force: each
tensor's concrete shape where inference at those values typed it, else its symbolic
shape evaluated at ``dims``. Nodes whose shapes are unknown (a dim without a value) get None.
"""

from __future__ import annotations

import math
from collections.abc import Callable

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
_CONTRIB = {
    "FusedMatMul": "MatMul",
    "FusedConv": "Conv",
    "FusedGemm": "Gemm",
    "FastGelu": "Gelu",
    "BiasGelu": "Gelu",
    "QuickGelu": "Gelu",
    "SkipSimplifiedLayerNormalization": "SimplifiedLayerNormalization",
    **{op: op for op in ("Attention", "MultiHeadAttention", "GroupQueryAttention", "Gelu")},
    **{op: op for op in ("SkipLayerNormalization", "SimplifiedLayerNormalization", "LayerNormalization")},
}
"""ONNX Runtime's contrib ops (``com.microsoft``, in exports its optimiser wrote) counted as the standard op they
fuse: not custom kernels of unknown cost."""
_POOL = {"MaxPool", "AveragePool", "LpPool"}
_GLOBAL_POOL = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}


def _t(graph: Graph, name: str) -> Tensor | None:
    return graph.tensors.get(name) if name else None


def _numel(graph: Graph, name: str, dims: dict[str, int]) -> int | None:
    return graph.tensors.numel_of(name, dims) if name else None


def _shape(graph: Graph, name: str, dims: dict[str, int]) -> list[int] | None:
    shape = graph.tensors.resolved_of(name, dims) if name else None
    return list(shape) if shape is not None else None


def counted_as_standard(node: Node) -> bool:
    """Whether a custom-domain node is counted as the standard op it stands for (ONNX Runtime's contrib ops)."""
    return node.domain == "com.microsoft" and node.op_type in _CONTRIB


def node_flops(graph: Graph, node: Node, dims: dict[str, int] | None = None) -> int | None:
    """FLOPs of one inference of ``node``; 0 for pure data movement, None when unknown."""
    dims = dims or {}
    op = node.op_type
    if node.domain == "com.microsoft" and op in _CONTRIB:
        op = _CONTRIB[op]
    elif node.is_custom_domain and node.function is None:
        return None  # an opaque custom kernel: its cost is unknown until measured
    rule = _BY_OP.get(op)
    if rule is not None:
        return rule(graph, node, dims, op)
    return _per_element(graph, node, dims, op)


Dims = dict[str, int]


def _out0(node: Node) -> str:
    return node.outputs[0] if node.outputs else ""


def _conv(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
    w_idx = 3 if op == "QLinearConv" else 1
    w = _shape(graph, node.inputs[w_idx], dims) if len(node.inputs) > w_idx else None
    y = _numel(graph, _out0(node), dims)
    if w is None or y is None or len(w) < 2:
        return None
    flops = 2 * y * math.prod(w[1:])  # Cin/group * k... per output
    if len(node.inputs) > 2 and node.inputs[2] and op == "Conv":
        flops += y
    return flops


def _conv_transpose(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
    x = _shape(graph, node.inputs[0], dims)
    w = _shape(graph, node.inputs[1], dims)
    if x is None or w is None or len(w) < 2:
        return None
    return 2 * math.prod(x) * math.prod(w[1:])


def _matmul(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
    a = _shape(graph, node.inputs[0], dims)
    y = _numel(graph, _out0(node), dims)
    if a is None or y is None or not a:
        return None
    return 2 * y * a[-1]


def _gemm(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
    a = _shape(graph, node.inputs[0], dims)
    y = _numel(graph, _out0(node), dims)
    if a is None or y is None or len(a) != 2:
        return None
    k = a[0] if node.attributes.get("transA", 0) else a[1]
    return 2 * y * k + (y if len(node.inputs) > 2 and node.inputs[2] else 0)


def _einsum(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
    shapes = [_shape(graph, x, dims) for x in node.inputs]
    eq = node.attributes.get("equation")
    if not isinstance(eq, str) or not shapes or any(sh is None for sh in shapes):
        return None
    return einsum_flops(eq, [sh for sh in shapes if sh is not None])


def _attention(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
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


def _recurrent(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
    x = _shape(graph, node.inputs[0], dims)
    w = _shape(graph, node.inputs[1], dims)
    r = _shape(graph, node.inputs[2], dims)
    if x is None or w is None or r is None:
        return None
    seq, batch = x[0], x[1]
    return 2 * seq * batch * (math.prod(w) + math.prod(r))


def _pool(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
    y = _numel(graph, _out0(node), dims)
    k = node.attributes.get("kernel_shape")
    if y is None or not isinstance(k, list):
        return None
    return y * math.prod(k)


def _resize(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
    y = _numel(graph, _out0(node), dims)
    if y is None:
        return None
    mode = node.attributes.get("mode", "nearest")
    return y * (1 if mode == "nearest" else 4 if mode == "linear" else 16)


def _sort_like(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
    x = _numel(graph, node.inputs[0], dims) if node.inputs else None
    return None if x is None else x * max(1, int(math.log2(max(x, 2))))


def _reduce(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
    return _numel(graph, node.inputs[0], dims)


def _per_element(graph: Graph, node: Node, dims: Dims, op: str) -> int | None:
    """Ops that cost a few FLOPs per output element; 0 for the rest (data movement)."""
    if op in _ELEMENTWISE_1:
        return _numel(graph, _out0(node), dims)
    per = 4 if op in _ELEMENTWISE_4 else 5 if op in _SOFTMAX else _NORMS.get(op, 0)
    if not per:
        return 0
    y = _numel(graph, _out0(node), dims)
    return None if y is None else per * y


FlopsRule = Callable[[Graph, Node, Dims, str], "int | None"]
_BY_OP: dict[str, FlopsRule] = {
    **dict.fromkeys(("Conv", "ConvInteger", "QLinearConv", "DeformConv"), _conv),
    "ConvTranspose": _conv_transpose,
    **dict.fromkeys(("MatMul", "MatMulInteger", "QLinearMatMul"), _matmul),
    "Gemm": _gemm,
    "Einsum": _einsum,
    **dict.fromkeys(("Attention", "MultiHeadAttention", "GroupQueryAttention"), _attention),
    **dict.fromkeys(("LSTM", "GRU", "RNN"), _recurrent),
    **dict.fromkeys((*_REDUCE, *_GLOBAL_POOL), _reduce),
    **dict.fromkeys(_POOL, _pool),
    **dict.fromkeys(("Resize", "Upsample"), _resize),
    **dict.fromkeys(("TopK", "NonMaxSuppression"), _sort_like),
}
"""The FLOPs rule of each op whose cost is not a few FLOPs per output element."""


def einsum_flops(equation: str, shapes: list[list[int]]) -> int | None:
    """FLOPs of an Einsum contracted pairwise from the left, as runtimes evaluate it: each step a multiply and an
    add for each point of the space of the pair's indices where one of them is summed away (``ij,jk->ik``: 2·i·j·k),
    a multiply alone where none is (an outer product); one operand (a transpose, a trace, a sum) reads each of its
    elements once. The dims an ellipsis stands for are indices too (summed where the output drops them). None for
    an equation that does not fit the shapes."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes) or not shapes:
        return None
    rank = max((len(sh) - len(t.replace("...", "")) for t, sh in zip(terms, shapes, strict=True)), default=0)
    if rank < 0:
        return None
    ell = [chr(0x2460 + k) for k in range(rank)]  # stand-ins for the ellipsis dims, right-aligned as broadcasting
    sizes: dict[str, int] = {}
    operands: list[list[str]] = []
    for term, shape in zip(terms, shapes, strict=True):
        extra = len(shape) - len(term.replace("...", ""))
        if extra < 0 or (extra and "..." not in term):
            return None
        head, _, tail = term.partition("...")
        letters = [*head, *ell[rank - extra :], *tail] if "..." in term else list(term)
        for c, d in zip(letters, shape, strict=True):
            if sizes.get(c, 1) not in (1, d) and d != 1:
                return None
            sizes[c] = max(sizes.get(c, 1), d)
        operands.append(letters)
    if len(operands) == 1:
        return math.prod(shapes[0])
    if arrow:
        out = set(rhs.replace("...", "")) | (set(ell) if "..." in rhs else set())
    else:  # implicit output: the letters seen once, and the ellipsis
        out = {c for c in sizes if lhs.count(c) == 1} | set(ell)
    flops = 0
    left = set(operands[0])
    for k, right in enumerate(operands[1:], start=1):
        pair = left | set(right)
        later = set().union(*map(set, operands[k + 1 :])) if k + 1 < len(operands) else set()
        keep = {c for c in pair if c in out or c in later}
        summed = pair - keep
        flops += (2 if summed else 1) * math.prod(sizes[c] for c in pair)
        left = keep
    return flops


def node_bytes(
    graph: Graph, node: Node, dims: dict[str, int] | None = None, sizes: list[int | None] | None = None
) -> int | None:
    """Bytes read plus bytes written by one inference of ``node``; None when nothing is known. ``sizes``: every
    tensor's bytes (:meth:`Tensors.sizes`) when the graph's tensors are a table, computed once for all nodes."""
    total = 0
    known = False
    if sizes is not None:
        i, ins, outs = node.index, *graph.slot_rows()
        off = graph.nodes.out_off
        for r in (*graph.read_rows(i, ins), *outs[off[i] : off[i + 1]]):
            b = sizes[r] if r >= 0 else None
            if b is not None:
                total += b
                known = True
        return total if known else None
    for name in (*node.all_inputs, *node.outputs):
        t = _t(graph, name)
        b = t.nbytes(dims) if t is not None else None
        if b is not None:
            total += b
            known = True
    return total if known else None


def fill_costs(graph: Graph, dims: dict[str, int] | None = None) -> None:
    """Set ``flops`` and ``bytes`` on every node of ``graph`` and of its nested graphs.

    A node with bodies (If, Loop, Scan, a function call) counts what its bodies
    count (both If branches: an upper bound).
    """
    nodes = graph.nodes
    sizes = graph.tensors.sizes(dims)
    for bodies in nodes.subgraphs.values():
        for sub in bodies.values():
            fill_costs(sub, dims)
    for f in {id(f): f for f in nodes.function.values()}.values():
        if f.nodes and f.nodes[0].bytes is None and f.nodes[0].flops is None:
            fill_costs(f, dims)
    for node in nodes:
        i = node.index
        nodes.put("flops", i, node_flops(graph, node, dims))
        nodes.put("bytes", i, node_bytes(graph, node, dims, sizes))
        bodies = [*nodes.subgraphs.get(i, {}).values(), *([f] if (f := nodes.function.get(i)) else [])]
        if bodies:
            nodes.put("flops", i, (node.flops or 0) + sum(n.flops or 0 for b in bodies for n in b.nodes))
