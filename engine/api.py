"""The Python API: the functions the command line's verbs are built on, with keyword arguments, returning typed
results. ``import splitscope`` gives them (:mod:`splitscope` loads this module on first use). The ``engine`` verb's
function is :func:`engine_report`: ``splitscope.engine`` is the package that holds the engine itself.

Every function takes ``progress``, a callable given ``(done, total, message)`` as the work goes (``total`` 0: not
known yet), and ``cancel``, a :class:`~splitscope.engine.jobs.CancelToken` whose :meth:`cancel` stops the work at its
next step with :class:`~splitscope.engine.errors.JobCancelledError`; a file the work was writing is then left as it
was. Bad input raises a :class:`~splitscope.engine.errors.SplitscopeError` whose message says what to do, as the
command line prints it. Each result has ``to_json()`` (the command line's ``--json`` document) and, where it is a
table, ``to_pandas()`` (with pandas installed: ``pip install 'splitscope[api]'``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from splitscope.engine.frames import frame
from splitscope.engine.jobs import CancelToken, JobEvent, Progress

if TYPE_CHECKING:
    import pandas
    from splitscope.engine.calib.results import CalibrationDoc
    from splitscope.engine.model import GraphModel
    from splitscope.engine.rewrite.optimize import OptimizeResult
    from splitscope.engine.runtime.profile import ProfileResult
    from splitscope.engine.trtdata.importer import EngineData

PathLike = str | os.PathLike[str]
ProgressFn = Callable[[int, int, str], None]
T = TypeVar("T")

__all__ = [
    "Analysis",
    "EngineReport",
    "KernelRun",
    "Report",
    "analyze",
    "calibrate",
    "engine_report",
    "kernel",
    "kernel_args",
    "optimize",
    "profile",
    "report",
]


def drive(job: Generator[JobEvent, None, T], progress: ProgressFn | None, cancel: CancelToken | None) -> T:
    """Run a job generator to its end, telling ``progress`` each step and stopping when ``cancel`` is set."""
    try:
        while True:
            if cancel is not None:
                cancel.raise_if_cancelled()
            try:
                ev = next(job)
            except StopIteration as stop:
                return stop.value
            if progress is not None and isinstance(ev, Progress):
                progress(ev.done, ev.total, ev.message)
    finally:
        job.close()  # a job stopped midway cleans up (its files are written atomically at its end)


@dataclass(frozen=True, slots=True)
class Analysis:
    """A model split between TensorRT and custom CUDA: :attr:`model` holds every node, tensor and partition."""

    model: GraphModel

    @property
    def path(self) -> Path | None:
        return self.model.path

    @property
    def flops(self) -> int:
        """FLOPs of one inference at the shapes in force (nodes whose shapes are unknown count 0)."""
        return self.model.total_flops()

    @property
    def headline(self) -> str:
        from splitscope.engine.report.stats import headline

        return headline(self.model)

    def to_json(self) -> dict[str, Any]:
        """The ``splitscope analyze --json`` document."""
        from splitscope.engine.report.schema import to_json

        return to_json(self.model)

    def to_pandas(self) -> pandas.DataFrame:
        """One row per node: name, op type, status (delegate or plugin), role, reason, remedy, FLOPs, bytes, scope."""
        return frame(self.to_json()["node_status"])


@dataclass(frozen=True, slots=True)
class EngineReport:
    """What TensorRT did: the engine's layers read from trtexec's files or a build, mapped onto the model."""

    data: EngineData
    json: dict[str, Any]
    model: GraphModel | None = None
    """The model's analysis the layers were mapped onto (None without a model)."""

    def to_json(self) -> dict[str, Any]:
        return self.json

    def to_pandas(self) -> pandas.DataFrame:
        """One row per engine layer: name, type, precision, time, the model nodes it holds."""
        return frame(self.json["layers"])


@dataclass(frozen=True, slots=True)
class Report:
    """A written report: where, how large, and its headline."""

    out: Path
    bytes: int
    headline: str
    json: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.json


