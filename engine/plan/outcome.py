"""What a scenario comes to (:func:`splitscope.engine.plan.scenario.evaluate`), typed: the split and its costs, and
with a profile the latency range with the source of each part. The planner, present mode, the decision sentence and
the report read these; :meth:`ScenarioOutcome.to_json` is the report's and the CLI's document."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LatencyPart:
    """What one item's plan changes in the latency: ``low_ms``/``high_ms`` for a plan in an engine, none for the
    host (its time there is ``measured_ms`` when the profile ran on the CPU)."""

    item: str
    plan: str
    measured_ms: float
    source: str
    low_ms: float | None = None
    high_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"item": self.item, "plan": self.plan, "measured_ms": self.measured_ms}
        if self.low_ms is not None:
            d["low_ms"], d["high_ms"] = self.low_ms, self.high_ms
        d["source"] = self.source
        return d


@dataclass(frozen=True, slots=True)
class LatencyRange:
    """Today's measured mean latency and the range a scenario's plans give it (host copies included)."""

    today_ms: float
    low_ms: float
    high_ms: float
    saves_at_most_ms: float
    parts: tuple[LatencyPart, ...]
    source: str
    not_priced: str

    @property
    def exact(self) -> bool:
        """No range: the plans change nothing priced."""
        return abs(self.high_ms - self.low_ms) < 1e-6

    def to_json(self) -> dict[str, Any]:
        return {
            "today_ms": self.today_ms,
            "low_ms": self.low_ms,
            "high_ms": self.high_ms,
            "saves_at_most_ms": self.saves_at_most_ms,
            "parts": [p.to_json() for p in self.parts],
            "source": self.source,
            "not_priced": self.not_priced,
        }


@dataclass(frozen=True, slots=True)
class ScenarioOutcome:
    """A scenario's split and costs: partitions, the bytes crossing them, host copies, the custom work it asks
    for (with the basis of each: the real parser's answer or an estimate) and, with a profile, its latency."""

    name: str
    plans: Mapping[str, str]
    """The plan of every item, by its key (an unknown or unavailable plan read as today's)."""
    partitions: int
    boundary_bytes: int
    boundary_tensors: int
    host_bytes_d2h: int
    host_bytes_h2d: int
    host_copy_ms: float
    copy_gbps: float
    copy_source: str
    custom_work: tuple[str, ...]
    plugin_basis: Mapping[str, str]
    delegated_flops_share: float
    latency: LatencyRange | None = None

    @property
    def host_bytes(self) -> int:
        return self.host_bytes_d2h + self.host_bytes_h2d

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "plans": dict(self.plans),
            "partitions": self.partitions,
            "boundary_bytes": self.boundary_bytes,
            "boundary_tensors": self.boundary_tensors,
            "host_bytes": self.host_bytes,
            "host_bytes_d2h": self.host_bytes_d2h,
            "host_bytes_h2d": self.host_bytes_h2d,
            "host_copy_ms": self.host_copy_ms,
            "copy_gbps": self.copy_gbps,
            "copy_source": self.copy_source,
            "custom_work": list(self.custom_work),
            "plugin_basis": dict(self.plugin_basis),
            "delegated_flops_share": self.delegated_flops_share,
            "latency": self.latency.to_json() if self.latency is not None else None,
        }
