"""The numpy evaluations that fold shape arithmetic give what ONNX's reference evaluator gives, and a decoder deep
enough to need ten thousand of them gets every shape at the dims in force (it used to stop at a budget, leaving most
layers' attention without FLOPs)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx.reference import ReferenceEvaluator
from splitscope.engine.onnxio import fold_ops

rng = np.random.default_rng(0)


def _ints(*shape: int, lo: int = -6, hi: int = 7) -> np.ndarray:
    return rng.integers(lo, hi, size=shape).astype(np.int64)


def _case(op: str, inputs: list[np.ndarray | None], **attrs) -> tuple[onnx.NodeProto, list[np.ndarray | None]]:
    names = [f"i{k}" if v is not None else "" for k, v in enumerate(inputs)]
    return h.make_node(op, names, ["y"], **attrs), inputs


def _cases():
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    shape = np.array([1, 128, 16], np.int64)
    yield _case("Identity", [shape])
    yield _case("Unsqueeze", [shape, np.array([0, -1], np.int64)])
    yield _case("Unsqueeze", [np.array(7, np.int64), np.array([0], np.int64)])
    yield _case("Squeeze", [np.ones((1, 3, 1), np.int64), np.array([-1], np.int64)])
    yield _case("Squeeze", [np.ones((1, 3, 1), np.int64)])
    yield _case("Concat", [shape, np.array([2, 8], np.int64), np.array([], np.int64)], axis=0)
    yield _case("Concat", [x, x], axis=-1)
    for to in (T.FLOAT, T.INT64, T.INT32, T.BOOL, T.FLOAT16, T.DOUBLE):
        yield _case("Cast", [shape], to=to)
        yield _case("Cast", [np.array([1.7, -2.5, 0.0], np.float32)], to=to)
    yield _case("Gather", [shape, np.array(1, np.int64)], axis=0)
    yield _case("Gather", [shape, np.array([-1, 0], np.int64)])
    yield _case("Gather", [x, np.array([[0, 2], [1, 1]], np.int64)], axis=2)
    big = np.iinfo(np.int64).max
    for starts, ends, axes, steps in (
        ([0], [2], [0], [1]),
        ([-1], [-big], [0], [-1]),
        ([1], [big], [-1], [2]),
        ([5], [-5], [1], [-1]),
        ([0, 1], [1, 3], [0, 2], [1, 1]),
    ):
        arr = [np.array(v, np.int64) for v in (starts, ends, axes, steps)]
        yield _case("Slice", [x, *arr])
    yield _case("Slice", [x, np.array([1], np.int64), np.array([3], np.int64)])
    a, b = _ints(3, 4), _ints(4)
    b_nz = np.where(b == 0, 3, b)
    for op in ("Add", "Sub", "Mul"):
        yield _case(op, [a, b])
        yield _case(op, [x, x[:, :1]])
    yield _case("Div", [a, b_nz])
    yield _case("Div", [np.array([7, -7, 9, -9], np.int64), np.array([2, 2, -4, -4], np.int64)])
    big_ints = np.array([np.iinfo(np.int64).max, 2**62 + 1, -(2**62) - 3], np.int64)
    yield _case("Div", [big_ints, np.array([1, 1, 2], np.int64)])  # exact past 2**53, INT64_MAX stays positive
    yield _case("Div", [x, x + 3])
    for op in ("Neg", "Abs"):
        yield _case(op, [a])
    for op in ("Floor", "Ceil", "Sqrt", "Neg", "Abs"):
        yield _case(op, [np.abs(x)])
    for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
        yield _case(op, [a, b])
    yield _case("Not", [a > 0])
    yield _case("Where", [a > 0, a, -a])
    yield _case("Min", [a, b, np.array(2, np.int64)])
    yield _case("Max", [a, b])
    yield _case("Shape", [x])
    yield _case("Shape", [x], start=1)
    yield _case("Shape", [x], start=-2, end=-1)
    yield _case("Size", [x])
    yield _case("Reshape", [x, np.array([0, -1], np.int64)])
    yield _case("Reshape", [x, np.array([4, 0, 2], np.int64)])
    yield _case("Reshape", [np.zeros((0, 3), np.float32), np.array([0, 3], np.int64)], allowzero=1)
    yield _case("Transpose", [x], perm=[2, 0, 1])
    yield _case("Transpose", [x])
    yield _case("Expand", [np.array([[1], [2]], np.int64), np.array([2, 1, 3], np.int64)])
    yield _case("ConstantOfShape", [np.array([2, 3], np.int64)])
    yield _case(
        "ConstantOfShape",
        [np.array([4], np.int64)],
        value=onnx.numpy_helper.from_array(np.array([-1], np.int64)),
    )


@pytest.mark.parametrize("case", list(_cases()), ids=lambda c: c[0].op_type if isinstance(c, tuple) else str(c))
def test_each_op_gives_what_the_reference_evaluator_gives(case):
    node, inputs = case
    ours = fold_ops.evaluate(node, inputs)
    assert ours is not None, f"{node.op_type} was not evaluated"
    feeds = {n: v for n, v in zip(node.input, inputs, strict=True) if n}
    ref = ReferenceEvaluator(node, opsets={"": 19}).run(None, feeds)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref, strict=True):
        b = np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (node.op_type, a.dtype, b.dtype, a.shape, b.shape)
        np.testing.assert_array_equal(a, b)


def test_what_it_does_not_take_is_left_to_the_reference():
    """Another op, a custom domain, mixed types, an integer division by zero, a gather out of range: None."""
    i64 = np.array([1, 2], np.int64)
    assert fold_ops.evaluate(h.make_node("Range", ["a", "b", "c"], ["y"]), [i64, i64, i64]) is None
    assert fold_ops.evaluate(h.make_node("Shape", ["x"], ["y"], domain="com.example"), [i64]) is None
    assert fold_ops.evaluate(h.make_node("Add", ["a", "b"], ["y"]), [i64, i64.astype(np.int32)]) is None
    assert fold_ops.evaluate(h.make_node("Div", ["a", "b"], ["y"]), [i64, np.zeros(2, np.int64)]) is None
    assert fold_ops.evaluate(h.make_node("Gather", ["a", "b"], ["y"]), [i64, np.array([5], np.int64)]) is None
    assert fold_ops.evaluate(h.make_node("Concat", ["a", ""], ["y"], axis=0), [i64, None]) is None
    seq = np.arange(32768, dtype=np.int64)  # a causal mask of a 32k sequence: 8 GB, never made
    assert fold_ops.evaluate(h.make_node("Less", ["a", "b"], ["y"]), [seq[:, None], seq[None, :]]) is None
    assert fold_ops.evaluate(h.make_node("Where", ["c", "a", "b"], ["y"]), [seq[:, None] < 0, seq, seq]) is None


def _deep_decoder(layers: int) -> onnx.ModelProto:
    """Each layer reshapes its input to heads through the shape arithmetic exporters write (Shape, Gather,
    Unsqueeze, Concat, then a Reshape and a MatMul whose FLOPs need the sequence length): ten fold evaluations a
    layer."""
    nodes, inits = (
        [],
        [
            onnx.numpy_helper.from_array(np.array(0, np.int64), "i0"),
            onnx.numpy_helper.from_array(np.array(1, np.int64), "i1"),
            onnx.numpy_helper.from_array(np.array([0], np.int64), "ax0"),
            onnx.numpy_helper.from_array(np.array([2], np.int64), "heads"),
            onnx.numpy_helper.from_array(np.array(2, np.int64), "two"),
            onnx.numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "w"),
        ],
    )
    x = "x"
    for k in range(layers):
        p = f"l{k}_"
        nodes += [
            h.make_node("Shape", [x], [p + "s"]),
            h.make_node("Gather", [p + "s", "i0"], [p + "b"]),
            h.make_node("Gather", [p + "s", "i1"], [p + "t"]),
            h.make_node("Shape", [x], [p + "s2"]),
            h.make_node("Gather", [p + "s2", "two"], [p + "d"]),
            h.make_node("Div", [p + "d", "two"], [p + "hd"]),
            h.make_node("Unsqueeze", [p + "b", "ax0"], [p + "ub"]),
            h.make_node("Unsqueeze", [p + "t", "ax0"], [p + "ut"]),
            h.make_node("Unsqueeze", [p + "hd", "ax0"], [p + "uh"]),
            h.make_node("Concat", [p + "ub", p + "ut", "heads", p + "uh"], [p + "shape"], axis=0),
            h.make_node("Reshape", [x, p + "shape"], [p + "r"]),
            h.make_node("MatMul", [p + "r", "w4"], [p + "m"]),
            h.make_node("Shape", [x], [p + "s3"]),
            h.make_node("Reshape", [p + "m", p + "s3"], [p + "o"]),
        ]
        x = p + "o"
    inits.append(onnx.numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32), "w4"))
    g = h.make_graph(
        nodes,
        "deep",
        [h.make_tensor_value_info("x", T.FLOAT, [1, "seq", 8])],
        [h.make_tensor_value_info(x, T.FLOAT, None)],
        inits,
    )
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_a_deep_decoder_gets_every_shape_at_the_dims(save_model):
    """200 layers need 2,000 fold evaluations, past the reference evaluator's budget of 1,500: every MatMul still
    gets its FLOPs at seq=128, and the model's total is the layers' (a MatMul and a scalar Div each)."""
    from splitscope.engine.split.analyze import analyze_model

    gm = analyze_model(save_model(_deep_decoder(200)), parser="table", dims={"seq": 128})
    mm = [n for n in gm.nodes if n.op_type == "MatMul"]
    assert len(mm) == 200 and all(n.flops == 2 * 1 * 128 * 2 * 4 * 4 for n in mm), {n.flops for n in mm}
    assert gm.total_flops() == 200 * (2 * 128 * 2 * 4 * 4 + 1)
