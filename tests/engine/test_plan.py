"""The what-if planner on real models: its recomputed partitions and boundary bytes against the real
TensorRT-RTX parser on the model edited by hand the same way, the shipped-plugin match on the sample and on a
detector, latency ranges from a real profile, and scenarios saved with the model's session."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper
from splitscope.engine.jobs import run_to_end
from splitscope.engine.plan.catalog import catalog, match
from splitscope.engine.plan.scenario import PLANS, Scenario, evaluate, items
from splitscope.engine.plan.store import load_scenarios, save_scenarios
from splitscope.engine.runtime.results import ProfileDoc
from splitscope.engine.sample import SAMPLE_MODEL
from splitscope.engine.split.analyze import analyze_model

ROOT = Path(__file__).resolve().parents[2]
TWO_STAGE = ROOT / "tests" / "data" / "torch_two_stage.onnx"
TWO_STAGE_ORT = ROOT / "tests" / "data" / "torch_two_stage_ort.onnx"


def _rtx():
    pytest.importorskip("tensorrt_rtx", reason="tensorrt_rtx is not installed (the test extra installs it)")


def _replace_roialign(src: Path, dst: Path) -> Path:
    """The hand edit: RoiAlign becomes ops TensorRT takes, with the same output shape (pool, then expand)."""
    m = onnx.shape_inference.infer_shapes(onnx.load(src))
    g = m.graph
    k, n = next((k, n) for k, n in enumerate(g.node) if n.op_type == "RoiAlign")
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in g.value_info}
    out = shapes[n.output[0]]
    g.initializer.append(onnx.numpy_helper.from_array(__import__("numpy").array(out, dtype="int64"), "crop_shape"))
    new = [
        helper.make_node(
            "AveragePool", [n.input[0]], ["pooled"], name="/RoiAlign_pool", kernel_shape=[2, 2], strides=[2, 2]
        ),
        helper.make_node("Expand", ["pooled", "crop_shape"], [n.output[0]], name="/RoiAlign_expand"),
    ]
    del g.node[k]
    for j, x in enumerate(new):
        g.node.insert(k + j, x)
    while True:  # what fed only the RoiAlign's boxes and batch indices is dead now: an editor removes it
        used = {i for x in g.node for i in x.input} | {o.name for o in g.output}
        dead = [x for x in g.node if not any(o in used for o in x.output)]
        if not dead:
            break
        for x in dead:
            g.node.remove(x)
    onnx.save(m, dst)
    return dst


def test_planner_partitions_and_bytes_equal_the_real_parser_on_the_hand_edited_model(tmp_path):
    _rtx()
    gm = analyze_model(TWO_STAGE_ORT, parser="rtx")
    today = evaluate(gm, Scenario("today"))
    assert today.partitions == len(gm.partitions) and today.boundary_bytes == gm.boundary_bytes
    plan = evaluate(gm, Scenario("plugin", {"/RoiAlign": "shipped-plugin"}))
    edited = analyze_model(_replace_roialign(TWO_STAGE_ORT, tmp_path / "edited.onnx"), parser="rtx")
    assert edited.parser.name == "tensorrt-rtx" and not [n for n in edited.nodes if n.status.value == "plugin"]
    assert plan.partitions == len(edited.partitions) < today.partitions
    assert plan.boundary_bytes == edited.boundary_bytes < today.boundary_bytes


def test_the_sample_made_supported_by_hand_agrees_with_the_planner(tmp_path):
    _rtx()
    gm = analyze_model(SAMPLE_MODEL, parser="rtx")
    plan = evaluate(gm, Scenario("A", {"/neck/dcn/DCNv4": "write-plugin"}))
    m = onnx.load(SAMPLE_MODEL)
    for n in m.graph.node:  # DCNv4 keeps its input's shape: an Identity stands for it, as the planner assumes
        if n.op_type == "DCNv4":
            n.op_type, n.domain = "Identity", ""
            del n.input[1:]
            del n.attribute[:]
    onnx.save(m, tmp_path / "edited.onnx")
    edited = analyze_model(tmp_path / "edited.onnx", parser="rtx")
    assert plan.partitions == len(edited.partitions) == 1
    assert plan.boundary_bytes == edited.boundary_bytes
    assert plan.custom_work == ("/neck/dcn/DCNv4",)


def test_shipped_plugin_matches_on_the_sample_and_a_detector():
    sample = {it.key: it for it in items(analyze_model(SAMPLE_MODEL, parser="table"))}
    dcn = sample["/neck/dcn/DCNv4"]
    assert [(m["plugin"], m["kind"]) for m in dcn.matches] == [("ModulatedDeformConv2d", "related")]
    assert "shipped-plugin" in dcn.options and "v4 differ" in dcn.matches[0]["note"]
    assert not sample["/postprocess/threshold/Compress"].matches  # nothing ships for Compress
    assert "shipped-plugin" not in sample["/postprocess/threshold/Compress"].options
    det = {it.key: it for it in items(analyze_model(TWO_STAGE, parser="table"))}
    assert "/RoiAlign" not in det  # the support table says TensorRT takes RoiAlign ...
    _rtx()
    det = {it.key: it for it in items(analyze_model(TWO_STAGE, parser="rtx"))}  # ... TensorRT-RTX has no plugin
    assert det["/RoiAlign"].matches[0]["plugin"] == "ROIAlign_TRT" and det["/RoiAlign"].matches[0]["kind"] == "op"
    nms = det["/EfficientNMS_TRT"].matches[0]
    assert (nms["plugin"], nms["kind"], nms["folder"]) == ("EfficientNMS_TRT", "exact", "plugin/efficientNMSPlugin")
    # The table is the README's: every plugin named once, with its folder.
    names = [p.name for p in catalog()]
    assert len(names) == len(set(names)) >= 45 and all(p.folder.startswith("plugin/") for p in catalog())
    assert match("NonMaxSuppression")[0].plugin.name == "EfficientNMS_TRT"  # the live one before the deprecated
    assert match("Relu") == []


def test_latency_ranges_come_from_a_real_profile(tmp_path):
    from splitscope.engine.runtime.profile import profile

    _rtx()
    gm = analyze_model(TWO_STAGE_ORT, parser="rtx")
    prof = ProfileDoc.from_json(
        run_to_end(profile(TWO_STAGE_ORT, gm, iterations=20, warmup=3, profiled=5, telemetry=False)).to_json()
    )
    its = items(gm)
    today = evaluate(gm, Scenario("today"), prof, its)
    assert today.latency.low_ms == today.latency.high_ms == today.latency.today_ms
    inside = evaluate(gm, Scenario("A", {"/RoiAlign": "write-plugin"}), prof, its).latency
    roi_ms = next(r["ms"] for r in prof.json["per_node"] if r["name"] == "/RoiAlign")
    node_total = sum(r["ms"] for r in prof.json["per_node"])
    lat = today.latency.today_ms
    fit = min(1.0, lat / node_total)  # node times scaled into the timed latency when they add up to more
    assert inside.high_ms == lat  # a kernel no better than today's
    assert inside.low_ms == pytest.approx(lat - roi_ms * fit, abs=1e-3) and inside.low_ms > 0  # no peaks
    assert "no GPU peaks" in inside.parts[0].source and "measured mean latency" in inside.source
    host = evaluate(gm, Scenario("B", {"/RoiAlign": "host"}), prof, its)
    assert host.host_bytes > 0 and host.latency.parts[0].source == "measured on the CPU"
    # Both ways: RoiAlign pulls its features and boxes from the GPU and pushes its pooled features back.
    assert host.host_bytes_d2h > 0 and host.host_bytes_h2d > 0
    assert host.host_bytes == host.host_bytes_d2h + host.host_bytes_h2d
    assert "assumed" in host.copy_source and host.partitions == today.partitions


def test_scenarios_are_saved_with_the_models_session(tmp_path):
    scenarios = [
        Scenario("plan A", {"/neck/dcn/DCNv4": "write-plugin"}),
        Scenario("plan B", {"/neck/dcn/DCNv4": "shipped-plugin", "/postprocess/threshold/Compress": "host"}),
    ]
    save_scenarios(SAMPLE_MODEL, scenarios)
    back = load_scenarios(SAMPLE_MODEL)
    assert [s.to_json() for s in back] == [s.to_json() for s in scenarios]
    other = tmp_path / "other.onnx"
    other.write_bytes(SAMPLE_MODEL.read_bytes() + b"\0")  # a different model: its own, empty session
    assert load_scenarios(other) == []
    assert set(PLANS) >= {"write-plugin", "shipped-plugin", "outside-gpu", "host", "replace"}


def test_a_plan_not_offered_for_an_item_falls_back_to_today(tmp_path):
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="r")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    path = tmp_path / "tiny.onnx"
    onnx.save(helper.make_model(g), path)
    gm = analyze_model(path, parser="table")
    doc = evaluate(gm, Scenario("x", {"nope": "host"}))
    assert doc.partitions == 1 and doc.plans == {}


def test_the_decision_in_one_sentence():
    from splitscope.engine.plan.scenario import decision

    gm = analyze_model(SAMPLE_MODEL, parser="table")
    its = items(gm)
    today = evaluate(gm, Scenario("today"), None, its)
    assert decision(its, today) == "2 ops need custom CUDA; TensorRT ships a related plugin for 1."
    plan = evaluate(gm, Scenario("plan A", {"/neck/dcn/DCNv4": "write-plugin"}), None, its)
    assert decision(its, today, plan) == (
        "2 ops need custom CUDA; TensorRT ships a related plugin for 1; plan A "
        "writes 1 plugin, removes 1 partition boundary and takes the bytes "
        "crossing engines from 51.7 kB to 500 B per inference."
    )
    prof = {
        "latency_ms": {"mean": 6.1},
        "backend": "ort-cuda",
        "device": "GPU",
        "per_node": [{"name": "/neck/dcn/DCNv4", "ms": 0.9, "sol_ms": 0.1}],
    }
    with_time = evaluate(gm, Scenario("plan A", {"/neck/dcn/DCNv4": "write-plugin"}), ProfileDoc.from_json(prof), its)
    assert with_time.latency.saves_at_most_ms == pytest.approx(0.8)
    assert decision(its, today, with_time).endswith("saves at most 0.8 ms of 6.1 ms.")


def test_milliseconds_read_as_people_write_them():
    from splitscope.engine.plan.scenario import fmt_ms

    assert [fmt_ms(v) for v in (120.4, 46.0, 6.1, 0.38, 0.004)] == ["120 ms", "46 ms", "6.1 ms", "0.38 ms", "4 µs"]
