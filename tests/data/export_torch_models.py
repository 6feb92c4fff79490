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
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.box_head = nn.Conv2d(16, 4, 1)
        self.cls_head = nn.Conv2d(16, 1, 1)
        self.post = PostProcess()

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        f = self.backbone(image)
        boxes = self.box_head(f).flatten(2).transpose(1, 2)[0]
        scores = torch.sigmoid(self.cls_head(f)).flatten()
        return self.post(boxes, scores)


def main() -> None:
    torch.manual_seed(0)
    m = TinyTransformer().eval()
    torch.onnx.export(m, (torch.randint(0, 100, (1, 16)),), HERE / "torch_transformer.onnx", dynamo=False,
                      input_names=["ids"], output_names=["logits"], dynamic_axes={"ids": {0: "batch", 1: "seq"}},
                      opset_version=17)
    program = torch.onnx.export(m, (torch.randint(0, 100, (1, 16)),), dynamo=True)
    program.save(str(HERE / "torch_transformer_dynamo.onnx"))
    d = torch.jit.script(TinyDetector().eval())  # scripted, so the branch stays a branch (If)
    torch.onnx.export(d, (torch.rand(1, 3, 32, 32),), HERE / "torch_detector_if.onnx", dynamo=False,
                      input_names=["image"], output_names=["boxes"], opset_version=17)
    print("wrote", sorted(p.name for p in HERE.glob("*.onnx")))


if __name__ == "__main__":
    main()
