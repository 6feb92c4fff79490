"""The planner on a large export with tens of thousands of custom nodes (a custom-domain activation in each of
24,000 blocks of a 72,000-node chain, built here): the plans table is a model, so every row is there at once, and the
window stays live while it fills.

    xvfb-run -s '-screen 0 1920x1080x24' python docs/planner_many_shot.py

Settings and data go to temporary folders, never the user's.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def build(path: Path, blocks: int = 24_000) -> None:
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h

    nodes, inits, prev = [], [], "x"
    for b in range(blocks):
        scope = f"/model/layers.{b // 20}/block.{b % 20}"
        w = f"model.layers.{b}.weight"
        inits.append(h.make_tensor(w, T.FLOAT, [8, 8], [0.01] * 64))
        nodes += [
            h.make_node("MatMul", [prev, w], [f"{scope}/mm"], name=f"{scope}/MatMul"),
            h.make_node("FusedAct", [f"{scope}/mm"], [f"{scope}/act"], name=f"{scope}/FusedAct", domain="com.example"),
            h.make_node("Add", [f"{scope}/act", prev], [f"{scope}/out"], name=f"{scope}/Add"),
        ]
        prev = f"{scope}/out"
    g = h.make_graph(
        nodes,
        "many_custom",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 8])],
        [h.make_tensor_value_info(prev, T.FLOAT, [1, 8])],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.example", 1)])
    onnx.save(m, str(path))


def main() -> None:
    sys.path.insert(0, str(DOCS))
    sys.path.insert(0, str(ROOT))
    from make_screenshots import isolated_dirs

    isolated_dirs()
    from make_screenshots import _app_and_window
    from PySide6.QtCore import Qt

    model = Path(tempfile.mkdtemp()) / "many_custom_72k.onnx"
    build(model)
    t0 = time.perf_counter()
    _app, w, pump = _app_and_window(model, "table")
    planner = w.show_ui.planner
    pump(lambda: bool(planner.results), timeout=600)
    print(f"planner filled {time.perf_counter() - t0:.1f} s after opening:", planner.panel.plans.rowCount(), "rows")
    planner.new_scenario("plan A")
    pump(lambda: len(planner.results) == 2, timeout=600)
    planner.dock.raise_()
    w.resizeDocks([planner.dock], [420], Qt.Orientation.Vertical)
    pump(timeout=1.0)
    w.grab().save(str(DOCS / "planner-24k-custom-nodes.png"))
    print("wrote planner-24k-custom-nodes.png:", planner.panel.summary.text()[:200])


if __name__ == "__main__":
    main()
