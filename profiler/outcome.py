"""What a finished job came to, in one line for the Jobs panel (its last progress line said what it was doing,
not what it found)."""

from __future__ import annotations

from typing import Any


def outcome(kind: str, result: Any, seconds: float) -> str:
    """``Done in 3.2 s``, with the figure that matters for the kinds that have one: a profile's mean latency and
    verdict, a calibration's first output's SNR."""
    took = f"done in {seconds:.1f} s" if seconds < 120 else f"done in {seconds / 60:.1f} min"
    doc = result if isinstance(result, dict) else {}
    try:
        if kind == "profile" and "latency_ms" in doc:
            verdict = (doc.get("verdict") or {}).get("verdict", "")
            return f"{doc['latency_ms']['mean']:.3f} ms mean" + (f", {verdict}" if verdict else "") + f"; {took}"
        if kind == "calibrate" and doc.get("accuracy"):
            first = next(iter(doc["accuracy"].values()))
            return f"{doc.get('precision', '')} SNR {first['snr_db']:.1f} dB; {took}".strip()
    except (KeyError, TypeError, ValueError, StopIteration):  # an older or partial result: the time alone
        pass
    return took[0].upper() + took[1:]
