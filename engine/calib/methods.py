"""From a tensor's statistics to the range its quantizer clips at (the *amax*: scale = amax / qmax).

- ``max``: the largest finite |x| seen;
- ``percentile``: the |x| below which that share of the values fall (99.99 by default), from the histogram;
- ``entropy``: the threshold whose quantized distribution is closest in KL divergence to the original one,
  the search TensorRT's INT8 entropy calibrator made (2048 bins, 128 quantized levels, candidate thresholds
  from bin 128 up), with the first bin (exact zeros, half of a ReLU's values) left out of the divergence;
- ``mse``: the threshold that minimises the mean squared error of clipping plus rounding, over the
  histogram.
"""

from __future__ import annotations

import numpy as np
from splitscope.engine.calib.stats import TensorStats

METHODS = ("max", "percentile", "entropy", "mse")
QMAX = {"int8": 127.0, "fp8": 448.0}


def amax(stats: TensorStats, method: str, percentile: float = 99.99, precision: str = "int8") -> float:
    """The clipping range of ``stats`` by ``method`` (0.0 when nothing finite was seen)."""
    if stats.count == 0 or not stats.hist.size or stats.absmax <= 0:
        return 0.0
    if method == "max":
        return float(stats.absmax)
    if method == "percentile":
        return _percentile(stats, percentile)
    if method == "entropy":
        return _entropy(stats)
    if method == "mse":
        return _mse(stats, QMAX.get(precision, 127.0))
    raise ValueError(f"unknown calibration method {method!r}: use one of {', '.join(METHODS)}")


def _percentile(s: TensorStats, p: float) -> float:
    c = np.cumsum(s.hist)
    k = int(np.searchsorted(c, c[-1] * p / 100.0))
    return float(min((k + 1) * s.hist_max / s.bins, s.absmax))


def _entropy(s: TensorStats, levels: int = 128) -> float:
    hist = s.hist.astype(np.float64)
    hist[0] = 0.0  # zeros (a ReLU's half of its values) quantize exactly: they must not pull the threshold in
    nbins = hist.size
    last = int(np.nonzero(hist)[0][-1]) + 1 if hist.any() else nbins
    if last <= levels:
        return float(s.absmax)
    best_kl, best_i = np.inf, last
    step = max(1, (last - levels) // 256)  # at most about 256 candidates
    for i in range(levels, last + 1, step):
        h = hist[:i]
        ref = h.copy()
        ref[i - 1] += hist[i:].sum()  # what lies past the threshold is clipped into the last bin
        # Quantize the first i bins into `levels` levels, then spread each level over its non-empty bins.
        level = (np.arange(i) * levels) // i
        nz = h > 0
        sums = np.bincount(level, weights=h, minlength=levels)
        cnt = np.bincount(level, weights=nz, minlength=levels)
        q = np.where(nz, (sums / np.maximum(cnt, 1))[level], 0.0)
        p_sum, q_sum = ref.sum(), q.sum()
        if q_sum == 0:
            continue
        pn, qn = ref / p_sum, q / q_sum
        mask = pn > 0
        qn = np.where(mask & (qn == 0), 1e-12, qn)
        kl = float(np.sum(pn[mask] * np.log(pn[mask] / qn[mask])))
        if kl < best_kl:
            best_kl, best_i = kl, i
    return float(min(best_i * s.hist_max / nbins, s.absmax))


def _mse(s: TensorStats, qmax: float) -> float:
    hist = s.hist.astype(np.float64)
    centers = (np.arange(hist.size) + 0.5) * (s.hist_max / hist.size)
    nz = hist > 0
    h, x = hist[nz], centers[nz]
    cands = np.unique(np.quantile(x, np.linspace(0.5, 1.0, 128)))
    best, best_t = np.inf, float(s.absmax)
    for t in cands:
        if t <= 0:
            continue
        scale = t / qmax
        clipped = np.minimum(x, t)
        err = (np.round(clipped / scale) * scale - x) ** 2
        mse = float(np.sum(h * err))
        if mse < best:
            best, best_t = mse, float(t)
    return best_t
