"""Performance lint of an imported engine: each finding names its layers and nodes, the time at stake and
the fix."""

from __future__ import annotations

from typing import Any

from splitscope.engine.text import plural
from splitscope.engine.trtdata.doc import EngineDoc
from splitscope.engine.trtdata.importer import EngineData
from splitscope.engine.trtdata.mapping import FOREIGN, is_reformat
from splitscope.engine.trtdata.precision import ORDER, layer_precision

PLACEMENT = {
    "Reformat",
    "NoOp",
    "Shuffle",
    "Slice",
    "Concatenation",
    "Gather",
    "Constant",
    "MyelinReformat",
    "signal",
    "wait",
    "Copy",
}
"""Layer types that move or relabel data rather than compute."""
FOREIGN_SHARE = 0.3


def _is_conv(layer_type: str) -> bool:
    return "Convolution" in layer_type or "Gemm" in layer_type or "MatrixMultiply" in layer_type


def _standalone_qdq(x: Any) -> bool:
    """A Q/DQ layer of its own (not fused into a convolution, GEMM or pointwise op)."""
    return (
        not is_reformat(x)
        and x.type != "Reformat"
        and not _is_conv(x.type)
        and any(tok in x.base for tok in ("QuantizeLinear", "DequantizeLinear"))
        and " + " not in x.base
    )


def _asks_half(gm: Any, nodes: list[int]) -> bool:
    """Whether the tensors out of ``nodes`` are all FP16/BF16 (what a layer holding them was asked to run in)."""
    dtypes = set()
    for i in nodes:
        for o in gm.nodes[i].outputs:
            tt = gm.graph.tensors.get(o)
            if tt is not None and tt.dtype:
                dtypes.add(tt.dtype)
    return bool(dtypes) and dtypes <= {"float16", "bfloat16"}


