"""Bad input gives a typed error with a one-line message that says what to do."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from splitscope.engine import errors
from splitscope.engine.onnxio.loader import load_model
from splitscope.engine.split.analyze import analyze_model

from tests.engine import models as M


def _one_line(e: errors.SplitscopeError) -> str:
    assert "\n" not in e.message
    return e.message


def test_missing_file(tmp_path):
    with pytest.raises(errors.ModelNotFoundError) as ei:
        load_model(tmp_path / "nope.onnx")
    assert "No such file" in _one_line(ei.value)


def test_folder_is_not_a_model(tmp_path):
    with pytest.raises(errors.ModelNotFoundError, match="is a folder"):
        load_model(tmp_path)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.onnx"
    p.write_bytes(b"")
    with pytest.raises(errors.ModelDecodeError, match="empty"):
        load_model(p)


def test_random_bytes(tmp_path):
    p = tmp_path / "random.onnx"
    p.write_bytes(np.random.default_rng(1).bytes(4096))
    with pytest.raises(errors.ModelDecodeError) as ei:
        load_model(p)
    assert "re-export" in _one_line(ei.value) or "damaged" in ei.value.message


@pytest.mark.parametrize("fraction", [0.3, 0.6, 0.9, 0.999])
def test_truncated_file(tmp_path, fraction):
    src = M.LIGHT_DIR / "light_resnet50.onnx"
    data = src.read_bytes()
    p = tmp_path / "cut.onnx"
    p.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(errors.ModelLoadError) as ei:
        load_model(p)
    assert "truncated" in _one_line(ei.value) or "damaged" in ei.value.message


def test_missing_external_data(tmp_path):
    m = M.five_node()
    path = tmp_path / "ext.onnx"
    onnx.save(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location="ext.bin", size_threshold=0)
    load_model(path)  # sound as saved
    (tmp_path / "ext.bin").unlink()
    with pytest.raises(errors.ExternalDataError) as ei:
        load_model(path)
    assert "ext.bin" in _one_line(ei.value) and "missing" in ei.value.message


def test_truncated_external_data(tmp_path):
    path = tmp_path / "ext.onnx"
    onnx.save(M.five_node(), path, save_as_external_data=True, location="ext.bin", size_threshold=0)
    data = (tmp_path / "ext.bin").read_bytes()
    (tmp_path / "ext.bin").write_bytes(data[:10])
    with pytest.raises(errors.ExternalDataError, match="truncated"):
        load_model(path)


def test_cyclic_graph(save_model):
    nodes = [
        h.make_node("Add", ["x", "c"], ["a"], name="first"),
        h.make_node("Relu", ["a"], ["b"], name="second"),
        h.make_node("Relu", ["b"], ["c"], name="third"),
    ]
    m = M.model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [2])], [h.make_tensor_value_info("b", T.FLOAT, [2])])
    with pytest.raises(errors.CyclicGraphError) as ei:
        analyze_model(save_model(m), parser="table")
    msg = _one_line(ei.value)
    assert "cycle" in msg and "first" in msg and "third" in msg


def test_unknown_opset(save_model):
    m = M.five_node()
    m.opset_import[0].version = 99
    with pytest.raises(errors.UnsupportedOpsetError) as ei:
        load_model(save_model(m))
    assert "opset 99" in _one_line(ei.value) and "re-export" in ei.value.message


def test_empty_graph(save_model):
    m = M.model([], [h.make_tensor_value_info("x", T.FLOAT, [2])], [h.make_tensor_value_info("x", T.FLOAT, [2])])
    with pytest.raises(errors.EmptyGraphError, match="no nodes"):
        load_model(save_model(m))


def test_dangling_input(save_model):
    m = M.model(
        [h.make_node("Relu", ["ghost"], ["y"], name="r")],
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    with pytest.raises(errors.InvalidGraphError, match="ghost"):
        load_model(save_model(m))


def test_weights_are_never_read(tmp_path):
    """External weights: only their existence and size are checked, never their bytes."""
    m = M.five_node()
    path = tmp_path / "ext.onnx"
    onnx.save(m, path, save_as_external_data=True, location="w.bin", size_threshold=0)
    bin_path = tmp_path / "w.bin"
    bin_path.write_bytes(b"\xff" * bin_path.stat().st_size)  # garbage weights of the right size
    gm = analyze_model(path, parser="table")
    assert gm.graph.initializers["W1"].external
    assert gm.graph.initializers["W1"].dims == (4, 3, 3, 3)
    assert gm.nodes[0].flops == 2 * 4 * 8 * 8 * 3 * 3 * 3 + 0


def test_model_over_2gb_with_external_data(tmp_path):
    """A 2.5 GB weight file (sparse) analyses quickly: the weights are not loaded."""
    rows = 2_500_000_000 // (4 * 1024)
    w_t = onnx.TensorProto()
    w_t.name = "W"
    w_t.data_type = T.FLOAT
    w_t.dims.extend([rows, 1024])
    w_t.data_location = T.EXTERNAL
    for k, v in (("location", "big.bin"), ("offset", "0"), ("length", str(rows * 1024 * 4))):
        e = w_t.external_data.add()
        e.key, e.value = k, v
    with open(tmp_path / "big.bin", "wb") as f:
        f.truncate(rows * 1024 * 4)
    m = M.model(
        [h.make_node("Gather", ["W", "ids"], ["y"], name="embed", axis=0)],
        [h.make_tensor_value_info("ids", T.INT64, ["batch", "seq"])],
        [h.make_tensor_value_info("y", T.FLOAT, ["batch", "seq", 1024])],
        [w_t],
    )
    onnx.save(m, tmp_path / "big.onnx")
    gm = analyze_model(tmp_path / "big.onnx", parser="table")
    assert gm.graph.initializers["W"].nbytes > 2**31
    assert gm.graph.tensors["y"].shape == ("batch", "seq", 1024)


def test_sample_is_default():
    gm = analyze_model(None, parser="table")
    assert gm.path is not None and gm.path.name == "sample.onnx"


def test_small_initializer_values_survive_for_checks(save_model):
    m = M.model(
        [h.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", axis=1)],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 8000])],
        [h.make_tensor_value_info("v", T.FLOAT, [1, 5000]), h.make_tensor_value_info("i", T.INT64, [1, 5000])],
        [nh.from_array(np.array([5000], np.int64), "k")],
    )
    gm = analyze_model(save_model(m), parser="table")
    assert gm.nodes[0].status.value == "plugin" and "3840" in gm.nodes[0].reason
