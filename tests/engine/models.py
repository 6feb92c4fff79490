"""Small real ONNX models built in code for the engine tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

LIGHT_DIR = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def save(model: onnx.ModelProto, path: Path) -> Path:
    """Save ``model`` to ``path`` and return the path."""
    onnx.save(model, path)
    return path


def model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    inits: list[onnx.TensorProto] | None = None,
    opset: int = 17,
    extra_opsets: dict[str, int] | None = None,
    **kw: object,
) -> onnx.ModelProto:
    """A model from parts, with IR 8 so every onnx release reads it."""
    g = h.make_graph(nodes, "g", inputs, outputs, inits or [])
    ops = [h.make_opsetid("", opset), *(h.make_opsetid(d, v) for d, v in (extra_opsets or {}).items())]
    m = h.make_model(g, opset_imports=ops, **kw)
    m.ir_version = 8
    return m


def w(name: str, *shape: int, dtype: type = np.float32) -> onnx.TensorProto:
    """A deterministic initializer."""
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    return nh.from_array(rng.standard_normal(shape).astype(dtype), name)


def five_node() -> onnx.ModelProto:
    """Conv, Relu, custom-domain op, Relu, Conv: the model of DOMAIN.md section 3."""
    nodes = [
        h.make_node("Conv", ["x", "W1"], ["a"], name="c1", pads=[1, 1, 1, 1]),
        h.make_node("Relu", ["a"], ["b"], name="r1"),
        h.make_node("MyOp", ["b"], ["c"], name="custom", domain="my.domain"),
        h.make_node("Relu", ["c"], ["d"], name="r2"),
        h.make_node("Conv", ["d", "W2"], ["y"], name="c2", pads=[1, 1, 1, 1]),
    ]
    return model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4, 8, 8])],
        [w("W1", 4, 3, 3, 3), w("W2", 4, 4, 3, 3)],
        extra_opsets={"my.domain": 1},
    )


def repeated_nonzero(n: int = 4) -> onnx.ModelProto:
    """``n`` NonZero nodes in a chain of Relu blocks (the parser reports only the first)."""
    nodes = []
    x = "x"
    outs = []
    for i in range(n):
        nodes.append(h.make_node("Relu", [x], [f"r{i}"], name=f"relu{i}"))
        nodes.append(h.make_node("NonZero", [f"r{i}"], [f"nz{i}"], name=f"nonzero{i}"))
        outs.append(h.make_tensor_value_info(f"nz{i}", T.INT64, [2, None]))
        nodes.append(h.make_node("Sigmoid", [f"r{i}"], [f"s{i}"], name=f"sig{i}"))
        x = f"s{i}"
    return model(
        nodes, [h.make_tensor_value_info("x", T.FLOAT, [4, 8])], [h.make_tensor_value_info(x, T.FLOAT, [4, 8]), *outs]
    )


def uint64_model() -> onnx.ModelProto:
    """A uint64 initializer consumed by a Cast: TensorRT fails the model without naming a node."""
    nodes = [
        h.make_node("Relu", ["x"], ["a"], name="relu"),
        h.make_node("Cast", ["u"], ["uf"], name="cast_u64", to=T.FLOAT),
        h.make_node("Add", ["a", "uf"], ["y"], name="add"),
    ]
    return model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, [4])],
        [nh.from_array(np.arange(4, dtype=np.uint64), "u")],
    )


def if_model(body_op: str = "Relu", body_domain: str = "") -> onnx.ModelProto:
    """An If whose then-branch holds ``body_op`` (post-processing in an If body, as detectors do)."""
    then_g = h.make_graph(
        [h.make_node(body_op, ["x"], ["t"], name="then_op", domain=body_domain)],
        "then",
        [],
        [h.make_tensor_value_info("t", T.FLOAT, [2, 3])],
    )
    else_g = h.make_graph(
        [h.make_node("Sigmoid", ["x"], ["e"], name="else_op")],
        "else",
        [],
        [h.make_tensor_value_info("e", T.FLOAT, [2, 3])],
    )
    nodes = [
        h.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
        h.make_node("Greater", ["s", "zero"], ["cond"], name="gt"),
        h.make_node("If", ["cond"], ["y"], name="branch", then_branch=then_g, else_branch=else_g),
    ]
    ops = {body_domain: 1} if body_domain else None
    return model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 3])],
        [nh.from_array(np.array(0.0, np.float32), "zero")],
        extra_opsets=ops,
    )


def function_model() -> onnx.ModelProto:
    """A model-local function (a Swish block) called twice."""
    f = h.make_function(
        "local.fn",
        "SwishBlock",
        ["X"],
        ["Y"],
        [h.make_node("Sigmoid", ["X"], ["S"]), h.make_node("Mul", ["X", "S"], ["Y"])],
        [h.make_opsetid("", 17)],
    )
    nodes = [
        h.make_node("SwishBlock", ["x"], ["a"], name="/block1/swish", domain="local.fn"),
        h.make_node("SwishBlock", ["a"], ["y"], name="/block2/swish", domain="local.fn"),
    ]
    m = model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, ["batch", 16])],
        [h.make_tensor_value_info("y", T.FLOAT, ["batch", 16])],
        extra_opsets={"local.fn": 1},
    )
    m.functions.append(f)
    return m


def function_with_unsupported() -> onnx.ModelProto:
    """A model-local function whose body holds an op TensorRT lacks (Det)."""
    f = h.make_function(
        "local.fn",
        "Block",
        ["X"],
        ["Y"],
        [h.make_node("Relu", ["X"], ["S"]), h.make_node("Det", ["S"], ["Y"], name="inner_det")],
        [h.make_opsetid("", 17)],
    )
    nodes = [
        h.make_node("Relu", ["x"], ["a"], name="/pre/relu"),
        h.make_node("Block", ["a"], ["y"], name="/blk", domain="local.fn"),
    ]
    m = model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, [4, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [])],
        extra_opsets={"local.fn": 1},
    )
    m.functions.append(f)
    return m


def restrictions_model() -> onnx.ModelProto:
    """Ops whose support depends on attributes, constness and types (the table's restrictions)."""
    f = T.FLOAT
    nodes = [
        # Resize cubic: mode unsupported.
        h.make_node("Resize", ["img", "", "scales"], ["up_cubic"], name="resize_cubic", mode="cubic"),
        h.make_node("Resize", ["img", "", "scales"], ["up_lin"], name="resize_linear", mode="linear"),
        # ReduceMean with run-time axes (computed from a Shape).
        h.make_node("Shape", ["img"], ["shp"], name="shape"),
        h.make_node("Gather", ["shp", "idx1"], ["ax_dim"], name="gather_dim", axis=0),
        h.make_node("Sub", ["ax_dim", "ax_dim"], ["ax0"], name="zero_axis"),
        h.make_node("Unsqueeze", ["ax0", "zero_vec"], ["axes_rt"], name="axes_vec"),
        h.make_node("ReduceMean", ["img", "axes_rt"], ["rm_rt"], name="reducemean_runtime_axes", keepdims=1),
        h.make_node("ReduceMean", ["img", "axes_c"], ["rm_c"], name="reducemean_const_axes", keepdims=1),
        # TopK with a huge K, and a normal one.
        h.make_node("Reshape", ["img", "flat_shape"], ["flat"], name="flatten"),
        h.make_node("TopK", ["flat", "k_big"], ["tv_big", "ti_big"], name="topk_big", axis=1),
        h.make_node("TopK", ["flat", "k_small"], ["tv", "ti"], name="topk_small", axis=1),
        # MaxPool with the Indices output used.
        h.make_node("MaxPool", ["img"], ["mp", "mp_idx"], name="maxpool_indices", kernel_shape=[2, 2]),
        h.make_node("MaxPool", ["img"], ["mp2"], name="maxpool", kernel_shape=[2, 2]),
        # Unsupported standard ops.
        h.make_node("Det", ["sq"], ["det"], name="det"),
        h.make_node("Compress", ["flat", "mask"], ["cmp"], name="compress", axis=1),
        # Softmax, Where, Erf: plain.
        h.make_node("Softmax", ["flat"], ["sm"], name="softmax", axis=1),
        h.make_node("Erf", ["flat"], ["erf"], name="erf"),
    ]
    inits = [
        nh.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
        nh.from_array(np.array(1, np.int64), "idx1"),
        nh.from_array(np.array([0], np.int64), "zero_vec"),
        nh.from_array(np.array([2, 3], np.int64), "axes_c"),
        nh.from_array(np.array([1, -1], np.int64), "flat_shape"),
        nh.from_array(np.array([5000], np.int64), "k_big"),
        nh.from_array(np.array([10], np.int64), "k_small"),
        w("sq", 4, 4),
        nh.from_array(np.array([True, False] * 1024, np.bool_).reshape(2048), "mask"),
    ]
    outs = [
        "up_cubic",
        "up_lin",
        "rm_rt",
        "rm_c",
        "tv_big",
        "ti_big",
        "tv",
        "ti",
        "mp",
        "mp_idx",
        "mp2",
        "det",
        "cmp",
        "sm",
        "erf",
    ]
    return model(
        nodes,
        [h.make_tensor_value_info("img", f, [1, 2, 32, 32])],
        [h.make_value_info(o, onnx.TypeProto()) for o in outs],
        inits,
    )


def odd_models() -> dict[str, onnx.ModelProto]:
    """Odd inputs real exports bring: strings, bf16 casts, Q/DQ with and without a zero point,
    Loop and Scan bodies, an unknown standard-domain op, nodes out of topological order."""
    f, i64 = T.FLOAT, T.INT64
    vi = h.make_tensor_value_info
    out: dict[str, onnx.ModelProto] = {}
    out["string.onnx"] = model(
        [
            h.make_node("StringNormalizer", ["s"], ["n"], name="norm", case_change_action="LOWER"),
            h.make_node("Relu", ["x"], ["y"], name="relu"),
        ],
        [vi("s", T.STRING, [4]), vi("x", f, [4])],
        [vi("n", T.STRING, [4]), vi("y", f, [4])],
    )
    out["bf16.onnx"] = model(
        [
            h.make_node("Cast", ["x"], ["xb"], name="to_bf16", to=T.BFLOAT16),
            h.make_node("Relu", ["xb"], ["yb"], name="relu"),
            h.make_node("Cast", ["yb"], ["y"], name="to_f32", to=f),
        ],
        [vi("x", f, [4])],
        [vi("y", f, [4])],
    )
    qdq = [
        h.make_node("QuantizeLinear", ["x", "sc", "zp"], ["q"], name="q"),
        h.make_node("DequantizeLinear", ["q", "sc", "zp"], ["dq"], name="dq"),
        h.make_node("Relu", ["dq"], ["y"], name="relu"),
    ]
    for name, zp in (("qdq.onnx", 0), ("qdq_zero_point.onnx", 3)):
        out[name] = model(
            qdq,
            [vi("x", f, [4])],
            [vi("y", f, [4])],
            [nh.from_array(np.array(0.1, np.float32), "sc"), nh.from_array(np.array(zp, np.int8), "zp")],
        )
    body = h.make_graph(
        [
            h.make_node("Add", ["v_in", "one"], ["v_out"], name="body_add"),
            h.make_node("Identity", ["cond_in"], ["cond_out"], name="body_id"),
        ],
        "body",
        [vi("i", i64, []), vi("cond_in", T.BOOL, []), vi("v_in", f, [4])],
        [vi("cond_out", T.BOOL, []), vi("v_out", f, [4])],
    )
    out["loop.onnx"] = model(
        [h.make_node("Loop", ["trip", "cond", "x"], ["y"], name="loop", body=body)],
        [vi("x", f, [4])],
        [vi("y", f, [4])],
        [
            nh.from_array(np.array(3, np.int64), "trip"),
            nh.from_array(np.array(True), "cond"),
            nh.from_array(np.ones(4, np.float32), "one"),
        ],
    )
    sbody = h.make_graph(
        [
            h.make_node("Add", ["s_in", "x_t"], ["s_out"], name="scan_add"),
            h.make_node("Identity", ["s_out"], ["y_t"], name="scan_id"),
        ],
        "sbody",
        [vi("s_in", f, [2]), vi("x_t", f, [2])],
        [vi("s_out", f, [2]), vi("y_t", f, [2])],
    )
    out["scan.onnx"] = model(
        [h.make_node("Scan", ["s0", "xs"], ["s_final", "ys"], name="scan", body=sbody, num_scan_inputs=1)],
        [vi("s0", f, [2]), vi("xs", f, [5, 2])],
        [vi("s_final", f, [2]), vi("ys", f, [5, 2])],
    )
    out["unknown_op.onnx"] = model(
        [h.make_node("FrobnicateZ", ["x"], ["y"], name="frob")], [vi("x", f, [4])], [vi("y", f, [4])]
    )
    out["unsorted.onnx"] = model(
        [h.make_node("Relu", ["a"], ["y"], name="second"), h.make_node("Relu", ["x"], ["a"], name="first")],
        [vi("x", f, [4])],
        [vi("y", f, [4])],
    )
    return out


def agreement_models(folder: Path) -> list[Path]:
    """The models over which table-vs-parser agreement is measured: onnx's light models, ours, the sample."""
    from tests.bench import make_transformer

    paths = sorted(LIGHT_DIR.glob("*.onnx"))
    ours = {
        "five_node.onnx": five_node(),
        "repeated_nonzero.onnx": repeated_nonzero(),
        "uint64.onnx": uint64_model(),
        "if_custom.onnx": if_model("MyNms", "my.ops"),
        "if_nonzero.onnx": if_model("NonZero"),
        "functions.onnx": function_model(),
        "function_det.onnx": function_with_unsupported(),
        "restrictions.onnx": restrictions_model(),
        "transformer_split.onnx": make_transformer(600, 5),
    }
    ours.update(odd_models())
    for name, m in ours.items():
        paths.append(save(m, folder / name))
    paths.append(Path(__file__).resolve().parents[2] / "resources" / "sample.onnx")
    paths.extend(sorted((Path(__file__).resolve().parents[1] / "data").glob("*.onnx")))  # PyTorch exports
    return paths
