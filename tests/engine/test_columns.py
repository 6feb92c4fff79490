"""The wire format a column at a time: every field of many messages against protobuf's own reading, and strings
numbered by content against a dict."""

from __future__ import annotations

import random

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from splitscope.engine.onnxio import columns as C
from splitscope.engine.onnxio.light import read_light
from splitscope.engine.onnxio.wire import WireError

from tests.engine import models as M


def _concat(messages: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The messages side by side in one buffer (a byte of padding between), with their starts and ends."""
    buf, starts, ends = bytearray(), [], []
    for m in messages:
        buf += b"\xff"
        starts.append(len(buf))
        buf += m
        ends.append(len(buf))
    buf += b"\xff" * 8
    return np.frombuffer(bytes(buf), np.uint8), np.array(starts, np.int64), np.array(ends, np.int64)


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def test_fields_of_real_nodes_match_protobufs_reading():
    graph = onnx.load(M.LIGHT_DIR / "light_inception_v2.onnx", load_external_data=False).graph
    nodes = list(graph.node)
    u8, starts, ends = _concat([n.SerializeToString() for n in nodes])
    f = C.fields(u8, starts, ends)
    buf = u8.tobytes()
    for number, column in ((1, "input"), (2, "output")):
        msg, at, size = f.of(number)
        got: list[list[str]] = [[] for _ in nodes]
        for i, a, n in zip(msg.tolist(), at.tolist(), size.tolist(), strict=True):
            got[i].append(buf[a : a + n].decode())
        assert got == [list(getattr(n, column)) for n in nodes]
    at, size = f.last_of(4, len(nodes))
    assert [buf[a : a + n].decode() for a, n in zip(at.tolist(), size.tolist(), strict=True)] == [
        n.op_type for n in nodes
    ]
    assert f.last_of(7, len(nodes))[1].tolist() == [len(n.domain) if n.domain else -1 for n in nodes]


def test_varints_fixed_widths_and_negative_values():
    attrs = [
        h.make_attribute("axis", -1),  # a negative int64: a ten-byte varint
        h.make_attribute("alpha", 0.25),  # a float: fixed32
        h.make_attribute("pads", [0, 300, 2**40, -7]),  # repeated int64 (unpacked), multi-byte varints
        h.make_attribute("s", "x" * 300),  # a two-byte length
    ]
    u8, starts, ends = _concat([a.SerializeToString() for a in attrs])
    f = C.fields(u8, starts, ends)
    ints = f.msg[f.number == 3], f.at[f.number == 3]
    assert ints[1][ints[0] == 0].tolist() == [-1]
    assert f.at[(f.msg == 2) & (f.number == 8)].tolist() == [0, 300, 2**40, -7]
    fixed = f.at[(f.msg == 1) & (f.number == 2)][0]
    assert np.frombuffer(u8[fixed : fixed + 4].tobytes(), "<f4")[0] == 0.25
    msg, _, size = f.of(4)
    assert size[msg == 3].tolist() == [300]


def test_a_long_message_is_read_one_at_a_time_with_the_same_fields(monkeypatch):
    """An unpacked repeated float (a field per value: allowed, never written by protobuf for ONNX's packed fields)
    among short messages: the lockstep stops at the long one and reads it in order."""
    long = b"".join(b"\x25" + np.float32(i).tobytes() for i in range(3000)) + b"\x42\x01w"  # 4 fixed32s, name "w"
    msgs = [h.make_attribute(f"a{i}", i).SerializeToString() for i in range(40)] + [long]
    u8, starts, ends = _concat(msgs)
    calls = []
    real = C._one
    monkeypatch.setattr(C, "_one", lambda *a: calls.append(a) or real(*a))
    f = C.fields(u8, starts, ends)
    assert len(calls) == 1
    sel = f.msg == 40
    assert f.number[sel].tolist() == [4] * 3000 + [8]
    values = [np.frombuffer(u8[a : a + 4].tobytes(), "<f4")[0] for a in f.at[sel][:3000].tolist()]
    assert values == [float(i) for i in range(3000)]
    assert f.size[sel][-1] == 1 and chr(u8[f.at[sel][-1]]) == "w"
    assert np.all(np.diff(f.msg) >= 0)


@pytest.mark.parametrize("cut", [1, 2, 5])
def test_a_message_cut_short_is_an_error(cut):
    m = h.make_node("Relu", ["x" * 200], ["y"], name="n").SerializeToString()
    u8, starts, ends = _concat([m])
    with pytest.raises((WireError, IndexError)):
        C.fields(u8, starts, ends - cut)


def test_intern_numbers_strings_as_a_dict_would():
    rng = random.Random(3)
    alphabet = "ab/._0123456789é卷"
    pool = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))) for _ in range(300)]
    pool += ["", "a", "a" * 8, "a" * 9, "a" * 16]  # around the word size
    strings = [rng.choice(pool) for _ in range(5000)]
    encoded = [s.encode() for s in strings]
    u8, starts, ends = _concat(encoded)
    rows, firsts = C.intern(u8, starts, ends - starts)
    seen: dict[str, int] = {}
    expected = [seen.setdefault(s, len(seen)) for s in strings]
    assert rows.tolist() == expected
    assert [strings[i] for i in firsts.tolist()] == list(seen)


def test_intern_refuses_a_collision_and_the_last_bytes(monkeypatch):
    u8, starts, ends = _concat([b"alpha", b"beta"])
    real = C._hashes

    def colliding(words, s, n):
        h1, h2 = real(words, s, n)
        return np.zeros_like(h1), h2  # the first hash alike, the second not

    monkeypatch.setattr(C, "_hashes", colliding)
    with pytest.raises(WireError):
        C.intern(u8, starts, ends - starts)
    monkeypatch.undo()
    tail = np.frombuffer(b"\xffabc", np.uint8)
    with pytest.raises(WireError):
        C.intern(tail, np.array([1]), np.array([3]))


def _odd_names_model():
    """Names past ASCII, a node reading 200 inputs (past the lockstep's steps), an input left out, a weight read by
    no node, a node with no name."""
    n_in = 200
    nodes = [h.make_node("Relu", ["x"], [f"r{i}/出力"], name=f"/块{i}/Relu") for i in range(n_in)]
    nodes.append(h.make_node("Concat", [f"r{i}/出力" for i in range(n_in)], ["cat"], name="/cat/Concat", axis=0))
    nodes.append(h.make_node("Clip", ["cat", "", "hi"], ["y"]))
    inits = [h.make_tensor("hi", T.FLOAT, [], [6.0]), M.w("unused_é", 3)]
    return M.model(
        nodes,
        [h.make_tensor_value_info("x", T.FLOAT, [1])],
        [h.make_tensor_value_info("y", T.FLOAT, [n_in])],
        inits,
    )


def test_light_reads_odd_names_and_long_nodes_as_onnx_does(tmp_path):
    path = M.save(_odd_names_model(), tmp_path / "odd.onnx")
    full = onnx.load(path).graph
    light = read_light(path)
    assert light is not None
    assert light.names == [n.name for n in full.node]
    assert light.inputs == [list(n.input) for n in full.node]
    assert light.outputs == [list(n.output) for n in full.node]
    assert light.weight_names == [t.name for t in full.initializer]
    assert [light.tensor_names[r] for r in light.weight_rows] == [t.name for t in full.initializer]


def test_light_gives_none_when_names_collide(tmp_path, monkeypatch):
    """A collision of the first hash the second does not share: no preview (the full load still reads the file)."""
    path = M.save(_odd_names_model(), tmp_path / "odd.onnx")
    real = C._hashes
    monkeypatch.setattr(C, "_hashes", lambda *a: (np.zeros_like(real(*a)[0]), real(*a)[1]))
    assert read_light(path) is None


def test_a_singular_field_given_twice_reads_its_last():
    m = h.make_node("Relu", ["x"], ["y"], name="first").SerializeToString() + b"\x1a\x04last"  # name (3) again
    u8, starts, ends = _concat([m, h.make_node("Relu", ["x"], ["y"]).SerializeToString()])
    at, size = C.fields(u8, starts, ends).last_of(3, 2)
    assert bytes(u8[at[0] : at[0] + size[0]]) == b"last" and size[1] == -1
    assert onnx.NodeProto.FromString(m).name == "last"


def test_a_coded_column_extended_by_itself():
    from splitscope.engine.model.coded import Coded

    c = Coded(["a", "b", "a"])
    c.extend(c)
    assert c == ["a", "b", "a", "a", "b", "a"]
