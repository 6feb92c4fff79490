"""A profile as its readers see it: typed records read from the profile's JSON (``splitscope profile --json``, a
child job's result, a profile saved with its model, one written by an older release).

The JSON stays the interchange (the child writes it, the saved sessions keep it, :class:`ProfileDoc.to_json`
gives it back untouched, tests/engine/test_cli_schemas.py holds its keys); the window reads these attributes,
not string keys. Figures that were not measured are ``None``, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from splitscope.engine.codec import read


def _f(v: Any) -> float | None:
    return None if v is None else float(v)


@dataclass(frozen=True, slots=True)
class Latency:
    """Latency statistics of the timed iterations, in ms."""

    mean: float = 0.0
    min: float = 0.0
    p50: float = 0.0
    p90: float = 0.0
    p99: float = 0.0
    max: float = 0.0
    std: float = 0.0

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> Latency:
        d = d or {}
        return cls(*(float(d.get(k) or 0.0) for k in ("mean", "min", "p50", "p90", "p99", "max", "std")))


@dataclass(frozen=True, slots=True)
class NodeTime:
    """One node's (or engine layer's) mean time per iteration and where it sits on the roofline."""

    name: str
    op_type: str
    ms: float
    share: float
    status: str
    index: int | None = None
    flops: int | None = None
    bytes: int | None = None
    roofline_class: str = "unknown"
    intensity: float | None = None
    achieved_flops: float | None = None
    sol_ms: float | None = None
    headroom_ms: float | None = None
    onnx_nodes: tuple[str, ...] = ()
    spread_ms: tuple[float, float] | None = None
    """The lowest and highest ms a run across the profiled sessions (``None``: one session, or an older file)."""
    rank: int | None = None
    """1 for the slowest; rows tied with the one before (their spreads overlap) share its rank."""
    tie: bool = False

    @property
    def rank_label(self) -> str:
        """``3`` or, tied, ``3=``; '' where not ranked."""
        return "" if self.rank is None else f"{self.rank}{'=' if self.tie else ''}"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> NodeTime:
        return cls(
            str(d.get("name", "")),
            str(d.get("op_type") or ""),
            float(d.get("ms") or 0.0),
            float(d.get("share") or 0.0),
            str(d.get("status") or ""),
            d.get("index"),
            d.get("flops"),
            d.get("bytes"),
            str(d.get("class") or "unknown"),
            _f(d.get("intensity")),
            _f(d.get("achieved_flops")),
            _f(d.get("sol_ms")),
            _f(d.get("headroom_ms")),
            tuple(d.get("onnx_nodes") or ()),
            tuple(d["spread_ms"]) if d.get("spread_ms") else None,  # type: ignore[arg-type]
            d.get("rank"),
            bool(d.get("tie")),
        )


@dataclass(frozen=True, slots=True)
class Verdict:
    """Graph-, kernel- or transfer-bound, why, the fix, and the numbers that decide it."""

    verdict: str = ""
    why: str = ""
    fix: str = ""
    launch_bound_ms: float = 0.0
    io_copy_ms: float | None = None
    boundary_copy_ms: float | None = None
    copies_measured: bool = False
    numbers: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> Verdict:
        d = d or {}
        num = d.get("numbers") or {}
        io, boundary = num.get("io_copy_ms"), num.get("boundary_copy_ms")
        return cls(
            str(d.get("verdict", "")),
            str(d.get("why", "")),
            str(d.get("fix", "")),
            float(num.get("launch_bound_ms") or 0.0),
            _f(io),
            _f(boundary),
            bool(num.get("copies_measured", io is not None and boundary is not None)),
            dict(num),
        )


@dataclass(frozen=True, slots=True)
class PluginCost:
    """A plugin node's measured time and the most a custom kernel could save on it."""

    name: str
    op_type: str
    ms: float
    most_a_kernel_saves_ms: float | None


@dataclass(frozen=True, slots=True)
class SplitCost:
    """The custom part's cost: time in plugin nodes plus the boundary copies they force (``None``: not
    measured, with ``not_measured`` saying why)."""

    plugin_nodes: int = 0
    plugin_ms: float = 0.0
    boundary_copy_ms: float | None = None
    share_of_end_to_end: float | None = None
    plugins: tuple[PluginCost, ...] = ()
    assumes: str = ""
    not_measured: str = ""

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> SplitCost:
        d = d or {}
        plugins = tuple(
            PluginCost(
                str(p.get("name", "")),
                str(p.get("op_type", "")),
                float(p.get("ms") or 0.0),
                _f(p.get("most_a_kernel_saves_ms")),
            )
            for p in d.get("plugins", [])
        )
        return cls(
            int(d.get("plugin_nodes") or 0),
            float(d.get("plugin_ms") or 0.0),
            _f(d.get("boundary_copy_ms")),
            _f(d.get("share_of_end_to_end")),
            plugins,
            str(d.get("assumes", "")),
            str(d.get("not_measured", "")),
        )


