"""Predict each node's split from the operator support table and static checks.

This is the source of truth on machines without TensorRT, and the first answer
the GUI paints before the real parser's answer arrives. The table says what the
parser can *import*; restrictions that depend on attributes, constness and types
are checked here where they can be checked from the model alone.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splitscope.engine.model import Graph, Node, Source, Status
from splitscope.engine.model.nodes import SOURCE_CODE, STATUS_CODE
from splitscope.engine.model.tensors import sharing
from splitscope.engine.sample import resource
from splitscope.engine.text import plural

TABLE_PATH = resource("onnx-trt-operators.json")

# Types TensorRT has at all (parser_data_types of the table, in ONNX names).
TRT_DTYPES = frozenset(
    {
        "FLOAT",
        "FLOAT16",
        "BFLOAT16",
        "INT32",
        "INT64",
        "INT8",
        "UINT8",
        "BOOL",
        "FLOAT8E4M3FN",
        "INT4",
        "FLOAT4E2M1",
        "DOUBLE",
    }
)
_TABLE_TYPE = {
    "FLOAT": "FP32",
    "DOUBLE": "FP32",
    "FLOAT16": "FP16",
    "BFLOAT16": "BF16",
    "INT32": "INT32",
    "INT64": "INT64",
    "INT8": "INT8",
    "UINT8": "UINT8",
    "BOOL": "BOOL",
    "FLOAT8E4M3FN": "FP8",
    "INT4": "INT4",
    "FLOAT4E2M1": "FP4",
}

TARGET_TENSORRT = "tensorrt"
TARGET_RTX = "tensorrt-rtx"

# Measured differences of the TensorRT-RTX 1.7 parser from the TensorRT 11.1 table
# (DOMAIN.md section 4, re-checked by tests/engine/test_parser_semantics.py).
RTX_REJECTS: dict[str, str] = {
    "NonZero": "TensorRT-RTX 1.7 has no NonZero importer/plugin (passes supports_operator, fails in the model)",
    "RoiAlign": "TensorRT-RTX 1.7 rejects RoiAlign (no RoiAlign plugin)",
}


@dataclass(frozen=True, slots=True)
class OpEntry:
    """One row of the support table."""

    op: str
    supported: bool
    types: frozenset[str]
    restrictions: tuple[str, ...]


@functools.cache
def load_table(path: Path = TABLE_PATH) -> tuple[str, dict[str, OpEntry]]:
    """Return the table's TensorRT version and its rows by op type."""
    data = json.loads(path.read_text(encoding="utf-8"))
    rows = {
        o["operator"]: OpEntry(
            o["operator"],
            bool(o["supported"]),
            frozenset(o.get("supported_types") or ()),
            tuple(o.get("restrictions") or ()),
        )
        for o in data["operators"]
    }
    return str(data.get("tensorrt_version", "")), rows


def _is_const(graph: Graph, name: str) -> bool:
    t = graph.tensors.get(name) if name else None
    if t is None:
        return False
    if t.is_initializer:
        return True
    return t.producer is not None and graph.nodes[t.producer].op_type == "Constant"


def _const_values(graph: Graph, name: str) -> list[Any] | None:
    """Values of a small constant input, when the loader kept them (Constant attributes)."""
    if name in graph.constants:
        return graph.constants[name]
    t = graph.tensors.get(name) if name else None
    if t is None or t.producer is None:
        return None
    prod = graph.nodes[t.producer]
    if prod.op_type != "Constant":
        return None
    v = prod.attributes.get("value")
    if isinstance(v, list):
        return v
    if isinstance(v, (int, float)):
        return [v]
    return None


def _input_used(graph: Graph, node: Node, k: int) -> bool:
    return len(node.inputs) > k and bool(node.inputs[k])


def _output_used(graph: Graph, node: Node, k: int) -> bool:
    if len(node.outputs) <= k or not node.outputs[k]:
        return False
    t = graph.tensors.get(node.outputs[k])
    return t is not None and (bool(t.consumers) or t.is_output)


def _rank(graph: Graph, name: str) -> int | None:
    t = graph.tensors.get(name) if name else None
    return None if t is None or t.shape is None else len(t.shape)


Check = Callable[[Graph, Node], str | None]


def _reduce(g: Graph, n: Node) -> str | None:
    if _input_used(g, n, 1) and not _is_const(g, n.inputs[1]):
        return "`axes` must be an initializer, but it is computed at run time"
    return None


def _squeeze(g: Graph, n: Node) -> str | None:
    if _input_used(g, n, 1) and not _is_const(g, n.inputs[1]):
        src = g.tensors.get(n.inputs[1])
        if src is not None and src.producer is not None and g.nodes[src.producer].role.value == "shape":
            return None  # shape arithmetic the parser folds when shapes are static
        return "`axes` must be resolvable to a constant"
    return None


