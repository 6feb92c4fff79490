"""The profile job: where does the time of one inference go?

A job generator (:mod:`splitscope.engine.jobs`): it yields progress, one :class:`Sample` per timed
iteration (series ``latency``), telemetry samples (series ``telemetry``) and per-node times as profiled
iterations arrive (series ``nodes``), and returns a :class:`ProfileResult`. Order of work:

1. the model's split (the analysis, for FLOPs, bytes, plugin nodes and partition boundaries);
2. the feeds (:mod:`.inputs`), checked before anything runs;
3. warm-up iterations, reported apart; timed iterations with no profiler attached;
4. profiled iterations in separate sessions at the timed level, in chunks, for per-node times;
5. on a GPU: copies of the real inputs and outputs and of every partition-boundary tensor, pinned and
   pageable; the roofline of each node against the device's peaks; NVML telemetry throughout;
6. the verdict (:func:`.roofline.verdict`).
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import onnx
from splitscope.engine.codec import stamp
from splitscope.engine.jobs import CancelToken, JobEvent, LogLine, Progress
from splitscope.engine.model import GraphModel, Status
from splitscope.engine.runtime.copies import copy_figures
from splitscope.engine.runtime.device import NoGpu, gpu_info, now
from splitscope.engine.runtime.feeds import input_rules
from splitscope.engine.runtime.inputs import dims_from_feeds, file_feeds, input_specs, random_feeds
from splitscope.engine.runtime.node_times import NodeTimes
from splitscope.engine.runtime.roofline import classify, verdict
from splitscope.engine.runtime.runner import open_runner
from splitscope.engine.runtime.stats import latency_stats, throughput
from splitscope.engine.runtime.telemetry import NvmlSampler
from splitscope.engine.text import plural

if TYPE_CHECKING:
    import pandas

UNVERIFIED = "not yet run against a real engine"
"""What the TensorRT backends say of themselves until a real engine has confirmed their figures."""


@dataclass(frozen=True, slots=True)
class ProfileResult:
    """Everything a profile found; :meth:`to_json` is the CLI's ``--json`` and the saved session file."""

    model: str
    backend: str
    device: str
    iterations: int
    warmup: int
    dims: dict[str, int]
    latency_ms: dict[str, float]
    warmup_ms: list[float]
    samples_ms: list[float]
    throughput: dict[str, float]
    per_node: list[dict[str, Any]]
    per_op: list[dict[str, Any]]
    copies: dict[str, Any]
    split_cost: dict[str, Any]
    verdict: dict[str, Any]
    gpu: dict[str, Any] | None = None
    telemetry: dict[str, Any] | None = None
    telemetry_series: list[dict[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    node_cover: float = 0.0
    """Share of a profiled run's time that the per-node times account for."""
    profiled_run_ms: float = 0.0
    started: str = ""
    seconds: float = 0.0
    verified: bool = True
    """False for a backend that has never run against a real engine (the TensorRT ones, until one does)."""
    inputs: dict[str, str] = field(default_factory=dict)
    """Per input, where its values came from: the user's file, or the rule its random values were drawn by."""
    node_times: str = "host"
    """``device`` (CUPTI's kernel records, attributed by their launches) or ``host`` (ONNX Runtime's profiler)."""
    cuda_graph_ms: dict[str, float] | None = None
    """On CUDA, the latency of the same run captured as one CUDA graph (:mod:`~splitscope.engine.runtime.cudagraph`);
    None where it was not measured (not on CUDA, or ONNX Runtime could not capture it: the notes say why)."""

    def to_json(self) -> dict[str, Any]:
        """Plain JSON, with the model file's content key (which model it is of, whatever its nodes are named)."""
        from splitscope.engine.runtime.store import content_key

        doc = {k: getattr(self, k) for k in self.__slots__}  # type: ignore[attr-defined]
        doc["model_key"] = content_key(self.model)
        return stamp("profile", doc)

    def to_pandas(self) -> pandas.DataFrame:
        """One row per timed node: name, op type, time, share of the latency, roofline class (pandas needed)."""
        from splitscope.engine.frames import frame

        return frame(self.per_node)


def _dtype_of(gm: GraphModel, i: int) -> str | None:
    n = gm.nodes[i]
    for name in (*n.inputs, *n.outputs):
        t = gm.graph.tensors.get(name) if name else None
        if t is not None and t.dtype and not t.is_initializer:
            return t.dtype
    return None


def profile(
    path: str | Path,
    gm: GraphModel,
    *,
    backend: str = "ort-cpu",
    iterations: int = 100,
    warmup: int = 10,
    profiled: int = 20,
    dims: dict[str, int] | None = None,
    input_file: str | Path | None = None,
    seed: int = 0,
    telemetry: bool = True,
    custom_ops: list[str] | None = None,
    cancel: CancelToken | None = None,
    session_factory: Any = None,
) -> Generator[JobEvent, None, ProfileResult]:
    """Profile ``path`` (already analysed as ``gm``) on ``backend``. See the module docstring.

    ``session_factory`` replaces :class:`splitscope.engine.runtime.trt.EngineSession` for the TensorRT
    backends (the tests' fake, where no engine can execute).
    """
    cancel = cancel or CancelToken()
    path = Path(path)
    t_start = time.perf_counter()
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    notes: list[str] = []
    yield Progress("inputs", 0, 0, "Preparing inputs")
    feeds, dims, inputs, batch = _feeds(path, gm, dims, input_file, seed, notes)
    runner = open_runner(path, backend, custom_ops=custom_ops, session_factory=session_factory)
    gpu = None
    sampler = NvmlSampler() if telemetry and runner.on_device else None
    try:
        if runner.on_device:
            try:
                gpu = gpu_info(0)
            except NoGpu as e:
                notes.append(f"no GPU peaks: {e}")
        if sampler is not None:
            why = sampler.start()
            if why:
                notes.append(f"no telemetry: {why}")
                sampler = None
        yield from runner.open(dims, cancel)
        runner.feeds(feeds)
        cancel.raise_if_cancelled()
        t0 = now()
        timing = yield from runner.time(warmup, iterations, cancel, t0, sampler)
        nt = yield from runner.profile_nodes(gm, profiled, cancel, sampler, t0)
        copies = yield from runner.copies(gm, feeds, gpu, runner.on_device or telemetry)
    finally:
        if sampler is not None:
            sampler.stop()
        runner.close()
    notes.extend(runner.notes)
    times = timing.times
    mean = float(np.mean(times)) if times else 0.0
    per_node, node_total = _node_rows(gm, nt, runner.engine, gpu)
    io_ms, boundary_ms = copy_figures(gm, copies, on_device=runner.on_device)
    split_cost, plugin_ms = _split_cost(gm, per_node, copies, mean, io_ms, boundary_ms)
    if runner.engine:
        cover = node_total / mean if mean else 0.0
        split_cost["assumes"] = "plugin layers run inside the engine" + (
            "; " + split_cost["assumes"] if boundary_ms is not None else ""
        )
    else:
        cover = _cover(nt, node_total, mean, runner.on_device, notes)
    graph = latency_stats(timing.graph_ms) if timing.graph_ms else None
    notes.extend(_graph_notes(graph, times, timing.no_graph))
    # On CUDA with the device's own times, the rest of the latency is the device idle between kernels: launches.
    launch_share = max(1.0 - cover, 0.0) if nt.use_cupti and cover else None
    v = verdict(mean, per_node, io_ms, boundary_ms, plugin_ms, cover, launch_share)
    if graph is not None:
        v["numbers"]["cuda_graph_ms"] = round(graph["p50"], 4)
    if runner.engine:
        notes.insert(
            0,
            f"the {backend} backend is {UNVERIFIED}: its figures come from code written to TensorRT's "
            "documented API and tested against a fake engine",
        )
    else:
        notes.extend(n for n in (_profiled_note(per_node, nt, mean),) if n)
    series = list(sampler.samples) if sampler is not None else []
    yield LogLine(f"{backend}: mean {mean:.3f} ms over {iterations} iterations; verdict {v['verdict']}")
    return ProfileResult(
        model=str(path),
        backend=backend,
        device=_device_name(gpu, runner),
        iterations=iterations,
        warmup=warmup,
        dims=dims,
        latency_ms=latency_stats(times),
        warmup_ms=[round(x, 4) for x in timing.warm],
        samples_ms=[round(x, 4) for x in times],
        throughput=throughput(mean, batch),
        per_node=per_node,
        per_op=_per_op(per_node),
        copies=copies,
        split_cost=split_cost,
        verdict=v,
        gpu=gpu.to_json() if gpu is not None else None,
        telemetry=sampler.summary() if sampler is not None else None,
        telemetry_series=[{k: round(val, 3) for k, val in s.items()} for s in series[:: max(1, len(series) // 2000)]],
        notes=notes,
        node_cover=round(min(cover, 9.99) if runner.engine else cover, 4),
        profiled_run_ms=round(node_total if runner.engine else nt.run_us / nt.kept / 1000 if nt.kept else 0.0, 4),
        started=started,
        seconds=round(time.perf_counter() - t_start, 3),
        verified=runner.verified,
        inputs=inputs,
        node_times="device" if nt.use_cupti else "host",
        cuda_graph_ms=graph,
    )


def _feeds(
    path: Path, gm: GraphModel, dims: dict[str, int] | None, input_file: str | Path | None, seed: int, notes: list[str]
) -> tuple[dict[str, np.ndarray], dict[str, int], dict[str, str], int | None]:
    """The feeds (the user's file, or random values by each input's rule), the dims in force, where each input's
    values came from, and the batch (the first input's first dim where it is symbolic); unusual rules go in
    ``notes``."""
    proto = onnx.load(str(path), load_external_data=False)
    specs = input_specs(proto)
    dims = {**(gm.dims if gm is not None else {}), **(dims or {})}
    if input_file is not None:
        feeds = file_feeds(Path(input_file), specs)
        dims.update(dims_from_feeds(specs, feeds))
        inputs = {s.name: f"from {Path(input_file).name}" for s in specs}
    else:
        rules = input_rules(proto)
        del proto
        feeds = random_feeds(specs, dims, seed, rules)
        inputs = {name: rule.text() for name, rule in rules.items()}
        notes.extend(
            f"input '{name}': {rule.text()}"
            for name, rule in rules.items()
            if rule.kind not in ("normal", "small-int", "bool")
        )
    batch = None
    if specs and specs[0].dims and isinstance(specs[0].dims[0], str):
        batch = int(feeds[specs[0].name].shape[0])
    return feeds, dims, inputs, batch


def _device_name(gpu: Any, runner: Any) -> str:
    if gpu is not None:
        return f"{gpu.name} (cc {gpu.compute_capability[0]}.{gpu.compute_capability[1]})"
    return "GPU" if runner.engine else "CUDA GPU" if runner.on_device else "CPU"


def _node_rows(gm: GraphModel, nt: NodeTimes, engine: bool, gpu: Any) -> tuple[list[dict[str, Any]], float]:
    """The per-node table (ms a run, the model's status, FLOPs and bytes, the roofline class), slowest first, ranked
    with its spread across sessions; and the node time in all. An engine's rows are its layers, each with the ONNX
    nodes it fused (their FLOPs and bytes summed; a plugin among them makes the layer a plugin's)."""
    peaks = gpu.peak_flops if gpu is not None else {}
    bw = gpu.peak_bandwidth if gpu is not None else 0.0
    per_node: list[dict[str, Any]] = []
    for key, us in nt.per_us.items():
        ms = us / nt.kept / 1000 if nt.kept else 0.0
        held = [i for i in nt.nodes_of.get(key, ()) if i < len(gm.nodes)]
        node = gm.nodes[held[0]] if held else None
        row: dict[str, Any] = {"name": key, "index": held[0] if held else None}
        if engine:
            row["onnx_nodes"] = [gm.nodes[i].name for i in held]
            flops = sum(gm.nodes[i].flops or 0 for i in held) or None
            nbytes = sum(gm.nodes[i].bytes or 0 for i in held) or None
            status = "plugin" if any(gm.nodes[i].status is Status.PLUGIN for i in held) else "delegate"
        else:
            flops, nbytes = (node.flops, node.bytes) if node else (None, None)
            status = node.status.value if node else "runtime"
        op = node.op_type if node else nt.ops.get(key, "layer" if engine else "")
        row.update({"op_type": op, "ms": round(ms, 5), "share": 0.0, "status": status, "flops": flops, "bytes": nbytes})
        row.update(classify(ms, flops, nbytes, _dtype_of(gm, held[0]) if held else None, peaks, bw))
        if not peaks and not engine:
            row["sol_ms"] = row["headroom_ms"] = None
        per_node.append(row)
    node_total = _rank(per_node)
    _spread_and_ties(per_node, nt.sessions_ms)
    return per_node, node_total


def _cover(nt: NodeTimes, node_total: float, mean: float, cuda: bool, notes: list[str]) -> float:
    """How much of a run the nodes' times cover: of a profiled run (host times), or with CUPTI the kernels' device
    time against the timed latency (the rest: the device idle between kernels); said in ``notes``."""
    run_ms = nt.run_us / nt.kept / 1000 if nt.kept else 0.0
    cover = node_total / run_ms if run_ms else 0.0
    if nt.use_cupti and run_ms and mean:
        kernels_ms = nt.device_us / nt.kept / 1000
        cover = min(kernels_ms / mean, 1.0)  # the device's busy time against the timed (unprofiled) latency
        notes.append(
            f"per-node times are the device's: CUPTI's kernel records, each given to the node that launched it; "
            f"the kernels take {kernels_ms:.3f} ms a run, {cover:.1%} of the timed latency; the rest is the device "
            f"idle between kernels (the graph-bound share; under the profiler {nt.gaps_us / nt.kept / 1000:.3f} ms "
            "a run)"
        )
    elif cuda:
        notes.append(f"per-node times are ONNX Runtime's host times (CUPTI not used: {nt.why_host})")
    return cover


def _graph_notes(graph: dict[str, float] | None, times: list[float], no_graph: str) -> list[str]:
    """What one CUDA graph of the same run gained, or why it was not timed."""
    if graph is not None and times:
        p50 = float(np.median(times))
        gain = p50 - graph["p50"]
        return [
            f"as one CUDA graph (ONNX Runtime's enable_cuda_graph: captured once, then replayed) a run takes "
            f"{graph['p50']:.3f} ms against {p50:.3f} ms, "
            + (
                f"{gain:.3f} ms ({gain / p50:.0%}) less: the launch overhead a graph removes"
                if gain > 0
                else f"no less ({-gain:.3f} ms more): launches cost this model nothing measurable"
            )
        ]
    return [f"no CUDA graph time: {no_graph}"] if no_graph else []


def _profiled_note(per_node: list[dict[str, Any]], nt: NodeTimes, mean: float) -> str:
    """Where the per-node times come from, against the timed latency ('' with nothing timed)."""
    if not per_node:
        return "ONNX Runtime's profiler reported no node times"
    if not (mean > 0 and nt.kept):
        return ""
    run_ms = nt.run_us / nt.kept / 1000
    fused = f"; {plural(nt.fused, 'node')} ONNX Runtime fused counted at the model node each starts from"
    return (
        "per-node times come from separate profiled sessions at the timed session's graph optimisation: a profiled "
        f"run took {run_ms:.3f} ms, {run_ms / mean:.2f}x the timed latency" + (fused if nt.fused else "")
    )


def _rank(per_node: list[dict[str, Any]]) -> float:
    """Each row's share of the node time, the rows slowest first; returns the node time (1.0 when none)."""
    node_total = sum(r["ms"] for r in per_node) or 1.0
    for r in per_node:
        r["share"] = round(r["ms"] / node_total, 5)
    per_node.sort(key=lambda r: -r["ms"])
    return node_total


def _spread_and_ties(rows: list[dict[str, Any]], sessions: list[dict[str, float]]) -> None:
    """Each row's lowest and highest time a run across the profiled sessions (``spread_ms``; with two or more), and
    its ``rank`` (rows slowest first): rows whose spreads overlap the row before share that row's rank and are marked
    ``tie``, so an order that the next run could swap is not read as a finding."""
    for i, r in enumerate(rows):
        r["rank"], r["tie"] = i + 1, False
        if len(sessions) >= 2:
            seen = [s.get(r["name"], 0.0) for s in sessions]
            r["spread_ms"] = [round(min(seen), 5), round(max(seen), 5)]
        if i and "spread_ms" in r and "spread_ms" in rows[i - 1] and r["spread_ms"][1] >= rows[i - 1]["spread_ms"][0]:
            r["rank"], r["tie"] = rows[i - 1]["rank"], True
            rows[i - 1]["tie"] = True


def _per_op(per_node: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Time and count per op type, slowest first."""
    per_op: dict[str, dict[str, Any]] = {}
    for r in per_node:
        o = per_op.setdefault(r["op_type"], {"op_type": r["op_type"], "count": 0, "ms": 0.0})
        o["count"] += 1
        o["ms"] = round(o["ms"] + r["ms"], 5)
    return sorted(per_op.values(), key=lambda o: -o["ms"])


def _split_cost(
    gm: GraphModel,
    per_node: list[dict[str, Any]],
    copies: dict[str, Any],
    mean: float,
    io_ms: float | None,
    boundary_ms: float | None,
) -> tuple[dict[str, Any], float]:
    """The custom part's cost: time in plugin nodes (or layers) plus the boundary copies they force."""
    plugin_rows = [r for r in per_node if r["status"] == Status.PLUGIN.value]
    plugin_ms = sum(r["ms"] for r in plugin_rows)
    boundary = [t for p in gm.partitions for t in p.boundary_tensors]
    end_to_end = max(mean + (io_ms or 0.0) + (boundary_ms or 0.0), 1e-9)
    cost = {
        "plugin_nodes": len([n for n in gm.nodes if n.status is Status.PLUGIN]),
        "plugin_ms": round(plugin_ms, 4),
        "boundary_tensors": len(boundary),
        "boundary_copy_ms": round(boundary_ms, 4) if boundary_ms is not None else None,
        "share_of_end_to_end": round((plugin_ms + boundary_ms) / end_to_end, 4) if boundary_ms is not None else None,
        "plugins": [
            {
                "name": r["name"],
                "op_type": r["op_type"],
                "ms": r["ms"],
                "sol_ms": r.get("sol_ms"),
                "most_a_kernel_saves_ms": r.get("headroom_ms"),
            }
            for r in plugin_rows
        ],
        "assumes": "boundary tensors make a device-to-host and a host-to-device trip over pinned memory",
    }
    if boundary_ms is None:
        cost["not_measured"] = copies.get("not_measured", "boundary copies were not measured")
    return cost, plugin_ms