@dataclass(frozen=True, slots=True)
class CopyRate:
    """One measured copy size: GB/s host to device and back, pinned and pageable."""

    bytes: int
    h2d_pinned_gbps: float
    h2d_pageable_gbps: float
    d2h_pinned_gbps: float
    d2h_pageable_gbps: float


@dataclass(frozen=True, slots=True)
class Copies:
    """The measured copies, or why there are none (``not_measured``)."""

    measured: tuple[CopyRate, ...] = ()
    link_peak_gbps: float | None = None
    not_measured: str = ""

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> Copies:
        d = d or {}
        rows = tuple(
            CopyRate(
                int(m["bytes"]),
                float(m["h2d_pinned_gbps"]),
                float(m["h2d_pageable_gbps"]),
                float(m["d2h_pinned_gbps"]),
                float(m["d2h_pageable_gbps"]),
            )
            for m in d.get("measured") or []
        )
        # "note": profiles saved before copies said not_measured
        return cls(rows, _f(d.get("link_peak_gbps")), str(d.get("not_measured") or d.get("note") or ""))


@dataclass(frozen=True, slots=True)
class Gpu:
    """The GPU's name and peaks (from its own attributes)."""

    name: str = ""
    peak_flops: dict[str, float] = field(default_factory=dict)
    peak_bandwidth: float = 0.0
    pcie_peak: float = 0.0
    """The nominal peak of its host link in bytes/s (0: not known)."""

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> Gpu | None:
        if not d:
            return None
        return cls(
            str(d.get("name", "")),
            {k: float(v) for k, v in (d.get("peak_flops") or {}).items()},
            float(d.get("peak_bandwidth") or 0.0),
            float(d.get("pcie_peak") or 0.0),
        )


@dataclass(frozen=True, slots=True)
class ProfileDoc:
    """A finished profile, typed; :attr:`json` is the document it was read from."""

    backend: str
    device: str
    iterations: int
    warmup: int
    latency: Latency
    inferences_per_s: float
    samples_ms: tuple[float, ...]
    per_node: tuple[NodeTime, ...]
    verdict: Verdict
    split_cost: SplitCost
    copies: Copies
    gpu: Gpu | None
    telemetry_note: str
    telemetry_series: tuple[dict[str, float], ...]
    node_cover: float
    verified: bool
    notes: tuple[str, ...]
    model: str
    """The model's path as profiled."""
    model_key: str
    """Its content's key (:func:`splitscope.engine.runtime.store.model_key`); empty in older files."""
    dims: dict[str, int]
    """The dims it ran at (its figures hold at those shapes only)."""
    started: str
    """When it started (as the document says it)."""
    json: dict[str, Any]

    def of_model(self, path: Path) -> bool:
        """Whether this is a profile of the model at ``path``: by content where the profile keeps its key, else
        (an older file) by path; True where the file is gone (nothing to compare with)."""
        from splitscope.engine.runtime.store import model_key

        try:
            return self.model_key == model_key(path) if self.model_key else self.model in ("", str(path))
        except OSError:
            return True

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ProfileDoc:
        """Read a profile document (any release's: missing keys read as their empty value)."""
        d = read("profile", d)
        return cls(
            str(d.get("backend", "")),
            str(d.get("device", "")),
            int(d.get("iterations") or 0),
            int(d.get("warmup") or 0),
            Latency.from_json(d.get("latency_ms")),
            float((d.get("throughput") or {}).get("inferences_per_s") or 0.0),
            tuple(float(x) for x in d.get("samples_ms") or ()),
            tuple(NodeTime.from_json(r) for r in d.get("per_node") or ()),
            Verdict.from_json(d.get("verdict")),
            SplitCost.from_json(d.get("split_cost")),
            Copies.from_json(d.get("copies")),
            Gpu.from_json(d.get("gpu")),
            str((d.get("telemetry") or {}).get("note") or ""),
            tuple(d.get("telemetry_series") or ()),
            float(d.get("node_cover") or 0.0),
            bool(d.get("verified", True)),
            tuple(str(n) for n in d.get("notes") or ()),
            str(d.get("model") or ""),
            str(d.get("model_key") or ""),
            dict(d["dims"]) if isinstance(d.get("dims"), dict) else {},
            str(d.get("started") or ""),
            d,
        )

    def to_json(self) -> dict[str, Any]:
        """The document it was read from, unchanged."""
        return self.json
