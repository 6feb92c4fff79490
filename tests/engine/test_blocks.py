"""Repeated blocks found by structure in models exported without name scopes (the ONNX model zoo's
ResNet-50 and DenseNet-121 that ship with ``onnx``), and tall chains wrapped into columns."""

from __future__ import annotations

from pathlib import Path

import pytest
from splitscope.engine.jobs import run_to_end
from splitscope.engine.split.analyze import analyze_model
from splitscope.engine.view.blocks import find_repeats
from splitscope.engine.view.hierarchy import build_hierarchy
from splitscope.engine.view.layout import FIRST_VIEW_ITEMS, MIN_LABEL_SCALE, _columns, fitted_scale, prepare_view

from tests.engine.models import LIGHT_DIR

ROOT = Path(__file__).resolve().parents[2]


def _repeats(hier) -> dict[str, list[int]]:  # type: ignore[no-untyped-def]
    """Label of each ``… ×N`` group: the node counts of its blocks."""
    return {g.label: [hier.groups[c].size for c in g.groups] for g in hier.groups if g.parent != -1 and "×" in g.label}


def test_a_tandem_repeat_is_found_with_its_period_count_and_boundary():
    unit = ["LayerNormalization", "MatMul", "Softmax", "MatMul", "Add", "MatMul", "Relu", "MatMul", "Add"]
    ops = ["Gather", "Mul"] + unit * 6 + ["LayerNormalization", "MatMul"]
    # Edges: a chain, plus the residual stream skipping each half of each block.
    edges = [(i, i + 1) for i in range(len(ops) - 1)]
    for b in range(6):
        s = 2 + 9 * b
        edges += [(s - 1, s + 4), (s + 4, s + 8)]
    (rep,) = find_repeats(ops, edges)
    assert (rep.period, rep.count) == (9, 6)
    assert rep.start == 2  # starts at the block's first op, where one tensor crosses


def test_no_repeat_in_a_sequence_without_one():
    assert find_repeats([f"Op{i}" for i in range(200)], []) == []
    assert find_repeats(["Relu"] * 3, []) == []


def test_densenet_dense_blocks_are_found_by_structure():
    gm = analyze_model(LIGHT_DIR / "light_densenet121.onnx", parser="table")
    assert not any(n.scope for n in gm.nodes)  # exported without scopes
    reps = _repeats(build_hierarchy(gm, gm.order))
    # DenseNet-121's four dense blocks have 6, 12, 24 and 16 layers.
    counts = sorted(int(label.rsplit("×", 1)[1]) for label in reps)
    assert counts == [6, 12, 16, 24]
    assert all(label.startswith("Conv block") for label in reps)


def test_resnet_bottlenecks_are_blocks_and_the_first_view_is_readable():
    gm = analyze_model(LIGHT_DIR / "light_resnet50.onnx", parser="table")
    hier = build_hierarchy(gm, gm.order)
    reps = _repeats(hier)
    assert "Conv block ×5" in reps  # stage 3: a downsampling block, then five identical bottlenecks
    assert len(set(reps["Conv block ×5"])) == 1
    assert len(hier.root.groups) + len(hier.root.nodes) <= 20
    view = run_to_end(prepare_view(gm, viewport=(750, 590)))
    assert view.layout.size <= FIRST_VIEW_ITEMS
    assert fitted_scale(view.layout, (750, 590)) >= MIN_LABEL_SCALE


@pytest.mark.parametrize("name", ["torch_transformer.onnx", "torch_transformer_dynamo.onnx"])
def test_scoped_exports_keep_their_scopes(name):
    gm = analyze_model(ROOT / "tests" / "data" / name, parser="table")
    assert not _repeats(build_hierarchy(gm, gm.order))


def test_a_tall_chain_wraps_into_columns_and_a_short_one_does_not():
    assert _columns([64.0] * 40, 210.0) >= 3
    assert _columns([64.0] * 4, 210.0) == 1
    assert _columns([64.0] * 12, 2000.0) == 1  # already wide


@pytest.mark.parametrize("name", ["light_resnet50", "light_densenet121"])
def test_a_group_of_equal_blocks_says_how_many_and_how_large(name):
    """What a card's subtitle reads (``5 × 10 nodes``): blocks of one label may differ in size between groups."""
    gm = analyze_model(LIGHT_DIR / f"{name}.onnx", parser="table")
    hier = build_hierarchy(gm, gm.order)
    blocks = 0
    for g in hier.groups:
        subs = list(g.groups)
        sizes = {hier.groups[s].size for s in subs}
        equal = len(subs) >= 2 and not len(g.nodes) and len(sizes) == 1
        assert g.repeat == ((len(subs), min(sizes)) if equal else None), g.label
        blocks += equal and "×" in g.label
    assert blocks >= 2
