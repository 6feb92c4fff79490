"""Bad input that used to escape the contract (issue list, each reproduced first): every case gives a
typed one-line error or a correct answer, never a traceback."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from splitscope.engine.errors import ExternalDataError, ModelDecodeError, ModelLoadError, ModelNotFoundError
from splitscope.engine.model import Source, Status
from splitscope.engine.onnxio.loader import load_model
from splitscope.engine.split.analyze import analyze_model

from tests.engine.conftest import needs_rtx
from tests.engine.models import model


def relu_model(**kw):
    return model(
        [h.make_node("Relu", ["x"], ["y"], name="r")],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
        **kw,
    )


def external_model(tmp_path, weights: int = 64 * 64 * 4, **record: str):
    """An Add with a 64x64 FLOAT weight in external file w.bin of ``weights`` bytes; record keys as given."""
    t = nh.from_array(np.zeros((64, 64), np.float32), "w")
    t.ClearField("raw_data")
    t.data_location = T.EXTERNAL
    for k, v in ({"location": "w.bin"} | record).items():
        e = t.external_data.add()
        e.key, e.value = k, v
    m = model(
        [h.make_node("Add", ["x", "w"], ["y"], name="add")],
        [h.make_tensor_value_info("x", T.FLOAT, [64, 64])],
        [h.make_tensor_value_info("y", T.FLOAT, [64, 64])],
        [t],
    )
    (tmp_path / "w.bin").write_bytes(bytes(weights))
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    return p


def one_line(e: pytest.ExceptionInfo) -> str:
    msg = e.value.message
    assert "\n" not in msg and "\x00" not in msg
    return msg


def test_sparse_initializer_is_an_initializer(save_model):
    sp = h.make_sparse_tensor(
        nh.from_array(np.array([1.0], np.float32), "sp"), nh.from_array(np.array([0], np.int64), ""), [4]
    )
    m = model(
        [h.make_node("Add", ["x", "sp"], ["y"], name="add")],
        [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, [4])],
    )
    m.graph.sparse_initializer.append(sp)
    gm = analyze_model(save_model(m), parser="table")
    t = gm.graph.tensors["sp"]
    assert t.is_initializer and t.shape == (4,) and t.dtype == "FLOAT"
    assert gm.nodes[0].inputs == ["x", "sp"]


@pytest.mark.parametrize(
    ("record", "needle"),
    [
        ({"offset": "abc"}, "offset 'abc'"),
        ({"offset": "1e3"}, "offset '1e3'"),
        ({"offset": "-5"}, "offset '-5'"),
        ({"length": "-5"}, "length '-5'"),
        ({"length": "10"}, "length says 10"),
        ({"location": "w\x00.bin"}, "not a usable file name"),
        ({"location": "w\n.bin"}, "not a usable file name"),
    ],
)
def test_malformed_external_records(tmp_path, record, needle):
    with pytest.raises(ExternalDataError) as e:
        load_model(external_model(tmp_path, **record))
    assert needle in one_line(e)


def test_external_file_shorter_than_tensor_without_length(tmp_path):
    with pytest.raises(ExternalDataError) as e:
        load_model(external_model(tmp_path, weights=100))
    assert "needs bytes up to 16384" in one_line(e)


def test_duplicate_external_keys(tmp_path):
    p = external_model(tmp_path)
    m = onnx.load(p, load_external_data=False)
    e = m.graph.initializer[0].external_data.add()
    e.key, e.value = "location", "other.bin"
    onnx.save(m, p)
    with pytest.raises(ExternalDataError) as err:
        load_model(p)
    assert "twice" in one_line(err)


def test_weights_file_that_is_a_fifo(tmp_path):
    p = external_model(tmp_path)
    (tmp_path / "w.bin").unlink()
    os.mkfifo(tmp_path / "w.bin")
    with pytest.raises(ExternalDataError) as e:
        load_model(p)
    assert "not a regular file" in one_line(e)


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_model_path_that_is_not_a_file(tmp_path, special):
    p = tmp_path / "m.onnx"
    if special == "fifo":
        os.mkfifo(p)
    else:
        p = special
    with pytest.raises(ModelNotFoundError) as e:
        load_model(p)
    assert "not a regular file" in one_line(e)


def test_constant_with_missing_external_data_in_a_function(save_model):
    t = nh.from_array(np.zeros((64, 64), np.float32), "c")
    t.ClearField("raw_data")
    t.data_location = T.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "missing.bin"
    fn = h.make_function(
        "local",
        "F",
        ["a"],
        ["b"],
        [h.make_node("Constant", [], ["c"], value=t), h.make_node("Add", ["a", "c"], ["b"])],
        [h.make_opsetid("", 17)],
    )
    m = model(
        [h.make_node("F", ["x"], ["y"], domain="local")],
        [h.make_tensor_value_info("x", T.FLOAT, [64, 64])],
        [h.make_tensor_value_info("y", T.FLOAT, [64, 64])],
        extra_opsets={"local": 1},
        functions=[fn],
    )
    with pytest.raises(ExternalDataError) as err:
        load_model(save_model(m))
    assert "missing.bin" in one_line(err) and "function F" in err.value.message


@pytest.mark.parametrize("where", [b"node_name", b"Relu", b"scope/node_name", b"meta_value"])
def test_invalid_utf8(tmp_path, where):
    m = relu_model()
    m.graph.node[0].name = "scope/node_name" if b"/" in where else "node_name"
    m.graph.node[0].metadata_props.add(key="k", value="meta_value")
    data = m.SerializeToString()
    p = tmp_path / "m.onnx"
    p.write_bytes(data.replace(where, where[:-1] + b"\xff"))
    with pytest.raises(ModelDecodeError) as e:
        analyze_model(p, parser="table")
    assert "not valid UTF-8" in one_line(e)


def test_zero_padding_stops_at_once(tmp_path):
    p = tmp_path / "m.onnx"
    with open(p, "wb") as f:
        f.write(relu_model().SerializeToString())
        f.truncate(2**30)  # a gigabyte of zeros (sparse on disk)
    with pytest.raises(ModelDecodeError) as e:
        load_model(p)
    assert "field number 0" in one_line(e)


def test_initializer_dims_must_match_data(save_model):
    w = nh.from_array(np.zeros(4, np.float32), "w")
    w.dims[0] = 2**40
    m = model(
        [h.make_node("Add", ["x", "w"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, [4])],
        [w],
    )
    with pytest.raises(ModelLoadError) as e:
        load_model(save_model(m))
    assert "dims" in one_line(e)


def topk(k: onnx.TensorProto) -> onnx.ModelProto:
    return model(
        [h.make_node("TopK", ["x", "k"], ["v", "i"], name="t")],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 10])],
        [h.make_tensor_value_info("v", T.FLOAT, None), h.make_tensor_value_info("i", T.INT64, None)],
        [k],
    )


def loop_without_body_inputs() -> onnx.ModelProto:
    body = h.make_graph(
        [h.make_node("Constant", [], ["c"], value=nh.from_array(np.array(True)))],
        "b",
        [],
        [h.make_tensor_value_info("c", T.BOOL, [])],
    )
    return model(
        [h.make_node("Loop", ["tc", ""], ["lo"], body=body, name="L"), h.make_node("Relu", ["x"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
        [nh.from_array(np.array(3, np.int64), "tc")],
    )


def conv_with_string_kernel() -> onnx.ModelProto:
    n = h.make_node("Conv", ["x", "w"], ["y"], name="c")
    n.attribute.append(h.make_attribute("kernel_shape", "33"))
    return model(
        [n],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [nh.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")],
    )


def cast_to_unknown_type() -> onnx.ModelProto:
    return model(
        [h.make_node("Cast", ["x"], ["y"], name="cast", to=99)],
        [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, [4])],
    )


def topk_k_from_constant_node() -> onnx.ModelProto:
    """K of shape [0] from a Constant node: its shape is known only from the node's attribute."""
    return model(
        [
            h.make_node("Constant", [], ["k"], value=nh.from_array(np.zeros((0,), np.int64)), name="kc"),
            h.make_node("TopK", ["x", "k"], ["v", "i"], name="t"),
            h.make_node("Relu", ["v"], ["y"], name="r"),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 10])],
        [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("i", T.INT64, None)],
    )


