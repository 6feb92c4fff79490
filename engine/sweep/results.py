"""A sweep as the window, the CLI and the report keep it: typed records read from a sweep's JSON (``splitscope sweep
--json``, a saved sweep, a sweep job's result). The JSON stays the interchange; the table, the plots, the CSV and the
Pareto front (:mod:`splitscope.engine.sweep.summary`) read these records, never its keys."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from splitscope.engine.codec import read
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.sweep.grid import Cell

_CELL_FIELDS = frozenset(f.name for f in fields(Cell))


def cell_from_params(params: dict[str, Any]) -> Cell:
    """A cell's parameters as saved, read back (a key a later release adds is left aside; one missing takes its
    default)."""
    p = {k: v for k, v in params.items() if k in _CELL_FIELDS}
    p["model"] = str(p.get("model", ""))
    p["dims"] = {str(k): int(v) for k, v in (p.get("dims") or {}).items()}
    p["keep"] = tuple(str(n) for n in p.get("keep") or ())
    return Cell(**p)


def _number(d: Any, *keys: str) -> float | None:
    if not isinstance(d, dict):
        return None
    v = next((d[k] for k in keys if d.get(k) is not None), None)
    return float(v) if isinstance(v, int | float) else None


@dataclass(frozen=True)
class SweepCell:
    """One cell: its parameters, how it ended, and (done) its figures; :attr:`json` is what it was read from."""

    index: int
    label: str
    params: Cell
    status: str
    """``done``, ``pending``, or how it failed (``failed``, ``timeout``, ``cancelled``)."""
    reused: bool
    error: str
    p50_ms: float | None
    """The median latency (a cell that did not finish: None)."""
    mean_ms: float | None
    items_per_s: float | None
    snr_db: float | None
    """Its first output's SNR against FP32 (FP32 itself and a precision not measured: None)."""
    json: dict[str, Any] = field(repr=False)

    @property
    def done(self) -> bool:
        return self.status == "done"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SweepCell:
        lat = d.get("latency_ms")
        snr = d.get("snr_db")
        return cls(
            int(d.get("index", 0)),
            str(d.get("label", "")),
            cell_from_params(dict(d.get("params") or {})),
            str(d.get("status", "pending")),
            bool(d.get("reused")),
            str(d.get("error") or ""),
            _number(lat, "p50"),
            _number(lat, "mean"),
            _number(d.get("throughput"), "items_per_s", "inferences_per_s"),
            float(snr) if isinstance(snr, int | float) else None,
            d,
        )

    @classmethod
    def pending(cls, index: int, params: Cell) -> SweepCell:
        """A cell not run yet."""
        doc = {"index": index, "label": params.label(), "params": params.params(), "status": "pending"}
        return cls(index, doc["label"], params, "pending", False, "", None, None, None, None, doc)


@dataclass(frozen=True)
class SweepDoc:
    """A sweep: its cells in order, where it ran, its notes; :attr:`json` is the document it was read from."""

    cells: tuple[SweepCell, ...] = ()
    runner: str = ""
    notes: tuple[str, ...] = ()
    json: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def done(self) -> tuple[SweepCell, ...]:
        return tuple(c for c in self.cells if c.done)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SweepDoc:
        d = read("sweep", d)
        try:
            cells = tuple(SweepCell.from_json(c) for c in d.get("cells") or ())
        except (AttributeError, TypeError, ValueError) as e:
            raise SplitscopeError(
                f"the sweep's cells are not as 'splitscope sweep --json' writes them ({e}): run the sweep again."
            ) from None
        return cls(
            cells,
            str(d.get("runner") or ""),
            tuple(str(n) for n in d.get("notes") or ()),
            d,
        )

    def to_json(self) -> dict[str, Any]:
        """The document it was read from (a sweep still running: none yet)."""
        return self.json

    @classmethod
    def planned(cls, cells: list[Cell]) -> SweepDoc:
        """A sweep about to run: every cell pending."""
        return cls(tuple(SweepCell.pending(i, c) for i, c in enumerate(cells)))

    def with_cell(self, cell: SweepCell) -> SweepDoc:
        """This sweep with ``cell`` in its place (a cell ended while the sweep runs); cells before it that were
        never listed come as pending with its parameters."""
        cells = list(self.cells)
        while len(cells) <= cell.index:
            cells.append(SweepCell.pending(len(cells), cell.params))
        cells[cell.index] = cell
        return replace(self, cells=tuple(cells))
