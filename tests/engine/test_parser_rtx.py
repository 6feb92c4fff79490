"""The real TensorRT-RTX parser: its semantics, pinned, and our iteration on top of it."""

from __future__ import annotations

import pytest
from splitscope.engine.errors import ParserUnavailableError
from splitscope.engine.model import Source, Status
from splitscope.engine.split.analyze import analyze_model
from splitscope.engine.split.parser import resolve_backend

from tests.engine import models as M
from tests.engine.conftest import needs_rtx

pytestmark = needs_rtx


@pytest.fixture(scope="module")
def trt():
    import tensorrt_rtx

    return tensorrt_rtx


def _bare(trt, model):
    logger = trt.Logger(trt.Logger.INTERNAL_ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    ok = parser.supports_model_v2(model.SerializeToString())
    subgraphs = [list(parser.get_subgraph_nodes(i)) for i in range(parser.num_subgraphs)]
    flags = [parser.is_subgraph_supported(i) for i in range(parser.num_subgraphs)]
    errs = [(parser.get_error(i).node(), parser.get_error(i).desc()) for i in range(parser.num_errors)]
    return ok, subgraphs, flags, errs


def test_supports_model_v2_semantics_five_node(trt):
    """DOMAIN.md 3: False; subgraphs [0,1] and [3,4]; node 2 in none; every subgraph flagged unsupported."""
    ok, subgraphs, flags, errs = _bare(trt, M.five_node())
    assert ok is False
    assert subgraphs == [[0, 1], [3, 4]]
    assert flags == [False, False]
    assert len(errs) == 1 and errs[0][0] == 2 and "Plugin not found" in errs[0][1]


def test_failing_kind_reported_once(trt):
    """Four NonZero nodes, one error: the parser names only the first."""
    ok, _, _, errs = _bare(trt, M.repeated_nonzero(4))
    assert ok is False
    assert len(errs) == 1 and errs[0][0] == 1


def test_uint64_fails_without_naming_a_node(trt):
    ok, _, _, errs = _bare(trt, M.uint64_model())
    assert ok is False
    assert errs and all(node < 0 for node, _ in errs)


def test_partitions_match_parser_subgraphs(save_model, trt):
    gm = analyze_model(save_model(M.five_node()), parser="rtx")
    _, subgraphs, _, _ = _bare(trt, M.five_node())
    assert [list(p.nodes) for p in gm.partitions] == subgraphs
    assert [n.status for n in gm.nodes] == [Status.DELEGATE] * 2 + [Status.PLUGIN] + [Status.DELEGATE] * 2
    assert all(n.source is Source.PARSER for n in gm.nodes)
    assert gm.parser.name == "tensorrt-rtx" and gm.parser.calls == 2


def test_iteration_proves_every_nonzero(save_model):
    gm = analyze_model(save_model(M.repeated_nonzero(4)), parser="rtx")
    nz = [n for n in gm.nodes if n.op_type == "NonZero"]
    assert all(n.status is Status.PLUGIN and n.source is Source.PARSER for n in nz)
    assert "same op, attributes and input types" in nz[1].reason
    others = [n for n in gm.nodes if n.op_type != "NonZero"]
    assert all(n.status is Status.DELEGATE and n.source is Source.PARSER for n in others)


def test_model_level_failure_cuts_unsupported_types(save_model):
    gm = analyze_model(save_model(M.uint64_model()), parser="rtx")
    assert [n.status for n in gm.nodes] == [Status.DELEGATE, Status.PLUGIN, Status.DELEGATE]
    assert "UINT64" in gm.nodes[1].reason
    assert all(n.source is Source.PARSER for n in gm.nodes)


def test_error_inside_if_body_is_attributed_to_the_if(save_model):
    gm = analyze_model(save_model(M.if_model("MyNms", "my.ops")), parser="rtx")
    branch = gm.nodes[2]
    assert branch.status is Status.PLUGIN and branch.source is Source.PARSER
    assert "then_op" in branch.reason
    assert gm.nodes[0].status is Status.DELEGATE and gm.nodes[0].source is Source.PARSER


def test_error_inside_function_is_attributed_to_the_call(save_model):
    gm = analyze_model(save_model(M.function_with_unsupported()), parser="rtx")
    call = gm.nodes[1]
    assert call.status is Status.PLUGIN and call.source is Source.PARSER
    assert "inner_det" in call.reason and "local function" in call.reason
    assert gm.nodes[0].status is Status.DELEGATE and gm.nodes[0].source is Source.PARSER


def test_custom_op_downstream_nodes_not_blamed(save_model):
    """Cutting a custom op must not make the good node after it look bad (its input type is assumed)."""
    gm = analyze_model(save_model(M.five_node()), parser="rtx")
    assert gm.nodes[4].status is Status.DELEGATE


def test_restrictions_model_all_proven(save_model):
    gm = analyze_model(save_model(M.restrictions_model()), parser="rtx")
    assert all(n.parser_status is not None for n in gm.nodes), [n.reason for n in gm.nodes]
    status = {n.label: n.status for n in gm.nodes}
    for bad in ("reducemean_runtime_axes", "maxpool_indices", "det", "compress"):
        assert status[bad] is Status.PLUGIN
    for good in ("maxpool", "reducemean_const_axes", "topk_small", "resize_linear", "softmax"):
        assert status[good] is Status.DELEGATE
    # The parser imports TopK K=5000; the builder rejects it: the table's restriction wins.
    big = next(n for n in gm.nodes if n.label == "topk_big")
    assert big.status is Status.PLUGIN and big.parser_status is Status.DELEGATE and big.source is Source.TABLE
    assert "builder rejects" in big.reason


@pytest.mark.parametrize(("k", "builds"), [(3000, True), (5000, False)])
def test_topk_limit_is_a_build_time_check(trt, k, builds):
    """Pin the fact behind BUILD_TIME_CHECKS: parse succeeds, build_serialized_network fails past 3840."""
    import numpy as np
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper as nh

    m = M.model(
        [h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 8000])],
        [h.make_tensor_value_info("v", T.FLOAT, [1, k]), h.make_tensor_value_info("i", T.INT64, [1, k])],
        [nh.from_array(np.array([k], np.int64), "k")],
    )
    logger = trt.Logger(trt.Logger.INTERNAL_ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    assert parser.parse(m.SerializeToString())
    plan = builder.build_serialized_network(network, builder.create_builder_config())
    assert (plan is not None) is builds


def test_parser_choice():
    assert resolve_backend("table") is None
    assert resolve_backend("rtx") == "tensorrt_rtx"
    assert resolve_backend("auto") in ("tensorrt", "tensorrt_rtx")
    with pytest.raises(ParserUnavailableError, match="use auto, tensorrt, rtx or table"):
        resolve_backend("onnxruntime")


def test_cancel_kills_the_parser(save_model):
    from splitscope.engine.errors import JobCancelledError
    from splitscope.engine.jobs import CancelToken
    from splitscope.engine.split.analyze import analyze

    token = CancelToken()
    job = analyze(save_model(M.five_node()), parser="rtx", cancel=token)
    next(job)
    token.cancel()
    with pytest.raises(JobCancelledError):
        for _ in job:
            pass


@pytest.mark.parametrize(
    ("name", "plugin"),
    [
        ("string.onnx", {"norm"}),
        ("bf16.onnx", set()),
        ("qdq.onnx", set()),
        ("qdq_zero_point.onnx", {"q", "dq"}),
        ("loop.onnx", set()),
        ("scan.onnx", set()),
        ("unknown_op.onnx", {"frob"}),
        ("unsorted.onnx", set()),
    ],
)
def test_odd_models(save_model, name, plugin):
    gm = analyze_model(save_model(M.odd_models()[name]), parser="rtx")
    assert {n.label for n in gm.nodes if n.status is Status.PLUGIN} == plugin
    assert all(n.source is Source.PARSER for n in gm.nodes)
    assert all(n.table_status is n.parser_status for n in gm.nodes)


def test_parser_crash_falls_back_to_the_table(save_model, tmp_path, monkeypatch):
    """A parser that kills its process (as TensorRT can, DOMAIN.md 3) leaves the table's answer and a warning."""
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.split.analyze import apply_parser_answer
    from splitscope.engine.split.parser import DISPLAY, ParserProcess

    (tmp_path / "crashing_parser.py").write_text("import os\nos.abort()\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setitem(DISPLAY, "crashing_parser", "crashing-parser")
    path = save_model(M.five_node())
    answer = run_to_end(ParserProcess("crashing_parser", path).events())
    assert "crashed (signal 6)" in answer.failure
    gm = analyze_model(path, parser="table")
    apply_parser_answer(gm, answer)
    assert gm.parser.name == "table"
    assert any("crashed" in w and "support table instead" in w for w in gm.warnings)
    assert [n.status for n in gm.nodes] == [Status.DELEGATE] * 2 + [Status.PLUGIN] + [Status.DELEGATE] * 2
