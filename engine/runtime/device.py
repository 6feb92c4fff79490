"""The local GPU: what it is, its peaks from its own attributes, and measured host-device copies.

Everything here goes through ``cuda.bindings`` (cuda-python) and ``pynvml``, imported when first asked
for; without a driver or a GPU each function says so (:class:`NoGpu`) and the rest of the app works.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

PEAKS_SOURCE = (
    "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), per-SM dense throughput of the "
    "SXM5 part; NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020) for compute "
    "capability 8.0; NVIDIA Ampere GA102 and Ada AD102 whitepapers for 8.6 and 8.9"
)
FLOP_PER_CLK_PER_SM: dict[tuple[int, int], dict[str, int]] = {
    # Hopper (H100/H200): 128 FP32 lanes (FMA = 2 FLOP); tensor cores dense.
    (9, 0): {"fp64": 128, "fp32": 256, "tf32": 2048, "fp16": 4096, "bf16": 4096, "fp8": 8192, "int8": 8192},
    (8, 0): {"fp64": 64, "fp32": 128, "tf32": 1024, "fp16": 2048, "bf16": 2048, "int8": 4096},
    (8, 6): {"fp64": 4, "fp32": 256, "tf32": 512, "fp16": 1024, "bf16": 1024, "int8": 2048},
    (8, 9): {"fp64": 4, "fp32": 256, "tf32": 512, "fp16": 1024, "bf16": 1024, "fp8": 2048, "int8": 2048},
}
"""FLOP per clock per SM by dtype (tensor-core dtypes dense), from :data:`PEAKS_SOURCE`."""


class NoGpu(Exception):
    """No usable GPU (no driver, no device, or the bindings are not installed); the text says which."""


@dataclass(slots=True)
class GpuInfo:
    """The GPU's identity and the peaks derived from its own attributes."""

    name: str
    index: int
    compute_capability: tuple[int, int]
    sm_count: int
    sm_clock_mhz: int
    mem_clock_mhz: int
    bus_width_bits: int
    memory_bytes: int
    pcie_gen: int = 0
    pcie_width: int = 0
    peak_flops: dict[str, float] = field(default_factory=dict)
    """FLOP/s by dtype (empty when the architecture is not in the table)."""
    peak_bandwidth: float = 0.0
    """Bytes/s: 2 (DDR) x memory clock x bus width / 8."""
    pcie_peak: float = 0.0
    """Bytes/s one way over the host link (per lane: gen 3 0.985, 4 1.969, 5 3.938 GB/s)."""

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["compute_capability"] = f"{self.compute_capability[0]}.{self.compute_capability[1]}"
        return d


_PCIE_LANE = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.563e9}


def _nvml() -> Any:
    try:
        import pynvml
    except ImportError:
        raise NoGpu("nvidia-ml-py is not installed (pip install 'splitscope[gpu]')") from None
    try:
        pynvml.nvmlInit()
    except Exception as e:  # noqa: BLE001 - NVMLError and driver-library failures alike
        raise NoGpu(f"NVML: {e}") from None
    return pynvml


def gpu_info(index: int = 0) -> GpuInfo:
    """Read GPU ``index`` (NVML for clocks, bus and link; CUDA for the SM count). Raises :class:`NoGpu`."""
    nv = _nvml()
    try:
        if nv.nvmlDeviceGetCount() <= index:
            raise NoGpu("no NVIDIA GPU")
        h = nv.nvmlDeviceGetHandleByIndex(index)
        name = nv.nvmlDeviceGetName(h)
        name = name.decode() if isinstance(name, bytes) else str(name)
        cc = tuple(int(x) for x in nv.nvmlDeviceGetCudaComputeCapability(h))
        sm_clock = int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM))
        mem_clock = int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM))
        bus = int(nv.nvmlDeviceGetMemoryBusWidth(h))
        mem = int(nv.nvmlDeviceGetMemoryInfo(h).total)
        try:
            gen = int(nv.nvmlDeviceGetCurrPcieLinkGeneration(h))
            width = int(nv.nvmlDeviceGetCurrPcieLinkWidth(h))
        except Exception:  # noqa: BLE001 - not every board reports its link
            gen = width = 0
    except NoGpu:
        raise
    except Exception as e:  # noqa: BLE001
        raise NoGpu(f"NVML: {e}") from None
    sms = _sm_count(index)
    info = GpuInfo(name, index, (cc[0], cc[1]), sms, sm_clock, mem_clock, bus, mem, gen, width)
    per_sm = FLOP_PER_CLK_PER_SM.get(info.compute_capability, {})
    info.peak_flops = {k: float(v) * sms * sm_clock * 1e6 for k, v in per_sm.items()}
    info.peak_bandwidth = 2.0 * mem_clock * 1e6 * bus / 8
    info.pcie_peak = _PCIE_LANE.get(gen, 0.0) * width
    return info


