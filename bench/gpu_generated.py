"""Every kind of generated kernel against ONNX Runtime CPU on the GPU: one small model per case (operands read
twice, optional inputs left out, integer outputs, variadic ops, pre-13 Softmax, attribute defaults, large inputs
to Softplus, RoiAlign of opset 10 and 16, empty boxes), each run through the workbench and checked.

Usage, on a machine with an NVIDIA GPU and cuda-python: python bench/gpu_generated.py OUT_DIR
Without a GPU it checks only that each case generates a complete kernel (the CI test does the same)."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h


def model(nodes, inputs, outputs, inits=(), opset=17) -> onnx.ModelProto:
    m = h.make_model(h.make_graph(nodes, "g", inputs, outputs, list(inits)), opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def vi(name: str, elem: int, shape: list[int]) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, elem, shape)


F = T.FLOAT
CASES: dict[str, onnx.ModelProto] = {
    "mul_x_x": model(
        [h.make_node("Mul", ["x", "x"], ["y"], name="op")], [vi("x", F, [64, 33])], [vi("y", F, [64, 33])]
    ),
    "clip_max_only": model(
        [h.make_node("Clip", ["x", "", "hi"], ["y"], name="op")],
        [vi("x", F, [4, 100])],
        [vi("y", F, [4, 100])],
        [onnx.numpy_helper.from_array(np.array(0.3, np.float32), "hi")],
    ),
    "clip_opset6_attrs": model(
        [h.make_node("Clip", ["x"], ["y"], name="op", min=-0.2, max=0.4)],
        [vi("x", F, [300])],
        [vi("y", F, [300])],
        opset=6,
    ),
    "add_int64": model(
        [h.make_node("Add", ["a", "b"], ["y"], name="op")],
        [vi("a", T.INT64, [8, 5]), vi("b", T.INT64, [5])],
        [vi("y", T.INT64, [8, 5])],
    ),
    "max_three": model(
        [h.make_node("Max", ["a", "b", "c"], ["y"], name="op")],
        [vi("a", F, [7, 9]), vi("b", F, [9]), vi("c", F, [7, 1])],
        [vi("y", F, [7, 9])],
    ),
    "mean_three": model(
        [h.make_node("Mean", ["a", "b", "c"], ["y"], name="op")],
        [vi("a", F, [7, 9]), vi("b", F, [9]), vi("c", F, [7, 1])],
        [vi("y", F, [7, 9])],
    ),
    "leakyrelu_default": model(
        [h.make_node("LeakyRelu", ["x"], ["y"], name="op")], [vi("x", F, [1000])], [vi("y", F, [1000])]
    ),
    "softplus_large": model(
        [h.make_node("Softplus", ["x"], ["y"], name="op")], [vi("x", F, [1000])], [vi("y", F, [1000])]
    ),
    "softmax_opset11_axis1": model(
        [h.make_node("Softmax", ["x"], ["y"], name="op")], [vi("x", F, [3, 4, 5])], [vi("y", F, [3, 4, 5])], opset=11
    ),
    "logsoftmax_last": model(
        [h.make_node("LogSoftmax", ["x"], ["y"], name="op", axis=-1)], [vi("x", F, [6, 1000])], [vi("y", F, [6, 1000])]
    ),
    "reducemax_last": model(
        [h.make_node("ReduceMax", ["x"], ["y"], name="op", axes=[-1], keepdims=1)],
        [vi("x", F, [12, 513])],
        [vi("y", F, [12, 1])],
    ),
    "gather_negative": model(
        [h.make_node("Gather", ["x", "i"], ["y"], name="op", axis=1)],
        [vi("x", F, [3, 10, 4])],
        [vi("y", F, [3, 2, 4])],
        [onnx.numpy_helper.from_array(np.array([-1, 2], np.int64), "i")],
    ),
}
for opset, mode, ctm in ((10, "avg", None), (16, "max", "output_half_pixel"), (16, "avg", "half_pixel")):
    boxes = np.array([[0, 0, 7, 7], [2.5, 1, 9, 12], [4, 4, 4, 4], [-3, -2, 20, 18]], np.float32)  # one empty
    attrs = dict(output_height=3, output_width=3, sampling_ratio=0, spatial_scale=0.5, mode=mode)
    if ctm:
        attrs["coordinate_transformation_mode"] = ctm
    CASES[f"roialign_opset{opset}_{mode}"] = model(
        [h.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], name="op", **attrs)],
        [vi("x", F, [2, 5, 8, 8])],
        [vi("y", F, [4, 5, 3, 3])],
        [
            onnx.numpy_helper.from_array(boxes, "rois"),
            onnx.numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "bi"),
        ],
        opset=opset,
    )


rng = np.random.default_rng(0)
xy = rng.uniform(0, 100, (2, 300, 2)).astype(np.float32)
wh = rng.uniform(5, 40, (2, 300, 2)).astype(np.float32)
for center in (0, 1):
    corners = np.concatenate([xy[..., ::-1], (xy + wh)[..., ::-1]], -1)  # [y1, x1, y2, x2]
    boxes = np.concatenate([xy, wh], -1) if center else corners
    CASES[f"nms_center{center}"] = model(
        [h.make_node("NonMaxSuppression", ["b", "s", "k", "iou", "st"], ["y"], name="op", center_point_box=center)],
        [vi("s", F, [2, 3, 300])],  # scores: the workbench's random normal draws, a threshold of 0.2 keeps 40%
        [vi("y", T.INT64, ["n", 3])],
        [
            onnx.numpy_helper.from_array(boxes, "b"),
            onnx.numpy_helper.from_array(np.array([20], np.int64), "k"),
            onnx.numpy_helper.from_array(np.array([0.4], np.float32), "iou"),
            onnx.numpy_helper.from_array(np.array([0.2], np.float32), "st"),
        ],
        opset=11,
    )


def main() -> int:
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.kernel.job import kernel_job

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else None
    rows, failed = {}, 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, m in CASES.items():
            path = Path(tmp) / f"{name}.onnx"
            onnx.save(m, str(path))
            doc = run_to_end(
                kernel_job(str(path), ["op"], parser="table", ask_parser=False, compare_default=False, iters=5)
            )
            k = doc["kernel"] or {}
            row = {
                "kind": doc["source"]["kind"],
                "complete": doc["source"]["complete"],
                "reference": doc["reference"]["how"],
            }
            row.update({x: k.get(x) for x in ("compiled", "error", "numerics_ok", "max_abs_err", "max_ulp", "beyond")})
            ok = row["complete"] and (not k.get("gpu") or row["numerics_ok"])
            failed += not ok
            rows[name] = row
            print(("ok  " if ok else "FAIL"), name, json.dumps(row), flush=True)
    if out:
        out.mkdir(parents=True, exist_ok=True)
        (out / "generated.json").write_text(json.dumps(rows, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
