"""TensorRT and TensorRT-RTX as profiling backends: build with a progress monitor (Cancel stops the build),
deserialize, run with ``execute_async_v3`` on buffers and a stream from cuda-python, per-layer times through
an ``IProfiler`` on separate iterations, and the engine inspector's layer list mapped to ONNX nodes.

No TensorRT engine can run where this was written (no GPU that TensorRT-RTX supports, no TensorRT); the
build is real and tested with TensorRT-RTX on the CPU, the execution path is written to the documented API
and tested against a named fake whose every member is checked to exist on ``tensorrt_rtx``'s classes
(:data:`API_USED`).
"""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from splitscope.engine.errors import BackendUnavailableError
from splitscope.engine.jobs import CancelToken

MODULES = {"tensorrt": "tensorrt", "rtx": "tensorrt_rtx"}
API_USED: dict[str, tuple[str, ...]] = {
    "Runtime": ("deserialize_cuda_engine",),
    "ICudaEngine": (
        "num_io_tensors",
        "get_tensor_name",
        "get_tensor_mode",
        "get_tensor_shape",
        "get_tensor_dtype",
        "create_execution_context",
        "create_engine_inspector",
        "num_layers",
    ),
    "IExecutionContext": ("set_tensor_address", "set_input_shape", "execute_async_v3", "profiler", "get_tensor_shape"),
    "IProfiler": ("report_layer_time",),
    "IProgressMonitor": ("phase_start", "step_complete", "phase_finish"),
    "EngineInspector": ("get_engine_information",),
    "IBuilderConfig": (
        "progress_monitor",
        "profiling_verbosity",
        "add_optimization_profile",
        "create_timing_cache",
        "set_timing_cache",
        "get_timing_cache",
    ),
    "ITimingCache": ("serialize",),
    "ILogger": ("log",),
}
"""The members of TensorRT's classes this module uses (tests check them on the real ``tensorrt_rtx``)."""


def trt_module(backend: str) -> Any:
    """``tensorrt`` or ``tensorrt_rtx``, imported on first use."""
    name = MODULES[backend]
    try:
        return importlib.import_module(name)
    except ImportError:
        extra = "tensorrt" if backend == "tensorrt" else "rtx"
        raise BackendUnavailableError(
            f"The {backend} backend needs {name}: pip install 'splitscope[{extra}]'."
        ) from None


class BuildCancelled(Exception):
    """The user cancelled the build (the monitor told the builder to stop)."""


def build_engine(
    path: str | Path,
    backend: str,
    dims: dict[str, int] | None = None,
    cancel: CancelToken | None = None,
    on_phase: Callable[[str, int, int], None] | None = None,
    logger: Any = None,
) -> bytes:
    """Parse and build ``path`` into a serialized engine (detailed profiling verbosity, one optimisation profile
    at the given dims for dynamic inputs). ``on_phase(name, step, steps)`` reports progress; ``cancel`` stops
    the build at its next step (:class:`BuildCancelled`)."""
    trt = trt_module(backend)
    cancel = cancel or CancelToken()
    logger = logger or trt.Logger(trt.Logger.ERROR)
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)  # keep the network alive as long as the parser
    if not parser.parse_from_file(str(path)):
        errs = [parser.get_error(i).desc() for i in range(parser.num_errors)]
        raise BackendUnavailableError(
            f"The {backend} parser rejected the model: {(errs or ['no reason'])[0][:200]} "
            "(the Split summary names each node TensorRT cannot take)."
        )
    config = builder.create_builder_config()
    config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
    timing = _load_timing_cache(config, backend, trt)
    profile = None
    specs = _input_dims(path)
    for i in range(network.num_inputs):
        t = network.get_input(i)
        shape = tuple(t.shape)
        if any(d < 0 for d in shape):
            names = specs.get(t.name, ())
            missing = [
                str(names[k]) if k < len(names) else f"{t.name}[{k}]"
                for k, d in enumerate(shape)
                if d < 0 and (k >= len(names) or str(names[k]) not in (dims or {}))
            ]
            if missing:  # never built at a guessed 1: the engine would hold only that shape
                raise BackendUnavailableError(
                    f"Building needs a value for {', '.join(missing)} (input '{t.name}'): give "
                    + " ".join(f"--dim {m}=VALUE" for m in missing)
                    + " (or set it in Tools › Input Shapes…)."
                )
            concrete = tuple(d if d >= 0 else int((dims or {})[str(names[k])]) for k, d in enumerate(shape))
            profile = profile or builder.create_optimization_profile()
            profile.set_shape(t.name, concrete, concrete, concrete)
    if profile is not None:
        config.add_optimization_profile(profile)

    class Monitor(trt.IProgressMonitor):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            trt.IProgressMonitor.__init__(self)
            self.phases: dict[str, int] = {}

        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
            self.phases[phase_name] = num_steps

        def step_complete(self, phase_name: str, step: int) -> bool:
            if on_phase is not None:
                on_phase(phase_name, step + 1, self.phases.get(phase_name, 0))
            return not cancel.cancelled  # False: the builder stops

        def phase_finish(self, phase_name: str) -> None:
            pass

    monitor = Monitor()
    config.progress_monitor = monitor
    plan = builder.build_serialized_network(network, config)
    if cancel.cancelled:
        raise BuildCancelled()
    if plan is None:
        raise BackendUnavailableError(
            f"The {backend} builder could not build an engine for this model "
            "(see the Split summary for the nodes it cannot take)."
        )
    _save_timing_cache(config, timing)
    return bytes(plan)


