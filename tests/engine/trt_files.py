"""TensorRT 10 and 11 layer-info and profile files for a real exported model, written from the format spec
(../shared/reference/FORMATS.md §1-2): what trtexec --exportLayerInfo/--exportProfile write for an engine of
that model, with the fusions TensorRT makes (MatMul + Add, a Myelin ForeignNode region over one attention
block, a reformat), ONNX-node Metadata with its control-character separators, FP16 formats with one FP32
layer, the 10.x ``Bindings`` and the 11.x ``I/O Tensors`` layouts, and a second optimisation profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from splitscope.engine.model import GraphModel

FOLDED = {
    "Constant",
    "Shape",
    "Gather",
    "Unsqueeze",
    "Concat",
    "Cast",
    "Identity",
    "Reshape",
    "Squeeze",
    "ConstantOfShape",
    "Expand",
    "Range",
    "Equal",
    "Where",
    "Slice",
}


def _t(name: str, fmt: str, dims: list[int] | None = None) -> dict[str, Any]:
    return {"Name": name, "Location": "Device", "Dimensions": dims or [4, 16, 32], "Format/Datatype": fmt}


def engine_layers(gm: GraphModel, foreign_scope: str, sep: str = "\x1e") -> tuple[list[dict[str, Any]], dict]:
    """Layers for ``gm`` and what a correct reader must find (``expect``)."""
    fp16, fp32 = "Row major linear FP16 format", "Row major linear FP32"
    nodes = [n for n in gm.nodes if n.op_type not in FOLDED]
    foreign = [n for n in gm.nodes if "/".join(n.scope).startswith(foreign_scope)]
    fset = {n.index for n in foreign}
    layers: list[dict[str, Any]] = []
    expect: dict[str, Any] = {"foreign": [], "island": None, "reformat": None}
    first = nodes[0]
    layers.append(
        {
            "Name": f"Reformatting CopyNode for Input Tensor 0 to {first.name}",
            "LayerType": "Reformat",
            "Inputs": [_t(first.inputs[0], fp32)],
            "Outputs": [_t("Reformatted " + first.inputs[0], fp16)],
            "ParameterType": "Reformat",
            "Origin": "REFORMAT",
            "TacticValue": "0x0",
        }
    )
    expect["reformat"] = layers[0]["Name"]
    done: set[int] = set()
    lo, hi = min(fset), max(fset)
    layers.append(
        {
            "Name": f"{{ForeignNode[{gm.nodes[lo].name}...{gm.nodes[hi].name}]}}",
            "LayerType": "Myelin",
            "Inputs": [_t(i, fp16) for i in gm.nodes[lo].inputs[:1]],
            "Outputs": [_t(o, fp16) for o in gm.nodes[hi].outputs[:1]],
            "TacticName": "myelin",
            "StreamId": 0,
        }
    )
    expect["foreign"] = list(range(lo, hi + 1))
    done |= set(range(lo, hi + 1))
    island = False
    for _k, n in enumerate(nodes):
        if n.index in done:
            continue
        group = [n]
        succ = gm.graph.adj.succs[n.index]
        if n.op_type in ("MatMul", "Gemm") and len(succ) == 1 and gm.nodes[succ[0]].op_type == "Add":
            group.append(gm.nodes[succ[0]])
        done |= {g.index for g in group}
        fmt = fp16
        if n.op_type == "LayerNormalization" and not island:
            fmt, island = fp32, True
            expect["island"] = n.name
        layers.append(
            {
                "Name": " + ".join(g.name for g in group),
                "LayerType": "CaskGemmMatrixMultiply" if n.op_type in ("MatMul", "Gemm") else "PointWiseV2",
                "Inputs": [_t(i, fmt) for i in group[0].inputs[:1] if i],
                "Outputs": [_t(o, fmt) for o in group[-1].outputs if o],
                "Metadata": sep.join(f"[ONNX Layer: {g.name}]" for g in group),
                "TacticName": "sm90_xmma_gemm_f16f16_f16f32" if fmt == fp16 else "",
                "StreamId": 0,
            }
        )
    return layers, expect


def write(gm: GraphModel, folder: Path, layout: str, foreign_scope: str) -> tuple[Path, Path, dict]:
    """Write ``layers.json`` and ``profile.json`` of one engine; 11.x (``io_tensors``) gets two profiles."""
    sep = "\x1e" if layout == "bindings" else "\x1f"
    layers, expect = engine_layers(gm, foreign_scope, sep)
    ins = [gm.graph.tensors[i] for i in gm.graph.inputs]
    outs = [gm.graph.tensors[o] for o in gm.graph.outputs]
    if layout == "bindings":
        doc: dict[str, Any] = {"Layers": layers, "Bindings": [t.name for t in ins + outs]}
        all_layers = layers
    else:
        second = [{**x, "Name": x["Name"] + " [profile 1]"} for x in layers]
        all_layers = layers + second
        doc = {
            "Layers": all_layers,
            "I/O Tensors": [
                {
                    "Name": t.name,
                    "IOMode": "Input" if t in ins else "Output",
                    "DataType": "Int64" if t in ins else "Float",
                    "Dimensions": [-1, -1],
                    "Location": "Device",
                    "IsShapeInferenceIO": False,
                    "ProfileInfo": [
                        {
                            "MinShape": [1, 1],
                            "OptShape": [4, 16],
                            "MaxShape": [8, 64],
                            "Format": "Row major linear FP32 format (kLINEAR)",
                        }
                    ]
                    * 2,
                }
                for t in ins + outs
            ],
        }
    lp = folder / f"layers_{layout}.json"
    lp.write_text(json.dumps(doc), encoding="utf-8")
    count = 100
    recs: list[dict[str, Any]] = [{"count": count}]
    times = {x["Name"]: (0.5 if x["Name"].startswith("{ForeignNode") else 0.02) for x in all_layers}
    total = sum(times.values())
    for name, avg in times.items():
        recs.append(
            {"name": name, "timeMs": avg * count, "averageMs": avg, "medianMs": avg, "percentage": avg / total * 100}
        )
    pp = folder / f"profile_{layout}.json"
    pp.write_text(json.dumps(recs), encoding="utf-8")
    expect["layers"] = len(layers)
    return lp, pp, expect
