"""Names and typical values of the inputs' symbolic dims: pure string rules, no ONNX import (the window's dialogs
use them before any model is read; :mod:`splitscope.engine.onnxio.concrete` re-exports them)."""

from __future__ import annotations

import re


def input_dim_name(input_name: str, axis: int, param: str = "") -> str:
    """The name of an input's symbolic dim: its own, or for an unnamed one (no name, a negative value, or a
    placeholder such as Paddle's ``?`` that stands for a different size on each axis) ``x[2]``; the same in the
    analysis, profile and calibrate."""
    param = param.strip()
    if param and param not in ("?", "-1", "None", "unk"):
        return param
    return f"{input_name}[{axis}]"


ANONYMOUS = re.compile(r"(?i)^(unk__\d+|\?|-1|.*dynamicdimension\.\d+|.+\[\d+\]|dim_?\d+|s\d+)$")


def suggest_value(name: str, axis: int, rank: int) -> int:
    """A typical size for a dim without a value, to start from (the CLI's example, the dialogs' boxes): a
    sequence 128, an image's height or width 640 (the spatial axes of a 4-D input), a length (the second axis of
    a 2-D input) 128; else 1, shown for the user to change, never used unseen."""
    low = name.lower()
    if any(k in low for k in ("seq", "len", "token", "time", "sample")):
        return 128
    if "height" in low or "width" in low or low in ("h", "w") or (rank == 4 and axis in (2, 3)):
        return 640
    if rank == 2 and axis == 1:
        return 128
    return 1


def batch_like(name: str, axis: int, rank: int = 2) -> bool:
    """Whether a dim is a batch dim: named so (``batch``, ``batch_size``; a bare ``N`` or ``B`` only as a first
    axis), or an anonymous first axis of an input of two or more dims (a 1-D input's only axis is its length: a
    waveform, a token list)."""
    low = name.lower()
    if "batch" in low or low in ("num_images", "bs", "nb"):
        return True
    if axis > 0:
        return False
    return low in ("n", "b") or (rank >= 2 and bool(ANONYMOUS.match(name)))
