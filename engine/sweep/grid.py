"""A sweep's grid: its cells, each a profile at one model, dims, backend, precision and target, with its key.

A cell's key is the hash of the model's content, the cell's parameters and Splitscope's version: a sweep run again
reuses every cell whose key has a finished result (:mod:`splitscope.engine.sweep.store`), and a changed model, a new
parameter or a new version runs again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from splitscope.engine.errors import SplitscopeError

BACKENDS = ("ort-cpu", "ort-cuda", "tensorrt", "rtx")
PRECISIONS = ("fp32", "fp16", "bf16", "int8", "fp8")
GPU_BACKENDS = frozenset({"ort-cuda", "tensorrt", "rtx"})


@dataclass(frozen=True)
class Cell:
    """One profile of the sweep."""

    model: str
    dims: dict[str, int] = field(default_factory=dict)
    backend: str = "ort-cpu"
    precision: str = "fp32"
    target: str = "local"
    iterations: int = 50
    warmup: int = 5
    samples: int = 8
    """Calibration samples for a reduced precision (random data: the latency is what a sweep compares)."""
    keep: tuple[str, ...] = ()
    """Nodes left in float in a reduced precision (a candidate of a precision search: the most sensitive first)."""

    @property
    def needs_gpu(self) -> bool:
        """Whether the cell takes a GPU of this cluster (Ray gives it one of its own); an SSH target's cell uses the
        target's."""
        return self.target == "local" and (self.backend in GPU_BACKENDS or self.precision == "fp8")

    def params(self) -> dict[str, Any]:
        """The cell's parameters as saved and shown (the model as its path)."""
        return asdict(self)

    def dims_text(self) -> str:
        """``batch=8 seq=128``."""
        return " ".join(f"{k}={v}" for k, v in sorted(self.dims.items()))

    def label(self) -> str:
        """``model.onnx batch=8 ort-cpu int8`` (the target when it is not this machine)."""
        dims = self.dims_text()
        where = "" if self.target == "local" else f" @{self.target.split('?')[0]}"
        kept = f"+{len(self.keep)} in float" if self.keep else ""
        return " ".join(s for s in (Path(self.model).name, dims, self.backend, self.precision, kept) if s) + where


def cell_key(cell: Cell, model_hash: str, version: str) -> str:
    """The cell's key: model content, parameters (the path aside) and Splitscope's version."""
    p = cell.params()
    p.pop("model")
    blob = json.dumps({"model": model_hash, "params": p, "version": version}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def parse_dim_values(items: list[str]) -> dict[str, list[int]]:
    """``["batch=1,8,32", "seq=128"]`` -> ``{"batch": [1, 8, 32], "seq": [128]}``.

    Raises
    ------
    SplitscopeError
        For a value that is not NAME=INT[,INT...] with positive integers.
    """
    out: dict[str, list[int]] = {}
    for item in items:
        name, eq, values = item.partition("=")
        try:
            nums = [int(v) for v in values.split(",") if v.strip()]
        except ValueError:
            nums = []
        if not eq or not name.strip() or not nums or min(nums) < 1:
            raise SplitscopeError(f"--dim {item!r}: give NAME=INT[,INT...] with positive integers (batch=1,8,32).")
        out[name.strip()] = list(dict.fromkeys(nums))
    return out


def candidates(ranking: list[str], count: int) -> list[tuple[str, ...]]:
    """A precision search's candidates: nothing kept in float, then the 1, 2, ... ``count`` most sensitive nodes."""
    return [tuple(ranking[:k]) for k in range(min(count, len(ranking)) + 1)]


def expand(
    models: list[str],
    dims: dict[str, list[int]],
    backends: list[str],
    precisions: list[str],
    targets: list[str] | None = None,
    keeps: list[tuple[str, ...]] | None = None,
    **common: Any,
) -> list[Cell]:
    """Every combination, models outermost (the order the table shows before any sort); ``keeps``: the candidates
    of a precision search, each a cell of every reduced precision (FP32 keeps nothing in float: one cell)."""
    for b in backends:
        if b not in BACKENDS:
            raise SplitscopeError(f"--backend {b!r}: one of {', '.join(BACKENDS)}.")
    for p in precisions:
        if p not in PRECISIONS:
            raise SplitscopeError(f"--precision {p!r}: one of {', '.join(PRECISIONS)}.")
    names = sorted(dims)
    combos = list(itertools.product(*(dims[n] for n in names))) or [()]
    # Absolute paths: each cell runs in a child process of its own working folder (and on Ray's workers).
    cells = [
        Cell(str(Path(m).expanduser().resolve()), dict(zip(names, combo, strict=True)), b, p, t, **common)
        for m in models
        for combo in combos
        for b in backends
        for p in precisions
        for t in targets or ["local"]
    ]
    return with_keeps(cells, keeps) if keeps else cells


def with_keeps(cells: list[Cell], keeps: list[tuple[str, ...]]) -> list[Cell]:
    """Each reduced-precision cell once per candidate of a precision search (FP32 keeps nothing in float: it stays
    one cell)."""
    return [replace(c, keep=k) for c in cells for k in (keeps if c.precision != "fp32" else [()])]