MALFORMED = {
    "topk_k_constant_node": (topk_k_from_constant_node, "t", "shape [0]"),
    "topk_negative_k": (lambda: topk(nh.from_array(np.array([-3], np.int64), "k")), "t", "negative"),
    "topk_empty_k": (lambda: topk(nh.from_array(np.zeros((0,), np.int64), "k")), "t", "shape [0]"),
    "topk_2d_k": (lambda: topk(nh.from_array(np.array([[1, 2]], np.int64), "k")), "t", "shape [1, 2]"),
    "loop_no_body_inputs": (loop_without_body_inputs, "L", "body has 0 inputs"),
    "conv_string_kernel": (conv_with_string_kernel, "c", "kernel_shape' is STRING"),
    "cast_to_99": (cast_to_unknown_type, "cast", "not an ONNX element type"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_nodes_by_table(save_model, name):
    build, node, needle = MALFORMED[name]
    gm = analyze_model(save_model(build()), parser="table")
    n = next(x for x in gm.nodes if x.name == node)
    assert n.status is Status.PLUGIN and needle in n.reason and "malformed ONNX" in n.reason


@needs_rtx
@pytest.mark.parametrize("name", ["topk_empty_k", "topk_2d_k", "loop_no_body_inputs", "topk_k_constant_node"])
def test_malformed_nodes_that_crash_the_parser_are_cut_first(save_model, name):
    """These crashed the TensorRT-RTX 1.7 parser process (SIGSEGV); cut first, the rest is proven."""
    build, node, _ = MALFORMED[name]
    gm = analyze_model(save_model(build()), parser="rtx")
    assert gm.parser.name == "tensorrt-rtx", gm.warnings
    bad = next(x for x in gm.nodes if x.name == node)
    assert bad.status is Status.PLUGIN and bad.source is Source.TABLE and "not sent to the parser" in bad.reason
    assert all(x.source is Source.PARSER for x in gm.nodes if x != bad)
    assert any("cut before the parser was asked" in w for w in gm.warnings)


# Valid models that an over-strict check once rejected -------------------------------------------------


def test_minus_one_dimension_is_read_as_dynamic(save_model):
    m = model(
        [h.make_node("Relu", ["x"], ["y"], name="r")],
        [h.make_tensor_value_info("x", T.FLOAT, [-1, 3, 8, 8])],
        [h.make_tensor_value_info("y", T.FLOAT, [-1, 3, 8, 8])],
    )
    gm = analyze_model(save_model(m), parser="table")
    # A -1 is a dim without a name: it is named by its place, so that a value can be given, and as a first
    # axis it is batch-like (1 unless given, said in a note).
    assert gm.graph.tensors["x"].shape[0] == "x[0]" and gm.nodes[0].status is Status.DELEGATE
    assert gm.dims == {"x[0]": 1} and gm.dim_notes and not gm.missing_dims


def test_op_below_its_opset_is_not_malformed(save_model):
    """ONNX Runtime's transformer optimizer writes LayerNormalization at opset 14; TensorRT imports it."""
    m = model(
        [h.make_node("LayerNormalization", ["x", "s", "b"], ["y"], name="ln", axis=-1)],
        [h.make_tensor_value_info("x", T.FLOAT, [2, 8])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 8])],
        [nh.from_array(np.ones(8, np.float32), "s"), nh.from_array(np.zeros(8, np.float32), "b")],
        opset=14,
    )
    gm = analyze_model(save_model(m), parser="table")
    assert not gm.nodes[0].defect and "malformed" not in gm.nodes[0].reason