def _topk(g: Graph, n: Node) -> str | None:
    if n.attributes.get("sorted", 1) != 1:
        return "`sorted` must be 1"
    if _input_used(g, n, 1):
        vals = _const_values(g, n.inputs[1])
        if vals and any(isinstance(v, (int, float)) and v >= 3840 for v in vals):
            return f"`K` = {vals[0]} must be less than 3840"
    return None


def _resize(g: Graph, n: Node) -> str | None:
    a = n.attributes
    mode = a.get("mode", "nearest")
    # The table lists nearest and linear only, but both parsers import `cubic`
    # (IResizeLayer has had kCUBIC since TensorRT 8.5): measured, see BENCHMARKS.md.
    if mode not in ("nearest", "linear", "cubic"):
        return f"resize mode `{mode}` is not supported (only nearest, linear, cubic)"
    ctm = a.get("coordinate_transformation_mode", "half_pixel")
    if ctm not in ("half_pixel", "pytorch_half_pixel", "tf_half_pixel_for_nn", "asymmetric", "align_corners"):
        return f"coordinate_transformation_mode `{ctm}` is not supported"
    nm = a.get("nearest_mode", "round_prefer_floor")
    if mode == "nearest" and nm not in ("floor", "ceil", "round_prefer_floor", "round_prefer_ceil"):
        return f"nearest_mode `{nm}` is not supported"
    if a.get("antialias", 0):
        return "antialiasing is not supported"
    if a.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        return "only the `stretch` aspect ratio policy is supported"
    return None


def _pool(g: Graph, n: Node) -> str | None:
    r = _rank(g, n.inputs[0])
    if r is not None and r not in (4, 5):
        return f"{r - 2}D pooling: only 2D or 3D pooling is supported"
    d = n.attributes.get("dilations")
    if isinstance(d, list) and any(x != 1 for x in d):
        return "`dilations` must be empty or all ones"
    if n.op_type == "MaxPool" and _output_used(g, n, 1):
        return "the `Indices` output is not supported"
    return None


def _layernorm(g: Graph, n: Node) -> str | None:
    if _output_used(g, n, 1) or _output_used(g, n, 2):
        return "only the first output `Y` is supported"
    return None


def _qdq(g: Graph, n: Node) -> str | None:
    if _input_used(g, n, 2):
        vals = _const_values(g, n.inputs[2])
        if vals and any(v != 0 for v in vals):
            return "zero point must be 0 (TensorRT quantization is symmetric)"
    return None


def _scatternd(g: Graph, n: Node) -> str | None:
    red = n.attributes.get("reduction", "none")
    return None if red == "none" else f"`reduction` `{red}` is not supported (only none)"


def _const_input(k: int, what: str) -> Check:
    def check(g: Graph, n: Node) -> str | None:
        if _input_used(g, n, k) and not _is_const(g, n.inputs[k]):
            return f"`{what}` must be a build-time constant"
        return None

    return check


def _constant(g: Graph, n: Node) -> str | None:
    for k in ("sparse_value", "value_string", "value_strings"):
        if k in n.attributes:
            return f"`{k}` attribute is not supported"
    return None


def _lstm(g: Graph, n: Node) -> str | None:
    if n.attributes.get("input_forget", 0):
        return "`input_forget` must be 0"
    if n.attributes.get("layout", 0):
        return "`layout` must be 0"
    return None


def _grid_sample(g: Graph, n: Node) -> str | None:
    r = _rank(g, n.inputs[0])
    return None if r in (None, 4) else "input must be 4D"


def _attention(g: Graph, n: Node) -> str | None:
    for k, what in ((4, "past_key"), (5, "past_value"), (6, "nonpad_kv_seqlen")):
        if _input_used(g, n, k):
            return f"input `{what}` is not supported"
    for k in (1, 2, 3):
        if _output_used(g, n, k):
            return "outputs other than `Y` are not supported"
    if n.attributes.get("softcap"):
        return "`softcap` is not supported"
    return None


# Restrictions the parser does not check at import but the builder enforces:
# a parser "yes" does not override them (TopK: measured with TensorRT-RTX 1.7,
# parse succeeds and build_serialized_network fails "K exceeds the maximum value
# allowed (3840)"; pinned in tests/engine/test_parser_rtx.py).
BUILD_TIME_CHECKS: dict[str, Check] = {"TopK": _topk}

CHECKS: dict[str, Check] = {
    **{
        op: _reduce
        for op in (
            "ReduceL1",
            "ReduceL2",
            "ReduceLogSum",
            "ReduceLogSumExp",
            "ReduceMax",
            "ReduceMean",
            "ReduceMin",
            "ReduceProd",
            "ReduceSum",
            "ReduceSumSquare",
        )
    },
    "Squeeze": _squeeze,
    "Unsqueeze": _squeeze,
    "TopK": _topk,
    "Resize": _resize,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "LpPool": _pool,
    "LayerNormalization": _layernorm,
    "QuantizeLinear": _qdq,
    "DequantizeLinear": _qdq,
    "ScatterND": _scatternd,
    "OneHot": _const_input(1, "depth"),
    "CumSum": _const_input(1, "axis"),
    "Constant": _constant,
    "LSTM": _lstm,
    "GridSample": _grid_sample,
    "Attention": _attention,
}


