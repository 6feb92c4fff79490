"""Memory that returns: the process's resident memory (RSS) while models are opened in turn, for one or more revisions
of the code, interleaved (each run a fresh process; a revision is a folder put first on PYTHONPATH, such as an
installed copy of an older commit: ``pip install --no-deps --target DIR .`` in its checkout).

``window``: one window opens the models in turn, ``--rounds`` times over (5 models x 4 rounds = 20 opens), each
waited for until it is shown; the figure is the RSS after the last open against the RSS after the first open of the
same model (the issue's target: within 10%). ``api``: one Python process analyses the models in turn through the
engine's API (``analyze_model``), ``--calls`` times; the same comparison. Settings and data in a temporary folder.

    python bench/make_models.py /tmp/m --nodes 200000
    QT_QPA_PLATFORM=offscreen python bench/bench_memory.py window MODEL... [--rev DIR ...] [--repeat 2]
    python bench/bench_memory.py api MODEL... [--calls 50]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

RSS = r"""
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
"""

WINDOW = (
    r"""
import json, os, sys, time
from pathlib import Path
from PySide6.QtCore import QCoreApplication, QSettings
from PySide6.QtWidgets import QApplication
"""
    + RSS
    + r"""
app = QApplication([])
QCoreApplication.setOrganizationName("SplitscopeBench")
QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, os.environ["SPLITSCOPE_DATA_DIR"])
from splitscope.gui.shell.window import MainWindow
models, rounds = [Path(p) for p in sys.argv[2:]], int(sys.argv[1])
w = MainWindow("table")
w.show()
def pump(cond, timeout=900.0):
    end = time.time() + timeout
    while time.time() < end and not cond():
        app.processEvents()
        time.sleep(0.005)
def shown(path):
    gm = w.controller.graph_model
    return gm is not None and gm.path == path and not w.runner.running and not w.layout_runner.running
trail = []
for r in range(rounds):
    for m in models:
        w.open_model(m)
        pump(lambda: shown(m))
        pump(lambda: False, 1.5)  # what the window frees after the switch, freed
        trail.append(round(rss_mb(), 1))
first_of_last = trail[len(models) - 1]
print(json.dumps({"rss_mb": trail, "first_open_of_last_mb": first_of_last, "end_mb": trail[-1],
                  "end_over_first": round(trail[-1] / first_of_last, 3)}))
sys.stdout.flush()
os._exit(0)
"""
)

API = (
    r"""
import json, os, sys
from pathlib import Path
"""
    + RSS
    + r"""
from splitscope.engine.split.analyze import analyze_model
models, calls = [Path(p) for p in sys.argv[2:]], int(sys.argv[1])
trail = []
for k in range(calls):
    gm = analyze_model(models[k % len(models)], parser="table")
    del gm
    trail.append(round(rss_mb(), 1))
last = (calls - 1) % len(models)
first_of_last = trail[last]
print(json.dumps({"rss_mb": trail, "first_open_of_last_mb": first_of_last, "end_mb": trail[-1],
                  "end_over_first": round(trail[-1] / first_of_last, 3)}))
"""
)


def run(mode: str, rev: str, models: list[Path], count: int) -> dict[str, object]:
    code = WINDOW if mode == "window" else API
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
            [sys.executable, "-c", code, str(count), *(str(m.resolve()) for m in models)],
            env=env,
            capture_output=True,
            text=True,
            timeout=3600,
            cwd=home,
        )
    line = next((x for x in reversed(out.stdout.splitlines()) if x.startswith("{")), None)
    doc = json.loads(line) if line else {"error": out.stderr[-400:], "rc": out.returncode}
    return {"rev": rev, **doc}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["window", "api"])
    ap.add_argument("models", type=Path, nargs="+")
    ap.add_argument("--rev", action="append", default=[], help="a folder holding another revision's splitscope")
    ap.add_argument("--rounds", type=int, default=4, help="window: times over the models")
    ap.add_argument("--calls", type=int, default=50, help="api: analyses in all")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    count = args.rounds if args.mode == "window" else args.calls
    for _ in range(args.repeat):
        for rev in ["this", *args.rev]:
            print(json.dumps(run(args.mode, rev, args.models, count)), flush=True)


if __name__ == "__main__":
    main()
