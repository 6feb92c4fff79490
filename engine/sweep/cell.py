"""One sweep cell, run in a child process (kind ``sweep-cell``): calibrate when the precision asks for it, then profile.

A reduced precision is made as ``calibrate`` makes it (Q/DQ for INT8/FP8, casts for FP16/BF16) on random samples of
the dims in force, into a temporary folder removed at the end: the cell's accuracy is the written model's SNR
against FP32 on those samples (plumbing, not the task's accuracy; a sweep compares latency), its latency the
profile's, timed as ``profile`` times it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

from splitscope.engine.jobs import JobEvent, Progress


def run_cell(
    model: str,
    dims: dict[str, int] | None = None,
    backend: str = "ort-cpu",
    precision: str = "fp32",
    iterations: int = 50,
    warmup: int = 5,
    samples: int = 8,
    keep: list[str] | tuple[str, ...] = (),
    **_: Any,
) -> Generator[JobEvent, None, dict[str, Any]]:
    """The cell's figures: ``latency_ms`` and ``throughput`` as ``profile`` gives them, ``device``, ``snr_db``."""
    from splitscope.engine.calib.calibrate import calibrate
    from splitscope.engine.runtime.ort import check_backend
    from splitscope.engine.runtime.profile import profile
    from splitscope.engine.split.analyze import analyze

    dims = {k: int(v) for k, v in (dims or {}).items()}
    check_backend(backend)
    work = Path(tempfile.mkdtemp(prefix="splitscope-cell-"))
    try:
        path = Path(model)
        snr: float | None = None
        if precision != "fp32":
            yield Progress("calibrate", 0, 0, f"Making the {precision.upper()} model")
            out = work / f"{path.stem}_{precision}.onnx"
            res = yield from calibrate(
                path, out, data="random", precision=precision, samples=samples, dims=dims, keep=list(keep)
            )
            accuracy = res.get("accuracy") or {}
            snrs = [a["snr_db"] for a in accuracy.values() if isinstance(a, dict) and "snr_db" in a]
            snr = min(snrs) if snrs else None
            path = out
        gm = yield from analyze(path, parser="table", dims=dims, require_dims=True)
        prof = yield from profile(
            path, gm, backend=backend, iterations=iterations, warmup=warmup, profiled=1, dims=dims, telemetry=False
        )
        j = prof.to_json()
        return {
            "latency_ms": j["latency_ms"],
            "throughput": j["throughput"],
            "device": j["device"],
            "snr_db": snr,
            "verdict": j["verdict"]["verdict"],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
