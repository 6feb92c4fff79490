"""``splitscope analyze``: the summary it prints, and verifying the split by building (each partition built with
TensorRT-RTX in a child process). Split out of :mod:`splitscope.engine.cli`, which dispatches to it."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from splitscope.engine.dims import parse_dims
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.text import plural

_dims = parse_dims
"""The ``--dim`` values of a verb (:func:`splitscope.engine.dims.parse_dims`)."""


def _ranges(values: list[str]) -> dict[str, tuple[int, int]]:
    """``--dim-range NAME=MIN:MAX`` values."""
    out: dict[str, tuple[int, int]] = {}
    for v in values:
        name, sep, span = v.partition("=")
        lo, colon, hi = span.partition(":")
        if not sep or not colon or not (lo.strip().isdigit() and hi.strip().isdigit()):
            raise SplitscopeError(f"--dim-range expects NAME=MIN:MAX (e.g. batch=1:32), got '{v}'.")
        out[name.strip()] = (int(lo), int(hi))
    return out


class _Bar:
    """A one-line progress bar on a terminal's stderr (nothing when stderr is not a terminal)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, done: int, total: int, message: str) -> None:
        import time

        if not self.tty or time.monotonic() - self.last < 0.1:
            return
        self.last = time.monotonic()
        frac = done / total if total else 0.0
        bar = "#" * int(frac * 24)
        sys.stderr.write(f"\r[{bar:<24}] {frac:4.0%} {message[:60]:<60}")
        sys.stderr.flush()

    def end(self) -> None:
        if self.tty:
            sys.stderr.write("\r" + " " * 94 + "\r")
            sys.stderr.flush()


PARSERS = ["auto", "tensorrt", "rtx", "table"]
"""Who splits the model: ``auto`` (TensorRT if installed, else TensorRT-RTX, else the support table), or one of them."""


def add_dims(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """``--dim NAME=INT``, repeatable: a value for one of the model's symbolic dims."""
    p.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=INT",
        help=help or "value of a symbolic dim of the inputs (repeat; a batch-like dim not given is 1)",
    )


def add_parser_choice(p: argparse.ArgumentParser, help: str | None = None) -> None:
    """``--parser``: who decides the split."""
    p.add_argument(
        "--parser", choices=PARSERS, default="auto", help=help or "who splits the model (auto: the best installed here)"
    )


def add_output(p: argparse.ArgumentParser, json_help: str = "write the result as JSON") -> None:
    """``--json PATH`` and ``-q``, which every verb has."""
    p.add_argument("--json", metavar="PATH", help=json_help)
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def _write_json(args: argparse.Namespace, doc: Any) -> None:
    """``--json PATH``: the document, written atomically."""
    import json

    from splitscope.engine.report.files import write_text_atomic

    if args.json:
        write_text_atomic(args.json, json.dumps(doc, indent=1))
        if not args.quiet:
            print(f"wrote {args.json}")


@contextlib.contextmanager
def progress_bar() -> Iterator[_Bar]:
    """A progress callback for the API's functions, drawn on a terminal and cleared at the end."""
    bar = _Bar()
    try:
        yield bar
    finally:
        bar.end()  # an interrupted job writes nothing: its files are written atomically at its end


def _run_with_bar(job: Any) -> Any:
    """Drive a job generator to its end with a progress bar on a terminal; its return value."""
    from splitscope.engine.jobs import Progress

    bar = _Bar()
    try:
        while True:
            try:
                ev = next(job)
            except StopIteration as stop:
                return stop.value
            if isinstance(ev, Progress):
                bar(ev.done, ev.total, ev.message)
    finally:
        bar.end()  # an interrupted job writes nothing: its files are written atomically at its end


def _verify_by_building(gm: object, budget: float, ranges: list[str] | None = None) -> dict[str, Any]:
    """Build each partition with TensorRT-RTX in a child process (a builder can crash), narrow down what fails,
    and give the nodes it rejects the status plugin (source builder); partitions are counted again. ``ranges``:
    the ``--dim-range`` values, built over with an optimisation profile."""
    from splitscope.engine.jobs import CancelToken
    from splitscope.engine.model import GraphModel
    from splitscope.engine.process import JobProcess
    from splitscope.engine.runtime.trt import trt_module
    from splitscope.engine.runtime.verify import apply_report, check_ranges, child_args

    assert isinstance(gm, GraphModel) and gm.path is not None
    spans = check_ranges(gm, _ranges(ranges or []))
    trt_module("rtx")  # say at once that it is not installed
    doc = _run_with_bar(JobProcess("verify", child_args(gm, budget, ranges=spans)).events(CancelToken()))
    apply_report(gm, doc)
    return doc


