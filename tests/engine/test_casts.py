"""FP16 / BF16 mixed precision with casts, as TensorRT 11 wants it: where the casts go and what they are named,
what stays FP32 (by default, by the user, by the data), the emulated accuracy, and the CLI's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from splitscope.engine.calib import casts, qdq
from splitscope.engine.calib.calibrate import calibrate
from splitscope.engine.calib.emulation import emulate
from splitscope.engine.cli import main as cli
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import run_to_end
from splitscope.engine.onnxio import writer

from tests.engine.test_calib import DIMS, ROOT, TRANSFORMER, _cnn


def _mixed(path: Path, opset: int = 17) -> Path:
    """Conv → Relu → Resize (its scales are FP32 by the schema) → LayerNormalization → Conv, weights real."""
    rng = np.random.default_rng(2)
    inits = [
        numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3, "w1"),
        numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
        numpy_helper.from_array(np.ones(16, np.float32), "gamma"),
        numpy_helper.from_array(np.zeros(16, np.float32), "beta"),
        numpy_helper.from_array(rng.standard_normal((2, 4, 1, 1)).astype(np.float32), "w2"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Resize", ["r1", "", "scales"], ["up"], name="resize", mode="nearest"),
        helper.make_node("LayerNormalization", ["up", "gamma", "beta"], ["ln"], name="norm", axis=-1),
        helper.make_node("Conv", ["ln", "w2"], ["y"], name="conv2"),
    ]
    g = helper.make_graph(
        nodes,
        "mixed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 16, 16])],
        inits,
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), path)
    return path


def test_fp16_casts_sit_at_the_borders_and_carry_the_tensor_names(tmp_path):
    model = _mixed(tmp_path / "m.onnx")
    out = tmp_path / "m.fp16.onnx"
    res = run_to_end(calibrate(model, out, precision="fp16", samples=2))
    m = onnx.load(out)
    onnx.checker.check_model(m, full_check=True)
    nodes = {n.name: n for n in m.graph.node}
    inits = {i.name: i for i in m.graph.initializer}
    # The graph's inputs and outputs keep FP32; the first conv reads x through a Cast named after it.
    assert m.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert m.graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT
    assert nodes["conv1"].input[0] == "x_fp16" and nodes["x_Cast_fp16"].input[0] == "x"
    # Weights read only in FP16 are stored in FP16; Resize's scales stay FP32 (its schema says so).
    assert inits["w1"].data_type == TensorProto.FLOAT16 and inits["w2"].data_type == TensorProto.FLOAT16
    assert inits["scales"].data_type == TensorProto.FLOAT and nodes["resize"].input[2] == "scales"
    # LayerNormalization stays FP32 by default: its input is cast back, its own weights untouched.
    assert "norm" in res["excluded"] and "LayerNormalization" in res["kept_reasons"]["norm"]
    assert nodes["norm"].input[0] == "up_fp32" and nodes["up_Cast_fp32"].input[0] == "up"
    assert inits["gamma"].data_type == TensorProto.FLOAT
    # conv2 runs FP16 again; the graph output is made by a Cast that keeps the output's name.
    assert nodes["conv2"].input[0] == "ln_fp16" and nodes["conv2"].output[0] == "y_fp16"
    assert nodes["y_Cast_fp32"].output[0] == "y"
    assert set(res["quantized"]) == {"conv1", "relu1", "resize", "conv2"}
    assert res["casts"] == 4 and not res["emulated"] and res["precision"] == "fp16"
    assert res["accuracy_measured"] == {"how": "measured", "runtime": "ONNX Runtime CPU"}
    assert res["accuracy"]["y"]["snr_db"] > 40


def test_a_pin_to_fp16_overrides_the_default_keep(tmp_path):
    model = _mixed(tmp_path / "m.onnx")
    res = run_to_end(calibrate(model, tmp_path / "m.fp16.onnx", precision="fp16", samples=2, half=["norm"]))
    assert "norm" in res["quantized"] and "norm" not in res["excluded"]
    onnx.checker.check_model(onnx.load(tmp_path / "m.fp16.onnx"), full_check=True)


def test_what_the_review_found_writes_valid_onnx(tmp_path):
    """Unnamed nodes producing graph outputs, outputs of custom ops (unknown types), bool and index outputs,
    old models listing initializers as inputs, and tensors an If body reads."""
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_squeezenet.onnx"
    cases = [light, ROOT / "tests" / "data" / "torch_detector_if.onnx", ROOT / "resources" / "sample.onnx"]
    g = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("ArgMax", ["r"], ["am"], axis=1, keepdims=0),
            helper.make_node("MyOp", ["r"], ["c"], domain="my"),
            helper.make_node("MatMul", ["c", "w"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4]),
            helper.make_tensor_value_info("am", TensorProto.INT64, [2]),
        ],
        [numpy_helper.from_array(np.eye(4, dtype=np.float32), "w")],
    )
    odd = tmp_path / "odd.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my", 1)]), odd)
    for path in [*cases, odd]:
        for precision in ("fp16", "bf16"):
            m = onnx.load(path)
            m = m if precision == "fp16" else qdq._at_least(m, 22)
            out, _ = casts.apply(m, casts.plan(m, precision))
            onnx.checker.check_model(out, full_check=True)
    m = onnx.load(odd)
    p = casts.plan(m, "fp16")
    assert "r" in p.low and "y" not in p.low  # Relu reduced; the MatMul after the custom op (untyped) not
    assert "am" not in casts._reduced_outputs(m.graph, [casts._label(n) for n in m.graph.node], p)
    res = run_to_end(
        calibrate(
            ROOT / "tests" / "data" / "torch_two_stage_ort.onnx", tmp_path / "d.bf16.onnx", precision="bf16", samples=2
        )
    )
    assert res["accuracy"] and not res["stats_cached"]  # the emulation runs at the model's own opset


def test_fp16_keeps_in_fp32_what_overflows_on_the_data(tmp_path):
    big = numpy_helper.from_array(np.array(3e4, np.float32), "big")
    nodes = [
        helper.make_node("Mul", ["x", "big"], ["scaled"], name="scale"),
        helper.make_node("Relu", ["scaled"], ["r"], name="relu"),
        helper.make_node("Sigmoid", ["x"], ["s"], name="sig"),
        helper.make_node("Add", ["r", "s"], ["y"], name="add"),
    ]
    g = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
        [big],
    )
    model = tmp_path / "big.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), model)
    res = run_to_end(calibrate(model, tmp_path / "big.fp16.onnx", precision="fp16", samples=4))
    assert {"scale", "relu", "add"} <= set(res["excluded"]) and "sig" in res["quantized"]
    assert "calibration data" in res["kept_reasons"]["scale"]
    assert any("FP16's safe range" in n for n in res["notes"])
    assert res["accuracy"]["y"]["snr_db"] > 60  # what would overflow stayed FP32


def test_bf16_raises_the_opset_so_convolutions_run_in_bf16(tmp_path):
    out = tmp_path / "cnn.bf16.onnx"
    res = run_to_end(calibrate(_cnn(tmp_path / "cnn.onnx"), out, precision="bf16", samples=2))
    m = onnx.load(out)
    onnx.checker.check_model(m, full_check=True)
    assert next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")) >= 22
    assert {"conv1", "conv2", "fc"} <= set(res["quantized"])
    inits = {i.name: i for i in m.graph.initializer}
    assert inits["w1"].data_type == TensorProto.BFLOAT16
    w = numpy_helper.to_array(onnx.load(tmp_path / "cnn.onnx").graph.initializer[0])
    bits = np.frombuffer(inits["w1"].raw_data, np.uint16).astype(np.uint32) << 16
    assert np.allclose(bits.view(np.float32).reshape(w.shape), w, rtol=2**-8)  # round to nearest, 8-bit mantissa


def test_transformer_accuracy_fp16_beats_bf16_and_the_user_keep_holds(tmp_path):
    mm = next(n.name for n in onnx.load(TRANSFORMER).graph.node if n.op_type == "MatMul")
    r16 = run_to_end(calibrate(TRANSFORMER, tmp_path / "t16.onnx", precision="fp16", samples=2, dims=DIMS, keep=[mm]))
    rbf = run_to_end(calibrate(TRANSFORMER, tmp_path / "tbf.onnx", precision="bf16", samples=2, dims=DIMS))
    a16, abf = r16["accuracy"]["logits"], rbf["accuracy"]["logits"]
    assert a16["snr_db"] > 45 and abf["snr_db"] > 30 and a16["snr_db"] > abf["snr_db"] + 6
    assert mm in r16["excluded"] and r16["kept_reasons"][mm] == "kept by the user" and mm in rbf["quantized"]
    assert all("Softmax" in r or "Normalization" in r or "Reduce" in r for r in rbf["kept_reasons"].values())


def test_emulation_rounds_like_numpy():
    a = np.array([1.0, 1 + 2**-9, 1 + 3 * 2**-9, 70000.0, -3.14159], np.float32)
    assert np.array_equal(casts._low_array(a, "fp16"), np.clip(a, -65504, 65504).astype(np.float16).astype(np.float32))
    b = casts._low_array(a, "bf16")
    assert b[0] == 1.0 and b[1] == 1.0 and b[2] == 1 + 2**-7  # ties to even, 7 stored mantissa bits
    assert abs(b[4] - a[4]) < 2**-6


def test_cli_fp16_json(tmp_path):
    out, js = tmp_path / "t.fp16.onnx", tmp_path / "r.json"
    assert (
        cli(
            [
                "calibrate",
                str(TRANSFORMER),
                "--precision",
                "fp16",
                "--samples",
                "2",
                "--dim",
                "batch=4",
                "--dim",
                "seq=16",
                "--out",
                str(out),
                "--json",
                str(js),
                "--quiet",
            ]
        )
        == 0
    )
    doc = json.loads(js.read_text())
    assert doc["precision"] == "fp16" and doc["casts"] > 0 and doc["excluded"] and doc["tensors"] > 0
    assert {"snr_db", "cosine", "max_abs"} <= set(doc["accuracy"]["logits"])


def test_int8_with_nodes_pinned_to_fp16_builds_in_tensorrt_rtx(tmp_path):
    """One model mixing INT8 (Q/DQ), FP16 (casts) and FP32, as TensorRT 11's strong typing runs it."""
    model = _cnn(tmp_path / "cnn.onnx")
    out = tmp_path / "cnn.mixed.onnx"
    res = run_to_end(calibrate(model, out, precision="int8", samples=4, half=["conv2"]))
    m = onnx.load(out)
    onnx.checker.check_model(m, full_check=True)
    nodes = {n.name: n for n in m.graph.node}
    inits = {i.name: i for i in m.graph.initializer}
    assert res["half"]["nodes"] == ["conv2"] and res["half"]["precision"] == "fp16"
    assert "conv2" not in res["quantized"] and "conv2" not in res["excluded"] and "conv1" in res["quantized"]
    assert nodes["conv2"].input[0] == "r1_fp16" and inits["w2"].data_type == TensorProto.FLOAT16
    assert nodes["conv1"].input[1] == "w1_dequantized"  # conv1 stays INT8
    assert res["accuracy"]["y"]["snr_db"] > 20
    with pytest.raises(SplitscopeError, match="--keep 'nope': no node of that name"):
        run_to_end(calibrate(model, tmp_path / "x.onnx", precision="int8", half=["nope"]))
    pytest.importorskip("tensorrt_rtx", reason="tensorrt_rtx is not installed (the test extra installs it)")
    from splitscope.engine.runtime.trt import build_engine

    assert len(build_engine(out, "rtx", {})) > 10_000


