"""Optimize export: run a real ONNX optimizer on a copy of the model, prove the copy right, and show what
it changes in the split.

The optimizer is onnxscript's (``onnxscript.optimizer.optimize``: constant folding, sequence-op and
If-branch simplification, dead-code removal; MIT; chosen over onnxsim, which needs a compiled
extension per platform, and onnxslim, which rewrites more aggressively than a check can follow).
The result is checked three ways before it is kept: ``onnx.checker``, Splitscope's own loader, and
ONNX Runtime, which runs the original and the optimized model on the same seeded inputs and compares
every output. If any check fails, nothing is written. Both models are then analysed, and the result
says nodes, plugin nodes, partitions and boundary bytes before and after.
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from splitscope.engine.codec import read, stamp
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.model import GraphModel, Status
from splitscope.engine.onnxio.writer import ModelWriter, has_external_data
from splitscope.engine.runtime.written import ort_crashes_on, verify_written

if TYPE_CHECKING:
    import onnx

RTOL, ATOL = 1e-3, 1e-4
"""Outputs must agree this closely (numpy.allclose) for the optimized model to be kept."""


class OptimizeError(SplitscopeError):
    """The optimizer failed, or its result did not pass a check; nothing was written."""


@dataclass(frozen=True, slots=True)
class SplitFigures:
    """What the split of one model comes to."""

    nodes: int
    plugin: int
    partitions: int
    boundary_bytes: int

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> SplitFigures:
        d = d or {}
        return cls(*(int(d.get(k) or 0) for k in ("nodes", "plugin", "partitions", "boundary_bytes")))

    @classmethod
    def of(cls, gm: GraphModel) -> SplitFigures:
        return cls(
            len(gm.nodes), sum(1 for n in gm.nodes if n.status is Status.PLUGIN), len(gm.partitions), gm.boundary_bytes
        )


@dataclass(frozen=True, slots=True)
class OptimizeResult:
    """Before and after, how long the optimizer took, and how closely the outputs agree."""

    source: Path
    output: Path
    before: SplitFigures
    after: SplitFigures
    optimizer: str
    optimizer_seconds: float
    compared: bool
    """Whether ONNX Runtime ran both models (it cannot run custom ops it does not know)."""
    max_abs_diff: float | None = None
    max_rel_diff: float | None = None
    outputs: int = 0
    notes: list[str] = field(default_factory=list)
    after_model: GraphModel | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON-ready figures (``splitscope optimize --json``)."""
        return stamp(
            "optimize",
            {
                "source": str(self.source),
                "output": str(self.output),
                "optimizer": self.optimizer,
                "optimizer_seconds": round(self.optimizer_seconds, 3),
                "before": _fig(self.before),
                "after": _fig(self.after),
                "compared": self.compared,
                "outputs_compared": self.outputs,
                "max_abs_diff": self.max_abs_diff,
                "max_rel_diff": self.max_rel_diff,
                "tolerance": {"rtol": RTOL, "atol": ATOL},
                "notes": self.notes,
            },
        )

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> OptimizeResult:
        """Read ``splitscope optimize --json`` (any release's); the optimized model is not in it."""
        d = read("optimize", d)
        return cls(
            Path(str(d.get("source", ""))),
            Path(str(d.get("output", ""))),
            SplitFigures.from_json(d.get("before")),
            SplitFigures.from_json(d.get("after")),
            str(d.get("optimizer", "")),
            float(d.get("optimizer_seconds") or 0.0),
            bool(d.get("compared")),
            d.get("max_abs_diff"),
            d.get("max_rel_diff"),
            int(d.get("outputs_compared") or 0),
            [str(n) for n in d.get("notes") or ()],
        )


def _fig(f: SplitFigures) -> dict[str, int]:
    return {"nodes": f.nodes, "plugin": f.plugin, "partitions": f.partitions, "boundary_bytes": f.boundary_bytes}


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return text[:300]