def _folded_into(gm: object, part: Sequence[int], const: list[bool]) -> int:
    """How many constant-only nodes feed ``part`` (directly or through other constant-only nodes): one walk back
    from its nodes over constant producers, linear in the graph."""
    from splitscope.engine.model import GraphModel

    assert isinstance(gm, GraphModel)
    preds = gm.graph.adj.preds
    seen: set[int] = set()
    stack = list(part)
    while stack:
        for u in preds[stack.pop()]:
            if const[u] and u not in seen:
                seen.add(u)
                stack.append(u)
    return len(seen - set(part))


def _print_summary(gm: object, summary: dict[str, dict[str, float | int]]) -> None:
    from splitscope.engine.model import GraphModel, Status
    from splitscope.engine.report.stats import flops_text, headline
    from splitscope.engine.text import decided_by, format_bytes, node_op_label

    assert isinstance(gm, GraphModel)
    p = gm.parser
    work = "FLOPs unknown (a dim has no value)" if gm.missing_dims else flops_text(gm, where=False)
    print(
        f"{gm.path}: {plural(len(gm.nodes), 'node')}, split by the {decided_by(p)}, at {gm.shapes_label()}"
        + (f": {work}" if work else "")
    )
    for note in gm.dim_notes:
        print(f"note: {note}")
    print(headline(gm, summary))
    plugin = [n for n in gm.nodes if n.status is Status.PLUGIN]
    if plugin:
        print(
            "Plugin layers (custom CUDA inside the engine):"
            if gm.engine_graph
            else "Needs custom CUDA / a TensorRT plugin:"
        )
        by_op = Counter(node_op_label(n) for n in plugin)
        for op, count in by_op.most_common(10):
            first = next(n for n in plugin if node_op_label(n) == op)
            print(f"  {op} x{count}: {first.reason[:160]}")
            if first.remedy:
                print(f"    fix: {first.remedy}")
        if len(by_op) > 10:
            print(f"  ... and {len(by_op) - 10} more op types")
    from splitscope.engine.split.partitions import constant_nodes

    const = constant_nodes(gm.graph, gm.order)
    for part in gm.partitions[:8]:
        folded = _folded_into(gm, part.nodes, const)
        print(
            f"  engine partition {part.index + 1}: {plural(len(part.nodes), 'node')}"
            + (f" (+{folded} constant-only, folded in as weights)" if folded else "")
            + f", {plural(len(part.boundary_tensors), 'boundary tensor')}, "
            + (
                f"{format_bytes(part.boundary_bytes)} and some of unknown size"
                if any(t.bytes is None for t in part.boundary_tensors)
                else format_bytes(part.boundary_bytes)
            )
        )
    if len(gm.partitions) > 8:
        print(f"  ... and {plural(len(gm.partitions) - 8, 'more partition')}")
    if gm.build is not None:
        b = gm.build
        print(
            f"verified by building with {b['backend']} {b['version']} at {b['shapes']} in {b['seconds']:.1f} s"
            + ("" if b["complete"] else " (stopped before every partition was built: over the budget or cancelled)")
        )
        for pb in b["partitions"]:
            if pb["status"] != "built":
                who = ", ".join(pb["nodes_blamed"][:4]) or "no node found"
                print(f"  partition {pb['index'] + 1} {pb['status']}: {pb['error'][:160]} -> rejects {who}")
    for w in gm.warnings:
        print(f"warning: {w}", file=sys.stderr)


def _cmd_analyze(args: argparse.Namespace) -> int:
    from splitscope.engine import api
    from splitscope.engine.report.files import write_json
    from splitscope.engine.report.stats import split_summary

    with progress_bar() as bar:
        gm = api.analyze(args.model, parser=args.parser, dims=_dims(args.dim), progress=bar).model
    if args.verify == "build":
        _verify_by_building(gm, args.verify_budget, args.dim_range)
    summary = split_summary(gm)  # once: the printed summary and the JSON share it
    if not args.quiet:
        _print_summary(gm, summary)
    if args.json:
        write_json(gm, args.json, summary)
        if not args.quiet:
            print(f"wrote {args.json}")
    return 0
