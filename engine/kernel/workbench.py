"""The kernel workbench's GPU job: a kernel compiled with NVRTC, run on the op's real tensors, checked against the
reference, timed, and set against the runtime default (ONNX Runtime CUDA on the same extract) and the speed of light
of its FLOPs and bytes at this GPU's peaks; the verdict is one sentence with its numbers.

Kernel against kernel: where CUPTI can be used, both sides' device times are the kernels' own records (the
workbench kernel's launches, and every kernel ONNX Runtime launches for the extract), so a few microseconds of
kernel are not hidden under 10-20 us of launch and synchronisation; the host times (launch included) stand beside
them, and decide only where device times cannot be had."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
from splitscope.engine.jobs import CancelToken, JobEvent, Progress, Sample
from splitscope.engine.kernel.extract import Extract, Reference
from splitscope.engine.kernel.results import KernelResult


def speed_of_light(ex: Extract, inputs: dict[str, np.ndarray], gpu: Any) -> tuple[float | None, str]:
    """The op's bound in ms at the GPU's peaks: max(FLOPs / peak, bytes / bandwidth), bytes being what it must
    read and write once (its inputs and outputs at their dtypes)."""
    moved = sum(int(np.asarray(v).nbytes) for v in inputs.values())
    moved += sum(int(np.prod(o.shape or ())) * np.dtype(o.dtype).itemsize for o in ex.outputs)
    dtype = "fp16" if any(o.dtype == "float16" for o in ex.outputs) else "fp32"
    peak = (gpu.peak_flops or {}).get(dtype) if gpu is not None else None
    if gpu is None or not gpu.peak_bandwidth:
        return None, "no GPU peaks"
    t_mem = moved / gpu.peak_bandwidth
    t_flop = ex.flops / peak if peak else 0.0
    bound = "memory" if t_mem >= t_flop else "compute"
    return 1e3 * max(t_mem, t_flop), (
        f"{bound}-bound: {moved / 1e6:.2f} MB at {gpu.peak_bandwidth / 1e12:.2f} TB/s"
        + (f", {ex.flops / 1e6:.1f} MFLOP at {peak / 1e12:.0f} TFLOP/s {dtype}" if peak else "")
    )


@dataclass
class DefaultTimes:
    """The runtime default (ONNX Runtime CUDA on the extract) timed: on the host, and its kernels on the device."""

    host_ms: float | None = None
    how: str = ""
    device_ms: float | None = None
    device_how: str = ""


def default_time(ex: Extract, inputs: dict[str, np.ndarray], iters: int = 50, device: bool = False) -> DefaultTimes:
    """ONNX Runtime CUDA on the extract, inputs and outputs on the device (I/O binding): the median ms of ``iters``
    runs after a warm-up, timed on the host; with ``device``, then ``iters`` runs more in the same session with
    CUPTI recording, for its kernels' device time a run. None and why where either cannot be had."""
    try:
        import onnxruntime as ort
    except ImportError:
        return DefaultTimes(how="ONNX Runtime is not installed")
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return DefaultTimes(how="not measured: this ONNX Runtime has no CUDA provider (pip install onnxruntime-gpu)")
    if hasattr(ort, "preload_dlls"):
        with contextlib.suppress(Exception):  # the libraries may be found otherwise
            ort.preload_dlls()
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    try:
        sess = ort.InferenceSession(ex.model, opts, providers=["CUDAExecutionProvider"])
        if "CUDAExecutionProvider" not in sess.get_providers():
            return DefaultTimes(how="not measured: ONNX Runtime fell back to the CPU")
        bind = sess.io_binding()
        keep = []  # the device copies of the inputs, alive while the session runs on them
        for i in sess.get_inputs():
            keep.append(ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(inputs[i.name]), "cuda", 0))
            bind.bind_ortvalue_input(i.name, keep[-1])
        for o in sess.get_outputs():
            bind.bind_output(o.name, "cuda", 0)
        for _ in range(5):
            sess.run_with_iobinding(bind)
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            sess.run_with_iobinding(bind)
            times.append(1e3 * (time.perf_counter() - t0))
    except Exception as e:  # noqa: BLE001 - ORT names the node it has no CUDA kernel for
        return DefaultTimes(how=f"not measured: ONNX Runtime CUDA cannot run it ({' '.join(str(e).split())[:160]})")
    out = DefaultTimes(
        statistics.median(times), f"ONNX Runtime {ort.__version__} CUDA, median of {iters} (host-timed, I/O bound)"
    )
    if device:
        out.device_ms, out.device_how = _device_time_of(lambda: sess.run_with_iobinding(bind), iters, iters)
    return out


