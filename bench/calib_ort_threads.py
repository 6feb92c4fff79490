"""ONNX Runtime's thread count during a CPU calibration pass on a large machine: the folding threads fixed at four,
ONNX Runtime given the rest (the default) or every core, each pass after a plain pass over the same samples in the same
process (the peer), alternated, twice.

    python bench/calib_ort_threads.py resnet50.onnx
"""

import os
import sys
import tempfile
import time

import onnx
import onnxruntime as ort
from splitscope.engine.calib import collect as C
from splitscope.engine.calib.calibrate import calibrate
from splitscope.engine.jobs import run_to_end
from splitscope.engine.runtime.inputs import input_specs, random_feeds

m = sys.argv[1]
specs = input_specs(onnx.load(m, load_external_data=False))
feeds = [random_feeds(specs, {}, k) for k in range(64)]
cores = len(os.sched_getaffinity(0))


def plain():
    t = time.perf_counter()
    s = ort.InferenceSession(m, providers=["CPUExecutionProvider"])
    for f in feeds:
        s.run(None, f)
    return time.perf_counter() - t


print("cores", cores, "ort", ort.__version__, flush=True)
C.fold_threads = lambda: 4
for label, seen_cores in (("rest", cores), ("all", cores + 4), ("rest", cores), ("all", cores + 4)):
    C._cores = lambda n=seen_cores: n  # ONNX Runtime gets _cores() - 4 threads
    p = plain()
    os.environ["SPLITSCOPE_CACHE_DIR"] = tempfile.mkdtemp()
    doc = run_to_end(calibrate(m, "/tmp/q.onnx", method="entropy", samples=64, heldout=1))
    st, ph = doc["stats_seconds"], doc["stats_phases"]
    print(
        f"ONNX Runtime threads {label:4s} ({seen_cores - 4}): plain {p:.2f} s, statistics {st:.2f} s = {st / p:.2f}x, "
        f"runs {ph.get('runs_s')} s, fold wait {ph.get('fold_wait_s')} s",
        flush=True,
    )
