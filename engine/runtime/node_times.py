"""Per-node times of a model on ONNX Runtime: separate sessions with its profiler on, at the timed session's
optimisation, each run's nodes counted at the model's own nodes (fused or re-laid-out ones at the node they start
from); on CUDA with CUPTI, the device's own kernel times attributed to the nodes that launched them, and the device's
idle time between kernels said apart. Each session's figures are kept too: the spread across sessions."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from splitscope.engine.jobs import CancelToken, JobEvent, Progress, Sample
from splitscope.engine.model import GraphModel
from splitscope.engine.runtime import cupti_times
from splitscope.engine.runtime.cupti_times import KernelTrace, attribute, ort_intervals
from splitscope.engine.runtime.ort import blocked_owners, parse_ort_profile, to_model_nodes
from splitscope.engine.runtime.telemetry import telemetry_samples

PROFILE_CHUNKS = 4
"""Profiled iterations run in up to this many sessions (each a fresh profiler file), for live updates."""


@dataclass
class NodeTimes:
    """What the profiled sessions found."""

    per_us: dict[str, float] = field(default_factory=dict)
    """Microseconds by node (the model's name), summed over every profiled run."""
    ops: dict[str, str] = field(default_factory=dict)
    kept: int = 0
    """Profiled runs counted (each session's first, which allocates, is not)."""
    run_us: float = 0.0
    """The profiled runs' own wall time, summed."""
    device_us: float = 0.0
    """CUPTI: the device busy within the runs, summed."""
    gaps_us: float = 0.0
    """CUPTI: the device idle between kernels within the runs, summed."""
    fused: int = 0
    """Nodes ONNX Runtime fused or re-laid-out, counted at a model node."""
    sessions_ms: list[dict[str, float]] = field(default_factory=list)
    """Each session's ms a run, by node."""
    use_cupti: bool = False
    why_host: str = ""
    """Why the times are the host's (CUPTI not used), else ''."""
    nodes_of: dict[str, list[int]] = field(default_factory=dict)
    """The model nodes (indices) each key holds: the node itself, or the nodes an engine's layer fused."""


def node_times(
    be: Any,
    gm: GraphModel,
    model: Any,
    index_of: dict[str, int],
    feeds: dict[str, Any],
    profiled: int,
    cancel: CancelToken,
    sampler: Any = None,
    t0: float = 0.0,
) -> Generator[JobEvent, None, NodeTimes]:
    """``profiled`` runs of ``model`` (the model with every node named; ``index_of`` its node names' indices) in
    :data:`PROFILE_CHUNKS` sessions of ``be`` (an :class:`~splitscope.engine.runtime.ort.OrtBackend`); live
    ``nodes`` samples after each session, and the ``sampler``'s telemetry."""
    out = NodeTimes()
    producer_of = blocked_owners(gm.nodes, gm.graph.tensors, index_of)
    out.why_host = cupti_times.available() if be.cuda else "not on CUDA"
    out.use_cupti = be.cuda and not out.why_host
    chunk = max(1, -(-profiled // PROFILE_CHUNKS))
    done = 0
    while done < profiled:
        cancel.raise_if_cancelled()
        n = min(chunk, profiled - done)
        us, k = _one_session(be, model, feeds, n, out, cancel)
        us, moved = to_model_nodes(us, index_of, producer_of)  # fused or re-laid-out: to the model's node
        out.fused = max(out.fused, moved)
        if k:
            out.sessions_ms.append({key: v / k / 1000 for key, v in us.items()})
        for key, v in us.items():
            out.per_us[key] = out.per_us.get(key, 0.0) + v
        out.kept += k
        done += n
        yield Sample("nodes", float(done), {k_: v / out.kept / 1000 for k_, v in out.per_us.items()})
        yield Progress("nodes", done, profiled, f"Profiled iteration {done}/{profiled}")
        yield from telemetry_samples(sampler, t0)
    return out


def _one_session(
    be: Any, model: Any, feeds: dict[str, Any], n: int, out: NodeTimes, cancel: CancelToken
) -> tuple[dict[str, float], int]:
    """One profiled session of ``n`` runs (after one that allocates): microseconds by ONNX Runtime's node names (the
    device's, with CUPTI), and the runs counted; the runs' wall time, device time and ops go into ``out``."""
    psess = be.session(profile=True, model=model)
    prun = be.runner(psess, feeds)
    prun()  # the first run of a session allocates: profiled, then skipped
    trace = KernelTrace() if out.use_cupti else None
    if trace is not None:
        trace.__enter__()
    try:
        for _ in range(n):
            cancel.raise_if_cancelled()
            prun()
    finally:
        if trace is not None:
            trace.__exit__(None, None, None)
    prof = psess.end_profiling()
    start_ns = int(psess.get_profiling_start_time_ns()) if trace is not None else 0
    del prun, psess
    us, op_names, k, run_us = parse_ort_profile(prof, skip_runs=1)
    if trace is not None:  # the device's own kernel times, attributed to the nodes that launched them
        nodes_at, runs_at = ort_intervals(prof, start_ns, skip_runs=1)
        us, dev = attribute(trace.trace, nodes_at, runs_at)
        out.device_us += dev["device_us"]
        out.gaps_us += dev["gaps_us"]
    out.run_us += run_us
    out.ops.update(op_names)
    Path(prof).unlink(missing_ok=True)
    return us, k
