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


class _Cupy:
    """CuPy arrays on the current stream: the inputs copied over, events, synchronisation, the copy back."""

    def __init__(self) -> None:
        self.cp = importlib.import_module("cupy")

    def device(self, a: np.ndarray) -> Any:
        return self.cp.asarray(a)

    def event(self) -> Any:
        return self.cp.cuda.Event()

    def sync(self) -> None:
        self.cp.cuda.get_current_stream().synchronize()

    def host(self, x: Any) -> np.ndarray:
        return self.cp.asnumpy(x)  # type: ignore[no-any-return]

    def elapsed(self, start: Any, end: Any) -> float:
        return float(self.cp.cuda.get_elapsed_time(start, end))


class _Torch:
    """PyTorch's CUDA tensors (for Triton): the user's kernel's own framework, not ours."""

    def __init__(self) -> None:
        self.torch = importlib.import_module("torch")

    def device(self, a: np.ndarray) -> Any:
        return self.torch.from_numpy(np.ascontiguousarray(a)).cuda()

    def event(self) -> Any:
        return self.torch.cuda.Event(enable_timing=True)

    def sync(self) -> None:
        self.torch.cuda.synchronize()

    def host(self, x: Any) -> np.ndarray:
        return x.detach().cpu().numpy()  # type: ignore[no-any-return]

    def elapsed(self, start: Any, end: Any) -> float:
        return float(start.elapsed_time(end))


def launches(
    path: str, inputs: list[np.ndarray], outputs: list[tuple[tuple[int, ...], Any]], iters: int = 50, warmup: int = 5
) -> Generator[tuple[int, float], None, Timed]:
    """As :func:`splitscope.engine.runtime.nvrtc.launches`, for a Python kernel: device time by events around each
    call, host time around call and synchronisation."""
    import time

    mod = _load(path)
    fw: _Cupy | _Torch = _Torch() if getattr(mod, "ARRAYS", "cupy") == "torch" else _Cupy()
    dev = [fw.device(a) for a in inputs]

    def call() -> Any:
        return mod.kernel(*dev)

    out = None
    for _ in range(max(warmup, 1)):
        out = call()
    fw.sync()
    times = []
    for i in range(iters):
        start, end = fw.event(), fw.event()
        start.record()
        out = call()
        end.record()
        end.synchronize()
        ms = fw.elapsed(start, end)
        times.append(ms)
        yield i, ms
    host_ms = []
    for _ in range(min(iters, 50)):
        t0 = time.perf_counter()
        call()
        fw.sync()
        host_ms.append(1e3 * (time.perf_counter() - t0))
    outs = list(out) if isinstance(out, tuple | list) else [out]
    got = [fw.host(o) for o in outs]
    for g, (shape, _) in zip(got, outputs, strict=False):
        if tuple(g.shape) != tuple(shape):
            raise CompileError(f"kernel() returned shape {list(g.shape)}, the op's output is {list(shape)}")
    return Timed([g.astype(np.dtype(d)) for g, (_, d) in zip(got, outputs, strict=False)], times, host_ms)