def seeded_inputs(model: Any, dims: dict[str, int] | None = None, seed: int = 0) -> dict[str, Any]:
    """Inputs for every graph input of ``model`` (an onnx ModelProto): seeded normal floats, small
    non-negative integers (indices, token ids), random booleans; symbolic dimensions from ``dims`` or 1."""
    import numpy as np
    from onnx import helper

    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds: dict[str, Any] = {}
    for vi in model.graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        shape = [
            d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else (dims or {}).get(d.dim_param, 1)
            for d in tt.shape.dim
        ]
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type))
        if dtype.kind == "f":
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind in "iu":
            feeds[vi.name] = rng.integers(0, 4, size=shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[vi.name] = rng.random(shape) < 0.5
        else:
            raise OptimizeError(
                f"Input '{vi.name}' is of type {dtype}, for which no test input can be made: "
                "the outputs cannot be compared."
            )
    return feeds


def _run(path: Path, feeds: dict[str, Any], basic: bool = False) -> list[Any]:
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    opts = ort.SessionOptions()
    opts.log_severity_level = 4
    if basic:  # ONNX Runtime's CPU optimiser crashes on the model at its default level (verify_written said so)
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    sess = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    return list(sess.run(None, {k: v for k, v in feeds.items() if k in names}))


def _reference(
    src: Path, model: Any, dims: dict[str, int] | None
) -> tuple[list[Any] | None, dict[str, Any], str, dict[str, int] | None]:
    """Run the original on seeded inputs. Symbolic dimensions at 1 can break a model traced with fixed
    reshapes, so without ``dims`` from the user a few sizes are tried (1, 2, 4, 8, 16)."""
    params = {
        d.dim_param
        for vi in model.graph.input
        if vi.type.HasField("tensor_type")
        for d in vi.type.tensor_type.shape.dim
        if d.HasField("dim_param")
    }
    tries = [dims] if dims or not params else [{p: k for p in params} for k in (1, 2, 4, 8, 16)]
    why = ""
    for d in tries:
        feeds = seeded_inputs(model, d)
        try:
            return _run(src, feeds), feeds, "", d
        except Exception as e:  # noqa: BLE001 - ORT cannot run custom ops or these sizes: try the next, then say so
            why = _one_line(e)
            if "not a registered function/op" in why or "NOT_IMPLEMENTED" in why:
                break
    return None, {}, why, None


def optimize_export(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    parser: str = "table",
    dims: dict[str, int] | None = None,
    cancel: CancelToken | None = None,
) -> Generator[JobEvent, None, OptimizeResult]:
    """Optimize ``source`` into ``output`` (a job generator); raises :class:`OptimizeError` and writes
    nothing when the optimizer fails or its result does not pass every check."""
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.split.analyze import analyze

    cancel = cancel or CancelToken()
    src, out = Path(source), Path(output)
    if src.resolve() == out.resolve():
        raise OptimizeError("The optimized model must go to a new file: choose another name than the original.")
    if not out.parent.is_dir():
        raise OptimizeError(f"The folder {out.parent} does not exist: create it or write the model elsewhere.")
    yield Progress("optimize", 0, 6, f"Analysing {src.name}")
    before_gm = yield from analyze(src, parser=parser, dims=dims, cancel=cancel)
    yield Progress("optimize", 1, 6, "Running the ONNX optimizer (onnxscript)")
    model, optimized, seconds, version = _optimize(src, cancel)
    notes: list[str] = []
    with ModelWriter(out, external=has_external_data(src) or None) as writer:
        yield Progress("optimize", 2, 6, "Checking the optimized model (onnx.checker)")
        tmp = writer.save(optimized)
        _check_written(tmp, src)
        cancel.raise_if_cancelled()
        yield Progress("optimize", 3, 6, "Comparing outputs with ONNX Runtime on seeded inputs")
        compared = _compare(src, model, tmp, dims, cancel, notes)
        yield Progress("optimize", 4, 6, "Analysing the optimized model")
        after_gm = run_to_end(analyze(tmp, parser=parser, dims=dims, cancel=cancel))
        after_gm.path = out
        cancel.raise_if_cancelled()
        writer.commit()
    yield Progress("optimize", 6, 6, "Done")
    before, after = SplitFigures.of(before_gm), SplitFigures.of(after_gm)
    return OptimizeResult(src, out, before, after, version, seconds, *compared, notes, after_gm)


def _optimize(src: Path, cancel: CancelToken) -> tuple[onnx.ModelProto, onnx.ModelProto, float, str]:
    """The model as read, as onnxscript's optimizer leaves it, the seconds it took, and the optimizer named."""
    import onnx

    try:
        import onnxscript
        from onnxscript import optimizer
    except ImportError:
        raise OptimizeError(
            "The onnxscript package is missing: pip install onnxscript (the optimizer Splitscope runs)."
        ) from None
    model = onnx.load(str(src))
    cancel.raise_if_cancelled()
    t0 = time.perf_counter()
    try:
        optimized = optimizer.optimize(model)
    except Exception as e:  # noqa: BLE001 - any optimizer failure is a one-line answer
        raise OptimizeError(f"The optimizer failed on {src.name} ({_one_line(e)}); nothing was written.") from None
    seconds = time.perf_counter() - t0
    cancel.raise_if_cancelled()
    return model, optimized, seconds, f"onnxscript {onnxscript.__version__}"


def _check_written(tmp: Path, src: Path) -> None:
    """The written model passes ONNX's checker and our own loader, or :class:`OptimizeError` says which not."""
    import onnx
    from splitscope.engine.onnxio.loader import load_model

    try:
        onnx.checker.check_model(str(tmp), full_check=False)
    except Exception as e:  # noqa: BLE001
        raise OptimizeError(
            f"The optimizer broke {src.name}: onnx.checker rejects its output ({_one_line(e)}); nothing was written."
        ) from None
    try:
        load_model(tmp)
    except SplitscopeError as e:
        raise OptimizeError(f"The optimizer broke {src.name}: {e.message} Nothing was written.") from None


def _compare(
    src: Path, model: onnx.ModelProto, tmp: Path, dims: dict[str, int] | None, cancel: CancelToken, notes: list[str]
) -> tuple[bool, float | None, float | None, int]:
    """The original and the written model run in ONNX Runtime on the same seeded inputs: (compared, max abs, max
    rel, outputs compared). Where either cannot run safely the comparison is skipped with a note."""
    if ort_crashes_on(src, dims, cancel):  # the user's own model: never run in this process if ORT dies on it
        ref, feeds, why, used = None, {}, "ONNX Runtime's CPU provider crashes on it", None
    else:
        ref, feeds, why, used = _reference(src, model, dims)
    if ref is None:
        notes.append(f"Outputs not compared: ONNX Runtime cannot run the original ({why}).")
    checks = verify_written(tmp, used or dims, source=src, cancel=cancel)
    if checks.ort not in ("runs", "sizes"):
        notes.append(checks.notes[0])
    if ref is not None and checks.ort in ("crashes", "not-run", "timeout"):
        notes.append("Outputs not compared: ONNX Runtime could not run the optimized model safely (above).")
        ref = None
    if ref is None:
        return False, None, None, 0
    try:
        got = _run(tmp, feeds, basic=checks.ort == "crashes-at-default")
    except Exception as e:  # noqa: BLE001
        raise OptimizeError(
            f"The optimizer broke {src.name}: ONNX Runtime runs the original but not the "
            f"optimized model ({_one_line(e)}); nothing was written."
        ) from None
    if len(got) != len(ref):
        n, m = len(got), len(ref)
        raise OptimizeError(f"The optimized model has {n} outputs, the original {m}; nothing was written.")
    max_abs, max_rel = _differences(ref, got)
    return True, max_abs, max_rel, len(ref)


def _differences(ref: list[Any], got: list[Any]) -> tuple[float, float]:
    """The largest absolute and relative differences between two runs' outputs; :class:`OptimizeError` where an
    output changed shape, a float output past the tolerances, or an integer or boolean output at all."""
    import numpy as np

    max_abs, max_rel = 0.0, 0.0
    for a, b in zip(ref, got, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            raise OptimizeError(
                f"An output changed shape ({list(a.shape)} to {list(b.shape)}) in the optimized model; nothing was "
                "written."
            )
        if a.dtype.kind not in "fc":
            if not np.array_equal(a, b):
                raise OptimizeError(
                    "An integer or boolean output of the optimized model differs from the original's; nothing was "
                    "written."
                )
            continue
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        finite = np.isfinite(diff)
        if diff.size and finite.any():
            max_abs = max(max_abs, float(diff[finite].max()))
            scale = np.abs(a.astype(np.float64))[finite]
            max_rel = max(max_rel, float((diff[finite] / np.maximum(scale, 1e-12)).max()))
        if not np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True):
            raise OptimizeError(
                f"The optimized model's outputs differ from the original's (max abs {max_abs:.3g}, past rtol {RTOL} "
                f"/ atol {ATOL}); nothing was written."
            )
    return max_abs, max_rel
