"""The view model on real exports: constants folded into their consumers, unscoped nodes in their consumers'
scope, long runs of layers grouped, and a first view that is readable when fitted."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto as T
from onnx import helper as h
from splitscope.engine.jobs import run_to_end
from splitscope.engine.split.analyze import analyze_model
from splitscope.engine.view.hierarchy import MAX_CHILDREN, build_hierarchy, effective_scopes
from splitscope.engine.view.layout import (
    FIRST_VIEW_ITEMS,
    KIND_FRAME,
    MIN_LABEL_SCALE,
    OPEN_FROM,
    fitted_scale,
    prepare_view,
)

from tests.engine.models import model

ROOT = Path(__file__).resolve().parents[2]
EXPORTS = [ROOT / "resources" / "sample.onnx", *(ROOT / "tests" / "data").glob("*.onnx")]


def test_weight_aliases_fold_into_their_consumers():
    gm = analyze_model(ROOT / "tests" / "data" / "torch_transformer.onnx", parser="table")
    hier = build_hierarchy(gm, gm.order, shapes=False)
    assert len(hier.folded) >= 100  # the TorchScript exporter's row of weight-aliasing Identity nodes
    for node, host in hier.folded.items():
        assert host not in hier.folded
        assert gm.nodes[node].op_type in (
            "Identity",
            "Constant",
            "ConstantOfShape",
            "Cast",
            "Reshape",
            "Unsqueeze",
            "Squeeze",
            "Transpose",
            "CastLike",
        )
    assert len(hier.root.nodes) <= 3
    # Unfolded, every node is laid out again.
    assert not build_hierarchy(gm, gm.order, fold=False).folded


def test_shape_arithmetic_folds_into_its_consumer():
    gm = analyze_model(ROOT / "tests" / "data" / "torch_transformer.onnx", parser="table")
    hier = build_hierarchy(gm, gm.order)
    consts = build_hierarchy(gm, gm.order, shapes=False).folded
    shape_only = set(hier.folded) - set(consts)
    assert {gm.nodes[i].op_type for i in shape_only} >= {"Shape", "Gather", "Concat"}
    tensors = gm.graph.tensors
    for i in shape_only:  # nothing of the input data reaches a folded node, only shapes and constants
        n = gm.nodes[i]
        if n.op_type in ("Shape", "Size"):
            continue
        for name in filter(None, n.inputs):
            t = tensors[name]
            assert t.is_initializer or t.producer in hier.folded, (n.name, name)
    # The data path stays: every MatMul and Softmax is laid out.
    assert not any(gm.nodes[i].op_type in ("MatMul", "Softmax") for i in hier.folded)


def test_an_unscoped_node_joins_its_consumers_scope(save_model):
    m = model(
        [
            h.make_node("Relu", ["x"], ["a"], name="loose"),
            h.make_node("Relu", ["a"], ["b"], name="/enc/layer.0/r1"),
            h.make_node("Relu", ["a"], ["c"], name="/enc/layer.0/r2"),
            h.make_node("Add", ["b", "c"], ["y"], name="/enc/layer.0/add"),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, [4])],
    )
    gm = analyze_model(save_model(m), parser="table")
    assert effective_scopes(gm, gm.order)[0] == ("enc", "layer.0")


def test_hundreds_of_layers_are_grouped_into_runs(tmp_path):
    import onnx

    from tests.bench import make_transformer

    path = tmp_path / "layers_5k.onnx"
    onnx.save(make_transformer(5000), path)
    gm = analyze_model(path, parser="table")
    hier = build_hierarchy(gm, gm.order)
    assert max(len(g.groups) for g in hier.groups if g.parent != -1) <= MAX_CHILDREN
    assert any(" … " in g.label for g in hier.groups)


def test_first_views_of_real_exports_are_readable():
    for p in EXPORTS:
        gm = analyze_model(p, parser="table")
        view = run_to_end(prepare_view(gm, viewport=(750, 590)))
        layout = view.layout
        plugin = [n.index for n in gm.nodes if n.status.value == "plugin"]
        assert all(layout.node_item[i] >= 0 for i in plugin), p.name  # every plugin node shown or in a block
        assert layout.size <= FIRST_VIEW_ITEMS, p.name
        # Readable when fitted; or opened to 8 items or more (3 below OPEN_FROM nodes; the canvas then opens at a
        # readable zoom on the part that decides: tests/gui/test_window.py checks the labels on screen).
        items = sum(1 for k in layout.kind if k != KIND_FRAME)
        readable = fitted_scale(layout, (750, 590)) >= MIN_LABEL_SCALE
        assert readable or items >= (8 if len(gm.nodes) >= OPEN_FROM else 3), p.name


def test_partitions_are_known_at_the_level_shown():
    gm = analyze_model(ROOT / "resources" / "sample.onnx", parser="table")
    assert len(gm.partitions) == 2
    view = run_to_end(prepare_view(gm, viewport=(750, 590)))
    a = view.layout.arrays
    shown = {int(lo) for lo in a["part_lo"] if lo >= 0}
    assert shown == {0, 1}  # both engines outlined in the first view
    # An item's range covers every partition of the nodes it shows.
    for i, item in enumerate(view.layout.node_item):
        part = next((k for k, p in enumerate(gm.partitions) if i in p.nodes), None)
        if part is not None and item >= 0:
            assert a["part_lo"][item] <= part <= a["part_hi"][item]


def test_numbered_layers_keep_their_scope_and_runs_say_what_they_hold(tmp_path):
    """An Ultralytics export: model.0 ... model.22, several of them one node (an Upsample, a Concat). Each keeps
    its own group, and a run of layers is labelled by the first and last it holds (never model.0 … model.19
    holding model.22)."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from splitscope.engine.split.analyze import analyze_model
    from splitscope.engine.view.hierarchy import build_hierarchy, run_label

    assert run_label(["model.16", "model.22", "model.17"]) == "model.16 … model.22"
    assert run_label(["model.21"]) == "model.21"
    nodes, x = [], "x"
    for i in range(30):
        for k in range(1 if i % 3 else 2):  # every third layer has two nodes, the rest one
            nodes.append(h.make_node("Relu", [x], [f"t{i}_{k}"], name=f"/model.{i}/act{k}/Relu"))
            x = f"t{i}_{k}"
    g = h.make_graph(
        nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 4])], [h.make_tensor_value_info(x, T.FLOAT, [1, 4])]
    )
    p = tmp_path / "layers.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), p)
    gm = analyze_model(p, parser="table")
    hier = build_hierarchy(gm, gm.order)
    labels = {grp.label for grp in hier.groups if grp.parent != -1}
    assert {f"model.{i}" for i in range(30)} <= labels  # one-node layers too
    root = hier.groups[0]
    assert not root.nodes  # nothing left loose at the top
    for c in root.groups:
        held = sorted(int(hier.groups[k].label.split(".")[1]) for k in hier.groups[c].groups) or [
            int(hier.groups[c].label.split(".")[1])
        ]
        assert hier.groups[c].label in (f"model.{held[0]} … model.{held[-1]}", f"model.{held[0]}")


