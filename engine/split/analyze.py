"""Analyse a model: load, shapes, costs, roles, the TensorRT split and its partitions."""

from __future__ import annotations

import os
from array import array
from collections.abc import Generator, Sequence
from pathlib import Path

import numpy as np
import onnx
from splitscope.engine.heap import give_back_free_memory
from splitscope.engine.jobs import CancelToken, JobEvent, Partial, Progress, gc_paused, run_to_end
from splitscope.engine.model import GraphModel, ParserInfo, Source, Status
from splitscope.engine.model.nodes import SOURCE_CODE, STATUS_CODE, Nodes
from splitscope.engine.onnxio.concrete import DimPlan, classify_dims, input_dim_name, input_dims
from splitscope.engine.onnxio.graph import graph_from_onnx
from splitscope.engine.onnxio.loader import LoadedModel, load_model
from splitscope.engine.onnxio.shapes import (
    ShapeChild,
    apply_concrete_shapes,
    apply_shape_inference,
    bind_function_shapes,
)
from splitscope.engine.onnxio.validate import shape_defects
from splitscope.engine.sample import SAMPLE_MODEL
from splitscope.engine.split import crash
from splitscope.engine.split.costs import fill_costs
from splitscope.engine.split.parser import DISPLAY, ParserAnswer, ParserProcess, resolve_backend, take_early
from splitscope.engine.split.partitions import constant_nodes, find_partitions
from splitscope.engine.split.remedies import assign_remedies
from splitscope.engine.split.roles import assign_roles
from splitscope.engine.split.table import BUILD_TIME_CHECKS, TARGET_RTX, TARGET_TENSORRT, load_table, predict_graph
from splitscope.engine.text import plural


def analyze(
    path: str | os.PathLike[str] | None = None,
    *,
    parser: str = "auto",
    dims: dict[str, int] | None = None,
    cancel: CancelToken | None = None,
    responsive: bool = False,
    require_dims: bool = False,
    known_dims_only: bool = False,
) -> Generator[JobEvent, None, GraphModel]:
    """Analyse an ONNX model; a job generator that yields progress and returns a GraphModel.

    Parameters
    ----------
    path
        The model; None opens the bundled sample.
    parser
        ``auto`` (TensorRT if installed, else TensorRT-RTX, else the table),
        ``tensorrt``, ``rtx`` or ``table``.
    dims
        Values for the inputs' symbolic dims: every FLOP and byte is counted at the shapes they give.
        A batch-like dim without a value is 1 (said in ``gm.dim_notes``); a value the model's metadata
        gives is used and said; any other dim without a value leaves the costs that need it unknown.
    require_dims
        Refuse (:class:`MissingDimsError`) a model with a non-batch dim that has no value (the CLI).
    known_dims_only
        Drop values for dims the model lacks (remembered for an earlier export) instead of refusing them.
    cancel
        Checked between steps; cancelling also kills the parser process.
    responsive
        Keep long C++ calls (shape inference) out of this process, for callers
        that run this in a thread of a GUI: such calls hold the GIL.

    Raises
    ------
    ModelLoadError
        For bad input, with a one-line message.
    ParserUnavailableError
        When the named parser is not installed.
    JobCancelledError
        When cancelled.
    """
    cancel = cancel or CancelToken()
    try:
        with gc_paused():
            return (yield from _analyze(path, parser, dims, cancel, responsive, require_dims, known_dims_only))
    finally:  # the decoded structure and shape inference's C++ blocks are freed by now
        give_back_free_memory()