def _load_timing_cache(config: Any, backend: str, trt: Any) -> Path | None:
    """Full TensorRT's timing cache (kernel timings reused across builds), per TensorRT version; TensorRT-RTX
    has none (its timing cache calls are no-ops since 1.2)."""
    if backend != "tensorrt":
        return None
    from splitscope.engine.paths import cache_dir

    file = cache_dir() / "trt" / f"timing-{trt.__version__}.cache"
    data = file.read_bytes() if file.is_file() else b""
    config.set_timing_cache(config.create_timing_cache(data), False)
    return file


def _save_timing_cache(config: Any, file: Path | None) -> None:
    if file is None:
        return
    from splitscope.engine.report.files import write_bytes_atomic

    with contextlib.suppress(OSError):
        write_bytes_atomic(file, bytes(config.get_timing_cache().serialize()))


def _plan_key(path: str | Path, backend: str, dims: dict[str, int] | None, version: str) -> str:
    """What an engine depends on: the model's content (and its external weights), the backend and its version,
    the dims in force and, for full TensorRT, the GPU it is built for (an engine is tied to one architecture)."""
    import hashlib

    from splitscope.engine.runtime.store import model_key

    device = "any"
    if backend == "tensorrt":
        from splitscope.engine.runtime.device import NoGpu, gpu_info

        try:
            info = gpu_info(0)
            device = f"{info.name}-cc{info.compute_capability[0]}{info.compute_capability[1]}"
        except NoGpu:
            device = "nogpu"
    from splitscope.engine.onnxio.writer import external_locations

    files = [Path(path)] + [Path(path).parent / loc for loc in sorted(external_locations(path))]
    stamps = [[f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in files if f.exists()]
    # The content key samples a large file; its size and time, and its external weights', catch a re-export.
    text = json.dumps([model_key(path), stamps, backend, version, sorted((dims or {}).items()), device])
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def cached_plan(
    path: str | Path,
    backend: str,
    dims: dict[str, int] | None = None,
    cancel: CancelToken | None = None,
    on_phase: Callable[[str, int, int], None] | None = None,
) -> tuple[bytes, bool]:
    """The serialized engine of ``path`` from the plan cache, or built now and kept there (atomically); and
    whether it came from the cache. The key is the model's content, backend, version, dims and GPU, so a
    changed model or other dims never get a stale engine (``SPLITSCOPE_CACHE_DIR``/trt/plans)."""
    from splitscope.engine.paths import cache_dir
    from splitscope.engine.report.files import write_bytes_atomic

    trt = trt_module(backend)
    file = cache_dir() / "trt" / "plans" / f"{_plan_key(path, backend, dims, str(trt.__version__))}.plan"
    if file.is_file() and file.stat().st_size > 0:
        return file.read_bytes(), True
    plan = build_engine(path, backend, dims, cancel, on_phase)
    with contextlib.suppress(OSError):  # a full or read-only cache costs a rebuild next time, never this profile
        write_bytes_atomic(file, plan)
    return plan, False


def build_and_list_layers(
    path: str | Path,
    backend: str = "rtx",
    dims: dict[str, int] | None = None,
    cancel: CancelToken | None = None,
    on_phase: Callable[[str, int, int], None] | None = None,
) -> tuple[bytes, list[str]]:
    """Build as :func:`build_engine` does, keeping the builder's verbose log: its ``Layers:`` listing is read by
    :func:`splitscope.engine.trtdata.buildlog.layers_from_log` where the engine itself cannot be inspected."""
    trt = trt_module(backend)
    lines: list[str] = []

    class Log(trt.ILogger):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            trt.ILogger.__init__(self)

        def log(self, severity: Any, msg: str) -> None:
            lines.append(msg)

    plan = build_engine(path, backend, dims, cancel, on_phase, logger=Log())
    return plan, lines


def from_build(
    path: str | Path,
    gm: Any,
    backend: str = "rtx",
    dims: dict[str, int] | None = None,
    cancel: Any = None,
    on_phase: Any = None,
) -> Any:
    """Build ``path`` here (TensorRT-RTX builds on the CPU) and read the layers its builder lists."""
    _, lines = build_and_list_layers(path, backend, dims, cancel, on_phase)
    return engine_data_from_log(lines, path, gm, backend)


def engine_data_from_log(lines: list[str], path: str | Path, gm: Any, backend: str = "rtx") -> Any:
    """The engine data of a build from its builder's log (``lines``), mapped onto ``gm`` when given: the part of
    :func:`from_build` that needs no TensorRT (the window runs the build in a child and this in a worker)."""
    from splitscope.engine.trtdata.buildlog import layers_from_log
    from splitscope.engine.trtdata.importer import EngineData
    from splitscope.engine.trtdata.mapping import map_layers

    layers = layers_from_log(lines)
    layers.path = f"{backend} build of {Path(path).name}"
    data = EngineData(layers=layers, gm=gm)
    data.notes.append(f"layers from the {backend} builder's log (no engine was run: no profile times)")
    if gm is not None:
        data.mapping = map_layers(data.rows, gm)
    return data


def _input_dims(path: str | Path) -> dict[str, tuple[int | str, ...]]:
    """Each ONNX input's dims (ints, or the names of symbolic dims), for the optimisation profile."""
    import onnx
    from splitscope.engine.runtime.inputs import input_specs

    try:
        return {s.name: s.dims for s in input_specs(onnx.load(str(path), load_external_data=False))}
    except Exception:  # noqa: BLE001 - an input the profiler cannot feed still builds with 1 for its dims
        return {}


def onnx_nodes_of(layer: dict[str, Any]) -> list[str]:
    """The ONNX node names a layer of the engine inspector's JSON came from: its ``Metadata`` holds
    ``[ONNX Layer: NAME]`` entries separated by ``\\x1E`` (TensorRT 10 and 11); older engines only have the
    layer name, whose fused parts (``a + b``, ``PWN(a, b)``, ``{ForeignNode[a...b]}``) name ONNX nodes."""
    meta = str(layer.get("Metadata", "") or "")
    names = []
    for part in meta.replace("\x1f", "\x1e").split("\x1e"):
        part = part.strip()
        if part.startswith("[ONNX Layer:") and part.endswith("]"):
            names.append(part[len("[ONNX Layer:") : -1].strip())
    return names


def engine_layers(engine: Any, trt: Any) -> list[dict[str, Any]]:
    """The engine inspector's layers (``Layers`` of its JSON: each a dict, or a bare name at low verbosity)."""
    inspector = engine.create_engine_inspector()
    info = json.loads(inspector.get_engine_information(trt.LayerInformationFormat.JSON))
    layers = info.get("Layers", []) if isinstance(info, dict) else []
    return [x if isinstance(x, dict) else {"Name": str(x)} for x in layers]


class EngineSession:
    """A deserialized engine with device buffers for its I/O tensors and a stream (cuda-python)."""

    def __init__(
        self, plan: bytes, backend: str, feeds: dict[str, np.ndarray], trt: Any = None, cuda: Any = None
    ) -> None:
        self.trt = trt or trt_module(backend)
        if cuda is None:
            from splitscope.engine.runtime.device import NoGpu, cuda_runtime

            try:
                cuda = cuda_runtime()
            except NoGpu:
                raise BackendUnavailableError(
                    "Running an engine needs cuda-python: pip install 'splitscope[gpu]'."
                ) from None
        self.cuda: Any = cuda
        logger = self.trt.Logger(self.trt.Logger.ERROR)
        self.runtime = self.trt.Runtime(logger)
        self.engine = self.runtime.deserialize_cuda_engine(plan)
        if self.engine is None:
            raise BackendUnavailableError(
                f"The {backend} runtime could not load the engine on this GPU "
                "(TensorRT-RTX runs on compute capability 8.0, 8.6, 8.9 and 12.x)."
            )
        self.context = self.engine.create_execution_context()
        _err, self.stream = cuda.cudaStreamCreate()
        self.buffers: dict[str, int] = {}
        self.outputs: list[str] = []
        for i in range(self.engine.num_io_tensors):
            name = self.engine.get_tensor_name(i)
            if self.engine.get_tensor_mode(name) == self.trt.TensorIOMode.INPUT:
                a = np.ascontiguousarray(feeds[name])
                self.context.set_input_shape(name, a.shape)
                ptr = self._alloc(a.nbytes)
                cuda.cudaMemcpy(ptr, a.ctypes.data, a.nbytes, cuda.cudaMemcpyKind.cudaMemcpyHostToDevice)
            else:
                shape = tuple(self.context.get_tensor_shape(name))
                ptr = self._alloc(int(np.prod(shape, dtype=np.int64)) * 8)  # 8 bytes: the widest element
                self.outputs.append(name)
            self.buffers[name] = ptr
            self.context.set_tensor_address(name, ptr)

    def _alloc(self, nbytes: int) -> int:
        err, ptr = self.cuda.cudaMalloc(max(nbytes, 1))
        if int(err) != 0:
            raise BackendUnavailableError(f"cudaMalloc of {nbytes} bytes failed ({err}): free GPU memory and retry.")
        return int(ptr)

    def run(self) -> None:
        """One inference, waited for."""
        if not self.context.execute_async_v3(self.stream):
            raise BackendUnavailableError("execute_async_v3 failed: see TensorRT's log.")
        self.cuda.cudaStreamSynchronize(self.stream)

    def layer_times(self, iterations: int, cancel: CancelToken) -> tuple[dict[str, float], int]:
        """Milliseconds per layer summed over ``iterations`` profiled runs (an ``IProfiler`` attached only here)."""
        trt = self.trt
        times: dict[str, float] = {}

        class Profiler(trt.IProfiler):  # type: ignore[misc, name-defined]
            def __init__(self) -> None:
                trt.IProfiler.__init__(self)

            def report_layer_time(self, layer_name: str, ms: float) -> None:
                times[layer_name] = times.get(layer_name, 0.0) + ms

        self.context.profiler = Profiler()
        done = 0
        try:
            for _ in range(iterations):
                cancel.raise_if_cancelled()
                self.run()
                done += 1
        finally:
            self.context.profiler = None
        return times, done

    def close(self) -> None:
        for ptr in self.buffers.values():
            self.cuda.cudaFree(ptr)
        self.buffers.clear()
        self.cuda.cudaStreamDestroy(self.stream)
