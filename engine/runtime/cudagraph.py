"""The model's latency as one CUDA graph (ONNX Runtime's ``enable_cuda_graph``): the run is captured once and then
replayed, so the host launches nothing node by node. Against the latency of the same session without it, the
difference is launch overhead: the part of the device's idle time between kernels that a graph removes (TensorRT's
fusion removes it too, by launching fewer kernels). That is the graph-bound share, measured rather than inferred.

ONNX Runtime captures only a model whose nodes all run on CUDA, with its inputs and outputs bound at fixed device
addresses and of fixed shapes; for any other it says why, and so does :func:`graph_latency`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from splitscope.engine.errors import JobCancelledError
from splitscope.engine.jobs import CancelToken


def graph_latency(
    be: Any,
    feeds: dict[str, np.ndarray],
    outputs: list[tuple[str, Any]],
    iterations: int,
    warmup: int = 3,
    cancel: CancelToken | None = None,
) -> tuple[list[float], str]:
    """Milliseconds of ``iterations`` replays of the model captured as a CUDA graph by ``be`` (an
    :class:`~splitscope.engine.runtime.ort.OrtBackend` on CUDA), its ``outputs`` (name, value) as one plain run
    gave them (the graph's outputs are bound at their shapes and types); or no times and why not (one line)."""
    if not all(isinstance(a, np.ndarray) for _, a in outputs):
        return [], "an output is not a tensor (a sequence or a map), which a CUDA graph cannot bind"
    ort = be.ort
    cancel = cancel or CancelToken()
    try:
        sess = be.graph_session()
        io = sess.io_binding()
        held = []  # the bound values: their addresses are the graph's
        for name, a in feeds.items():
            v = ort.OrtValue.ortvalue_from_numpy(a, "cuda", 0)
            held.append(v)
            io.bind_ortvalue_input(name, v)
        for name, a in outputs:
            v = ort.OrtValue.ortvalue_from_shape_and_type(list(a.shape), a.dtype.type, "cuda", 0)
            held.append(v)
            io.bind_ortvalue_output(name, v)
        for _ in range(max(warmup, 2)):  # the first run captures the graph, the next ones replay it
            cancel.raise_if_cancelled()
            sess.run_with_iobinding(io)
            io.synchronize_outputs()
        times = []
        for _ in range(iterations):
            cancel.raise_if_cancelled()
            a = time.perf_counter()
            sess.run_with_iobinding(io)
            io.synchronize_outputs()
            times.append((time.perf_counter() - a) * 1000)
    except JobCancelledError:
        raise
    except Exception as e:  # noqa: BLE001 - ORT's own errors: a node off CUDA, shapes that move, a capture refused
        text = " ".join(str(e).split())
        text = text.split("] ", 1)[-1] if text.startswith("[ONNXRuntimeError]") else text
        return [], f"ONNX Runtime could not run it as a CUDA graph ({text[:200] or type(e).__name__})"
    return times, ""
