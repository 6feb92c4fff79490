"""How long another thread waits for the interpreter while a worker walks a graph's value infos: unpacked into one
tuple (``(*g.input, *g.value_info, *g.output)``, the peer) against one at a time (``itertools.chain``, what the
loader and shape inference do). A thread beside the walk sleeps 1 ms in a loop and records its longest wait; the
window's thread is such a thread. Interleaved, each way ``--repeat`` times on a fresh parse of the same graph.

    python bench/bench_value_infos.py [--infos 1000000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import threading
import time
from itertools import chain

import onnx
from onnx import TensorProto, helper


def _walk(data: bytes, how: str) -> tuple[float, float]:
    """Walk a fresh parse of ``data`` ``how``; (the walk's seconds, the other thread's longest wait in seconds)."""
    g = onnx.GraphProto()
    g.ParseFromString(data)
    stop, worst = threading.Event(), [0.0]

    def watch() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            worst[0], last = max(worst[0], now - last), now

    t = threading.Thread(target=watch)
    t.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    it = (*g.input, *g.value_info, *g.output) if how == "tuple" else chain(g.input, g.value_info, g.output)
    count = sum(1 for _ in it)
    del it  # the tuple is freed in one call too: inside the timing
    took = time.perf_counter() - t0
    stop.set()
    t.join()
    assert count == len(g.value_info)
    return took, worst[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--infos", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    g = onnx.GraphProto()
    g.value_info.extend(helper.make_tensor_value_info(f"t{i}", TensorProto.FLOAT, [1, 16]) for i in range(args.infos))
    data = g.SerializeToString()
    for _ in range(args.repeat):
        for how in ("tuple", "chain"):
            took, worst = _walk(data, how)
            print(
                f"{how:5s} {args.infos:,} value infos: walk {took * 1000:.0f} ms, longest wait beside it "
                f"{worst * 1000:.1f} ms"
            )


if __name__ == "__main__":
    main()