def _device_time_of(run: Any, times: int, runs: int | None) -> tuple[float | None, str]:
    """The device time a run of the kernels ``run()`` launches, from CUPTI's records over ``times`` calls
    (``runs``: how many runs they make; None: each kernel once a run); None and why where it cannot."""
    from splitscope.engine.runtime import cupti_times

    why = cupti_times.available()
    if why:
        return None, why
    try:
        with cupti_times.KernelTrace() as t:
            for _ in range(times):
                run()
    except Exception as e:  # noqa: BLE001 - ORT's, CUPTI's or the launch's own errors
        return None, f"not measured: {' '.join(str(e).split())[:160]}"
    kernels = len(t.trace.kernels) // max(runs or 1, 1)
    return cupti_times.device_ms_per_run(t.trace, runs), f"CUPTI: {kernels} kernels a run"


def verdict(r: KernelResult, nodes: int, delegated: bool) -> str:
    """One sentence with its numbers."""
    if not r.compiled:
        return f"The kernel does not compile: {r.error}"
    if not r.ran or r.ms is None:
        return f"The kernel compiled but did not run: {r.error or 'no launch was timed'}"
    where = f"these {nodes} nodes" if nodes > 1 else "this node"
    own = r.device_ms or r.ms  # the bound against the kernel's own device time where CUPTI gave it
    bound = f", at {r.sol_ms / own:.0%} of the bound" if r.sol_ms and own else ""
    if r.numerics_ok is False:
        w = r.worst or {}
        return (
            f"The kernel is wrong: {r.beyond or 0:.1%} of the elements are beyond tolerance (max abs error "
            f"{r.max_abs_err:.3g}, worst at {w.get('index')}: {w.get('got')} for {w.get('want')}): fix it first."
        )
    if r.default_ms is None or not r.ms:
        why = r.default_how.removeprefix("not measured: ")
        return f"Your kernel takes {r.ms:.4f} ms{bound}; the runtime default was not measured ({why})."
    if r.device_ms and r.default_device_ms:  # kernel against kernel, on the device; the host's beside
        ratio = r.default_device_ms / r.device_ms
        host = f"; on the host, launch included, {r.host_ms:.4f} against {r.default_ms:.4f} ms" if r.host_ms else ""
        nums = f" (device time {r.device_ms:.4f} ms against {r.default_device_ms:.4f} ms{host})"
    else:
        mine = r.host_ms or r.ms
        ratio = r.default_ms / mine  # like with like: both timed on the host, the launch included
        nums = f" ({mine:.4f} ms against {r.default_ms:.4f} ms, on the host: no device times here)"
    if 1 / 1.1 <= ratio <= 1.1:
        tail = ", which TensorRT fuses: keep them delegated" if delegated else ": no gain from writing it"
        return f"Your kernel is about as fast as the runtime default on {where}{nums}{bound}{tail}."
    if ratio < 1.0:
        tail = ", which TensorRT fuses: keep them delegated" if delegated else ": the default is the better kernel"
        return f"Your kernel is {1 / ratio:.1f}x slower than the runtime default on {where}{nums}{bound}{tail}."
    if delegated:
        return (
            f"Your kernel is {ratio:.1f}x faster than the runtime default on {where}{nums}{bound}: worth a plugin, "
            "if a TensorRT engine (not run here) does not do as well."
        )
    return f"Your kernel is {ratio:.1f}x faster than the runtime default on {where}{nums}{bound}: worth a plugin."


def _histogram(out: np.ndarray, ref: np.ndarray) -> dict[str, list[float]]:
    err = np.abs(out.astype(np.float64) - ref.astype(np.float64)).ravel()
    err = np.log10(np.maximum(err[np.isfinite(err)], 1e-12))
    counts, edges = np.histogram(err, bins=24, range=(-12.0, 0.0)) if err.size else (np.zeros(24), np.zeros(25))
    return {"edges": [float(x) for x in edges], "counts": [float(x) for x in counts]}


