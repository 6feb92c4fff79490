"""Verify the split by building: each engine partition (the whole model when it is one) built with the installed
TensorRT at the shapes in force, and a partition the builder rejects narrowed down to the nodes it rejects.

The parser's yes is not the last word: the TensorRT-RTX builder fails on the silero voice model, whose every
node the parser imports, with an internal assertion in its graph-scope analysis. Here each partition is cut out
of the model (its boundary tensors fed as inputs, of their concrete shapes at the dims in force, so every build
is static), built, and, when the builder says no without naming a node, built again in halves (in topological
order), following the half that fails, until the smallest failing set is found or the time budget runs out.

Runs in a child process (``splitscope.engine.child``, kind ``verify``): a builder can crash or hang, and Cancel
kills the child. TensorRT-RTX builds on the CPU, so this runs where no GPU is.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import onnx
from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.model import GraphModel


@dataclass
class PartitionBuild:
    """One partition's build."""

    index: int
    status: str
    """``built``, ``failed``, ``skipped`` (cancelled or over the budget) or ``unbuildable`` (no node to build)."""
    nodes: int
    seconds: float = 0.0
    engine_bytes: int | None = None
    layers: int | None = None
    error: str = ""
    nodes_blamed: list[str] = field(default_factory=list)
    """The smallest set of nodes the builder was found to reject (their labels)."""
    narrowed: bool = False
    """Whether the blame comes from building halves (the builder's message named no node)."""


@dataclass
class BuildReport:
    """What building each partition found, as the analysis JSON's ``build``."""

    backend: str
    version: str
    shapes: str
    partitions: list[PartitionBuild] = field(default_factory=list)
    seconds: float = 0.0
    budget_s: float = 0.0
    complete: bool = True
    """False when a build was cancelled or the budget ran out before every partition was built."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class _Logger:
    """Keeps the builder's own error messages (TensorRT's ILogger, subclassed at first use)."""

    def __init__(self, trt: Any) -> None:
        outer = self

        class Logger(trt.ILogger):  # type: ignore[misc, name-defined]
            def __init__(self) -> None:
                trt.ILogger.__init__(self)

            def log(self, severity: Any, msg: str) -> None:
                if severity in (trt.ILogger.Severity.ERROR, trt.ILogger.Severity.INTERNAL_ERROR):
                    outer.errors.append(" ".join(str(msg).split())[:600])

        self.errors: list[str] = []
        self.logger = Logger()


def _one_line(text: str) -> str:
    """The builder's message on one line, without the CUDA-driver noise TensorRT-RTX adds on a CPU-only machine."""
    lines = [" ".join(x.split()) for x in text.splitlines() if x.strip() and "CUDA driver version" not in x]
    return " ".join(lines)[:600]


def child_args(gm: GraphModel, budget: float = 300.0, backend: str = "rtx") -> dict[str, Any]:
    """What the ``verify`` job child needs to build ``gm``'s partitions at its dims (the CLI's and the window's)."""
    return {
        "model": str(gm.path),
        "dims": dict(gm.dims),
        "parts": [p.nodes for p in gm.partitions],
        "backend": backend,
        "budget": budget,
    }


def apply_report(gm: GraphModel, doc: dict[str, Any]) -> None:
    """Give the nodes a build rejected the status ``plugin`` with the builder's message (source ``builder``),
    keep the report as ``gm.build``, and count the partitions and remedies again."""
    from splitscope.engine.model import Source, Status
    from splitscope.engine.split.analyze import set_partitions
    from splitscope.engine.split.remedies import assign_remedies

    gm.build = doc
    by_label = {n.label: n for n in gm.nodes}
    for part in doc.get("partitions", []):
        for label in part.get("nodes_blamed", []):
            node = by_label.get(label)
            if node is None or node.status is Status.PLUGIN:
                continue
            how = "narrowed by building halves" if part.get("narrowed") else "named by the builder"
            node.status, node.source = Status.PLUGIN, Source.BUILDER
            node.reason = (
                f"the {doc.get('backend', 'TensorRT')} {doc.get('version', '')} builder rejects it at "
                f"{doc.get('shapes', 'the shapes in force')} ({how}): {part.get('error') or 'no message'}"
            )
    set_partitions(gm)
    assign_remedies(gm)


def build_bytes(model: bytes, backend: str) -> tuple[bool, float, int | None, int | None, str]:
    """Parse and build a serialized model with static shapes: (built, seconds, engine bytes, layers, error)."""
    from splitscope.engine.runtime.trt import trt_module

    trt = trt_module(backend)
    log = _Logger(trt)
    t0 = time.perf_counter()
    builder = trt.Builder(log.logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, log.logger)
    if not parser.parse(model):
        errs = [parser.get_error(i).desc() for i in range(parser.num_errors)]
        return (
            False,
            time.perf_counter() - t0,
            None,
            None,
            _one_line("parser: " + (errs or log.errors or ["no reason"])[0]),
        )
    config = builder.create_builder_config()
    from splitscope.engine.runtime.trt import _load_timing_cache, _save_timing_cache

    timing = _load_timing_cache(config, backend, trt)  # full TensorRT's kernel timings, reused across builds
    plan = builder.build_serialized_network(network, config)
    seconds = time.perf_counter() - t0
    if plan is not None:
        _save_timing_cache(config, timing)
    if plan is None:
        return (
            False,
            seconds,
            None,
            None,
            _one_line((log.errors or ["the builder returned no engine and said nothing"])[-1]),
        )
    layers = network.num_layers
    return True, seconds, int(plan.nbytes), int(layers), ""


