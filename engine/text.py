"""One place for each sentence and label the CLI, the panels and reports share."""

from __future__ import annotations

from typing import TYPE_CHECKING

from splitscope.engine.dims.expr import readable_dim

if TYPE_CHECKING:
    from splitscope.engine.model import GraphModel, Node, ParserInfo, Tensor


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 node``, ``2 nodes``, ``49,996 nodes``; ``many`` for irregular plurals (``1 op type`` -> ``op types``)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


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


def format_flops(n: int | None) -> str:
    """``2.05 GFLOPs``, ``1.80 MFLOPs``; ``unknown`` for None."""
    if n is None:
        return "unknown"
    for unit, div in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= div:
            return f"{n / div:.3g} {unit}FLOPs"
    return f"{n} FLOPs"


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


def shape_label(t: Tensor | None, dims: dict[str, int] | None = None) -> str:
    """A tensor's shape as people read it: an exporter's expression shortened (``[1, 256, H/8, W/8]``, not
    ``floor(floor(floor(height/2 - 1/2)/2)/2) + 1``); a dim without a name of its own (shape inference's
    ``unk__12``, Paddle's ``p2o.DynamicDimension.0``, ``x[2]``) or a batch dim shown as its value at the dims in
    force where that is known; names people chose (``height``, ``sequence``) kept."""
    from splitscope.engine.onnxio.concrete import batch_like

    if t is None or t.shape is None:
        return "[?]" if t is None or t.at is None else f"[{', '.join(map(str, t.at))}]"
    at = t.at if t.at is not None and len(t.at) == len(t.shape) else None
    dims = dims or {}
    parts = []
    for k, d in enumerate(t.shape):
        if isinstance(d, int):
            parts.append(str(d))
        elif isinstance(d, str) and not (d.startswith("unk__") or _anonymous(d) or (batch_like(d, -1) and d in dims)):
            short = readable_dim(d)  # an expression too long to read is shown as its value, where known
            parts.append(str(at[k]) if short.endswith("…") and at is not None else short)
        elif isinstance(d, str) and d in dims:
            parts.append(str(dims[d]))
        else:
            known = at is not None
            parts.append(str(at[k]) if known else "?" if not isinstance(d, str) or d.startswith("unk__") else d)
    return f"[{', '.join(parts)}]"


def _anonymous(name: str) -> bool:
    from splitscope.engine.onnxio.concrete import ANONYMOUS

    return bool(ANONYMOUS.match(name))


def shape_at(t: Tensor | None) -> str:
    """The concrete shape at the dims in force, when it differs from :func:`shape_label` (``= [1, 256, 40, 40]``)."""
    if t is None or t.at is None:
        return ""
    concrete = f"[{', '.join(map(str, t.at))}]"
    return "" if concrete == shape_label(t) else concrete