def predict_node(graph: Graph, node: Node, target: str = TARGET_TENSORRT) -> tuple[Status, str]:
    """Predict one node's status and the reason for it."""
    version, table = load_table()
    src = f"TensorRT {version} operator table"
    cols, i = node.table, node.index  # the columns: this runs once a node
    c = cols.defect
    defect = c.values[c.codes[i]]  # coded columns read directly: this runs once a node
    if defect:
        return Status.PLUGIN, f"malformed ONNX: {defect}; fix the export (ONNX itself rejects this node)"
    op, domain = cols.op_type.values[cols.op_type.codes[i]], cols.domain.values[cols.domain.codes[i]]
    function = cols.function.get(i)
    if function is not None:
        bad = [n for n in function.nodes if n.status is Status.PLUGIN]
        if bad:
            return Status.PLUGIN, (
                f"its function body has {plural(len(bad), 'node')} TensorRT rejects, first "
                f"{bad[0].label} ({bad[0].op_type})"
            )
        return Status.DELEGATE, f"model-local function {op}: every node of its body is supported ({src})"
    if domain not in ("", "ai.onnx", "ai.onnx.ml"):
        return (
            Status.PLUGIN,
            f"custom op {domain}::{op}: no built-in importer; it needs a TensorRT plugin "
            f"named '{op}' (the parser falls back to a plugin of that name)",
        )
    tensors = graph.tensors
    dtypes, dcodes = tensors.dtype.values, tensors.dtype.codes
    ins, outs = graph.slot_rows()
    for r in (*ins[cols.in_off[i] : cols.in_off[i + 1]], *outs[cols.out_off[i] : cols.out_off[i + 1]]):
        dt = dtypes[dcodes[r]] if r >= 0 else None
        if dt is not None and dt not in TRT_DTYPES:
            return Status.PLUGIN, f"tensor '{tensors.names[r]}' is {dt}, a type TensorRT does not have"
    entry = table.get(op)
    if entry is None:
        return Status.PLUGIN, f"{op} is not in the {src}: no importer"
    if not entry.supported:
        return Status.PLUGIN, f"{op} is not supported ({src})"
    if target == TARGET_RTX and op in RTX_REJECTS:
        return Status.PLUGIN, RTX_REJECTS[op]
    check = CHECKS.get(op)
    if check is not None:
        why = check(graph, node)
        if why:
            return Status.PLUGIN, f"{op}: {why} ({src} restriction)"
    for sub in cols.subgraphs.get(i, {}).values():
        bad = [n for n in sub.nodes if n.status is Status.PLUGIN]
        if bad:
            return Status.PLUGIN, (
                f"its body '{sub.path}' has {plural(len(bad), 'node')} TensorRT rejects, first "
                f"{bad[0].label} ({bad[0].op_type})"
            )
    return Status.DELEGATE, f"{op} is supported ({src})"


def predict_op(op_type: str, domain: str, target: str = TARGET_TENSORRT) -> tuple[Status, str]:
    """The table's answer for an op alone (no attributes, types or bodies known yet): the preview's colour."""
    version, table = load_table()
    src = f"TensorRT {version} operator table"
    if domain not in ("", "ai.onnx", "ai.onnx.ml"):
        return Status.PLUGIN, f"custom op {domain}::{op_type}: no built-in importer; it needs a TensorRT plugin"
    entry = table.get(op_type)
    if entry is None:
        return Status.PLUGIN, f"{op_type} is not in the {src}: no importer"
    if not entry.supported:
        return Status.PLUGIN, f"{op_type} is not supported ({src})"
    if target == TARGET_RTX and op_type in RTX_REJECTS:
        return Status.PLUGIN, RTX_REJECTS[op_type]
    return Status.DELEGATE, f"{op_type} is supported ({src}); its attributes and types are still being read"


def predict_graph(graph: Graph, target: str = TARGET_TENSORRT) -> None:
    """Set status, reason and source on every node of ``graph`` and its bodies from the table."""
    nodes = graph.nodes
    for bodies in nodes.subgraphs.values():
        for sub in bodies.values():
            predict_graph(sub, target)
    for body in nodes.function.values():
        predict_graph(body, target)
    code, table, share = STATUS_CODE, SOURCE_CODE[Source.TABLE], sharing()  # one string a distinct reason
    for node in nodes:
        i = node.index
        status, reason = predict_node(graph, node, target)
        nodes.reason[i] = share(reason)
        nodes.status[i] = nodes.table_status[i] = code[status]
        nodes.source[i] = table
