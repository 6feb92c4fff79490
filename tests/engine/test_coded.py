"""Coded columns read and change as the lists they replace, whatever is done to them."""

from __future__ import annotations

import copy
import pickle
import random

import pytest
from splitscope.engine.model.coded import Coded


def test_every_list_operation_gives_what_a_list_gives():
    rng = random.Random(7)
    words = ["", "Conv", "Relu", "MatMul", None, ("a", 1), ()]
    col, ref = Coded(), []
    for _ in range(3000):
        op = rng.randrange(8)
        w = rng.choice(words)
        if op == 0:
            col.append(w), ref.append(w)
        elif op == 1:
            more = [rng.choice(words) for _ in range(rng.randrange(5))]
            col.extend(more), ref.extend(more)
        elif op == 2 and ref:
            i = rng.randrange(-len(ref), len(ref))
            col[i] = w
            ref[i] = w
        elif op == 3 and ref:
            a, b = sorted(rng.randrange(len(ref) + 1) for _ in range(2))
            new = [rng.choice(words) for _ in range(b - a)]
            col[a:b] = new
            ref[a:b] = new
        elif op == 4:
            k = rng.randrange(4)
            col.fill(w, k), ref.extend([w] * k)
        elif op == 5 and ref:
            i = rng.randrange(len(ref))
            del col[i]
            del ref[i]
        elif op == 6:
            i = rng.randrange(len(ref) + 1)
            col.insert(i, w), ref.insert(i, w)
        elif op == 7:
            other = Coded([rng.choice(words) for _ in range(rng.randrange(4))])
            col.extend(other), ref.extend(list(other))
        assert len(col) == len(ref)
    assert col == ref and list(col) == ref and col.tolist() == ref
    assert [col[i] for i in range(-len(ref), len(ref))] == [ref[i] for i in range(-len(ref), len(ref))]
    assert col[3:40:3] == ref[3:40:3] and col[::-1] == ref[::-1]
    assert len(col.values) <= len(words)
    with pytest.raises(IndexError):
        col[len(ref)]


def test_values_by_identity_keep_equal_objects_apart_and_survive_pickling():
    a, b = {"axis": 1}, {"axis": 1}
    col = Coded([a, b, a], by_identity=True)
    assert col[0] is a and col[1] is b and col[2] is a and len(col.values) == 2
    for again in (pickle.loads(pickle.dumps(col)), copy.deepcopy(col), col.copy()):
        assert again == col and again[0] is again[2] and again[0] is not again[1]
        again.append(again[0])
        assert len(again.values) == 2 and len(col) == 3


def test_a_copy_is_its_own():
    col = Coded(["x", "y"])
    c = col.copy()
    c[0] = "z"
    c.append("w")
    assert col == ["x", "y"] and c == ["z", "y", "w"]


def test_the_collector_walks_the_distinct_values_not_the_rows():
    import gc

    col = Coded(["Conv", "Relu"] * 50_000)
    walked = sum(len(gc.get_referents(o)) for o in gc.get_referents(col))
    assert len(col) == 100_000 and walked < 20


def test_a_blank_is_code_zero_before_any_row_and_stays_so_in_copies():
    col = Coded(["a"], blank="")
    col.codes.append(0)
    assert col == ["a", ""] and col.values[0] == ""
    for again in (col.copy(), pickle.loads(pickle.dumps(col))):
        again.codes.append(0)
        assert again[-1] == "" and again[:2] == ["a", ""]
