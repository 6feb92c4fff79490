"""Models exported by a real exporter (PyTorch's ONNX exporter; see tests/data/export_torch_models.py)."""

from __future__ import annotations

from pathlib import Path

from splitscope.engine.model import Role, Source, Status
from splitscope.engine.split.analyze import analyze_model
from splitscope.engine.view.hierarchy import build_hierarchy

from tests.engine.conftest import needs_rtx

DATA = Path(__file__).resolve().parents[1] / "data"


def test_torch_transformer_scopes_dims_and_flops():
    gm = analyze_model(DATA / "torch_transformer.onnx", parser="table")
    h = build_hierarchy(gm, gm.order)
    labels = {h.full_label(g.id) for g in h.groups if g.parent != -1}
    assert {"encoder/layers.0/self_attn", "encoder/layers.1/linear2"} <= labels
    assert gm.symbolic_dims() == ["batch", "seq"]
    small = gm.total_flops()
    big = analyze_model(DATA / "torch_transformer.onnx", parser="table", dims={"batch": 2, "seq": 16}).total_flops()
    assert big > 16 * small  # attention grows with seq squared
    matmuls = [n for n in gm.nodes if n.op_type in ("MatMul", "Gemm")]
    assert matmuls and all(n.role is Role.COMPUTE for n in matmuls)


@needs_rtx
def test_torch_transformer_all_delegated_by_the_parser():
    gm = analyze_model(DATA / "torch_transformer.onnx", parser="rtx")
    assert all(n.status is Status.DELEGATE and n.source is Source.PARSER for n in gm.nodes)
    assert len(gm.partitions) == 1 and gm.boundary_bytes == 0


@needs_rtx
def test_torch_detector_nonzero_in_if_body():
    gm = analyze_model(DATA / "torch_detector_if.onnx", parser="rtx")
    branch = next(n for n in gm.nodes if n.op_type == "If")
    assert branch.status is Status.PLUGIN and branch.source is Source.PARSER
    assert "NonZero" in branch.reason and branch.role is Role.CONTROL_FLOW
    assert all(n.status is Status.DELEGATE for n in gm.nodes if n != branch)
    # The If reads the boxes from the outer scope: they cross the partition boundary.
    crossing = {t.name: t.bytes for p in gm.partitions for t in p.boundary_tensors}
    assert "/Gather_output_0" in branch.implicit_inputs
    assert crossing["/Gather_output_0"] == 64 * 4 * 4  # 8x8 positions, 4 box coordinates, float32
    roles = {n.label: n.role for n in gm.nodes}
    assert roles["/backbone/0/Conv"] is Role.COMPUTE and roles["/post/Greater"] is Role.POST_PROCESSING


def test_torch_dynamo_export_scopes_from_metadata():
    gm = analyze_model(DATA / "torch_transformer_dynamo.onnx", parser="table")
    mm = next(n for n in gm.nodes if n.op_type == "MatMul")
    assert mm.name.startswith("node_")  # no scope in the name: it comes from the metadata
    h = build_hierarchy(gm, gm.order)
    labels = {h.full_label(g.id) for g in h.groups if g.parent != -1}
    assert {"encoder/layers.0/self_attn", "encoder/layers.1/linear1"} <= labels
