"""The engine document (``splitscope engine --json``) read as types: :class:`EngineDoc` with its
:class:`LayerRow`\\ s and :class:`LintFinding`\\ s, and :class:`EngineComparison` (``engine --compare``). The window
reads these, never the document's keys; the document itself stays what the CLI writes (:mod:`.importer`,
:mod:`.lint`, :mod:`.compare`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from splitscope.engine.codec import read


def _ms(v: Any) -> float | None:
    return None if v is None else float(v)


@dataclass(frozen=True, slots=True)
class LayerRow:
    """One engine layer: its type, precision, time and share, and the ONNX nodes it holds."""

    name: str
    type: str
    precision: str
    ms: float | None
    share: float | None
    onnx_nodes: tuple[str, ...]
    mapped_by: str
    tactic: str = ""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LayerRow:
        return cls(
            str(d.get("name", "")),
            str(d.get("type") or ""),
            str(d.get("precision") or ""),
            _ms(d.get("ms")),
            _ms(d.get("share")),
            tuple(d.get("onnx_nodes") or ()),
            str(d.get("mapped_by") or ""),
            str(d.get("tactic") or ""),
        )


@dataclass(frozen=True, slots=True)
class LintFinding:
    """A performance lint finding: its kind, the layers and ONNX nodes it names, their time, the advice."""

    kind: str
    layers: tuple[str, ...]
    nodes: tuple[str, ...]
    ms: float
    advice: str

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LintFinding:
        return cls(
            str(d.get("kind", "")),
            tuple(d.get("layers") or ()),
            tuple(d.get("nodes") or ()),
            float(d.get("ms") or 0.0),
            str(d.get("advice") or ""),
        )


@dataclass(frozen=True, slots=True)
class EngineDoc:
    """What TensorRT did, as the window shows it: the layers, how they map onto the model, the lint."""

    layout: str
    detailed: bool
    layers: tuple[LayerRow, ...]
    total_layer_ms: float
    notes: tuple[str, ...]
    unmapped: int
    """Layers mapped onto no node of the model."""
    mapped_data_node_share: float | None
    """Share of the model's data-path nodes some layer holds (None: no model to map onto)."""
    mapped_layer_share: float | None
    lint: tuple[LintFinding, ...] = ()
    json: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict[str, Any], lint: list[dict[str, Any]] | None = None) -> EngineDoc:
        """Read a document; ``lint``: findings kept apart from it (else its own ``lint`` key)."""
        d = read("engine", d)
        return cls(
            str(d.get("layout") or "none"),
            bool(d.get("detailed")),
            tuple(LayerRow.from_json(r) for r in d.get("layers") or ()),
            float(d.get("total_layer_ms") or 0.0),
            tuple(str(n) for n in d.get("notes") or ()),
            len(d.get("unmapped_layers") or ()),
            _ms(d.get("mapped_data_node_share")),
            _ms(d.get("mapped_layer_share")),
            tuple(LintFinding.from_json(f) for f in (d.get("lint") or () if lint is None else lint)),
            d,
        )

    def to_json(self) -> dict[str, Any]:
        """The document it was read from (its lint as it came)."""
        return self.json

    @property
    def has_precision(self) -> bool:
        """Whether any layer records its precision."""
        return any(r.precision for r in self.layers)


@dataclass(frozen=True, slots=True)
class Change:
    """One row of a comparison: a node (or layer type) and its time and precision in engines A and B."""

    name: str
    a_ms: float
    b_ms: float
    a_precision: str = ""
    b_precision: str = ""
    index: int | None = None
    """The model node's index (a comparison mapped onto a model)."""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Change:
        index = d.get("index")
        return cls(
            str(d.get("name") or d.get("type") or ""),
            float(d.get("a_ms") or 0.0),
            float(d.get("b_ms") or 0.0),
            str(d.get("a_precision") or ""),
            str(d.get("b_precision") or ""),
            None if index is None else int(index),
        )


@dataclass(frozen=True, slots=True)
class EngineComparison:
    """Two engines compared: their layer time, by layer type, and the nodes that changed most."""

    a_total_ms: float
    b_total_ms: float
    by_layer_type: tuple[Change, ...]
    largest_changes: tuple[Change, ...]
    by_node: tuple[Change, ...]
    """Every mapped node's change (empty when the engines were not mapped onto a model)."""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> EngineComparison:
        def rows(key: str) -> tuple[Change, ...]:
            return tuple(Change.from_json(r) for r in d.get(key) or ())

        return cls(
            float(d.get("a_total_ms") or 0.0),
            float(d.get("b_total_ms") or 0.0),
            rows("by_layer_type"),
            rows("largest_changes"),
            rows("by_node"),
        )
