"""Per-node device times from CUPTI (``cupti-python``): every kernel the runtime launches is recorded with its
device start and end, and its launch call (the runtime or driver API record of the same correlation id) with its
host time; ONNX Runtime's profiler says, per node, when on the host that node ran. A kernel belongs to the node
whose host interval holds its launch. So each node gets the device time of its kernels, and the gaps between
kernels (the device idle while the host works) are said apart: they are the graph-bound share.

Where cupti-python is missing (or CUPTI cannot attach), :func:`available` says why and the profile keeps the host
times ONNX Runtime measures, and says which it used. Both clocks are the realtime clock in nanoseconds (ONNX
Runtime's profiling start, CUPTI's timestamps); the offset between them is measured at the start anyway.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field
from typing import Any


def available() -> str:
    """ "" when CUPTI can be used here, else why not."""
    try:
        import importlib

        importlib.import_module("cupti.cupti")
    except ImportError as e:
        return f"cupti-python is not installed ({e}); pip install 'splitscope[gpu]'"
    except Exception as e:  # noqa: BLE001 - the library may be missing under the package
        return f"CUPTI could not be loaded: {str(e)[:120]}"
    return ""


@dataclass
class Kernel:
    name: str
    start: int
    end: int
    correlation: int


@dataclass
class Trace:
    """What CUPTI recorded while it was on: kernels, and launch calls by correlation id (their host start)."""

    kernels: list[Kernel] = field(default_factory=list)
    launches: dict[int, int] = field(default_factory=dict)
    offset_ns: int = 0
    """CUPTI's clock minus the host's realtime clock, measured at the start."""
    dropped: int = 0


class KernelTrace:
    """``with KernelTrace() as t:`` records the device's kernels and their launches; ``t.trace`` after the block."""

    def __init__(self) -> None:
        import importlib

        self.cupti: Any = importlib.import_module("cupti.cupti")
        self.trace = Trace()
        self._raw: list[Any] = []

    def __enter__(self) -> KernelTrace:
        c = self.cupti

        def requested() -> tuple[int, int]:
            return 8 * 1024 * 1024, 0

        def completed(activities: Any) -> None:
            self._raw.extend(activities)

        c.activity_register_callbacks(requested, completed)
        for kind in (c.ActivityKind.CONCURRENT_KERNEL, c.ActivityKind.RUNTIME, c.ActivityKind.DRIVER):
            c.activity_enable(kind)
        t0 = time.time_ns()
        ts = int(c.get_timestamp())
        self.trace.offset_ns = ts - (t0 + time.time_ns()) // 2
        return self

    def __exit__(self, *exc: Any) -> None:
        c = self.cupti
        c.activity_flush_all(1)
        for kind in (c.ActivityKind.CONCURRENT_KERNEL, c.ActivityKind.RUNTIME, c.ActivityKind.DRIVER):
            c.activity_disable(kind)
        kernel_kinds = {int(c.ActivityKind.CONCURRENT_KERNEL), int(getattr(c.ActivityKind, "KERNEL", -1))}
        api_kinds = {int(c.ActivityKind.RUNTIME), int(c.ActivityKind.DRIVER)}
        for a in self._raw:
            kind = int(getattr(a, "kind", -1))
            if kind in kernel_kinds:
                name = getattr(a, "name", "") or ""
                name = name.decode() if isinstance(name, bytes) else str(name)
                self.trace.kernels.append(Kernel(name, int(a.start), int(a.end), int(a.correlation_id)))
            elif kind in api_kinds:
                cid = int(a.correlation_id)
                self.trace.launches.setdefault(cid, int(a.start))
        self._raw.clear()


