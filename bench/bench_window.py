"""The window at once (issue 20): seconds from Qt and pyqtgraph being imported to the main window's first show
with a model being opened, this checkout against another revision (the peer), interleaved in one run, at model
sizes from the sample to 200k nodes. Each run is a fresh process (offscreen Qt, the real app's MainWindow).

    python bench/bench_window.py --peer 8d79ed6 [--sizes 0 1000 50000 200000] [--repeat 5]

Size 0 is the bundled sample; the others are bench/make_models.py's transformers (made once in a temp folder).
The peer revision is checked out with ``git worktree`` and run from there (its own sources, this venv)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import sys, time, json
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
from PySide6.QtWidgets import QApplication
import pyqtgraph
t1 = time.perf_counter()
app = QApplication([])
from splitscope.gui.shell.window import MainWindow
w = MainWindow("table")
w.show()
from PySide6.QtCore import QTimer
QTimer.singleShot(0, lambda: w.open_model(__import__("pathlib").Path({model!r})))  # as the app opens its first
app.processEvents()
t2 = time.perf_counter()
print(json.dumps({{"after_qt_s": t2 - t1, "qt_import_s": t1 - t0}}), flush=True)
import os
os._exit(0)
"""


def run(src: Path, model: Path) -> dict[str, float]:
    """One fresh process: seconds from Qt's import to the window shown with the model being opened, and Qt's import.
    Bytecode is written and read as an installed app's is (the first run of each revision writes it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(src))
    with tempfile.TemporaryDirectory() as home:  # never the user's settings or data
        env.update(SPLITSCOPE_DATA_DIR=f"{home}/d", SPLITSCOPE_CACHE_DIR=f"{home}/c", XDG_CONFIG_HOME=f"{home}/x")
        code = PROBE.format(root=str(src), model=str(model))
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    line = next((x for x in out.stdout.splitlines() if x.startswith("{")), None)
    if line is None:
        raise SystemExit(f"no result from {src}: {out.stderr[-800:]}")
    return json.loads(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", required=True, help="the git revision to compare with")
    ap.add_argument("--sizes", type=int, nargs="*", default=[0, 1000, 50000, 200000])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    import onnx
    from make_models import make_transformer
    from peer import peer_tree, site

    tmp = Path(tempfile.mkdtemp(prefix="splitscope-bench-window-"))
    with peer_tree(args.peer) as peer:
        ours_site, peer_site = site(ROOT, tmp / "site-ours"), site(peer, tmp / "site-peer")
        models = {}
        for n in args.sizes:
            if n == 0:
                models[n] = ROOT / "resources" / "sample.onnx"
            else:
                models[n] = tmp / f"t{n}.onnx"
                onnx.save(make_transformer(n, break_every=8), str(models[n]))
        for s in (ours_site, peer_site):  # bytecode written, as an installed app has it
            run(s, models[args.sizes[0]])
        rows = []
        for n, model in models.items():
            ours, theirs, qt = [], [], []
            for _ in range(args.repeat):  # interleaved: the machine's noise falls on both alike
                a, b = run(ours_site, model), run(peer_site, model)
                ours.append(a["after_qt_s"])
                theirs.append(b["after_qt_s"])
                qt += [a["qt_import_s"], b["qt_import_s"]]
            ratios = sorted(t / o for o, t in zip(ours, theirs, strict=True))
            row = {
                "nodes": n or "sample",
                "ours_s": round(statistics.median(ours), 3),
                "peer_s": round(statistics.median(theirs), 3),
                "qt_import_s": round(statistics.median(qt), 3),
                "ours_range": [round(min(ours), 3), round(max(ours), 3)],
                "peer_over_ours": round(statistics.median(ratios), 2),
                "range": [round(ratios[0], 2), round(ratios[-1], 2)],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
