"""The JSON document of an analysis (``splitscope analyze --json``), for CI and reports (schema v1)."""

from __future__ import annotations

from typing import Any

from splitscope.engine.codec import CODECS, stamp
from splitscope.engine.model import GraphModel, Role, Source, Status
from splitscope.engine.model.nodes import NO_STATUS_CODE
from splitscope.engine.report.stats import headline, role_summary, split_summary, uncounted_flops

SCHEMA_VERSION = CODECS["analysis"].version


def to_json(gm: GraphModel, summary: dict[str, Any] | None = None) -> dict[str, Any]:
    """The analysis as a JSON-ready dict (schema ``splitscope-analysis`` v1); ``summary``: a
    :func:`split_summary` already computed."""
    p = gm.parser
    nodes = gm.nodes
    labels = nodes.labels()
    summary = summary or split_summary(gm)
    return stamp(
        "analysis",
        {
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
            "nested_nodes": nodes.count_nested(),
            "summary": summary,
            "roles": role_summary(gm),
            "flops": gm.total_flops(),
            "flops_uncounted": dict(zip(("custom", "unknown_shape"), uncounted_flops(gm), strict=True)),
            "headline": headline(gm, summary),
            "partitions": [
                {
                    "index": part.index,
                    "nodes": [labels[i] for i in part.nodes],
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
            "parser_subgraphs": [[labels[i] for i in sg] for sg in gm.parser_subgraphs],
            "build": gm.build,
            "unproven": _unproven(gm),
            "symbolic_dims": {d: gm.dims.get(d) for d in dict.fromkeys([*gm.dims, *gm.missing_dims])},
            "input_shapes": input_shapes(gm),
            "dim_notes": gm.dim_notes,
            "missing_dims": gm.missing_dims,
            "assumed_shapes": sorted(gm.assumed_shapes),
            "warnings": gm.warnings,
            "node_status": node_status(gm, labels),
        },
    )


def node_status(gm: GraphModel, labels: list[str] | None = None) -> list[dict[str, Any]]:
    """One entry per main-graph node, read from the node columns (a 50k-node model in a tenth of a second)."""
    t = gm.graph.nodes
    statuses = [s.value for s in Status]
    roles = [r.value for r in Role]
    sources = [s.value for s in Source]
    rows = []
    columns = zip(
        labels or t.labels(), t.op_type, t.domain, t.status, t.role, t.reason, t.source, t.cause, t.remedy,
        t.values("flops"), t.values("bytes"), t.scope, t.table_status, t.parser_status,
        strict=True,
    )  # fmt: skip
    for label, op, domain, st, role, reason, src, cause, remedy, flops, nbytes, scope, ts, ps in columns:
        row: dict[str, Any] = {
            "name": label, "op_type": op, "domain": domain, "status": statuses[st], "role": roles[role],
            "reason": reason, "source": sources[src],
        }  # fmt: skip
        if remedy:
            row["cause"], row["remedy"] = cause, remedy
        row["flops"], row["bytes"], row["scope"] = flops, nbytes, "/".join(scope)
        if ts != NO_STATUS_CODE:
            row["table_status"] = statuses[ts]
        if ps != NO_STATUS_CODE:
            row["parser_status"] = statuses[ps]
        rows.append(row)
    return rows


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