def attribute(
    trace: Trace, nodes: list[tuple[str, int, int]], runs: list[tuple[int, int]]
) -> tuple[dict[str, float], dict[str, Any]]:
    """Device microseconds per node, and the cover: ``nodes`` are (name, host start ns, host end ns) from ONNX
    Runtime's profiler, ``runs`` its runs (host start, end ns). A kernel launched within a node's interval is the
    node's; the rest are ``unattributed``. The cover says how much of the runs' wall time the attributed kernels
    fill, and the gaps (the device idle between kernels) as the graph-bound share."""
    starts = sorted((s, e, name) for name, s, e in nodes)
    keys = [s for s, _, _ in starts]
    per: dict[str, float] = {}
    unattributed = 0.0
    busy: list[tuple[int, int]] = []
    for k in trace.kernels:
        launch = trace.launches.get(k.correlation)
        if launch is None:
            unattributed += (k.end - k.start) / 1e3
            continue
        host = launch - trace.offset_ns
        i = bisect.bisect_right(keys, host) - 1
        if i >= 0 and starts[i][0] <= host <= starts[i][1]:
            per[starts[i][2]] = per.get(starts[i][2], 0.0) + (k.end - k.start) / 1e3
            busy.append((k.start - trace.offset_ns, k.end - trace.offset_ns))
        else:
            unattributed += (k.end - k.start) / 1e3
    wall = sum(e - s for s, e in runs) / 1e3
    device = _union(busy, runs) / 1e3
    return per, {
        "source": "cupti",
        "run_us": round(wall, 3),
        "device_us": round(device, 3),
        "cover": round(device / wall, 4) if wall else 0.0,
        "gaps_us": round(max(wall - device, 0.0), 3),
        "unattributed_us": round(unattributed, 3),
        "kernels": len(trace.kernels),
        "dropped": trace.dropped,
    }


def _union(spans: list[tuple[int, int]], runs: list[tuple[int, int]]) -> float:
    """The time the device was busy within the runs (overlapping kernels counted once)."""
    total = 0
    for lo, hi in runs:
        inside = sorted((max(s, lo), min(e, hi)) for s, e in spans if e > lo and s < hi)
        cur_s = cur_e = None
        for s, e in inside:
            if cur_e is None or s > cur_e:
                if cur_e is not None and cur_s is not None:
                    total += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        if cur_e is not None and cur_s is not None:
            total += cur_e - cur_s
    return float(total)


def ort_intervals(profile_json: str, start_ns: int, skip_runs: int = 0) -> tuple[list[tuple[str, int, int]], list]:
    """(node name, host start ns, host end ns) of ONNX Runtime's node events and its runs' intervals, after the
    first ``skip_runs`` runs; ``start_ns`` is the session's profiling start (``get_profiling_start_time_ns``)."""
    import json
    from pathlib import Path

    events = json.loads(Path(profile_json).read_text(encoding="utf-8"))
    runs = sorted(
        (start_ns + int(e["ts"]) * 1000, start_ns + (int(e["ts"]) + int(e["dur"])) * 1000)
        for e in events
        if e.get("cat") == "Session" and e.get("name") == "model_run"
    )[skip_runs:]
    lo = runs[0][0] if runs else 0
    nodes = []
    for e in events:
        name = e.get("name", "")
        if e.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        s = start_ns + int(e["ts"]) * 1000
        if s >= lo:
            nodes.append((name[: -len("_kernel_time")], s, s + int(e.get("dur", 0)) * 1000))
    return nodes, runs


def device_ms_per_run(trace: Trace, runs: int | None = None) -> float | None:
    """The device time of one run in ms, from the kernels recorded over several: each kernel name's median duration
    times how often it ran a run, summed. ``runs`` is the number of runs traced; without it, each name is taken to
    run once a run (a workbench kernel's launches). None when nothing ran."""
    by: dict[str, list[float]] = {}
    for k in trace.kernels:
        by.setdefault(k.name, []).append((k.end - k.start) / 1e6)
    if not by:
        return None
    n = runs or min(len(v) for v in by.values())
    return sum(_median(v) * len(v) / n for v in by.values())


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2
