"""Per-tensor statistics in one pass: running min, max and absolute max, and a histogram of |x| over a fixed
number of bins whose range doubles (merging neighbouring bins) when a batch goes past it, so no second pass
over the data and no activation kept beyond its batch.

Values TensorRT cannot represent are counted apart, never binned: NaN, ±inf, and *sentinels* (finite values
of magnitude :data:`SENTINEL` or more, such as the -3.4e38 an attention mask adds), which would otherwise
stretch the range until every real value fell into the first bin.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

BINS = 2048
SENTINEL = 1e30


def sample_stride(size: int) -> int:
    """A prime stride of about ``size / HIST_VALUES`` that does not divide ``size``: then it shares no factor
    with any dimension of the tensor (a channel count of 3, a width of 64), so every channel is sampled."""
    p = max(-(-size // HIST_VALUES), 2)
    while True:
        if size % p and all(p % d for d in range(2, int(p**0.5) + 1)):
            return p
        p += 1


HIST_VALUES = 1 << 18
"""At most this many values of one batch go into a tensor's histogram (an evenly strided sample of a larger
batch: 262,144 values a batch place a 99.99th percentile within a few bins); count, min, max and the absolute
max are of every value."""


@dataclass(slots=True)
class TensorStats:
    """Running statistics of one activation tensor."""

    name: str
    bins: int = BINS
    count: int = 0
    min: float = float("inf")
    max: float = float("-inf")
    absmax: float = 0.0
    hist: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    hist_max: float = 0.0
    """Upper edge of the histogram (its lower edge is 0: the histogram is of |x|)."""
    nonfinite: int = 0
    sentinels: int = 0
    rebins: int = 0

    def update(self, a: np.ndarray) -> None:
        """Fold one batch of values in (one temporary the size of the batch; the common case, all finite and
        below the sentinel, takes no extra pass for them)."""
        x = np.asarray(a)
        if x.dtype.kind not in "fc":
            return
        x = x.astype(np.float32, copy=False).ravel()
        if not x.size:
            return
        lo, hi = float(x.min()), float(x.max())  # NaN propagates: then the slow path below
        if not (np.isfinite(lo) and np.isfinite(hi) and lo > -SENTINEL and hi < SENTINEL):
            finite = np.isfinite(x)
            if not finite.all():
                self.nonfinite += int((~finite).sum())
                x = x[finite]
            big = np.abs(x) >= SENTINEL
            if big.any():
                self.sentinels += int(big.sum())
                x = x[~big]
            if not x.size:
                return
            lo, hi = float(x.min()), float(x.max())
        self.fold_range(lo, hi, int(x.size))
        if x.size > HIST_VALUES:  # an evenly spread sample of the batch, not its first rows
            x = x[:: sample_stride(x.size)]
        ax = np.abs(x)  # the one temporary: |x| scaled to bin units in place, then its integer part
        ax *= self.scale()
        np.minimum(ax, np.float32(self.bins - 1), out=ax)
        self.hist += np.bincount(ax.astype(np.intp), minlength=self.bins)

    def fold_range(self, lo: float, hi: float, n: int) -> None:
        """Count ``n`` finite values between ``lo`` and ``hi``, and widen the histogram's range to hold them (the
        range doubles, merging bin k and k+1 into bin k // 2, until it does)."""
        self.count += n
        self.min, self.max = min(self.min, lo), max(self.max, hi)
        amax = max(-lo, hi)
        self.absmax = max(self.absmax, amax)
        if not self.hist.size:
            self.hist = np.zeros(self.bins, dtype=np.int64)
            self.hist_max = max(amax, 1e-30)  # bins / hist_max stays finite in float32
        while amax > self.hist_max:
            h = self.hist
            merged = h[0::2] + h[1::2]
            self.hist = np.concatenate([merged, np.zeros(self.bins - merged.size, dtype=np.int64)])
            self.hist_max *= 2.0
            self.rebins += 1

    def scale(self) -> np.float32:
        """|x| times this, truncated (and clipped to the last bin), is x's bin: the one float32 product both the
        host and the device (:mod:`~splitscope.engine.calib.devstats`) compute."""
        return np.float32(self.bins / self.hist_max)

    def edges(self) -> np.ndarray:
        """Bin edges of the histogram (``bins + 1`` values from 0 to ``hist_max``)."""
        return np.linspace(0.0, self.hist_max, self.bins + 1)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """For the cache (``np.savez``)."""
        scalars = [
            self.count,
            self.min,
            self.max,
            self.absmax,
            self.hist_max,
            self.nonfinite,
            self.sentinels,
            self.rebins,
        ]
        return {"hist": self.hist, "scalars": np.array(scalars, dtype=np.float64)}

    @classmethod
    def from_arrays(cls, name: str, hist: np.ndarray, scalars: np.ndarray) -> TensorStats:
        s = cls(name, bins=int(hist.size) or BINS)
        s.hist = hist.astype(np.int64)
        (count, s.min, s.max, s.absmax, s.hist_max, nonfinite, sentinels, rebins) = (float(v) for v in scalars)
        s.count, s.nonfinite, s.sentinels, s.rebins = int(count), int(nonfinite), int(sentinels), int(rebins)
        return s
