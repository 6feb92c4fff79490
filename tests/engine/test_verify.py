"""Verify the split by building (issue 18, first part): each partition built with the real TensorRT-RTX builder
at the shapes in force, a failing one narrowed down to the nodes it rejects, those marked plugin (source:
builder), and a cancel in the middle of a narrowing."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from splitscope.engine.jobs import CancelToken, JobCancelledError, Progress, run_to_end
from splitscope.engine.split.analyze import analyze_model

pytest.importorskip("tensorrt_rtx", reason="the test extra installs TensorRT-RTX (its builder runs on the CPU)")


def _branch_that_fails_at_8(path):
    """x[n] -> Relu -> If(cond: then Identity, else Reshape to [16]) -> Relu. The parser imports it at a dynamic
    n; built at n = 8, the else branch's Reshape cannot hold (silero's If at 512 samples fails alike)."""
    then = h.make_graph(
        [h.make_node("Identity", ["r"], ["t"])], "then", [], [h.make_tensor_value_info("t", T.FLOAT, None)]
    )
    other = h.make_graph(
        [h.make_node("Reshape", ["r", "to16"], ["e"])],
        "else",
        [],
        [h.make_tensor_value_info("e", T.FLOAT, None)],
        [onnx.numpy_helper.from_array(np.array([16], np.int64), "to16")],
    )
    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["r"], name="first"),
            h.make_node("If", ["cond"], ["b"], name="branch", then_branch=then, else_branch=other),
            h.make_node("Relu", ["b"], ["y"], name="last"),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, ["n"]), h.make_tensor_value_info("cond", T.BOOL, [])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_a_build_that_fails_is_narrowed_to_the_node_it_rejects(tmp_path):
    from splitscope.engine.runtime.verify import apply_report, verify

    p = _branch_that_fails_at_8(tmp_path / "m.onnx")
    gm = analyze_model(p, parser="rtx", dims={"n": 8})
    assert all(n.status.value == "delegate" for n in gm.nodes)  # the parser's yes
    from splitscope.engine.report.stats import headline

    assert "parser only, not verified by building" in headline(gm)
    report = run_to_end(verify(p, gm, "rtx", budget_s=120)).to_json()
    (part,) = report["partitions"]
    assert part["status"] == "failed" and part["error"] and part["nodes_blamed"] == ["branch"] and part["narrowed"]
    apply_report(gm, report)  # partitions and remedies counted again
    branch = next(n for n in gm.nodes if n.label == "branch")
    assert branch.status.value == "plugin" and branch.source.value == "builder" and branch.cause == "builder rejects"
    assert "at x [8], cond []" in branch.reason and len(gm.partitions) == 2
    ok = analyze_model(p, parser="rtx", dims={"n": 16})  # at 16 both branches hold: it builds
    assert run_to_end(verify(p, ok, "rtx", budget_s=120)).partitions[0].status == "built"


def test_the_cli_verifies_by_building_and_says_so(tmp_path, capsys):
    from splitscope.engine.cli import main

    p = _branch_that_fails_at_8(tmp_path / "m.onnx")
    out = tmp_path / "a.json"
    assert main(["analyze", str(p), "--parser", "rtx", "--dim", "n=8", "--verify", "build", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "verified by building with rtx" in text and "partition 1 failed" in text and "rejects branch" in text
    doc = json.loads(out.read_text())
    assert (
        doc["build"]["partitions"][0]["nodes_blamed"] == ["branch"]
        and "verified by building at x [8]" in doc["headline"]
    )
    assert next(r for r in doc["node_status"] if r["name"] == "branch")["source"] == "builder"


def test_cancel_in_the_middle_of_a_narrowing(tmp_path):
    from splitscope.engine.runtime.verify import verify

    p = _branch_that_fails_at_8(tmp_path / "m.onnx")
    gm = analyze_model(p, parser="rtx", dims={"n": 8})
    token = CancelToken()
    gen = verify(p, gm, "rtx", budget_s=120, cancel=token)
    with pytest.raises(JobCancelledError):
        for ev in gen:
            if isinstance(ev, Progress) and ev.stage == "narrow":
                token.cancel()


def test_the_report_has_the_build(tmp_path):
    from splitscope.engine.cli import main

    p = _branch_that_fails_at_8(tmp_path / "m.onnx")
    out = tmp_path / "r.html"
    args = ["report", str(p), "--parser", "rtx", "--dim", "n=8", "--verify", "build", "--out", str(out), "-q"]
    assert main(args) == 0
    html = out.read_text()
    assert "Verified by building" in html and "branch" in html and "narrowed by building halves" in html
    assert "counted at the input shapes in force, x [8]" in html


def _chain(path):
    """x[n, 4] -> Relu -> Mul(a, a) -> Relu: every tensor's first axis follows n."""
    g = h.make_graph(
        [
            h.make_node("Relu", ["x"], ["a"], name="r1"),
            h.make_node("Mul", ["a", "a"], ["b"], name="sq"),
            h.make_node("Relu", ["b"], ["y"], name="r2"),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
        [h.make_tensor_value_info("y", T.FLOAT, ["n", 4])],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)
    return path


def test_a_range_builds_with_an_optimisation_profile(tmp_path):
    """--dim-range n=1:16 with n = 4 in force: every cut input that follows n is dynamic on that axis, with its
    shapes at 1, 4 and 16 as min / opt / max, and the engine builds over the range."""
    from splitscope.engine.runtime.verify import check_ranges, cut, shapes_at_ends, verify

    p = _chain(tmp_path / "m.onnx")
    gm = analyze_model(p, parser="rtx", dims={"n": 4})
    ranges = check_ranges(gm, {"n": (1, 16)})
    assert ranges == {"n": [1, 4, 16]}
    proto = onnx.load(str(p))
    ends = shapes_at_ends(proto, gm, ranges)
    model, profile = cut(proto, [1], gm, ends)  # the Mul alone: its input is the Relu's output
    assert profile == {"a": ((1, 4), (4, 4), (16, 4))}
    cut_in = onnx.load_from_string(model).graph.input[0].type.tensor_type.shape.dim
    assert cut_in[0].dim_param and cut_in[1].dim_value == 4
    assert cut(proto, [1], gm)[1] == {}  # without a range: static
    report = run_to_end(verify(p, gm, "rtx", budget_s=120, ranges=ranges)).to_json()
    assert report["partitions"][0]["status"] == "built" and report["ranges"] == {"n": [1, 4, 16]}
    assert "over n 1..16 (opt 4)" in report["shapes"]


def test_a_range_that_misses_the_value_in_force_is_refused(tmp_path):
    from splitscope.engine.cli import main

    p = _chain(tmp_path / "m.onnx")
    args = ["analyze", str(p), "--parser", "rtx", "--dim", "n=4", "--verify", "build"]
    assert main([*args, "--dim-range", "n=8:16"]) == 2
    assert main([*args, "--dim-range", "m=1:16"]) == 2
    assert main([*args, "--dim-range", "n=1-16"]) == 2
