"""The input shapes in force drive every figure: concrete shapes at the given dims, exporters' dim expressions,
no dim silently 1, hints the model carries, and partitions that count what TensorRT builds."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from splitscope.engine.cli import main
from splitscope.engine.dims.expr import eval_dim, readable_dim
from splitscope.engine.model import Status
from splitscope.engine.split.analyze import analyze_model
from splitscope.engine.split.partitions import constant_nodes

from tests.engine.models import model, w

DATA = Path(__file__).resolve().parents[1] / "data"
TORCH_EXPR = "floor(height/2 - 1/2) + 1"


def _strided(meta: dict[str, str] | None = None, names: tuple[str, str, str] = ("batch", "height", "width")):
    """Conv 3x3 stride 2 (pad 1) then Conv 3x3 stride 2 and a global pool: the spatial dims are lost by plain
    shape inference on a symbolic input."""
    n, hh, ww = names
    m = model(
        [
            h.make_node("Conv", ["x", "w1", "b1"], ["a"], name="c1", strides=[2, 2], pads=[1, 1, 1, 1]),
            h.make_node("Relu", ["a"], ["r"], name="relu"),
            h.make_node("Conv", ["r", "w2"], ["c"], name="c2", strides=[2, 2], pads=[1, 1, 1, 1]),
            h.make_node("GlobalAveragePool", ["c"], ["y"], name="gap"),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [n, 3, hh, ww])],
        [h.make_tensor_value_info("y", T.FLOAT, [n, 16, 1, 1])],
        [w("w1", 8, 3, 3, 3), w("b1", 8), w("w2", 16, 8, 3, 3)],
    )
    for k, v in (meta or {}).items():
        m.metadata_props.add(key=k, value=v)
    return m


def _conv_flops(hh: int, ww: int) -> int:
    h1, w1 = (hh + 1) // 2, (ww + 1) // 2
    h2, w2 = (h1 + 1) // 2, (w1 + 1) // 2
    return 2 * 8 * h1 * w1 * 27 + 8 * h1 * w1 + 2 * 16 * h2 * w2 * 72


def test_exporter_expressions_are_evaluated_and_nothing_else():
    assert eval_dim(TORCH_EXPR, {"height": 320}) == 160
    assert eval_dim("(floor(floor(height/2 - 1/2)/2) + 1)*(floor(width/2 - 1/2) + 1)", {"height": 64, "width": 32}) == (
        16 * 16
    )
    assert eval_dim("Max(seq, 8) + past", {"seq": 4, "past": 3}) == 11
    assert eval_dim(TORCH_EXPR, {}) is None  # a dim without a value is unknown, never 1
    assert eval_dim("height", {}) is None
    for hostile in ("__import__('os').system('true')", "height.__class__", "[height]", "height**height**height"):
        assert eval_dim(hostile, {"height": 9}) is None
    assert readable_dim("floor(floor(floor(height/2 - 1/2)/2)/2) + 1") == "H/8"
    assert readable_dim("2*sequence") == "2·S"


def test_flops_follow_the_dims_given(save_model):
    p = save_model(_strided())
    at = {}
    for size in (64, 320):
        gm = analyze_model(p, parser="table", dims={"height": size, "width": size})
        convs = sum(n.flops or 0 for n in gm.nodes if n.op_type == "Conv")
        assert convs == _conv_flops(size, size)
        at[size] = gm.total_flops()
        c = gm.graph.tensors["c"]
        assert c.at == (1, 16, (size // 2 + 1) // 2, (size // 2 + 1) // 2) and c.numel(gm.dims) == math.prod(c.at)
    assert at[320] > 20 * at[64]
    assert gm.dim_notes == ["batch=1: batch-like, not given, taken as 1"] and not gm.missing_dims


def test_a_dim_without_a_value_leaves_its_costs_unknown(save_model):
    gm = analyze_model(save_model(_strided()), parser="table")
    assert gm.missing_dims == ["height", "width"] and gm.dims == {"batch": 1}
    assert all(n.flops is None for n in gm.nodes if n.op_type == "Conv")
    from splitscope.engine.report.stats import headline

    assert "unknown until given" in headline(gm)


def test_the_cli_refuses_a_missing_dim_naming_it_with_an_example(save_model, capsys, tmp_path):
    p = save_model(_strided())
    assert main(["analyze", str(p), "--parser", "table", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "height (x axis 2)" in err and "--dim height=640 --dim width=640" in err and "\n" not in err
    out = tmp_path / "a.json"
    assert main(["analyze", str(p), "--parser", "table", "-q", "--dim", "height=64", "--dim", "width=96"]) == 0
    assert (
        main(["analyze", str(p), "--parser", "table", "--dim", "height=64", "--dim", "width=96", "--json", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    assert "at x [1, 3, 64, 96]" in text and "batch=1: batch-like" in text
    import json

    doc = json.loads(out.read_text())
    assert doc["input_shapes"] == {"x": [1, 3, 64, 96]} and doc["missing_dims"] == []
    assert doc["flops"] == analyze_model(p, parser="table", dims={"height": 64, "width": 96}).total_flops()


def test_exporter_metadata_gives_the_image_size_and_says_so(save_model):
    gm = analyze_model(save_model(_strided({"imgsz": "[320, 256]"})), parser="table")
    assert gm.dims == {"batch": 1, "height": 320, "width": 256} and not gm.missing_dims
    assert "height=320 from the model's metadata (imgsz)" in gm.dim_notes
    assert sum(n.flops or 0 for n in gm.nodes if n.op_type == "Conv") == _conv_flops(320, 256)


def test_unnamed_and_placeholder_dims_are_named_by_their_place(save_model):
    """Paddle writes '?' for height and width alike: two different sizes, so each gets its own name."""
    m = _strided(names=("batch", "?", "?"))
    m.graph.input[0].type.tensor_type.shape.dim[0].Clear()
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1  # Paddle's dynamic batch
    p = save_model(m)
    gm = analyze_model(p, parser="table", dims={"x[2]": 48, "x[3]": 192})
    assert gm.graph.tensors["x"].shape == ("x[0]", 3, "x[2]", "x[3]")
    assert gm.dims == {"x[0]": 1, "x[2]": 48, "x[3]": 192}
    assert sum(n.flops or 0 for n in gm.nodes if n.op_type == "Conv") == _conv_flops(48, 192)


def test_constant_chains_are_folded_before_inference(save_model):
    """A Pad whose pads come from ConstantOfShape -> Concat -> Cast (silero's STFT): ONNX's own data propagation
    stops there, and the Conv after it would have no shape."""
    m = model(
        [
            h.make_node(
                "ConstantOfShape", ["two"], ["zeros"], value=onnx.numpy_helper.from_array(np.array([0], np.int64))
            ),
            h.make_node("Concat", ["zeros", "pad_end"], ["pads"], axis=0),
            h.make_node("Pad", ["x", "pads"], ["xp"], mode="reflect"),
            h.make_node("Unsqueeze", ["xp", "ax"], ["x3"]),
            h.make_node("Conv", ["x3", "k"], ["y"], strides=[4]),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, ["batch", "samples"])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [
            onnx.numpy_helper.from_array(np.array([2], np.int64), "two"),
            onnx.numpy_helper.from_array(np.array([0, 64], np.int64), "pad_end"),
            onnx.numpy_helper.from_array(np.array([1], np.int64), "ax"),
            w("k", 4, 1, 16),
        ],
    )
    gm = analyze_model(save_model(m), parser="table", dims={"samples": 512})
    assert gm.graph.tensors["y"].at == (1, 4, (512 + 64 - 16) // 4 + 1)
    assert gm.nodes[-1].flops == 2 * 4 * 141 * 16


def test_recost_at_new_dims_without_the_parser(save_model):
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.split.analyze import apply_dims

    gm = analyze_model(save_model(_strided()), parser="table", dims={"height": 64, "width": 64})
    first = gm.total_flops()
    gm.nodes[1].reason = "the parser's own words"  # what the first analysis found is kept
    new = run_to_end(apply_dims(gm, {"height": 128, "width": 128}, responsive=False))
    assert new is not gm and gm.dims["height"] == 64 and gm.total_flops() == first  # the one on screen untouched
    assert new.dims["height"] == 128 and new.total_flops() > 3 * first
    assert sum(n.flops or 0 for n in new.nodes if n.op_type == "Conv") == _conv_flops(128, 128)
    assert new.nodes[1].reason == "the parser's own words"


def _constant_fed_plugin():
    """x -> Relu -> MyOp(r, Constant-made scale) -> Relu: the Constant and its Mul make a constant subgraph."""
    return model(
        [
            h.make_node("Relu", ["x"], ["r"], name="r1"),
            h.make_node(
                "Constant", [], ["c"], name="const", value=onnx.numpy_helper.from_array(np.ones(4, np.float32))
            ),
            h.make_node("Mul", ["c", "two"], ["c2"], name="scale"),
            h.make_node("MyOp", ["r", "c2"], ["m"], name="plugin", domain="my.ops"),
            h.make_node("Relu", ["m"], ["y"], name="r2"),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
        [onnx.numpy_helper.from_array(np.full(4, 2, np.float32), "two")],
        extra_opsets={"my.ops": 1},
    )


def test_constant_only_subgraphs_are_weights_not_partitions(save_model):
    gm = analyze_model(save_model(_constant_fed_plugin()), parser="table")
    assert [n.status for n in gm.nodes].count(Status.PLUGIN) == 1
    assert constant_nodes(gm.graph, gm.order) == [False, True, True, False, False]
    assert [[gm.nodes[i].label for i in p.nodes] for p in gm.partitions] == [["r1"], ["r2"]]
    assert len(gm.parser_subgraphs) == 3  # the parser's raw list keeps the constant run as its own
    crossing = {t.name for p in gm.partitions for t in p.boundary_tensors}
    assert crossing == {"r", "m"}  # the constant's bytes never cross per inference


@pytest.mark.parametrize("name", ["torch_two_stage.onnx", "torch_detector_if.onnx"])
def test_exported_detectors_count_partitions_as_the_parser_minus_constants(name):
    pytest.importorskip("tensorrt_rtx", reason="the test extra installs TensorRT-RTX's parser")
    gm = analyze_model(DATA / name, parser="rtx")
    const = constant_nodes(gm.graph, gm.order)
    assert not any(all(const[i] for i in p.nodes) for p in gm.partitions)
    real = [sg for sg in gm.parser_subgraphs if not all(const[i] for i in sg)]
    assert len(gm.partitions) == len(real)
    assert sorted(i for p in gm.partitions for i in p.nodes) == sorted(i for sg in real for i in sg if not const[i])


def test_shape_labels_read_as_people_write_them(save_model):
    from splitscope.engine.text import shape_at, shape_label

    gm = analyze_model(save_model(_strided()), parser="table", dims={"height": 64, "width": 32})
    t = gm.graph.tensors["c"]
    t.shape = ("batch", 16, "floor(floor(height/2 - 1/2)/2) + 1", "unk__3")  # as a torch export writes them
    assert shape_label(t) == "[batch, 16, H/4, 8]" and shape_at(t) == "[1, 16, 16, 8]"
    assert shape_label(t, gm.dims) == "[1, 16, H/4, 8]"  # the batch at its value, the spatial dims as named
    t.shape = ("p2o.DynamicDimension.0", 16, "height", "x[3]")  # Paddle's and unnamed dims read as their values
    assert shape_label(t, {"p2o.DynamicDimension.0": 1, "height": 64, "x[3]": 8}) == "[1, 16, height, 8]"


def test_a_crafted_dim_expression_neither_hangs_nor_crashes():
    """A dim_param is any text an exporter (or an attacker) wrote: powers of powers stop at a bound."""
    assert eval_dim("(((((((((2**8)**8)**8)**8)**8)**8)**8)**8)**8)", {}) is None
    assert eval_dim("((10**8)**8)**8", {}) is None  # once an OverflowError outside the guard
    assert readable_dim("((10**8)**8)**8*height")  # a label, never an exception


def test_a_one_dim_input_is_its_length_not_a_batch(save_model):
    """An anonymous first axis is batch-like only on an input of two or more dims: a waveform's length is not."""
    from splitscope.engine.onnxio.concrete import batch_like

    assert batch_like("x[0]", 0, 4) and not batch_like("x[0]", 0, 1) and not batch_like("N", 1, 3)
    assert batch_like("batch_size", 1, 3)


def test_folding_never_builds_a_huge_constant():
    """A ConstantOfShape of [100000, 1000] fed by constants is left for inference, never run (400 MB)."""
    from splitscope.engine.onnxio.concrete import FoldBudget, fold_constants

    g = h.make_graph(
        [
            h.make_node("Concat", ["a", "b"], ["shape"], axis=0),
            h.make_node("ConstantOfShape", ["shape"], ["big"]),
            h.make_node("Add", ["x", "big"], ["y"]),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [100000, 1000])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [
            onnx.numpy_helper.from_array(np.array([100000], np.int64), "a"),
            onnx.numpy_helper.from_array(np.array([1000], np.int64), "b"),
        ],
    )
    budget = FoldBudget()
    assert fold_constants(g, 17, budget=budget) == 1  # the Concat folds
    assert [n.op_type for n in g.node] == ["Constant", "ConstantOfShape", "Add"] and "big" in budget.refused


def test_shapes_at_the_dims_from_the_side_process_equal_those_worked_here(save_model, monkeypatch):
    """With no parser process, inference at the dims runs in a child beside the graph's building: the same
    concrete shapes as inference in this process; a cancel while it runs leaves no child behind."""
    from splitscope.engine.errors import JobCancelledError
    from splitscope.engine.jobs import CancelToken, Progress
    from splitscope.engine.onnxio import shapes
    from splitscope.engine.onnxio.loader import load_model
    from splitscope.engine.split import analyze as analyze_mod

    p = save_model(_strided())
    started: list[shapes.ShapeChild] = []

    class Recorded(shapes.ShapeChild):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            started.append(self)

    monkeypatch.setattr(analyze_mod, "ShapeChild", Recorded)
    gm = analyze_model(p, parser="table", dims={"height": 96, "width": 64})
    assert [c.dims for c in started] == [{"height": 96, "width": 64, "batch": 1}]
    here = dict(gm.dims)
    from splitscope.engine.onnxio.graph import graph_from_onnx

    loaded = load_model(p)
    ref, _ = graph_from_onnx(loaded)
    ref.dims = here
    shapes.apply_shape_inference(ref, loaded)
    shapes.apply_concrete_shapes(ref, loaded.proto, here)
    assert {k: t.at for k, t in gm.graph.tensors.items()} == {k: t.at for k, t in ref.graph.tensors.items()}
    assert all(c._proc.poll() is not None for c in started)

    started.clear()
    cancel = CancelToken()
    job = analyze_mod.analyze(p, parser="table", dims={"height": 96, "width": 64}, cancel=cancel, responsive=False)
    with pytest.raises(JobCancelledError):
        for ev in job:
            if isinstance(ev, Progress) and ev.done == 2:  # "Inferring shapes": the side child is running
                cancel.cancel()
    assert started and all(c._proc.poll() is not None for c in started)


def test_a_shape_child_that_fails_or_is_killed_gives_no_answer(save_model, tmp_path):
    """The side child's answer is read into one buffer as it comes; a file it cannot read, or a child stopped
    midway, gives None (the analysis infers in its own process then), and the child is reaped."""
    from splitscope.engine.onnxio import shapes

    bad = tmp_path / "cut.onnx"
    bad.write_bytes(save_model(_strided()).read_bytes()[:40])
    child = shapes.ShapeChild(bad)
    assert child.result() is None and child._proc.poll() is not None
    child = shapes.ShapeChild(save_model(_strided()), {"height": 96, "width": 64, "batch": 1})
    child.kill()
    assert child.result() is None and child._proc.poll() is not None
    child = shapes.ShapeChild(save_model(_strided()), {"height": 96, "width": 64, "batch": 1})
    got = child.result()
    assert got is not None and {v.name for v in got[0].value_info} == {"a", "r", "c"}
    child = shapes.ShapeChild(save_model(_strided()), {"height": 96, "width": 64, "batch": 1})
    assert child._done.wait(60) and child._answer is not None
    child.kill()  # an answer read and not taken: let go of
    assert child._answer is None and child.result() is None
