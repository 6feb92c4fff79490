"""The split summary's charts on the UI thread: the first figures (what the first model pays: imports, the charts'
creation) and each switch between two models' figures, repainted at once; for this revision and others, each in a
fresh process, interleaved. A revision is a folder put first on PYTHONPATH (``bench/peer.py``'s ``site``).

    QT_QPA_PLATFORM=offscreen python bench/bench_summary_paint.py [--rev DIR ...] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, os, time
from PySide6.QtWidgets import QApplication
app = QApplication([])
from splitscope.engine.split.analyze import analyze_model
from splitscope.engine.report.stats import panel_stats
from splitscope.gui.canvas.panels import SummaryPanel
from splitscope.gui.shell.palette import make_palette
root = os.environ["BENCH_ROOT"]
models = ("resources/sample.onnx", "tests/data/torch_two_stage.onnx")
gms = [analyze_model(os.path.join(root, p), parser="table") for p in models]
stats = [panel_stats(g) for g in gms]
pal = make_palette(False)
t0 = time.perf_counter()
panel = SummaryPanel()
panel.resize(420, 560)
panel.show()
panel.set_stats(gms[0], stats[0], pal)
panel.repaint()
app.processEvents()
first = (time.perf_counter() - t0) * 1000
times = []
for k in range(40):
    t = time.perf_counter()
    panel.set_stats(gms[k % 2], stats[k % 2], pal)
    panel.repaint()
    app.processEvents()
    times.append((time.perf_counter() - t) * 1000)
times.sort()
out = {"first_ms": round(first, 1), "switch_median_ms": round(times[20], 2), "switch_max_ms": round(times[-1], 2)}
print(json.dumps(out))
os._exit(0)
"""


def run(rev: str) -> dict[str, object]:
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"), "BENCH_ROOT": str(ROOT)}
    if rev != "this":
        env["PYTHONPATH"] = rev
    with tempfile.TemporaryDirectory() as home:  # not the checkout: its splitscope/ would come first on the path
        cmd = [sys.executable, "-c", PROBE]
        out = subprocess.run(cmd, env=env, cwd=home, capture_output=True, text=True, timeout=600)
    line = next((x for x in reversed(out.stdout.splitlines()) if x.startswith("{")), None)
    return {"rev": rev, **(json.loads(line) if line else {"error": out.stderr[-300:]})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rev", action="append", default=[], help="a folder holding another revision's splitscope")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    for _ in range(args.repeat):
        for rev in ["this", *args.rev]:
            print(json.dumps(run(rev)), flush=True)


if __name__ == "__main__":
    main()
