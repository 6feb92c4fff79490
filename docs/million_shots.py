"""The window on a 1,000,000-node export, as a user first sees it: the first view (the structure read from the file,
before the full analysis ends), then a search for one layer's attention inside it, Enter going to the first match
(the groups on the way opened). Fresh settings in a temporary folder, never the user's.

    python bench/make_models.py /tmp/m --nodes 1000000 --hidden 16
    xvfb-run -s '-screen 0 1366x768x24' python docs/million_shots.py 1366x768 /tmp/m/transformer_1000k_h16.onnx

Writes docs/window-SIZE-million-first-view.png and docs/window-SIZE-million-search.png, and prints how long each
step took and what the canvas shows.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
TEXT = "layer.17000/attn/core/softmax"


def main() -> None:
    size, model = sys.argv[1], Path(sys.argv[2]).resolve()
    tmp = tempfile.mkdtemp(prefix="splitscope-million-shots-")
    os.environ.update(SPLITSCOPE_DATA_DIR=f"{tmp}/d", SPLITSCOPE_CACHE_DIR=f"{tmp}/c", XDG_CONFIG_HOME=f"{tmp}/x")
    from PySide6.QtCore import QCoreApplication, QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication([])
    QCoreApplication.setOrganizationName("SplitscopeMillionShots")
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, f"{tmp}/x")
    from splitscope.gui.shell.window import MainWindow

    def pump(cond=lambda: False, timeout: float = 600.0) -> None:
        end = time.time() + timeout
        while time.time() < end and not cond():
            app.processEvents()
            time.sleep(0.02)

    w = MainWindow("table")
    w.dark_override = False
    w._apply_theme()
    w.show()
    t0 = time.perf_counter()
    w.open_model(model)
    pump(lambda: w.view is not None and w.view.gm.path == model)
    pump(lambda: not w.layout_runner.running)
    pump(timeout=1.0)
    first = time.perf_counter() - t0
    w.grab().save(str(DOCS / f"window-{size}-million-first-view.png"))
    print(f"first view after {first:.1f} s ({len(w.view.gm.nodes):,} nodes):", w.canvas.on_screen(), flush=True)
    t1 = time.perf_counter()
    w.search.setText(TEXT)
    w.search.returnPressed.emit()  # Enter: the matches counted, the first one gone to
    pump(lambda: bool(w.finder.matches) and not w.layout_runner.running, timeout=120)
    pump(timeout=1.0)
    print(f"search {TEXT!r}: {w.finder.label.text()} after {time.perf_counter() - t1:.2f} s", flush=True)
    w.grab().save(str(DOCS / f"window-{size}-million-search.png"))
    w.controller.cancel_all()  # the full analysis still running: stopped, and waited for, before the window goes
    pump(lambda: not w.runner.running and not w.layout_runner.running, timeout=120)
    w.runner.wait(180_000)  # a cancelled worker ends at its next check (the full load's parse can take a while)
    w.close()
    pump(timeout=0.5)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
