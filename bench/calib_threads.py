"""How many threads should fold the calibration statistics on a large machine: one calibration of ResNet-50 (64
random samples, entropy) per thread count, each after a plain ONNX Runtime pass over the same samples in the same
process (the peer), with fresh statistics each time. ONNX Runtime gets the cores the folding threads leave; with
``--ort-all-cores`` each count is also run with ONNX Runtime on every core beside them, alternated.

    python bench/export_llms.py /var/tmp/m --llama-layers --resnet50
    python bench/calib_threads.py [/var/tmp/m/resnet50.onnx [THREADS ...]] [--ort-all-cores]

The thread counts default to 1, 4, 6, 8, 12, twice.
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

args = [a for a in sys.argv[1:] if a != "--ort-all-cores"]
both = "--ort-all-cores" in sys.argv[1:]
m = args[0] if args else "/var/tmp/m/resnet50.onnx"
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
counts = [int(a) for a in args[1:]] or [1, 4, 6, 8, 12, 4, 6, 8, 12]
for th in counts:
    for all_cores in (False, True) if both else (False,):
        p = plain()
        C.fold_threads = lambda th=th: th
        C._cores = lambda n=(cores + th if all_cores else cores): n  # ONNX Runtime gets _cores() - th threads
        os.environ["SPLITSCOPE_CACHE_DIR"] = tempfile.mkdtemp()
        t = time.perf_counter()
        doc = run_to_end(calibrate(m, "/tmp/q.onnx", method="entropy", samples=64, heldout=1))
        stats, ph = doc["stats_seconds"], doc["stats_phases"]
        whole = time.perf_counter() - t
        ort_threads = cores if all_cores else max(1, cores - th)
        print(
            f"threads {th:2d}, ONNX Runtime {ort_threads:2d}: plain {p:.2f} s, statistics {stats:.2f} s = "
            f"{stats / p:.2f}x, whole {whole:.2f} s (runs {ph.get('runs_s')} s, fold wait {ph.get('fold_wait_s')} s)",
            flush=True,
        )
