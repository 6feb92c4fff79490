"""What TensorRT did, in the window (pytest-qt, offscreen): importing an engine's files onto the open model,
the Engine panel, the precision / engine-layer / time colourings, the inspector's engine section, comparing
two engines, an engine without its model, and our own TensorRT-RTX build."""

from __future__ import annotations

from pathlib import Path

import pytest
from splitscope.profiler.queue import DONE

from tests.engine import trt_files
from tests.engine.models import LIGHT_DIR
from tests.gui.conftest import wait_idle

ROOT = Path(__file__).resolve().parents[2]
TRANSFORMER = ROOT / "tests" / "data" / "torch_transformer.onnx"
SAMPLES = ROOT / "tests" / "data" / "trex"  # TREx's TensorRT 8 samples (Apache-2.0; README.md there says where from)


def _wait_engine(qtbot, window, jid):  # type: ignore[no-untyped-def]
    q = window.controller.queue
    qtbot.waitUntil(lambda: q.jobs[jid].state == DONE and q.jobs[jid].meta.get("shown"), timeout=60000)


def test_import_onto_the_open_model_colours_and_inspects(qtbot, window, tmp_path):
    window.open_model(TRANSFORMER)
    wait_idle(qtbot, window)
    lp, pp, expect = trt_files.write(window.graph_model, tmp_path, "io_tensors", "encoder/layers.1/self_attn")
    ui = window.engine_ui
    _wait_engine(qtbot, window, ui.import_files([str(lp), str(pp)]))
    assert ui.panel.model.rowCount() == expect["layers"]
    assert "io_tensors" in ui.panel.title.text() and "fp32-island" in ui.panel.lint.toPlainText()
    heat = window.canvas.heat
    assert heat is not None and heat.items and {p for p, _ in heat.items} >= {"FP16", "FP32"}
    assert window.colours.actions["precision"].isChecked()
    ui_modes = window.colours.actions
    ui_modes["layer"].trigger()
    assert window.canvas.heat is not None and window.canvas.heat.palette
    ui_modes["engine-time"].trigger()
    assert window.canvas.heat is not None and not window.canvas.heat.palette
    # A node of a fused layer: the inspector names its layer, precision and time.
    node = window.engine_ui.data.mapping.layer_nodes[2][0]
    window.inspector.show_node(node)
    text = window.inspector.toPlainText()
    assert "Engine" in text and "FP16" in text and "ms" in text
    # Picking a layer row selects its nodes on the canvas.
    ui.panel.table.selectRow(0)
    assert window.canvas.highlight_nodes
    # Compare with the same model's TensorRT 10 engine.
    lp2, pp2, _ = trt_files.write(window.graph_model, tmp_path, "bindings", "encoder/layers.0/self_attn")
    jid = ui._submit("Compare", [str(lp2), str(pp2)], "compare")
    _wait_engine(qtbot, window, jid)
    assert ui.comparison is not None and ui.comparison.by_node
    assert window.canvas.heat is not None and window.canvas.heat.diverging
    ui.compare_dialog.close()


def test_an_engine_without_its_model_is_drawn_as_its_own_graph(qtbot, window):
    stem = "pytorch__resnet__A100__fp16__resnet.onnx.engine"
    window.engine_ui.import_files([str(SAMPLES / f"{stem}.graph.json"), str(SAMPLES / f"{stem}.profile.json")])
    wait_idle(qtbot, window)
    gm = window.graph_model
    assert len(gm.nodes) == 36 and all(n.status.value == "delegate" for n in gm.nodes)
    q = window.controller.queue
    qtbot.waitUntil(lambda: any(r.kind == "engine" and r.meta.get("shown") for r in q.jobs.values()), timeout=60000)
    doc = window.engine_ui.doc
    assert doc.mapped_layer_share == 1.0 and doc.total_layer_ms > 0
    assert window.canvas.heat is not None


def test_our_own_rtx_build_shows_its_layers(qtbot, window):
    pytest.importorskip("tensorrt_rtx", reason="tensorrt_rtx is not installed (the test extra installs it)")
    window.open_model(LIGHT_DIR / "light_squeezenet.onnx")
    wait_idle(qtbot, window)
    jid = window.engine_ui.build_rtx()
    _wait_engine(qtbot, window, jid)
    doc = window.engine_ui.doc
    assert doc.unmapped == 0 and (doc.mapped_data_node_share or 0) >= 0.8
    assert window.engine_ui.panel.model.rowCount() == len(doc.layers)


def test_an_engine_seen_alone_maps_onto_its_model_when_that_is_opened(qtbot, window, tmp_path):
    from splitscope.engine.split.analyze import analyze_model

    gm = analyze_model(TRANSFORMER, parser="table")
    lp, pp, _ = trt_files.write(gm, tmp_path, "bindings", "encoder/layers.1/self_attn")
    ui = window.engine_ui
    ui.import_files([str(lp), str(pp)])  # no model open: the engine's own graph
    q = window.controller.queue
    qtbot.waitUntil(lambda: ui.on_engine_graph and ui.doc is not None, timeout=60000)
    assert all(n.domain == "trt.engine" for n in window.graph_model.nodes)
    window.open_model(TRANSFORMER)
    wait_idle(qtbot, window)
    qtbot.waitUntil(
        lambda: (
            ui.doc is not None
            and ui.doc.mapped_data_node_share is not None
            and not ui.on_engine_graph
            and sum(r.kind == "engine" for r in q.jobs.values()) >= 2
        ),
        timeout=60000,
    )
    qtbot.waitUntil(
        lambda: (ui.doc.mapped_data_node_share or 0) > 0.5 and ui.data.gm is window.graph_model, timeout=30000
    )
