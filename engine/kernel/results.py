"""The kernel workbench's results as the window, the planner and the report read them: plain records (no ONNX, no
numpy), read back from a kernel job's JSON (:class:`KernelDoc`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from splitscope.engine.codec import read


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``d`` that are fields of ``cls`` (a file from another release may have more, or fewer)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}


@dataclass
class KernelResult:
    """What running a kernel found (the JSON's ``kernel``)."""

    compiled: bool = False
    error: str = ""
    error_line: int | None = None
    ran: bool = False
    max_abs_err: float | None = None
    max_ulp: int | None = None
    beyond: float | None = None
    worst: dict[str, Any] | None = None
    numerics_ok: bool | None = None
    ms: float | None = None
    """The median time of a launch between two CUDA events (the events' own cost included)."""
    device_ms: float | None = None
    """The kernel's own device time a launch (CUPTI's records); None where CUPTI cannot be used (``device_how``)."""
    default_device_ms: float | None = None
    """The device time of the kernels ONNX Runtime launches for the extract, a run (CUPTI)."""
    device_how: str = ""
    host_ms: float | None = None
    """The median of launch + synchronise timed on the host, as the runtime default is timed: the verdict's."""
    spread_ms: list[float] = field(default_factory=list)
    """The 10th and 90th percentiles of the timed launches."""
    times_ms: list[float] = field(default_factory=list)
    """Each timed launch (CUDA events), for the plot."""
    iterations: int = 0
    default_ms: float | None = None
    default_how: str = ""
    sol_ms: float | None = None
    sol_how: str = ""
    gpu: str = ""
    verdict: str = ""
    histogram: dict[str, list[float]] = field(default_factory=dict)
    """log10 of the absolute errors: ``edges`` and ``counts``."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> KernelResult:
        return cls(**_known(cls, d))


@dataclass
class ParserAnswer:
    """The real parser with the plugin registered (the JSON's ``plugin.parser``)."""

    how: str
    """``taken`` (the parser imports the node), ``mapped`` (it found and created the plugin, then the process ended:
    TensorRT-RTX), ``not-found`` (it did not find the creator) or ``not-run`` (no TensorRT here)."""
    backend: str = ""
    message: str = ""
    partitions_before: int = 0
    partitions_after: int = 0
    boundary_bytes_before: int = 0
    boundary_bytes_after: int = 0
    nodes_after: list[str] = field(default_factory=list)
    """The nodes counted as taken after (the plugin's)."""
    partitions_counted: bool = False
    """The partitions and boundary bytes before and after were counted (not in the document: whether it holds
    them)."""

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        del d["partitions_counted"]
        return d

    @property
    def taken(self) -> bool:
        """The parser takes the node with the plugin (imported, or found and created)."""
        return self.how in ("taken", "mapped")

    @property
    def counted(self) -> bool:
        """An answer the planner counts instead of its estimate (the parser ran: taken, mapped or not found)."""
        return self.how in ("taken", "mapped", "not-found")

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ParserAnswer:
        return cls(**_known(cls, {"how": "not-run", **d, "partitions_counted": "partitions_before" in d}))


@dataclass(frozen=True)
class KernelDoc:
    """One kernel job's result, typed; :attr:`json` is the document it was read from (the report's and the saved
    file's)."""

    nodes: tuple[str, ...]
    op: str
    delegated: bool
    shapes: str
    inputs: tuple[dict[str, Any], ...]
    """The extract's inputs: ``name``, ``dtype``, ``shape``."""
    reference_how: str
    reference_note: str
    source_text: str
    kernel: KernelResult | None
    """None where no kernel ran (no GPU asked for, or an export)."""
    answer: ParserAnswer | None
    """The parser's answer with the plugin registered; None where it was not asked."""
    folder: str | None
    """Where the plugin project was written (an export), else None."""
    json: dict[str, Any] = field(repr=False)

    def to_json(self) -> dict[str, Any]:
        """The document it was read from, unchanged."""
        return self.json

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> KernelDoc:
        doc = read("kernel", doc)
        ex, ref, plugin = doc.get("extract") or {}, doc.get("reference") or {}, doc.get("plugin") or {}
        return cls(
            tuple(doc.get("nodes") or ()),
            str(ex.get("op", "")),
            bool(doc.get("delegated")),
            str(doc.get("shapes", "")),
            tuple(ex.get("inputs") or ()),
            str(ref.get("how", "")),
            str(ref.get("note") or ""),
            str((doc.get("source") or {}).get("text", "")),
            KernelResult.from_json(doc["kernel"]) if doc.get("kernel") else None,
            ParserAnswer.from_json(plugin["parser"]) if plugin.get("parser") else None,
            plugin.get("folder"),
            doc,
        )
