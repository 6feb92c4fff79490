"""The benchmark scripts' model makers, loaded by file path: ``bench/`` never goes on ``sys.path`` (its ``netron/``
folder would hide the real ``netron`` package from every later test)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench(name: str) -> ModuleType:
    """``bench/NAME.py`` as a module of its own (``splitscope_bench.NAME``), loaded once."""
    key = f"splitscope_bench.{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None, name
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module


def make_transformer(*args, **kwargs):  # type: ignore[no-untyped-def]
    """``bench/make_models.py``'s transformer export."""
    return load_bench("make_models").make_transformer(*args, **kwargs)
