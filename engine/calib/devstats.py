"""Calibration statistics folded on the GPU, where the FP32 pass runs on ONNX Runtime CUDA: every activation stays
on the device (I/O binding), and so do its statistics: each tensor's range, its counts of non-finite values and
sentinels, and its 2048-bin histogram live in device memory for the whole pass and come back once, at its end.

A batch is three kernel launches whatever the number of tensors (a table of the batch's tensors goes over first):
``ranges`` (each tensor's finite range and its counts of NaN, infinities and sentinels), ``widen`` (the range folded
into the running statistics, and the histogram's range doubled, its bins merged, as the host's
:meth:`~splitscope.engine.calib.stats.TensorStats.fold_range` does it) and ``histogram`` (the batch binned with the
very float32 scale the host would use). Only the running absolute maxima of the first tensors come back a batch,
for the live plot. So a batch of finite values gives the host's statistics bin for bin.

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
from splitscope.engine.calib.stats import BINS, HIST_VALUES, SENTINEL, TensorStats, sample_stride
from splitscope.engine.runtime import nvrtc

SOURCE = r"""
__device__ __forceinline__ unsigned int order_key(float f) {  // unsigned order of the keys = order of the floats
    unsigned int b = __float_as_uint(f);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ float unkey(unsigned int k) {
    return __uint_as_float((k & 0x80000000u) ? (k ^ 0x80000000u) : ~k);
}

// The batch's tensors: per tensor its address, element count and histogram stride (tab[3t..3t+2]); the blocks of
// each kernel are shared out over the tensors by the prefix offsets off[t] (block b works on the t with
// off[t] <= b < off[t + 1]).
__device__ __forceinline__ int tensor_of(const unsigned int* off, int tensors, unsigned int b) {
    int lo = 0, hi = tensors - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) >> 1;
        if (off[mid] <= b) lo = mid; else hi = mid - 1;
    }
    return lo;
}

// Each tensor's finite, non-sentinel range this batch as two order keys, and its counts of non-finite values and
// sentinels (keys[2t], keys[2t + 1], bad[2t], bad[2t + 1]; reset by widen for the next batch).
extern "C" __global__ void ranges(const unsigned long long* tab, const unsigned int* off, int tensors,
                                  unsigned int* keys, unsigned long long* bad) {
    int t = tensor_of(off, tensors, blockIdx.x);
    const float* x = (const float*)tab[3 * t];
    unsigned long long n = tab[3 * t + 1];
    unsigned long long first = (unsigned long long)(blockIdx.x - off[t]) * blockDim.x + threadIdx.x;
    unsigned long long step = (unsigned long long)(off[t + 1] - off[t]) * blockDim.x;
    unsigned int lo = 0xffffffffu, hi = 0u;
    unsigned long long nan_inf = 0, big = 0;
    for (unsigned long long i = first; i < n; i += step) {
        float v = x[i];
        if (!isfinite(v)) { nan_inf++; continue; }
        if (fabsf(v) >= SENTINEL) { big++; continue; }
        unsigned int k = order_key(v);
        lo = min(lo, k);
        hi = max(hi, k);
    }
    for (int o = 16; o > 0; o >>= 1) {
        lo = min(lo, __shfl_down_sync(0xffffffffu, lo, o));
        hi = max(hi, __shfl_down_sync(0xffffffffu, hi, o));
        nan_inf += __shfl_down_sync(0xffffffffu, nan_inf, o);
        big += __shfl_down_sync(0xffffffffu, big, o);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMin(keys + 2 * t, lo);
        atomicMax(keys + 2 * t + 1, hi);
        if (nan_inf) atomicAdd(bad + 2 * t, nan_inf);
        if (big) atomicAdd(bad + 2 * t + 1, big);
    }
}

