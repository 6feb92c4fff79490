"""Graph model: shapes, symbolic dims, nested bodies, functions, scopes, FLOPs, roles, partitions."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from splitscope.engine.model import Role, Status
from splitscope.engine.report.schema import to_json
from splitscope.engine.split.analyze import analyze_model

from tests.engine import models as M


def test_symbolic_dims_kept_as_names(save_model):
    gm = analyze_model(save_model(M.function_model()), parser="table")
    assert gm.graph.tensors["y"].shape == ("batch", 16)
    assert gm.symbolic_dims() == ["batch"]


def test_function_calls_are_expandable(save_model):
    gm = analyze_model(save_model(M.function_model()), parser="table")
    call = gm.nodes[0]
    assert call.function is not None
    assert [n.op_type for n in call.function.nodes] == ["Sigmoid", "Mul"]
    assert call.status is Status.DELEGATE
    assert call.scope == ("block1",)


def test_function_bodies_get_shapes_and_flops(save_model):
    gm = analyze_model(save_model(M.function_model()), parser="table", dims={"batch": 4})
    call = gm.nodes[0]
    body = call.function
    assert body is not None
    sig = body.nodes[0]
    assert body.tensors[sig.outputs[0]].shape == ("batch", 16)
    # Sigmoid (4 FLOPs per element) + Mul (1), 4x16 elements, counted on the call node.
    assert call.flops == (4 + 1) * 4 * 16
    assert gm.total_flops() == 2 * call.flops


def test_if_bodies_are_kept(save_model):
    gm = analyze_model(save_model(M.if_model("MyNms", "my.ops")), parser="table")
    branch = gm.nodes[2]
    assert set(branch.subgraphs) == {"then_branch", "else_branch"}
    assert branch.role is Role.CONTROL_FLOW
    inner = branch.subgraphs["then_branch"].nodes[0]
    assert inner.status is Status.PLUGIN
    assert branch.status is Status.PLUGIN and "then_op" in branch.reason
    walked = [n.label for _, n in gm.graph.walk()]
    assert "then_op" in walked and "else_op" in walked


def test_unnamed_nodes_are_numbered(save_model):
    m = M.model(
        [h.make_node("Relu", ["x"], ["a"]), h.make_node("Relu", ["a"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    gm = analyze_model(save_model(m), parser="table")
    assert [n["name"] for n in to_json(gm)["node_status"]] == ["#0", "#1"]


def test_flops_conv_matmul_gemm(save_model):
    nodes = [
        h.make_node("Conv", ["x", "W", "B"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[2, 2]),
        h.make_node("Flatten", ["c"], ["f"], name="flat"),
        h.make_node("Gemm", ["f", "G"], ["g"], name="gemm", transB=1),
        h.make_node("MatMul", ["g", "Mw"], ["y"], name="mm"),
    ]
    inits = [M.w("W", 8, 3, 3, 3), M.w("B", 8), M.w("G", 10, 8 * 4 * 4), M.w("Mw", 10, 5)]
    m = M.model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 8, 8])],
        [h.make_tensor_value_info("y", T.FLOAT, [2, 5])],
        inits,
    )
    gm = analyze_model(save_model(m), parser="table")
    conv, flat, gemm, mm = gm.nodes
    assert conv.flops == 2 * (2 * 8 * 4 * 4) * (3 * 3 * 3) + 2 * 8 * 4 * 4
    assert flat.flops == 0 and flat.role is Role.DATA_MOVEMENT
    assert gemm.flops == 2 * (2 * 10) * 128
    assert mm.flops == 2 * (2 * 5) * 10
    # bytes moved: inputs + weights + outputs
    assert conv.bytes == 4 * (2 * 3 * 8 * 8 + 8 * 3 * 3 * 3 + 8 + 2 * 8 * 4 * 4)


def test_dims_override_scales_costs(save_model):
    m = M.model(
        [h.make_node("MatMul", ["x", "Wm"], ["y"], name="mm")],
        [h.make_tensor_value_info("x", T.FLOAT, ["batch", 16])],
        [h.make_tensor_value_info("y", T.FLOAT, ["batch", 4])],
        [M.w("Wm", 16, 4)],
    )
    a = analyze_model(save_model(m), parser="table")
    b = analyze_model(save_model(m), parser="table", dims={"batch": 8})
    assert b.total_flops() == 8 * a.total_flops() > 0


def test_scope_from_names_and_metadata(save_model):
    n1 = h.make_node("Relu", ["x"], ["a"], name="/encoder/layer.3/attn/Relu")
    n2 = h.make_node("Relu", ["a"], ["y"], name="node_relu_1")
    e = n2.metadata_props.add()
    e.key, e.value = "pkg.torch.onnx.name_scopes", "['', 'decoder', 'decoder.mlp', 'linear']"
    m = M.model([n1, n2], [h.make_tensor_value_info("x", T.FLOAT, [2])], [h.make_tensor_value_info("y", T.FLOAT, [2])])
    gm = analyze_model(save_model(m), parser="table")
    assert gm.nodes[0].scope == ("encoder", "layer.3", "attn")
    assert gm.nodes[1].scope == ("decoder", "mlp")


def test_sample_roles_and_split():
    gm = analyze_model(None, parser="table")
    roles = {n.label: n.role for n in gm.nodes}
    assert roles["/preprocess/Cast"] is Role.PRE_PROCESSING
    assert roles["/preprocess/Resize"] is Role.PRE_PROCESSING
    assert roles["/backbone/stage1/conv/Conv"] is Role.COMPUTE
    assert roles["/postprocess/nms/NonMaxSuppression"] is Role.POST_PROCESSING
    assert roles["/neck/attn/flatten/Reshape"] is Role.DATA_MOVEMENT
    plugin = {n.label for n in gm.nodes if n.status is Status.PLUGIN}
    assert plugin == {"/neck/dcn/DCNv4", "/postprocess/threshold/Compress"}
    assert len(gm.partitions) == 2
    # The DCNv4 output (1x64x10x10 float) crosses out of partition 0 and into partition 1;
    # the Compress inputs leave partition 1.
    p0, p1 = gm.partitions
    assert [(t.name, t.bytes, t.direction) for t in p0.boundary_tensors] == [
        ("/backbone/stage4/act/Relu_output_0", 64 * 10 * 10 * 4, "out")
    ]
    assert ("/neck/dcn/DCNv4_output_0", 25600, "in") in [(t.name, t.bytes, t.direction) for t in p1.boundary_tensors]
    assert gm.boundary_bytes == sum(t.bytes or 0 for p in gm.partitions for t in p.boundary_tensors)


def test_shape_subgraph_role(save_model):
    nodes = [
        h.make_node("Shape", ["x"], ["s"], name="shape"),
        h.make_node("Gather", ["s", "i0"], ["d0"], name="gather", axis=0),
        h.make_node("Unsqueeze", ["d0", "ax"], ["d0v"], name="unsq"),
        h.make_node("Concat", ["d0v", "m1"], ["shp"], name="concat", axis=0),
        h.make_node("Reshape", ["x", "shp"], ["y"], name="reshape"),
    ]
    inits = [
        nh.from_array(np.array(0, np.int64), "i0"),
        nh.from_array(np.array([0], np.int64), "ax"),
        nh.from_array(np.array([-1], np.int64), "m1"),
    ]
    m = M.model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, ["n", 4, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, ["n", 16])],
        inits,
    )
    gm = analyze_model(save_model(m), parser="table")
    assert [n.role for n in gm.nodes[:4]] == [Role.SHAPE] * 4
    assert gm.nodes[4].role is Role.DATA_MOVEMENT


def test_source_plugin_does_not_split(save_model):
    """A plugin fed only by constants enters the engine like an input: one partition."""
    gm = analyze_model(save_model(M.uint64_model()), parser="table")
    assert [n.status for n in gm.nodes] == [Status.DELEGATE, Status.PLUGIN, Status.DELEGATE]
    assert len(gm.partitions) == 1


def test_einsum_flops_follow_the_equation(save_model):
    """An Einsum is counted from its equation (a batched matmul, an outer product, a sum, an ellipsis), as a MatMul
    of the same shapes would be; an equation that does not fit its shapes is unknown, and the total says so."""
    from splitscope.engine.report.stats import flops_text, uncounted_flops
    from splitscope.engine.split.costs import einsum_flops

    assert einsum_flops("bij,bjk->bik", [[2, 3, 4], [2, 4, 5]]) == 2 * 2 * 3 * 4 * 5
    assert einsum_flops("i,j->ij", [[3], [4]]) == 12
    assert einsum_flops("ij->", [[3, 4]]) == 12
    assert einsum_flops("...ij,...jk", [[7, 2, 3], [7, 3, 2]]) == 2 * 7 * 2 * 3 * 2
    assert einsum_flops("ij,jk->ik", [[2, 3], [4, 5]]) is None  # j is 3 on one side, 4 on the other
    assert einsum_flops("ij,jk,kl->il", [[100, 100]] * 3) == 2 * 100**3 * 2  # pairwise: two matmuls, not 100**4
    assert einsum_flops("...i,...i->i", [[5, 3], [5, 3]]) == 2 * 5 * 3  # the ellipsis dims the output drops: summed
    m = M.model(
        [
            h.make_node("Einsum", ["x", "Wm"], ["y"], name="ein", equation="bsd,de->bse"),
            h.make_node("Einsum", ["y", "Wz"], ["z"], name="bad", equation="bse,qq->bsq"),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 8, 16])],
        [h.make_tensor_value_info("z", T.FLOAT, None)],
        [M.w("Wm", 16, 4), M.w("Wz", 3, 2)],
    )
    gm = analyze_model(save_model(m), parser="table")
    ein, bad = gm.nodes
    assert ein.flops == 2 * 8 * 16 * 4 and bad.flops is None
    assert uncounted_flops(gm) == (0, 1)
    assert flops_text(gm).startswith("at least ") and "1 node not countable at these shapes" in flops_text(gm)


def test_a_layers_nodes_share_one_scope_kept_with_the_model_and_nothing_is_kept_between_models():
    from splitscope.engine.onnxio import scopes

    paths: dict[str, tuple[str, ...]] = {}
    a = scopes.scope_from("/model/layers.3/attn/MatMul", None, paths)
    b = scopes.scope_from("/model/layers.3/attn/Softmax", None, paths)
    assert a == ("model", "layers.3", "attn") and a is b  # one tuple for the layer, in the model's own table
    assert list(paths) == ["/model", "/model/layers.3", "/model/layers.3/attn"]  # its parents' too
    c = scopes.scope_from("/model/layers.3/mlp/Add", None, paths)
    assert c == ("model", "layers.3", "mlp") and c[0] is a[0] and c[1] is a[1]  # the steps they share: one string
    assert scopes.scope_from("/model/layers.3/attn/Add", None) == a  # without a table: computed, not cached
    assert not [v for v in vars(scopes).values() if hasattr(v, "cache_info")]  # no cache outliving a model
