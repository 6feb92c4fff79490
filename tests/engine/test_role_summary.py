"""The summary's roles, counted in numpy, against a count node by node written here: real exports and a model
whose FLOPs pass 64 bits."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from splitscope.engine.model import Status
from splitscope.engine.report.stats import role_summary
from splitscope.engine.split.analyze import analyze_model

from tests.engine.models import LIGHT_DIR, model

ROOT = Path(__file__).resolve().parents[2]


def _by_hand(gm) -> dict:  # type: ignore[no-untyped-def]
    out: dict = {}
    for n in gm.nodes:
        row = out.setdefault(n.role.value, {"nodes": 0, "flops": 0, **{f"{s.value}_nodes": 0 for s in Status}})
        row["nodes"] += 1
        row["flops"] += n.flops or 0
        row[f"{n.status.value}_nodes"] += 1
    return out


@pytest.mark.parametrize(
    "path",
    [
        ROOT / "resources" / "sample.onnx",
        ROOT / "tests" / "data" / "torch_detector_if.onnx",
        ROOT / "tests" / "data" / "torch_transformer.onnx",
        LIGHT_DIR / "light_resnet50.onnx",
    ],
    ids=lambda p: p.stem,
)
def test_roles_equal_a_count_node_by_node(path):
    gm = analyze_model(path, parser="table")
    assert role_summary(gm) == _by_hand(gm)


def test_flops_past_64_bits_are_summed_exactly(tmp_path):
    big = [2**20] * 4  # a MatMul of [2^20]^4 by [2^20]^4: FLOPs far past 2^63
    m = model(
        [h.make_node("MatMul", ["a", "b"], ["y"], name="mm"), h.make_node("Relu", ["y"], ["z"], name="r")],
        [h.make_tensor_value_info("a", T.FLOAT, big), h.make_tensor_value_info("b", T.FLOAT, big)],
        [h.make_tensor_value_info("z", T.FLOAT, None)],
    )
    path = tmp_path / "huge.onnx"
    onnx.save(m, path)
    gm = analyze_model(path, parser="table")
    assert gm.nodes[0].flops and gm.nodes[0].flops > 2**63
    assert role_summary(gm) == _by_hand(gm)
