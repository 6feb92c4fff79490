"""Symbolic dims as exporters write them: plain names (``height``) and expressions over them
(``floor(height/2 - 1/2) + 1``), evaluated safely (no ``eval``) at the values in force, and shortened for labels
(``H/8``)."""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Mapping
from functools import lru_cache

_FUNCS = {"floor": math.floor, "ceil": math.ceil, "Max": max, "Min": min, "max": max, "min": min, "abs": abs}
_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}


@lru_cache(maxsize=4096)
def _parse(expr: str) -> ast.expr | None:
    if len(expr) > 2000 or not re.search(r"[-+*/()]", expr):
        return None  # a plain name, or too long to be an exporter's expression
    try:
        tree = ast.parse(expr.replace("^", "**"), mode="eval")
    except (SyntaxError, ValueError):
        return None
    return tree.body


_LIMIT = 2.0**62
"""No dim, and no step on the way to one, is larger: a crafted expression (``((2**8)**8)**8...``) cannot grow
Python's unbounded integers until memory runs out."""


def _eval(node: ast.expr, dims: Mapping[str, int]) -> float:
    v = _eval_step(node, dims)
    if not -_LIMIT <= v <= _LIMIT:
        raise ValueError("too large")
    return v


def _eval_step(node: ast.expr, dims: Mapping[str, int]) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        return dims[node.id]  # KeyError: a dim without a value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand, dims)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Pow):
            b, e = _eval(node.left, dims), _eval(node.right, dims)
            if abs(e) > 8:
                raise ValueError("exponent")
            return b**e
        fn = _BINOPS.get(type(node.op))
        if fn is not None:
            return fn(_eval(node.left, dims), _eval(node.right, dims))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCS and not node.keywords:
        return _FUNCS[node.func.id](*(_eval(a, dims) for a in node.args))
    raise ValueError(ast.dump(node)[:60])


def eval_dim(expr: str, dims: Mapping[str, int]) -> int | None:
    """The value of a symbolic dim: its own value in ``dims``, or an exporter's expression over named dims
    (``floor(height/2 - 1/2) + 1``) evaluated; None when it names a dim without a value or is no expression."""
    v = dims.get(expr)
    if v is not None:
        return int(v)
    tree = _parse(expr)
    if tree is None:
        return None
    try:
        r = _eval(tree, dims)
        if not math.isfinite(r) or r < 0 or abs(r - round(r)) > 1e-6:
            return None
        return round(r)
    except (KeyError, ValueError, TypeError, ZeroDivisionError, OverflowError):
        return None


def readable_dim(expr: str, limit: int = 24) -> str:
    """A short label for a symbolic dim: ``floor(floor(height/2 - 1/2)/2) + 1`` reads ``height/4``."""
    tree = _parse(expr)
    if tree is None:
        return expr if len(expr) <= limit else expr[: limit - 1] + "…"
    names = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in _FUNCS})
    if len(names) == 1:
        name = names[0]
        big = 1 << 20
        at = eval_dim(expr, {name: big})
        if at:
            ratio = big / at
            if abs(ratio - round(ratio)) < 1e-3 and round(ratio) >= 1:
                r = round(ratio)
                short = _abbrev(name)
                return short if r == 1 else f"{short}/{r}"
            mult = at / big
            if abs(mult - round(mult)) < 1e-3:
                return f"{round(mult)}·{_abbrev(name)}"
    text = " ".join(expr.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _abbrev(name: str) -> str:
    return {"height": "H", "width": "W", "batch": "N", "sequence": "S", "sequence_length": "S"}.get(name, name)
