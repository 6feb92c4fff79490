"""A large model is freed a step at a time on a thread of its own once nothing else holds it (engine.jobs.retire):
never a container something still uses, never while another holder remains."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import ClassVar

import pytest
from splitscope.engine import jobs
from splitscope.engine.jobs import retire


@pytest.fixture(autouse=True)
def _these_classes_count_as_the_engines(monkeypatch):
    """retire walks only the engine's own objects; the small classes here stand for them."""
    monkeypatch.setattr(jobs, "_engine_object", lambda v: type(v).__module__ in (__name__, "splitscope.engine.model"))


@dataclass(slots=True)
class Inner:
    nodes: list[object] = field(default_factory=list)
    names: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class Model:
    inner: Inner
    order: list[int]


def _model(n: int) -> Model:
    return Model(Inner([object() for _ in range(n)], {str(k): k for k in range(n)}), list(range(n)))


_BEFORE: set[threading.Thread] = set()


def _mine() -> list[threading.Thread]:
    """The retiring threads this test started (an earlier test's window may have some waiting still)."""
    return [t for t in threading.enumerate() if t.name == "splitscope-retire" and t not in _BEFORE]


@pytest.fixture(autouse=True)
def _others_before():
    _BEFORE.clear()
    _BEFORE.update(t for t in threading.enumerate() if t.name == "splitscope-retire")


def _wait_retired(timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while _mine():
        assert time.monotonic() < end, "the retiring thread never finished"
        time.sleep(0.01)


class Recorded(list):
    """A list that says each time a slice of it is deleted."""

    steps: ClassVar[list[int]] = []

    def __delitem__(self, key: object) -> None:
        Recorded.steps.append(len(self))
        super().__delitem__(key)  # type: ignore[arg-type]


def test_a_model_nothing_else_holds_is_emptied_in_steps_and_what_is_shared_is_left_alone():
    Recorded.steps = []
    m = _model(50_000)
    m.order = Recorded(range(50_000))
    shared_names = m.inner.names  # something else still uses this dict
    retire(m, chunk=1000)
    del m
    _wait_retired()
    assert len(Recorded.steps) == 50 and Recorded.steps[0] == 50_000  # fifty steps of a thousand
    assert len(shared_names) == 50_000  # untouched: it is still in use here


def test_it_waits_for_the_last_other_holder_and_empties_nothing_before():
    m = _model(20_000)
    nodes = m.inner.nodes
    keep = [m]  # another holder, the window's, say
    retire(m, chunk=1000)
    del m
    time.sleep(0.2)
    assert len(nodes) == 20_000 and len(keep[0].order) == 20_000  # still held: nothing emptied
    keep.clear()
    del nodes
    _wait_retired()


def test_it_lets_go_when_another_holder_stays():
    m = _model(10)
    other = m
    retire(m, wait_s=0.2)
    _wait_retired(5)
    assert other.order == list(range(10)) and len(other.inner.nodes) == 10


def test_retiring_again_gives_its_thread_more_time():
    m = _model(10)
    retire(m, wait_s=0.3)
    time.sleep(0.2)
    retire(m, wait_s=2.0)  # replaced again elsewhere: the same thread waits on
    time.sleep(0.4)  # past the first deadline
    assert _mine()
    del m
    _wait_retired()


def test_memory_goes_back_to_the_system_once_a_model_is_freed_not_when_others_still_hold_it(monkeypatch):
    asked: list[int] = []
    monkeypatch.setattr(jobs, "give_back_free_memory", lambda: asked.append(1))
    m = _model(5_000)
    other = m
    retire(m, wait_s=0.2)
    del m
    _wait_retired(5)
    assert asked == []  # let go, not freed: nothing to give back
    retire(other)
    del other
    _wait_retired()
    assert asked == [1]
