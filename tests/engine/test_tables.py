"""The graph's tables (engine/model): views read and write their rows, counts past 64 bits stay exact, consumers
come out in node order, names find their rows, scopes read back, and a built model holds the same few objects
whatever its size."""

from __future__ import annotations

import gc
import types

import onnx
from splitscope.engine.model import Nodes, Status, Tensors
from splitscope.engine.model.names import _STEP, Names
from splitscope.engine.model.scopes import Scopes
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


def _walk(root: object) -> tuple[int, int]:
    """The objects reachable from ``root`` through its references (classes, modules and functions not followed), and
    the references a full collection follows from the containers among them."""
    seen, stack, walked = set(), [root], 0
    while stack:
        o = stack.pop()
        if id(o) in seen or isinstance(o, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(o))
        refs = gc.get_referents(o)
        walked += len(refs) if gc.is_tracked(o) else 0
        stack.extend(refs)
    return len(seen), walked


def test_a_model_holds_the_same_few_objects_at_any_size(tmp_path):
    held = {}
    for n in (1000, 4000):
        path = tmp_path / f"t{n}.onnx"
        onnx.save(make_transformer(n), path)
        gm, _ = graph_from_onnx(load_model(path))
        assert len(gm.nodes) >= n * 0.95
        held[n] = _walk(gm.graph)[0]
    # Names, scopes, inputs and outputs are a few arrays and strings a table: four times the nodes, the same count
    # (the distinct attribute sets are the only thing that may grow, and these layers repeat theirs).
    assert held[4000] == held[1000] and held[4000] < 400, held


def test_a_full_collection_walks_as_much_at_any_size(tmp_path):
    walked = {}
    for n in (1000, 4000):
        path = tmp_path / f"t{n}.onnx"
        onnx.save(make_transformer(n), path)
        gm, _ = graph_from_onnx(load_model(path))
        walked[n] = _walk(gm.graph)[1]
    # Op types, domains, attributes, verdicts, dtypes and shapes are codes: the collector follows the distinct
    # values, not a reference per node or tensor.
    # (a few shared objects may be met first from one graph or the other: equal within a hundred, where a list a
    # column would add 3,000 references for each of a dozen columns)
    assert abs(walked[4000] - walked[1000]) < 100 and walked[4000] < 1000, walked


def test_names_find_their_rows_before_and_after_they_are_compacted():
    names = [f"layer.{k}/out" for k in range(3000)] + ["é", "😀 x", "a" * 500]
    t = Names()
    assert [t.add(s) for s in names] == list(range(len(names)))
    for compacted in (False, True):
        assert [t.get(s) for s in names] == list(range(len(names))), compacted
        assert t.get("absent") is None and "absent" not in t and "é" in t
        assert list(t) == names and t[-1] == "a" * 500 and t[1:3] == names[1:3]
        t.compact()
    for k in range(5000):  # past the tail a compacted table lets wait: folded in again as it goes
        t.add(f"late{k}")
    assert t.get("late4999") == len(names) + 4999 and t.get("layer.7/out") == 7 and t.add("é") == len(names) - 3
    assert t.pick([0, -1, 2]) == ["layer.0/out", "", "layer.2/out"]
    c = t.copy()
    assert c.extends(t) and c.add("only in the copy") == len(t) and "only in the copy" not in t
    t.add("only in the original")
    assert not c.extends(t)  # the original grew: its new rows are not the copy's
    u = Names(indexed=False)
    u.extend(["a", "a", "b"])
    u.compact()
    assert list(u) == ["a", "a", "b"]
    # More than one step of folding (a large model's tensors): every row found, in order, whatever its step.
    many = [f"t{k}/{'é' if k % 7 == 0 else 'x'}" for k in range(2 * _STEP + 123)]
    big = Names()
    assert big.add_many(many) == list(range(len(many)))
    big.compact()
    assert list(big) == many and big.pick([0, _STEP, len(many) - 1]) == [many[0], many[_STEP], many[-1]]
    assert [big.get(many[k]) for k in (0, _STEP - 1, _STEP, 2 * _STEP + 122)] == [0, _STEP - 1, _STEP, 2 * _STEP + 122]


def test_scopes_read_back_as_the_tuples_they_were_given():
    s = Scopes()
    given = [("enc", "layer.0", "attn"), (), ("enc", "layer.0"), ("enc", "layer.0", "attn"), ("dec",)]
    s.extend(given)
    deep = tuple(f"s{k}" for k in range(3000))  # a path thousands deep: no prefix of it made as a tuple
    s.append(deep)
    s.compact()
    s.append(("enc", "layer.1"))  # after the lookups were dropped
    want = [*given, deep, ("enc", "layer.1")]
    assert list(s) == s.all() == want and [s[k] for k in range(len(s))] == want
    assert len(s.parent) == 3 + 1 + 3000 + 1  # enc, layer.0, attn; dec; the deep path; layer.1
    s.append(("enc", "layer.0"))  # known through its parent and step, not as this tuple: no second id
    assert len(s.parent) == 3 + 1 + 3000 + 1 and s[-1] == ("enc", "layer.0")
