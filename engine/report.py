"""The JSON document of an analysis (``splitscope analyze --json``), for CI and reports."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from engine.model import GraphModel, Role, Status

SCHEMA_VERSION = 1


def split_summary(gm: GraphModel) -> dict[str, dict[str, float | int]]:
    """Per status: node count, node share, FLOPs and FLOPs share of the main graph."""
    total_nodes = len(gm.nodes) or 1
    total_flops = gm.total_flops()
    out: dict[str, dict[str, float | int]] = {}
    for st in Status:
        members = [n for n in gm.nodes if n.status is st]
        flops = sum(n.flops or 0 for n in members)
        out[st.value] = {
            "nodes": len(members),
            "node_share": len(members) / total_nodes,
            "flops": flops,
            "flops_share": flops / total_flops if total_flops else 0.0,
        }
    return out


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
        by.setdefault((n.domain + "::" if n.domain else "") + n.op_type, []).append(n.index)
    rows = []
    for op, members in by.items():
        nodes = [gm.nodes[i] for i in members]
        plugin = sum(1 for n in nodes if n.status is Status.PLUGIN)
        flops = sum(n.flops or 0 for n in nodes)
        rows.append({"op": op, "count": len(members), "plugin": plugin, "flops": flops, "flops_share": flops / total,
                     "roles": sorted({n.role.value for n in nodes}), "nodes": members})
    rows.sort(key=lambda r: (-(r["plugin"] > 0), -r["flops_share"], -r["count"]))
    return rows


def panel_stats(gm: GraphModel) -> dict[str, Any]:
    """Everything the GUI's summary and ops panels show, computed off the UI thread."""
    return {"headline": headline(gm), "summary": split_summary(gm), "roles": role_summary(gm), "ops": op_table(gm)}


def headline(gm: GraphModel) -> str:
    """One sentence: share delegated, custom ops, partitions, bytes crossing."""
    s = split_summary(gm)
    plugin_ops = Counter(n.op_type for n in gm.nodes if n.status is Status.PLUGIN)
    n_parts = len(gm.partitions)
    unknown = sum(1 for n in gm.nodes if n.status is Status.PLUGIN and n.flops is None)
    return (f"{s['delegate']['flops_share']:.0%} of known FLOPs delegated ({s['delegate']['nodes']} of {len(gm.nodes)} "
            f"nodes), {s['plugin']['nodes']} node(s) of {len(plugin_ops)} op type(s) need custom CUDA, "
            f"{n_parts} engine partition{'s' if n_parts != 1 else ''}, {format_bytes(gm.boundary_bytes)} "
            "crossing partition boundaries per inference"
            + (f"; the cost of {unknown} custom node(s) is unknown until profiled" if unknown else ""))


def format_bytes(n: int) -> str:
    """Human-readable byte count (decimal units, as TensorRT's tools print)."""
    if n < 1000:
        return f"{n} B"
    for unit in ("kB", "MB", "GB", "TB"):
        n_f = n / 1000
        if n_f < 1000 or unit == "TB":
            return f"{n_f:.1f} {unit}"
        n = int(n_f)
    return f"{n} B"


def to_json(gm: GraphModel) -> dict[str, Any]:
    """The analysis as a JSON-ready dict (schema ``splitscope-analysis`` v1)."""
    p = gm.parser
    nodes = gm.nodes
    return {
        "schema": "splitscope-analysis",
        "schema_version": SCHEMA_VERSION,
        "model": str(gm.path) if gm.path else None,
        "producer": gm.producer,
        "ir_version": gm.ir_version,
        "opsets": gm.opsets,
        "parser": {"name": p.name, "version": p.version, **({"target": p.target} if p.name == "table" else {}),
                   "calls": p.calls, "seconds": round(p.seconds, 3), "notes": p.notes},
        "nodes": len(nodes),
        "nested_nodes": sum(1 for _ in gm.graph.walk()) - len(nodes),
        "summary": split_summary(gm),
        "roles": role_summary(gm),
        "flops": gm.total_flops(),
        "headline": headline(gm),
        "partitions": [
            {"index": part.index, "nodes": [nodes[i].label for i in part.nodes], "flops": part.flops,
             "boundary_tensors": [{"name": t.name, "bytes": t.bytes, "direction": t.direction,
                                   "symbolic": t.symbolic} for t in part.boundary_tensors],
             "boundary_bytes": part.boundary_bytes}
            for part in gm.partitions
        ],
        "boundary_bytes": gm.boundary_bytes,
        "symbolic_dims": {d: gm.dims.get(d, 1) for d in gm.symbolic_dims()},
        "assumed_shapes": sorted(gm.assumed_shapes),
        "warnings": gm.warnings,
        "node_status": [
            {"name": n.label, "op_type": n.op_type, "domain": n.domain, "status": n.status.value,
             "role": n.role.value, "reason": n.reason, "source": n.source.value, "flops": n.flops,
             "bytes": n.bytes, "scope": "/".join(n.scope),
             **({"table_status": n.table_status.value} if n.table_status is not None else {}),
             **({"parser_status": n.parser_status.value} if n.parser_status is not None else {})}
            for n in nodes
        ],
    }


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename, so a crash never leaves half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(gm: GraphModel, path: str | os.PathLike[str]) -> None:
    """Write :func:`to_json` atomically; indented for small models, compact past 5000 nodes."""
    doc = to_json(gm)
    text = json.dumps(doc, indent=1) if len(gm.nodes) <= 5000 else json.dumps(doc, separators=(",", ":"))
    write_text_atomic(path, text)
