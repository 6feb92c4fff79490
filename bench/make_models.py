"""Generate synthetic transformer-style ONNX models of a given node count.

The models are built with ``onnx.helper`` the way an exporter lays out a
transformer: name scopes per layer (``/encoder/layer.N/attn/...``), shape
arithmetic (Shape/Gather/Concat/Reshape), attention, layer norms and MLPs, plus
optionally one custom-domain op and one op the TensorRT parser rejects every
``--break-every`` layers, so the split has real partitions.

Usage::

    python bench/make_models.py OUT_DIR --nodes 1000 10000 50000 [--bert]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HIDDEN = 64
HEADS = 4
SEQ = 128


def _layer(
    i: int,
    x: str,
    nodes: list[onnx.NodeProto],
    inits: list[onnx.TensorProto],
    rng: np.random.Generator,
    custom: bool,
    hidden: int = HIDDEN,
) -> str:
    p = f"/encoder/layer.{i}"

    def w(name: str, shape: tuple[int, ...]) -> str:
        full = f"{p}/{name}"
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.02).astype(np.float32), full))
        return full

    def n(op: str, scope: str, ins: list[str], n_out: int = 1, **attrs: object) -> list[str]:
        name = f"{p}/{scope}/{op}_{len(nodes)}"
        outs = [f"{name}_out{k}" for k in range(n_out)]
        nodes.append(helper.make_node(op, ins, outs, name=name, **attrs))
        return outs

    (ln1,) = n("LayerNormalization", "ln1", [x, w("ln1.g", (hidden,)), w("ln1.b", (hidden,))], axis=-1)
    heads = []
    for t in ("q", "k", "v"):
        (mm,) = n("MatMul", f"attn/{t}", [ln1, w(f"attn.{t}.w", (hidden, hidden))])
        (ad,) = n("Add", f"attn/{t}", [mm, w(f"attn.{t}.b", (hidden,))])
        (rs,) = n("Reshape", f"attn/{t}", [ad, "shape_bshd"])
        (tr,) = n("Transpose", f"attn/{t}", [rs], perm=[0, 2, 1, 3] if t != "k" else [0, 2, 3, 1])
        heads.append(tr)
    (qk,) = n("MatMul", "attn/core", [heads[0], heads[1]])
    (sc,) = n("Mul", "attn/core", [qk, "attn_scale"])
    (sm,) = n("Softmax", "attn/core", [sc], axis=-1)
    (av,) = n("MatMul", "attn/core", [sm, heads[2]])
    (tr,) = n("Transpose", "attn/core", [av], perm=[0, 2, 1, 3])
    (rs,) = n("Reshape", "attn/core", [tr, "shape_bsh"])
    (o,) = n("MatMul", "attn/out", [rs, w("attn.o.w", (hidden, hidden))])
    (ob,) = n("Add", "attn/out", [o, w("attn.o.b", (hidden,))])
    (r1,) = n("Add", "attn", [x, ob])
    (ln2,) = n("LayerNormalization", "ln2", [r1, w("ln2.g", (hidden,)), w("ln2.b", (hidden,))], axis=-1)
    (f1,) = n("MatMul", "mlp/fc1", [ln2, w("fc1.w", (hidden, 4 * hidden))])
    (f1b,) = n("Add", "mlp/fc1", [f1, w("fc1.b", (4 * hidden,))])
    if custom:  # a fused GELU kernel the codebase ships: no TensorRT importer
        act = f"{p}/mlp/act/FastGelu_out0"
        nodes.append(
            helper.make_node("FastGelu", [f1b], [act], name=f"{p}/mlp/act/FastGelu_{len(nodes)}", domain="com.example")
        )
    else:
        (e,) = n("Div", "mlp/act", [f1b, "sqrt2"])
        (e,) = n("Erf", "mlp/act", [e])
        (e,) = n("Add", "mlp/act", [e, "one"])
        (e,) = n("Mul", "mlp/act", [f1b, e])
        (act,) = n("Mul", "mlp/act", [e, "half"])
    (f2,) = n("MatMul", "mlp/fc2", [act, w("fc2.w", (4 * hidden, hidden))])
    (f2b,) = n("Add", "mlp/fc2", [f2, w("fc2.b", (hidden,))])
    (r2,) = n("Add", "mlp", [r1, f2b])
    return r2


NODES_PER_LAYER = 33


def make_transformer(
    target_nodes: int, break_every: int = 0, seed: int = 0, hidden: int = HIDDEN, heads: int = HEADS, seq: int = SEQ
) -> onnx.ModelProto:
    """Return a transformer-like model with about ``target_nodes`` nodes.

    ``break_every`` > 0 replaces the GELU of every Nth layer by a custom-domain op
    (no plugin registered), which splits the TensorRT engine there. ``hidden``, ``heads`` and ``seq``: a layer's
    width, its attention heads and the sequence (BERT-base: 768, 12 and 128, 12 layers: :func:`make_bert`).
    """
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = [
        numpy_helper.from_array(np.array([1, seq, heads, hidden // heads], np.int64), "shape_bshd"),
        numpy_helper.from_array(np.array([1, seq, hidden], np.int64), "shape_bsh"),
        numpy_helper.from_array(np.array(1.0 / np.sqrt(hidden // heads), np.float32), "attn_scale"),
        numpy_helper.from_array(np.array(np.sqrt(2.0), np.float32), "sqrt2"),
        numpy_helper.from_array(np.array(1.0, np.float32), "one"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ]
    x = "hidden_states"
    layers = max(1, round(target_nodes / NODES_PER_LAYER))
    for i in range(layers):
        custom = break_every > 0 and (i + 1) % break_every == 0
        x = _layer(i, x, nodes, inits, rng, custom, hidden)
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="/output/Identity"))
    graph = helper.make_graph(
        nodes,
        "synthetic_transformer",
        [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, [1, seq, hidden])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, seq, hidden])],
        inits,
    )
    opsets = [helper.make_opsetid("", 17)]
    if break_every:
        opsets.append(helper.make_opsetid("com.example", 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="splitscope-bench")
    model.ir_version = 8
    return model


def make_bert() -> onnx.ModelProto:
    """A BERT-base-size encoder (12 layers, hidden 768, 12 heads, sequence 128, batch 1; random weights, 85M of
    them): the transformer a CPU profile is checked on."""
    return make_transformer(12 * NODES_PER_LAYER, hidden=768, heads=12, seq=128)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path)
    ap.add_argument("--nodes", type=int, nargs="+", default=[1000, 10000, 50000])
    ap.add_argument("--break-every", type=int, default=0)
    ap.add_argument("--bert", action="store_true", help="also a BERT-base-size encoder: bert_base.onnx")
    ap.add_argument(
        "--hidden",
        type=int,
        default=HIDDEN,
        help=f"a layer's width (default {HIDDEN}); 16 keeps a 1,000,000-node model under 2 GB, protobuf's limit",
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.bert:
        m = make_bert()
        onnx.save(m, args.out / "bert_base.onnx")
        print(args.out / "bert_base.onnx", len(m.graph.node), "nodes")
    for n in args.nodes:
        m = make_transformer(n, args.break_every, hidden=args.hidden)
        width = "" if args.hidden == HIDDEN else f"_h{args.hidden}"
        path = args.out / f"transformer_{n // 1000}k{width}{'_split' if args.break_every else ''}.onnx"
        onnx.save(m, path)
        print(path, len(m.graph.node), "nodes")


if __name__ == "__main__":
    main()
