"""A calibration as its readers see it: typed records read from ``splitscope calibrate --json`` (or a
calibration job's result). The JSON stays the interchange (:meth:`CalibrationDoc.to_json` gives it back);
the window reads these attributes, not string keys."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from splitscope.engine.codec import read

if TYPE_CHECKING:
    import pandas


@dataclass(frozen=True, slots=True)
class OutputAccuracy:
    """One output of the reduced model against FP32 on the held-out samples."""

    snr_db: float
    cosine: float
    max_abs: float | None = None
    top1_agreement: float | None = None
    top1: float | None = None
    """Top-1 accuracy against the user's labels (with ``--labels``), and FP32's beside it."""
    top1_fp32: float | None = None
    task: str = ""
    """The task's figure in one phrase (:func:`splitscope.engine.calib.task.text`); empty when none was chosen."""
    no_task_why: str = ""
    """Why no task metric was chosen for it (its layout or values said no task), when that was asked."""

    @property
    def identical(self) -> bool:
        """The reduced output equals FP32's (an SNR of 999 dB stands for that)."""
        return self.snr_db >= 999

    @property
    def line(self) -> str:
        """Its accuracy in one line, the task's figure first (what the CLI, the window and the report say)."""
        snr = "identical to FP32" if self.identical else f"SNR {self.snr_db:.1f} dB"
        parts = [self.task] if self.task else []
        parts.append(f"{snr}, cosine {self.cosine:.5f}, max |error| {self.max_abs or 0.0:.4g}")
        if self.top1 is not None and self.top1_fp32 is not None:
            parts.append(f"top-1 accuracy {self.top1:.1%} (FP32 {self.top1_fp32:.1%})")
        if self.no_task_why:
            parts.append(f"no task metric: {self.no_task_why}")
        return "; ".join(parts)

    @property
    def lead(self) -> str:
        """The one figure a status line gives: the task's, else the SNR."""
        return self.task or f"SNR {self.snr_db:.1f} dB"

    @classmethod
    def from_json(cls, a: dict[str, Any]) -> OutputAccuracy:
        from splitscope.engine.calib.task import text

        task = a.get("task") or {}
        return cls(
            float(a.get("snr_db") or 0.0),
            float(a.get("cosine") or 0.0),
            a.get("max_abs"),
            a.get("top1_agreement"),
            a.get("top1"),
            a.get("top1_fp32"),
            text(task),
            str(task.get("why") or "") if task.get("kind") == "none" else "",
        )


@dataclass(frozen=True, slots=True)
class Histogram:
    """One activation's histogram of |x| and each method's threshold on it."""

    counts: tuple[float, ...]
    max: float
    absmax: float
    sentinels: int
    thresholds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HalfPins:
    """Nodes pinned to FP16/BF16 inside an INT8/FP8 model."""

    precision: str
    nodes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Search:
    """The sensitivity run and the budget search: each node's gain, and the path of nodes kept in float."""

    sensitivity: tuple[tuple[str, float], ...] = ()
    metric: str = "snr_db"
    path: tuple[tuple[float, float], ...] = ()
    target: float | None = None


@dataclass(frozen=True, slots=True)
class CalibrationDoc:
    """A finished calibration, typed; :attr:`json` is the document it was read from."""

    precision: str
    method: str
    samples: int
    out: str
    tensors: int
    weights: int
    quantized_nodes: int
    casts: int | None
    """Casts written (FP16/BF16 runs); ``None`` for Q/DQ."""
    quantized: tuple[str, ...]
    excluded: tuple[str, ...]
    notes: tuple[str, ...]
    accuracy: dict[str, OutputAccuracy]
    half: HalfPins | None
    histograms: dict[str, Histogram]
    search: Search | None
    json: dict[str, Any]

    @property
    def uses_casts(self) -> bool:
        """An FP16/BF16 run (casts), not Q/DQ."""
        return self.casts is not None

    @property
    def estimated(self) -> bool:
        """The accuracy came from an emulation, not from running the written model (older files: ``emulated``)."""
        how = self.json.get("accuracy_measured") or {}
        return how.get("how") == "estimated" or (not how and bool(self.json.get("emulated")))

    @property
    def runtime(self) -> str:
        """What ran the written model to measure its accuracy."""
        return str((self.json.get("accuracy_measured") or {}).get("runtime") or "ONNX Runtime")

    @property
    def weights_line(self) -> str:
        """How many weights were made reduced, how, and where they came from."""
        return weights_text(self.json)

    @property
    def model(self) -> str | None:
        """The FP32 model it calibrated."""
        return self.json.get("model")

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CalibrationDoc:
        d = read("calibration", d)
        acc = {o: OutputAccuracy.from_json(a) for o, a in (d.get("accuracy") or {}).items()}
        hists = {
            t: Histogram(
                tuple(h.get("counts") or ()),
                float(h.get("max") or 0.0),
                float(h.get("absmax") or 0.0),
                int(h.get("sentinels") or 0),
                {m: float(v) for m, v in (h.get("thresholds") or {}).items()},
            )
            for t, h in (d.get("histograms") or {}).items()
        }
        h = d.get("half")
        half = HalfPins(str(h.get("precision", "fp16")), tuple(h.get("nodes") or ())) if h else None
        s = d.get("search")
        search = None
        if s:
            metric = str(s.get("metric", "snr_db"))
            search = Search(
                tuple((str(r["node"]), float(r["gain_db"])) for r in s.get("sensitivity") or ()),
                metric,
                tuple((float(p["kept"]), float(p[metric])) for p in s.get("path") or () if metric in p),
                s.get("target"),
            )
        return cls(
            str(d.get("precision", "")),
            str(d.get("method", "")),
            int(d.get("samples") or 0),
            str(d.get("out", "")),
            int(d.get("tensors") or 0),
            int(d.get("weights") or 0),
            int(d.get("quantized_nodes") or 0),
            d.get("casts"),
            tuple(d.get("quantized") or ()),
            tuple(d.get("excluded") or ()),
            tuple(str(n) for n in d.get("notes") or ()),
            acc,
            half,
            hists,
            search,
            d,
        )

    def to_json(self) -> dict[str, Any]:
        """The document it was read from, unchanged."""
        return self.json

    def to_pandas(self) -> pandas.DataFrame:
        """One row per model output: its accuracy against FP32 on the held-out samples (pandas needed)."""
        from splitscope.engine.frames import frame

        return frame({"output": name, **(self.json.get("accuracy") or {}).get(name, {})} for name in self.accuracy)


def weights_text(res: dict[str, Any]) -> str:
    """How many weights were made reduced, how, and where they came from."""
    n = int(res.get("weights") or 0)
    text = f"{n} weight{'s' if n != 1 else ''}"
    per_c, per_t = res.get("weights_per_channel"), res.get("weights_per_tensor")
    if per_c or per_t:
        text += f" ({per_c or 0} per-channel, {per_t or 0} per-tensor)"
    src = res.get("weight_sources") or {}
    if src:
        names = {"initializer": "initializers", "constant": "Constant nodes", "folded": "folded constant chains"}
        text += " from " + ", ".join(f"{v} {names.get(k, k)}" for k, v in src.items())
    return text
