"""The kernel workbench, kernel against kernel: generated kernels for LayerNormalization and Softmax at BERT-base's
shapes ([8, 128, 768] and [8, 12, 128, 128]), each run by the workbench on a GPU; printed side by side: the kernel's
own device time and that of the kernels ONNX Runtime CUDA launches for the same node (both CUPTI), the kernel timed
by CUDA events, both timed on the host with their launch, the bound and the verdict.

    PYTHONPATH=. python bench/gpu_kernel_device.py OUT_DIR

Needs an NVIDIA GPU, cuda-python, onnxruntime-gpu and cupti-python. Writes OUT_DIR/kernel_device.json.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def layernorm() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    scale = numpy_helper.from_array(rng.standard_normal(768).astype(np.float32), "scale")
    bias = numpy_helper.from_array(rng.standard_normal(768).astype(np.float32), "bias")
    node = helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], "ln", axis=-1, epsilon=1e-5)
    g = helper.make_graph(
        [node],
        "ln",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 128, 768])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 128, 768])],
        [scale, bias],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def softmax() -> onnx.ModelProto:
    node = helper.make_node("Softmax", ["x"], ["y"], "sm", axis=-1)
    g = helper.make_graph(
        [node],
        "sm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 12, 128, 128])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 12, 128, 128])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


KEYS = ("device_ms", "default_device_ms", "ms", "host_ms", "default_ms", "sol_ms", "numerics_ok", "device_how", "gpu")


def main() -> None:
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.kernel.job import kernel_job

    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, node in (("LayerNormalization", layernorm, "ln"), ("Softmax", softmax, "sm")):
            path = Path(tmp) / f"{name}.onnx"
            onnx.save(make(), path)
            doc = run_to_end(kernel_job(str(path), nodes=[node], parser="table", ask_parser=False))
            k = doc.get("kernel") or {}
            row = {x: k.get(x) for x in KEYS}
            dev, default = k.get("device_ms"), k.get("default_device_ms")
            if dev and default:
                row["default_over_kernel_device"] = round(default / dev, 3)
            if k.get("host_ms") and k.get("default_ms"):
                row["default_over_kernel_host"] = round(k["default_ms"] / k["host_ms"], 3)
            if k.get("sol_ms"):
                row["of_bound_device"] = round(k["sol_ms"] / dev, 3) if dev else None
                row["of_bound_events"] = round(k["sol_ms"] / k["ms"], 3) if k.get("ms") else None
            row["verdict"] = k.get("verdict") or k.get("error")
            rows[name] = row
            print(name, json.dumps(row), flush=True)
    (out / "kernel_device.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
