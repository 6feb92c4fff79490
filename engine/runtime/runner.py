"""One interface over the backends that run a model: ONNX Runtime on the CPU and on CUDA, TensorRT and TensorRT-RTX.

A :class:`Runner` opens the model on its backend, takes the feeds, runs and times inferences, profiles per-node
times, measures the host-device copies the run implies, and closes. The profile, the generation profile, the
calibration statistics pass and the sweeps (through the profile) go through it, so a backend is one class here and
not a branch in each job. :func:`open_runner` gives the one for a backend name; each says what it cannot do in one
line (a TensorRT engine cannot feed a key/value cache back: the generation profile runs on ONNX Runtime).

Order of calls: ``open`` (a generator: a TensorRT build reports its phases), ``feeds``, then any of ``run``,
``time``, ``profile_nodes`` and ``copies``, then ``close``. ``infer`` runs once on given feeds and returns the asked
outputs, for the jobs that read them (the statistics pass, a decoder's cache).
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from splitscope.engine.jobs import CancelToken, JobEvent
from splitscope.engine.runtime.node_times import NodeTimes
from splitscope.engine.runtime.timing import Timing

if TYPE_CHECKING:
    from splitscope.engine.runtime.ort_runner import OrtRunner

__all__ = ["Runner", "Timing", "open_ort", "open_runner"]


@runtime_checkable
class Runner(Protocol):
    """A model on one backend. ``on_device``: its inputs and outputs live on a GPU (copies are timed apart);
    ``engine``: its per-node rows are an engine's layers, each holding the ONNX nodes it fused; ``verified``: its
    figures have been checked against a real run of the backend; ``notes``: what it found worth saying."""

    backend: str
    on_device: bool
    engine: bool
    verified: bool
    notes: list[str]

    def open(
        self, dims: Mapping[str, int] | None = None, cancel: CancelToken | None = None
    ) -> Generator[JobEvent, None, None]:
        """Make the session (ONNX Runtime) or the engine (built, or from the plan cache)."""
        ...

    def feeds(self, feeds: Mapping[str, np.ndarray]) -> None:
        """Bind the inputs that :meth:`run`, :meth:`time` and :meth:`profile_nodes` use."""
        ...

    def run(self) -> None:
        """One inference on the bound feeds, waited for."""
        ...

    def infer(self, feeds: Mapping[str, Any], outputs: list[str], on_host: bool = False) -> list[Any]:
        """One inference on ``feeds``: the ``outputs`` asked for (on a device runner they stay on the device unless
        ``on_host``)."""
        ...

    def time(
        self, warmup: int, iterations: int, cancel: CancelToken, t0: float, sampler: Any = None
    ) -> Generator[JobEvent, None, Timing]:
        """Warm-up runs, then timed ones with no profiler attached (a ``latency`` sample each)."""
        ...

    def profile_nodes(
        self, gm: Any, profiled: int, cancel: CancelToken, sampler: Any = None, t0: float = 0.0
    ) -> Generator[JobEvent, None, NodeTimes]:
        """Per-node (or per-layer) times over ``profiled`` runs (``nodes`` samples as they come)."""
        ...

    def copies(
        self, gm: Any, feeds: Mapping[str, np.ndarray], gpu: Any, measure: bool
    ) -> Generator[JobEvent, None, dict[str, Any]]:
        """The inputs', outputs' and partition boundaries' host-device copies, timed on the GPU when ``measure``."""
        ...

    def close(self) -> None:
        """Free the sessions, buffers and files."""
        ...


def open_runner(
    path: str | Path,
    backend: str,
    *,
    model: bytes | str | None = None,
    threads: int = 0,
    custom_ops: list[str] | None = None,
    exact_fp32: bool = False,
    plain: bool = False,
    session_factory: Any = None,
) -> Runner:
    """The runner of ``path`` on ``backend`` (``ort-cpu``, ``ort-cuda``, ``tensorrt``, ``rtx``), after checking the
    backend can run here (:class:`~splitscope.engine.errors.BackendUnavailableError` says what to do).
    ``model``: what ONNX Runtime opens instead of the file (the model with more outputs, as bytes or a path);
    ``threads``: ONNX Runtime's intra-op threads (0: its default); ``exact_fp32``: CUDA with TF32 off (an FP32
    reference); ``plain``: every node run as written, no graph optimisation (a Q/DQ model as TensorRT will see it);
    ``session_factory``: what runs a TensorRT engine (the tests' named fake, where none can)."""
    from splitscope.engine.runtime.ort import check_backend

    if backend in ("tensorrt", "rtx"):
        from splitscope.engine.runtime.engine_runner import EngineRunner
        from splitscope.engine.runtime.trt import trt_module

        if session_factory is None:  # the fake runs its engine without a GPU; a real one needs it
            check_backend(backend)
        trt_module(backend)
        return EngineRunner(Path(path), backend, session_factory)
    check_backend(backend)
    from splitscope.engine.runtime.ort_runner import OrtCudaRunner, OrtRunner

    kind = OrtCudaRunner if backend == "ort-cuda" else OrtRunner
    return kind(Path(path), model=model, threads=threads, custom_ops=custom_ops, exact_fp32=exact_fp32, plain=plain)


def open_ort(path: str | Path, backend: str, job: str, **options: Any) -> OrtRunner:
    """The ONNX Runtime runner of ``path`` for a ``job`` that reads what the model computes (the statistics pass, the
    accuracy, a decoder's cache), which an engine runner does not give back: a TensorRT backend is refused in one
    line that says what to use. ``options`` as :func:`open_runner`'s."""
    from splitscope.engine.errors import BackendUnavailableError
    from splitscope.engine.runtime.ort_runner import OrtRunner

    if backend in ("tensorrt", "rtx"):
        raise BackendUnavailableError(f"{job} runs on ONNX Runtime: use --backend ort-cpu or ort-cuda.")
    runner = open_runner(path, backend, **options)
    assert isinstance(runner, OrtRunner)
    return runner