def _analyze(
    path: str | os.PathLike[str] | None,
    parser: str,
    dims: dict[str, int] | None,
    cancel: CancelToken,
    responsive: bool,
    require_dims: bool,
    known_dims_only: bool = False,
) -> Generator[JobEvent, None, GraphModel]:
    model_path = Path(path) if path is not None else SAMPLE_MODEL
    module = resolve_backend(parser)
    # The parser works in its own process, in parallel with loading, shape
    # inference and graph building here; it is killed if the model is bad. A
    # responsive (GUI) caller starts it after the first answer, so that the first
    # paint does not share two cores with it.
    kids = _Children(module if module is not None and model_path.is_file() else None, model_path)
    if kids.module and not responsive:
        kids.start_parser({})
    try:
        gm, loaded, order, concrete = yield from _structure(
            kids, dims, cancel, responsive, require_dims, known_dims_only
        )
        engine_graph = any(p.key == "splitscope.engine_graph" for p in loaded.proto.metadata_props)
        if engine_graph:  # an engine's own layers (splitscope.engine.trtdata.engine_graph): no parser to ask
            kids.module = None
            kids.kill_parser()
        target = TARGET_RTX if module == "tensorrt_rtx" else TARGET_TENSORRT
        version, _ = load_table()
        gm.parser = ParserInfo("table", version, target)
        yield Progress("structure", 2, 6, "Inferring shapes")
        if responsive:  # the window's first answer: the structure coloured by the table, before shapes and costs
            predict_graph(gm.graph, target)  # (the table answers again below, once every type is known)
            if engine_graph:
                _engine_layers(gm)
            yield Partial(gm, "The structure, coloured by the operator table")
        cancel.raise_if_cancelled()
        cut = yield from _shapes(kids, gm, loaded, concrete, responsive, cancel)
        cancel.raise_if_cancelled()
        yield Progress("costs", 3, 6, "Counting FLOPs and bytes")
        fill_costs(gm.graph, gm.dims)
        assign_roles(gm.graph, order)
        predict_graph(gm.graph, target)  # again, now that every type is known
        if engine_graph:
            _engine_layers(gm)
        # Partitions from the table's answer now, while the parser still works;
        # recomputed below only if the parser disagrees.
        set_partitions(gm)
        cancel.raise_if_cancelled()
        yield from _parser_answer(kids, gm, cut, cancel)
    except BaseException:
        kids.kill_all()
        raise
    assign_remedies(gm)
    yield Progress("done", 6, 6, "Done")
    return gm


