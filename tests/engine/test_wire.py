"""The wire-level reader keeps every structural field and drops only large weight bytes."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from splitscope.engine.onnxio.wire import WireError, read_structure

from tests.engine import models as M


@pytest.mark.parametrize(
    "path",
    [
        M.LIGHT_DIR / "light_resnet50.onnx",
        M.LIGHT_DIR / "light_inception_v1.onnx",
        Path(__file__).resolve().parents[2] / "resources" / "sample.onnx",
    ],
)
def test_structure_matches_onnx_load(path):
    full = onnx.load(path)
    light = onnx.ModelProto.FromString(read_structure(path, 1024))
    assert light.graph.node == full.graph.node
    assert light.graph.input == full.graph.input and light.graph.output == full.graph.output
    assert light.opset_import == full.opset_import and light.ir_version == full.ir_version
    for a, b in zip(light.graph.initializer, full.graph.initializer, strict=True):
        assert (a.name, list(a.dims), a.data_type) == (b.name, list(b.dims), b.data_type)
        n = 1
        for d in b.dims:
            n *= d
        if n <= 1024:
            assert a == b  # small constants keep their values
        else:
            assert not a.raw_data and not a.float_data
    stripped = any(len(t.raw_data) > 4096 for t in full.graph.initializer)
    assert (len(light.SerializeToString()) < len(full.SerializeToString())) == stripped


def test_truncation_detected(tmp_path):
    data = (M.LIGHT_DIR / "light_resnet50.onnx").read_bytes()
    p = tmp_path / "cut.onnx"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(WireError, match="truncated"):
        read_structure(p, 1024)