def test_models_with_external_data_stay_external(tmp_path, monkeypatch):
    """A model over the size limit (lowered here, as a 2 GB model is too big for a test) is written with its
    weights in <out>.data beside it, and a model read with external data is calibrated from it."""
    import onnxruntime as ort

    src = onnx.load(_cnn(tmp_path / "cnn.onnx"))
    ext = tmp_path / "ext" / "cnn.onnx"
    ext.parent.mkdir()
    onnx.save(
        src,
        str(ext),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="cnn.weights",
        size_threshold=0,
    )
    monkeypatch.setattr(writer, "EXTERNAL_ABOVE", 100)
    for precision in ("int8", "fp16"):
        out = tmp_path / f"q.{precision}.onnx"
        res = run_to_end(calibrate(ext, out, precision=precision, samples=2))
        assert (tmp_path / f"q.{precision}.onnx.data").stat().st_size > 1000 and res["accuracy"]
        m = onnx.load(str(out), load_external_data=False)
        assert any(i.data_location == TensorProto.EXTERNAL for i in m.graph.initializer)
        if precision == "int8":
            ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])  # its data is found beside it
        assert not list(tmp_path.glob(".*staging"))


def test_a_one_row_gemm_with_bias_rounds_its_product_before_the_bias_as_onnx_runtime_cuda_does():
    """On an H200, ONNX Runtime CUDA's FP16 Gemm with a one-row A (a classifier at batch 1) writes the product in
    FP16, then adds the bias and rounds again (bit-identical to that, 0.8 dB below one rounding on ResNet-18):
    the emulation does the same at batch 1, and rounds once at batch 4, where the kernel does."""
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 256)).astype(np.float32) * 0.05
    b = rng.standard_normal(64).astype(np.float32) * 3
    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W", "B"], ["y"], name="fc", transB=1)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 256])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    p = casts.plan(m, "fp16")
    h = lambda a: a.astype(np.float16).astype(np.float32)  # noqa: E731
    for batch, twice in ((1, True), (4, False)):
        x = rng.standard_normal((batch, 256)).astype(np.float32)
        emu = emulate(m, p, {"batch": batch})
        got = ort.InferenceSession(emu.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        product = h(x) @ h(w).T
        want = h(h(product) + h(b)) if twice else h(product + h(b))
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-3)
        assert ("Add" in [n.op_type for n in emu.graph.node]) is twice