def cut(proto: onnx.ModelProto, keep: list[int], gm: GraphModel) -> bytes:
    """The nodes ``keep`` of the main graph as a model of their own: what they read from elsewhere becomes an
    input of its concrete shape at the dims in force, what others (or the model's outputs) read becomes an
    output; the weights they use come along."""
    g = proto.graph
    keep_set = set(keep)
    nodes = [g.node[i] for i in sorted(keep)]
    produced = {o for n in nodes for o in n.output if o}
    used: set[str] = set()
    for i in keep:
        used.update(x for x in gm.nodes[i].all_inputs if x)
    inits = {t.name: t for t in g.initializer}
    graph_outputs = {o.name for o in g.output}
    outside = {x for k, n in enumerate(g.node) if k not in keep_set for x in n.input}
    outside |= {x for k, node in enumerate(gm.nodes) if k not in keep_set for x in node.implicit_inputs}

    def info(name: str) -> onnx.ValueInfoProto:
        t = gm.graph.tensors.get(name)
        shape = t.resolved(gm.dims) if t is not None else None
        elem = onnx.TensorProto.DataType.Value(t.dtype) if t is not None and t.dtype else onnx.TensorProto.FLOAT
        return onnx.helper.make_tensor_value_info(name, elem, list(shape) if shape is not None else None)

    inputs = [info(x) for x in sorted(used - produced - inits.keys())]
    outputs = [info(x) for x in sorted(produced & (outside | graph_outputs))]
    if not outputs and nodes:
        outputs = [info(o) for o in nodes[-1].output if o]
    m = onnx.helper.make_model(
        onnx.helper.make_graph(nodes, "partition", inputs, outputs, [inits[x] for x in sorted(used & inits.keys())]),
        opset_imports=list(proto.opset_import),
    )
    m.ir_version = proto.ir_version
    m.functions.extend(proto.functions)
    return m.SerializeToString()


def verify(
    path: str | Path,
    gm: GraphModel,
    backend: str = "rtx",
    budget_s: float = 300.0,
    cancel: CancelToken | None = None,
) -> Generator[JobEvent, None, BuildReport]:
    """Build every partition of ``gm`` (analysed at the dims in force) and narrow down what fails."""
    from splitscope.engine.runtime.trt import trt_module

    cancel = cancel or CancelToken()
    trt = trt_module(backend)
    t0 = time.perf_counter()
    report = BuildReport(backend, str(getattr(trt, "__version__", "")), gm.shapes_label(), budget_s=budget_s)
    proto = onnx.load(str(path))  # with its weights: an engine is built from them
    parts = gm.partitions or []
    for k, part in enumerate(parts):
        cancel.raise_if_cancelled()
        nodes = list(part.nodes)
        yield Progress("build", k, len(parts), f"Building partition {k + 1} of {len(parts)} ({len(nodes)} nodes)")
        if time.perf_counter() - t0 > budget_s:
            report.partitions.append(PartitionBuild(k, "skipped", len(nodes), error="over the time budget"))
            report.complete = False
            continue
        ok, secs, size, layers, err = build_bytes(cut(proto, nodes, gm), backend)
        pb = PartitionBuild(k, "built" if ok else "failed", len(nodes), round(secs, 3), size, layers, err)
        if not ok:
            named = [gm.nodes[i].label for i in nodes if gm.nodes[i].label and f"'{gm.nodes[i].label}'" in err]
            if named:
                pb.nodes_blamed = named
            else:
                blamed, finished = yield from _narrow(proto, nodes, gm, backend, t0, budget_s, cancel, k, len(parts))
                pb.nodes_blamed, pb.narrowed = [gm.nodes[i].label for i in blamed], True
                report.complete = report.complete and finished
        report.partitions.append(pb)
    report.seconds = round(time.perf_counter() - t0, 3)
    yield Progress("build", len(parts), len(parts), "Built every partition" if report.complete else "Stopped")
    return report


def _narrow(
    proto: onnx.ModelProto,
    nodes: list[int],
    gm: GraphModel,
    backend: str,
    t0: float,
    budget_s: float,
    cancel: CancelToken,
    k: int,
    total: int,
) -> Generator[JobEvent, None, tuple[list[int], bool]]:
    """The smallest failing run of ``nodes`` found by building halves (topological order); (nodes, finished)."""
    pos = {i: n for n, i in enumerate(gm.order)}
    failing = sorted(nodes, key=lambda i: pos.get(i, i))
    while len(failing) > 1:
        cancel.raise_if_cancelled()
        if time.perf_counter() - t0 > budget_s:
            return failing, False
        half = len(failing) // 2
        first, second = failing[:half], failing[half:]
        yield Progress("narrow", k, total, f"Partition {k + 1}: narrowing {len(failing)} nodes to the failing ones")
        if not build_bytes(cut(proto, first, gm), backend)[0]:
            failing = first
        elif not build_bytes(cut(proto, second, gm), backend)[0]:
            failing = second
        else:
            return failing, True  # each half builds alone: the failure needs both
    return failing, True
