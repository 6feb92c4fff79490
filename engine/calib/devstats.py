"""Calibration statistics folded on the GPU, where the FP32 pass runs on ONNX Runtime CUDA: every activation stays
on the device (I/O binding), two small kernels read it in place, and only its range, its counts of non-finite
values and sentinels, and its 2048-bin histogram come back.

The same :class:`~splitscope.engine.calib.stats.TensorStats` take the results: the range is folded in (and the
histogram's range widened) on the host, then the batch's histogram is binned on the device with the very float32
scale the host would use, so a batch of finite values gives the host's histogram bin for bin.

The kernels are compiled by NVRTC once per machine and kept in the cache folder (a calibration run is one cold
process: a compile in every run would cost more than the pass). One difference from the host, on purpose: where a
batch holds NaN, infinities or sentinels, the histogram's sample is strided over the whole batch rather than over
its finite values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from splitscope.engine import nvrtc
from splitscope.engine.calib.stats import BINS, HIST_VALUES, SENTINEL, TensorStats, sample_stride

SOURCE = r"""
__device__ __forceinline__ unsigned int order_key(float f) {  // unsigned order of the keys = order of the floats
    unsigned int b = __float_as_uint(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// The finite, non-sentinel range of x as two order keys, and the counts of non-finite values and sentinels.
extern "C" __global__ void ranges(const float* __restrict__ x, unsigned long long n, unsigned int* keys,
                                  unsigned long long* counts) {
    unsigned int lo = 0xffffffffu, hi = 0u;
    unsigned long long bad = 0, big = 0;
    unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        float v = x[i];
        if (!isfinite(v)) { bad++; continue; }
        if (fabsf(v) >= SENTINEL) { big++; continue; }
        unsigned int k = order_key(v);
        lo = min(lo, k);
        hi = max(hi, k);
    }
    for (int o = 16; o > 0; o >>= 1) {
        lo = min(lo, __shfl_down_sync(0xffffffffu, lo, o));
        hi = max(hi, __shfl_down_sync(0xffffffffu, hi, o));
        bad += __shfl_down_sync(0xffffffffu, bad, o);
        big += __shfl_down_sync(0xffffffffu, big, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMin(keys, lo);
        atomicMax(keys + 1, hi);
        if (bad) atomicAdd(counts, bad);
        if (big) atomicAdd(counts + 1, big);
    }
}

// The histogram of |x| over every stride-th value: bin = min(|x| * scale, BINS - 1), truncated, as the host bins.
extern "C" __global__ void histogram(const float* __restrict__ x, unsigned long long n, unsigned long long stride,
                                     float scale, unsigned long long* hist) {
    __shared__ unsigned int bins[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) bins[b] = 0u;
    __syncthreads();
    unsigned long long m = (n + stride - 1) / stride;
    unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long k = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; k < m; k += step) {
        float v = fabsf(x[k * stride]);
        if (isfinite(v) && v < SENTINEL) {
            float b = fminf(__fmul_rn(v, scale), (float)(BINS - 1));
            atomicAdd(&bins[(int)b], 1u);
        }
    }
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        if (bins[b]) atomicAdd(hist + b, (unsigned long long)bins[b]);
}
"""

THREADS = 256
HOST_TYPES = frozenset({"tensor(float16)", "tensor(double)", "tensor(bfloat16)"})
"""Float types the kernels do not read: copied to the host and folded there (other types are not quantized)."""


def _unkey(keys: np.ndarray) -> np.ndarray:
    """The floats of :func:`order_key`'s keys."""
    k = keys.astype(np.uint32)
    return np.where(k & 0x80000000, k ^ np.uint32(0x80000000), ~k).astype(np.uint32).view(np.float32)


@dataclass
class Activation:
    """One activation on the device: its address, element count and ONNX Runtime's type name."""

    name: str
    ptr: int
    size: int
    dtype: str
    host: Any = None
    """A callable giving the values on the host, for a type the kernels do not read (float16, double)."""


class DeviceFolder:
    """Folds each batch's activations, left on the GPU, into their statistics (one instance per pass)."""

    def __init__(self, tensors: int, cache: Path | None) -> None:
        self.cu = nvrtc._driver()
        _, arch = nvrtc.context(0)
        defs: dict[str, int | float] = {"BINS": BINS, "SENTINEL": SENTINEL}
        ok = nvrtc._ok
        try:
            self.module = ok(
                self.cu.cuModuleLoadData(nvrtc.cubin_cached(SOURCE, defs, arch, cache)), "cuModuleLoadData"
            )
        except nvrtc.LaunchError:  # a damaged cached file: compiled afresh (and cached again)
            nvrtc.forget_cubin(SOURCE, defs, arch, cache)
            self.module = ok(
                self.cu.cuModuleLoadData(nvrtc.cubin_cached(SOURCE, defs, arch, cache)), "cuModuleLoadData"
            )
        self._bufs: list[Any] = []
        try:
            self.ranges = ok(self.cu.cuModuleGetFunction(self.module, b"ranges"), "cuModuleGetFunction(ranges)")
            self.histogram = ok(self.cu.cuModuleGetFunction(self.module, b"histogram"), "cuModuleGetFunction")
            dev = ok(self.cu.cuDeviceGet(0), "cuDeviceGet")
            attr = self.cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
            self.sms = int(ok(self.cu.cuDeviceGetAttribute(attr, dev), "cuDeviceGetAttribute"))
            self.slots = max(tensors, 1)
            self.keys_init = np.tile(np.array([0xFFFFFFFF, 0], dtype=np.uint32), self.slots)
            self.keys = self._alloc(self.keys_init.nbytes)
            self.counts = self._alloc(self.slots * 2 * 8)
            self.hist = self._alloc(self.slots * BINS * 8)
        except Exception:
            self.close()
            raise

    def _alloc(self, nbytes: int) -> int:
        d = nvrtc._ok(self.cu.cuMemAlloc(nbytes), "cuMemAlloc")
        self._bufs.append(d)
        return int(d)

    def _launch(self, fn: Any, grid: int, *cells: np.ndarray) -> None:
        block = np.array([c.ctypes.data for c in cells], dtype=np.uint64)
        nvrtc._ok(self.cu.cuLaunchKernel(fn, grid, 1, 1, THREADS, 1, 1, 0, 0, block.ctypes.data, 0), "cuLaunchKernel")

    def fold(self, batch: list[Activation], stats: dict[str, TensorStats]) -> None:
        """Fold one batch (the activations must stay alive until this returns)."""
        ok, cu = nvrtc._ok, self.cu
        on_device = [a for a in batch if a.dtype == "tensor(float)" and a.size > 0]
        if len(on_device) > self.slots:
            raise ValueError(f"{len(on_device)} activations for {self.slots} slots")
        for a in batch:
            if a.dtype in HOST_TYPES and a.host is not None and a.size > 0:
                stats[a.name].update(a.host())  # a float type the kernels do not read: folded on the host
        if not on_device:
            return
        t = len(on_device)
        ok(cu.cuMemcpyHtoD(self.keys, self.keys_init.ctypes.data, t * 8), "cuMemcpyHtoD")
        ok(cu.cuMemsetD8(self.counts, 0, t * 16), "cuMemsetD8")
        ok(cu.cuMemsetD8(self.hist, 0, t * BINS * 8), "cuMemsetD8")
        for i, a in enumerate(on_device):
            grid = int(min(-(-a.size // THREADS), 4 * self.sms))
            cells = (_u64(a.ptr), _u64(a.size), _u64(self.keys + 8 * i), _u64(self.counts + 16 * i))
            self._launch(self.ranges, grid, *cells)
        keys = np.empty(2 * t, dtype=np.uint32)
        counts = np.empty(2 * t, dtype=np.uint64)
        ok(cu.cuMemcpyDtoH(keys.ctypes.data, self.keys, keys.nbytes), "the statistics kernels")
        ok(cu.cuMemcpyDtoH(counts.ctypes.data, self.counts, counts.nbytes), "cuMemcpyDtoH")
        values = _unkey(keys).astype(np.float64)
        binned = []
        for i, a in enumerate(on_device):
            s = stats[a.name]
            bad, big = int(counts[2 * i]), int(counts[2 * i + 1])
            s.nonfinite += bad
            s.sentinels += big
            if a.size - bad - big <= 0:
                continue
            s.fold_range(float(values[2 * i]), float(values[2 * i + 1]), a.size - bad - big)
            stride = sample_stride(a.size) if a.size > HIST_VALUES else 1
            m = -(-a.size // stride)
            grid = int(min(max(-(-m // 4096), 1), 2 * self.sms))
            cells = (_u64(a.ptr), _u64(a.size), _u64(stride), np.array([s.scale()], np.float32))
            self._launch(self.histogram, grid, *cells, _u64(self.hist + 8 * BINS * i))
            binned.append(i)
        if binned:
            hist = np.empty((t, BINS), dtype=np.uint64)
            ok(cu.cuMemcpyDtoH(hist.ctypes.data, self.hist, hist.nbytes), "the histogram kernel")
            for i in binned:
                stats[on_device[i].name].hist += hist[i].astype(np.int64)

    def close(self) -> None:
        for d in self._bufs:
            self.cu.cuMemFree(d)
        self._bufs = []
        if getattr(self, "module", None) is not None:
            self.cu.cuModuleUnload(self.module)
            self.module = None


def _u64(v: int) -> np.ndarray:
    return np.array([int(v)], dtype=np.uint64)