def test_output_dtype_zero_is_the_default(save_model):
    m = model(
        [
            h.make_node("QuantizeLinear", ["x", "s"], ["q"], name="q", output_dtype=0),
            h.make_node("DequantizeLinear", ["q", "s"], ["y"], name="dq"),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, [4])],
        [nh.from_array(np.array(0.1, np.float32), "s")],
        opset=21,
    )
    gm = analyze_model(save_model(m), parser="table")
    assert not any(n.defect for n in gm.nodes)


def test_function_attribute_reference_is_not_malformed(save_model):
    cast = h.make_node("Cast", ["a"], ["b"])
    ref = onnx.AttributeProto()
    ref.name, ref.ref_attr_name, ref.type = "to", "to", onnx.AttributeProto.INT
    cast.attribute.append(ref)
    fn = h.make_function("local", "CastTo", ["a"], ["b"], [cast], [h.make_opsetid("", 17)], attributes=["to"])
    m = model(
        [h.make_node("CastTo", ["x"], ["y"], domain="local", to=T.FLOAT16)],
        [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT16, [4])],
        extra_opsets={"local": 1},
        functions=[fn],
    )
    gm = analyze_model(save_model(m), parser="table")
    assert gm.nodes[0].status is Status.DELEGATE, gm.nodes[0].reason


# Inputs that still escaped as tracebacks --------------------------------------------------------------


def test_torch_scope_metadata_that_is_not_a_list(save_model):
    for raw in ("1", "None", "[" * 5000 + "]" * 5000):
        m = relu_model()
        m.graph.node[0].metadata_props.add(key="pkg.torch.onnx.name_scopes", value=raw)
        gm = analyze_model(save_model(m), parser="table")
        assert len(gm.nodes) == 1


def test_huge_element_counts_do_not_overflow(save_model):
    """Dims each under the per-dimension cap still multiply past what a float holds."""
    m = model(
        [h.make_node("Relu", ["x"], ["y"], name="r")],
        [h.make_tensor_value_info("x", T.INT4, [2**39] * 12)],
        [h.make_tensor_value_info("y", T.INT4, None)],
    )
    gm = analyze_model(save_model(m), parser="table")
    assert gm.graph.tensors["x"].nbytes() > 2**400