@dataclass(frozen=True, slots=True)
class KernelRun:
    """The kernel workbench's run: the nodes alone, their real tensors, the kernel checked and timed."""

    json: dict[str, Any]

    @property
    def numerics_ok(self) -> bool | None:
        """Whether the kernel matched the reference (None where no kernel ran: no GPU, or none given)."""
        return (self.json.get("kernel") or {}).get("numerics_ok")

    def to_json(self) -> dict[str, Any]:
        return self.json


def analyze(
    model: PathLike | None = None,
    *,
    parser: str = "auto",
    dims: dict[str, int] | None = None,
    require_dims: bool = True,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> Analysis:
    """Split ``model`` (default: the bundled sample): each node delegate or plugin with its reason and remedy, FLOPs
    and bytes at ``dims`` (symbolic dims by name), engine partitions and the bytes crossing them. ``parser``:
    ``auto`` (a TensorRT parser where installed, else the support table), ``tensorrt``, ``rtx`` or ``table``.
    A symbolic dim with no value and no hint in the model is refused, naming it (``require_dims=False``: its
    shapes and FLOPs stay unknown instead)."""
    from splitscope.engine.split.analyze import analyze as job

    run = job(model, parser=parser, dims=dims, require_dims=require_dims, cancel=cancel)
    return Analysis(drive(run, progress, cancel))


def profile(
    model: PathLike,
    *,
    backend: str = "ort-cpu",
    iterations: int = 100,
    warmup: int = 10,
    profiled: int = 20,
    dims: dict[str, int] | None = None,
    inputs: PathLike | None = None,
    parser: str = "table",
    custom_ops: list[str] | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> ProfileResult:
    """Time ``model`` on this machine: latency, per-node times, copies, and the verdict (graph, kernels or data
    movement). ``backend``: ``ort-cpu``, ``ort-cuda``, ``tensorrt`` or ``tensorrt-rtx``; ``inputs``: an .npz of
    real inputs (their shapes give the dims not named); ``profiled``: runs under the profiler for per-node times."""
    from splitscope.engine.errors import SplitscopeError
    from splitscope.engine.runtime.ort import check_backend
    from splitscope.engine.runtime.profile import profile as job

    if iterations < 1 or warmup < 0:
        raise SplitscopeError("iterations must be 1 or more and warmup 0 or more.")
    check_backend(backend)
    dims = dict(dims or {})
    if inputs is not None:  # the shapes of the user's arrays give the dims not named
        dims = {**_file_dims(model, inputs), **dims}
    gm = analyze(model, parser=parser, dims=dims, cancel=cancel).model
    gm_path = gm.path or Path(model)
    run = job(
        gm_path,
        gm,
        backend=backend,
        iterations=iterations,
        warmup=warmup,
        profiled=profiled,
        dims=dims,
        input_file=Path(inputs) if inputs is not None else None,
        custom_ops=custom_ops,
        cancel=cancel,
    )
    return drive(run, progress, cancel)


def calibrate(
    model: PathLike,
    out: PathLike,
    *,
    data: str = "random",
    method: str = "entropy",
    precision: str = "int8",
    samples: int = 32,
    keep: list[str] | None = None,
    dims: dict[str, int] | None = None,
    percentile: float = 99.99,
    budget: str | None = None,
    sensitivity: bool = False,
    backend: str = "ort-cpu",
    recipe: str | None = None,
    half: list[str] | None = None,
    half_precision: str = "fp16",
    labels: str | None = None,
    metric: str = "auto",
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> CalibrationDoc:
    """Write ``model`` reduced to ``precision`` (int8 or fp8 as Q/DQ, fp16 or bf16 as casts) to ``out``, calibrated
    on ``data`` (``random``, or a folder of .npy/.npz samples or images, pre-processed by ``recipe``), and measure
    the written model against FP32 on held-out samples. ``keep``: nodes kept in float; ``budget``: a search for the
    fewest such nodes that meet an accuracy target (``snr_db>=30``); ``half``: nodes pinned to ``half_precision``
    inside an INT8/FP8 model. ``out`` is written only when the whole run succeeded."""
    from splitscope.engine.calib.calibrate import calibrate as job
    from splitscope.engine.calib.results import CalibrationDoc

    run = job(
        Path(model),
        Path(out),
        data=data,
        method=method,
        precision=precision,
        samples=samples,
        keep=keep,
        dims=dims,
        percentile=percentile,
        budget=budget,
        sensitivity=sensitivity,
        backend=backend,
        recipe=recipe,
        half=half,
        half_precision=half_precision,
        labels=labels,
        metric=metric,
        cancel=cancel,
    )
    return CalibrationDoc.from_json(drive(run, progress, cancel))


def optimize(
    model: PathLike,
    out: PathLike,
    *,
    parser: str = "table",
    dims: dict[str, int] | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> OptimizeResult:
    """Run an ONNX optimizer on a copy of ``model`` written to ``out``, check that its outputs agree in ONNX Runtime,
    and give the split before and after."""
    from splitscope.engine.rewrite.optimize import optimize_export

    return drive(optimize_export(model, out, parser=parser, dims=dims, cancel=cancel), progress, cancel)


def engine_report(
    model: PathLike | None = None,
    *,
    layers: PathLike | None = None,
    profile: PathLike | None = None,
    times: PathLike | None = None,
    build: str | None = None,
    compare: PathLike | None = None,
    compare_profile: PathLike | None = None,
    parser: str = "auto",
    dims: dict[str, int] | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> EngineReport:
    """Read what TensorRT did: trtexec's ``--exportLayerInfo`` (``layers``), ``--exportProfile`` and
    ``--exportTimes`` files (TensorRT 8.2 to 11), or a build here (``build``: ``rtx`` or ``tensorrt``), mapped onto
    ``model`` when given, with the lint's advice and, given another engine's files, a comparison."""
    from splitscope.engine.errors import SplitscopeError
    from splitscope.engine.trtdata.compare import compare as compare_engines
    from splitscope.engine.trtdata.importer import import_files
    from splitscope.engine.trtdata.lint import lint

    files = [str(f) for f in (layers, profile, times) if f]
    if not files and not build:
        raise SplitscopeError(
            "Give at least one of --layers, --profile or --times (the files trtexec wrote with "
            "--exportLayerInfo, --exportProfile, --exportTimes), or --build rtx with a model."
        )
    if build and not model:
        raise SplitscopeError("--build needs the ONNX model to build.")
    gm = (
        analyze(model, parser=parser, dims=dims, require_dims=bool(build), progress=progress, cancel=cancel).model
        if model
        else None
    )
    if progress is not None:
        progress(0, 0, f"Building with {build}" if build else "Reading the engine's files")
    if build:
        from splitscope.engine.runtime.trt import from_build

        assert model is not None
        data = from_build(str(model), gm, build, dict(gm.dims) if gm is not None else dict(dims or {}))
    else:
        data = import_files(files, gm)
    doc = data.to_json()
    if gm is not None and gm.path is not None:  # mapped onto this model: the report checks it is the same content
        from splitscope.engine.runtime.store import content_key

        doc["model"], doc["model_key"] = str(gm.path), content_key(gm.path)
    doc["lint"] = lint(data)
    if compare or compare_profile:
        other = import_files([str(f) for f in (compare, compare_profile) if f], gm)
        doc["comparison"] = compare_engines(data, other)
    return EngineReport(data, doc, gm)


def report(
    model: PathLike | None,
    out: PathLike,
    *,
    profiles: list[PathLike] | None = None,
    engine: PathLike | None = None,
    calibration: PathLike | None = None,
    scenario: PathLike | None = None,
    kernels: list[PathLike] | None = None,
    generation: PathLike | None = None,
    sweep: PathLike | None = None,
    build: dict[str, Any] | None = None,
    parser: str = "auto",
    dims: dict[str, int] | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> Report:
    """Write a self-contained HTML report (or PDF, by ``out``'s suffix) of the split, with the saved results of the
    other verbs given as their ``--json`` files."""
    from splitscope.engine.present.report import make_report

    def names(paths: list[PathLike] | None) -> list[str] | None:
        return [str(p) for p in paths] if paths else None

    def name(path: PathLike | None) -> str | None:
        return str(path) if path else None

    run = make_report(
        model,
        out,
        profiles=names(profiles),
        engine=name(engine),
        calibration=name(calibration),
        scenario=name(scenario),
        parser=parser,
        dims=dims,
        cancel=cancel,
        build=build,
        kernels=names(kernels),
        generation=name(generation),
        sweep=name(sweep),
    )
    doc = drive(run, progress, cancel)
    return Report(Path(doc["out"]), int(doc["bytes"]), str(doc["headline"]), doc)


def _file_dims(model: PathLike, inputs: PathLike) -> dict[str, int]:
    """The symbolic dims an inputs file's arrays give (a bad file is named by the profile itself)."""
    import onnx
    from splitscope.engine.errors import SplitscopeError
    from splitscope.engine.runtime.inputs import dims_from_feeds, file_feeds, input_specs

    try:
        specs = input_specs(onnx.load(str(model), load_external_data=False))
        return dims_from_feeds(specs, file_feeds(Path(inputs), specs))
    except (SplitscopeError, OSError, ValueError):
        return {}


def kernel_args(
    model: PathLike,
    nodes: list[str] | None = None,
    *,
    source: PathLike | None = None,
    reference: PathLike | None = None,
    compare_default: bool = True,
    dims: dict[str, int] | None = None,
    data: str = "random",
    recipe: str = "",
    parser: str = "auto",
    iterations: int = 100,
    atol: float = 1e-4,
    rtol: float = 1e-3,
    out: PathLike | None = None,
) -> dict[str, Any]:
    """The kernel job's arguments (:func:`kernel`'s), as its child process (here or on a target) reads them."""
    return {
        "model": str(Path(model).resolve()),
        "nodes": list(nodes or []),
        "dims": dict(dims or {}),
        "data": data,
        "recipe": recipe,
        "source": str(Path(source).resolve()) if source else None,
        "reference": str(Path(reference).resolve()) if reference else None,
        "compare_default": bool(compare_default),
        "out": str(Path(out).resolve()) if out else None,
        "parser": parser,
        "iters": int(iterations),
        "atol": atol,
        "rtol": rtol,
    }


def kernel(
    model: PathLike,
    nodes: list[str] | None = None,
    *,
    source: PathLike | None = None,
    reference: PathLike | None = None,
    compare_default: bool = True,
    dims: dict[str, int] | None = None,
    data: str = "random",
    recipe: str = "",
    parser: str = "auto",
    iterations: int = 100,
    atol: float = 1e-4,
    rtol: float = 1e-3,
    out: PathLike | None = None,
    progress: ProgressFn | None = None,
    cancel: CancelToken | None = None,
) -> KernelRun:
    """The custom part worked (in a child process): ``nodes`` (default: the first plugin node) cut out alone with
    their real tensors (``data``: ``random`` or a folder of samples, read by ``recipe``), a plugin project written to
    ``out``, and ``source`` (a CUDA kernel, or a Python one) checked against the reference (``reference``: another
    implementation; within ``atol`` and ``rtol``) and timed over ``iterations`` on the GPU against ONNX Runtime's
    default (``compare_default``)."""
    from splitscope.engine.process import JobProcess

    args = kernel_args(
        model,
        nodes,
        source=source,
        reference=reference,
        compare_default=compare_default,
        dims=dims,
        data=data,
        recipe=recipe,
        parser=parser,
        iterations=iterations,
        atol=atol,
        rtol=rtol,
        out=out,
    )
    token = cancel or CancelToken()
    return KernelRun(drive(JobProcess("kernel", args).events(token), progress, token))
