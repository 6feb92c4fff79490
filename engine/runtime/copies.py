"""The host-device copies a run implies: the model's inputs and outputs, and every partition-boundary tensor's round
trip, timed with CUDA on this GPU (pinned and pageable memory); without a GPU the document says why and holds no
figure, never a 0 that reads as measured."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from splitscope.engine.jobs import JobEvent, Progress
from splitscope.engine.runtime.device import NoGpu, copy_ms, measure_copies

if TYPE_CHECKING:
    from splitscope.engine.model import GraphModel


def measured_copies(
    gm: GraphModel, feeds: Mapping[str, Any], on_gpu: bool, gpu: Any
) -> Generator[JobEvent, None, dict[str, Any]]:
    """The model's input/output copies and every partition-boundary tensor's round trip, timed with CUDA on
    this GPU (pinned and pageable). Without a GPU (or on the CPU) ``not_measured`` says why, and no figure is
    filled in."""
    copies: dict[str, Any] = {}
    in_bytes = int(sum(a.nbytes for a in feeds.values()))
    out_bytes = _output_bytes(gm)
    boundary = [(t.name, int(t.bytes or 0)) for p in gm.partitions for t in p.boundary_tensors]
    copies["inputs_bytes"], copies["outputs_bytes"] = in_bytes, out_bytes
    if not on_gpu:
        copies["not_measured"] = "the model ran on the CPU: no host-device copies to time"
        return copies
    try:
        sizes = sorted({max(in_bytes, 1), max(out_bytes, 1), *(b for _, b in boundary if b)})[:12]
        yield Progress("copies", 0, 0, f"Timing {len(sizes)} copy sizes, pinned and pageable")
        table = measure_copies(sizes)
    except NoGpu as e:
        copies["not_measured"] = f"no GPU to copy to: {e}"
        return copies
    copies["measured"] = table
    for mem in ("pinned", "pageable"):
        copies[f"io_{mem}_ms"] = round(copy_ms(in_bytes, table, "h2d", mem) + copy_ms(out_bytes, table, "d2h", mem), 4)
    copies["boundary"] = [
        {
            "tensor": name,
            "bytes": b,
            "round_trip_pinned_ms": round(copy_ms(b, table, "d2h", "pinned") + copy_ms(b, table, "h2d", "pinned"), 4),
        }
        for name, b in boundary
    ]
    if gpu is not None and gpu.pcie_peak:
        big = max(table, key=lambda r: r["bytes"])
        copies["link_peak_gbps"] = round(gpu.pcie_peak / 1e9, 1)
        copies["pinned_share_of_peak"] = round(big["h2d_pinned_gbps"] * 1e9 / gpu.pcie_peak, 3)
    return copies


def copy_figures(gm: GraphModel, copies: dict[str, Any], *, on_device: bool) -> tuple[float | None, float | None]:
    """(I/O copy ms, boundary copy ms) for the verdict: measured figures, 0 where there is nothing to copy
    (a CPU run has no I/O copies; a model of one partition no boundary), ``None`` where unmeasured."""
    measured = bool(copies.get("measured"))
    io = float(copies.get("io_pageable_ms", 0.0)) if measured and on_device else (None if on_device else 0.0)
    if not any(p.boundary_tensors for p in gm.partitions):
        return io, 0.0
    boundary = sum(b["round_trip_pinned_ms"] for b in copies.get("boundary", [])) if measured else None
    return io, boundary


def _output_bytes(gm: GraphModel) -> int:
    total = 0
    for name in gm.graph.outputs:
        t = gm.graph.tensors.get(name)
        b = t.nbytes(gm.dims) if t is not None else None
        total += b or 0
    return total
