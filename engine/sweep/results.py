"""A sweep as the window keeps it: typed records read from a sweep's JSON (``splitscope sweep --json``, a saved
sweep, a sweep job's result). The JSON stays the interchange; the table, the plots and the CSV read it through
:mod:`splitscope.engine.sweep.summary`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from splitscope.engine.codec import read


@dataclass(frozen=True)
class SweepCell:
    """One cell: its parameters, how it ended, and (done) its figures in :attr:`json`."""

    index: int
    label: str
    params: dict[str, Any]
    status: str
    """``done``, ``pending``, or how it failed (``failed``, ``timeout``, ``cancelled``)."""
    reused: bool
    error: str
    json: dict[str, Any] = field(repr=False)

    @property
    def done(self) -> bool:
        return self.status == "done"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SweepCell:
        return cls(
            int(d.get("index", 0)),
            str(d.get("label", "")),
            dict(d.get("params") or {}),
            str(d.get("status", "pending")),
            bool(d.get("reused")),
            str(d.get("error") or ""),
            d,
        )


@dataclass(frozen=True)
class SweepDoc:
    """A finished sweep: its cells in order, where it ran, its notes; :attr:`json` is the document it was read from."""

    cells: tuple[SweepCell, ...]
    runner: str
    notes: tuple[str, ...]
    json: dict[str, Any] = field(repr=False)

    @property
    def done(self) -> tuple[SweepCell, ...]:
        return tuple(c for c in self.cells if c.done)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> SweepDoc:
        d = read("sweep", d)
        return cls(
            tuple(SweepCell.from_json(c) for c in d.get("cells") or ()),
            str(d.get("runner") or ""),
            tuple(str(n) for n in d.get("notes") or ()),
            d,
        )
