"""What a sweep's cells say together: the Pareto front of latency against accuracy, and the table as CSV, read from
the sweep's typed records (:mod:`splitscope.engine.sweep.results`)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from splitscope.engine.sweep.results import SweepCell, SweepDoc


def latency(cell: SweepCell) -> float | None:
    """A finished cell's median latency in ms (None when it did not run)."""
    return cell.p50_ms if cell.done else None


def accuracy(cell: SweepCell) -> float:
    """A finished cell's SNR against FP32 in dB (FP32 itself: infinite, it is the reference; a reduced precision
    whose accuracy was not measured: minus infinity, it never beats a measured one)."""
    if cell.snr_db is None:
        return float("inf") if cell.params.precision == "fp32" else float("-inf")
    return float("inf") if cell.snr_db >= 999 else cell.snr_db


def workload(cell: SweepCell) -> tuple[str, tuple[tuple[str, int], ...]]:
    """What a cell computes: its model at its dims (cells of one workload are comparable; batch 8 is not batch 1)."""
    return cell.params.model, tuple(sorted(cell.params.dims.items()))


def pareto(cells: Iterable[SweepCell]) -> set[int]:
    """Indices of the cells on the front of latency (lower is better) against accuracy (higher is better), per
    workload (model and dims): no other finished cell of the same workload is both as fast and as accurate, and
    better in one. Backends, precisions and targets compete on it."""
    done = [(c, lc, accuracy(c)) for c in cells if (lc := latency(c)) is not None]
    front: set[int] = set()
    for c, lc, ac in done:
        beaten = any(
            o is not c and workload(o) == workload(c) and lo <= lc and ao >= ac and (lo < lc or ao > ac)
            for o, lo, ao in done
        )
        if not beaten:
            front.add(c.index)
    return front


COLUMNS = (
    "model",
    "dims",
    "backend",
    "precision",
    "kept_in_float",
    "target",
    "status",
    "p50_ms",
    "mean_ms",
    "items_per_s",
    "snr_db",
    "pareto",
    "reused",
    "error",
)


def rows(sweep: SweepDoc) -> list[dict[str, Any]]:
    """One flat row a cell, the columns of :data:`COLUMNS` (the table, the CSV, the report)."""
    front = pareto(sweep.cells)
    return [
        {
            "model": c.params.model,
            "dims": c.params.dims_text(),
            "backend": c.params.backend,
            "precision": c.params.precision,
            "kept_in_float": len(c.params.keep),
            "target": c.params.target,
            "status": c.status,
            "p50_ms": c.p50_ms,
            "mean_ms": c.mean_ms,
            "items_per_s": c.items_per_s,
            "snr_db": c.snr_db,
            "pareto": c.index in front,
            "reused": c.reused,
            "error": c.error,
        }
        for c in sweep.cells
    ]


def to_csv(sweep: SweepDoc) -> str:
    """The sweep table as CSV text."""
    buf = io.StringIO()
    w: csv.DictWriter[str] = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    w.writeheader()
    for r in rows(sweep):
        w.writerow({k: "" if v is None else v for k, v in r.items()})
    return buf.getvalue()
