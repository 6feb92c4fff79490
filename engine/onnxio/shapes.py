"""Types and shapes: ONNX shape inference that survives custom ops, in process or in a child.

ONNX cannot infer through custom-domain ops; :func:`infer_shapes` assumes each
such op's first output has its first input's type and shape so that costs
downstream stay known, and says so.
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import Any, cast

import onnx
from onnx import AttributeProto
from splitscope.engine.jobs import CancelToken
from splitscope.engine.model import Dim, Graph, GraphModel
from splitscope.engine.model.tensors import sharing
from splitscope.engine.onnxio.concrete import concrete_shapes, fixed_model
from splitscope.engine.onnxio.graph import _shape_of, build_graph
from splitscope.engine.onnxio.loader import LoadedModel
from splitscope.engine.text import plural


def _is_opaque(node: onnx.NodeProto, functions: set[tuple[str, str]]) -> bool:
    return (
        node.domain not in ("", "ai.onnx", "ai.onnx.ml")
        and (node.domain, node.op_type) not in functions
        and len(node.input) > 0
        and bool(node.input[0])
        and len(node.output) > 0
    )


def infer_shapes(m: onnx.ModelProto, warnings: list[str]) -> tuple[onnx.ModelProto, set[str]]:
    """Run ONNX shape inference without failing on models it cannot fully type.

    ONNX cannot infer through custom-domain ops, which would leave everything
    downstream of one unknown. For inference only, each such op's first output
    is assumed to have its first input's type and shape (true of most custom
    activations, norms and attention kernels); the assumed tensors are returned
    so callers can say so.

    Returns
    -------
    (inferred model, names of tensors whose type was assumed)
    """
    functions = {(f.domain, f.name) for f in m.functions}
    swapped: list[tuple[int, onnx.NodeProto]] = []
    for idx, node in enumerate(m.graph.node):
        if _is_opaque(node, functions):
            stand_in = onnx.helper.make_node("Identity", [node.input[0]], [node.output[0]], name=node.name)
            original = onnx.NodeProto()
            original.CopyFrom(node)  # `node` is a view into the repeated field
            swapped.append((idx, original))
            m.graph.node[idx].CopyFrom(stand_in)
    try:
        out = onnx.shape_inference.infer_shapes(m, check_type=False, strict_mode=False, data_prop=True)
    except Exception as e:  # noqa: BLE001 - shape inference is best effort
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        warnings.append(f"Shape inference stopped ({first[:200]}); some shapes and FLOPs are unknown.")
        out = m
    assumed: set[str] = set()
    for idx, node in swapped:
        m.graph.node[idx].CopyFrom(node)
        if out is not m:
            out.graph.node[idx].CopyFrom(node)
        assumed.add(node.output[0])
    if assumed:
        warnings.append(
            f"Shapes of {plural(len(assumed), 'custom-op output')} are assumed equal to their first "
            "input's (ONNX cannot infer through custom ops)."
        )
    return out, assumed


def apply_shape_inference(
    gm: GraphModel,
    loaded: LoadedModel,
    in_subprocess: bool = False,
    child: ShapeChild | None = None,
    cancel: CancelToken | None = None,
) -> None:
    """Infer types and shapes and write them into ``gm``'s tensors (and rebuild nested bodies).

    ``in_subprocess`` runs the inference in a child process (:mod:`splitscope.engine.onnxio.shape_proc`),
    so that a GUI thread calling this never holds the GIL for long; ``child``: that process, started already.
    """
    if child is None and in_subprocess and gm.path is not None:
        child = ShapeChild(gm.path)
    if child is not None:
        try:
            result = child.result(cancel)
        finally:
            child.kill()
        if result is None:
            gm.warnings.append("Shape inference failed in its worker process; some shapes and FLOPs are unknown.")
            return
        g, bodies, assumed, warnings = result
        gm.warnings.extend(warnings)
        body_nodes = dict(zip(bodies, g.node, strict=True))
    else:
        m, assumed = infer_shapes(loaded.proto, gm.warnings)
        g = m.graph
        body_nodes = {n.index: g.node[n.index] for n in gm.graph.nodes if n.subgraphs}
    _apply_types(gm.graph, g, body_nodes)
    gm.assumed_shapes = set(assumed)


def infer_concrete(
    model: onnx.ModelProto, dims: dict[str, int], warnings: list[str], rounds: int = 6
) -> tuple[onnx.ModelProto, set[str]]:
    """Shape inference at ``dims``: the inputs fixed, constant chains folded, then, while a pass types more,
    ``Shape`` of what it typed folded in too (the Reshape targets that exporters compute from shapes) and
    inference run again, up to ``rounds`` passes. What stops inference is said in ``warnings``."""
    from splitscope.engine.onnxio.concrete import FoldBudget, FoldState, fold_constants

    budget, state = FoldBudget(), FoldState()  # the folding is carried from pass to pass
    m = fixed_model(model, dims, budget, state)  # its constant chains are folded already
    opset = next((o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), 17)
    said: list[str] = []
    out, assumed = infer_shapes(m, said)
    for _ in range(rounds - 1):
        if not fold_constants(m.graph, opset, inferred=out.graph, budget=budget, state=state):
            break
        said = []
        out, assumed = infer_shapes(m, said)
    warnings.extend(w for w in said if "custom-op output" not in w)  # that one is said by the first inference
    return out, assumed


def apply_concrete_shapes(
    gm: GraphModel,
    proto: onnx.ModelProto | None,
    dims: dict[str, int],
    in_subprocess: bool = False,
    child: ShapeChild | None = None,
    cancel: CancelToken | None = None,
) -> int:
    """Give every tensor of ``gm`` (bodies too) its concrete shape at ``dims`` where inference at those values
    types it (:mod:`splitscope.engine.onnxio.concrete`); the rest keep only their symbolic shape. Returns how
    many tensors got one. ``in_subprocess``: run the inference in the shapes child (a GUI's thread); ``child``:
    that child, started already at ``dims`` (its answer is used only if they are the same dims)."""
    for graph in (gm.graph, *(sub for _, n in gm.graph.walk() for sub in n.subgraphs.values())):
        graph.tensors.at[:] = [None] * len(graph.tensors)
    said: list[str] = []
    if child is not None and child.dims != dims:
        child.kill()
        child = None
    if child is None and in_subprocess and gm.path is not None:
        child = ShapeChild(gm.path, dims)
    if child is not None:
        try:
            result = child.result(cancel)
        finally:
            child.kill()
        if result is None:
            gm.warnings.append(
                "Shape inference at the given dims failed in its worker process; costs use the "
                "symbolic shapes where they can be evaluated."
            )
            return 0
        g, bodies, _, said = result
        body_nodes: dict[int, onnx.NodeProto] | None = dict(zip(bodies, g.node, strict=True))
    elif proto is not None:
        g, body_nodes = infer_concrete(proto, dims, said)[0].graph, None
    else:
        return 0
    gm.warnings.extend(f"At {gm.shapes_label()}: {w}" for w in said if "custom-op output" not in w)
    return _apply_at(gm.graph, g, body_nodes)


def _bodies(
    graph: Graph, g: onnx.GraphProto, body_nodes: dict[int, onnx.NodeProto] | None
) -> Iterator[tuple[Graph, onnx.GraphProto]]:
    """Each body of ``graph`` with the inferred graph of the same body (``body_nodes``: the inferred proto of
    each node that has bodies; by default ``g``'s nodes at the same places)."""
    if body_nodes is None:
        body_nodes = {n.index: g.node[n.index] for n in graph.nodes if n.subgraphs and n.index < len(g.node)}
    for idx, pn in body_nodes.items():
        if idx >= len(graph.nodes):
            continue
        node = graph.nodes[idx]
        for a in pn.attribute:
            if a.type == AttributeProto.GRAPH and a.name in node.subgraphs:
                yield node.subgraphs[a.name], a.g
            elif a.type == AttributeProto.GRAPHS:
                for k, sg in enumerate(a.graphs):
                    body = node.subgraphs.get(f"{a.name}[{k}]")
                    if body is not None:
                        yield body, sg


def _apply_at(graph: Graph, g: onnx.GraphProto, body_nodes: dict[int, onnx.NodeProto] | None = None) -> int:
    """Write the concrete shapes inference at the dims in force found in ``g`` into ``graph``'s tensors (``at``),
    and into its bodies'; returns how many tensors got one."""
    count = 0
    tensors = graph.tensors
    row, shapes, at, share = tensors.rows.get, tensors.shape, tensors.at, sharing()
    for name, shape in concrete_shapes(g).items():
        r = row(name)
        if r is not None and (shapes[r] is None or len(shapes[r] or ()) == len(shape)):
            at[r] = share(shape)
            count += 1
    for r, shp in enumerate(shapes):  # weights and constants: their own shape is concrete
        if at[r] is None and shp is not None and all(isinstance(d, int) and d >= 0 for d in shp):
            at[r] = share(tuple(int(d) for d in shp))  # type: ignore[arg-type]
    return count + sum(_apply_at(body, sg) for body, sg in _bodies(graph, g, body_nodes))


def _apply_types(graph: Graph, g: onnx.GraphProto, body_nodes: dict[int, onnx.NodeProto] | None = None) -> None:
    """Write the types and shapes inference found in ``g`` into ``graph``'s tensors, and into its bodies'.

    The graphs built from the file are kept: only their tensors' types change (bodies are not
    built a second time). ``body_nodes``: the inferred proto of each node that has bodies.
    """
    tensors = graph.tensors
    row, dtypes, shapes, share = tensors.rows.get, tensors.dtype, tensors.shape, sharing()
    for vi in chain(g.input, g.value_info, g.output):
        r = row(vi.name)
        if r is None:
            continue
        dt, shp = _shape_of(vi.type)
        if dt is not None:
            dtypes[r] = dt
        if shp is not None:
            shapes[r] = share(shp)
    for sub, sg in _bodies(graph, g, body_nodes):
        _apply_types(sub, sg)


class ShapeChild:
    """Shape inference in its own process (:mod:`splitscope.engine.onnxio.shape_proc`), started at once and read
    when its answer is needed, so that it runs beside the caller's own work; at ``dims`` when given (the inputs'
    symbolic dims fixed at those values). :meth:`kill` stops it (a cancel, a failure, an answer not needed)."""

    def __init__(self, path: Path, dims: dict[str, int] | None = None) -> None:
        import json
        import subprocess

        from splitscope.engine.entry import child_command, child_env

        env, root = child_env()
        self.dims = dict(dims) if dims is not None else None
        self._proc = subprocess.Popen(
            child_command("shapes", str(path.resolve()), *([json.dumps(dims)] if dims is not None else [])),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=root,
        )
        self._answer: tuple[dict[str, Any], bytearray] | None = None
        self._done = threading.Event()
        threading.Thread(target=self._read, name="shape-child", daemon=True).start()

    def _read(self) -> None:
        """Read the child's header line and the model's bytes into one buffer, a step at a time (the whole output
        joined, then split, then cut was three copies of hundreds of megabytes at a million nodes, each holding the
        interpreter: the window's longest stall, 370 ms)."""
        import json

        from splitscope.engine.pipes import READ_STEP, read_exactly

        out = cast("io.BufferedReader | None", self._proc.stdout)
        try:
            if out is None:
                return
            header = json.loads(out.readline())
            if not isinstance(header, dict) or "bytes" not in header:
                return  # the child said why it could not (the window's analysis goes on without)
            buf = read_exactly(out, int(header["bytes"]))
            if buf is None:
                return  # cut short: no answer
            while out.read(READ_STEP):  # anything after (none is written): read, so the child can end
                pass
            self._answer = (header, buf)
        except Exception:  # noqa: BLE001 - whatever the child wrote: no answer from it
            return
        finally:
            if out is not None:
                out.close()
            self._proc.wait()
            self._done.set()

    def result(
        self, cancel: CancelToken | None = None
    ) -> tuple[onnx.GraphProto, list[int], list[str], list[str]] | None:
        """The inferred graph (value infos, and the nodes that own bodies), those nodes' indices, the tensors
        whose shape was assumed, and what the inference said; None when the child failed. Waits for it (checking
        ``cancel`` every 0.1 s: cancelled, the child is killed)."""
        while not self._done.wait(0.1):
            if cancel is not None and cancel.cancelled:
                self.kill()
                cancel.raise_if_cancelled()
        got, self._answer = self._answer, None
        if got is None or self._proc.returncode != 0:
            return None
        header, body = got
        from splitscope.engine.onnxio.wire import parse_in_chunks

        g = onnx.GraphProto()
        parse_in_chunks(g, body, frozenset({1, 13}))  # nodes, value_info: a step at a time
        del body, got
        return g, list(header["bodies"]), list(header["assumed"]), list(header["warnings"])

    def kill(self) -> None:
        """Stop the child if it still runs (and reap it); an answer read and not taken is let go of."""
        if self._proc.poll() is None:
            self._proc.kill()
        with contextlib.suppress(Exception):
            self._proc.wait(timeout=5)
        self._answer = None


def bind_function_shapes(gm: GraphModel, proto: onnx.ModelProto) -> None:
    """Give each model-local function call a body with shapes, inferred from the call's input types.

    Bodies are shared between calls of the same function with the same input types
    (a cache keyed by them), so a model with thousands of calls infers a handful of
    small graphs.
    """
    fprotos = {(f.domain, f.name): f for f in proto.functions}
    if not fprotos:
        return
    tensors = gm.graph.tensors
    model_opsets = list(proto.opset_import)
    cache: dict[tuple[object, ...], Graph] = {}
    for node in gm.graph.nodes:
        f = fprotos.get((node.domain, node.op_type))
        if f is None or node.function is None:
            continue
        types = []
        for name in node.inputs:
            t = tensors.get(name) if name else None
            types.append((t.dtype, t.shape) if t is not None else (None, None))
        key = (node.domain, node.op_type, tuple(types))
        body = cache.get(key)
        if body is None:
            body = cache[key] = _function_body(f, types, model_opsets, gm)
        node.function = body


def _function_body(
    f: onnx.FunctionProto,
    types: list[tuple[str | None, tuple[Dim, ...] | None]],
    model_opsets: list[onnx.OperatorSetIdProto],
    gm: GraphModel,
) -> Graph:
    inputs = []
    for name, (dtype, shape) in zip(f.input, types, strict=False):
        elem = 0
        if dtype:
            with contextlib.suppress(ValueError):
                elem = onnx.TensorProto.DataType.Value(dtype)
        inputs.append(onnx.helper.make_tensor_value_info(name, elem, list(shape) if shape is not None else None))
    g = onnx.helper.make_graph(
        list(f.node), f.name, inputs, [onnx.helper.make_value_info(o, onnx.TypeProto()) for o in f.output]
    )
    opsets = {o.domain: o.version for o in model_opsets}
    opsets.update({o.domain: o.version for o in f.opset_import})
    m = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid(d, v) for d, v in opsets.items()])
    m.ir_version = 8
    with contextlib.suppress(Exception):  # best effort: an untyped body still shows its structure
        m = onnx.shape_inference.infer_shapes(m, strict_mode=False)
    body, _ = build_graph(
        m.graph,
        f"function {f.domain}::{f.name}",
        None,
        gm.functions,
        None,
        {(o.domain or "ai.onnx"): o.version for o in m.opset_import},
    )
    return body
