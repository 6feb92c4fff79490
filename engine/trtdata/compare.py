"""Two engines of the same model side by side (FP16 vs INT8, TensorRT 10 vs 11, two GPUs)."""

from __future__ import annotations

from typing import Any

from splitscope.engine.trtdata.importer import EngineData
from splitscope.engine.trtdata.precision import layer_precision


def compare(a: EngineData, b: EngineData, top: int = 20) -> dict[str, Any]:
    """Per layer type and per ONNX node (when both are mapped): time and precision in A and B, and the largest
    changes."""

    def by_type(d: EngineData) -> dict[str, float]:
        ms = d.layer_ms()
        out: dict[str, float] = {}
        for x in d.rows:
            out[x.type or "?"] = out.get(x.type or "?", 0.0) + ms.get(x.name, 0.0)
        return out

    ta, tb = by_type(a), by_type(b)
    types = [
        {"type": k, "a_ms": round(ta.get(k, 0.0), 6), "b_ms": round(tb.get(k, 0.0), 6)}
        for k in sorted(ta.keys() | tb.keys(), key=lambda k: -(ta.get(k, 0.0) + tb.get(k, 0.0)))
    ]
    out: dict[str, Any] = {
        "a_total_ms": round(sum(a.layer_ms().values()), 6),
        "b_total_ms": round(sum(b.layer_ms().values()), 6),
        "by_layer_type": types,
        "a_layers": len(a.rows),
        "b_layers": len(b.rows),
    }
    if a.gm is not None and b.gm is not None and a.mapping is not None and b.mapping is not None:
        na, nb = a.node_ms(), b.node_ms()
        pa, pb = a.node_precision(), b.node_precision()
        nodes = []
        for i in na.keys() | nb.keys():
            nodes.append(
                {
                    "index": i,
                    "name": a.gm.nodes[i].name or f"#{i}",
                    "op_type": a.gm.nodes[i].op_type,
                    "a_ms": round(na.get(i, 0.0), 6),
                    "b_ms": round(nb.get(i, 0.0), 6),
                    "a_precision": pa.get(i, ""),
                    "b_precision": pb.get(i, ""),
                }
            )
        nodes.sort(key=lambda r: -abs(r["b_ms"] - r["a_ms"]))
        out["by_node"] = nodes
        out["largest_changes"] = nodes[:top]
        out["precision_changes"] = [r for r in nodes if r["a_precision"] != r["b_precision"]][:top]
    else:  # no model: layers matched by name
        ma, mb = a.layer_ms(), b.layer_ms()
        prec_a = {x.name: layer_precision(x) for x in a.rows}
        prec_b = {x.name: layer_precision(x) for x in b.rows}
        rows = [
            {
                "name": n,
                "a_ms": round(ma.get(n, 0.0), 6),
                "b_ms": round(mb.get(n, 0.0), 6),
                "a_precision": prec_a.get(n, ""),
                "b_precision": prec_b.get(n, ""),
            }
            for n in ma.keys() | mb.keys()
        ]
        rows.sort(key=lambda r: -abs(r["b_ms"] - r["a_ms"]))
        out["largest_changes"] = rows[:top]
    return out
