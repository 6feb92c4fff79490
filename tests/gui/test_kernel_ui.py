"""The Kernel Workbench in the window: a job on the sample's custom op (the parser's answer with the generated
plugin, the planner taking it), a recorded H200 run shown with its plots, an NVRTC error marked at its line, and
a kernel file edited outside the window read back in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from splitscope.engine.kernel.results import KernelDoc

from tests.gui.conftest import wait_idle

ROOT = Path(__file__).resolve().parents[2]


def test_the_workbench_on_the_samples_custom_op(qtbot):
    pytest.importorskip("tensorrt_rtx", reason="the test extra installs TensorRT-RTX (its parser runs on the CPU)")
    from splitscope.gui.shell.window import MainWindow
    from splitscope.profiler.queue import DONE

    window = MainWindow(parser="rtx")  # the real parser: its answer with the plugin registered is the point
    qtbot.addWidget(window)
    window.resize(1200, 800)
    window.show()

    window.open_model(ROOT / "resources" / "sample.onnx")
    wait_idle(qtbot, window)
    ui = window.kernel_ui
    window.canvas.selected_node = next(n.index for n in window.graph_model.nodes if n.op_type == "DCNv4")
    jid = ui.start()
    q = window.controller.queue
    with qtbot.waitSignal(window.controller.kernel_ready, timeout=120000):
        qtbot.waitUntil(lambda: q.jobs[jid].state == DONE, timeout=120000)
    p = ui.panel
    assert "DCNv4" in p.title.text() and "mapped" in p.title.text() and "partitions 2 → 1" in p.title.text()
    assert 'extern "C" __global__ void kernel(' in p.editor.toPlainText()
    assert p.verdict.text().startswith("Not run: no GPU")  # said, not hidden
    assert window.controller.results.plugin_answers()["/neck/dcn/DCNv4"].how == "mapped"
    assert not hasattr(window.graph_model, "plugin_parser")  # kept with the results, not written onto the model
    assert window.controller.results.kernels[-1].nodes == ("/neck/dcn/DCNv4",)
    # The canvas after: coloured by the parser's answer (the status colours are before).
    assert window.controller.colour_mode == "plugin"
    heat = ui.after_heat(window.view)
    dcn = next(n.index for n in window.graph_model.nodes if n.op_type == "DCNv4")
    compress = next(n.index for n in window.graph_model.nodes if n.op_type == "Compress")
    assert heat is not None and heat.nodes[dcn] == 1.0 and heat.nodes[compress] == 2.0
    window.cancel_jobs()
    window.close()


def test_a_recorded_h200_run_and_a_compile_error(qtbot, window, tmp_path):
    from PySide6.QtCore import QSettings

    doc = json.loads((ROOT / "tests" / "data" / "kernel_fused_fast_h200.json").read_text())
    p = window.kernel_ui.panel
    p.set_result(KernelDoc.from_json(doc))
    k = doc["kernel"]
    assert p.verdict.text() == k["verdict"] and "NVIDIA H200" in p.numbers.text()
    xs, _ = p.curve.getData()
    assert len(xs) == len(k["times_ms"]) == k["iterations"]
    assert p.default_line.isVisible() and p.default_line.value() == pytest.approx(k["default_ms"])
    assert p.bars.opts["height"].sum() > 0 and p.error.isHidden()
    typo = json.loads((ROOT / "tests" / "data" / "kernel_typo_h200.json").read_text())  # NVRTC's real error
    p.set_result(KernelDoc.from_json(typo))
    assert not p.error.isHidden() and 'identifier "offset0" is undefined' in p.error.text()
    assert p.verdict.text().startswith("The kernel does not compile: line 19")
    (sel,) = p.editor.extraSelections()
    assert sel.cursor.blockNumber() == 18 and "offset0" in sel.cursor.block().text()
    # Edited in the user's editor: the file is watched and read back (not run again here: unchecked).
    ui = window.kernel_ui
    p.rerun.setChecked(False)
    cu = tmp_path / "mine.cu"
    cu.write_text("// v1\n")
    ui.watch(cu)
    ui._reload()
    assert p.editor.toPlainText() == "// v1\n"
    cu.write_text("// v2: edited outside\n")
    qtbot.waitUntil(lambda: p.editor.toPlainText() == "// v2: edited outside\n", timeout=60000)
    assert QSettings().fileName()  # the test's own settings folder (conftest), never the user's
