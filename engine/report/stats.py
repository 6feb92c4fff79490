"""Figures of an analysis: split and role summaries, the op table, the headline."""

from __future__ import annotations

from collections import Counter
from typing import Any

from splitscope.engine.model import GraphModel, Role, Status
from splitscope.engine.text import format_bytes, node_op_label, plural


def split_summary(gm: GraphModel) -> dict[str, dict[str, float | int]]:
    """Per status: node count, node share, FLOPs and FLOPs share of the main graph."""
    total_nodes = len(gm.nodes) or 1
    total_flops = gm.total_flops()
    counts = {st: 0 for st in Status}
    flops = {st: 0 for st in Status}
    for n in gm.nodes:
        counts[n.status] += 1
        flops[n.status] += n.flops or 0
    return {st.value: {"nodes": counts[st], "node_share": counts[st] / total_nodes, "flops": flops[st],
                       "flops_share": flops[st] / total_flops if total_flops else 0.0} for st in Status}


def role_summary(gm: GraphModel) -> dict[str, dict[str, int]]:
    """Per role: node count and FLOPs, split by status."""
    out: dict[str, dict[str, int]] = {}
    for role in Role:
        members = [n for n in gm.nodes if n.role is role]
        if not members:
            continue
        out[role.value] = {"nodes": len(members), "flops": sum(n.flops or 0 for n in members),
                           **{f"{st.value}_nodes": sum(1 for n in members if n.status is st) for st in Status}}
    return out


def op_table(gm: GraphModel) -> list[dict[str, Any]]:
    """One row per op type (``domain::op``): count, plugin count, FLOPs and share, roles, member nodes.

    Plugin op types first, then by FLOPs share.
    """
    total = gm.total_flops() or 1
    by: dict[str, list[int]] = {}
    for n in gm.nodes:
        by.setdefault(node_op_label(n), []).append(n.index)
    rows = []
    for op, members in by.items():
        nodes = [gm.nodes[i] for i in members]
        plugin = sum(1 for n in nodes if n.status is Status.PLUGIN)
        flops = sum(n.flops or 0 for n in nodes)
        rows.append({"op": op, "count": len(members), "plugin": plugin, "flops": flops, "flops_share": flops / total,
                     "roles": sorted({n.role.value for n in nodes}), "nodes": members})
    rows.sort(key=lambda r: (-(r["plugin"] > 0), -r["flops_share"], -r["count"]))
    return rows


def headline(gm: GraphModel, summary: dict[str, dict[str, float | int]] | None = None) -> str:
    """One sentence: share delegated, custom ops, partitions, bytes crossing."""
    s = summary or split_summary(gm)
    plugin_ops = Counter(n.op_type for n in gm.nodes if n.status is Status.PLUGIN)
    n_parts = len(gm.partitions)
    unknown = sum(1 for n in gm.nodes if n.status is Status.PLUGIN and n.flops is None)
    n_plugin = int(s["plugin"]["nodes"])
    return (f"{s['delegate']['flops_share']:.0%} of known FLOPs delegated ({s['delegate']['nodes']} of "
            f"{plural(len(gm.nodes), 'node')}), {plural(n_plugin, 'node')} of {plural(len(plugin_ops), 'op type')} "
            f"need{'s' if n_plugin == 1 else ''} custom CUDA, {plural(n_parts, 'engine partition')}, "
            f"{format_bytes(gm.boundary_bytes)} crossing partition boundaries per inference"
            + (f"; the cost of {plural(unknown, 'custom node')} is unknown until profiled" if unknown else ""))


def panel_stats(gm: GraphModel) -> dict[str, Any]:
    """Everything the GUI's summary and ops panels show, computed off the UI thread."""
    summary = split_summary(gm)
    return {"headline": headline(gm, summary), "summary": summary, "roles": role_summary(gm), "ops": op_table(gm)}
