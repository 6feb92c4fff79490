"""A precision search as a sweep: rank the quantized nodes by how much keeping each in float gains (a sensitivity
pass, as ``calibrate --sensitivity``), then make each reduced-precision cell once with nothing kept and once with
each of the 1..K most sensitive kept in float (:func:`splitscope.engine.sweep.grid.candidates`).

The ranking runs in a child process (the window's worker never holds the interpreter through it; Cancel kills it)."""

from __future__ import annotations

import tempfile
from collections.abc import Generator
from pathlib import Path

from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, LogLine, Progress
from splitscope.engine.sweep.grid import Cell, candidates, with_keeps


def rank_nodes(
    model: str, precision: str, dims: dict[str, int], samples: int, cancel: CancelToken | None = None
) -> Generator[JobEvent, None, list[str]]:
    """The quantized nodes of ``model`` at ``precision`` and ``dims``, the most sensitive first."""
    from splitscope.engine.process import JobProcess

    with tempfile.TemporaryDirectory(prefix="splitscope-search-") as tmp:
        args = {
            "model": model,
            "out": str(Path(tmp) / "ranking.onnx"),
            "data": "random",
            "precision": precision,
            "samples": samples,
            "dims": dims,
            "sensitivity": True,
        }
        res = yield from JobProcess("calibrate", args).events(cancel or CancelToken())
    sensitivity = (res.get("search") or {}).get("sensitivity") or []
    return [s["node"] for s in sorted(sensitivity, key=lambda s: -s["gain_db"])]


def search_cells(
    cells: list[Cell], count: int, cancel: CancelToken | None = None
) -> Generator[JobEvent, None, tuple[list[Cell], list[str]]]:
    """The cells of a precision search over ``cells`` (see the module's note) and the ranking it used, ranked on
    the first cell's model at its dims and the first reduced precision.

    Raises
    ------
    SplitscopeError
        When no cell has a reduced precision.
    """
    low = next((c for c in cells if c.precision != "fp32"), None)
    if low is None:
        raise SplitscopeError("A precision search needs a reduced precision (int8, fp8, fp16 or bf16).")
    yield Progress("search", 0, 1, f"Ranking the nodes of {Path(low.model).name} at {low.precision}")
    ranking = yield from rank_nodes(low.model, low.precision, low.dims, low.samples, cancel)
    if not ranking:
        raise SplitscopeError(f"{Path(low.model).name} has no quantized node to keep in float at {low.precision}.")
    yield LogLine(search_note(ranking, count))
    return with_keeps([c for c in cells if c.keep == ()], candidates(ranking, count)), ranking


def search_note(ranking: list[str], count: int) -> str:
    """What a search ranked, for the log and the terminal."""
    return f"precision search: {len(ranking)} quantized nodes ranked; the {count} most sensitive: " + ", ".join(
        ranking[:count]
    )
