"""A sweep on a local Ray against the same sweep in sequence, interleaved (fresh cell stores each run).

    python bench/bench_sweep.py MODEL --dim batch=1,2,4,8 --precision fp32,fp16,int8 [--repeat 2]

On one machine a CPU cell takes a whole node's cores (so that cells never time each other), so Ray cannot run CPU
cells side by side: the ratio is Ray's own cost (starting the local cluster, scheduling) over the cells' time. With
GPU cells on a machine of several GPUs, Ray runs one cell a GPU at once.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--dim", action="append", default=[])
    ap.add_argument("--precision", default="fp32,fp16,int8")
    ap.add_argument("--backend", default="ort-cpu")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    times: dict[str, list[float]] = {"sequence": [], "ray": []}
    cells = 0
    for _ in range(args.repeat):
        for how in ("sequence", "ray"):
            home = tempfile.mkdtemp(prefix="splitscope-sweep-bench-")
            env = {**os.environ, "XDG_CACHE_HOME": home, "SPLITSCOPE_CACHE_DIR": home, "PYTHONPATH": str(ROOT)}
            out = Path(home) / "sweep.json"
            cmd = [
                sys.executable,
                "-m",
                "splitscope.engine.cli",
                "sweep",
                args.model,
                "--precision",
                args.precision,
                "--backend",
                args.backend,
                "--iterations",
                str(args.iterations),
                "--json",
                str(out),
                "-q",
            ]
            cmd += [x for d in args.dim for x in ("--dim", d)]
            cmd += ["--no-ray"] if how == "sequence" else []
            t0 = time.perf_counter()
            subprocess.run(cmd, env=env, check=False, capture_output=True)
            times[how].append(time.perf_counter() - t0)
            doc = json.loads(out.read_text())
            cells = len(doc["cells"])
            assert doc["runner"] == how, doc["runner"]
    seq, ray = statistics.median(times["sequence"]), statistics.median(times["ray"])
    print(
        json.dumps(
            {
                "cells": cells,
                "sequence_s": round(seq, 2),
                "ray_s": round(ray, 2),
                "ray_over_sequence": round(ray / seq, 3),
                "runs": times,
            }
        )
    )


if __name__ == "__main__":
    main()
