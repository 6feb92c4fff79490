"""How long another thread waits for the interpreter while a model is read: the window's thread is such a thread
(it paints only when a worker lets it run). A worker builds the preview of MODEL (and with ``--view`` its first
view; with ``--full`` instead, the full analysis with the operator table, as the window's load runs it); this thread
wakes every millisecond and records each gap over 30 ms with the worker's frames at its end.

    python bench/bench_gil_wait.py MODEL [--view | --full] [--rev DIR ...]

``--rev DIR`` runs the same in an installed copy of another revision (``pip install --target DIR``), in turn, so
two revisions are measured in one interleaved run. Prints the longest gaps of each run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, sys, threading, time, traceback
from pathlib import Path
sys.setswitchinterval(0.005)
model, view, full = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
done = threading.Event()

def work():
    from splitscope.engine.jobs import gc_paused, run_to_end
    if full:
        from splitscope.engine.split.analyze import analyze_model
        analyze_model(model, parser="table")  # the collector paused inside, as in the window
        done.set()
        return
    from splitscope.engine.split.preview import preview_model
    with gc_paused():  # as the window's preview job runs it
        gm = preview_model(model, "tensorrt_rtx")[0]
        if view:
            from splitscope.engine.view.layout import prepare_view
            run_to_end(prepare_view(gm, viewport=(1366, 768)))
    done.set()

th = threading.Thread(target=work)
th.start()
gaps, last = [], time.perf_counter()
while not done.is_set():
    time.sleep(0.001)
    now = time.perf_counter()
    if now - last > 0.03:
        f = sys._current_frames().get(th.ident)
        stack = reversed(traceback.extract_stack(f)[-3:]) if f else []
        where = " < ".join(f"{Path(x.filename).name}:{x.lineno}" for x in stack)
        gaps.append([round((now - last) * 1000, 1), where])
    last = time.perf_counter()
th.join()
print(json.dumps(sorted(gaps, reverse=True)[:8]))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--view", action="store_true")
    ap.add_argument("--full", action="store_true", help="the full analysis (operator table) instead of the preview")
    ap.add_argument("--rev", action="append", default=[], help="an installed copy of another revision")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    revs = ["this", *a.rev]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for k in range(a.repeat):
        for rev in revs:
            env = dict(os.environ, PYTHONPATH=root if rev == "this" else rev)
            out = subprocess.run(
                [sys.executable, "-c", CHILD, a.model, "1" if a.view else "0", "1" if a.full else "0"],
                env=env, cwd="/" if rev != "this" else root, capture_output=True, text=True, check=True,
            )  # fmt: skip
            gaps = json.loads(out.stdout.strip().splitlines()[-1])
            at = gaps[0][1] if gaps else "-"
            print(f"round {k + 1} {rev}: longest waits (ms) {[g for g, _ in gaps]}; the longest at {at}")
            if a.full:  # where each of the longest ended
                for g, where in gaps:
                    print(f"    {g} ms  {where}")


if __name__ == "__main__":
    main()
