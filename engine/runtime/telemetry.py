"""NVML telemetry during a GPU job: a sampler thread at 10 Hz or more, stamped on the run's clock.

Utilisation, memory, clocks, power, temperature and throttle reasons answer in microseconds and are read
every period; PCIe throughput blocks about 20 ms per call (NVML samples over a window), so a second,
slower thread reads it. Without NVML or a GPU, :meth:`NvmlSampler.start` returns the reason and the
sampler stays empty.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from splitscope.engine.jobs import Sample
from splitscope.engine.runtime.device import NoGpu, _nvml, now

FIELDS = ("gpu_util", "mem_util", "mem_used_mb", "sm_clock_mhz", "mem_clock_mhz", "power_w", "temp_c", "throttle")
THROTTLE_NAMES = {
    0x1: "idle",
    0x2: "app clocks",
    0x4: "power cap",
    0x8: "HW slowdown",
    0x20: "SW thermal",
    0x40: "HW thermal",
    0x80: "power brake",
    0x100: "display clocks",
}


class NvmlSampler:
    """Samples GPU ``index`` every ``period`` seconds in its own thread; read :meth:`drain` for new samples
    and :meth:`summary` at the end."""

    def __init__(self, index: int = 0, period: float = 0.05, keep: int = 100_000) -> None:
        self.index, self.period = index, period
        self.samples: deque[dict[str, float]] = deque(maxlen=keep)
        self.pcie: deque[dict[str, float]] = deque(maxlen=keep)
        self._new: deque[dict[str, float]] = deque()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.error = ""
        self.started_at = 0.0
        self.stopped_at = 0.0

    def start(self) -> str:
        """Start sampling; returns "" or why there is no telemetry (one line)."""
        try:
            nv = _nvml()
            handle = nv.nvmlDeviceGetHandleByIndex(self.index)
        except NoGpu as e:
            self.error = str(e)
            return self.error
        except Exception as e:  # noqa: BLE001 - NVMLError_NotFound and friends
            self.error = f"NVML: {e}"
            return self.error
        self.started_at = now()
        for target in (self._fast, self._slow):
            t = threading.Thread(target=target, args=(nv, handle), daemon=True, name=f"nvml-{target.__name__}")
            t.start()
            self._threads.append(t)
        return ""

    def stop(self) -> None:
        """Stop and join the threads."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout=1.0)
        self.stopped_at = now()

    def drain(self) -> list[dict[str, float]]:
        """Samples taken since the last call."""
        out = []
        while self._new:
            out.append(self._new.popleft())
        return out

    def _fast(self, nv: Any, h: Any) -> None:
        nxt = now()
        while not self._stop.is_set():
            t = now()
            try:
                u = nv.nvmlDeviceGetUtilizationRates(h)
                m = nv.nvmlDeviceGetMemoryInfo(h)
                s = {
                    "t": t,
                    "gpu_util": float(u.gpu),
                    "mem_util": float(u.memory),
                    "mem_used_mb": m.used / 2**20,
                    "sm_clock_mhz": float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
                    "mem_clock_mhz": float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
                    "power_w": nv.nvmlDeviceGetPowerUsage(h) / 1000.0,
                    "temp_c": float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                    "throttle": float(
                        nv.nvmlDeviceGetCurrentClocksEventReasons(h)
                        if hasattr(nv, "nvmlDeviceGetCurrentClocksEventReasons")
                        else nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)
                    ),
                }
            except Exception as e:  # noqa: BLE001 - a GPU that vanishes mid-run ends telemetry, not the job
                self.error = f"NVML stopped answering: {e}"
                return
            self.samples.append(s)
            self._new.append(s)
            nxt += self.period
            self._stop.wait(max(0.0, nxt - now()))

    def _slow(self, nv: Any, h: Any) -> None:
        while not self._stop.is_set():
            t = now()
            try:
                tx = nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_TX_BYTES)
                rx = nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_RX_BYTES)
            except Exception:  # noqa: BLE001 - not every board reports PCIe throughput
                return
            self.pcie.append({"t": t, "pcie_tx_mbps": tx / 1024.0, "pcie_rx_mbps": rx / 1024.0})
            self._stop.wait(0.25)

    def summary(self) -> dict[str, Any]:
        """Sample count, rate, and mean / max of each field; throttle reasons seen."""
        s = list(self.samples)
        if not s:
            return {"samples": 0, "note": self.error or "no samples"}
        span = (s[-1]["t"] - s[0]["t"]) if len(s) > 1 else 0.0
        out: dict[str, Any] = {"samples": len(s), "rate_hz": round((len(s) - 1) / span, 1) if span > 0 else 0.0}
        for f in FIELDS[:-1]:
            vals = [x[f] for x in s]
            out[f] = {"mean": round(sum(vals) / len(vals), 2), "max": round(max(vals), 2)}
        bits = 0
        for x in s:
            bits |= int(x["throttle"])
        out["throttle_reasons"] = [name for bit, name in THROTTLE_NAMES.items() if bits & bit]
        p = list(self.pcie)
        if p:
            out["pcie_tx_mbps"] = {
                "mean": round(sum(x["pcie_tx_mbps"] for x in p) / len(p), 1),
                "max": round(max(x["pcie_tx_mbps"] for x in p), 1),
            }
            out["pcie_rx_mbps"] = {
                "mean": round(sum(x["pcie_rx_mbps"] for x in p) / len(p), 1),
                "max": round(max(x["pcie_rx_mbps"] for x in p), 1),
            }
        if self.error:
            out["note"] = self.error
        return out


def telemetry_samples(sampler: NvmlSampler | None, t0: float) -> list[Sample]:
    """The ``telemetry`` samples ``sampler`` gathered since the last call, on a clock starting at ``t0`` (none
    without a sampler)."""
    return [Sample("telemetry", s["t"] - t0, s) for s in sampler.drain()] if sampler is not None else []