def lint(data: EngineData) -> list[dict[str, Any]]:
    """Findings: ``{kind, layers, nodes, ms, advice}``, the costliest first."""
    rows = data.rows
    ms = data.layer_ms()
    total = sum(ms.values()) or 0.0
    m, gm = data.mapping, data.gm
    prec = [layer_precision(x) for x in rows]

    def nodes_of(ks: list[int]) -> list[str]:
        if m is None or gm is None:
            return []
        return [gm.nodes[i].name or f"#{i}" for k in ks for i in m.layer_nodes[k]]

    def t(ks: list[int]) -> float:
        return round(sum(ms.get(rows[k].name, 0.0) for k in ks), 6)

    out: list[dict[str, Any]] = []
    int8_engine = any(p == "INT8" or p.startswith("mixed INT8") for p in prec) or any(x.origin == "QDQ" for x in rows)
    model_qdq = gm is not None and any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in gm.nodes)
    # 1. Q/DQ left unfused: standalone Q/DQ compute, or convolutions of a quantized model in float.
    standalone = [k for k, x in enumerate(rows) if _standalone_qdq(x)]
    float_convs = [k for k, x in enumerate(rows) if _is_conv(x.type) and prec[k] in ("FP32", "TF32", "FP16", "BF16")]
    if (int8_engine or model_qdq) and float_convs:
        out.append(
            {
                "kind": "qdq-unfused",
                "layers": [rows[k].name for k in float_convs],
                "nodes": nodes_of(float_convs),
                "ms": t(float_convs),
                "advice": f"{plural(len(float_convs), 'convolution')} of a quantized model still run in floating "
                "point: put "
                "Q/DQ on both their input and weights (and not only on one side) so TensorRT fuses "
                "them into INT8 kernels",
            }
        )
    if standalone:
        out.append(
            {
                "kind": "qdq-standalone",
                "layers": [rows[k].name for k in standalone],
                "nodes": nodes_of(standalone),
                "ms": t(standalone),
                "advice": "Q/DQ nodes run as layers of their own: move them next to a convolution, GEMM or "
                "pointwise op TensorRT can fuse them into",
            }
        )
    # 2. FP32 islands in a reduced-precision engine.
    compute = [k for k, x in enumerate(rows) if x.type not in PLACEMENT and not is_reformat(x) and prec[k]]
    low = [k for k in compute if prec[k] in ("FP16", "BF16", "INT8", "FP8") or prec[k].startswith("mixed")]
    islands = [k for k in compute if prec[k] == "FP32"]
    if low and islands and len(low) >= len(islands):
        reduced = [min(prec[k].removeprefix("mixed ").split("→"), key=lambda p: -ORDER.get(p, -1)) for k in low]
        main = max(set(reduced), key=reduced.count)
        out.append(
            {
                "kind": "fp32-island",
                "layers": [rows[k].name for k in islands],
                "nodes": nodes_of(islands),
                "ms": t(islands),
                "advice": f"{plural(len(islands), 'layer')} {'runs' if len(islands) == 1 else 'run'} in FP32 "
                "inside an engine that "
                f"is mostly {main}: cast "
                "their inputs to the reduced type in the ONNX (TensorRT 11 is strongly typed), or "
                "keep them in FP32 on purpose if accuracy needs it",
            }
        )
    # 3. Reformat layers.
    reformats = [
        k
        for k, x in enumerate(rows)
        if x.type != "NoOp"
        and (is_reformat(x) or (x.type == "Reformat" and x.origin != "QDQ"))
        and (not ms or ms.get(x.name, 0.0) > 0)
    ]
    if reformats:
        share = t(reformats) / total if total else 0.0
        out.append(
            {
                "kind": "reformat",
                "layers": [rows[k].name for k in reformats],
                "nodes": [],
                "ms": t(reformats),
                "advice": f"{plural(len(reformats), 'reformat layer')}"
                + (f" ({share:.1%} of the layer time)" if total else "")
                + " convert between "
                "layouts or types: align the precision of neighbouring layers and the I/O formats "
                "(--inputIOFormats/--outputIOFormats) so fewer copies are needed",
            }
        )
    # 4. Precision that differs from what the model asks.
    if m is not None and gm is not None:
        asked = [k for k in range(len(rows)) if prec[k] == "FP32" and _asks_half(gm, m.layer_nodes[k])]
        if asked:
            out.append(
                {
                    "kind": "precision-ignored",
                    "layers": [rows[k].name for k in asked],
                    "nodes": nodes_of(asked),
                    "ms": t(asked),
                    "advice": "these layers run in FP32 though the model's tensors there are FP16/BF16: "
                    "TensorRT ignored the casts (look for a Cast pair it folded, or an op without a "
                    "reduced-precision kernel)",
                }
            )
    # 5. ForeignNode regions that hold most of the time.
    for k, x in enumerate(rows):
        tk = ms.get(x.name, 0.0)
        if FOREIGN.search(x.base) and total and tk / total >= FOREIGN_SHARE:
            out.append(
                {
                    "kind": "foreign-node",
                    "layers": [x.name],
                    "nodes": nodes_of([k]),
                    "ms": round(tk, 6),
                    "advice": f"one Myelin region takes {tk / total:.0%} of the time and cannot be split in "
                    "this profile: profile with --profilingVerbosity=detailed and nvtx, or cut the "
                    "region (a plugin or a layer output marked) to see inside",
                }
            )
    # 6. Plugin layers.
    plugins = [k for k, x in enumerate(rows) if "Plugin" in x.type or "plugin" in x.base.lower()]
    if plugins:
        share = t(plugins) / total if total else 0.0
        out.append(
            {
                "kind": "plugin-time",
                "layers": [rows[k].name for k in plugins],
                "nodes": nodes_of(plugins),
                "ms": t(plugins),
                "share": round(share, 4),
                "advice": f"plugin layers take {share:.1%} of the layer time: the custom CUDA part; see "
                "Profile for what a faster kernel could save",
            }
        )
    out.sort(key=lambda f: -f["ms"])
    return out


def engine_doc(data: EngineData) -> EngineDoc:
    """The engine's document read as its type, with this lint's findings (made once, like the document)."""
    if data.typed_doc is None:
        data.typed_doc = EngineDoc.from_json(data.doc(), lint(data))
    return data.typed_doc
