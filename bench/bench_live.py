"""The window while a profile streams: the longest UI-thread stall, and the cost of one plot redraw.

- ``stall``: a 5 ms heartbeat timer on the UI thread while a real ``ort-cpu`` profile of a small model
  streams a latency sample per iteration (thousands a second); the longest gap between ticks.
- ``redraw``: the Profile panel's redraw with ``--points`` points per curve (latency, histogram,
  telemetry), timed over many ticks, against the 33 ms a 30 Hz timer allows.

Usage::

    QT_QPA_PLATFORM=offscreen python bench/bench_live.py [--points 10000] [--iterations 3000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=10_000)
    ap.add_argument("--iterations", type=int, default=3000)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "live.json")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="splitscope-live-"))
    for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        os.environ[k] = str(home / k)
    import numpy as np
    import onnx
    from PySide6.QtCore import QCoreApplication, QSettings, QTimer
    from PySide6.QtWidgets import QApplication
    from splitscope.engine.jobs import Sample
    from splitscope.gui.shell.window import MainWindow
    from splitscope.profiler.profiling import ProfileRequest

    app = QApplication([])
    QCoreApplication.setOrganizationName("SplitscopeBench")
    QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, str(home))
    model = args.model or Path(onnx.__file__).parent / "backend/test/data/light/light_squeezenet.onnx"
    w = MainWindow(parser="table")
    w.resize(1400, 900)
    w.show()
    w.open_model(model)
    while w.view is None or w.runner.running or w.layout_runner.running:
        app.processEvents()
        time.sleep(0.01)
    # Stall while a real profile streams.
    beat = {"last": time.perf_counter(), "max": 0.0, "at": 0.0}

    def tick() -> None:
        now = time.perf_counter()
        if now - beat["last"] > beat["max"]:
            beat["max"], beat["at"] = now - beat["last"], now
        beat["last"] = now

    heart = QTimer()
    heart.setInterval(5)
    heart.timeout.connect(tick)
    ui = w.profiling
    if os.environ.get("BENCH_PRESHOW"):
        ui.profile_dock.raise_()
        for _ in range(50):
            app.processEvents()
            time.sleep(0.01)
    jid = ui.submit(ProfileRequest(model, iterations=args.iterations, warmup=5, profiled=4))
    beat["last"] = time.perf_counter()
    heart.start()
    t0 = time.perf_counter()
    while ui.queue.jobs[jid].state not in ("done", "failed", "cancelled"):
        app.processEvents()
        time.sleep(0.001)
    stream_s = time.perf_counter() - t0
    heart.stop()
    samples = ui.panel.lat.n
    # Redraw cost with N points per curve.
    panel = ui.panel
    panel.start_live(-1, "bench")
    rng = np.random.default_rng(0)
    for v in rng.gamma(4, 0.5, args.points):
        panel.add_sample(-1, Sample("latency", 0, {"ms": float(v)}))
    for k in range(args.points):
        panel.add_sample(
            -1, Sample("telemetry", k * 0.01, {"gpu_util": 50.0, "power_w": 300.0, "sm_clock_mhz": 1980.0})
        )
    times = []
    for _ in range(60):
        panel.add_sample(-1, Sample("latency", 0, {"ms": 2.0}))
        a = time.perf_counter()
        panel._redraw()
        app.processEvents()
        times.append((time.perf_counter() - a) * 1000)
    row = {
        "model": model.name,
        "iterations": args.iterations,
        "samples_streamed": samples,
        "stream_s": round(stream_s, 2),
        "max_ui_stall_ms": round(beat["max"] * 1000, 1),
        "stall_at_s": round(beat["at"] - t0, 2),
        "points_per_curve": args.points,
        "redraw_ms_median": round(statistics.median(times), 2),
        "redraw_ms_max": round(max(times), 2),
        "redraw_budget_ms": 33.3,
    }
    print(json.dumps(row))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(row, indent=1))
    w.close()


if __name__ == "__main__":
    main()