def test_a_root_that_holds_nearly_everything_is_opened(tmp_path):
    """A Hugging Face export's whole network under one root scope (``model``, then ``lm_head``): the first view
    shows at least 8 items at any viewport, never the two boxes."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.split.analyze import analyze_model
    from splitscope.engine.view.layout import prepare_view

    nodes, x = [], "x"
    for layer in range(30):
        for k, op in enumerate(["Relu", "Sigmoid", "Tanh", "Relu", "Neg"] * 8):
            y = f"t{layer}_{k}"
            nodes.append(h.make_node(op, [x], [y], name=f"/model/layers.{layer}/mlp/{op}_{k}"))
            x = y
    nodes.append(h.make_node("Relu", [x], ["y"], name="/lm_head/Relu"))
    g = h.make_graph(
        nodes, "g", [h.make_tensor_value_info("x", T.FLOAT, [1, 8])], [h.make_tensor_value_info("y", T.FLOAT, [1, 8])]
    )
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(tmp_path / "m.onnx"))
    gm = analyze_model(tmp_path / "m.onnx", parser="table")
    assert len(gm.nodes) > 1000
    for viewport in ((600, 400), (900, 520), (1600, 1000)):
        view = run_to_end(prepare_view(gm, viewport=viewport))
        assert len(view.layout.kind) >= 8, viewport


def test_a_small_model_in_one_scope_opens_on_what_is_inside(tmp_path):
    """A JAX export holds every node in one function's scope: its first view is never that one box."""
    nodes, ends = [], []
    fn = "jax2tf_get_logits_/pjit_get_logits_"
    for b in range(6):  # branches side by side, each a scope of the one function
        prev = "x"
        for i in range(15):
            nodes.append(h.make_node("Relu", [prev], [f"t{b}_{i}"], name=f"{fn}/branch{b}/relu_{i}"))
            prev = f"t{b}_{i}"
        ends.append(prev)
    nodes.append(h.make_node("Concat", ends, ["y"], name=f"{fn}/concat", axis=1))
    path = tmp_path / "one_scope.onnx"
    io = [h.make_tensor_value_info("x", T.FLOAT, [1, 8])], [h.make_tensor_value_info("y", T.FLOAT, [1, 48])]
    onnx.save(model(nodes, *io), path)
    gm = analyze_model(path, parser="table")
    assert len(gm.nodes) < OPEN_FROM
    view = run_to_end(prepare_view(gm, viewport=(950, 410)))  # the canvas of a 1366x768 window
    items = sum(1 for k in view.layout.kind if k != KIND_FRAME)
    assert items >= 3
