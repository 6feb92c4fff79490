"""Figures of an analysis: split and role summaries, the op table, the headline."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
from splitscope.engine.model import GraphModel, Role, Status
from splitscope.engine.model.nodes import ROLE_CODE, STATUS_CODE
from splitscope.engine.text import format_bytes, node_op_label, plural


def split_summary(gm: GraphModel) -> dict[str, dict[str, float | int]]:
    """Per status: node count, node share, FLOPs and FLOPs share of the main graph."""
    t = gm.graph.nodes
    total_nodes = len(t) or 1
    total_flops = gm.total_flops()
    counts = [0] * len(STATUS_CODE)
    flops = [0] * len(STATUS_CODE)
    for code, f in zip(t.status, t.values("flops"), strict=True):
        counts[code] += 1
        flops[code] += f or 0
    return {
        st.value: {
            "nodes": counts[STATUS_CODE[st]],
            "node_share": counts[STATUS_CODE[st]] / total_nodes,
            "flops": flops[STATUS_CODE[st]],
            "flops_share": flops[STATUS_CODE[st]] / total_flops if total_flops else 0.0,
        }
        for st in Status
    }


def uncounted_flops(gm: GraphModel) -> tuple[int, int]:
    """Main-graph nodes whose FLOPs :meth:`~splitscope.engine.model.GraphModel.total_flops` leaves out: (opaque
    custom ops, whose cost is unknown until measured; nodes whose FLOPs are not countable at the dims in force)."""
    from splitscope.engine.split.costs import counted_as_standard

    t = gm.graph.nodes
    raw = np.frombuffer(t.flops, np.int64) if len(t.flops) else np.zeros(0, np.int64)
    rows = np.flatnonzero(raw < 0).tolist()  # the unknown, and those past 64 bits (kept apart: known)
    missing = [t[i] for i in rows if raw[i] == -1 or t.huge.get(("flops", i)) is None]
    custom = sum(1 for n in missing if n.is_custom_domain and n.function is None and not counted_as_standard(n))
    return custom, len(missing) - custom


def flops_text(gm: GraphModel, where: bool = True) -> str:
    """The model's FLOPs a run, as the CLI, the window and the report say them: what is not counted said beside the
    total (a custom op's cost is unknown until measured; a node whose shapes at the dims in force are unknown is
    left out, so the total is a lower bound), "" for a model with none; ``where``: with the shapes in force (a line
    that says them already leaves them out)."""
    from splitscope.engine.text import format_flops

    if gm.missing_dims:
        return "FLOPs unknown until every input dim has a value"
    total = gm.total_flops()
    custom, unknown = uncounted_flops(gm)
    if not total and not unknown and not custom:
        return ""
    at = f" at {gm.shapes_label()}" if where else ""
    text = f"{'at least ' if unknown else ''}{format_flops(total)} per inference{at}"
    left = [f"{plural(custom, 'custom-op node')} unknown until measured"] if custom else []
    if unknown:
        left.append(f"{plural(unknown, 'node')} not countable at these shapes")
    return text + (f" (not counted: {'; '.join(left)})" if left else "")


def role_summary(gm: GraphModel) -> dict[str, dict[str, int]]:
    """Per role: node count and FLOPs, split by status (the columns counted in numpy: a million nodes hold no
    thread long)."""
    t = gm.graph.nodes
    acc: dict[int, list[int]] = {}  # role code: [nodes, flops, nodes of each status]
    if len(t):
        role = np.frombuffer(t.role, np.uint8)
        status = np.frombuffer(t.status, np.uint8)
        flops = np.frombuffer(t.flops, np.int64)
        known = np.where(flops >= 0, flops, 0)
        exact = int(known.max()) < (1 << 62) // len(t)  # every role's sum fits in 64 bits
        huge = [(i, v) for (column, i), v in t.huge.items() if column == "flops" and flops[i] == -2]
        k = len(STATUS_CODE)
        counts = np.bincount(role.astype(np.int64) * k + status, minlength=256 * k).reshape(-1, k)
        for code in np.flatnonzero(counts.sum(axis=1)).tolist():
            mine = role == code
            total = int(known[mine].sum()) if exact else sum(int(v) for v in known[mine])
            total += sum(v for i, v in huge if role[i] == code)
            acc[code] = [int(counts[code].sum()), total, *counts[code].tolist()]
    out: dict[str, dict[str, int]] = {}
    for role in Role:
        row = acc.get(ROLE_CODE[role])
        if row is not None:
            out[role.value] = {
                "nodes": row[0],
                "flops": row[1],
                **{f"{st.value}_nodes": row[2 + STATUS_CODE[st]] for st in Status},
            }
    return out


def op_table(gm: GraphModel) -> list[dict[str, Any]]:
    """One row per op type (``domain::op``): count, plugin count, FLOPs and share, roles, member nodes.

    Plugin op types first, then by FLOPs share.
    """
    total = gm.total_flops() or 1
    unknown = bool(gm.missing_dims)  # a share of the FLOPs that are known would read as the whole's: none then
    by: dict[str, list[int]] = {}
    for n in gm.nodes:
        by.setdefault(node_op_label(n), []).append(n.index)
    rows = []
    for op, members in by.items():
        nodes = [gm.nodes[i] for i in members]
        plugin = sum(1 for n in nodes if n.status is Status.PLUGIN)
        flops = sum(n.flops or 0 for n in nodes)
        first = next((n for n in nodes if n.remedy), None)
        rows.append(
            {
                "op": op,
                "count": len(members),
                "plugin": plugin,
                "flops": flops,
                "flops_share": None if unknown else flops / total,
                "roles": sorted({n.role.value for n in nodes}),
                "nodes": members,
                "cause": first.cause if first else "",
                "remedy": first.remedy if first else "",
            }
        )
    rows.sort(key=lambda r: (-(r["plugin"] > 0), -(r["flops_share"] or 0.0), -r["count"]))
    return rows


def plugin_causes(gm: GraphModel) -> list[tuple[str, int, list[str]]]:
    """Plugin nodes of the main graph grouped by cause: (cause, node count, op labels), most nodes first."""
    by: dict[str, tuple[int, Counter[str]]] = {}
    for n in gm.nodes:
        if n.status is Status.PLUGIN:
            cause = n.cause or "rejected by TensorRT"
            count, ops = by.get(cause, (0, Counter()))
            ops[node_op_label(n)] += 1
            by[cause] = (count + 1, ops)
    rows = [(cause, count, [op for op, _ in ops.most_common()]) for cause, (count, ops) in by.items()]
    rows.sort(key=lambda r: -r[1])
    return rows


def _causes_text(gm: GraphModel, limit: int = 3) -> str:
    parts = []
    rows = plugin_causes(gm)
    for cause, count, ops in rows[:limit]:
        shown = ", ".join(ops[:3]) + (", ..." if len(ops) > 3 else "")
        parts.append(f"{cause} ({plural(count, 'node')}: {shown})")
    if len(rows) > limit:
        rest = sum(r[1] for r in rows[limit:])
        parts.append(f"{plural(len(rows) - limit, 'other cause')} ({plural(rest, 'node')})")
    return "; ".join(parts)


def headline(gm: GraphModel, summary: dict[str, dict[str, float | int]] | None = None) -> str:
    """The sentence that leads the summary: what matters most for this model first.

    More than one engine partition: the partitions, the bytes crossing them and the nodes that cause
    them, before any FLOPs share (a split model pays copies and synchronisation on every inference,
    whatever share of FLOPs TensorRT takes). One partition with custom nodes beside it: those nodes by
    cause. Nothing custom: say so.
    """
    if gm.engine_graph:
        return _engine_headline(gm)
    text = _headline(gm, summary)
    nested = gm.graph.nodes.count_nested()
    if nested > len(gm.nodes):  # the network sits in bodies (a voice model's If): say so, or "5 nodes" misleads
        text += f" (and {plural(nested, 'node')} inside their If/Loop/Scan bodies)"
    if gm.build is None and gm.parser.name != "table":
        text += "; parser only, not verified by building"  # (a parenthesis of its own ran into "(at ...)")
    if gm.build is not None:
        rejected = sum(1 for n in gm.nodes if n.source.value == "builder")
        text += (
            f"; verified by building at {gm.build['shapes']}"
            + (f": the builder rejects {plural(rejected, 'node')} the parser imports" if rejected else "")
            + ("" if gm.build.get("complete", True) else " (not every partition was built)")
        )
    if gm.missing_dims:
        return f"{text} (FLOPs and bytes that depend on {', '.join(gm.missing_dims[:3])} are unknown until given)"
    if gm.build is None and any(
        isinstance(d, str) for t in map(gm.graph.tensors.get, gm.graph.inputs) if t for d in t.shape or ()
    ):
        return f"{text} (at {gm.shapes_label()})"  # (a verified one says its shapes already)
    return text


def _engine_headline(gm: GraphModel) -> str:
    """A built engine is never given a split: what it holds, its plugin layers named as such."""
    plugins = [n for n in gm.nodes if n.status is Status.PLUGIN]
    text = f"A built engine of {plural(len(gm.nodes), 'layer')} (no split analysis: TensorRT built it as one engine)"
    if plugins:
        names = ", ".join(n.label for n in plugins[:3]) + (f" and {len(plugins) - 3} more" if len(plugins) > 3 else "")
        text += f"; {plural(len(plugins), 'plugin layer')} (custom CUDA inside the engine): {names}"
    if gm.metadata.get("splitscope.engine_graph") == "names-only":
        text += "; names only (no tensors in the file): the layers are drawn in the engine's order"
    return text


def _headline(gm: GraphModel, summary: dict[str, dict[str, float | int]] | None) -> str:
    s = summary or split_summary(gm)
    n_nodes, n_parts = len(gm.nodes), len(gm.partitions)
    n_plugin = int(s["plugin"]["nodes"])
    share = (
        f"{s['delegate']['flops_share']:.0%} of known FLOPs delegated ({s['delegate']['nodes']:,} of "
        f"{plural(n_nodes, 'node')})"
    )
    plugin = STATUS_CODE[Status.PLUGIN]
    t = gm.graph.nodes
    unknown = sum(1 for st, f in zip(t.status, t.values("flops"), strict=True) if st == plugin and f is None)
    tail = f"; the cost of {plural(unknown, 'custom node')} is unknown until profiled" if unknown else ""
    if n_plugin == 0:
        who = _builder(gm)
        return (
            f"{who} takes all {plural(n_nodes, 'node')}: one engine, nothing crosses a partition boundary"
            if n_parts <= 1
            else f"{who} takes all {plural(n_nodes, 'node')}; {share}"
        )
    if n_parts > 1:
        return (
            f"{plural(n_parts, 'engine partition')}, {format_bytes(gm.boundary_bytes)} crossing their "
            f"boundaries per inference, because {plural(n_plugin, 'node')} need{'s' if n_plugin == 1 else ''} "
            f"custom CUDA: {_causes_text(gm)}. {share}{tail}"
        )
    return (
        f"One engine partition; {plural(n_plugin, 'node')} outside it need{'s' if n_plugin == 1 else ''} "
        f"custom CUDA: {_causes_text(gm)}. {share}{tail}"
    )


def _builder(gm: GraphModel) -> str:
    """Which TensorRT the split is of: TensorRT-RTX where its parser decided it (or the table predicted it), so that
    the headline does not name TensorRT beside a status bar saying TensorRT itself is not installed."""
    p = gm.parser
    rtx = p.name == "tensorrt-rtx" or (p.name == "table" and p.target == "tensorrt-rtx")
    return "TensorRT-RTX" if rtx else "TensorRT"


def panel_stats(gm: GraphModel) -> dict[str, Any]:
    """Everything the GUI's summary and ops panels show, computed off the UI thread."""
    summary = split_summary(gm)
    return {
        "headline": headline(gm, summary),
        "flops_text": flops_text(gm),
        "summary": summary,
        "roles": role_summary(gm),
        "ops": op_table(gm),
    }
