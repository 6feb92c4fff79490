"""Importing engine data at scale: a 50k-layer layer-info file (TensorRT 11 layout, ONNX metadata on every
layer, the bench transformer of make_models.py as its model), against reading the same file with the json
module alone; and the canvas recolour after an import at 50k nodes, against one frame (16 ms).

Usage::

    QT_QPA_PLATFORM=offscreen python bench/bench_engine.py [--nodes 50000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=50000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "engine.json")
    args = ap.parse_args()
    import onnx
    from make_models import make_transformer
    from splitscope.engine.split.analyze import analyze_model
    from splitscope.engine.trtdata.importer import import_files
    from splitscope.engine.trtdata.readers import read_file

    tmp = Path(tempfile.mkdtemp(prefix="splitscope-engine-bench-"))
    model = tmp / "m.onnx"
    onnx.save(make_transformer(args.nodes), model)
    gm = analyze_model(model, parser="table")
    fmts = ("Row major linear FP16 format", "Row major linear FP32")
    layers = [
        {
            "Name": n.name,
            "LayerType": "PointWiseV2",
            "Metadata": f"[ONNX Layer: {n.name}]",
            "Inputs": [{"Name": i, "Dimensions": [1, 128, 64], "Format/Datatype": fmts[k % 2]} for i in n.inputs],
            "Outputs": [{"Name": o, "Dimensions": [1, 128, 64], "Format/Datatype": fmts[k % 2]} for o in n.outputs],
            "TacticName": "sm90_xmma",
            "StreamId": 0,
        }
        for k, n in enumerate(gm.nodes)
    ]
    lp = tmp / "layers.json"
    lp.write_text(json.dumps({"Layers": layers, "I/O Tensors": []}), encoding="utf-8")
    bare, ours, mapped = [], [], []
    for _ in range(args.repeat):
        t = time.perf_counter()
        json.loads(lp.read_text(encoding="utf-8"))
        bare.append(time.perf_counter() - t)
        t = time.perf_counter()
        read_file(lp)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        data = import_files([lp], gm)
        mapped.append(time.perf_counter() - t)
    row: dict[str, object] = {
        "layers": len(layers),
        "file_mb": round(lp.stat().st_size / 1e6, 1),
        "json_s": round(statistics.median(bare), 3),
        "read_s": round(statistics.median(ours), 3),
        "read_and_map_s": round(statistics.median(mapped), 3),
    }
    row["read_over_json"] = round(float(row["read_s"]) / float(row["json_s"]), 2)  # type: ignore[arg-type]
    row["read_and_map_over_json"] = round(float(row["read_and_map_s"]) / float(row["json_s"]), 2)  # type: ignore[arg-type]
    # Recolour at 50k nodes: the heat map from the imported data, then one paint.
    from PySide6.QtCore import QCoreApplication, QSettings
    from PySide6.QtWidgets import QApplication
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.view.layout import prepare_view
    from splitscope.gui.canvas.canvas import GraphCanvas
    from splitscope.gui.engine.ui import precision_heat

    app = QApplication([])
    QCoreApplication.setOrganizationName("SplitscopeBench")
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(tmp))
    view = run_to_end(prepare_view(gm, viewport=(900, 600)))
    c = GraphCanvas()
    c.resize(900, 600)
    c.show()
    c.set_graph(gm, view.hier, view.layout)
    app.processEvents()
    heat_ms, paint_ms = [], []
    for _ in range(5):
        t = time.perf_counter()
        heat = precision_heat(view, data)  # in the import's worker, in the app
        heat_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        c.set_heat(heat)  # what the UI thread does on a recolour
        c.repaint()
        paint_ms.append((time.perf_counter() - t) * 1000)
        c.set_heat(None)
        c.repaint()
    row.update(
        {
            "nodes": len(gm.nodes),
            "heat_in_worker_ms": round(statistics.median(heat_ms), 1),
            "ui_recolour_ms": round(statistics.median(paint_ms), 1),
            "frame_ms": 16.7,
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        }
    )
    print(json.dumps(row))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
