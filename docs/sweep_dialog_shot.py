"""The Sweep dialog set up for a precision search on a real detector (nudenet's YOLOv8n, 320n.onnx): batch 1 and 4,
FP32 and INT8 on this machine, the 3 most sensitive nodes kept in float in turn; then the window after such a search
ran on a TorchScript transformer export (tests/data/torch_transformer.onnx, batch 4, seq 16, 3 nodes): the Sweep
panel's table and plots.

    bash .ci/acceptance   # once: the real models in build/acceptance
    xvfb-run -s '-screen 0 1920x1080x24' python docs/sweep_dialog_shot.py

Settings and data go to temporary folders, never the user's.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
YOLO = ROOT / "build" / "acceptance" / "nudenet" / "320n.onnx"


def main() -> None:
    sys.path.insert(0, str(DOCS))
    sys.path.insert(0, str(ROOT))
    from make_screenshots import isolated_dirs

    isolated_dirs()
    from make_screenshots import _app_and_window
    from splitscope.gui.remote.sweep import SweepDialog

    _app, w, pump = _app_and_window(YOLO, "table")
    dialog = SweepDialog(w.controller.graph_model, w)
    dialog.dims.setText("batch=1,4")
    for name, box in dialog.precisions.items():
        box.setChecked(name in ("fp32", "int8"))
    dialog.search.setValue(3)
    dialog.show()
    pump(timeout=1.0)
    dialog.grab().save(str(DOCS / "sweep-dialog-precision-search.png"))
    print("wrote sweep-dialog-precision-search.png:", dialog.count.text())
    dialog.close()

    from PySide6.QtWidgets import QApplication

    w.close()
    _app, w, pump = _app_and_window(ROOT / "tests" / "data" / "torch_transformer.onnx", "table")
    ui = w.remote_ui
    from splitscope.engine.sweep.grid import expand

    cells = expand([str(w.controller.graph_model.path)], {"batch": [4], "seq": [16]}, ["ort-cpu"], ["fp32", "int8"])
    jid = ui.run(cells, ray=False, search=3)
    pump(lambda: w.controller.queue.jobs[jid].state not in ("queued", "running"), timeout=900)
    pump(lambda: ui.panel.export.isEnabled(), timeout=10)
    QApplication.processEvents()
    w.grab().save(str(DOCS / "sweep-precision-search-transformer.png"))
    print("wrote sweep-precision-search-transformer.png:", ui.panel.summary.text())


if __name__ == "__main__":
    main()
