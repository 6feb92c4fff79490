"""Assign each node a role: compute, data movement, shape, pre/post-processing, control flow."""

from __future__ import annotations

from collections.abc import Sequence

from splitscope.engine.model import Graph, Role

HEAVY_OPS = frozenset(
    {
        "Conv",
        "ConvTranspose",
        "MatMul",
        "Gemm",
        "Attention",
        "MultiHeadAttention",
        "GroupQueryAttention",
        "LSTM",
        "GRU",
        "RNN",
        "Einsum",
        "ConvInteger",
        "QLinearConv",
        "MatMulInteger",
        "QLinearMatMul",
        "DeformConv",
    }
)
CONTROL_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
SHAPE_SOURCES = frozenset({"Shape", "Size"})
SHAPE_FOLLOWERS = frozenset(
    {
        "Gather",
        "Concat",
        "Unsqueeze",
        "Squeeze",
        "Slice",
        "Cast",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Equal",
        "Where",
        "ReduceProd",
        "Reshape",
        "Range",
        "ConstantOfShape",
        "Max",
        "Min",
        "Neg",
        "Abs",
        "Expand",
        "Identity",
        "Floor",
        "Ceil",
        "Mod",
        "Less",
        "Greater",
        "Not",
        "And",
        "Or",
        "Sqrt",
        "Tile",
        "Split",
        "Constant",
    }
)
DATA_MOVEMENT_OPS = frozenset(
    {
        "Reshape",
        "Transpose",
        "Concat",
        "Split",
        "Slice",
        "Gather",
        "GatherElements",
        "GatherND",
        "Squeeze",
        "Unsqueeze",
        "Flatten",
        "Expand",
        "Tile",
        "Pad",
        "Identity",
        "Cast",
        "CastLike",
        "DepthToSpace",
        "SpaceToDepth",
        "ScatterND",
        "ScatterElements",
        "Scatter",
        "Dropout",
        "ReverseSequence",
        "Compress",
        "Trilu",
        "SplitToSequence",
        "ConcatFromSequence",
        "SequenceAt",
        "SequenceConstruct",
        "SequenceInsert",
        "SequenceEmpty",
        "SequenceLength",
        "SequenceErase",
        "Optional",
        "OptionalGetElement",
        "OptionalHasElement",
        "Col2Im",
        "CenterCropPad",
    }
)
# Ops typical of input preparation (decode, layout, normalise, resize) before the first heavy op.
PRE_OPS = frozenset(
    {
        "Cast",
        "Div",
        "Sub",
        "Mul",
        "Add",
        "Transpose",
        "Resize",
        "Slice",
        "Pad",
        "Concat",
        "Reshape",
        "Clip",
        "Unsqueeze",
        "Squeeze",
        "Flatten",
        "CenterCropPad",
        "Upsample",
        "ImageDecoder",
        "DepthToSpace",
        "Identity",
        "Split",
    }
)
# Ops whose presence in the tail marks it as detection/classification post-processing.
POST_MARKERS = frozenset(
    {
        "TopK",
        "NonMaxSuppression",
        "NonZero",
        "ArgMax",
        "ArgMin",
        "Compress",
        "Unique",
        "Softmax",
        "LogSoftmax",
        "Sigmoid",
        "RoiAlign",
        "Hardmax",
        "GatherND",
        "MaxRoiPool",
    }
)


def assign_roles(graph: Graph, order: Sequence[int]) -> None:
    """Set ``role`` on every node of ``graph`` (and, recursively, of its bodies).

    Parameters
    ----------
    graph
        The graph; its nodes are updated in place.
    order
        A topological order of ``graph.nodes``.
    """
    nodes = graph.nodes
    tensors = graph.tensors
    n = len(nodes)
    preds, succs = graph.adj.preds, graph.adj.succs

    # Shape role: Shape/Size and what computes only on their results and constants.
    is_shape = [False] * n
    from_input = [False] * n
    for idx in order:
        node = nodes[idx]
        op = node.op_type
        ins = [tensors.get(i) for i in node.inputs if i]
        from_input[idx] = any(t is not None and t.is_input for t in ins) or any(from_input[p] for p in preds[idx])
        if op in SHAPE_SOURCES:
            is_shape[idx] = True
        elif op in SHAPE_FOLLOWERS and node.domain in ("", "ai.onnx"):
            dyn = [p for p in preds[idx]]
            if op == "Constant":
                is_shape[idx] = all(len(t.shape or ()) <= 1 for o in node.outputs if (t := tensors.get(o)))
                continue
            non_const = [t for t in ins if t is not None and not t.is_initializer and t.producer is None]
            if not non_const and dyn and all(is_shape[p] or nodes[p].op_type == "Constant" for p in dyn):
                is_shape[idx] = any(is_shape[p] for p in dyn)

    heavy = [nodes[i].op_type in HEAVY_OPS for i in range(n)]
    heavy_anc = [False] * n
    for idx in order:
        heavy_anc[idx] = any(heavy[p] or heavy_anc[p] for p in preds[idx])
    heavy_desc = [False] * n
    for idx in reversed(order):
        heavy_desc[idx] = any(heavy[s] or heavy_desc[s] for s in succs[idx])

    tail = [heavy_anc[i] and not heavy_desc[i] and not heavy[i] for i in range(n)]
    tail_is_post = any(tail[i] and nodes[i].op_type in POST_MARKERS for i in range(n))
    any_heavy = any(heavy)
    for idx in range(n):
        node = nodes[idx]
        op = node.op_type
        for sub in node.subgraphs.values():
            assign_roles(sub, sub.adj.order)
        if op in CONTROL_OPS:
            node.role = Role.CONTROL_FLOW
        elif is_shape[idx]:
            node.role = Role.SHAPE
        elif heavy[idx]:
            node.role = Role.COMPUTE
        elif any_heavy and from_input[idx] and not heavy_anc[idx] and heavy_desc[idx] and op in PRE_OPS:
            node.role = Role.PRE_PROCESSING
        elif tail[idx] and tail_is_post:
            node.role = Role.POST_PROCESSING
        elif op in DATA_MOVEMENT_OPS:
            node.role = Role.DATA_MOVEMENT
        else:
            node.role = Role.COMPUTE
