"""Each node's measured time against the speed of light of its FLOPs and bytes, and the run's verdict.

A node's *speed-of-light* time is the larger of ``FLOPs / peak FLOP/s`` (for its dtype) and ``bytes /
peak bandwidth``: no kernel can beat it. A node is *launch-bound* when its work is so small that
fixed costs (kernel launch, scheduling, the runtime's own bookkeeping) dominate: its speed-of-light
time is under :data:`LAUNCH_SOL_MS` and under a quarter of what it took, and it took under
:data:`LAUNCH_BOUND_MS` (without the device's peaks: it took under :data:`LAUNCH_NO_PEAKS_MS`). Otherwise it is
*compute-bound* when its arithmetic intensity (FLOPs per byte) is at or past the ridge point (peak
FLOP/s over peak bandwidth), else *memory-bound*. For a plugin node the gap between the two times is
the most a custom kernel could save.
"""

from __future__ import annotations

from typing import Any

LAUNCH_BOUND_MS = 0.1
LAUNCH_SOL_MS = 0.005
"""Less real work than this (5 µs at the device's peaks) cannot pay for a launch: such a node is overhead."""
LAUNCH_NO_PEAKS_MS = 0.02
DTYPE_PEAK = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float64": "fp64",
    "int8": "int8",
    "uint8": "int8",
    "float8e4m3fn": "fp8",
    "float8e5m2": "fp8",
}


def classify(
    ms: float, flops: int | None, nbytes: int | None, dtype: str | None, peak_flops: dict[str, float], peak_bw: float
) -> dict[str, Any]:
    """``{class, sol_ms, achieved_flops, achieved_bw, intensity, headroom_ms}`` for one node."""
    out: dict[str, Any] = {
        "class": "unknown",
        "sol_ms": None,
        "achieved_flops": None,
        "achieved_bw": None,
        "intensity": None,
        "headroom_ms": None,
    }
    if ms <= 0:
        return out
    s = ms / 1000.0
    f, b = flops or 0, nbytes or 0
    out["achieved_flops"] = f / s if f else 0.0
    out["achieved_bw"] = b / s if b else 0.0
    out["intensity"] = f / b if b else None
    pf = peak_flops.get(DTYPE_PEAK.get(dtype or "float32", "fp32")) or peak_flops.get("fp32", 0.0)
    if not pf or not peak_bw:
        out["class"] = "launch-bound" if ms < LAUNCH_NO_PEAKS_MS else "unknown"
        return out
    sol = max(f / pf, b / peak_bw) * 1000.0
    out["sol_ms"] = sol
    out["headroom_ms"] = max(ms - sol, 0.0)
    if ms < LAUNCH_BOUND_MS and sol < LAUNCH_SOL_MS and sol < 0.25 * ms:
        out["class"] = "launch-bound"
    elif b and f / b >= pf / peak_bw:
        out["class"] = "compute-bound"
    else:
        out["class"] = "memory-bound"
    return out


LAUNCH_SHARE = 0.2
"""Launch overhead (the device idle between kernels) above this share of the latency makes a model graph-bound."""


