"""A screenshot of a generation profile as a user sees it: the Llama-style decoder of the tests (exported with
its key/value cache by PyTorch's exporter), a prefill of 128 tokens then 64 decode steps on this machine's CPU.

    xvfb-run -s '-screen 0 1920x1080x24' python docs/generation_shot.py

Settings and data go to a temporary folder, never the user's.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def main() -> None:
    sys.path.insert(0, str(DOCS))
    from make_screenshots import isolated_dirs

    tmp = isolated_dirs()
    from make_screenshots import _app_and_window
    from PySide6.QtCore import Qt

    _app, w, pump = _app_and_window(ROOT / "tests" / "data" / "decoder_kv_tiny.onnx", "table")
    pump(timeout=1.0)
    ui = w.profiling.generation
    jid = ui.run("ort-cpu", 128, 64)
    pump(lambda: w.controller.queue.jobs[jid].finished, timeout=120)
    w.resizeDocks([ui.dock], [420], Qt.Orientation.Vertical)
    pump(timeout=1.0)
    w.grab().save(str(DOCS / "generation-profile-decoder.png"))
    w.close()
    shutil.rmtree(tmp, ignore_errors=True)
    print("wrote generation-profile-decoder.png")


if __name__ == "__main__":
    main()
