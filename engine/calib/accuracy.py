"""The quantized model against the original on held-out samples, through ONNX Runtime: per output, the
signal-to-noise ratio (dB), cosine similarity and largest absolute error, and the task's own agreement
(:mod:`splitscope.engine.calib.task`: top-1/top-5, detections matched after NMS, IoU of dense maps)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def compare_outputs(ref: list[np.ndarray], got: list[np.ndarray], kind: str = "auto") -> dict[str, Any]:
    """SNR (dB), cosine and max |error| of ``got`` against ``ref`` (arrays of one output, several samples), and
    the task's own figure (:mod:`splitscope.engine.calib.task`: ``kind`` or the one its shape suggests)."""
    r = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in ref])
    g = np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in got])
    ok = np.isfinite(r) & np.isfinite(g)
    r, g = r[ok], g[ok]
    noise = float(np.sum((r - g) ** 2))
    signal = float(np.sum(r**2))
    snr = 10 * np.log10(signal / noise) if noise > 0 and signal > 0 else (float("inf") if noise == 0 else 0.0)
    denom = float(np.linalg.norm(r) * np.linalg.norm(g))
    cos = float(np.dot(r, g) / denom) if denom > 0 else (1.0 if noise == 0 else 0.0)
    out: dict[str, Any] = {
        "snr_db": round(float(snr), 3) if np.isfinite(snr) else 999.0,
        "cosine": round(cos, 6),
        "max_abs": round(float(np.max(np.abs(r - g))) if r.size else 0.0, 6),
    }
    from splitscope.engine.calib.task import metric

    task = metric(kind, ref, got) if ref else None
    if task is not None:
        out["task"] = task
        if task["kind"] == "classification":
            out["top1_agreement"] = task["top1_agreement"]
    return out


def read_labels(path: str | Path) -> dict[str, int]:
    """A labels file: one ``NAME LABEL`` (or ``NAME,LABEL``) a line, NAME a sample file's name or stem, LABEL
    its class index; blank lines and ``#`` comments skipped."""
    from splitscope.engine.errors import SplitscopeError

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SplitscopeError(f"--labels {p}: cannot read it ({getattr(e, 'strerror', None) or e}).") from None
    out: dict[str, int] = {}
    for k, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.replace(",", " ").split()
        try:
            out[parts[0]] = int(parts[1])
        except (IndexError, ValueError):
            raise SplitscopeError(
                f"--labels {p.name}, line {k}: write 'NAME LABEL' (a file name and a class index), not {line[:40]!r}."
            ) from None
    return out


def labels_for(files: list[Path], labels: dict[str, int]) -> list[int] | None:
    """The label of each sample file, in order (by name, then stem); None when one has none."""
    got = []
    for f in files:
        v = labels.get(f.name, labels.get(f.stem))
        if v is None:
            return None
        got.append(v)
    return got


def top1(outputs: list[np.ndarray], labels: list[int]) -> float | None:
    """Top-1 accuracy of a classifier's outputs (one sample a batch) against the labels."""
    if len(outputs) != len(labels) or not all(
        np.asarray(a).ndim == 2 and np.asarray(a).shape == (1, a.shape[-1]) and a.shape[-1] > 1 for a in outputs
    ):
        return None
    pred = [int(np.argmax(a[0])) for a in outputs]
    return round(float(np.mean([p == t for p, t in zip(pred, labels, strict=True)])), 4)


def accuracy_line(a: dict[str, Any]) -> str:
    """One output's accuracy in one line, the task's figure first (what the CLI, the window and the report say):
    :attr:`splitscope.engine.calib.results.OutputAccuracy.line` of the output's document."""
    from splitscope.engine.calib.results import OutputAccuracy

    return OutputAccuracy.from_json(a).line
