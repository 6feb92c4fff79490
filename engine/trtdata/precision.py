"""A layer's real precision, read from the formats of its tensors (``Format/Datatype`` prose such as
``"Thirty-two wide channel vectorized row major Int8 format"``)."""

from __future__ import annotations

import re

from splitscope.engine.trtdata.readers import Layer

_TOKENS = (
    ("bf16", "BF16"),
    ("fp16", "FP16"),
    ("half", "FP16"),
    ("fp32", "FP32"),
    ("float", "FP32"),
    ("fp8", "FP8"),
    ("e4m3", "FP8"),
    ("e5m2", "FP8"),
    ("fp4", "FP4"),
    ("uint8", "UINT8"),
    ("int8", "INT8"),
    ("int4", "INT4"),
    ("int32", "INT32"),
    ("int64", "INT64"),
    ("bool", "BOOL"),
)
COMPUTE = ("FP32", "TF32", "FP16", "BF16", "FP8", "FP4", "INT8", "INT4")
"""Precisions that carry the math (index and mask types do not decide a layer's precision)."""
ORDER = {p: k for k, p in enumerate(("FP32", "TF32", "BF16", "FP16", "FP8", "INT8", "FP4", "INT4"))}


def format_precision(fmt: str) -> str:
    """``FP32``, ``FP16``, ``INT8``, ... of one tensor format string ("" when it names none)."""
    low = fmt.lower()
    for tok, name in _TOKENS:
        if re.search(rf"(?<![a-z0-9]){tok}(?![0-9])", low):
            return name
    return ""


def layer_precision(layer: Layer) -> str:
    """The layer's precision: the one compute precision of its inputs and outputs, ``TF32`` for FP32 math on
    a TF32 tactic, ``mixed`` (e.g. ``mixed INT8→FP16``) when they differ, "" when the file does not say."""
    ins = [format_precision(t.format) for t in layer.inputs]
    outs = [format_precision(t.format) for t in layer.outputs]
    seen = [p for p in (*ins, *outs) if p in COMPUTE]
    if not seen:
        return ""
    kinds = sorted(set(seen), key=lambda p: ORDER.get(p, 99))
    if len(kinds) == 1:
        p = kinds[0]
        if p == "FP32" and "tf32" in layer.tactic.lower():
            return "TF32"
        return p
    a = next((p for p in ins if p in COMPUTE), kinds[0])
    b = next((p for p in outs if p in COMPUTE), kinds[-1])
    return f"mixed {a}→{b}" if a != b else "mixed " + "/".join(kinds)


def precision_family(p: str) -> str:
    """The colour key of a precision: the precision itself, or ``mixed``."""
    return "mixed" if p.startswith("mixed") else (p or "unknown")
