"""A kernel written in Python on the GPU: a CuPy function (a ``cupy.RawKernel``, an elementwise kernel, plain
CuPy array code) or a Triton kernel launched on PyTorch tensors, run and timed like a ``.cu`` kernel.

The convention, for ``--source my_kernel.py``: the module defines ``kernel(*inputs)`` taking the extract's inputs
in order and returning its output (or a tuple of them). ``ARRAYS = "cupy"`` (the default) passes CuPy arrays;
``ARRAYS = "torch"`` passes CUDA tensors of PyTorch (for Triton). Time is taken by CUDA events on the current
stream around each call, after a warm-up (a Triton kernel compiles on its first call).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Generator
from pathlib import Path
from typing import Any

import numpy as np
from splitscope.engine.runtime.nvrtc import CompileError, Timed


def is_python(source: str) -> bool:
    """Whether ``source`` (a path or a text) is a Python kernel module rather than CUDA C++."""
    return source.endswith(".py") and Path(source).is_file()


def _load(path: str) -> Any:
    from splitscope.engine.kernel.extract import import_file

    try:
        mod = import_file(path, "splitscope_kernel")
    except ImportError as e:
        raise CompileError(str(e)) from None
    except SyntaxError as e:
        raise CompileError(f"line {e.lineno}: {e.msg}", e.lineno) from None
    except Exception as e:  # noqa: BLE001 - the user's module
        raise CompileError(f"{path} raised {type(e).__name__} on import: {e}") from None
    if not callable(getattr(mod, "kernel", None)):
        raise CompileError(f"{path}: define kernel(*inputs) returning the output (see the convention)")
    return mod


def launches(
    path: str, inputs: list[np.ndarray], outputs: list[tuple[tuple[int, ...], Any]], iters: int = 50, warmup: int = 5
) -> Generator[tuple[int, float], None, Timed]:
    """As :func:`splitscope.engine.runtime.nvrtc.launches`, for a Python kernel."""
    import time

    mod = _load(path)
    arrays = getattr(mod, "ARRAYS", "cupy")
    if arrays == "torch":
        torch = importlib.import_module("torch")  # the user's kernel's own framework, not ours
        dev = [torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in inputs]

        def event() -> Any:
            return torch.cuda.Event(enable_timing=True)

        def sync() -> None:
            torch.cuda.synchronize()

        def host(x: Any) -> np.ndarray:
            return x.detach().cpu().numpy()

        def elapsed(start: Any, end: Any) -> float:
            return float(start.elapsed_time(end))
    else:
        cupy = importlib.import_module("cupy")
        dev = [cupy.asarray(a) for a in inputs]

        def event() -> Any:
            return cupy.cuda.Event()

        def sync() -> None:
            cupy.cuda.get_current_stream().synchronize()

        def host(x: Any) -> np.ndarray:
            return cupy.asnumpy(x)

        def elapsed(start: Any, end: Any) -> float:
            return float(cupy.cuda.get_elapsed_time(start, end))

    def call() -> Any:
        return mod.kernel(*dev)

    out = None
    for _ in range(max(warmup, 1)):
        out = call()
    sync()
    times = []
    for i in range(iters):
        start, end = event(), event()
        start.record()
        out = call()
        end.record()
        end.synchronize()
        ms = elapsed(start, end)
        times.append(ms)
        yield i, ms
    host_ms = []
    for _ in range(min(iters, 50)):
        t0 = time.perf_counter()
        call()
        sync()
        host_ms.append(1e3 * (time.perf_counter() - t0))
    outs = list(out) if isinstance(out, tuple | list) else [out]
    got = [host(o) for o in outs]
    for g, (shape, _) in zip(got, outputs, strict=False):
        if tuple(g.shape) != tuple(shape):
            raise CompileError(f"kernel() returned shape {list(g.shape)}, the op's output is {list(shape)}")
    return Timed([g.astype(np.dtype(d)) for g, (_, d) in zip(got, outputs, strict=False)], times, host_ms)
