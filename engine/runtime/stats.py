"""Latency statistics of a timed loop."""

from __future__ import annotations

import numpy as np


def latency_stats(ms: list[float] | np.ndarray) -> dict[str, float]:
    """Mean, min, p50, p90, p99, max and standard deviation of per-iteration milliseconds."""
    a = np.asarray(ms, dtype=np.float64)
    if not len(a):
        return {k: 0.0 for k in ("mean", "min", "p50", "p90", "p99", "max", "std")}
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    return {
        "mean": round(float(a.mean()), 4),
        "min": round(float(a.min()), 4),
        "p50": round(float(p50), 4),
        "p90": round(float(p90), 4),
        "p99": round(float(p99), 4),
        "max": round(float(a.max()), 4),
        "std": round(float(a.std(ddof=1)) if len(a) > 1 else 0.0, 4),
    }


def throughput(mean_ms: float, batch: int | None) -> dict[str, float]:
    """Inferences per second, and items per second when the inputs have a batch dim."""
    per_s = 1000.0 / mean_ms if mean_ms > 0 else 0.0
    out = {"inferences_per_s": round(per_s, 2)}
    if batch:
        out["items_per_s"] = round(per_s * batch, 2)
        out["batch"] = batch
    return out
