"""What one full collection of the garbage collector costs with a model loaded: every container the model holds
is walked, on whichever thread the collection falls (the window's too). MODEL is analysed with the operator table,
then ``gc.collect()`` is timed ``--repeat`` times; with ``--rev DIR`` the same runs in installed copies of other
revisions (``pip install --target DIR``), in turn, each in its own process.

    python bench/bench_collect.py MODEL [--rev DIR ...] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import gc, json, sys, time
from splitscope.engine.split.analyze import analyze_model
gm = analyze_model(sys.argv[1], parser="table")
gc.collect()
took = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); gc.collect(); took.append(round((time.perf_counter() - t) * 1000, 1))
print(json.dumps({"nodes": len(gm.nodes), "tracked": len(gc.get_objects()), "collect_ms": took}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--rev", action="append", default=[], help="an installed copy of another revision")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for _ in range(args.rounds):
        for rev in (here, *args.rev):
            env = dict(os.environ, PYTHONPATH=rev)
            out = (
                subprocess.run(
                    [sys.executable, "-c", CHILD, args.model, str(args.repeat)],
                    env=env,
                    cwd="/",
                    capture_output=True,
                    text=True,
                    check=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            print(json.dumps({"rev": "this checkout" if rev == here else rev, **json.loads(out)}))


if __name__ == "__main__":
    main()
