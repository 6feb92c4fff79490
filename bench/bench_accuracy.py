"""Calibration accuracy on the acceptance suite's real models: for each, INT8 (entropy) and FP16 as Splitscope
reports them, beside the SNR of the same written models run in ONNX Runtime by this script on the same held-out
samples, and ONNX Runtime's ``quantize_static`` (QDQ, symmetric, per-channel, entropy; biases left in float, as
TensorRT parses them) on the same calibration samples as the peer, measured the same way.

    bash .ci/acceptance            # installs the packages into build/acceptance
    PYTHONPATH=. python bench/bench_accuracy.py [--site build/acceptance] [--out bench/results/accuracy.json]

One line of JSON per model on stdout, and the whole list in --out.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from splitscope.engine.calib.calibrate import calibrate
from splitscope.engine.calib.data import batches, open_data
from splitscope.engine.calib.steps import heldout_data
from splitscope.engine.jobs import run_to_end
from splitscope.engine.onnxio.concrete import classify_dims
from splitscope.engine.runtime.inputs import input_specs

ROOT = Path(__file__).resolve().parents[1]


def _snr(model: Path, written: Path, feeds: list[dict[str, np.ndarray]]) -> float:
    """The first output's SNR (dB) of ``written`` against ``model``, both run here, every node as written."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    a = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(str(written), so, providers=["CPUExecutionProvider"])
    name = a.get_outputs()[0].name
    r = np.concatenate([np.asarray(a.run([name], f)[0], np.float64).ravel() for f in feeds])
    g = np.concatenate([np.asarray(b.run([name], f)[0], np.float64).ravel() for f in feeds])
    noise = float(np.sum((r - g) ** 2))
    return 999.0 if noise == 0 else round(float(10 * np.log10(np.sum(r**2) / noise)), 2)


def _peer(model: Path, out: Path, calib: list[dict[str, np.ndarray]]) -> str | None:
    """ONNX Runtime's quantize_static on the same samples; None, or why it failed."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.it = iter(calib)

        def get_next(self):  # type: ignore[no-untyped-def]
            return next(self.it, None)

    try:
        quantize_static(
            str(model),
            str(out),
            Reader(),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.Entropy,
            extra_options={"ActivationSymmetric": True, "WeightSymmetric": True, "QuantizeBias": False},
        )
    except Exception as e:  # noqa: BLE001 - the peer's own failure is a result here
        return str(e).splitlines()[0][:160]
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", type=Path, default=ROOT / "build" / "acceptance")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "accuracy.json")
    ap.add_argument("--only", action="append", default=[], help="an acceptance model's id (repeatable): only these")
    args = ap.parse_args()
    import importlib

    mod = importlib.import_module("tests.acceptance.test_real_models")  # the suite's models (PYTHONPATH=.)
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="splitscope-accuracy-"))
    try:
        for real in mod.REAL:
            if not real.recipe or (args.only and real.id not in args.only):
                continue  # random data says nothing of accuracy
            path = args.site / real.path
            photos = tmp / real.id
            photos.mkdir()
            for k, name in enumerate((*real.calibrate_on, *real.held_out)):
                shutil.copyfile(args.site / "skimage" / "data" / name, photos / f"{k:02d}_{name}")
            kw = {"data": str(photos), "recipe": real.recipe, "samples": len(real.calibrate_on)}
            proto = onnx.load(str(path), load_external_data=False)
            specs = input_specs(proto)
            dims = classify_dims(proto, real.dims).values
            cdata = open_data(str(photos), specs, len(real.calibrate_on), dims, recipe=real.recipe)
            calib = list(batches(cdata))
            held = list(batches(heldout_data(cdata, specs, dims, len(real.calibrate_on), 2)))
            row: dict[str, object] = {"model": real.id}
            for precision in ("int8", "fp16"):
                out = tmp / f"{real.id}.{precision}.onnx"
                doc = run_to_end(calibrate(path, out, dims=real.dims, precision=precision, heldout=2, **kw))
                first = next(iter(doc["accuracy"].values()))
                row[f"{precision}_reported_db"] = first["snr_db"]
                row[f"{precision}_independent_db"] = _snr(path, out, held)
                row[f"{precision}_how"] = doc["accuracy_measured"]["how"]
                task = first.get("task") or {}
                if task.get("value") is not None:
                    row[f"{precision}_task"] = f"{task['kind']} {task['value']}"
            peer_out = tmp / f"{real.id}.ort.onnx"
            failed = _peer(path, peer_out, calib)
            row["ort_quantize_static_db"] = failed or _snr(path, peer_out, held)
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
