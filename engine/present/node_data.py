"""The split, per-node times and precisions as Model Explorer node data (``ModelNodeData`` JSON: graph id →
``results`` keyed by node, with colours), so ``model-explorer MODEL --node_data_paths FILE`` shows our
colours in Google's viewer. Keys are node names (the ONNX adapter's node ids; its main graph is
``main_graph``); an unnamed node is keyed by its first output tensor, which Model Explorer also matches."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from splitscope.engine.model import GraphModel
from splitscope.engine.palette import colour_table, theme

GRAPH = "main_graph"
STATUS_COLOURS = dict(theme(False)["status_fill"])
PRECISION_COLOURS = dict(colour_table()["precision"])
_G = colour_table()["time_gradient"]
TIME_GRADIENT = [
    {"stop": 0, "bgColor": _G[0]},
    {"stop": 0.5, "bgColor": _G[1]},
    {"stop": 1, "bgColor": _G[2], "textColor": colour_table()["chart"]["on_bar"]},
]


def _key(gm: GraphModel, i: int) -> str:
    n = gm.nodes[i]
    return n.name or (n.outputs[0] if n.outputs else str(i))


def split_data(gm: GraphModel) -> dict[str, Any]:
    """Each node's status ("delegate" or "plugin"), in the canvas's colours."""
    results = {
        _key(gm, n.index): {"value": n.status.value, "bgColor": STATUS_COLOURS[n.status.value]} for n in gm.nodes
    }
    return {
        GRAPH: {
            "results": results,
            "showExpandedSummaryOnGroupNode": True,
            "showLabelCountColumnsInChildrenStatsTable": True,
        }
    }


def time_data(gm: GraphModel, profile: dict[str, Any]) -> dict[str, Any]:
    """Each profiled node's measured time in ms (a gradient from the fastest to the slowest)."""
    names = {n.name: n.index for n in gm.nodes if n.name}
    results = {
        _key(gm, names[r["name"]]): {"value": round(float(r["ms"]), 6)}
        for r in profile.get("per_node", [])
        if r.get("name") in names and r.get("ms") is not None
    }
    return {GRAPH: {"results": results, "gradient": TIME_GRADIENT}}


def precision_data(
    gm: GraphModel, engine: dict[str, Any] | None = None, calibration: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Each node's precision: as the imported engine runs it, else as the calibration plan gives it."""
    names = {n.name: n.index for n in gm.nodes if n.name}
    prec: dict[int, str] = {}
    if engine:
        for layer in engine.get("layers", []):
            p = layer.get("precision")
            for name in layer.get("onnx_nodes", []):
                if p and name in names:
                    i = names[name]
                    prec[i] = p if prec.get(i) in (None, p) else "mixed"
    elif calibration:
        low = str(calibration.get("precision", "")).upper()
        prec.update({names[n]: low for n in calibration.get("quantized", []) if n in names})
        prec.update({names[n]: "FP32" for n in calibration.get("excluded", []) if n in names})
    results = {
        _key(gm, i): {"value": p, "bgColor": PRECISION_COLOURS.get(p, PRECISION_COLOURS["mixed"])}
        for i, p in prec.items()
    }
    return {GRAPH: {"results": results, "showExpandedSummaryOnGroupNode": True}}


def write_node_data(
    gm: GraphModel,
    folder: str | os.PathLike[str],
    profile: dict[str, Any] | None = None,
    engine: dict[str, Any] | None = None,
    calibration: dict[str, Any] | None = None,
) -> list[Path]:
    """Write ``<model>.split.json`` (and ``.time.json``, ``.precision.json`` when there is data) to ``folder``."""
    from splitscope.engine.report.files import write_text_atomic

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stem = gm.path.stem if gm.path else "model"
    docs = {"split": split_data(gm)}
    if profile:
        docs["time"] = time_data(gm, profile)
    if engine or calibration:
        docs["precision"] = precision_data(gm, engine, calibration)
    out = []
    for kind, doc in docs.items():
        out.append(write_text_atomic(folder / f"{stem}.{kind}.json", json.dumps(doc, indent=1)))
    return out
