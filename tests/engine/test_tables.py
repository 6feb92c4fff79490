"""The graph's tables (engine/model): views read and write their rows, counts past 64 bits stay exact, consumers
come out in node order, and a built model holds few objects whatever its size."""

from __future__ import annotations

import gc

import onnx
from splitscope.engine.model import Nodes, Status, Tensors
from splitscope.engine.onnxio.graph import graph_from_onnx
from splitscope.engine.onnxio.loader import load_model

from tests.bench import make_transformer


def test_node_views_write_their_row_and_keep_huge_counts_exact():
    nodes = Nodes()
    a = nodes.add("a", "MatMul", "", ["x", "w"], ["y"])
    b = nodes.add("b", "Relu", "", ["y"], ["z"], status=Status.PLUGIN)
    a.flops, b.flops = 10**30, 7
    b.bytes = -3  # meaningless: read back as unknown
    assert nodes[0].flops == 10**30 and nodes[1].flops == 7 and nodes[1].bytes is None
    assert nodes[1].status is Status.PLUGIN and nodes[-1] == b and nodes[0] != b
    assert [n.name for n in nodes] == ["a", "b"] and nodes[0].inputs == ["x", "w"] and not nodes[0].subgraphs


def test_column_reads_equal_what_each_node_view_says():
    nodes = Nodes()
    nodes.add("a", "MatMul", "", ["x", "w"], ["y"]).flops = 10**30
    nodes.add("", "Relu", "", ["y"], ["z"]).flops = 7
    nodes.add("c", "Relu", "", ["z"], ["q"])
    assert nodes.values("flops") == [n.flops for n in nodes] == [10**30, 7, None]
    assert nodes.values("bytes") == [None] * 3
    assert nodes.labels() == [n.label for n in nodes] == ["a", "#1", "c"]
    assert nodes.count_nested() == 0


def test_nested_nodes_are_counted_as_a_walk_finds_them():
    from pathlib import Path

    from splitscope.engine.split.analyze import analyze_model

    data = Path(__file__).resolve().parents[1] / "data"
    counts = {}
    for name in ("torch_detector_if.onnx", "torch_two_stage.onnx"):
        gm = analyze_model(data / name, parser="table")
        counts[name] = gm.nodes.count_nested()
        assert counts[name] == len(gm.graph.walk()) - len(gm.nodes)
    assert counts["torch_detector_if.onnx"] > 0  # the detector's If bodies


def test_consumers_come_in_node_order_and_a_copy_is_its_own():
    t = Tensors()
    for name, node in (("x", 2), ("x", 0), ("y", 1), ("x", 1)):
        t.add_consumer(name, node)
    t.freeze()
    assert list(t["x"].consumers) == [2, 0, 1] and list(t["y"].consumers) == [1]
    c = t.copy()
    c.tensor("z").is_input = True
    assert "z" in c and "z" not in t and list(c["z"].consumers) == [] and c["z"].is_input


def test_a_large_model_is_a_few_objects(tmp_path):
    path = tmp_path / "t.onnx"
    onnx.save(make_transformer(5000), path)
    gc.collect()
    before = len(gc.get_objects())
    gm, _ = graph_from_onnx(load_model(path))
    gc.collect()
    held = len(gc.get_objects()) - before
    assert len(gm.nodes) >= 4900
    # Not one object (or ten, as before the tables) a node: what the collector still tracks is the attribute dicts
    # that hold lists (perm, axes), about one node in four here.
    assert held < len(gm.nodes) // 3, held
