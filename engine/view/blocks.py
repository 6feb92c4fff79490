"""Find repeated blocks (transformer layers, ResNet bottlenecks) in a run of nodes by their structure.

A model exported without name scopes is one flat list of nodes. Exporters write the nodes of a
layer in the order the layer's code ran, so repeated layers are repeated runs of op types: a
*tandem repeat* of period ``P`` in the op sequence. Candidate periods come from the gaps between
occurrences of the same op; each is checked over the whole run in one vectorised comparison, and
the period covering most nodes wins (the smallest of those nearly as good, so a layer is not
taken for two). The blocks' boundaries are put where the fewest tensors cross (the residual
stream between two layers), not wherever the repeat happened to start.

Everything here is linear in the number of nodes for a fixed number of candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MIN_PERIOD = 4
"""Fewest nodes in a block (``Conv, Relu`` pairs are not worth a box)."""
MAX_PERIOD = 8192
"""Most nodes in one block considered."""
MIN_REPEATS = 2
CANDIDATES = 12
NOTABLE = (
    "Attention",
    "MultiHeadAttention",
    "Softmax",
    "LayerNormalization",
    "SimplifiedLayerNormalization",
    "RMSNormalization",
    "Conv",
    "ConvTranspose",
    "LSTM",
    "GRU",
    "RNN",
    "Gemm",
    "MatMul",
    "Einsum",
    "BatchNormalization",
    "InstanceNormalization",
    "GroupNormalization",
    "MaxPool",
    "AveragePool",
    "Concat",
)
"""Op types that name a block (the first one present, in this order)."""


@dataclass(frozen=True, slots=True)
class Repeat:
    """``count`` consecutive blocks of ``period`` positions starting at ``start``."""

    start: int
    period: int
    count: int

    @property
    def end(self) -> int:
        return self.start + self.period * self.count


def cut_widths(n: int, edges: Sequence[tuple[int, int]]) -> np.ndarray:
    """``w[p]``: how many producers before position ``p`` feed a consumer at ``p`` or later (the tensors a
    cut between ``p - 1`` and ``p`` crosses, counted by producer). ``edges`` are (producer, consumer)
    positions with producer < consumer."""
    last = np.full(n, -1, dtype=np.int64)
    if edges:
        e = np.asarray(edges, dtype=np.int64)
        np.maximum.at(last, e[:, 0], e[:, 1])
    diff = np.zeros(n + 1, dtype=np.int64)
    src = np.nonzero(last > 0)[0]
    np.add.at(diff, src + 1, 1)
    np.add.at(diff, last[src] + 1, -1)
    return np.cumsum(diff[:n])


def _candidates(codes: np.ndarray, hi: int, min_period: int) -> list[int]:
    """Likely periods: the commonest gaps between the 1st, 2nd and 3rd next occurrence of each op."""
    order = np.argsort(codes, kind="stable")
    sc = codes[order]
    gaps = []
    for lag in (1, 2, 3):
        if len(sc) <= lag:
            break
        same = sc[lag:] == sc[:-lag]
        d = order[lag:][same] - order[:-lag][same]
        gaps.append(d[(d >= min_period) & (d <= hi)])
    if not gaps:
        return []
    allg = np.concatenate(gaps)
    if not len(allg):
        return []
    counts = np.bincount(allg)
    top = np.argsort(counts)[::-1][:CANDIDATES]
    return [int(p) for p in top if counts[p] >= MIN_REPEATS]


def _longest_run(eq: np.ndarray) -> tuple[int, int]:
    """Start and length of the longest run of True in ``eq``."""
    if not len(eq) or not eq.any():
        return 0, 0
    padded = np.concatenate(([0], eq.astype(np.int8), [0]))
    d = np.diff(padded)
    starts, ends = np.nonzero(d == 1)[0], np.nonzero(d == -1)[0]
    k = int(np.argmax(ends - starts))
    return int(starts[k]), int(ends[k] - starts[k])


def _best(codes: np.ndarray, widths: np.ndarray, lo: int, hi: int, min_period: int) -> Repeat | None:
    seg = codes[lo:hi]
    n = len(seg)
    if n < min_period * MIN_REPEATS:
        return None
    found: list[tuple[int, int, int, int]] = []  # (cover, period, run start, run end)
    for p in _candidates(seg, min(MAX_PERIOD, n // MIN_REPEATS), min_period):
        a, r = _longest_run(seg[:-p] == seg[p:])
        cover = (r + p) // p * p  # positions a .. a + r + p - 1 repeat with period p
        if cover >= p * MIN_REPEATS:
            found.append((cover, p, a, a + r + p))
    if not found:
        return None
    top = max(f[0] for f in found)
    _, p, a, end = min((f for f in found if f[0] >= 0.9 * top), key=lambda f: f[1])
    # Phase: start the first block where the fewest tensors cross, within one period of the run's start.
    phase = lo + a + int(np.argmin(widths[lo + a : lo + a + p]))
    count = (lo + end - phase) // p
    if count < MIN_REPEATS:
        return None
    return Repeat(phase, p, count)


def find_repeats(
    ops: Sequence[object], edges: Sequence[tuple[int, int]] = (), min_period: int = MIN_PERIOD
) -> list[Repeat]:
    """Non-overlapping tandem repeats of the sequence ``ops`` (op types, or any hashable tokens), in order.

    ``edges`` are (producer, consumer) position pairs inside the sequence, used to place block boundaries.
    """
    n = len(ops)
    if n < min_period * MIN_REPEATS:
        return []
    table: dict[object, int] = {}
    codes = np.fromiter((table.setdefault(o, len(table)) for o in ops), dtype=np.int64, count=n)
    widths = cut_widths(n, edges)
    out: list[Repeat] = []
    todo = [(0, n)]
    while todo:
        lo, hi = todo.pop()
        rep = _best(codes, widths, lo, hi, min_period)
        if rep is None:
            continue
        out.append(rep)
        todo.append((lo, rep.start))
        todo.append((rep.end, hi))
    out.sort(key=lambda r: r.start)
    return out


def block_name(ops: Sequence[str]) -> str:
    """A short name for a block from the op types in it: ``Softmax block``, ``Conv block``."""
    present = set(ops)
    for op in NOTABLE:
        if op in present:
            return f"{op} block"
    return "block"
