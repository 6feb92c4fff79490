"""Export the real-exporter test models in this folder with PyTorch's ONNX exporter.

Run by hand (needs torch; the tests only read the .onnx files it writes)::

    pip install torch==2.13.0 onnxscript
    python tests/data/export_torch_models.py

- ``torch_transformer.onnx``: a 2-layer ``nn.TransformerEncoder`` (d_model 32, 4 heads) with
  an embedding and a classifier head, exported by the TorchScript-based exporter
  (``dynamo=False``), which names nodes by module path (``/encoder/layers.0/self_attn/...``).
- ``torch_transformer_dynamo.onnx``: the same transformer through the torch.export-based
  exporter (``dynamo=True``, needs onnxscript), which names nodes ``node_MatMul_1`` and keeps
  module scopes in metadata (``pkg.torch.onnx.name_scopes``).
- ``torch_detector_if.onnx``: a tiny conv detector whose post-processing runs in a
  data-dependent branch (``torch.jit.script``): when any score passes the threshold, the If's
  then-branch gathers the kept boxes with NonZero, else it returns an empty set; as detectors
  export NMS inside If bodies.
- ``torch_two_stage.onnx``: a tiny two-stage detector: a conv backbone, box proposals from a head,
  ONNX ``RoiAlign`` over them (written by a symbolic, as torchvision's ``roi_align`` exports),
  a classifier on the pooled crops, and TensorRT's ``TRT::EfficientNMS_TRT`` at the end (the
  custom op YOLO-style "end2end" exporters write, through a symbolic of the same form).
- ``torch_two_stage_ort.onnx``: the same detector without the NMS, so ONNX Runtime can run it.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

HERE = Path(__file__).resolve().parent


class TinyTransformer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 5)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(ids)).mean(dim=1))


class PostProcess(nn.Module):
    def forward(self, boxes: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        keep = scores > 0.5
        if bool(keep.any()):
            idx = torch.nonzero(keep).squeeze(1)
            out = boxes[idx]
        else:
            out = torch.zeros((0, 4), dtype=boxes.dtype)
        return out


class TinyDetector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU()
        )
        self.box_head = nn.Conv2d(16, 4, 1)
        self.cls_head = nn.Conv2d(16, 1, 1)
        self.post = PostProcess()

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        f = self.backbone(image)
        boxes = self.box_head(f).flatten(2).transpose(1, 2)[0]
        scores = torch.sigmoid(self.cls_head(f)).flatten()
        return self.post(boxes, scores)


class RoiAlignFn(torch.autograd.Function):
    """torchvision.ops.roi_align's export, without torchvision: ONNX RoiAlign (opset 16)."""

    @staticmethod
    def forward(ctx, x, rois, batch_indices):
        return x.new_zeros((rois.shape[0], x.shape[1], 4, 4))

    @staticmethod
    def symbolic(g, x, rois, batch_indices):
        return g.op(
            "RoiAlign",
            x,
            rois,
            batch_indices,
            output_height_i=4,
            output_width_i=4,
            sampling_ratio_i=2,
            spatial_scale_f=0.25,
            coordinate_transformation_mode_s="half_pixel",
            mode_s="avg",
        )


class EfficientNmsFn(torch.autograd.Function):
    """The TRT::EfficientNMS_TRT node end2end detector exporters write. Its forward returns zeros of the
    plugin's output shapes: only the export is used (torch never runs the detection), as in those exporters."""

    @staticmethod
    def forward(ctx, boxes, scores):
        b = boxes.shape[0]
        return (
            torch.zeros(b, 1, dtype=torch.int32),
            torch.zeros(b, 100, 4),
            torch.zeros(b, 100),
            torch.zeros(b, 100, dtype=torch.int32),
        )

    @staticmethod
    def symbolic(g, boxes, scores):
        return g.op(
            "TRT::EfficientNMS_TRT",
            boxes,
            scores,
            outputs=4,
            background_class_i=-1,
            box_coding_i=0,
            iou_threshold_f=0.45,
            max_output_boxes_i=100,
            plugin_version_s="1",
            score_activation_i=0,
            score_threshold_f=0.25,
        )


class TwoStage(nn.Module):
    def __init__(self, nms: bool) -> None:
        super().__init__()
        self.nms = nms
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU())
        self.proposals = nn.Conv2d(32, 4, 1)
        self.cls = nn.Sequential(nn.Flatten(), nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 5))

    def forward(self, image: torch.Tensor):
        f = self.backbone(image)
        boxes = torch.sigmoid(self.proposals(f)).flatten(2).transpose(1, 2)[0] * 64  # [N, 4]
        crops = RoiAlignFn.apply(f, boxes, torch.zeros(boxes.shape[0], dtype=torch.int64))
        scores = torch.softmax(self.cls(crops), -1)[None]  # [1, N, 5]
        if not self.nms:
            return boxes[None], scores
        return EfficientNmsFn.apply(boxes[None], scores)


def main() -> None:
    torch.manual_seed(0)
    m = TinyTransformer().eval()
    torch.onnx.export(
        m,
        (torch.randint(0, 100, (1, 16)),),
        HERE / "torch_transformer.onnx",
        dynamo=False,
        input_names=["ids"],
        output_names=["logits"],
        dynamic_axes={"ids": {0: "batch", 1: "seq"}},
        opset_version=17,
    )
    program = torch.onnx.export(m, (torch.randint(0, 100, (1, 16)),), dynamo=True)
    program.save(str(HERE / "torch_transformer_dynamo.onnx"))
    d = torch.jit.script(TinyDetector().eval())  # scripted, so the branch stays a branch (If)
    torch.onnx.export(
        d,
        (torch.rand(1, 3, 32, 32),),
        HERE / "torch_detector_if.onnx",
        dynamo=False,
        input_names=["image"],
        output_names=["boxes"],
        opset_version=17,
    )
    for nms, name in ((True, "torch_two_stage.onnx"), (False, "torch_two_stage_ort.onnx")):
        outs = ["num_dets", "det_boxes", "det_scores", "det_classes"] if nms else ["boxes", "scores"]
        torch.onnx.export(
            TwoStage(nms).eval(),
            (torch.rand(1, 3, 32, 32),),
            HERE / name,
            dynamo=False,
            input_names=["image"],
            output_names=outs,
            opset_version=17,
        )
    print("wrote", sorted(p.name for p in HERE.glob("*.onnx")))


if __name__ == "__main__":
    main()