@pytest.mark.parametrize("opset", [9, 13])
def test_the_one_row_rule_holds_on_old_opsets_and_symbolic_batches(opset):
    """Gemm's C is required before opset 11 (the product keeps a zero one), and a batch dim not given is 1, as
    the accuracy run's feeds take it."""
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 8)).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "B")
    g = helper.make_graph(
        [helper.make_node("Gemm", ["x", "W", "B"], ["y"], name="fc", transB=1)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
        [w, b],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    emu = emulate(m, casts.plan(m, "fp16"))  # no dims: N is 1
    assert "Add" in [n.op_type for n in emu.graph.node]
    ort.InferenceSession(emu.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": np.ones((1, 8), np.float32)}
    )


def test_a_weight_fp16_cannot_hold_keeps_its_node_in_fp32():
    """PP-OCRv4's text detector: a BatchNormalization whose running variance is 1e8 (a Constant node, as Paddle
    writes weights). Stored in FP16 it is infinite, and ONNX Runtime's constant folding zeroed the output map."""
    c = numpy_helper.from_array(np.full(4, 9.8e7, np.float32), "var")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("Constant", [], ["var"], name="var_const", value=c),
        helper.make_node("BatchNormalization", ["c", "s", "b", "mean", "var"], ["y"], name="bn"),
    ]
    inits = [
        numpy_helper.from_array(np.ones((4, 3, 1, 1), np.float32), "w"),
        numpy_helper.from_array(np.ones(4, np.float32), "s"),
        numpy_helper.from_array(np.zeros(4, np.float32), "b"),
        numpy_helper.from_array(np.zeros(4, np.float32), "mean"),
    ]
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 4, 4])],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 12)])
    p = casts.plan(m, "fp16", default_keep=False)
    assert "conv" in p.low and "bn" in p.excluded and "'var' reaches 9.8e+07" in p.reasons["bn"]