class _Children:
    """The child processes of one analysis: the parser (one at a time, asked again without malformed nodes) and
    shape inference's, each killed if the analysis ends early."""

    def __init__(self, module: str | None, model_path: Path) -> None:
        self.module = module
        """The parser's module, None where none is asked (the table alone, no file, an engine's own layers)."""
        self.model_path = model_path
        self.proc: ParserProcess | None = None
        self.shapes: list[ShapeChild] = []

    def start_parser(self, cut: dict[int, str]) -> None:
        self.kill_parser()
        if self.module:
            early = take_early(self.module, self.model_path) if not cut else None
            self.proc = early or ParserProcess(self.module, self.model_path, cut)

    def kill_parser(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc = None

    def shape_child(self, dims: dict[str, int] | None = None) -> ShapeChild:
        child = ShapeChild(self.model_path, dims)
        self.shapes.append(child)
        return child

    def kill_all(self) -> None:
        self.kill_parser()
        for child in self.shapes:
            child.kill()


def _structure(
    kids: _Children,
    dims: dict[str, int] | None,
    cancel: CancelToken,
    responsive: bool,
    require_dims: bool,
    known_dims_only: bool,
) -> Generator[JobEvent, None, tuple[GraphModel, LoadedModel, Sequence[int], ShapeChild | bool | None]]:
    """Load the model and build its graph with the dims in force: (model, loaded file, order, and for concrete
    dims the child already inferring shapes at them, True where one is still to start, or None)."""
    model_path = kids.model_path
    yield Progress("load", 0, 6, f"Loading {model_path.name}")
    loaded = load_model(model_path)
    cancel.raise_if_cancelled()
    plan = dims_plan(loaded.proto, dims, model_path.name, known_only=known_dims_only)
    concrete = bool(plan.values) and bool(input_dims(loaded.proto.graph)) and model_path.is_file()
    # Shape inference at the dims in force runs in a child of its own beside the graph's building here when a
    # core is free (no parser process: the parser is the longest step and is not slowed), started as soon as the
    # dims are known; a GUI caller's runs beside its symbolic inference, each in a child.
    at: ShapeChild | bool | None = None
    if concrete:
        at = kids.shape_child(plan.values) if not responsive and kids.proc is None else True
    yield Progress("structure", 1, 6, "Reading the graph")
    gm, order = graph_from_onnx(loaded)
    plan_dims(gm, loaded.proto, dims, require=require_dims, known_only=known_dims_only, plan=plan)
    return gm, loaded, order, at


def _shapes(
    kids: _Children,
    gm: GraphModel,
    loaded: LoadedModel,
    at: ShapeChild | bool | None,
    responsive: bool,
    cancel: CancelToken,
) -> Generator[JobEvent, None, dict[int, str]]:
    """Shapes, symbolic then at the dims in force; the parser (re)started without the nodes found malformed.
    The nodes cut out of the parser's model (index: why)."""
    model_path = kids.model_path
    cut = defective_nodes(gm)
    if kids.proc is not None and cut:
        kids.kill_parser()  # malformed nodes can crash the parser: ask again without them
    if kids.module and kids.proc is None:
        kids.start_parser(cut)
    symbolic = kids.shape_child() if responsive and model_path.is_file() else None
    if responsive and at is True:
        at = kids.shape_child(gm.dims)
    child = at if isinstance(at, ShapeChild) else None
    apply_shape_inference(gm, loaded, child=symbolic, cancel=cancel)
    name_input_dims(gm)
    if gm.dims and input_dims(loaded.proto.graph):
        yield Progress("structure", 2, 6, f"Inferring shapes at {gm.shapes_label()}")
        apply_concrete_shapes(gm, loaded.proto, gm.dims, child=child, cancel=cancel)
    elif child is not None:
        child.kill()
    bind_function_shapes(gm, loaded.proto)
    shape_defects(gm.graph)
    late = defective_nodes(gm)
    if kids.proc is not None and late.keys() - cut.keys():
        cut = late  # shapes showed more malformed nodes: ask again without them too
        kids.start_parser(cut)
    return cut


def _parser_answer(
    kids: _Children, gm: GraphModel, cut: dict[int, str], cancel: CancelToken
) -> Generator[JobEvent, None, None]:
    """Wait for the parser (where one was asked), take its answer, and count the partitions again if it moved a
    node."""
    proc = kids.proc
    if proc is None:
        return
    yield Progress("parser", 4, 6, f"Waiting for the {DISPLAY[proc.module]} parser")
    answer = yield from proc.events(cancel)
    if answer.crashed:
        answer = yield from crash.recover(gm, answer, proc.module, kids.model_path, cut, cancel)
    before = bytes(gm.nodes.status)
    apply_parser_answer(gm, answer)
    if gm.nodes.status != before:
        yield Progress("partitions", 5, 6, "Finding engine partitions")
        set_partitions(gm)


def dims_plan(proto: onnx.ModelProto, dims: dict[str, int] | None, name: str, known_only: bool = False) -> DimPlan:
    """The dims in force for ``proto`` (the file ``name``): the given values (a name the model lacks refused, or
    with ``known_only`` dropped), hints the model carries, batch-like dims at 1, the rest missing."""
    from splitscope.engine.dims import check_dim_names

    named = [d for _, _, d in input_dims(proto.graph)]
    if dims and known_only:
        dims = {k: v for k, v in dims.items() if k in named}
    if dims:
        check_dim_names(name, named, dims)
    return classify_dims(proto, dims)


def plan_dims(
    gm: GraphModel,
    proto: onnx.ModelProto,
    dims: dict[str, int] | None,
    require: bool = False,
    known_only: bool = False,
    plan: DimPlan | None = None,
) -> None:
    """Set the dims in force on ``gm`` (:func:`dims_plan`, or ``plan`` made by it already); the missing ones are
    ``gm.missing_dims`` (refused with ``require``)."""
    from splitscope.engine.dims import MissingDimsError

    name = gm.path.name if gm.path is not None else "the model"
    plan = plan if plan is not None else dims_plan(proto, dims, name, known_only)
    gm.dims = plan.values
    gm.dim_notes = plan.notes()
    gm.missing_dims = list(plan.missing)
    if require and plan.missing:
        where = "; ".join(f"{d} ({plan.where[d]})" for d in plan.missing)
        raise MissingDimsError(
            f"{name}: no value for {where}; FLOPs and bytes depend on {'it' if len(plan.missing) == 1 else 'them'}"
            f": give {plan.example()}."
        )


def name_input_dims(gm: GraphModel) -> None:
    """An input dim with neither a value nor a name of its own (or a placeholder like ``?``) gets the name
    ``input[axis]``, so that a value can be given."""
    for inp in gm.graph.inputs:
        t = gm.graph.tensors.get(inp)
        if t is not None and t.shape is not None:
            t.shape = tuple(
                d if isinstance(d, int) and d >= 0 else input_dim_name(inp, k, d if isinstance(d, str) else "")
                for k, d in enumerate(t.shape)
            )


def apply_dims(
    gm: GraphModel, dims: dict[str, int], cancel: CancelToken | None = None, responsive: bool = True
) -> Generator[JobEvent, None, GraphModel]:
    """Re-cost an analysed model at new dims without asking the parser again: a new :class:`GraphModel` (the
    one on screen is never changed while a worker counts), analysed by the table at those dims, given the parser's
    verdicts the first analysis found; its concrete shapes, FLOPs, bytes and partitions are the new dims'.

    Raises :class:`ModelLoadError` when the file changed since it was analysed (its nodes are not the same)."""
    from splitscope.engine.errors import ModelLoadError

    cancel = cancel or CancelToken()
    if gm.path is None:
        return gm
    new = yield from analyze(
        gm.path, parser="table", dims=dims, cancel=cancel, responsive=responsive, known_dims_only=True
    )
    if len(new.nodes) != len(gm.nodes) or any(
        a.name != b.name or a.op_type != b.op_type for a, b in zip(new.nodes, gm.nodes, strict=True)
    ):
        raise ModelLoadError(f"{gm.path.name} changed since it was opened: open it again to count it at new shapes.")
    for a, b in zip(new.nodes, gm.nodes, strict=True):  # the parser's answer holds at any shape
        a.status, a.source, a.reason = b.status, b.source, b.reason
        a.parser_status, a.table_status = b.parser_status, b.table_status
    new.parser = gm.parser
    new.warnings = list(dict.fromkeys([*new.warnings, *gm.warnings]))
    set_partitions(new)
    assign_remedies(new)
    return new


def set_partitions(gm: GraphModel) -> None:
    """The engine partitions as TensorRT builds them, and apart the parser's raw subgraphs (constants counted).
    A built engine's own graph has none: it is one engine already."""
    if gm.engine_graph:
        gm.partitions, gm.parser_subgraphs = [], []
        return
    const = constant_nodes(gm.graph, gm.order)
    gm.partitions = find_partitions(gm.graph, gm.order, gm.dims, const=const)
    if any(const):
        gm.parser_subgraphs = [
            array("i", p.nodes) for p in find_partitions(gm.graph, gm.order, gm.dims, constants=False)
        ]
    else:  # no constant-only node: the parser's subgraphs are the partitions
        gm.parser_subgraphs = [array("i", p.nodes) for p in gm.partitions]


def defective_nodes(gm: GraphModel) -> dict[int, str]:
    """Main-graph nodes that are malformed ONNX themselves or hold such a node in a body (index: why)."""
    out: dict[int, str] = {}
    nodes = gm.nodes
    for i, defect in enumerate(nodes.defect):
        if defect:
            out[i] = "malformed ONNX, which can crash the parser"
    for i, bodies in nodes.subgraphs.items():
        if i in out:
            continue
        inner = [n for sub in bodies.values() for _, n in sub.walk() if n.defect]
        if inner:
            out[i] = f"its body holds malformed ONNX ({inner[0].label}: {inner[0].defect})"
            inner[0].reason = inner[0].reason or f"malformed ONNX: {inner[0].defect}"
    return dict(sorted(out.items()))  # in node order


def apply_parser_answer(gm: GraphModel, answer: ParserAnswer) -> None:
    """Overwrite table predictions with what the parser proved, keeping the table where it could not."""
    if answer.failure:
        gm.warnings.append(
            f"{answer.failure}; statuses come from the support table instead, and no node was proven by the parser."
        )
        gm.parser.notes.append(f"unproven: all {len(gm.nodes)} nodes ({answer.failure})")
        for node in gm.nodes:
            node.reason = f"{node.reason}; not proven: the parser failed ({answer.failure})"
        return
    gm.parser = ParserInfo(DISPLAY[answer.module], answer.version, "", answer.calls, answer.seconds, list(answer.notes))
    name = DISPLAY[answer.module]
    nodes = gm.nodes
    named = set(answer.crashers) | set(answer.cut) | set(answer.plugin) | set(answer.unverified)
    checked = {i for i, op in enumerate(nodes.op_type) if op in BUILD_TIME_CHECKS}
    _imported_all_but(nodes, named | checked, f"{name} {answer.version} parser imports it")
    for i in sorted(named | checked):
        node = nodes[i]
        if i in answer.crashers:
            node.status, node.source, node.parser_status = Status.PLUGIN, Source.PARSER, Status.PLUGIN
            node.reason = answer.crashers[i]
        elif i in answer.cut:
            node.reason = f"{node.reason}; not sent to the parser ({answer.cut[i]})"
            node.source = Source.TABLE
        elif i in answer.plugin:
            node.status, node.source, node.parser_status = Status.PLUGIN, Source.PARSER, Status.PLUGIN
            node.reason = parser_reason(node.op_type, name, answer.plugin[i])
        elif i in answer.unverified:
            node.reason = f"{node.reason}; the parser could not verify it: {answer.unverified[i]}"
            node.source = Source.TABLE
        else:
            node.parser_status = Status.DELEGATE
            check = BUILD_TIME_CHECKS[node.op_type]
            why = check(gm.graph, node) if not node.is_custom_domain else None
            if why:
                node.status, node.source = Status.PLUGIN, Source.TABLE
                node.reason = (
                    f"{name} {answer.version} parser imports it, but the builder rejects it: {node.op_type}: {why}"
                )
            else:
                node.status, node.source = Status.DELEGATE, Source.PARSER
                node.reason = f"{name} {answer.version} parser imports it"
    if answer.unverified:
        n = len(answer.unverified)
        gm.warnings.append(
            f"{plural(n, 'node')} keep{'s' if n == 1 else ''} the table's prediction: the parser "
            f"could not verify {'it' if n == 1 else 'them'}."
        )
    if answer.cut:
        n = len(answer.cut)
        gm.warnings.append(
            f"{plural(n, 'node')} {'was' if n == 1 else 'were'} cut before the parser was asked "
            "(malformed ONNX, or the parser crashed with it); the table's prediction stands for "
            f"{'it' if n == 1 else 'them'}."
        )


def _imported_all_but(nodes: Nodes, skip: set[int], reason: str) -> None:
    """Every node but ``skip`` imported by the parser: delegate, by the parser's word, with ``reason`` (columns
    set at once: the common case of a large model, where the parser names a few nodes or none)."""
    n = len(nodes)
    mask = np.ones(n, bool)
    mask[list(skip)] = False
    for column, code in (
        (nodes.status, STATUS_CODE[Status.DELEGATE]),
        (nodes.parser_status, STATUS_CODE[Status.DELEGATE]),
        (nodes.source, SOURCE_CODE[Source.PARSER]),
    ):
        np.frombuffer(column, np.uint8)[mask] = code
    nodes.reason[:] = [reason if m else r for m, r in zip(mask.tolist(), nodes.reason, strict=True)]


def parser_reason(op_type: str, parser: str, desc: str) -> str:
    """The parser's error text, with a plain explanation of the common ones in front."""
    if "Plugin not found" in desc and not desc.startswith("in its body"):
        return f"{parser}: no importer and no plugin registered for '{op_type}' ({desc.strip()})"
    if desc.startswith("UNSUPPORTED_NODE"):
        return f"{parser}: {op_type} is not supported here ({desc})"
    return f"{parser}: {desc.strip()}"


def _engine_layers(gm: GraphModel) -> None:
    """Every layer of an engine drawn from trtexec's files is inside TensorRT already; plugin layers are the
    custom part."""
    gm.warnings = [w for w in gm.warnings if "custom-op output" not in w]  # its shapes come from the layers
    for n in gm.nodes:
        plugin = "plugin" in n.op_type.lower()
        n.status = Status.PLUGIN if plugin else Status.DELEGATE
        n.table_status = n.status
        n.reason = (
            "a plugin layer of the engine: custom CUDA inside TensorRT"
            if plugin
            else f"an engine layer ({n.op_type}), read from trtexec's files"
        )


def analyze_model(
    path: str | os.PathLike[str] | None = None, *, parser: str = "auto", dims: dict[str, int] | None = None
) -> GraphModel:
    """Run :func:`analyze` to the end (no progress, no cancel)."""
    return run_to_end(analyze(path, parser=parser, dims=dims))
