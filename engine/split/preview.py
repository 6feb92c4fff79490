"""The preview model: the first view of a large file from the light pass (:mod:`splitscope.engine.onnxio.light`).

Each node coloured by the operator table's answer for its op alone (no attributes, types or bodies are read
yet), with the graph's adjacency and topological order, which the view's grouping needs. The analysis
yields it before the full load and replaces it with the full model, laid out again the same way.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Generator, Sequence
from pathlib import Path

import numpy as np
from splitscope.engine.heap import drop_in_steps
from splitscope.engine.jobs import CancelToken, JobEvent, Partial, Progress, gc_paused
from splitscope.engine.model import (
    Adjacency,
    Graph,
    GraphModel,
    Initializers,
    Nodes,
    Source,
    Status,
    Tensors,
    kahn_order,
    link_nodes,
)
from splitscope.engine.model.coded import Coded
from splitscope.engine.model.tensors import INITIALIZER_FLAG
from splitscope.engine.model.transfer import index_arrived
from splitscope.engine.onnxio.light import read_light
from splitscope.engine.onnxio.scopes import scope_ids
from splitscope.engine.split.early import NONE, PREVIEW_MIN_BYTES, PreviewChild, claim
from splitscope.engine.split.parser import resolve_backend
from splitscope.engine.split.table import TARGET_RTX, TARGET_TENSORRT, predict_op


def _adjacency(nodes: Nodes, producer: np.ndarray) -> Adjacency | None:
    """The preview's adjacency, or None on a cycle (the full load names it)."""
    preds, succs, edges, self_reader = link_nodes(nodes, producer, all_inputs=False)
    if self_reader is not None:
        return None
    order, _ = kahn_order(preds, succs)
    return Adjacency(order, preds, succs, edges) if len(order) == len(nodes) else None


def _weight(tensors: Tensors, name: str) -> bool:
    r = tensors.names.get(name)
    return r is not None and tensors.is_initializer_row(r)


def _verdicts(ops: Coded[str], domains: Coded[str], target: str) -> tuple[Coded[Status], Coded[str]]:
    """The operator table's answer for each node's op and domain, asked once per distinct pair: each node's status
    and reason as codes."""
    n_dom = max(len(domains.values), 1)
    pair = np.frombuffer(ops.codes, np.uint32).astype(np.int64) * n_dom
    if len(domains.codes):
        pair += np.frombuffer(domains.codes, np.uint32)
    seen = np.zeros(max(len(ops.values), 1) * n_dom, np.bool_)
    seen[pair] = True
    asked = np.flatnonzero(seen)
    said = [predict_op(ops.values[k // n_dom], domains.values[k % n_dom], target) for k in asked.tolist()]
    row = np.zeros(len(seen), np.uint32)
    row[asked] = np.arange(len(asked), dtype=np.uint32)
    codes = array("I", row[pair].tobytes())
    return Coded.of_codes([v[0] for v in said], codes), Coded.of_codes([v[1] for v in said], array("I", codes))


def preview_model(path: str | os.PathLike[str], target: str) -> tuple[GraphModel, Sequence[int]] | None:
    """A preview :class:`GraphModel` of the file's main graph (see the module's note), or None."""
    light = read_light(path)
    if light is None or not light.names:
        return None
    tensors = Tensors()
    status, reasons = _verdicts(light.ops, light.domains, target)
    nodes = Nodes(tensors.names, tensors.add, tensors.add_many)  # inputs and outputs as rows of the tensors
    # The light pass's names come distinct, in the order interning every input, then every output, gives (then the
    # weights no node reads): its rows are the table's.
    tensors.add_distinct(light.tensor_names)
    rows = (light.in_rows, light.in_off, light.out_rows, light.out_off)
    scopes = scope_ids(light.names, light.meta, nodes.scope)
    nodes.extend(light.names, light.ops, light.domains, rows, scopes, status, reasons, Source.TABLE)
    flags = np.frombuffer(tensors.flags, np.uint8)
    flags[np.frombuffer(light.weight_rows, np.int32)] |= INITIALIZER_FLAG
    del flags  # the column may grow again
    inputs = [name for name in light.graph_inputs if not _weight(tensors, name)]
    for name in inputs:
        tensors.tensor(name).is_input = True
    for name in light.graph_outputs:
        tensors.tensor(name).is_output = True
    out_rows = np.frombuffer(nodes.out_rows, dtype=np.int32) if nodes.out_rows else np.zeros(0, np.int32)
    maker = np.repeat(np.arange(len(nodes), dtype=np.int32), np.diff(np.frombuffer(nodes.out_off, dtype=np.int32)))
    made = out_rows >= 0
    producer = np.full(len(tensors.names), -1, dtype=np.int32)
    producer[out_rows[made]] = maker[made]  # a name made twice: the last maker, as the full load has it
    adjacency = _adjacency(nodes, producer)
    if adjacency is None:
        return None  # a cycle: the full load names it
    tensors.producer = array("i", producer.tobytes())
    tensors.freeze()  # the preview records no consumers
    nodes.compact()
    graph = Graph(
        light.name,
        nodes,
        tensors,
        inputs,
        light.graph_outputs,
        Initializers(),
        {},
        "",
        adjacency,
    )
    gm = GraphModel(Path(path), graph, light.ir_version, light.opsets, "", preview=True)
    drop_in_steps(light.names)  # its objects, not the preview's: let go of
    return gm, adjacency.order


def target_of(parser: str) -> str:
    """The operator table's target for ``parser`` (auto|tensorrt|rtx|table).

    Raises:
        ParserUnavailableError: a named parser that is not installed.
    """
    return TARGET_RTX if resolve_backend(parser) == "tensorrt_rtx" else TARGET_TENSORRT


def preview_job(
    path: str | os.PathLike[str], parser: str, cancel: CancelToken | None = None
) -> Generator[JobEvent, None, None]:
    """Yield the preview of a large file as a :class:`Partial` (nothing for a small or unreadable one): the
    window's analysis runs it before the full load, so a first view shows while the rest is read. A preview started
    for the file as the app started (:mod:`splitscope.engine.split.early`) is taken when it was made for the same
    target; otherwise it is made here."""
    path = Path(path)
    child = claim(path, parser)
    try:
        yield from _preview_events(path, parser, child, cancel)
    finally:
        if child is not None:
            child.kill()  # closed early (a cancel, another open): the child's work is not wanted


def _preview_events(
    path: Path, parser: str, child: PreviewChild | None, cancel: CancelToken | None
) -> Generator[JobEvent, None, None]:
    try:
        if path.stat().st_size < PREVIEW_MIN_BYTES:
            return
        target = target_of(parser)
    except Exception:  # noqa: BLE001 - a missing file or parser: the full analysis says so in its words
        return
    yield Progress("load", 0, 6, f"Reading the structure of {path.name}")
    with gc_paused():
        made = None
        if child is not None:
            made = child.result(target, None if cancel is None else lambda: cancel.cancelled)
            if made is NONE:
                return  # the child read the file and found nothing to show: the full load says why
            if made is not None:
                made[0].path = path  # as the caller names it (the child was given it resolved)
        if made is None and (cancel is None or not cancel.cancelled):
            made = preview_model(path, target)
    if made is not None:
        yield Partial(made[0], "The structure read from the file, each op coloured by the operator table")
        if cancel is None or not cancel.cancelled:
            index_arrived()  # its name tables' indexes, left for after the first view (the window resumes here then)
