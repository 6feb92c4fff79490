"""What the device does during one timed ONNX Runtime CUDA run, without ONNX Runtime's profiler: CUPTI's kernel and
copy records of the timed session's own runs (the same session options as the profile's timed loop), split into
kernels, copies, the device idle between them (inside the run) and the host's time before the first and after the last
record; plus the same model under CUDA graph capture where ONNX Runtime can capture it, and the node names that ONNX
Runtime's profiler gives at each optimisation level.

    python bench/gpu_timeline_probe.py MODEL.onnx [--dim NAME=VALUE ...] [--runs 50]

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import onnx
import onnxruntime as ort
from splitscope.engine.runtime.cupti_times import KernelTrace
from splitscope.engine.runtime.inputs import input_specs, random_feeds

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--dim", action="append", default=[])
ap.add_argument("--runs", type=int, default=50)
a = ap.parse_args()
ort.preload_dlls()
dims = {k: int(v) for k, v in (d.split("=") for d in a.dim)}
proto = onnx.load(a.model, load_external_data=False)
feeds = random_feeds(input_specs(proto), dims, 0)
row: dict[str, object] = {"model": a.model.rsplit("/", 1)[-1]}


def session(level: object, graph: bool = False, profile: str = "") -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.log_severity_level = 4
    so.graph_optimization_level = level
    if profile:
        so.enable_profiling = True
        so.profile_file_prefix = profile
    opts = {"enable_cuda_graph": "1"} if graph else {}
    return ort.InferenceSession(a.model, so, providers=[("CUDAExecutionProvider", opts), "CPUExecutionProvider"])


def bound(sess: ort.InferenceSession):
    io = sess.io_binding()
    for name, v in feeds.items():
        io.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(v, "cuda", 0))
    for o in sess.get_outputs():
        io.bind_output(o.name, "cuda", 0)

    def run() -> None:
        sess.run_with_iobinding(io)
        io.synchronize_outputs()

    return run


def timed(run, n: int) -> list[tuple[float, float]]:
    out = []
    for _ in range(n):
        t = time.time_ns()
        run()
        out.append((t, time.time_ns()))
    return out


ALL = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
sess = session(ALL)
run = bound(sess)
for _ in range(20):
    run()
plain = timed(run, a.runs)
row["latency_ms"] = round(float(np.median([(e - s) / 1e6 for s, e in plain])), 4)
tr = KernelTrace()
with tr:
    traced = timed(run, a.runs)
row["latency_traced_ms"] = round(float(np.median([(e - s) / 1e6 for s, e in traced])), 4)
k = tr.trace
off = k.offset_ns
spans = sorted((x.start - off, x.end - off) for x in k.kernels)
kern, idle, head, tail = [], [], [], []
for s, e in traced:
    inside = [(max(a_, s), min(b_, e)) for a_, b_ in spans if b_ > s and a_ < e]
    if not inside:
        continue
    busy, cur = 0, None
    for x0, x1 in inside:
        if cur is None or x0 > cur[1]:
            if cur is not None:
                busy += cur[1] - cur[0]
            cur = [x0, x1]
        else:
            cur[1] = max(cur[1], x1)
    busy += cur[1] - cur[0]
    first, last = inside[0][0], max(x1 for _, x1 in inside)
    kern.append(busy / 1e6)
    idle.append((last - first - busy) / 1e6)
    head.append((first - s) / 1e6)
    tail.append((e - last) / 1e6)
row["timeline_ms"] = {
    "kernels": round(float(np.median(kern)), 4),
    "idle_between": round(float(np.median(idle)), 4),
    "host_before_first": round(float(np.median(head)), 4),
    "host_after_last": round(float(np.median(tail)), 4),
    "kernels_a_run": round(len(k.kernels) / max(len(traced), 1), 1),
}
del run, sess
try:
    g = session(ALL, graph=True)
    grun = bound(g)
    for _ in range(20):
        grun()
    row["cuda_graph_ms"] = round(float(np.median([(e - s) / 1e6 for s, e in timed(grun, a.runs)])), 4)
    del grun, g
except Exception as e:  # noqa: BLE001
    row["cuda_graph_ms"] = None
    row["cuda_graph_error"] = str(e).splitlines()[0][:300]
# Node names per level, against the model's own.
names = {n.name for n in proto.graph.node}
for label, level in (("basic", ort.GraphOptimizationLevel.ORT_ENABLE_BASIC), ("all", ALL)):
    p = session(level, profile=f"/tmp/probe-{label}")
    r = bound(p)
    r()
    r()
    with open(p.end_profiling()) as f:
        ev = json.load(f)
    nodes = {
        e["name"][: -len("_kernel_time")]: e["args"].get("op_name")
        for e in ev
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time")
    }
    foreign = {n: op for n, op in nodes.items() if n not in names}
    row[f"nodes_{label}"] = {
        "profiled": len(nodes),
        "not_in_model": len(foreign),
        "examples": list(foreign.items())[:12],
    }
print(json.dumps(row), flush=True)
