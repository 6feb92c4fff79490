"""The JSON document of an analysis (``splitscope analyze --json``), for CI and reports (schema v1)."""

from __future__ import annotations

from typing import Any

from splitscope.engine.model import GraphModel
from splitscope.engine.report.stats import headline, role_summary, split_summary, uncounted_flops

SCHEMA_VERSION = 1


def to_json(gm: GraphModel, summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """The analysis as a JSON-ready dict (schema ``splitscope-analysis`` v1); ``summary``: a
    :func:`split_summary` already computed."""
    p = gm.parser
    nodes = gm.nodes
    summary = summary or split_summary(gm)
    return {
        "schema": "splitscope-analysis",
        "schema_version": SCHEMA_VERSION,
        "model": str(gm.path) if gm.path else None,
        "producer": gm.producer,
        "ir_version": gm.ir_version,
        "opsets": gm.opsets,
        "parser": {
            "name": p.name,
            "version": p.version,
            **({"target": p.target} if p.name == "table" else {}),
            "calls": p.calls,
            "seconds": round(p.seconds, 3),
            "notes": p.notes,
        },
        "nodes": len(nodes),
        "nested_nodes": sum(1 for _ in gm.graph.walk()) - len(nodes),
        "summary": summary,
        "roles": role_summary(gm),
        "flops": gm.total_flops(),
        "flops_uncounted": dict(zip(("custom", "unknown_shape"), uncounted_flops(gm), strict=True)),
        "headline": headline(gm, summary),
        "partitions": [
            {
                "index": part.index,
                "nodes": [nodes[i].label for i in part.nodes],
                "flops": part.flops,
                "boundary_tensors": [
                    {"name": t.name, "bytes": t.bytes, "direction": t.direction, "symbolic": t.symbolic}
                    for t in part.boundary_tensors
                ],
                "boundary_bytes": part.boundary_bytes,
            }
            for part in gm.partitions
        ],
        "boundary_bytes": gm.boundary_bytes,
        "parser_subgraphs": [[nodes[i].label for i in sg] for sg in gm.parser_subgraphs],
        "build": gm.build,
        "unproven": _unproven(gm),
        "symbolic_dims": {d: gm.dims.get(d) for d in dict.fromkeys([*gm.dims, *gm.missing_dims])},
        "input_shapes": input_shapes(gm),
        "dim_notes": gm.dim_notes,
        "missing_dims": gm.missing_dims,
        "assumed_shapes": sorted(gm.assumed_shapes),
        "warnings": gm.warnings,
        "node_status": [
            {
                "name": n.label,
                "op_type": n.op_type,
                "domain": n.domain,
                "status": n.status.value,
                "role": n.role.value,
                "reason": n.reason,
                "source": n.source.value,
                **({"cause": n.cause, "remedy": n.remedy} if n.remedy else {}),
                "flops": n.flops,
                "bytes": n.bytes,
                "scope": "/".join(n.scope),
                **({"table_status": n.table_status.value} if n.table_status is not None else {}),
                **({"parser_status": n.parser_status.value} if n.parser_status is not None else {}),
            }
            for n in nodes
        ],
    }


def input_shapes(gm: GraphModel) -> dict[str, list[int | str | None]]:
    """Each input's shape at the dims in force (a dim without a value keeps its name)."""
    out: dict[str, list[int | str | None]] = {}
    for name in gm.graph.inputs:
        t = gm.graph.tensors.get(name)
        if t is None or t.shape is None:
            continue
        out[name] = [d if isinstance(d, int) else gm.dims.get(d, d) if isinstance(d, str) else None for d in t.shape]
    return out


def _unproven(gm: GraphModel) -> dict[str, Any]:
    """Nodes a real parser was asked about but could not prove (cut, unverified, or all after a crash)."""
    asked = gm.parser.name != "table" or any(n.startswith("unproven") for n in gm.parser.notes)
    labels = [n.label for n in gm.nodes if n.parser_status is None] if asked else []
    return {"count": len(labels), "nodes": labels[:1000]}
