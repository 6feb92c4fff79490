"""Screenshots of targets and sweeps as a user sees them, on real models:

- the Targets dialog after checking an SSH host (an OpenSSH server started on 127.0.0.1 with throwaway keys, as the
  tests start it; Splitscope there is this checkout);
- a profile of the YOLOv8n detector (nudenet's 320n.onnx) run on that host, streaming into the Profile panel;
- a sweep of the same detector over batch 1, 2, 4 and FP32, FP16, INT8 on this machine: the table and the plots.

    bash .ci/acceptance   # once: the real models in build/acceptance
    xvfb-run -s '-screen 0 1920x1080x24' python docs/remote_shots.py

Settings, data and the host's cache go to temporary folders, never the user's.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
YOLO = ROOT / "build" / "acceptance" / "nudenet" / "320n.onnx"


def main() -> None:
    sys.path.insert(0, str(DOCS))
    sys.path.insert(0, str(ROOT))
    from make_screenshots import isolated_dirs

    tmp = isolated_dirs()
    from make_screenshots import _app_and_window
    from PySide6.QtCore import Qt

    from tests.remote import sshd

    server = sshd.start(Path(tempfile.mkdtemp(prefix="ss-sshd-")))
    server.trust()
    try:
        _app, w, pump = _app_and_window(YOLO, "table")
        pump(timeout=1.0)
        # The Targets dialog, the host checked.
        from tests.remote.test_remote import _url

        dialog = w.remote_ui.show_targets()
        target = dialog.add_target(_url(server))
        dialog.list.setCurrentRow(1)
        jid = dialog.check(target)
        pump(lambda: w.controller.queue.jobs[jid].finished and dialog.status.get(target.label, "").startswith("S"), 60)
        dialog._use()
        pump(timeout=0.5)
        dialog.grab().save(str(DOCS / "targets-dialog.png"))
        dialog.close()
        # A profile on the host, streaming.
        from splitscope.profiler.profiling import ProfileRequest

        dims = {"batch": 1, "height": 320, "width": 320}
        req = ProfileRequest(YOLO, iterations=200, warmup=5, profiled=5, dims=dims, target=target.to_json())
        jid = w.profiling.submit(req)
        ui = w.profiling
        pump(lambda: ui.panel.lat.n >= 60, 180)
        ui.profile_dock.raise_()
        w.resizeDocks([ui.profile_dock], [380], Qt.Orientation.Vertical)
        pump(timeout=0.5)
        w.grab().save(str(DOCS / "remote-profile-streaming-yolov8.png"))
        pump(lambda: w.controller.queue.jobs[jid].finished, 180)
        # A sweep on this machine.
        from splitscope.engine.sweep.grid import expand

        cells = expand(
            [str(YOLO)],
            {"batch": [1, 2, 4], "height": [320], "width": [320]},
            ["ort-cpu"],
            ["fp32", "fp16", "int8"],
            iterations=20,
            warmup=2,
        )
        jid = w.remote_ui.run(cells, ray=None)
        pump(lambda: w.controller.queue.jobs[jid].finished, 900)
        w.resizeDocks([w.remote_ui.dock], [620], Qt.Orientation.Vertical)
        pump(timeout=1.0)
        w.grab().save(str(DOCS / "sweep-yolov8-batch-precision.png"))
        w.close()
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print("wrote targets-dialog.png, remote-profile-streaming-yolov8.png, sweep-yolov8-batch-precision.png")


if __name__ == "__main__":
    main()