def run_kernel(
    ex: Extract,
    inputs: dict[str, np.ndarray],
    ref: Reference,
    source: str,
    *,
    iters: int = 100,
    compare_default: bool = True,
    delegated: bool = False,
    atol: float = 1e-4,
    rtol: float = 1e-3,
    cancel: CancelToken | None = None,
) -> Generator[JobEvent, None, KernelResult]:
    """Compile and run ``source`` on the GPU (live samples: ``time`` per iteration), check and time it."""
    from splitscope.engine.kernel.cuda import attributes_for
    from splitscope.engine.runtime import nvrtc
    from splitscope.engine.runtime.device import NoGpu, gpu_info

    cancel = cancel or CancelToken()
    r = KernelResult()
    try:
        gpu = gpu_info()
        r.gpu = gpu.name
    except NoGpu as e:
        r.error = f"no GPU to run the kernel on ({e})"
        return r
    ins = [np.ascontiguousarray(inputs[t.name]) for t in ex.inputs]
    outs = [(tuple(t.shape or ()), t.dtype) for t in ex.outputs]
    yield Progress("compile", 0, iters, "Compiling the kernel")
    from splitscope.engine.kernel import pyfunc

    def launches(n: int) -> Generator[tuple[int, float], None, Any]:
        if pyfunc.is_python(source):  # a CuPy function, or a Triton kernel on PyTorch tensors
            return pyfunc.launches(source, ins, outs, iters=n)
        return nvrtc.launches(source, ins, outs, attributes_for(ex), iters=n)

    gen = launches(iters)
    try:
        while True:
            try:
                i, ms = next(gen)
            except StopIteration as stop:
                timed = stop.value
                break
            if i == 0:
                r.compiled = True
            yield Sample("time", float(i), {"kernel_ms": ms})
            if i % 10 == 0:
                yield Progress("run", i, iters, f"Timing the kernel: {i} of {iters}")
            if cancel.cancelled:
                gen.close()  # frees the device buffers
                cancel.raise_if_cancelled()
    except nvrtc.CompileError as e:
        r.error, r.error_line = str(e), e.line
        r.verdict = verdict(r, len(ex.nodes), delegated)
        return r
    except nvrtc.LaunchError as e:  # a wrong launch line is the source's fault, like a compile error
        r.compiled = not isinstance(e, nvrtc.LaunchLineError)
        r.error = str(e)
        r.verdict = verdict(r, len(ex.nodes), delegated)
        return r
    except ImportError:
        r.error = "cuda-python is not installed (pip install 'splitscope[gpu]')"
        return r
    r.compiled = r.ran = True
    yield Progress("device", iters, iters, "The kernel's device time (CUPTI)")
    r.device_ms, r.device_how = _own_device_time(launches, min(iters, 50))
    _timed_and_checked(r, timed, ex, ref, atol, rtol)
    r.sol_ms, r.sol_how = speed_of_light(ex, inputs, gpu)
    if compare_default:
        yield Progress("default", iters, iters, "Timing the runtime default (ONNX Runtime CUDA)")
        d = default_time(ex, inputs, min(iters, 50), device=r.device_ms is not None)
        r.default_ms, r.default_how, r.default_device_ms = d.host_ms, d.how, d.device_ms
        if r.device_ms is not None and d.host_ms is not None and d.device_ms is None:
            r.device_how += f"; the default's not measured ({d.device_how})"
    else:
        r.default_how = "not asked for"
    r.verdict = verdict(r, len(ex.nodes), delegated)
    return r


def _timed_and_checked(r: KernelResult, timed: Any, ex: Extract, ref: Reference, atol: float, rtol: float) -> None:
    """The event and host times of the timed launches, and the last launch's outputs against the reference."""
    from splitscope.engine.runtime import nvrtc

    if timed.times_ms:
        r.ms = statistics.median(timed.times_ms)
        r.spread_ms = [float(np.percentile(timed.times_ms, 10)), float(np.percentile(timed.times_ms, 90))]
    r.times_ms = [round(t, 6) for t in timed.times_ms]
    if timed.host_ms:
        r.host_ms = statistics.median(timed.host_ms)
    if ref.outputs:
        checks = [
            nvrtc.compare(o, ref.outputs[t.name], atol, rtol) for o, t in zip(timed.outputs, ex.outputs, strict=True)
        ]
        worst = max(checks, key=lambda c: c.get("max_abs_err", float("inf")))
        r.numerics_ok = all(c.get("ok") for c in checks)
        r.max_abs_err, r.max_ulp = worst.get("max_abs_err"), worst.get("max_ulp")
        r.beyond, r.worst = worst.get("beyond"), worst.get("worst")
        r.histogram = _histogram(timed.outputs[0], ref.outputs[ex.outputs[0].name])


def _own_device_time(launches: Any, n: int) -> tuple[float | None, str]:
    """The kernel's own device time a launch: ``n`` launches more (after the timed ones, so that CUPTI's cost is in
    none of the other figures) with CUPTI recording; None and why where it cannot."""

    def run() -> None:
        for _ in launches(n):
            pass

    ms, how = _device_time_of(run, 1, runs=None)  # each of its kernels runs once a launch
    return ms, ("CUPTI: the kernel's own records" if ms is not None else how) or "CUPTI recorded no kernel"
