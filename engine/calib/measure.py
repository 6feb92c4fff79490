"""Accuracy measured on the artefact: the model Splitscope wrote, run in ONNX Runtime on the backend the user
chose, against the FP32 model (on CUDA with TF32 off) on the held-out samples.

An emulation (the reduced tensors rounded, arithmetic in FP32) stands in only where ONNX Runtime cannot run the
written model here (no kernel for an op in that type, a BF16 model on the CPU): the figures are then marked
"estimated", with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from splitscope.engine.calib.accuracy import compare_outputs, top1
from splitscope.engine.calib.data import CalibData, batches
from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.runtime.ort import InferenceError
from splitscope.engine.runtime.ort_runner import OrtRunner
from splitscope.engine.runtime.runner import open_ort


@dataclass(slots=True)
class Measured:
    """The accuracy of each output, and how it was had."""

    accuracy: dict[str, dict[str, Any]] = field(default_factory=dict)
    how: str = "measured"
    """``measured`` (the written model run) or ``estimated`` (an emulation of it)."""
    runtime: str = ""
    """What ran it: ``ONNX Runtime CPU``, ``ONNX Runtime CUDA``."""
    why: str = ""
    """For ``estimated``: why the written model could not be run."""

    def record(self) -> dict[str, Any]:
        return {"how": self.how, "runtime": self.runtime, **({"why": self.why} if self.why else {})}


def _reason(raw: str) -> str:
    text = raw.replace("\n", " ")
    if "NOT_IMPLEMENTED" in text or "Could not find an implementation" in text:
        op = text.split("for ", 1)[-1].split("(", 1)[0].strip() if "implementation for" in text else ""
        return f"ONNX Runtime has no kernel for {op or 'an op'} in its reduced type here"
    return text[:200]


def measure(
    model: Path,
    written: Path,
    held: CalibData,
    backend: str,
    metric: str,
    cancel: CancelToken,
    labels: list[int] | None = None,
    emulation: Callable[[], bytes] | None = None,
    count: int = 0,
) -> Generator[JobEvent, None, Measured]:
    """Run ``model`` (FP32) and ``written`` on every held-out sample and compare them. ``emulation`` gives the
    emulated model's bytes, run instead only where the written model cannot run here."""
    ref = open_ort(model, backend, "The accuracy check", exact_fp32=True)
    q = open_ort(
        written, backend, "The accuracy check", exact_fp32=True, plain=True
    )  # its FP32 parts as the reference's: no TF32
    runtime = "ONNX Runtime CUDA" if backend == "ort-cuda" else "ONNX Runtime CPU"
    result = Measured(runtime=runtime)
    try:
        yield from ref.open()
        yield from _open_written(q, result, emulation)
        outs = [o.name for o in ref.outputs()]
        refs: dict[str, list[np.ndarray]] = {o: [] for o in outs}
        gots: dict[str, list[np.ndarray]] = {o: [] for o in outs}
        for k, feeds in enumerate(batches(held)):
            cancel.raise_if_cancelled()
            try:
                want = ref.infer(feeds, outs, on_host=True)
            except InferenceError as e:
                raise _failed(k, e) from None
            try:
                got = q.infer(feeds, outs, on_host=True)
            except InferenceError as e:
                if result.how == "estimated" or emulation is None or k:
                    raise _failed(k, e) from None
                _emulated(q, result, emulation, _reason(e.raw or str(e)))  # a kernel missing shows at the first run
                got = q.infer(feeds, outs, on_host=True)
            for o, a, b in zip(outs, want, got, strict=True):
                refs[o].append(a)
                gots[o].append(b)
            yield Progress("accuracy", k + 1, count, f"Held-out sample {k + 1}")
    finally:
        ref.close()
        q.close()
    result.accuracy = {o: compare_outputs(refs[o], gots[o], metric) for o in outs if refs[o]}
    if labels is not None:  # the task metric against the user's classes, FP32 and reduced
        for o, a in result.accuracy.items():
            t_ref, t_got = top1(refs[o], labels), top1(gots[o], labels)
            if t_ref is not None and t_got is not None:
                a.update(top1_fp32=t_ref, top1=t_got)
    return result


def _open_written(
    q: OrtRunner, result: Measured, emulation: Callable[[], bytes] | None
) -> Generator[JobEvent, None, None]:
    """The written model's session, every node as written (Q/DQ pairs too: what TensorRT will see); where ONNX Runtime
    cannot load it here, the emulation's, and the result says it is estimated."""
    try:
        yield from q.open()
    except InferenceError as e:
        if emulation is None:
            raise
        _emulated(q, result, emulation, str(e))


def _emulated(q: OrtRunner, result: Measured, emulation: Callable[[], bytes], why: str) -> None:
    result.how, result.why = "estimated", why
    q.load(model=emulation())


def _failed(k: int, e: InferenceError) -> InferenceError:
    return InferenceError(
        f"Held-out sample {k + 1}: "
        + str(e).replace("give real inputs with --input FILE.npz", "give real samples with --data DIR")
    )
