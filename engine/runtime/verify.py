"""Verify the split by building: each engine partition (the whole model when it is one) built with the installed
TensorRT at the shapes in force, and a partition the builder rejects narrowed down to the nodes it rejects.

The parser's yes is not the last word: the TensorRT-RTX builder fails on the silero voice model, whose every
node the parser imports, with an internal assertion in its graph-scope analysis. Here each partition is cut out
of the model (its boundary tensors fed as inputs, of their concrete shapes at the dims in force), built strongly
typed, and, when the builder says no without naming a node, built again in halves (in topological order),
following the half that fails, until the smallest failing set is found or the time budget runs out.

Where the user gives a range for a dim (``--dim-range batch=1:32``), the build has an optimisation profile: every
cut input whose shape differs between the range's ends is dynamic on those axes, with its shapes at the lower end,
at the dims in force (opt) and at the upper end as min / opt / max. Without ranges every build is static.

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
from splitscope.engine.codec import read, stamp
from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.model import GraphModel


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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
    ranges: dict[str, list[int]] = field(default_factory=dict)
    """The dims built over a range: name -> [min, opt, max] (opt is the value in force); empty: a static build."""

    def to_json(self) -> dict[str, Any]:
        return stamp("build", asdict(self))

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> BuildReport:
        """Read a build document (the analysis JSON's ``build``; any release's)."""
        d = read("build", d)
        rows: list[dict[str, Any]] = list(d.get("partitions") or [])
        parts = tuple(
            PartitionBuild(
                int(p.get("index", k)),
                str(p.get("status", "")),
                int(p.get("nodes") or 0),
                float(p.get("seconds") or 0.0),
                p.get("engine_bytes"),
                p.get("layers"),
                str(p.get("error") or ""),
                [str(n) for n in p.get("nodes_blamed") or []],
                bool(p.get("narrowed")),
            )
            for k, p in enumerate(rows)
        )
        return cls(
            str(d.get("backend", "")),
            str(d.get("version", "")),
            str(d.get("shapes", "")),
            list(parts),
            float(d.get("seconds") or 0.0),
            float(d.get("budget_s") or 0.0),
            bool(d.get("complete", True)),
            {str(k): [int(x) for x in v] for k, v in (d.get("ranges") or {}).items()},
        )


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


def check_ranges(gm: GraphModel, ranges: dict[str, tuple[int, int]]) -> dict[str, list[int]]:
    """``ranges`` (name -> (min, max)) as name -> [min, opt, max] with opt the value in force; a range that names no
    dim of the model, or does not hold the value in force, raises :class:`SplitscopeError` saying what to give."""
    from splitscope.engine.errors import SplitscopeError

    out: dict[str, list[int]] = {}
    for name, (lo, hi) in ranges.items():
        if name not in gm.dims:
            have = ", ".join(sorted(gm.dims)) or "none"
            raise SplitscopeError(
                f"--dim-range {name}: the model has no dim of that name with a value (its dims: {have})."
            )
        opt = gm.dims[name]
        if not 1 <= lo <= opt <= hi:
            raise SplitscopeError(
                f"--dim-range {name}={lo}:{hi} must hold its value in force {opt} (MIN <= {opt} <= MAX, MIN >= 1); "
                f"give --dim {name}=VALUE inside the range."
            )
        if lo != hi:
            out[name] = [lo, opt, hi]
    return out


def child_args(
    gm: GraphModel, budget: float = 300.0, backend: str = "rtx", ranges: dict[str, list[int]] | None = None
) -> dict[str, Any]:
    """What the ``verify`` job child needs to build ``gm``'s partitions at its dims (the CLI's and the window's);
    ``ranges`` as :func:`check_ranges` returns them."""
    return {
        "model": str(gm.path),
        "dims": dict(gm.dims),
        "parts": [list(p.nodes) for p in gm.partitions],
        "backend": backend,
        "budget": budget,
        "ranges": dict(ranges or {}),
    }


Shape = tuple[int, ...]
Profile = dict[str, tuple[Shape, Shape, Shape]]


def shapes_at_ends(proto: onnx.ModelProto, gm: GraphModel, ranges: dict[str, list[int]]) -> tuple[dict, dict]:
    """The concrete shapes of the main graph's tensors at the lower and at the upper end of ``ranges`` (the other
    dims at their values in force)."""
    from splitscope.engine.onnxio.concrete import concrete_shapes
    from splitscope.engine.onnxio.shapes import infer_concrete

    ends = []
    for end in (0, 2):
        dims = {**gm.dims, **{k: v[end] for k, v in ranges.items()}}
        ends.append(concrete_shapes(infer_concrete(proto, dims, [])[0].graph))
    return ends[0], ends[1]


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


def _network_flags(trt: Any) -> int:
    """Strongly typed where this TensorRT has the flag (TensorRT 10+; TensorRT-RTX networks are strongly typed)."""
    flag = getattr(getattr(trt, "NetworkDefinitionCreationFlag", None), "STRONGLY_TYPED", None)
    return 1 << int(flag) if flag is not None else 0


def build_bytes(
    model: bytes, backend: str, profile: Profile | None = None
) -> tuple[bool, float, int | None, int | None, str]:
    """Parse and build a serialized model, strongly typed; static unless ``profile`` gives its dynamic inputs'
    (min, opt, max) shapes: (built, seconds, engine bytes, layers, error)."""
    from splitscope.engine.runtime.trt import trt_module

    trt = trt_module(backend)
    log = _Logger(trt)
    t0 = time.perf_counter()
    builder = trt.Builder(log.logger)
    network = builder.create_network(_network_flags(trt))
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
    if profile:
        prof = builder.create_optimization_profile()
        for name, (lo, opt, hi) in profile.items():
            prof.set_shape(name, lo, opt, hi)
        config.add_optimization_profile(prof)
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


def cut(
    proto: onnx.ModelProto, keep: list[int], gm: GraphModel, ends: tuple[dict, dict] | None = None
) -> tuple[bytes, Profile]:
    """The nodes ``keep`` of the main graph as a model of their own: what they read from elsewhere becomes an
    input of its concrete shape at the dims in force, what others (or the model's outputs) read becomes an
    output; the weights they use come along. With ``ends`` (the shapes at a range's two ends), an input whose
    shape differs there is dynamic on the axes that differ, and the profile gives its (min, opt, max) shapes."""
    g = proto.graph
    keep_set = set(keep)
    nodes = [g.node[i] for i in sorted(keep)]
    produced = {o for n in nodes for o in n.output if o}
    order: list[str] = []  # in the order the nodes read them: an op's inputs keep their positions
    for i in sorted(keep):
        order.extend(x for x in gm.nodes[i].all_inputs if x and x not in order)
    used = set(order)
    inits = {t.name: t for t in g.initializer}
    graph_outputs = {o.name for o in g.output}
    outside = {x for k, n in enumerate(g.node) if k not in keep_set for x in n.input}
    outside |= {x for k, node in enumerate(gm.nodes) if k not in keep_set for x in node.implicit_inputs}

    profile: Profile = {}

    def info(name: str, is_input: bool = False) -> onnx.ValueInfoProto:
        t = gm.graph.tensors.get(name)
        shape: list[int | str] | None = list(t.resolved(gm.dims) or []) if t is not None else None
        if t is not None and t.resolved(gm.dims) is None:
            shape = None
        elem = onnx.TensorProto.DataType.Value(t.dtype) if t is not None and t.dtype else onnx.TensorProto.FLOAT
        if ends is not None and shape is not None:
            lo, hi = ends[0].get(name), ends[1].get(name)
            opt = tuple(int(d) for d in shape)
            if lo is not None and hi is not None and len(lo) == len(hi) == len(opt) and (lo != opt or hi != opt):
                shape = [d if lo[a] == hi[a] == d else f"{name}_{a}" for a, d in enumerate(opt)]
                if is_input:
                    profile[name] = (tuple(lo), opt, tuple(hi))
            elif lo is None or hi is None:  # not typed at an end: dynamic where the model itself is
                shape = None if not is_input else shape
        return onnx.helper.make_tensor_value_info(name, elem, shape)

    inputs = [info(x, True) for x in order if x not in produced and x not in inits]
    outputs = [info(x) for x in sorted(produced & (outside | graph_outputs))]
    if not outputs and nodes:
        outputs = [info(o) for o in nodes[-1].output if o]
    m = onnx.helper.make_model(
        onnx.helper.make_graph(nodes, "partition", inputs, outputs, [inits[x] for x in sorted(used & inits.keys())]),
        opset_imports=list(proto.opset_import),
    )
    m.ir_version = proto.ir_version
    m.functions.extend(proto.functions)
    return m.SerializeToString(), profile


def _build_cut(
    proto: onnx.ModelProto, nodes: list[int], gm: GraphModel, backend: str, ends: tuple[dict, dict] | None
) -> tuple[bool, float, int | None, int | None, str]:
    model, profile = cut(proto, nodes, gm, ends)
    return build_bytes(model, backend, profile)


def verify(
    path: str | Path,
    gm: GraphModel,
    backend: str = "rtx",
    budget_s: float = 300.0,
    cancel: CancelToken | None = None,
    ranges: dict[str, list[int]] | None = None,
) -> Generator[JobEvent, None, BuildReport]:
    """Build every partition of ``gm`` (analysed at the dims in force) and narrow down what fails; ``ranges``
    (name -> [min, opt, max]) build with an optimisation profile over them."""
    from splitscope.engine.runtime.trt import trt_module

    cancel = cancel or CancelToken()
    trt = trt_module(backend)
    t0 = time.perf_counter()
    proto = onnx.load(str(path))  # with its weights: an engine is built from them
    ranges = dict(ranges or {})
    shapes, ends = gm.shapes_label(), None
    if ranges:
        spans = ", ".join(f"{k} {lo}..{hi} (opt {opt})" for k, (lo, opt, hi) in ranges.items())
        shapes = f"{shapes}, over {spans}"
        yield Progress("build", 0, 0, "Inferring the shapes at the ends of the ranges")
        ends = shapes_at_ends(proto, gm, ranges)
    parts = gm.partitions or []
    built: list[PartitionBuild] = []
    complete = True
    for k, part in enumerate(parts):
        cancel.raise_if_cancelled()
        nodes = list(part.nodes)
        yield Progress("build", k, len(parts), f"Building partition {k + 1} of {len(parts)} ({len(nodes)} nodes)")
        if time.perf_counter() - t0 > budget_s:
            built.append(PartitionBuild(k, "skipped", len(nodes), error="over the time budget"))
            complete = False
            continue
        ok, secs, size, layers, err = _build_cut(proto, nodes, gm, backend, ends)
        named, narrowed = [], False
        if not ok:
            named = [gm.nodes[i].label for i in nodes if gm.nodes[i].label and f"'{gm.nodes[i].label}'" in err]
            if not named:
                blamed, finished = yield from _narrow(
                    proto, nodes, gm, backend, t0, budget_s, cancel, k, len(parts), ends
                )
                named, narrowed = [gm.nodes[i].label for i in blamed], True
                complete = complete and finished
        status = "built" if ok else "failed"
        built.append(PartitionBuild(k, status, len(nodes), round(secs, 3), size, layers, err, named, narrowed))
    seconds = round(time.perf_counter() - t0, 3)
    yield Progress("build", len(parts), len(parts), "Built every partition" if complete else "Stopped")
    version = str(getattr(trt, "__version__", ""))
    return BuildReport(backend, version, shapes, built, seconds, budget_s, complete, ranges)


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
    ends: tuple[dict, dict] | None = None,
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
        if not _build_cut(proto, first, gm, backend, ends)[0]:
            failing = first
        elif not _build_cut(proto, second, gm, backend, ends)[0]:
            failing = second
        else:
            return failing, True  # each half builds alone: the failure needs both
    return failing, True
