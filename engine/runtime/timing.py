"""What every :class:`~splitscope.engine.runtime.runner.Runner` shares: the timing loop over its ``run`` and the
host-device copies, and what the timing gives back."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from splitscope.engine.jobs import CancelToken, JobEvent, Progress, Sample
from splitscope.engine.runtime.copies import measured_copies
from splitscope.engine.runtime.telemetry import telemetry_samples


@dataclass
class Timing:
    """What :meth:`Runner.time` measured: the warm-up's and the timed iterations' milliseconds, and on CUDA the same
    run as one CUDA graph (its milliseconds, or why there are none)."""

    warm: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    graph_ms: list[float] = field(default_factory=list)
    no_graph: str = ""


class Timed(ABC):
    """What every runner shares: the timing loop over :meth:`run`, and the copies. A runner that does not say how it
    runs one inference cannot be made (``run`` is abstract)."""

    on_device = False
    engine = False
    verified = True

    @abstractmethod
    def run(self) -> None:
        """One inference on the bound feeds, waited for."""

    def time(
        self, warmup: int, iterations: int, cancel: CancelToken, t0: float, sampler: Any = None
    ) -> Generator[JobEvent, None, Timing]:
        out = Timing()
        for i in range(warmup):
            cancel.raise_if_cancelled()
            a = time.perf_counter()
            self.run()
            out.warm.append((time.perf_counter() - a) * 1000)
            yield Progress("warmup", i + 1, warmup, f"Warm-up {i + 1}/{warmup}")
        for i in range(iterations):
            cancel.raise_if_cancelled()
            a = time.perf_counter()
            self.run()
            ms = (time.perf_counter() - a) * 1000
            out.times.append(ms)
            yield Sample("latency", float(i), {"ms": ms, "t": a - t0})
            yield from telemetry_samples(sampler, t0)
            yield Progress("latency", i + 1, iterations, f"Iteration {i + 1}/{iterations}: {ms:.3f} ms")
        return out

    def copies(
        self, gm: Any, feeds: Mapping[str, np.ndarray], gpu: Any, measure: bool
    ) -> Generator[JobEvent, None, dict[str, Any]]:
        return (yield from measured_copies(gm, feeds, measure, gpu))
