"""Splitscope: which parts of an ONNX model TensorRT takes, which need custom CUDA, measured.

The Python API: ``splitscope.analyze``, ``profile``, ``calibrate``, ``optimize``, ``engine_report``, ``report`` and
``kernel`` (:mod:`splitscope.engine.api`, imported on first use, so that ``import splitscope`` stays instant), with
``CancelToken`` and ``SplitscopeError``.

Installed, ``splitscope.engine``, ``.profiler``, ``.gui`` and ``.resources`` are
the repository's top-level folders of those names (setuptools ``package-dir``).
Run from a checkout without installing (``python main.py``, pytest), this
package's path also covers the repository root, so the same imports work there.
"""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"

_here = Path(__file__).resolve().parent
if (
    not (_here / "engine").is_dir()
    and (_here.parent / "engine" / "__init__.py").is_file()
    and (_here.parent / "main.py").is_file()
):
    __path__.append(str(_here.parent))  # a checkout: the design card's folders sit beside this one
del _here, Path

_API = ("analyze", "profile", "calibrate", "optimize", "engine_report", "report", "kernel")
_TYPES = {"CancelToken": "jobs", "SplitscopeError": "errors", "JobCancelledError": "errors"}
__all__ = [*_API, *_TYPES, "__version__"]


def __getattr__(name: str) -> object:
    import importlib

    if name in _API:
        return getattr(importlib.import_module("splitscope.engine.api"), name)
    if name in _TYPES:
        return getattr(importlib.import_module(f"splitscope.engine.{_TYPES[name]}"), name)
    raise AttributeError(f"module 'splitscope' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
