"""The light first pass: the structure read straight from the file matches the full load, on real exports."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest
from splitscope.engine.jobs import Partial, run_to_end
from splitscope.engine.onnxio.light import read_light
from splitscope.engine.sample import SAMPLE_MODEL
from splitscope.engine.split import preview as P
from splitscope.engine.split.analyze import analyze
from splitscope.engine.split.table import TARGET_RTX
from splitscope.engine.view.layout import prepare_view

from tests.engine import models as M

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = [
    DATA / "torch_transformer.onnx",  # TorchScript exporter: scopes in node names
    DATA / "torch_transformer_dynamo.onnx",  # dynamo exporter: scopes in metadata_props
    DATA / "decoder_kv_tiny.onnx",
    DATA / "torch_detector_if.onnx",  # If bodies (the light pass skips them)
    M.LIGHT_DIR / "light_resnet50.onnx",
    M.LIGHT_DIR / "light_inception_v2.onnx",
    SAMPLE_MODEL,
]


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.stem)
def test_columns_match_onnx_load(path):
    full = onnx.load(path, load_external_data=False).graph
    light = read_light(path)
    assert light is not None
    assert light.names == [n.name for n in full.node]
    assert light.ops == [n.op_type for n in full.node]
    assert light.domains == [n.domain for n in full.node]
    assert light.inputs == [list(n.input) for n in full.node]
    assert light.outputs == [list(n.output) for n in full.node]
    assert light.weights == {t.name for t in full.initializer}
    assert light.graph_inputs == [v.name for v in full.input]
    assert light.graph_outputs == [v.name for v in full.output]
    for i, n in enumerate(full.node):
        assert light.meta.get(i, {}) == {p.key: p.value for p in n.metadata_props}


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.stem)
def test_preview_has_the_full_models_scopes_order_and_first_view(path):
    made = P.preview_model(path, TARGET_RTX)
    assert made is not None
    gm, order = made
    assert gm.preview
    final = run_to_end(analyze(path, parser="table"))
    assert [n.scope for n in gm.nodes] == [n.scope for n in final.nodes]
    assert [n.op_type for n in gm.nodes] == [n.op_type for n in final.nodes]
    assert sorted(order) == list(range(len(final.nodes)))
    # Nodes without bodies or functions: the same neighbours as the full graph.
    plain = [i for i, n in enumerate(final.nodes) if not n.subgraphs and not n.implicit_inputs]
    for i in plain:
        assert set(gm.graph.adj.preds[i]) <= set(final.graph.adj.preds[i])
    early = run_to_end(prepare_view(gm, viewport=(1400, 860)))
    late = run_to_end(prepare_view(final, viewport=(1400, 860), like=early))
    # The full model opens the groups the preview had open, with the same labels.
    assert {early.hier.full_label(g) for g in early.layout.expanded} == {
        late.hier.full_label(g) for g in late.layout.expanded
    }


def test_preview_colours_each_op_by_the_table():
    gm, _ = P.preview_model(DATA / "torch_detector_if.onnx", TARGET_RTX)
    final = run_to_end(analyze(DATA / "torch_detector_if.onnx", parser="table"))
    plugin_ops = {n.op_type for n in gm.nodes if n.status.value == "plugin"}
    # The op-only answer may only miss restrictions that depend on attributes, types or bodies.
    assert plugin_ops <= {n.op_type for n in final.nodes if n.status.value == "plugin"}


def test_bad_bytes_give_no_preview_and_never_raise(tmp_path):
    data = (M.LIGHT_DIR / "light_resnet50.onnx").read_bytes()
    cases = {
        "empty": b"",
        "zeros": b"\x00" * 100,
        "half": data[: len(data) // 2],
        "text": b"not a model at all\n" * 10,
    }
    for name, blob in cases.items():
        p = tmp_path / f"{name}.onnx"
        p.write_bytes(blob)
        assert read_light(p) is None, name
        assert P.preview_model(p, TARGET_RTX) is None, name
    import random

    rng = random.Random(0)
    for k in range(200):  # fuzzed bytes: None or columns, never an exception
        b = bytearray(data[:20000])
        for _ in range(8):
            b[rng.randrange(len(b))] = rng.randrange(256)
        p = tmp_path / f"fuzz{k}.onnx"
        p.write_bytes(bytes(b))
        P.preview_model(p, TARGET_RTX)


def test_a_cycle_gives_no_preview(tmp_path):
    from onnx import TensorProto as T
    from onnx import helper as h

    g = h.make_graph(
        [h.make_node("Relu", ["b"], ["a"]), h.make_node("Relu", ["a"], ["b"])],
        "g",
        [],
        [h.make_tensor_value_info("b", T.FLOAT, [1])],
    )
    p = tmp_path / "cycle.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), p)
    assert P.preview_model(p, TARGET_RTX) is None


def test_preview_job_only_for_large_files_and_imports_no_onnx(tmp_path, monkeypatch):
    assert list(P.preview_job(SAMPLE_MODEL, "table")) == []  # small: the full load is as quick
    monkeypatch.setattr(P, "PREVIEW_MIN_BYTES", 0)
    events = list(P.preview_job(SAMPLE_MODEL, "table"))
    assert isinstance(events[-1], Partial) and events[-1].value.preview
    import subprocess

    code = (
        "import sys; from splitscope.engine.split import preview as P; P.PREVIEW_MIN_BYTES = 0; "
        f"list(P.preview_job({str(SAMPLE_MODEL)!r}, 'table')); print('onnx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False", "the light pass must not import ONNX (a second and a half before the first view)"


def test_a_mapped_file_reads_as_one_read_whole(monkeypatch):
    """Files past the read-whole size are mapped (their pages asked for ahead): the same columns."""
    from splitscope.engine.onnxio import light as L

    path = M.LIGHT_DIR / "light_resnet50.onnx"
    whole = read_light(path)
    monkeypatch.setattr(L, "_READ_WHOLE", 0)
    mapped = read_light(path)
    assert whole is not None and mapped is not None
    for column in ("names", "ops", "domains", "tensor_names", "weight_names", "graph_inputs", "graph_outputs"):
        assert getattr(mapped, column) == getattr(whole, column), column
    assert mapped.inputs == whole.inputs and mapped.outputs == whole.outputs
