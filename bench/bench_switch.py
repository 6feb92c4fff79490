"""The window replacing a large model by another: open MODEL, wait until it is shown, then open the bundled sample (or
NEXT), and note the longest gap of a 5 ms heartbeat on the UI thread from that moment until the second model is shown
and four seconds more (while the first is freed), with what the UI thread was doing then; and how long after the second
was shown nothing of the first was left (null: not within 34 s). Settings and data in a temporary folder.

    python bench/export_llms.py DIR --llama-layers 1200
    QT_QPA_PLATFORM=offscreen python bench/bench_switch.py DIR/llama_ts_1200.onnx [NEXT.onnx] [--repeat 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = r"""
import gc, json, os, sys, time
from pathlib import Path
from PySide6.QtCore import QCoreApplication, QSettings, QTimer
from PySide6.QtWidgets import QApplication
app = QApplication([])
QCoreApplication.setOrganizationName("SplitscopeBench")
QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, os.environ["SPLITSCOPE_DATA_DIR"])
from splitscope.engine.model import GraphModel
from splitscope.gui.shell.launch import _stall_watch, collect_on_ui_thread
from splitscope.gui.shell.window import MainWindow
collect_on_ui_thread(app)
first, second = Path(sys.argv[1]), Path(sys.argv[2])
w = MainWindow("table")
w.show()
beat = {"last": time.perf_counter(), "max": 0.0, "on": False}
def tick():
    now = time.perf_counter()
    if beat["on"]:
        beat["max"] = max(beat["max"], now - beat["last"])
    beat["last"] = now
heart = QTimer()
heart.setInterval(5)
heart.timeout.connect(tick)
heart.start()
def pump(cond, timeout=600.0):
    end = time.time() + timeout
    while time.time() < end and not cond():
        app.processEvents()
        time.sleep(0.002)
def shown(path):
    gm = w.controller.graph_model
    return gm is not None and gm.path == path and not w.runner.running and not w.layout_runner.running
w.open_model(first)
pump(lambda: shown(first))
pump(lambda: False, 2.0)
beat["on"], beat["last"] = True, time.perf_counter()
where = _stall_watch(beat)
w.open_model(second)
pump(lambda: shown(second))
pump(lambda: False, 4.0)
beat["on"] = False  # what follows is this probe's own looking
gap, at, t0 = round(beat["max"] * 1000, 1), where(), time.perf_counter()
def left():
    gc.unfreeze()
    gc.collect()
    return any(isinstance(o, GraphModel) and o.path == first for o in gc.get_objects())
gone = None
while time.perf_counter() - t0 < 30:
    if not left():
        gone = round(time.perf_counter() - t0 + 4.0, 1)
        break
    pump(lambda: False, 0.5)
print(json.dumps({"longest_ui_gap_ms": gap, "where": at, "first_model_freed_after_s": gone}))
sys.stdout.flush()
os._exit(0)
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", type=Path)
    ap.add_argument(
        "next", type=Path, nargs="?", default=Path(__file__).resolve().parents[1] / "resources" / "sample.onnx"
    )
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--rev", action="append", default=[], help="a folder holding another revision's splitscope")
    args = ap.parse_args()
    for _ in range(args.repeat):
        for rev in ["this", *args.rev]:
            print(json.dumps({"rev": rev, **switch(args.model, args.next, rev)}), flush=True)


def switch(model: Path, after: Path, rev: str) -> dict[str, object]:
    """One run in a fresh process, ``rev``'s code first on the path (``this``: the code installed here)."""
    with tempfile.TemporaryDirectory() as home:
        env = {
            **os.environ,
            "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
            "SPLITSCOPE_DATA_DIR": f"{home}/d",
            "SPLITSCOPE_CACHE_DIR": f"{home}/c",
            "XDG_CONFIG_HOME": f"{home}/x",
        }
        if rev != "this":
            env["PYTHONPATH"] = rev
        out = subprocess.run(
            [sys.executable, "-c", PROBE, str(model.resolve()), str(after.resolve())],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    line = next((x for x in reversed(out.stdout.splitlines()) if x.startswith("{")), None)
    return json.loads(line) if line else {"error": out.stderr[-300:], "rc": out.returncode}


if __name__ == "__main__":
    main()
