"""Where a calibration statistics pass spends its time, piece by piece, in one cold process: the model with every
activation as an output, the session's creation, its first run, the other runs alone, and the runs with the
statistics folded (on the GPU for ``ort-cuda``, on the host's threads for ``ort-cpu``); the peer is a plain pass over
the same samples (a session and a run a sample, outputs to the host) in the same process.

    python bench/gpu_calib_parts.py MODEL.onnx ort-cuda|ort-cpu [SAMPLES] [--algo DEFAULT|HEURISTIC|EXHAUSTIVE]

Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from typing import Any

import numpy as np
import onnx
from splitscope.engine.calib import collect as C
from splitscope.engine.calib.calibrate import calibrate
from splitscope.engine.calib.qdq import plan as qdq_plan
from splitscope.engine.calib.stats import TensorStats
from splitscope.engine.jobs import run_to_end
from splitscope.engine.runtime.inputs import input_specs, random_feeds

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("backend")
ap.add_argument("samples", type=int, nargs="?", default=64)
ap.add_argument("--algo", default="")
ap.add_argument("--whole", action="store_true", help="then the whole calibration (a fresh cache)")
a = ap.parse_args()

import onnxruntime as ort  # noqa: E402

if a.backend == "ort-cuda":
    ort.preload_dlls()
proto = onnx.load(a.model, load_external_data=False)
specs = input_specs(proto)
feeds = [random_feeds(specs, {}, k) for k in range(a.samples)]
tensors = qdq_plan(proto, set()).activations
row: dict[str, object] = {"model": os.path.basename(a.model), "backend": a.backend, "algo": a.algo or "default"}
cuda = a.backend == "ort-cuda"
opts = {"use_tf32": "0"}
if a.algo:
    opts["cudnn_conv_algo_search"] = a.algo
providers = [("CUDAExecutionProvider", opts), "CPUExecutionProvider"] if cuda else ["CPUExecutionProvider"]

t = time.perf_counter()
model, _ = C._with_outputs(__import__("pathlib").Path(a.model), tensors)
row["with_outputs_s"] = round(time.perf_counter() - t, 3)
so = ort.SessionOptions()
so.log_severity_level = 4
t = time.perf_counter()
sess = ort.InferenceSession(model, so, providers=providers)
SESSION = [sess]
row["session_s"] = round(time.perf_counter() - t, 3)
want = [o.name for o in sess.get_outputs() if o.name in set(tensors)]


def on_device(sess: Any, f: dict[str, np.ndarray]) -> tuple[list, list]:
    """One batch with its activations left on the GPU, and their views for the folder (either revision's way)."""
    if hasattr(C, "_run_on_device"):  # a revision before the runners
        return C._run_on_device(sess, f, want)
    io = sess.io_binding()
    for name, a in f.items():
        io.bind_cpu_input(name, a)
    for n in want:
        io.bind_output(n, "cuda", 0)
    sess.run_with_iobinding(io)
    io.synchronize_outputs()
    outs = io.get_outputs()
    return outs, C._activations(want, outs)


def run(f: dict[str, np.ndarray]) -> list:
    sess = SESSION[0]
    return on_device(sess, f)[0] if cuda else sess.run(want, f)


t = time.perf_counter()
run(feeds[0])
row["first_run_s"] = round(time.perf_counter() - t, 3)
t = time.perf_counter()
for f in feeds[1:]:
    run(f)
row["runs_alone_s"] = round(time.perf_counter() - t, 3)
stats = {n: TensorStats(n) for n in want}
if cuda:
    from splitscope.engine.calib.devstats import DeviceFolder
    from splitscope.engine.paths import cache_dir

    t = time.perf_counter()
    try:
        folder = DeviceFolder(want, cache_dir() / "kernels")
    except TypeError:  # a revision whose folder took the number of tensors
        folder = DeviceFolder(len(want), cache_dir() / "kernels")  # type: ignore[arg-type]
    row["folder_init_s"] = round(time.perf_counter() - t, 3)
    t = time.perf_counter()
    fold_s = 0.0
    for f in feeds:
        outs, acts = on_device(sess, f)
        u = time.perf_counter()
        folder.fold(acts, stats)
        fold_s += time.perf_counter() - u
        del outs, acts
    if hasattr(folder, "read"):
        folder.read(stats)
    row["runs_folded_s"] = round(time.perf_counter() - t, 3)
    row["fold_only_s"] = round(fold_s, 3)
    row["absmax_sum"] = round(sum(s.absmax for s in stats.values()), 4)
    row["hist_total"] = int(sum(int(s.hist.sum()) for s in stats.values()))
else:
    host = C._HostFolder(want, stats, C.fold_threads())
    t = time.perf_counter()
    for f in feeds:
        outs = sess.run(want, f)
        host.wait()
        host.submit(outs)
    host.wait()
    host.close()
    row["runs_folded_s"] = round(time.perf_counter() - t, 3)
del sess, SESSION[0]
# The peer: a plain pass (session and runs, outputs to the host), as a user's inference loop.
t = time.perf_counter()
plain = ort.InferenceSession(a.model, so, providers=providers)
for f in feeds:
    plain.run(None, f)
row["plain_pass_s"] = round(time.perf_counter() - t, 3)
if a.whole:
    os.environ["SPLITSCOPE_CACHE_DIR"] = tempfile.mkdtemp()
    t = time.perf_counter()
    doc = run_to_end(calibrate(a.model, "/tmp/q.onnx", method="entropy", samples=a.samples, backend=a.backend))
    row["calibrate_s"] = round(time.perf_counter() - t, 3)
    row["stats_s"] = doc["stats_seconds"]
    row["folded_on"] = doc.get("stats_folded_on")
print(json.dumps(row), flush=True)
