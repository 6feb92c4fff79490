"""TensorRT and TensorRT-RTX behind the :class:`~splitscope.engine.runtime.runner.Runner` interface: the engine built
(or taken from the plan cache), run with ``execute_async_v3`` on device buffers, per-layer times through an
``IProfiler`` on separate iterations, each layer given the ONNX nodes it fused (the engine inspector's metadata).

No engine can run where this was written: the execution is tested through a named fake whose members are checked to
exist on ``tensorrt_rtx``'s classes (:mod:`~splitscope.engine.runtime.trt`), and the runner says it is not verified.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from splitscope.engine.errors import BackendUnavailableError
from splitscope.engine.jobs import CancelToken, JobEvent, Progress, Sample
from splitscope.engine.runtime.node_times import NodeTimes
from splitscope.engine.runtime.timing import Timed


class EngineRunner(Timed):
    """A TensorRT (``tensorrt``) or TensorRT-RTX (``rtx``) engine of one model."""

    on_device = True
    engine = True
    verified = False

    def __init__(self, path: Path, backend: str, session_factory: Any = None) -> None:
        from splitscope.engine.runtime.trt import EngineSession

        self.path, self.backend = path, backend
        self.factory = session_factory or EngineSession
        self.notes: list[str] = []
        self.plan = b""
        self.build_s = 0.0
        self.sess: Any = None
        self.layers: list[dict[str, Any]] = []

    def open(
        self, dims: Mapping[str, int] | None = None, cancel: CancelToken | None = None
    ) -> Generator[JobEvent, None, None]:
        """Build the engine at ``dims`` (Cancel stops the build), or take it from the plan cache."""
        from splitscope.engine.runtime.trt import cached_plan

        steps: list[tuple[str, int, int]] = []
        yield Progress("build", 0, 0, f"Building the {self.backend} engine")
        b0 = time.perf_counter()
        self.plan, cached = cached_plan(
            self.path,
            self.backend,
            dict(dims or {}),
            cancel,
            lambda name, step, total: steps.append((name, step, total)),
        )
        self.build_s = time.perf_counter() - b0
        if cached:
            yield Progress(
                "build", 1, 1, f"The {self.backend} engine from the plan cache (same model, dims and version)"
            )
        if steps:
            name, step, total = steps[-1]
            yield Progress("build", step, total, f"Built ({name})")

    def feeds(self, feeds: Mapping[str, np.ndarray]) -> None:
        """Deserialize the engine with buffers for these feeds (its input shapes are theirs)."""
        from splitscope.engine.runtime.trt import engine_layers

        if self.sess is not None:
            self.sess.close()
        self.sess = self.factory(self.plan, self.backend, dict(feeds))
        self.layers = engine_layers(self.sess.engine, self.sess.trt)

    def run(self) -> None:
        self.sess.run()

    def infer(self, feeds: Mapping[str, Any], outputs: list[str], on_host: bool = False) -> list[Any]:
        raise BackendUnavailableError(
            f"The {self.backend} runner times and profiles an engine but does not read its outputs back: "
            "use --backend ort-cpu or ort-cuda for this."
        )

    def profile_nodes(
        self, gm: Any, profiled: int, cancel: CancelToken, sampler: Any = None, t0: float = 0.0
    ) -> Generator[JobEvent, None, NodeTimes]:
        """Per-layer times over ``profiled`` runs with an ``IProfiler`` attached, each layer's ONNX nodes."""
        from splitscope.engine.runtime.trt import onnx_nodes_of

        yield Progress("nodes", 0, profiled, "Profiling layers")
        layer_ms, kept = self.sess.layer_times(profiled, cancel)
        yield Sample("nodes", float(kept), {k: v / max(kept, 1) for k, v in layer_ms.items()})
        by_name = {n.name: n.index for n in gm.nodes if n.name}
        fused = {str(layer.get("Name", "")): onnx_nodes_of(layer) for layer in self.layers}
        nt = NodeTimes(per_us={k: v * 1000 for k, v in layer_ms.items()}, kept=kept)
        nt.nodes_of = {k: [by_name[n] for n in fused.get(k, []) if n in by_name] for k in layer_ms}
        nt.run_us = sum(nt.per_us.values())
        self.notes.append(
            f"engine built in {self.build_s:.2f} s; {len(self.layers)} engine layers for {len(gm.nodes)} ONNX nodes"
        )
        return nt

    def close(self) -> None:
        if self.sess is not None:
            self.sess.close()
            self.sess = None
