"""Seeded mutations of real ONNX models, at the byte and the protobuf level, for the fuzz test and
``bench/fuzz_campaign.py``. Every mutation is a plain function of (rng, model bytes) -> case."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import onnx
from onnx import AttributeProto, TensorProto

from tests.engine.models import LIGHT_DIR

ROOT = Path(__file__).resolve().parents[2]


def seed_models() -> list[Path]:
    """Real models to mutate: the sample, two light zoo models, the three PyTorch exports."""
    return [
        ROOT / "resources" / "sample.onnx",
        LIGHT_DIR / "light_squeezenet.onnx",
        LIGHT_DIR / "light_inception_v1.onnx",
        ROOT / "tests" / "data" / "torch_transformer.onnx",
        ROOT / "tests" / "data" / "torch_transformer_dynamo.onnx",
        ROOT / "tests" / "data" / "torch_detector_if.onnx",
    ]


@dataclass
class Case:
    """One mutated model: its bytes, side files (external data) and what was done."""

    data: bytes
    what: str
    side: dict[str, bytes] = field(default_factory=dict)


# Byte level ---------------------------------------------------------------------------------------


def _truncate(rng: random.Random, b: bytes) -> Case:
    k = rng.randrange(len(b))
    return Case(b[:k], f"truncate at {k}")


def _flip(rng: random.Random, b: bytes) -> Case:
    out = bytearray(b)
    n = rng.choice((1, 4, 32))
    for _ in range(n):
        out[rng.randrange(len(out))] = rng.randrange(256)
    return Case(bytes(out), f"flip {n} bytes")


def _insert(rng: random.Random, b: bytes) -> Case:
    k = rng.randrange(len(b))
    junk = bytes(rng.randrange(256) for _ in range(rng.choice((1, 7, 64))))
    return Case(b[:k] + junk + b[k:], f"insert {len(junk)} bytes at {k}")


def _zero_range(rng: random.Random, b: bytes) -> Case:
    k = rng.randrange(len(b))
    n = min(len(b) - k, rng.choice((8, 256, 4096)))
    return Case(b[:k] + bytes(n) + b[k + n :], f"zero {n} bytes at {k}")


def _pad(rng: random.Random, b: bytes) -> Case:
    kind = rng.choice(("zeros", "ff", "random", "repeat"))
    n = rng.choice((1, 1000, 3_000_000))
    tail = {"zeros": bytes(n), "ff": b"\xff" * n, "random": rng.randbytes(n), "repeat": (b * 3)[:n]}[kind]
    return Case(b + tail, f"append {n} {kind} bytes")


def _duplicate(rng: random.Random, b: bytes) -> Case:
    k = rng.randrange(len(b))
    n = min(len(b) - k, rng.choice((16, 512)))
    return Case(b[: k + n] + b[k : k + n] + b[k + n :], f"duplicate {n} bytes at {k}")


BYTE_MUTATIONS: list[Callable[[random.Random, bytes], Case]] = [
    _truncate,
    _flip,
    _insert,
    _zero_range,
    _pad,
    _duplicate,
]


# Protobuf level -----------------------------------------------------------------------------------


def _graphs(m: onnx.ModelProto) -> list[onnx.GraphProto]:
    out = [m.graph]
    stack = [m.graph]
    while stack:
        g = stack.pop()
        for n in g.node:
            for a in n.attribute:
                subs = [a.g] if a.type == AttributeProto.GRAPH else list(a.graphs)
                out.extend(subs)
                stack.extend(subs)
    return out


def _any_node(rng: random.Random, m: onnx.ModelProto) -> onnx.NodeProto | None:
    gs = [g for g in _graphs(m) if len(g.node)]
    if m.functions and rng.random() < 0.2:
        f = rng.choice(list(m.functions))
        if len(f.node):
            return rng.choice(list(f.node))
    return rng.choice(list(rng.choice(gs).node)) if gs else None


def _weird_text(rng: random.Random) -> str:
    return rng.choice(["", "\n", "a\x00b", "../../etc/passwd", "x" * 5000, "ü/ñ/\u202e", "/a//b/", "::", " "])


def _p_node_name(rng, m):  # type: ignore[no-untyped-def]
    n = _any_node(rng, m)
    if n is not None:
        n.name = _weird_text(rng)
    return "weird node name"


def _p_rewire(rng, m):  # type: ignore[no-untyped-def]
    n = _any_node(rng, m)
    if n is None or not len(n.input):
        return "rewire (none)"
    names = [o for g in _graphs(m) for x in g.node for o in x.output] or ["nowhere"]
    k = rng.randrange(len(n.input))
    n.input[k] = rng.choice([*names, "does_not_exist", "", n.output[0] if len(n.output) else "self"])
    return "rewire an input"


def _p_cycle(rng, m):  # type: ignore[no-untyped-def]
    g = m.graph
    if len(g.node) < 2:
        return "cycle (none)"
    i = rng.randrange(len(g.node) - 1)
    later = g.node[rng.randrange(i + 1, len(g.node))]
    if len(g.node[i].input) and len(later.output):
        g.node[i].input[0] = later.output[0]
    return "cycle through a later node"


def _p_attr(rng, m):  # type: ignore[no-untyped-def]
    n = _any_node(rng, m)
    if n is None:
        return "attr (none)"
    a = n.attribute.add() if not len(n.attribute) or rng.random() < 0.3 else rng.choice(list(n.attribute))
    a.name = a.name or rng.choice(["kernel_shape", "axis", "to", "perm", "mode", "body", "zzz"])
    kind = rng.choice(["str", "int", "ints", "float", "tensor", "graph", "bad_type", "huge"])
    a.ClearField("s")
    a.ClearField("ints")
    if kind == "str":
        a.type, a.s = AttributeProto.STRING, rng.choice([b"33", b"\xff\xfe", b""])
    elif kind == "int":
        a.type, a.i = AttributeProto.INT, rng.choice([-3, 0, 99, 2**62])
    elif kind == "ints":
        a.type = AttributeProto.INTS
        a.ints.extend(rng.choice([[], [-1, -1], [0] * 40, [2**40]]))
    elif kind == "float":
        a.type, a.f = AttributeProto.FLOAT, rng.choice([float("nan"), float("inf"), -1.0])
    elif kind == "tensor":
        a.type = AttributeProto.TENSOR
        a.t.data_type = rng.choice([0, 99, TensorProto.UINT64, TensorProto.STRING])
        a.t.dims.extend([rng.choice([-1, 0, 3, 2**31])])
    elif kind == "graph":
        a.type = AttributeProto.GRAPH
        a.g.name = "empty"
    elif kind == "bad_type":
        a.type = AttributeProto.UNDEFINED
    else:
        a.type = AttributeProto.INTS
        a.ints.extend([1] * 10000)
    return f"attribute {a.name} as {kind}"


def _p_elem_type(rng, m):  # type: ignore[no-untyped-def]
    vis = [*m.graph.input, *m.graph.output, *m.graph.value_info]
    if not vis:
        return "elem (none)"
    vi = rng.choice(vis)
    vi.type.tensor_type.elem_type = rng.choice([0, 13, 99, 2**20, TensorProto.STRING, TensorProto.COMPLEX64])
    return "element type"


def _p_dims(rng, m):  # type: ignore[no-untyped-def]
    choice = rng.random()
    if choice < 0.5 and len(m.graph.initializer):
        t = rng.choice(list(m.graph.initializer))
        if len(t.dims):
            t.dims[rng.randrange(len(t.dims))] = rng.choice([-1, 0, 2**40, 7])
        return "initializer dims"
    vis = [*m.graph.input, *m.graph.output]
    vi = rng.choice(vis)
    shape = vi.type.tensor_type.shape
    if len(shape.dim):
        d = shape.dim[rng.randrange(len(shape.dim))]
        if rng.random() < 0.5:
            d.dim_value = rng.choice([-5, 0, 2**62])
        else:
            d.dim_param = _weird_text(rng)
    return "value dims"


def _p_external(rng, m):  # type: ignore[no-untyped-def]
    if not len(m.graph.initializer):
        return "external (none)"
    t = rng.choice(list(m.graph.initializer))
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for key, value in rng.choice(
        [
            [("location", "w.bin")],
            [("location", "w.bin"), ("offset", "abc")],
            [("location", "w.bin"), ("length", "-1")],
            [("location", "w\x00.bin")],
            [("location", "/etc/passwd")],
            [("location", "missing.bin")],
            [("location", "w.bin"), ("location", "x.bin")],
            [("offset", "3")],
            [("location", "w.bin"), ("offset", "1e3")],
            [("location", ".")],
        ]
    ):
        e = t.external_data.add()
        e.key, e.value = key, value
    return "external data record"


def _p_sparse(rng, m):  # type: ignore[no-untyped-def]
    import numpy as np
    from onnx import helper, numpy_helper

    vals = numpy_helper.from_array(
        np.ones(rng.choice([0, 1, 3]), np.float32),
        rng.choice(["sp", m.graph.input[0].name if len(m.graph.input) else "sp"]),
    )
    idx = numpy_helper.from_array(np.zeros(len(vals.float_data) or 1, np.int64), "")
    sp = helper.make_sparse_tensor(vals, idx, [rng.choice([4, -1, 0])])
    if rng.random() < 0.5:
        m.graph.sparse_initializer.append(sp)
    else:
        n = _any_node(rng, m)
        if n is not None:
            n.attribute.append(helper.make_attribute("sparse_value", sp))
    return "sparse tensor"


def _p_delete(rng, m):  # type: ignore[no-untyped-def]
    what = rng.choice(["node", "initializer", "input", "output", "all_nodes", "opsets", "functions"])
    g = m.graph
    if what == "node" and len(g.node):
        del g.node[rng.randrange(len(g.node))]
    elif what == "initializer" and len(g.initializer):
        del g.initializer[rng.randrange(len(g.initializer))]
    elif what == "input" and len(g.input):
        del g.input[rng.randrange(len(g.input))]
    elif what == "output" and len(g.output):
        del g.output[rng.randrange(len(g.output))]
    elif what == "all_nodes":
        del g.node[:]
    elif what == "opsets":
        del m.opset_import[:]
    elif what == "functions":
        del m.functions[:]
    return f"delete {what}"


def _p_opset(rng, m):  # type: ignore[no-untyped-def]
    if rng.random() < 0.5 and len(m.opset_import):
        rng.choice(list(m.opset_import)).version = rng.choice([0, -1, 1, 6, 999, 2**40])
    else:
        m.ir_version = rng.choice([0, 1, 3, 99, -1])
    return "opset or IR version"


def _p_op(rng, m):  # type: ignore[no-untyped-def]
    n = _any_node(rng, m)
    if n is not None:
        n.op_type = rng.choice(["", "NoSuchOp", "Loop", "If", "TopK", "NonZero", "Scan", "Constant", "Reshape"])
        if rng.random() < 0.3:
            n.domain = rng.choice(["com.custom", "ai.onnx.ml", "\n"])
    return "op type"


def _p_dup_outputs(rng, m):  # type: ignore[no-untyped-def]
    g = m.graph
    if len(g.node) >= 2 and len(g.node[0].output):
        g.node[-1].output[0] = g.node[0].output[0]
    return "duplicate producer"


PROTO_MUTATIONS = [
    _p_node_name,
    _p_rewire,
    _p_cycle,
    _p_attr,
    _p_elem_type,
    _p_dims,
    _p_external,
    _p_sparse,
    _p_delete,
    _p_opset,
    _p_op,
    _p_dup_outputs,
]


def mutate(rng: random.Random, seed: bytes) -> Case:
    """One case: a byte mutation (40%), or one to three protobuf mutations then maybe a byte one."""
    if rng.random() < 0.4:
        return rng.choice(BYTE_MUTATIONS)(rng, seed)
    m = onnx.ModelProto.FromString(seed)
    done = [rng.choice(PROTO_MUTATIONS)(rng, m) for _ in range(rng.choice((1, 1, 2, 3)))]
    data = m.SerializeToString()
    side: dict[str, bytes] = {}
    if any(d.startswith("external") for d in done):
        side["w.bin"] = bytes(rng.choice((0, 10, 1 << 16)))
    case = Case(data, "; ".join(done), side)
    if rng.random() < 0.15:
        extra = rng.choice(BYTE_MUTATIONS)(rng, data)
        case = Case(extra.data, f"{case.what}; {extra.what}", side)
    return case
