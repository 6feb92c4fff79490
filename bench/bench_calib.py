"""Calibration against one plain FP32 inference pass over the same data and against ONNX Runtime's
``quantize_static`` (QDQ, symmetric, per-channel), same models, same data, same run.

For each model and method: wall time as a ratio of the plain pass, peak resident memory (each run in its own
process, sampled every 50 ms), and the SNR of the quantized model's outputs against FP32 on held-out
samples (ONNX Runtime with no graph optimisation, so the Q/DQ run as written).

Usage::

    python bench/bench_calib.py [--samples 32] [--extra resnet18.onnx] [--modelopt PYTHON]
        [--methods entropy ...] [--only-extra]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys, time, numpy as np
sys.path.insert(0, sys.argv[1])
kind, model, out, method, samples = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
dims = json.loads(sys.argv[7])
import onnx
from splitscope.engine.runtime.inputs import input_specs, random_feeds
specs = input_specs(onnx.load(model, load_external_data=False))
feeds = [random_feeds(specs, dims, k) for k in range(samples)]
t = time.perf_counter()
extra = {}
if kind == "plain":
    import onnxruntime as ort
    s = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    for f in feeds:
        s.run(None, f)
elif kind == "ours":
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.calib.calibrate import calibrate
    doc = run_to_end(calibrate(model, out, method=method, samples=samples, dims=dims, heldout=1))
    extra = {"stats_seconds": doc["stats_seconds"]}
else:
    from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    class R(CalibrationDataReader):
        def __init__(self): self.it = iter(feeds)
        def get_next(self): return next(self.it, None)
    m = {"max": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
         "percentile": CalibrationMethod.Percentile}[method]
    quantize_static(model, out, R(), quant_format=QuantFormat.QDQ, per_channel=True, activation_type=QuantType.QInt8,
                    weight_type=QuantType.QInt8, calibrate_method=m,
                    extra_options={"ActivationSymmetric": True, "WeightSymmetric": True})
print(json.dumps({"seconds": time.perf_counter() - t, **extra}))
"""

MODELOPT = r"""
import json, sys, time, numpy as np
model, out, method, feeds_file = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
data = dict(np.load(feeds_file))
t = time.perf_counter()
from modelopt.onnx.quantization import quantize
quantize(model, quantize_mode="int8", calibration_data=data, calibration_method=method, calibration_eps=["cpu"],
         high_precision_dtype="fp32", output_path=out, log_level="ERROR")
print(json.dumps({"seconds": time.perf_counter() - t}))
"""

SNR = r"""
import json, sys, numpy as np
sys.path.insert(0, sys.argv[1])
import onnx, onnxruntime as ort
from splitscope.engine.runtime.inputs import input_specs, random_feeds
from splitscope.engine.calib.accuracy import compare_outputs
model, q, dims = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
specs = input_specs(onnx.load(model, load_external_data=False))
so = ort.SessionOptions(); so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
a = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
b = ort.InferenceSession(q, so, providers=["CPUExecutionProvider"])
refs, gots = [], []
for k in range(8):
    f = random_feeds(specs, dims, 10_000 + k)
    refs.append(a.run(None, f)[0]); gots.append(b.run(None, f)[0])
print(json.dumps(compare_outputs(refs, gots)))
"""


def _rss(pid: int) -> int:
    try:
        out = subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True).stdout
        return int(out.strip() or 0)
    except ValueError:
        return 0


