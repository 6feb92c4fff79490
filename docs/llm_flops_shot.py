"""A screenshot of a 50k-node Llama export opened at seq=128, the Split summary showing its FLOPs at those shapes
(every layer typed: 578 MFLOPs; before the numpy folding of shape arithmetic the same window said 213).

    python bench/export_llms.py DIR --llama-layers 300
    xvfb-run -s '-screen 0 1920x1080x24' python docs/llm_flops_shot.py DIR/llama_ts_300.onnx

Settings and data go to a temporary folder, never the user's.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def main() -> None:
    sys.path.insert(0, str(DOCS))
    from make_screenshots import isolated_dirs

    tmp = isolated_dirs()
    model = Path(sys.argv[1])
    from PySide6.QtCore import QCoreApplication, QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    QCoreApplication.setOrganizationName("SplitscopeDocs")
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, tmp)
    from splitscope.engine.runtime.store import model_key
    from splitscope.gui.shell.window import MainWindow
    from splitscope.profiler.dims import remember_dims

    remember_dims(model_key(model), {"seq": 128})  # as Tools › Input Shapes… leaves it
    w = MainWindow(parser="table")
    w.dark_override = False
    w._apply_theme()
    w.resize(1600, 1000)
    w.show()
    t0 = time.perf_counter()
    w.open_model(model)

    def pump(cond, timeout: float = 300.0) -> None:  # type: ignore[no-untyped-def]
        end = time.time() + timeout
        while time.time() < end and not cond():
            app.processEvents()
            time.sleep(0.02)

    pump(lambda: w.controller.graph_model is not None and not w.runner.running and not w.layout_runner.running, 600)
    pump(lambda: False, 1.0)
    gm = w.controller.graph_model
    print(f"ready after {time.perf_counter() - t0:.1f} s: {gm.total_flops()} FLOPs at {gm.shapes_label()}")
    w.grab().save(str(DOCS / "llama-50k-flops-at-seq128.png"))
    w.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
