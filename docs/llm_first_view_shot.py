"""Screenshots of a 200k-node Llama export as a user sees it open: the preview's first view (from the light pass),
then the same view once the full model has replaced it.

    python bench/export_llms.py DIR --llama-layers 1200
    xvfb-run -s '-screen 0 1920x1080x24' python docs/llm_first_view_shot.py DIR/llama_ts_1200.onnx

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
    from splitscope.gui.shell.window import MainWindow

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

    pump(lambda: w.view is not None and w.view.gm.preview and not w.layout_runner.running)
    first = time.perf_counter() - t0
    pump(lambda: False, 0.3)
    w.grab().save(str(DOCS / "first-view-llama-200k-preview.png"))
    pump(lambda: w.controller.graph_model is not None and not w.runner.running and not w.layout_runner.running, 600)
    pump(lambda: False, 0.5)
    w.grab().save(str(DOCS / "first-view-llama-200k-final.png"))
    print(f"preview shown after {first:.1f} s, final after {time.perf_counter() - t0:.1f} s")
    w.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
