"""Write the screenshots in docs/: the present board at 1920x1080 (under Xvfb, grabbed from the X screen as a
user sees it), the planner, and the report in headless Chromium and as PDF pages (pdftoppm).

    python docs/make_screenshots.py [MODEL ...]     # default: the sample and the tests' two-stage detector

Needs Xvfb, chromium and poppler-utils (packaging/system-deps.sh installs them). Settings and data go to a
temporary folder, never the user's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def isolated_dirs() -> str:
    """A temporary folder for settings, data and caches (never the user's), set in the environment; its path."""
    import tempfile

    tmp = tempfile.mkdtemp(prefix="splitscope-docs-")
    os.environ.update(
        SPLITSCOPE_TMP=tmp,
        SPLITSCOPE_DATA_DIR=str(Path(tmp) / "data"),
        SPLITSCOPE_CACHE_DIR=str(Path(tmp) / "cache"),
        XDG_CACHE_HOME=str(Path(tmp) / "xcache"),
        XDG_CONFIG_HOME=str(Path(tmp) / "config"),
    )
    return tmp


def _app_and_window(model: Path, parser: str, dims: dict[str, int] | None = None):
    """The light-theme window at 1600x1000 with ``model`` open and laid out, settings in the temporary folder,
    and ``pump(cond)``, which runs the event loop until ``cond()`` holds; ``dims``: the input shapes remembered for
    the model first, as Tools › Input Shapes… leaves them."""
    from PySide6.QtCore import QCoreApplication, QSettings
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    QCoreApplication.setOrganizationName("SplitscopeDocs")
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, os.environ["SPLITSCOPE_TMP"])
    from splitscope.gui.shell.window import MainWindow

    if dims:
        from splitscope.engine.runtime.store import model_key
        from splitscope.profiler.dims import remember_dims

        remember_dims(model_key(model), dims)
    w = MainWindow(parser=parser)
    w.dark_override = False
    w._apply_theme()
    w.resize(1600, 1000)
    w.show()
    w.open_model(model)

    def pump(cond=lambda: False, timeout: float = 300.0) -> None:
        end = time.time() + timeout
        while time.time() < end and not cond():
            app.processEvents()
            time.sleep(0.02)

    pump(lambda: w.view is not None and not w.runner.running and not w.layout_runner.running)
    return app, w, pump


def board_and_planner(model: Path, tag: str, profile: Path | None) -> None:
    from PySide6.QtCore import Qt

    app, w, pump = _app_and_window(model, "rtx")
    wait = pump
    wait(lambda: bool(w.show_ui.planner.results))
    if profile is not None:
        import json

        res = json.loads(profile.read_text())
        jid = w.controller.queue.add_finished("Profile (saved)", "profile", res)
        w.controller.profiling.deliver(jid, res)  # as a saved profile comes back
    planner = w.show_ui.planner
    planner.new_scenario("plan A")
    wait(lambda: len(planner.results) == 2)
    w.show_ui.planner.dock.raise_()
    w.resizeDocks([w.show_ui.planner.dock], [330], Qt.Orientation.Vertical)
    pump(timeout=0.6)
    w.grab().save(str(DOCS / f"planner-{tag}.png"))
    board = w.show_ui.present()
    from PySide6.QtGui import QKeyEvent

    pump(timeout=0.6)
    app.sendEvent(board, QKeyEvent(QKeyEvent.Type.KeyPress, Qt.Key.Key_Right, Qt.KeyboardModifier.NoModifier))
    pump(timeout=0.6)
    screen = board.screen()
    screen.grabWindow(0).save(str(DOCS / f"present-{tag}.png"))  # the X screen, as a user sees it
    board.close()
    w.close()


def calibration_shots(model: Path, tag: str) -> None:
    """The Calibration panel after an INT8 run with a search: the histogram with each method's threshold,
    and the search path."""
    from PySide6.QtCore import Qt

    _app, w, pump = _app_and_window(model, "table")
    tmp = Path(os.environ["SPLITSCOPE_TMP"])
    ui = w.calib_ui
    ui.submit(
        {
            "model": str(model),
            "out": str(tmp / f"{tag}.int8.onnx"),
            "data": "random",
            "method": "entropy",
            "precision": "int8",
            "samples": 16,
            "keep": [],
            "dims": {},
            "budget": "snr=58",
        }
    )
    pump(lambda: ui.result is not None)
    w.resizeDocks([ui.dock], [380], Qt.Orientation.Vertical)
    ui.dock.raise_()
    for index, name in ((1, "histogram"), (3, "search")):
        ui.panel.tabs.setCurrentIndex(index)
        pump(timeout=0.8)
        w.grab().save(str(DOCS / f"calibration-{name}-{tag}.png"))
    w.close()


def report_shots(model: Path, tag: str, profile: Path | None) -> None:
    tmp = Path(os.environ["SPLITSCOPE_TMP"])
    html, pdf = tmp / f"{tag}.html", tmp / f"{tag}.pdf"
    args = [sys.executable, "-m", "splitscope.engine.cli", "report", str(model), "-q", "--scenario", "plan A"]
    if profile is not None:
        args += ["--profile", str(profile)]
    subprocess.run([*args, "--out", str(html)], check=True)
    subprocess.run([*args, "--out", str(pdf)], check=True)
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp / 'chromium'}",
            "--window-size=1200,1700",
            f"--screenshot={DOCS / f'report-{tag}.png'}",
            html.as_uri(),
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["pdftoppm", "-r", "60", "-png", "-f", "2", "-l", "2", str(pdf), str(tmp / f"{tag}-page")], check=True
    )
    page = next(tmp.glob(f"{tag}-page*.png"))
    page.replace(DOCS / f"report-{tag}-pdf-page2.png")


def main() -> None:
    models = [Path(m) for m in sys.argv[1:]] or [
        ROOT / "resources" / "sample.onnx",
        ROOT / "tests" / "data" / "torch_two_stage_ort.onnx",
    ]
    with tempfile.TemporaryDirectory(prefix="splitscope-docs-") as tmp:
        os.environ.update(
            SPLITSCOPE_TMP=tmp,
            SPLITSCOPE_DATA_DIR=str(Path(tmp) / "data"),
            XDG_CACHE_HOME=str(Path(tmp) / "cache"),
            XDG_CONFIG_HOME=str(Path(tmp) / "config"),
        )
        for m in models:
            tag = m.stem
            profile = None
            try:  # a real CPU profile where ONNX Runtime can run the model
                profile = Path(tmp) / f"{tag}.profile.json"
                subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "splitscope.engine.cli",
                        "profile",
                        str(m),
                        "--iterations",
                        "30",
                        "--json",
                        str(profile),
                        "-q",
                    ],
                    check=True,
                    capture_output=True,
                )
            except subprocess.CalledProcessError:
                profile = None
            board_and_planner(m, tag, profile)  # makes and saves "plan A" with the model's session
            report_shots(m, tag, profile)
            if profile is not None:  # ONNX Runtime runs it: calibrate it too
                calibration_shots(m, tag)
    print("wrote", sorted(p.name for p in DOCS.glob("*.png")))


if __name__ == "__main__":
    main()
