"""Models the kernel workbench's benchmark and screenshots are run on, made from a real export."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper as h


def yolo_with_roialign(yolo: Path, out: Path) -> Path:
    """YOLOv8 with a RoiAlign appended on its stride-8 features (256 boxes on a grid, 7x7, sampling 2)."""
    m = onnx.load(str(yolo))
    feat = "/model.15/cv2/act/Mul_output_0"
    ys, xs = np.meshgrid(np.linspace(0, 560, 16), np.linspace(0, 560, 16), indexing="ij")
    boxes = np.stack([xs.ravel(), ys.ravel(), xs.ravel() + 80, ys.ravel() + 64], 1).astype(np.float32)
    m.graph.initializer.extend(
        [onnx.numpy_helper.from_array(boxes, "rois"), onnx.numpy_helper.from_array(np.zeros(256, np.int64), "bidx")]
    )
    m.graph.node.append(
        h.make_node(
            "RoiAlign",
            [feat, "rois", "bidx"],
            ["pooled"],
            name="roi_align",
            output_height=7,
            output_width=7,
            sampling_ratio=2,
            spatial_scale=0.125,
            coordinate_transformation_mode="half_pixel",
        )
    )
    m.graph.output.append(h.make_tensor_value_info("pooled", onnx.TensorProto.FLOAT, None))
    onnx.save(m, str(out))
    return out