def test_non_ascii_digits_in_dim_values(tmp_path):
    from splitscope.engine import cli

    assert cli.main(["analyze", "--parser", "table", "-q", "--dim", "b=²"]) == 2


def test_non_utf8_large_initializer_in_a_body(tmp_path):
    big = nh.from_array(np.zeros(2048, np.float32), "bigweight")
    then_g = h.make_graph(
        [h.make_node("Add", ["x", "bigweight"], ["t"])],
        "then",
        [],
        [h.make_tensor_value_info("t", T.FLOAT, [2048])],
        [big],
    )
    else_g = h.make_graph(
        [h.make_node("Identity", ["x"], ["e"])], "else", [], [h.make_tensor_value_info("e", T.FLOAT, [2048])]
    )
    m = model(
        [h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="if")],
        [h.make_tensor_value_info("c", T.BOOL, []), h.make_tensor_value_info("x", T.FLOAT, [2048])],
        [h.make_tensor_value_info("y", T.FLOAT, [2048])],
    )
    p = tmp_path / "m.onnx"
    p.write_bytes(m.SerializeToString().replace(b"bigweight", b"bigweigh\xff"))
    with pytest.raises(ModelDecodeError) as e:
        analyze_model(p, parser="table")
    assert "not valid UTF-8" in one_line(e)


def topk_in_a_body_with_runtime_k() -> onnx.ModelProto:
    """K from a Slice that gives shape [0], inside an If branch: crashed the parser until bodies were checked."""
    then_g = h.make_graph(
        [
            h.make_node("Slice", ["kk", "st", "en"], ["k"], name="slice"),
            h.make_node("TopK", ["x", "k"], ["v", "i"], name="t"),
        ],
        "then",
        [],
        [h.make_tensor_value_info("v", T.FLOAT, None)],
    )
    else_g = h.make_graph(
        [h.make_node("Identity", ["x"], ["e"])], "else", [], [h.make_tensor_value_info("e", T.FLOAT, None)]
    )
    return model(
        [
            h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="if"),
            h.make_node("Relu", ["x"], ["z"], name="r"),
        ],
        [h.make_tensor_value_info("c", T.BOOL, []), h.make_tensor_value_info("x", T.FLOAT, [1, 10])],
        [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("z", T.FLOAT, [1, 10])],
        [
            nh.from_array(np.array([3], np.int64), "kk"),
            nh.from_array(np.array([1], np.int64), "st"),
            nh.from_array(np.array([1], np.int64), "en"),
        ],
    )


def test_topk_with_bad_k_in_a_constant_body_is_found_once_shapes_are_known(save_model):
    """The same defect as in the main graph, in an If branch whose K comes from the branch's own Constant."""
    then_g = h.make_graph(
        [
            h.make_node("Constant", [], ["k"], value=nh.from_array(np.zeros((0,), np.int64))),
            h.make_node("TopK", ["x", "k"], ["v", "i"], name="t"),
        ],
        "then",
        [],
        [h.make_tensor_value_info("v", T.FLOAT, None)],
    )
    else_g = h.make_graph(
        [h.make_node("Identity", ["x"], ["e"])], "else", [], [h.make_tensor_value_info("e", T.FLOAT, None)]
    )
    m = model(
        [h.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="if")],
        [h.make_tensor_value_info("c", T.BOOL, []), h.make_tensor_value_info("x", T.FLOAT, [1, 10])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    gm = analyze_model(save_model(m), parser="table")
    owner = gm.nodes[0]
    inner = next(n for n in owner.subgraphs["then_branch"].nodes if n.name == "t")
    assert "shape [0]" in inner.defect and owner.status is Status.PLUGIN


@needs_rtx
def test_a_node_that_crashes_the_parser_is_found_by_bisection(save_model):
    """K from a Slice of outer constants inside an If branch: no shape says it is empty, and the TensorRT-RTX
    1.7 parser crashes (SIGSEGV). The crash is narrowed down to the If; every other node is proven."""
    gm = analyze_model(save_model(topk_in_a_body_with_runtime_k()), parser="rtx")
    assert gm.parser.name == "tensorrt-rtx", gm.warnings
    owner = next(n for n in gm.nodes if n.name == "if")
    relu = next(n for n in gm.nodes if n.name == "r")
    assert owner.status is Status.PLUGIN and "crashes on this node" in owner.reason
    assert relu.source is Source.PARSER and relu.status is Status.DELEGATE
    assert any("found by bisection" in n for n in gm.parser.notes)
