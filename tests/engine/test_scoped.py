"""The preview's columns and the group tree's first cut, each against a plain computation written here: names
interned as a table does, scopes as tuples, common prefixes, paths walked parent by parent."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from splitscope.engine.heap import empty_in_steps
from splitscope.engine.model.names import Names
from splitscope.engine.model.scopes import ROOT, Scopes
from splitscope.engine.onnxio.light import read_light
from splitscope.engine.onnxio.scopes import scope_from, scope_ids
from splitscope.engine.split.preview import preview_model
from splitscope.engine.split.table import TARGET_RTX
from splitscope.engine.view.context import _path_table
from splitscope.engine.view.hierarchy import build_hierarchy
from splitscope.engine.view.scoped import effective_scope_ids

from tests.engine import models as M

DATA = Path(__file__).resolve().parents[1] / "data"
REAL = [
    DATA / "torch_transformer.onnx",
    DATA / "torch_transformer_dynamo.onnx",
    DATA / "torch_detector_if.onnx",
    M.LIGHT_DIR / "light_resnet50.onnx",
]


def _odd_names(tmp_path: Path) -> Path:
    """Names without a path, with a leading or doubled '/', an omitted input, a weight no node reads, a node after
    the weights in the file, and a metadata scope beside name scopes."""
    w = h.make_tensor("w", T.FLOAT, [1], [1.0])
    unread = h.make_tensor("unread", T.FLOAT, [1], [2.0])
    nodes = [
        h.make_node("Add", ["x", "w"], ["a"], name="Add"),
        h.make_node("Relu", ["a"], ["b"], name="/enc//layer.0/Relu"),
        h.make_node("Clip", ["b", "", "w"], ["c"], name="enc/layer.0/attn/Clip"),
        h.make_node("Relu", ["c"], ["d"], name="/enc/layer.1/"),
        h.make_node("Neg", ["d"], ["y"], name="/enc/layer.1/Neg"),
    ]
    nodes[3].metadata_props.add(key="pkg.torch.onnx.name_scopes", value="['', 'dec', 'dec.block', 'relu']")
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1])],
        [h.make_tensor_value_info("y", T.FLOAT, [1])],
        [w, unread],
    )
    path = tmp_path / "odd.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), path)
    return path


@pytest.fixture(params=[*REAL, "odd"], ids=lambda p: p if isinstance(p, str) else p.stem)
def model(request, tmp_path):
    return _odd_names(tmp_path) if request.param == "odd" else request.param


def test_tensor_rows_are_what_interning_every_input_then_every_output_gives(model):
    full = onnx.load(model, load_external_data=False).graph
    table: dict[str, int] = {}
    for name in [i for n in full.node for i in n.input] + [o for n in full.node for o in n.output]:
        if name:
            table.setdefault(name, len(table))
    for t in full.initializer:
        table.setdefault(t.name, len(table))
    light = read_light(model)
    assert light.tensor_names == list(table)
    assert [light.tensor_names[r] for r in light.weight_rows] == [t.name for t in full.initializer]
    assert light.inputs == [list(n.input) for n in full.node]


def test_scope_ids_are_the_scopes_of_the_names_and_metadata(model):
    light = read_light(model)
    scopes = Scopes()
    ids = scope_ids(light.names, light.meta, scopes)
    expected = [scope_from(name, light.meta.get(i)) for i, name in enumerate(light.names)]
    table = scopes.table()
    assert [table[k] if k != ROOT else () for k in ids] == expected


def _effective(scopes: list[tuple[str, ...]], succs, order) -> list[tuple[str, ...]]:
    """A node without a scope takes its consumers' longest common prefix, consumers first (tuples, by hand)."""
    out = list(scopes)
    for i in reversed(order):
        if out[i] or not succs[i]:
            continue
        common = out[succs[i][0]]
        for s in succs[i][1:]:
            k = 0
            while k < min(len(common), len(out[s])) and common[k] == out[s][k]:
                k += 1
            common = common[:k]
        out[i] = common
    return out


def test_effective_scopes_are_the_consumers_common_prefix(model):
    gm, order = preview_model(model, TARGET_RTX)
    table = gm.nodes.scope.table()
    got = [table[k] if k != ROOT else () for k in effective_scope_ids(gm, order).tolist()]
    succs = [list(gm.graph.adj.succs[i]) for i in range(len(gm.nodes))]
    assert got == _effective([n.scope for n in gm.nodes], succs, list(order))


def test_the_path_table_is_each_groups_walk_to_the_root(model):
    gm, order = preview_model(model, TARGET_RTX)
    groups = build_hierarchy(gm, order).groups
    table, length = _path_table(groups.parent)
    for g in groups:
        if g.parent == -1:
            assert length[g.id] == 0
            continue
        walk, k = [], g.id
        while k is not None:
            walk.append(k)
            k = groups[k].parent
        assert table[g.id, : length[g.id]].tolist() == walk[::-1]
        assert (table[g.id, length[g.id] :] == -1).all()


def test_a_table_filled_with_distinct_names_finds_each_and_takes_more():
    names = [f"/layer.{i}/out" for i in range(120_000)]
    table = Names()
    table.extend_distinct(list(names))
    assert len(table) == len(names) and table[7] == names[7]
    rng = np.random.default_rng(0)
    for k in rng.integers(0, len(names), 500).tolist():
        assert table.get(names[k]) == k
    assert table.get("/layer.x/out") is None
    assert table.add("/layer.x/out") == len(names) and table.add(names[3]) == 3
    with pytest.raises(ValueError):
        Names(indexed=False).extend_distinct(["a"])


def test_a_dict_emptied_in_steps_is_empty():
    d = {k: str(k) for k in range(50_001)}
    empty_in_steps(d, step=7_000)
    assert d == {}