def verdict(
    latency_ms: float,
    per_node: list[dict[str, Any]],
    io_copy_ms: float | None,
    boundary_copy_ms: float | None,
    plugin_ms: float,
    cover: float | None = None,
    launch_share: float | None = None,
) -> dict[str, Any]:
    """Graph-, kernel- or transfer-bound, with the numbers that decide it and the fix that fits.

    - *transfer-bound*: the model's input/output copies plus the copies its partition boundaries force are
      30% or more of the end-to-end time;
    - *graph-bound*: otherwise, when launches cost more than a fifth of the latency (``launch_share``: the device
      idle between kernels, from CUPTI's records, on CUDA), when launch-bound nodes (many small kernels) take
      half the node time or more, or when the nodes' own times cover under half of a profiled run (``cover``:
      the rest is the runtime's gaps between nodes);
    - *kernel-bound*: the rest: a few heavy nodes hold the time.

    A copy figure of ``None`` was not measured: it stays ``None`` in the numbers (never a 0 that reads as
    measured), and the verdict says that transfers were not weighed.
    """
    node_ms = sum(n["ms"] for n in per_node)
    small = sum(n["ms"] for n in per_node if n.get("class") == "launch-bound")
    measured = io_copy_ms is not None and boundary_copy_ms is not None
    transfer = (io_copy_ms or 0.0) + (boundary_copy_ms or 0.0)
    end_to_end = max(latency_ms + transfer, 1e-9)
    if cover is None:
        cover = node_ms / latency_ms if latency_ms > 0 else 0.0

    def r4(x: float | None) -> float | None:
        return None if x is None else round(x, 4)

    numbers = {
        "latency_ms": round(latency_ms, 4),
        "node_ms": round(node_ms, 4),
        "node_cover": round(cover, 3),
        "launch_bound_ms": round(small, 4),
        "launch_share": r4(launch_share),
        "launch_idle_ms": r4(launch_share * latency_ms) if launch_share is not None else None,
        "launch_bound_nodes": sum(1 for n in per_node if n.get("class") == "launch-bound"),
        "io_copy_ms": r4(io_copy_ms),
        "boundary_copy_ms": r4(boundary_copy_ms),
        "copies_measured": measured,
        "transfer_share": round(transfer / end_to_end, 3) if measured else None,
        "plugin_ms": round(plugin_ms, 4),
        "split_cost_share": round((plugin_ms + (boundary_copy_ms or 0.0)) / end_to_end, 3)
        if boundary_copy_ms is not None
        else None,
    }
    top = sorted(per_node, key=lambda n: -n["ms"])[:3]
    if transfer / end_to_end >= 0.3:
        kind = "transfer-bound"
        why = (
            f"copies take {transfer / end_to_end:.0%} of the end-to-end time ({io_copy_ms or 0.0:.3f} ms of "
            f"inputs and outputs, {boundary_copy_ms or 0.0:.3f} ms at partition boundaries)"
        )
        fix = (
            "pin host memory and overlap copies with compute; move pre/post-processing onto the GPU; remove "
            "partition boundaries (a plugin for the op that splits the engine)"
        )
    elif launch_share is not None and launch_share > LAUNCH_SHARE:
        kind = "graph-bound"
        why = (
            f"launches cost {launch_share:.0%} of the latency: the device idles between kernels "
            f"{launch_share * latency_ms:.3f} ms a run while the host launches the next"
        )
        fix = (
            "delegate to TensorRT: its layer fusion launches fewer, larger kernels; or run the model as a CUDA graph "
            "(ONNX Runtime's enable_cuda_graph), which launches it all at once"
        )
    elif node_ms and (small / node_ms >= 0.5 or cover < 0.5):
        kind = "graph-bound"
        why = (
            f"{numbers['launch_bound_nodes']} small nodes take {small / node_ms:.0%} of the node time"
            if small / node_ms >= 0.5
            else f"the nodes' own times cover only {cover:.0%} of the latency: the rest is gaps between them"
        )
        fix = "delegate to TensorRT: its layer fusion and CUDA graphs remove the per-node overhead"
    else:
        kind = "kernel-bound"
        names = ", ".join(f"{n['name']} ({n['ms']:.3f} ms)" for n in top)
        why = f"a few heavy nodes hold the time: {names}" if top else "no per-node times"
        fix = (
            "tune or write the kernels of the heaviest nodes; for delegated nodes, try lower precision "
            "(FP16/FP8/INT8 with Q/DQ) in TensorRT"
        )
    if not measured:
        why += "; copies were not measured, so transfers were not weighed"
    return {"verdict": kind, "why": why, "fix": fix, "numbers": numbers}


def time_split(prof: dict[str, Any]) -> list[tuple[str, float | None]]:
    """Where a profile's time goes, the one split the report and the board show: graph (the device idle between
    kernels where it was measured, and launch-bound nodes), kernels and data movement, in ms; data movement is
    ``None`` when the copies were not measured."""
    num = (prof.get("verdict") or {}).get("numbers") or {}
    node = float(num.get("node_ms") or 0.0)
    small = float(num.get("launch_bound_ms") or 0.0)
    launch = small + float(num.get("launch_idle_ms") or 0.0)
    io, boundary = num.get("io_copy_ms"), num.get("boundary_copy_ms")
    measured = num.get("copies_measured", io is not None and boundary is not None)
    copies = float(io or 0.0) + float(boundary or 0.0) if measured else None
    return [("graph (launches)", launch), ("kernels", max(node - small, 0.0)), ("data movement", copies)]


def time_split_text(prof: dict[str, Any]) -> str:
    """The split in one line of shares: 'graph 12% · kernels 80% · data movement 8%' (or 'not measured')."""
    parts = time_split(prof)
    total = max(sum(v for _, v in parts if v is not None), 1e-12)
    return " · ".join(
        f"{label.split(' (')[0]} {v / total:.0%}" if v is not None else f"{label} not measured" for label, v in parts
    )
