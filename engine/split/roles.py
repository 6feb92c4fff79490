"""Assign each node a role: compute, data movement, shape, pre/post-processing, control flow."""

from __future__ import annotations

from collections.abc import Sequence

from splitscope.engine.model import Graph, Role
from splitscope.engine.model.nodes import ROLE_CODE
from splitscope.engine.model.tensors import INITIALIZER_FLAG, INPUT_FLAG

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


def _shape_roles(graph: Graph, order: Sequence[int]) -> tuple[list[bool], list[bool]]:
    """Per node: whether it computes a shape (Shape/Size, and what computes only on their results and constants),
    and whether it reads a graph input, directly or through its predecessors."""
    nodes = graph.nodes
    tensors = graph.tensors
    n = len(nodes)
    preds = graph.adj.preds
    ops, domains = nodes.op_type, nodes.domain
    flags, producer, shapes = tensors.flags, tensors.producer, tensors.shape
    graph_input, weight = INPUT_FLAG, INITIALIZER_FLAG
    slots, out_slots = graph.slot_rows()
    in_off, out_off = nodes.in_off, nodes.out_off

    # Shape role: Shape/Size and what computes only on their results and constants.
    is_shape = [False] * n
    from_input = [False] * n
    for idx in order:
        op = ops[idx]
        ins = [r for r in slots[in_off[idx] : in_off[idx + 1]] if r >= 0]
        from_input[idx] = any(flags[r] & graph_input for r in ins) or any(from_input[p] for p in preds[idx])
        if op in SHAPE_SOURCES:
            is_shape[idx] = True
        elif op in SHAPE_FOLLOWERS and domains[idx] in ("", "ai.onnx"):
            dyn = preds[idx]
            if op == "Constant":
                outs = [r for r in out_slots[out_off[idx] : out_off[idx + 1]] if r >= 0]
                is_shape[idx] = all(len(shapes[r] or ()) <= 1 for r in outs)
                continue
            non_const = [r for r in ins if not flags[r] & weight and producer[r] < 0]
            if not non_const and dyn and all(is_shape[p] or ops[p] == "Constant" for p in dyn):
                is_shape[idx] = any(is_shape[p] for p in dyn)
    return is_shape, from_input


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
    n = len(nodes)
    preds, succs = graph.adj.preds, graph.adj.succs
    ops = nodes.op_type
    is_shape, from_input = _shape_roles(graph, order)

    heavy = [op in HEAVY_OPS for op in ops]
    heavy_anc = [False] * n
    for idx in order:
        heavy_anc[idx] = any(heavy[p] or heavy_anc[p] for p in preds[idx])
    heavy_desc = [False] * n
    for idx in reversed(order):
        heavy_desc[idx] = any(heavy[s] or heavy_desc[s] for s in succs[idx])

    tail = [heavy_anc[i] and not heavy_desc[i] and not heavy[i] for i in range(n)]
    tail_is_post = any(tail[i] and ops[i] in POST_MARKERS for i in range(n))
    any_heavy = any(heavy)
    for sub in (b for bodies in nodes.subgraphs.values() for b in bodies.values()):
        assign_roles(sub, sub.adj.order)
    code = ROLE_CODE
    roles = nodes.role
    for idx in range(n):
        op = ops[idx]
        if op in CONTROL_OPS:
            role = Role.CONTROL_FLOW
        elif is_shape[idx]:
            role = Role.SHAPE
        elif heavy[idx]:
            role = Role.COMPUTE
        elif any_heavy and from_input[idx] and not heavy_anc[idx] and heavy_desc[idx] and op in PRE_OPS:
            role = Role.PRE_PROCESSING
        elif tail[idx] and tail_is_post:
            role = Role.POST_PROCESSING
        elif op in DATA_MOVEMENT_OPS:
            role = Role.DATA_MOVEMENT
        else:
            role = Role.COMPUTE
        roles[idx] = code[role]
