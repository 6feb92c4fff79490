"""Remedies beside reasons, plugin nodes by cause, and a headline that leads with what matters."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from splitscope.engine.report.schema import to_json
from splitscope.engine.report.stats import headline
from splitscope.engine.split.analyze import analyze_model
from splitscope.engine.split.remedies import REMEDIES_PATH, load_remedies

from tests.engine.conftest import needs_rtx
from tests.engine.models import LIGHT_DIR, agreement_models, model, uint64_model

ROOT = Path(__file__).resolve().parents[2]


def test_every_remedy_names_its_source():
    data = json.loads(REMEDIES_PATH.read_text())
    ids = [e["id"] for e in data["remedies"]]
    assert len(ids) == len(set(ids))
    for e in data["remedies"]:
        assert e["cause"] and e["remedy"] and e["source"], e["id"]
    assert len(load_remedies()) == len(ids)


def test_sample_headline_leads_with_partitions_and_causes():
    gm = analyze_model(None, parser="table")
    text = headline(gm)
    assert text.startswith("2 engine partitions, 51.7 kB crossing their boundaries per inference")
    assert "a custom op (1 node: com.example.vision::DCNv4)" in text
    dcn = next(n for n in gm.nodes if n.op_type == "DCNv4")
    assert "TensorRT plugin" in dcn.remedy and dcn.cause == "a custom op"
    row = next(r for r in to_json(gm)["node_status"] if r["op_type"] == "DCNv4")
    assert row["remedy"] == dcn.remedy


def test_fully_supported_model_says_so():
    gm = analyze_model(LIGHT_DIR / "light_squeezenet.onnx", parser="table")
    assert headline(gm) == f"TensorRT takes all {len(gm.nodes)} nodes: one engine, nothing crosses a partition boundary"
    # A split of TensorRT-RTX (its parser's, or the table predicting it) names TensorRT-RTX, not TensorRT.
    gm.parser.target = "tensorrt-rtx"
    assert headline(gm).startswith(f"TensorRT-RTX takes all {len(gm.nodes)} nodes")
    gm.parser.name, gm.parser.target = "tensorrt-rtx", ""
    assert headline(gm).startswith(f"TensorRT-RTX takes all {len(gm.nodes)} nodes")


@needs_rtx
def test_detector_if_takes_the_cause_of_its_body():
    """TensorRT-RTX rejects the NonZero in the If's else branch (full TensorRT imports it)."""
    gm = analyze_model(ROOT / "tests" / "data" / "torch_detector_if.onnx", parser="rtx")
    node = next(n for n in gm.nodes if n.op_type == "If")
    assert node.cause.startswith("a data-dependent shape (NonZero) in its If body")
    assert "NonZero" in node.remedy


def test_sequence_ops_point_to_the_optimizer(save_model):
    m = model(
        [
            h.make_node("SplitToSequence", ["x"], ["s"], name="split", axis=0),
            h.make_node("ConcatFromSequence", ["s"], ["y"], name="concat", axis=0),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [4, 2])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    gm = analyze_model(save_model(m), parser="table")
    assert all(n.cause == "sequence ops from a raw export" for n in gm.nodes)
    assert "optimize" in gm.nodes[0].remedy


def test_uint64_and_headline_plurals(save_model):
    gm = analyze_model(save_model(uint64_model()), parser="table")
    plugin = [n for n in gm.nodes if n.remedy]
    assert plugin and all("type TensorRT does not have" in n.cause for n in plugin)
    with tempfile.TemporaryDirectory() as d:
        for p in agreement_models(Path(d)):
            text = headline(analyze_model(p, parser="table"))
            assert "(s)" not in text and " 1 nodes" not in text and "1 partitions" not in text, text


def test_constant_axes_cause(save_model):
    m = model(
        [
            h.make_node("Shape", ["x"], ["s"], name="shape"),
            h.make_node("ReduceMean", ["x", "s"], ["y"], name="reduce", keepdims=1),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [nh.from_array(np.zeros(1, np.float32), "unused")],
        opset=18,
    )
    gm = analyze_model(save_model(m), parser="table")
    reduce = next(n for n in gm.nodes if n.name == "reduce")
    if reduce.remedy:  # the table rejects run-time axes
        assert "fold constants" in reduce.remedy
