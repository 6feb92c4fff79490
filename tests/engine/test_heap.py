"""Freed memory goes back to the operating system after large work (engine.heap): the C library is asked where it
can be (glibc), and nothing happens elsewhere."""

from __future__ import annotations

import sys
import threading

import pytest
from splitscope.engine import heap
from splitscope.engine.errors import ModelLoadError
from splitscope.engine.split.analyze import analyze_model


def test_give_back_free_memory_asks_glibc_on_linux():
    asked = heap.give_back_free_memory()
    if sys.platform.startswith("linux") and heap._malloc_trim() is not None:
        assert asked is True
    else:
        assert asked is False


def test_give_back_free_memory_does_nothing_where_the_c_library_cannot_be_asked(monkeypatch):
    monkeypatch.setattr(heap, "_malloc_trim", lambda: None)
    assert heap.give_back_free_memory() is False


def test_give_back_free_memory_is_safe_from_many_threads_at_once():
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                heap.give_back_free_memory()
                bytearray(1 << 20)  # the heap in use meanwhile
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.parametrize("fails", [False, True])
def test_an_analysis_gives_memory_back_when_it_ends_or_fails(monkeypatch, tmp_path, fails):
    calls: list[int] = []
    monkeypatch.setattr("splitscope.engine.split.analyze.give_back_free_memory", lambda: calls.append(1))
    if fails:
        bad = tmp_path / "bad.onnx"
        bad.write_bytes(b"\x08")
        with pytest.raises(ModelLoadError):
            analyze_model(bad, parser="table")
    else:
        analyze_model(parser="table")
    assert calls == [1]
