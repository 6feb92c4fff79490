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


def test_a_file_with_nothing_to_drop_is_read_as_it_is():
    path = M.LIGHT_DIR / "light_resnet50.onnx"
    assert read_structure(path, 10**12) == path.read_bytes()


def _with_value_info(tmp_path: Path) -> Path:
    """A real export with its shapes inferred and kept as value_info (a repeated field decoded in steps too)."""
    model = onnx.shape_inference.infer_shapes(onnx.load(M.LIGHT_DIR / "light_inception_v1.onnx"))
    assert len(model.graph.value_info) > 10
    out = tmp_path / "inferred.onnx"
    onnx.save(model, out)
    return out


@pytest.mark.parametrize("which", ["dynamo-metadata", "weights", "value-info"])
def test_a_large_graph_decodes_in_chunks_to_the_same_model(monkeypatch, tmp_path, which):
    """Decoding in steps (the window's thread runs between them: nodes, initializers and value infos a chunk at a
    time) gives exactly the model decoded whole."""
    from splitscope.engine.onnxio import loader, wire

    path = {
        "dynamo-metadata": Path(__file__).resolve().parents[1] / "data" / "torch_transformer_dynamo.onnx",
        "weights": M.LIGHT_DIR / "light_resnet50.onnx",
        "value-info": None,
    }[which] or _with_value_info(tmp_path)
    data = path.read_bytes()
    monkeypatch.setattr(wire, "CHUNK_BYTES", 4096)
    _head, chunks = wire.node_chunks(data)
    assert len(chunks) > 5
    monkeypatch.setattr(loader, "CHUNK_BYTES", 1)  # take the chunked path for this small file
    monkeypatch.setattr(loader, "node_chunks", wire.node_chunks)
    assert loader.decode_model(data, "x") == onnx.ModelProto.FromString(data)
    assert wire.node_chunks(b"\x00\x01") is None


def test_a_graph_parsed_in_chunks_is_the_graph(monkeypatch):
    from splitscope.engine.onnxio import wire

    monkeypatch.setattr(wire, "CHUNK_BYTES", 2048)
    full = onnx.shape_inference.infer_shapes(onnx.load(M.LIGHT_DIR / "light_inception_v1.onnx")).graph
    g = onnx.GraphProto()
    wire.parse_in_chunks(g, full.SerializeToString(), frozenset({1, 13}))
    assert g == full
