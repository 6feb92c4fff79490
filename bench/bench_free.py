"""Freeing a large model on the thread that drops it: for one or more revisions of the code, interleaved, each run
a fresh process that analyses MODEL (timed), then times the last reference to it going (the cyclic collector off, as
during a frame) and counts what it held; with ``--view``, the window's view of it (hierarchy, layout) is built and
freed first, timed apart: objects the collector tracks and the interpreter's allocated blocks. A
revision is a folder put first on PYTHONPATH (an installed copy of an older commit:
``pip install --no-deps --target DIR .``).

    python bench/make_models.py /tmp/m --nodes 200000
    python bench/bench_free.py /tmp/m/transformer_200k.onnx --rev /tmp/before --rev . --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import gc, json, sys, time
from splitscope.engine.split.analyze import analyze_model
t = time.perf_counter()
gm = analyze_model(sys.argv[1], parser="table")
analyze_s = time.perf_counter() - t
view = None
if sys.argv[2] == "view":  # the window's view of it too: hierarchy, layout context, first layout
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.view.layout import prepare_view
    view = run_to_end(prepare_view(gm))
gc.unfreeze(); gc.collect(); gc.disable()
tracked = len(gc.get_objects())
row = {"analyze_s": round(analyze_s, 2)}
if view is not None:
    blocks = sys.getallocatedblocks()
    t = time.perf_counter()
    del view
    row["view_free_ms"] = round((time.perf_counter() - t) * 1000, 1)
    row["view_blocks_freed"] = blocks - sys.getallocatedblocks()
blocks = sys.getallocatedblocks()
t = time.perf_counter()
del gm
free_ms = (time.perf_counter() - t) * 1000
freed = blocks - sys.getallocatedblocks()
row.update({"free_ms": round(free_ms, 1), "tracked": tracked, "blocks_freed": freed})
print(json.dumps(row))
"""


def one(model: str, rev: str, view: bool) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(rev))
    argv = [sys.executable, "-c", CHILD, model, "view" if view else "model"]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--rev", action="append", required=True, help="a folder holding the splitscope package")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--view", action="store_true", help="also build the window's view of it, and free that first")
    args = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {r: [] for r in args.rev}
    for _ in range(args.repeat):
        for rev in args.rev:  # interleaved: each revision once a round
            runs[rev].append(one(args.model, rev, args.view))
    base = args.rev[0]
    med = {r: {k: statistics.median(x[k] for x in v) for k in v[0]} for r, v in runs.items()}
    for rev, m in med.items():
        ratio = {k: round(m[k] / med[base][k], 3) for k in m}
        print(json.dumps({"rev": rev, **m, "against_first": ratio}))


if __name__ == "__main__":
    main()