// One block a tensor: the batch's range folded into the running statistics (st[4t..]: min, max, absmax, the
// histogram's upper edge; acc[4t..]: count, non-finite, sentinels, rebins), the edge doubled until it holds the
// range with each doubling merging bin pairs (2^k bins into one for k doublings), and the batch's float32 scale
// (0: nothing to bin this batch). Then the batch's keys and counts are reset.
extern "C" __global__ void widen(const unsigned long long* tab, unsigned int* keys, unsigned long long* bad,
                                 double* st, unsigned long long* acc, unsigned long long* hist, float* scale) {
    __shared__ int shift;
    __shared__ unsigned long long old[BINS];
    int t = blockIdx.x;
    if (threadIdx.x == 0) {
        unsigned long long n = tab[3 * t + 1], nan_inf = bad[2 * t], big = bad[2 * t + 1];
        acc[4 * t + 1] += nan_inf;
        acc[4 * t + 2] += big;
        int k = 0;
        scale[t] = 0.0f;
        if (n > nan_inf + big) {
            double lo = (double)unkey(keys[2 * t]), hi = (double)unkey(keys[2 * t + 1]);
            acc[4 * t] += n - nan_inf - big;
            st[4 * t] = fmin(st[4 * t], lo);
            st[4 * t + 1] = fmax(st[4 * t + 1], hi);
            double amax = fmax(-lo, hi);
            st[4 * t + 2] = fmax(st[4 * t + 2], amax);
            double edge = st[4 * t + 3];
            if (edge == 0.0) edge = fmax(amax, 1e-30);
            while (amax > edge) { edge *= 2.0; k++; }
            st[4 * t + 3] = edge;
            acc[4 * t + 3] += k;
            scale[t] = (float)((double)BINS / edge);
        }
        keys[2 * t] = 0xffffffffu;
        keys[2 * t + 1] = 0u;
        bad[2 * t] = bad[2 * t + 1] = 0ull;
        shift = k;
    }
    __syncthreads();
    if (shift == 0) return;
    unsigned long long* h = hist + (unsigned long long)t * BINS;
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) old[b] = h[b];
    __syncthreads();
    int width = shift >= 12 ? BINS : (1 << shift);  // BINS is 2^11: twelve doublings or more leave one bin
    for (int j = threadIdx.x; j < BINS; j += blockDim.x) {
        unsigned long long sum = 0ull;
        for (int q = j * width; q < (j + 1) * width && q < BINS; q++) sum += old[q];
        h[j] = sum;
    }
}

