"""Write ``resources/sample.onnx``: the bundled demo model that shows a real split.

A small detector, built with ``onnx.helper`` (deterministic; run it again to
regenerate the file)::

    python resources/make_sample.py

- pre-processing: uint8 NHWC image -> float, NCHW, mean/std normalised, resized;
- a conv backbone (Conv + BatchNormalization + Relu stages);
- a custom-domain op (``com.example.vision::DCNv4``, a deformable conv kernel
  with no TensorRT importer): TensorRT needs a plugin for it;
- an attention block over the feature map (LayerNorm, Q/K/V MatMuls, Softmax);
- detection heads and post-processing: TopK over class scores,
  NonMaxSuppression, and a score-threshold ``Compress``, a standard ONNX op the
  TensorRT parser does not support.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parent / "sample.onnx"
SIZE = 160
CLASSES = 8
DIM = 64


def build() -> onnx.ModelProto:
    """Return the sample model."""
    rng = np.random.default_rng(20261201)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(value, name))
        return name

    def weight(name: str, shape: tuple[int, ...], scale: float = 0.05) -> str:
        return const(name, (rng.standard_normal(shape) * scale).astype(np.float32))

    def node(
        op: str, name: str, ins: list[str], outs: int | list[str] = 1, domain: str = "", **attrs: object
    ) -> list[str]:
        names = outs if isinstance(outs, list) else [f"{name}_output_{k}" for k in range(outs)]
        nodes.append(helper.make_node(op, ins, names, name=name, domain=domain, **attrs))
        return names

    # Pre-processing: what a camera pipeline hands over, made ready for the network.
    (x,) = node("Cast", "/preprocess/Cast", ["image"], to=TensorProto.FLOAT)
    (x,) = node("Transpose", "/preprocess/Transpose", [x], perm=[0, 3, 1, 2])
    (x,) = node(
        "Sub",
        "/preprocess/normalize/Sub",
        [x, const("mean", np.array([123.7, 116.3, 103.5], np.float32).reshape(1, 3, 1, 1))],
    )
    (x,) = node(
        "Div",
        "/preprocess/normalize/Div",
        [x, const("std", np.array([58.4, 57.1, 57.4], np.float32).reshape(1, 3, 1, 1))],
    )
    (x,) = node(
        "Resize",
        "/preprocess/Resize",
        [x, "", "", const("resize_sizes", np.array([1, 3, SIZE, SIZE], np.int64))],
        mode="linear",
    )

    # Backbone: four stride-2 conv stages.
    channels = [3, 16, 32, 64, DIM]
    for s in range(4):
        p = f"/backbone/stage{s + 1}"
        cin, cout = channels[s], channels[s + 1]
        (x,) = node(
            "Conv",
            f"{p}/conv/Conv",
            [x, weight(f"{p}.conv.weight", (cout, cin, 3, 3))],
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
        )
        (x,) = node(
            "BatchNormalization",
            f"{p}/bn/BatchNormalization",
            [
                x,
                const(f"{p}.bn.scale", np.ones(cout, np.float32)),
                const(f"{p}.bn.bias", np.zeros(cout, np.float32)),
                const(f"{p}.bn.mean", np.zeros(cout, np.float32)),
                const(f"{p}.bn.var", np.ones(cout, np.float32)),
            ],
        )
        (x,) = node("Relu", f"{p}/act/Relu", [x])

    # A custom CUDA kernel the codebase ships: deformable conv v4, no TensorRT importer.
    (x,) = node(
        "DCNv4",
        "/neck/dcn/DCNv4",
        [x, weight("neck.dcn.offset_weight", (DIM, DIM, 3, 3))],
        domain="com.example.vision",
        group=4,
        kernel_size=3,
    )

    # Attention over the 10x10 feature map.
    tokens = (SIZE // 16) ** 2
    (t,) = node(
        "Reshape", "/neck/attn/flatten/Reshape", [x, const("tokens_shape", np.array([1, DIM, tokens], np.int64))]
    )
    (t,) = node("Transpose", "/neck/attn/flatten/Transpose", [t], perm=[0, 2, 1])
    (h,) = node(
        "LayerNormalization",
        "/neck/attn/norm/LayerNormalization",
        [
            t,
            const("neck.attn.norm.weight", np.ones(DIM, np.float32)),
            const("neck.attn.norm.bias", np.zeros(DIM, np.float32)),
        ],
        axis=-1,
    )
    qkv = [node("MatMul", f"/neck/attn/{k}/MatMul", [h, weight(f"neck.attn.{k}.weight", (DIM, DIM))])[0] for k in "qkv"]
    (kt,) = node("Transpose", "/neck/attn/k/Transpose", [qkv[1]], perm=[0, 2, 1])
    (s_,) = node("MatMul", "/neck/attn/scores/MatMul", [qkv[0], kt])
    (s_,) = node("Mul", "/neck/attn/scores/Mul", [s_, const("attn_scale", np.array(DIM**-0.5, np.float32))])
    (s_,) = node("Softmax", "/neck/attn/Softmax", [s_], axis=-1)
    (a,) = node("MatMul", "/neck/attn/context/MatMul", [s_, qkv[2]])
    (a,) = node("MatMul", "/neck/attn/out/MatMul", [a, weight("neck.attn.out.weight", (DIM, DIM))])
    (t,) = node("Add", "/neck/attn/residual/Add", [t, a])

    # Heads.
    (boxes,) = node("MatMul", "/head/box/MatMul", [t, weight("head.box.weight", (DIM, 4))])
    (boxes,) = node("Sigmoid", "/head/box/Sigmoid", [boxes])
    (logits,) = node("MatMul", "/head/cls/MatMul", [t, weight("head.cls.weight", (DIM, CLASSES))])
    (scores,) = node("Sigmoid", "/head/cls/Sigmoid", [logits])

    # Post-processing: best class, top-K, NMS, and score thresholding.
    (best,) = node("ReduceMax", "/postprocess/ReduceMax", [scores], axes=[2], keepdims=0)
    node(
        "TopK",
        "/postprocess/topk/TopK",
        [best, const("topk_k", np.array([20], np.int64))],
        ["topk_scores", "topk_indices"],
        axis=1,
    )
    (cls_first,) = node("Transpose", "/postprocess/nms/Transpose", [scores], perm=[0, 2, 1])
    node(
        "NonMaxSuppression",
        "/postprocess/nms/NonMaxSuppression",
        [
            boxes,
            cls_first,
            const("nms_max_per_class", np.array([10], np.int64)),
            const("nms_iou", np.array([0.5], np.float32)),
            const("nms_score", np.array([0.25], np.float32)),
        ],
        ["selected_indices"],
    )
    (keep,) = node(
        "Greater", "/postprocess/threshold/Greater", [best, const("score_threshold", np.array(0.5, np.float32))]
    )
    node("Compress", "/postprocess/threshold/Compress", [best, keep], ["kept_scores"], axis=1)

    graph = helper.make_graph(
        nodes,
        "splitscope_sample_detector",
        [helper.make_tensor_value_info("image", TensorProto.UINT8, [1, 224, 224, 3])],
        [
            helper.make_tensor_value_info("topk_scores", TensorProto.FLOAT, [1, 20]),
            helper.make_tensor_value_info("topk_indices", TensorProto.INT64, [1, 20]),
            helper.make_tensor_value_info("selected_indices", TensorProto.INT64, ["num_selected", 3]),
            helper.make_tensor_value_info("kept_scores", TensorProto.FLOAT, [1, "num_kept"]),
        ],
        inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example.vision", 1)],
        producer_name="splitscope-sample",
        producer_version="1",
        doc_string="Splitscope demo detector: pre-processing, conv backbone, a custom DCNv4 op, attention, "
        "detection post-processing (TopK, NonMaxSuppression, Compress).",
    )
    model.ir_version = 8
    return model


def main() -> None:
    """Write the sample next to this script."""
    onnx.save(build(), OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
