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
    step = max(1, (last - levels) // 256)  # at most about 256 candidates
    cands = np.arange(levels, last + 1, step)
    kl = _kl_of_thresholds(hist, cands, levels)
    best_i = int(cands[int(np.argmin(kl))]) if np.isfinite(kl).any() else last
    return float(min(best_i * s.hist_max / nbins, s.absmax))


def _kl_of_thresholds(hist: np.ndarray, cands: np.ndarray, levels: int) -> np.ndarray:
    """For each candidate threshold ``i`` (in bins), the KL divergence between the histogram clipped at ``i``
    (what lies past it added to bin ``i-1``) and the same ``i`` bins quantized into ``levels`` levels, each
    level's count spread evenly over its non-empty bins (inf where nothing lies below ``i``).

    Every candidate at once from prefix sums, O(levels) each: a level's count ``S`` spread over its ``c``
    non-empty bins gives each of them ``S/c``, so the bins' cross term sums level by level to ``S log(S/c)``;
    the quantized total is the count below ``i``; only bin ``i-1``, which the clipping changed, is taken apart.
    """
    pos = hist > 0
    zero = np.zeros(1)
    below = np.concatenate([zero, np.cumsum(hist)])  # below[k]: the count in bins [0, k)
    nonempty = np.concatenate([zero, np.cumsum(pos)])
    hlogh = np.concatenate([zero, np.cumsum(np.where(pos, hist * np.log(np.where(pos, hist, 1.0)), 0.0))])
    total = below[-1]
    rows = np.arange(cands.size)
    # Level l of threshold i holds bins [ceil(l*i/levels), ceil((l+1)*i/levels)).
    edges = -((-np.arange(levels + 1)[None, :] * cands[:, None]) // levels)
    count = below[edges[:, 1:]] - below[edges[:, :-1]]
    spread = nonempty[edges[:, 1:]] - nonempty[edges[:, :-1]]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = count / spread  # what each non-empty bin of a level gets
        cross = np.where(spread > 0, count * np.log(np.where(count > 0, share, 1.0)), 0.0).sum(axis=1)
        q_total = below[cands]
        cross -= np.where(q_total > 0, q_total * np.log(np.where(q_total > 0, q_total, 1.0)), 0.0)
        # Bin i-1: its own share taken out, then the clipped count in it (with the tail) put back.
        last = hist[cands - 1]
        q_last = np.where(last > 0, share[rows, ((cands - 1) * levels) // cands] / q_total, 1e-12)
        clipped = last + (total - q_total)
        cross -= np.where(last > 0, last * np.log(np.where(last > 0, q_last, 1.0)), 0.0)
        cross += np.where(clipped > 0, clipped * np.log(np.where(clipped > 0, q_last, 1.0)), 0.0)
        own = hlogh[cands - 1] + np.where(clipped > 0, clipped * np.log(np.where(clipped > 0, clipped, 1.0)), 0.0)
        kl = (own - cross) / total - np.log(total)
    kl[q_total == 0] = np.inf
    return kl


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