// The histogram of |x| over every stride-th value: bin = min(|x| * scale, BINS - 1), truncated, as the host bins.
extern "C" __global__ void histogram(const unsigned long long* tab, const unsigned int* off, int tensors,
                                     const float* scale, unsigned long long* hist) {
    __shared__ unsigned int bins[BINS];
    int t = tensor_of(off, tensors, blockIdx.x);
    float s = scale[t];
    if (s <= 0.0f) return;
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) bins[b] = 0u;
    __syncthreads();
    const float* x = (const float*)tab[3 * t];
    unsigned long long n = tab[3 * t + 1], stride = tab[3 * t + 2];
    unsigned long long m = (n + stride - 1) / stride;
    unsigned long long first = (unsigned long long)(blockIdx.x - off[t]) * blockDim.x + threadIdx.x;
    unsigned long long step = (unsigned long long)(off[t + 1] - off[t]) * blockDim.x;
    for (unsigned long long k = first; k < m; k += step) {
        float v = fabsf(x[k * stride]);
        if (isfinite(v) && v < SENTINEL) {
            float b = fminf(__fmul_rn(v, s), (float)(BINS - 1));
            atomicAdd(&bins[(int)b], 1u);
        }
    }
    __syncthreads();
    unsigned long long* h = hist + (unsigned long long)t * BINS;
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        if (bins[b]) atomicAdd(h + b, (unsigned long long)bins[b]);
}
"""

THREADS = 256
LIVE = 8
"""Tensors whose running absolute maximum comes back after each batch (the live plot's)."""
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
    """Folds each batch's activations, left on the GPU, into statistics kept on the GPU (one instance per pass, for
    the tensors named in ``tensors``); :meth:`read` brings them into :class:`TensorStats`."""

    def __init__(self, tensors: list[str], cache: Path | None) -> None:
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
        self.slot = {name: k for k, name in enumerate(dict.fromkeys(tensors))}
        self.folded: set[str] = set()
        self._strides: dict[int, int] = {}
        try:
            self.ranges, self.widen, self.histogram = (
                ok(self.cu.cuModuleGetFunction(self.module, k.encode()), k) for k in ("ranges", "widen", "histogram")
            )
            dev = ok(self.cu.cuDeviceGet(0), "cuDeviceGet")
            attr = self.cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
            self.sms = int(ok(self.cu.cuDeviceGetAttribute(attr, dev), "cuDeviceGetAttribute"))
            t = max(len(self.slot), 1)
            self.keys = self._upload(np.tile(np.array([0xFFFFFFFF, 0], np.uint32), t))
            self.bad = self._upload(np.zeros(2 * t, np.uint64))
            self.st = self._upload(np.tile(np.array([np.inf, -np.inf, 0.0, 0.0]), t))
            self.acc = self._upload(np.zeros(4 * t, np.uint64))
            self.hist = self._upload(np.zeros(t * BINS, np.uint64))
            self.scale = self._upload(np.zeros(t, np.float32))
            self.table = self._alloc(t * 3 * 8 + 2 * (t + 1) * 4 + 64)
        except Exception:
            self.close()
            raise

    def _alloc(self, nbytes: int) -> int:
        d = nvrtc._ok(self.cu.cuMemAlloc(max(nbytes, 8)), "cuMemAlloc")
        self._bufs.append(d)
        return int(d)

    def _upload(self, a: np.ndarray) -> int:
        d = self._alloc(a.nbytes)
        nvrtc._ok(self.cu.cuMemcpyHtoD(d, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")
        return d

    def _launch(self, fn: Any, grid: int, *cells: np.ndarray) -> None:
        block = np.array([c.ctypes.data for c in cells], dtype=np.uint64)
        nvrtc._ok(self.cu.cuLaunchKernel(fn, grid, 1, 1, THREADS, 1, 1, 0, 0, block.ctypes.data, 0), "cuLaunchKernel")

    def _stride(self, size: int) -> int:
        if size not in self._strides:
            self._strides[size] = sample_stride(size) if size > HIST_VALUES else 1
        return self._strides[size]

    def fold(self, batch: list[Activation], stats: dict[str, TensorStats]) -> dict[str, float]:
        """Fold one batch (the activations must stay alive until this returns: it waits for its kernels); a type the
        kernels do not read is folded into ``stats`` on the host. Returns the running absolute maxima of the first
        tensors, for the live plot."""
        ok, cu = nvrtc._ok, self.cu
        for a in batch:
            if a.dtype in HOST_TYPES and a.host is not None and a.size > 0:
                stats[a.name].update(a.host())  # a float type the kernels do not read: folded on the host
        on_device = [a for a in batch if a.dtype == "tensor(float)" and a.size > 0 and a.name in self.slot]
        if not on_device:
            return {}
        t = len(self.slot)
        tab = np.zeros(3 * t, np.uint64)
        blocks = np.zeros(t, np.int64)  # a tensor of this batch missing takes no block; widen sees n = 0
        hblocks = np.zeros(t, np.int64)
        for a in on_device:
            k, stride = self.slot[a.name], self._stride(a.size)
            tab[3 * k : 3 * k + 3] = (a.ptr, a.size, stride)
            sampled = -(-a.size // stride)
            blocks[k] = min(-(-a.size // THREADS), 4 * self.sms)
            hblocks[k] = min(max(-(-sampled // 4096), 1), 2 * self.sms)
            self.folded.add(a.name)
        off = np.concatenate([[0], np.cumsum(blocks)]).astype(np.uint32)
        hoff = np.concatenate([[0], np.cumsum(hblocks)]).astype(np.uint32)
        blob = np.concatenate([tab.view(np.uint8), off.view(np.uint8), hoff.view(np.uint8)])
        ok(cu.cuMemcpyHtoD(self.table, blob.ctypes.data, blob.nbytes), "cuMemcpyHtoD")
        d_tab, d_off, d_hoff = self.table, self.table + tab.nbytes, self.table + tab.nbytes + off.nbytes
        n = np.array([t], np.int32)
        self._launch(self.ranges, int(off[-1]), _u64(d_tab), _u64(d_off), n, _u64(self.keys), _u64(self.bad))
        cells = (self.keys, self.bad, self.st, self.acc, self.hist, self.scale)
        self._launch(self.widen, t, _u64(d_tab), *(_u64(c) for c in cells))
        self._launch(self.histogram, int(hoff[-1]), _u64(d_tab), _u64(d_hoff), n, _u64(self.scale), _u64(self.hist))
        live = np.empty(4 * min(t, LIVE), np.float64)
        ok(cu.cuMemcpyDtoH(live.ctypes.data, self.st, live.nbytes), "the statistics kernels")  # waits for them
        names = list(self.slot)[:LIVE]
        return {name: float(live[4 * k + 2]) for k, name in enumerate(names) if name in self.folded}

    def read(self, stats: dict[str, TensorStats]) -> None:
        """The statistics of every tensor folded on the device so far, written into ``stats`` (replacing theirs)."""
        ok, cu, t = nvrtc._ok, self.cu, len(self.slot)
        if not t:
            return
        st, acc, hist = np.empty(4 * t), np.empty(4 * t, np.uint64), np.empty((t, BINS), np.uint64)
        for arr, d in ((st, self.st), (acc, self.acc), (hist, self.hist)):
            ok(cu.cuMemcpyDtoH(arr.ctypes.data, d, arr.nbytes), "cuMemcpyDtoH")
        for name, k in self.slot.items():
            if name not in self.folded:
                continue
            s = stats[name]
            s.count, s.nonfinite, s.sentinels, s.rebins = (int(v) for v in acc[4 * k : 4 * k + 4])
            s.min, s.max, s.absmax, s.hist_max = (float(v) for v in st[4 * k : 4 * k + 4])
            s.hist = hist[k].astype(np.int64) if s.hist_max > 0 else np.zeros(0, np.int64)

    def close(self) -> None:
        for d in self._bufs:
            self.cu.cuMemFree(d)
        self._bufs = []
        if getattr(self, "module", None) is not None:
            self.cu.cuModuleUnload(self.module)
            self.module = None


def _u64(v: int) -> np.ndarray:
    return np.array([int(v)], dtype=np.uint64)