def cuda_runtime() -> Any:
    """cuda-python's runtime bindings (a compiled module its stubs do not describe), or :class:`NoGpu`."""
    import importlib

    try:
        return importlib.import_module("cuda.bindings.runtime")
    except ImportError:
        raise NoGpu("cuda-python is not installed (pip install 'splitscope[gpu]')") from None


def _sm_count(index: int) -> int:
    rt = cuda_runtime()
    err, n = rt.cudaDeviceGetAttribute(rt.cudaDeviceAttr.cudaDevAttrMultiProcessorCount, index)
    if err != rt.cudaError_t.cudaSuccess:
        raise NoGpu(f"CUDA: {rt.cudaGetErrorString(err)[1].decode()}")
    return int(n)


def _check(result: tuple[Any, ...]) -> Any:
    rt = cuda_runtime()

    err = result[0]
    if err != rt.cudaError_t.cudaSuccess:
        raise NoGpu(f"CUDA: {rt.cudaGetErrorString(err)[1].decode()}")
    return result[1] if len(result) == 2 else result[1:]


def measure_copies(sizes: list[int], repeat: int = 5, index: int = 0) -> list[dict[str, Any]]:
    """Host-to-device and device-to-host copies of each byte size, pinned and pageable, timed with CUDA
    events (median of ``repeat``): ``{bytes, h2d_pinned_ms, h2d_pageable_ms, d2h_pinned_ms, d2h_pageable_ms,
    *_gbps}``. Raises :class:`NoGpu`."""
    rt = cuda_runtime()
    _check(rt.cudaSetDevice(index))
    stream = _check(rt.cudaStreamCreate())
    start, stop = _check(rt.cudaEventCreate()), _check(rt.cudaEventCreate())
    H2D, D2H = rt.cudaMemcpyKind.cudaMemcpyHostToDevice, rt.cudaMemcpyKind.cudaMemcpyDeviceToHost
    out = []
    try:
        for size in sizes:
            size = max(int(size), 1)
            dev = _check(rt.cudaMalloc(size))
            pinned = _check(rt.cudaMallocHost(size))
            pageable = np.ones(size, dtype=np.uint8)
            row: dict[str, Any] = {"bytes": size}
            try:
                for mem, host in (("pinned", pinned), ("pageable", pageable.ctypes.data)):
                    for direction, kind, dst, src in (("h2d", H2D, dev, host), ("d2h", D2H, host, dev)):
                        times = []
                        for _ in range(repeat + 1):
                            _check(rt.cudaEventRecord(start, stream))
                            _check(rt.cudaMemcpyAsync(dst, src, size, kind, stream))
                            _check(rt.cudaEventRecord(stop, stream))
                            _check(rt.cudaEventSynchronize(stop))
                            times.append(float(_check(rt.cudaEventElapsedTime(start, stop))))
                        ms = float(np.median(times[1:]))  # the first one warms the path
                        row[f"{direction}_{mem}_ms"] = round(ms, 4)
                        row[f"{direction}_{mem}_gbps"] = round(size / (ms / 1000) / 1e9, 2) if ms > 0 else 0.0
            finally:
                rt.cudaFree(dev)
                rt.cudaFreeHost(pinned)
            out.append(row)
    finally:
        rt.cudaEventDestroy(start)
        rt.cudaEventDestroy(stop)
        rt.cudaStreamDestroy(stream)
    return out


def copy_ms(nbytes: int, table: list[dict[str, Any]], direction: str, mem: str = "pageable") -> float:
    """Estimated milliseconds to copy ``nbytes`` one way, interpolated from :func:`measure_copies` rows
    (time at the nearest measured size, scaled by bytes; latency-bound below the smallest size)."""
    if not table or nbytes <= 0:
        return 0.0
    rows = sorted(table, key=lambda r: r["bytes"])
    key = f"{direction}_{mem}_ms"
    best = min(rows, key=lambda r: abs(np.log(max(r["bytes"], 1)) - np.log(nbytes)))
    if nbytes <= rows[0]["bytes"]:
        return float(rows[0][key])
    return float(best[key]) * nbytes / best["bytes"]


def now() -> float:
    """The clock every sample of a run is stamped with (seconds, monotonic)."""
    return time.perf_counter()