def run(args: list[str], env: dict[str, str], python: str = sys.executable) -> tuple[dict, int]:
    p = subprocess.Popen([python, "-c", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = 0
    while p.poll() is None:
        peak = max(peak, _rss(p.pid))
        time.sleep(0.05)
    out, err = p.communicate()
    if p.returncode != 0:
        return {"error": (err.strip().splitlines() or ["?"])[-1][:200]}, peak // 1024
    return json.loads(out.strip().splitlines()[-1]), peak // 1024


def _write_feeds(model: Path, dims: dict, samples: int, file: Path) -> None:
    """The same seeded samples as the other tools, stacked per input (ModelOpt takes arrays, not a reader)."""
    import numpy as np
    import onnx
    from splitscope.engine.runtime.inputs import input_specs, random_feeds

    specs = input_specs(onnx.load(str(model), load_external_data=False))
    feeds = [random_feeds(specs, dims, k) for k in range(samples)]
    np.savez(file, **{name: np.concatenate([f[name] for f in feeds]) for name in feeds[0]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "calib.json")
    ap.add_argument("--extra", type=Path, nargs="*", default=[], help="more models (e.g. export_llms.py --resnet18)")
    ap.add_argument(
        "--modelopt",
        metavar="PYTHON",
        help="an interpreter with nvidia-modelopt[onnx] installed: "
        "also run ModelOpt's ONNX PTQ (max and entropy, on the CPU)",
    )
    ap.add_argument("--methods", nargs="*", help="only these methods (each tool's that it has)")
    ap.add_argument("--only-extra", action="store_true", help="skip the two small built-in models")
    ap.add_argument("--tools", nargs="*", help="only these tools (ours, ort, modelopt)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="splitscope-calib-bench-"))
    sys.path.insert(0, str(ROOT))
    from tests.engine.test_calib import _cnn

    models = {
        "cnn (tests)": (_cnn(tmp / "cnn.onnx"), {}),
        "TorchScript transformer": (ROOT / "tests" / "data" / "torch_transformer.onnx", {"batch": 4, "seq": 16}),
    }
    if args.only_extra:
        models.clear()
    for extra in args.extra:
        models[extra.stem] = (extra, {})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    for k in ("XDG_CACHE_HOME", "SPLITSCOPE_CACHE_DIR"):
        env[k] = str(tmp / "cache")
    rows = []
    for label, (model, dims) in models.items():
        d = json.dumps(dims)
        plain, plain_mb = run([CHILD, str(ROOT), "plain", str(model), "-", "-", str(args.samples), d], env)
        tools = [("ours", ("max", "percentile", "entropy", "mse")), ("ort", ("max", "percentile", "entropy"))]
        if args.modelopt:
            tools.append(("modelopt", ("max", "entropy")))
            feeds_file = tmp / f"feeds-{model.stem}.npz"
            _write_feeds(model, dims, args.samples, feeds_file)
        for tool, methods in (t for t in tools if not args.tools or t[0] in args.tools):
            for method in (m for m in methods if not args.methods or m in args.methods):
                q = tmp / f"{tool}-{method}-{model.stem}.onnx"
                for f in (tmp / "cache").glob("**/*.npz"):
                    f.unlink()  # every run starts cold: no statistics from the last one
                if tool == "modelopt":  # on a copy: ModelOpt writes its shape-inferred model over its input
                    copy = tmp / f"modelopt-input-{model.name}"
                    shutil.copyfile(model, copy)
                    res, mb = run([MODELOPT, str(copy), str(q), method, str(feeds_file)], env, args.modelopt)
                else:
                    res, mb = run([CHILD, str(ROOT), tool, str(model), str(q), method, str(args.samples), d], env)
                snr = run([SNR, str(ROOT), str(model), str(q), d], env)[0] if "error" not in res else {}
                row = {
                    "model": label,
                    "tool": tool,
                    "method": method,
                    "seconds": round(res.get("seconds", 0), 3),
                    "over_plain": round(res.get("seconds", 0) / plain["seconds"], 2) if "seconds" in res else None,
                    "plain_seconds": round(plain["seconds"], 3),
                    "stats_seconds": res.get("stats_seconds"),
                    "stats_over_plain": (
                        round(res["stats_seconds"] / plain["seconds"], 2) if "stats_seconds" in res else None
                    ),
                    "peak_mb": mb,
                    "plain_peak_mb": plain_mb,
                    "snr_db": snr.get("snr_db"),
                    "error": res.get("error", ""),
                }
                print(json.dumps(row), flush=True)
                rows.append(row)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"samples": args.samples, "results": rows}, indent=1))


if __name__ == "__main__":
    main()
