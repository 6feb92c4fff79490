"""One place for each sentence and label the CLI, the panels and reports share."""

from __future__ import annotations

from splitscope.engine.model import GraphModel, Node, ParserInfo


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 node``, ``2 nodes``; ``many`` for irregular plurals (``1 op type`` -> ``op types``)."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def op_label(domain: str, op_type: str) -> str:
    """``Conv`` for the standard domain, ``com.example::Gelu`` otherwise."""
    return f"{domain}::{op_type}" if domain and domain != "ai.onnx" else op_type


def node_op_label(node: Node) -> str:
    """:func:`op_label` of a node."""
    return op_label(node.domain, node.op_type)


def decided_by(p: ParserInfo, *, calls: bool = True) -> str:
    """Which source decided the split, as a phrase: ``TensorRT-RTX 1.7.1 parser (3 calls)``."""
    if p.name == "table":
        return f"TensorRT {p.version} operator table (predicting {p.target})".replace("  ", " ")
    text = f"{p.name} {p.version}".strip() + " parser"
    if calls and p.calls:
        text += f" ({plural(p.calls, 'call')})"
    return text


def format_bytes(n: int) -> str:
    """Human-readable byte count (decimal units, as TensorRT's tools print)."""
    if n < 1000:
        return f"{n} B"
    for k, unit in enumerate(("kB", "MB", "GB", "TB", "PB"), start=1):
        whole, tenth = divmod(n * 10 // 1000**k, 10)  # integers: no float overflow on damaged shapes
        if whole < 1000 or unit == "PB":
            return f"{whole}.{tenth} {unit}"
    return f"{n} B"


def model_title(gm: GraphModel) -> str:
    """The model's file name, or a placeholder when it was given as bytes."""
    return gm.path.name if gm.path else "model"
