"""Screenshots of the Kernel Workbench as a user sees it, with what the H200 measured (the kernel runs need a GPU;
their JSON, from bench/gpu_kernels.py and bench/gpu_kernel_cli.sh, is kept in tests/data): RoiAlign appended to
YOLOv8 (its time per launch against ONNX Runtime CUDA and the bound, the error histogram), and YOLOv8's first
SiLU with a typo in the kernel (NVRTC's error at its line).

    bash .ci/acceptance                                   # installs the packages that ship the models
    xvfb-run -s '-screen 0 1920x1080x24' python docs/kernel_shots.py

Settings and data go to a temporary folder, never the user's.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SITE = Path(os.environ.get("SPLITSCOPE_ACCEPTANCE") or ROOT / "build" / "acceptance")


def main() -> None:
    sys.path.insert(0, str(DOCS))
    from make_screenshots import isolated_dirs

    tmp = isolated_dirs()
    sys.path.insert(0, str(ROOT / "bench"))
    from kernel_models import yolo_with_roialign
    from make_screenshots import _app_and_window
    from PySide6.QtCore import Qt
    from splitscope.engine.runtime.store import model_key
    from splitscope.profiler.dims import remember_dims

    yolo = SITE / "nudenet" / "320n.onnx"
    two_stage = yolo_with_roialign(yolo, Path(tmp) / "yolo_roialign.onnx")
    # The sample's DCNv4 in the workbench (no GPU here: the parser's answer with the generated plugin, the canvas
    # coloured by it, Compress still custom).
    _app, w, pump = _app_and_window(ROOT / "resources" / "sample.onnx", "rtx")
    pump(timeout=1.0)
    jid = w.kernel_ui.start([next(n.label for n in w.graph_model.nodes if n.op_type == "DCNv4")])
    pump(lambda: w.controller.queue.jobs[jid].finished and w.controller.colour_mode == "plugin", timeout=120)
    w.resizeDocks([w.kernel_ui.dock], [420], Qt.Orientation.Vertical)
    w.canvas.fit()
    pump(timeout=1.0)
    w.grab().save(str(DOCS / "kernel-workbench-after-plugin.png"))
    w.close()
    for tag, model, doc, node in (
        ("roialign-h200", two_stage, "kernel_roialign_h200.json", "roi_align"),
        ("compile-error", yolo, "kernel_typo_h200.json", "/model.2/cv1/act/Sigmoid"),
    ):
        remember_dims(model_key(model), {"height": 640, "width": 640})  # the size the H200 ran them at
        _app, w, pump = _app_and_window(model, "rtx")
        pump(timeout=1.0)
        gm = w.graph_model
        assert gm.dims.get("height") == 640, gm.dims
        index = next(n.index for n in gm.nodes if n.label == node)
        w.highlight([index])
        data = json.loads((ROOT / "tests" / "data" / doc).read_text())
        ui = w.kernel_ui
        ui.dock.show()
        ui.dock.raise_()
        w.resizeDocks([ui.dock], [520], Qt.Orientation.Vertical)
        from splitscope.engine.kernel.results import KernelDoc

        ui.panel.set_result(KernelDoc.from_json(data))
        pump(timeout=1.0)
        w.grab().save(str(DOCS / f"kernel-workbench-{tag}.png"))
        w.close()
    shutil.rmtree(tmp, ignore_errors=True)
    print("wrote", sorted(p.name for p in DOCS.glob("kernel-workbench-*.png")))


if __name__ == "__main__":
    main()
