"""Per-layer sensitivity and the automatic precision search.

*Sensitivity* of a quantized node: the accuracy when every other node is quantized and only it is left in
float; the gain over the fully quantized model says how much that one layer costs. The *search* keeps the
nodes of largest gain in float, one more at a time, until the accuracy meets the user's budget (an SNR in dB
or a cosine), and records the path it took (accuracy against the number of nodes kept).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Generator
from typing import Any

import numpy as np
import onnx
from splitscope.engine.calib import qdq
from splitscope.engine.calib.accuracy import compare_outputs
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, Progress, Sample
from splitscope.engine.runtime.runner import open_ort


def parse_budget(text: str) -> tuple[str, float]:
    """``snr=30``, ``cosine=0.999``, or ``top1=0.75`` (with labels: the task metric)."""
    key, sep, value = text.partition("=")
    key = key.strip().lower()
    try:
        v = float(value)
    except ValueError:
        v = float("nan")
    if not sep or key not in ("snr", "cosine", "top1") or not np.isfinite(v):
        raise SplitscopeError(
            f"--budget {text!r}: write snr=DB, cosine=VALUE or top1=ACCURACY (with --labels), e.g. snr=30."
        )
    return {"snr": "snr_db", "cosine": "cosine", "top1": "top1"}[key], v


class Evaluator:
    """Accuracy of the model with some nodes kept in float, on fixed held-out feeds: ``build(keep)`` gives the
    model to run (Q/DQ inserted, or the reduced-precision emulation) with the nodes of ``keep`` in FP32."""

    def __init__(
        self,
        build: Callable[[set[str]], onnx.ModelProto],
        feeds: list[dict[str, np.ndarray]],
        refs: dict[str, list[np.ndarray]],
        path: Any,
        labels: list[int] | None = None,
        backend: str = "ort-cpu",
    ) -> None:
        self.build = build
        self.feeds, self.refs = feeds, refs
        self.labels = labels
        self.runner = open_ort(path, backend, "The precision search", exact_fp32=True, plain=True)
        self.runs = 0

    def close(self) -> None:
        self.runner.close()

    def score(self, keep: set[str]) -> dict[str, float]:
        """The worst output's figures with ``keep`` in float."""
        self.runner.load(model=self.build(keep).SerializeToString())
        names = list(self.refs)
        got: dict[str, list[np.ndarray]] = {n: [] for n in names}
        for f in self.feeds:
            for n, a in zip(names, self.runner.infer(f, names, on_host=True), strict=True):
                got[n].append(a)
        self.runs += 1
        per = [compare_outputs(self.refs[n], got[n]) for n in names]
        score = {"snr_db": min(p["snr_db"] for p in per), "cosine": min(p["cosine"] for p in per)}
        if self.labels is not None:
            from splitscope.engine.calib.accuracy import top1

            accs = [a for a in (top1(got[n], self.labels) for n in names) if a is not None]
            if accs:
                score["top1"] = min(accs)
        return score


def qdq_builder(
    proto: onnx.ModelProto, ranges: dict[str, float], precision: str
) -> Callable[[set[str]], onnx.ModelProto]:
    """``build(keep)`` for Q/DQ: the model quantized with ``keep`` left in float."""

    def build(keep: set[str]) -> onnx.ModelProto:
        m = copy.deepcopy(proto)
        return qdq.apply(m, ranges, qdq.plan(m, keep), precision)[0]

    return build


def sensitivity(
    ev: Evaluator, nodes: list[str], cancel: CancelToken, base: dict[str, float]
) -> Generator[JobEvent, None, list[dict[str, Any]]]:
    """Each node left alone in float: its accuracy, and its gain over the fully quantized model."""
    out = []
    for k, n in enumerate(nodes):
        cancel.raise_if_cancelled()
        s = ev.score({n})
        out.append(
            {"node": n, "snr_db": s["snr_db"], "cosine": s["cosine"], "gain_db": round(s["snr_db"] - base["snr_db"], 3)}
        )
        yield Sample("sensitivity", float(k), {n: s["snr_db"]})
        yield Progress("sensitivity", k + 1, len(nodes), f"Sensitivity of {n}")
    return out


def search(
    ev: Evaluator,
    sens: list[dict[str, Any]],
    metric: str,
    target: float,
    base: dict[str, float],
    cancel: CancelToken,
    most: int = 64,
) -> Generator[JobEvent, None, dict[str, Any]]:
    """Keep the nodes of largest gain in float until ``metric`` reaches ``target``."""
    order = [s["node"] for s in sorted(sens, key=lambda s: -s["gain_db"])]
    path = [{"kept": 0, metric: base[metric]}]
    keep: list[str] = []
    score = base
    met = score[metric] >= target
    for n in order[:most]:
        if met:
            break
        cancel.raise_if_cancelled()
        keep.append(n)
        score = ev.score(set(keep))
        path.append({"kept": len(keep), metric: score[metric]})
        met = score[metric] >= target
        yield Sample("search", float(len(keep)), {"kept": float(len(keep)), metric: score[metric]})
        yield Progress(
            "search", len(keep), min(most, len(order)), f"Search: {len(keep)} kept, {metric} {score[metric]:.4g}"
        )
    return {"metric": metric, "target": target, "met": met, "keep": keep, "path": path, "final": score}
