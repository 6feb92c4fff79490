"""ONNX Runtime behind the :class:`~splitscope.engine.runtime.runner.Runner` interface: on the CPU, and on CUDA with
the inputs and outputs bound on the device (the copies are timed apart) and the run timed again as one CUDA graph.

Per-node times come from separate sessions with ONNX Runtime's profiler on, at the timed session's optimisation
(:mod:`~splitscope.engine.runtime.node_times`); the timed session is closed before them, so that its memory goes to
theirs (:meth:`OrtRunner.run` then needs :meth:`OrtRunner.open` again). Beyond the interface, the generation profile
reads the session's inputs and outputs, keeps its cache on the device (:meth:`OrtCudaRunner.to_device`) and profiles
a whole generation in one session (``open(profiled=True)``, :meth:`OrtRunner.end_profiling`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.runtime.cudagraph import graph_latency
from splitscope.engine.runtime.node_times import NodeTimes, node_times
from splitscope.engine.runtime.ort import InferenceError, OrtBackend, _run_message, named_model
from splitscope.engine.runtime.timing import Timed, Timing


class OrtRunner(Timed):
    """ONNX Runtime on the CPU."""

    backend = "ort-cpu"

    def __init__(
        self,
        path: Path,
        *,
        model: bytes | str | None = None,
        threads: int = 0,
        custom_ops: list[str] | None = None,
        exact_fp32: bool = False,
        plain: bool = False,
    ) -> None:
        self.be = OrtBackend(path, self.backend, threads=threads, custom_ops=custom_ops, exact_fp32=exact_fp32)
        self.path, self.model, self.plain = path, model, plain
        self.session: Any = None
        self.notes: list[str] = []
        self._feeds: dict[str, np.ndarray] = {}
        self._run: Callable[[], None] | None = None

    def open(
        self, dims: Mapping[str, int] | None = None, cancel: CancelToken | None = None, *, profiled: bool = False
    ) -> Generator[JobEvent, None, None]:
        """The session (see :meth:`load`)."""
        yield Progress("session", 0, 0, f"Creating the {self.backend} session")
        self.load(profiled=profiled)

    def load(self, model: bytes | str | None = None, *, profiled: bool = False) -> None:
        """The session of ``model`` (default: the runner's), at full graph optimisation, or with every node as written
        for a ``plain`` runner; ``profiled``: with ONNX Runtime's profiler on. The session before it is freed first."""
        self._release()
        self.session = self.be.session(
            profile=profiled, model=model if model is not None else self.model, plain=self.plain and not profiled
        )

    def feeds(self, feeds: Mapping[str, np.ndarray]) -> None:
        self._feeds = dict(feeds)
        self._run = self.be.runner(self.session, self._feeds)

    def run(self) -> None:
        if self._run is None:
            raise InferenceError("The session is closed or has no feeds: open it and give the feeds first.")
        self._run()

    def infer(self, feeds: Mapping[str, Any], outputs: list[str], on_host: bool = False) -> list[Any]:
        try:
            return list(self.session.run(outputs, dict(feeds)))
        except Exception as e:  # noqa: BLE001 - ORT's Fail/RuntimeException/InvalidArgument
            raise InferenceError(_run_message(e), str(e)) from None

    def inputs(self) -> list[Any]:
        """ONNX Runtime's inputs of the open session (name, shape, type)."""
        return list(self.session.get_inputs())

    def outputs(self) -> list[Any]:
        """ONNX Runtime's outputs of the open session."""
        return list(self.session.get_outputs())

    def to_device(self, a: np.ndarray) -> Any:
        """``a`` where the runner's inputs live: on the CPU, itself."""
        return a

    def end_profiling(self) -> str:
        """The profiler's file of a session opened with ``profiled=True``."""
        return str(self.session.end_profiling())

    def profile_nodes(
        self, gm: Any, profiled: int, cancel: CancelToken, sampler: Any = None, t0: float = 0.0
    ) -> Generator[JobEvent, None, NodeTimes]:
        self._release()
        model, index_of = named_model(self.path)
        nt = yield from node_times(self.be, gm, model, index_of, self._feeds, profiled, cancel, sampler, t0)
        nt.nodes_of = {key: [index_of[key]] for key in nt.per_us if key in index_of}
        return nt

    def _release(self) -> None:
        self._run = None
        self.session = None

    def close(self) -> None:
        self._release()
        self.be.close()


class OrtCudaRunner(OrtRunner):
    """ONNX Runtime on CUDA: inputs and outputs bound on the device; outputs asked of :meth:`infer` stay there."""

    backend = "ort-cuda"
    on_device = True
    device = "cuda"
    """Where the bound values live (ONNX Runtime's device name)."""

    def infer(self, feeds: Mapping[str, Any], outputs: list[str], on_host: bool = False) -> list[Any]:
        """OrtValues on the device (``on_host``: arrays copied back); a feed may be a host array or an OrtValue
        already there (a decoder's cache)."""
        if on_host:
            return super().infer(feeds, outputs)
        io = self.session.io_binding()
        for name, a in feeds.items():
            if isinstance(a, np.ndarray):
                io.bind_cpu_input(name, a)
            else:
                io.bind_ortvalue_input(name, a)
        for o in outputs:
            io.bind_output(o, self.device, 0)
        try:
            self.session.run_with_iobinding(io)
            io.synchronize_outputs()
        except Exception as e:  # noqa: BLE001
            raise InferenceError(_run_message(e), str(e)) from None
        return list(io.get_outputs())

    def to_device(self, a: np.ndarray) -> Any:
        """``a`` as an OrtValue on the GPU."""
        return self.be.ort.OrtValue.ortvalue_from_numpy(a, self.device, 0)

    def time(
        self, warmup: int, iterations: int, cancel: CancelToken, t0: float, sampler: Any = None
    ) -> Generator[JobEvent, None, Timing]:
        """As every runner, then the same run as one CUDA graph: how much of the device's idle time is launch
        overhead (the timed session is closed first: the graph's session holds its own buffers)."""
        out = yield from super().time(warmup, iterations, cancel, t0, sampler)
        yield Progress("cuda-graph", 0, 0, "Timing the model as one CUDA graph")
        try:  # the outputs' shapes and types, which the graph binds (a run that fails here is only said)
            names = [o.name for o in self.session.get_outputs()]
            outs = list(zip(names, self.session.run(None, self._feeds), strict=True))
        except Exception as e:  # noqa: BLE001 - ORT's own errors (out of host memory for the outputs)
            outs, out.no_graph = [], f"its outputs could not be read to bind them ({str(e).splitlines()[0][:160]})"
        self._release()
        if outs:
            out.graph_ms, out.no_graph = graph_latency(self.be, self._feeds, outs, iterations, cancel=cancel)
        return out
