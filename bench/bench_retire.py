"""Freeing a large model: the longest time the main thread waits for the interpreter when a 200k-node model's last
reference is dropped on a worker thread (the peer: what happened before), against the same model handed to
``engine.jobs.retire`` (freed a step at a time on its own thread). The main thread sleeps a millisecond at a time and
notes its longest gap, as a UI thread's event loop would feel it.

    python bench/export_llms.py DIR --llama-layers 1200
    python bench/bench_retire.py DIR/llama_ts_1200.onnx [--dim seq=128]
"""

from __future__ import annotations

import argparse
import json
import threading
import time

from splitscope.engine.jobs import retire
from splitscope.engine.split.analyze import analyze_model


def longest_gap(seconds: float) -> float:
    worst, last = 0.0, time.perf_counter()
    end = last + seconds
    while time.perf_counter() < end:
        time.sleep(0.001)
        now = time.perf_counter()
        worst, last = max(worst, now - last), now
    return round(worst * 1000, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--dim", action="append", default=["seq=128"])
    args = ap.parse_args()
    dims = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
    row: dict[str, object] = {"model": args.model.rsplit("/", 1)[-1]}
    holder = [analyze_model(args.model, parser="table", dims=dims)]
    row["nodes"] = len(holder[0].nodes)
    threading.Timer(0.3, holder.clear).start()  # the last reference dropped on a worker
    row["dropped_ms"] = longest_gap(2.0)
    holder = [analyze_model(args.model, parser="table", dims=dims)]
    threading.Timer(0.3, lambda: retire(holder.pop())).start()
    row["retired_ms"] = longest_gap(5.0)
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
