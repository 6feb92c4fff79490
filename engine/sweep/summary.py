"""What a sweep's cells say together: the Pareto front of latency against accuracy, and the table as CSV."""

from __future__ import annotations

import csv
import io
from typing import Any


def latency(doc: dict[str, Any]) -> float | None:
    """A finished cell's median latency in ms (None when it did not run)."""
    lat = doc.get("latency_ms") if doc.get("status") == "done" else None
    return float(lat["p50"]) if isinstance(lat, dict) and "p50" in lat else None


def accuracy(doc: dict[str, Any]) -> float:
    """A finished cell's SNR against FP32 in dB (FP32 itself: infinite, it is the reference; a reduced precision
    whose accuracy was not measured: minus infinity, it never beats a measured one)."""
    snr = doc.get("snr_db")
    if snr is None:
        return float("inf") if doc.get("params", {}).get("precision", "fp32") == "fp32" else float("-inf")
    return float("inf") if snr >= 999 else float(snr)


def workload(doc: dict[str, Any]) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """What a cell computes: its model at its dims (cells of one workload are comparable; batch 8 is not batch 1)."""
    p = doc["params"]
    return p["model"], tuple(sorted((p.get("dims") or {}).items()))


def pareto(cells: list[dict[str, Any]]) -> set[int]:
    """Indices of the cells on the front of latency (lower is better) against accuracy (higher is better), per
    workload (model and dims): no other finished cell of the same workload is both as fast and as accurate, and
    better in one. Backends, precisions and targets compete on it."""
    front: set[int] = set()
    done = [c for c in cells if latency(c) is not None]
    for c in done:
        lc, ac = latency(c), accuracy(c)
        assert lc is not None
        beaten = False
        for o in done:
            if o is c or workload(o) != workload(c):
                continue
            lo, ao = latency(o), accuracy(o)
            assert lo is not None
            if lo <= lc and ao >= ac and (lo < lc or ao > ac):
                beaten = True
                break
        if not beaten:
            front.add(int(c["index"]))
    return front


COLUMNS = (
    "model",
    "dims",
    "backend",
    "precision",
    "kept_in_float",
    "target",
    "status",
    "p50_ms",
    "mean_ms",
    "items_per_s",
    "snr_db",
    "pareto",
    "reused",
    "error",
)


def rows(sweep: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat row a cell, the columns of :data:`COLUMNS` (the table, the CSV)."""
    front = pareto(sweep["cells"])
    out = []
    for c in sweep["cells"]:
        p, lat, thr = c["params"], c.get("latency_ms") or {}, c.get("throughput") or {}
        out.append(
            {
                "model": p["model"],
                "dims": " ".join(f"{k}={v}" for k, v in sorted(p["dims"].items())),
                "backend": p["backend"],
                "precision": p["precision"],
                "kept_in_float": len(p.get("keep") or ()),
                "target": p["target"],
                "status": c.get("status", ""),
                "p50_ms": lat.get("p50"),
                "mean_ms": lat.get("mean"),
                "items_per_s": thr.get("items_per_s", thr.get("inferences_per_s")),
                "snr_db": c.get("snr_db"),
                "pareto": int(c["index"]) in front,
                "reused": bool(c.get("reused")),
                "error": c.get("error", ""),
            }
        )
    return out


def to_csv(sweep: dict[str, Any]) -> str:
    """The sweep table as CSV text."""
    buf = io.StringIO()
    w: csv.DictWriter[str] = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    w.writeheader()
    for r in rows(sweep):
        w.writerow({k: "" if v is None else v for k, v in r.items()})
    return buf.getvalue()
