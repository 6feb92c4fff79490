"""The calibration job: statistics in one pass (cached), ranges by method, the Q/DQ model written, and its
accuracy against the original on held-out samples. The run goes in phases (:class:`_Run`): read the model and the
data, collect statistics, write the reduced model (casts for FP16/BF16, Q/DQ for INT8/FP8), measure it, and say
what happened in the result document; the steps it calls are in :mod:`splitscope.engine.calib.steps`."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
from splitscope.engine.calib import casts, qdq
from splitscope.engine.calib.accuracy import labels_for, read_labels
from splitscope.engine.calib.collect import collect, load_stats, save_stats
from splitscope.engine.calib.data import IMAGE_SUFFIXES, open_data
from splitscope.engine.calib.emulation import emulate
from splitscope.engine.calib.measure import Measured, measure
from splitscope.engine.calib.methods import METHODS, amax
from splitscope.engine.calib.pipeline import model_recipe
from splitscope.engine.calib.search import qdq_builder
from splitscope.engine.calib.steps import (
    ALREADY_QUANTIZED,
    PRECISIONS,
    body_nodes,
    check_written,
    for_casts,
    full_model,
    heldout_data,
    load_hoisted,
    qdq_with_half,
    sensitivity_and_search,
    weight_sources,
)
from splitscope.engine.codec import stamp
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.onnxio.weights import hoist
from splitscope.engine.onnxio.writer import ModelWriter, has_external_data
from splitscope.engine.runtime.inputs import input_specs
from splitscope.engine.runtime.written import verify_written
from splitscope.engine.text import plural


def calibrate(model: str | Path, out: str | Path, **kw: Any) -> Generator[JobEvent, None, dict[str, Any]]:
    """Calibrate ``model`` and write the quantized model to ``out`` (the options: :class:`Options`).

    The model and its external data (kept external when the source has it) are staged beside ``out`` and
    moved onto it only when the whole run succeeded (accuracy included): a run that fails or is cancelled
    midway leaves ``out`` (and its sidecar) as they were."""
    out = Path(out)
    if not out.parent.is_dir():
        raise SplitscopeError(f"--out {out}: the folder {out.parent} does not exist; create it or write elsewhere.")
    with ModelWriter(out, external=has_external_data(model) or None) as writer:
        doc = yield from _Run(Path(model), out, writer, Options(**kw)).run()
        if writer.path.exists():
            yield Progress("check", 0, 0, f"Running {out.name} in ONNX Runtime (CPU) and TensorRT-RTX's parser")
            checks = verify_written(writer.path, kw.get("dims"), source=model, cancel=kw.get("cancel"))
            doc["written_checks"] = checks.notes
            doc["written_runs"] = {"ort_cpu": checks.ort, "tensorrt_rtx": checks.rtx}
            if checks.ort not in ("runs", "sizes"):
                doc["notes"].append(checks.notes[0])
            writer.commit()
    return doc


@dataclass
class Options:
    """What a calibration is asked. ``details``: each tensor's histogram (256 bins) and every method's threshold
    on it, for the calibration view. ``half``: in an INT8/FP8 run, nodes pinned to ``half_precision`` (FP16 or
    BF16): left out of the Q/DQ and given casts instead, so one model mixes INT8, FP16 and FP32 as TensorRT 11's
    strong typing runs it. ``budget``/``sensitivity``: the search for the nodes to keep in float."""

    data: str = "random"
    method: str = "entropy"
    precision: str = "int8"
    samples: int = 32
    keep: list[str] | None = None
    dims: dict[str, int] | None = None
    percentile: float = 99.99
    heldout: int = 8
    backend: str = "ort-cpu"
    cancel: CancelToken | None = None
    details: bool = False
    budget: str | None = None
    sensitivity: bool = False
    recipe: str | None = None
    half: list[str] | None = None
    half_precision: str = "fp16"
    labels: str | None = None
    metric: str = "auto"

    def check(self) -> None:
        """Refuse, in one line each, options no run can honour."""
        from splitscope.engine.calib.task import KINDS
        from splitscope.engine.errors import BackendUnavailableError
        from splitscope.engine.runtime.ort import check_backend

        if self.backend in ("tensorrt", "rtx"):  # what open_ort says, before a GPU is looked for
            raise BackendUnavailableError("Calibration runs on ONNX Runtime: use --backend ort-cpu or ort-cuda.")
        check_backend(self.backend)
        if self.method not in METHODS:
            raise SplitscopeError(f"--method {self.method}: use one of {', '.join(METHODS)}.")
        if self.precision not in PRECISIONS:
            raise SplitscopeError(f"--precision {self.precision}: use one of {', '.join(PRECISIONS)}.")
        if self.samples < 1:
            raise SplitscopeError("--samples must be 1 or more.")
        if self.metric not in KINDS:
            raise SplitscopeError(f"--metric {self.metric}: use one of {', '.join(KINDS)}.")


@dataclass
class _Written:
    """What writing the reduced model gave: the counts, what was reduced and kept, the ranges (Q/DQ), the search's
    record, the pins' record, and what to measure when ONNX Runtime cannot run the written model."""

    counts: dict[str, Any]
    excluded: list[str]
    quantized: list[str]
    ranges: dict[str, float] = field(default_factory=dict)
    searched: dict[str, Any] | None = None
    half: dict[str, Any] | None = None
    fallback: Callable[[], bytes] | None = None


class _Run:
    """One calibration, phase by phase: :meth:`read`, :meth:`statistics`, :meth:`write_low` or :meth:`write_qdq`,
    :meth:`accuracy`, then the notes and the document."""

    def __init__(self, model: Path, out: Path, writer: ModelWriter, opts: Options) -> None:
        self.model, self.out, self.writer, self.o = model, out, writer, opts
        self.cancel = opts.cancel or CancelToken()
        self.t0 = time.perf_counter()
        self.notes: list[str] = []
        self.low = opts.precision in casts.LOW
        self.keep = list(opts.keep or [])
        self.half = set(opts.half or [])

    def run(self) -> Generator[JobEvent, None, dict[str, Any]]:
        o = self.o
        o.check()
        if self.out.resolve() == self.model.resolve():
            raise SplitscopeError("--out is the model itself: write the quantized copy somewhere else.")
        yield Progress("calibrate", 0, 0, "Reading the model")
        self.read()
        self.plan_tensors()
        yield from self.statistics()
        self.cancel.raise_if_cancelled()
        w = yield from (self.write_low() if self.low else self.write_qdq())
        measured = yield from self.accuracy(w)
        self.closing_notes(w, measured)
        return stamp("calibration", self.document(w, measured))

    # ------------------------------------------------------------------ read
    def read(self) -> None:
        """The model (its weights in Constant nodes hoisted), its dims, the samples and the held-out ones."""
        from splitscope.engine.onnxio.concrete import classify_dims
        from splitscope.engine.onnxio.loader import load_model

        o, model = self.o, self.model
        load_model(model)  # a missing, truncated or corrupt model (or its external data) said in one line
        self.proto = self.source = onnx.load(str(model), load_external_data=False)
        self.sources = hoist(self.proto)  # weights in Constant nodes and constant chains are weights too
        specs = input_specs(self.proto)
        self.dims_plan = classify_dims(self.proto, o.dims)  # batch-like dims at 1 and the model's own hints
        self.dims = self.dims_plan.values
        if self.dims_plan.missing and o.data == "random":
            raise SplitscopeError(
                f"{model.name}: no value for {', '.join(self.dims_plan.missing)}, which random samples need: "
                f"give {self.dims_plan.example()}."
            )
        recipe, self.chosen = o.recipe, None
        if recipe is None and o.data != "random" and Path(o.data).is_dir():
            meta = {m.key: m.value for m in self.proto.metadata_props}
            found = model_recipe(model, meta, specs[0].dims if len(specs) == 1 else [])
            if any(f.suffix.lower() in IMAGE_SUFFIXES for f in Path(o.data).iterdir()):
                recipe, self.chosen = found.text, found
        self.cdata = open_data(o.data, specs, o.samples, self.dims, recipe=recipe)
        if self.cdata.random:
            from splitscope.engine.runtime.feeds import input_rules

            self.cdata.rules = input_rules(self.proto)
        if o.half_precision not in casts.LOW:
            raise SplitscopeError(f"half precision {o.half_precision}: use fp16 or bf16.")
        self._check_node_names()
        self.held = heldout_data(self.cdata, specs, self.dims, o.samples, o.heldout)
        self.held_labels = self._labels()

    def _check_node_names(self) -> None:
        nodes = self.proto.graph.node
        names = {n.name for n in nodes} | {n.output[0] for n in nodes if not n.name and n.output}
        unknown = sorted((set(self.keep) | self.half) - names)
        if unknown:
            raise SplitscopeError(
                f"--keep {unknown[0]!r}: no node of that name in the model (names are shown in the "
                "inspector and by 'splitscope analyze --json')."
            )

    def _labels(self) -> list[int] | None:
        labels = self.o.labels
        if not labels:
            return None
        if self.cdata.random:
            raise SplitscopeError("--labels goes with --data DIR (random samples have no classes).")
        held_labels = labels_for(self.held.files, read_labels(labels))
        if held_labels is None:
            self.notes.append(
                f"--labels {Path(labels).name} names no class for some held-out files (by name or stem): no task metric"
            )
        return held_labels

    def plan_tensors(self) -> None:
        """Which tensors need statistics: the outputs of the nodes made FP16 (their range decides what stays in
        FP32), or every activation the Q/DQ quantizes."""
        o = self.o
        self.force: set[str] = set()
        if self.low:
            self.proto, self.converted = for_casts(self.proto, o.precision, self.notes)
            self.types = casts.infer_types(self.proto)
            self.force = set(self.half)  # with fp16/bf16, pins to it override the default keeps and the data
            cplan = casts.plan(self.proto, o.precision, set(self.keep), types=self.types, force=self.force)
            outputs = {n.name or n.output[0]: list(n.output) for n in self.proto.graph.node}
            low = [t for lbl in cplan.low for t in outputs.get(lbl, [])]
            self.tensors = low if o.precision == "fp16" else []
        else:
            self.qplan = qdq.plan(self.proto, set(self.keep) | self.half)
            self.tensors = self.qplan.activations

    # ------------------------------------------------------------ statistics
    def statistics(self) -> Generator[JobEvent, None, None]:
        """Each tensor's statistics, from the cache where an earlier run on the same samples left them."""
        from splitscope.engine.paths import cache_dir
        from splitscope.engine.runtime.store import model_key

        cache = cache_dir() / "calib" / f"{model_key(self.model)}-{self.cdata.key()}.npz"
        self.stats = load_stats(cache) or {}
        self.cached = bool(self.tensors) and set(self.tensors) <= set(self.stats)
        self.stats_s = 0.0
        self.folded_on: list[str] = []
        self.phases: dict[str, float] = {}
        if self.tensors and not self.cached:
            c0 = time.perf_counter()
            fresh = yield from collect(
                self.model,
                self.tensors,
                self.cdata,
                self.o.backend,
                self.cancel,
                self.folded_on,
                proto=self.source,
                phases=self.phases,
            )
            self.stats_s = time.perf_counter() - c0
            self.stats = {**self.stats, **fresh}
            save_stats(self.stats, cache)

    # ------------------------------------------------------------ writing
    def write_low(self) -> Generator[JobEvent, None, _Written]:
        """FP16/BF16: the cast plan (kept nodes, the data's ranges, the search's keeps), written with casts."""
        o, proto = self.o, self.proto
        absmax = {t: self.stats[t].absmax for t in self.tensors if t in self.stats}
        self.full = full_model(self.model, proto if self.converted else None)
        self.original = load_hoisted(self.model) if self.converted else self.full

        def plan(keep: set[str], force: set[str]) -> casts.CastPlan:
            return casts.plan(proto, o.precision, keep, absmax=absmax, types=self.types, force=force)

        cplan = plan(set(self.keep), self.force)
        searched = None
        if o.budget or o.sensitivity:

            def build(more: set[str]) -> onnx.ModelProto:
                keep, force = set(self.keep) | more, self.force - more
                full = casts.plan(self.full, o.precision, keep, absmax=absmax, types=self.types, force=force)
                return self._emulation(full)

            searched = yield from self._search(build, cplan.compute())
            cplan = casts.plan(proto, o.precision, set(self.keep), absmax=absmax, types=self.types)
        yield Progress("write", 0, 0, f"Writing {self.out.name}")
        written, counts = casts.apply(copy.deepcopy(self.full), cplan)
        check_written(written, o.precision)
        self.writer.save(written)
        del written
        self.cplan = cplan
        self._low_notes(cplan)

        def fallback() -> bytes:
            return self._emulation(cplan).SerializeToString()

        return _Written(counts, cplan.excluded, cplan.low, searched=searched, fallback=fallback)

    def _emulation(self, p: casts.CastPlan) -> onnx.ModelProto:
        """The emulation runs the model at its own opset (ONNX Runtime may lack kernels of the raised one, such as
        RoiAlign-22): the same nodes, their positions read from the schema there."""
        if not self.converted:
            return emulate(self.full, p, self.dims)
        there = casts.plan(self.original, "fp16", default_keep=False, only=set(p.low))
        there.precision = p.precision
        return emulate(self.original, there, self.dims)

    def _low_notes(self, cplan: casts.CastPlan) -> None:
        precision = self.o.precision.upper()
        self.notes.append(f"{precision} needs no ranges (--method is not used)")
        left = self.force - set(cplan.low)
        if left:
            self.notes.append(
                f"pinned to {precision} but left in FP32 (their ONNX schema does not allow it, or "
                f"their types are unknown): {', '.join(sorted(left)[:5])}"
            )
        if self.o.precision == "fp16":
            over = [lbl for lbl, r in cplan.reasons.items() if "calibration data" in r]
            if over:
                outputs = "its output exceeds" if len(over) == 1 else "their outputs exceed"
                self.notes.append(
                    f"{plural(len(over), 'node')} kept in FP32 because {outputs} FP16's safe range on the "
                    "calibration data"
                )

    def write_qdq(self) -> Generator[JobEvent, None, _Written]:
        """INT8/FP8: ranges by the method, the search's keeps, Q/DQ written (casts too for pinned nodes)."""
        o, model = self.o, self.model
        qplan = self.qplan
        ranges = {
            t: amax(self.stats[t], o.method, o.percentile, o.precision) for t in qplan.activations if t in self.stats
        }
        searched = None
        if o.budget or o.sensitivity:
            build = qdq_builder(load_hoisted(model), ranges, o.precision)
            searched = yield from self._search(build, list(qplan.nodes))
            qplan = qdq.plan(load_hoisted(model, external=False), set(self.keep) | self.half)
        self.qplan = qplan
        yield Progress("write", 0, 0, f"Writing {self.out.name}")
        excluded = [x for x in qplan.excluded if x not in self.half]
        if not self.half:
            counts = qdq.write(load_hoisted(model), self.writer, ranges, qplan, o.precision)
            return _Written(counts, excluded, qplan.nodes, ranges, searched)
        counts, emulated, half_doc = qdq_with_half(
            model, self.writer, ranges, qplan, o.precision, self.half, o.half_precision, self.notes, self.dims
        )

        def fallback() -> bytes:  # the Q/DQ as written, the pinned nodes' tensors rounded
            return emulated

        return _Written(counts, excluded, qplan.nodes, ranges, searched, half_doc, fallback)

    def _search(self, build: Any, nodes: list[str]) -> Generator[JobEvent, None, dict[str, Any]]:
        """Each node's sensitivity, and with a budget the nodes to keep in float (added to :attr:`keep`)."""
        o = self.o
        searched = yield from sensitivity_and_search(
            self.model,
            build,
            nodes,
            o.precision,
            self.held,
            self.dims,
            o.budget,
            o.backend,
            self.cancel,
            self.held_labels,
        )
        self.keep = sorted(set(self.keep) | set(searched.get("keep", [])))
        return searched

    # ------------------------------------------------------------ accuracy
    def accuracy(self, w: _Written) -> Generator[JobEvent, None, Measured]:
        """The written model against the FP32 one on the held-out samples (other seeds, or the files past the
        calibration set); emulated, and said so, only where ONNX Runtime cannot run what was written."""
        o = self.o
        yield Progress("accuracy", 0, o.heldout, f"Running {self.out.name} against the FP32 model")
        measured = yield from measure(
            self.model,
            self.writer.path,
            self.held,
            o.backend,
            o.metric,
            self.cancel,
            self.held_labels,
            emulation=w.fallback,
            count=o.heldout,
        )
        accuracy, searched = measured.accuracy, w.searched
        if searched is not None and searched.get("final") and accuracy and measured.how == "measured":
            # The search emulates for speed; its pick is the model just measured: say how far the two are apart.
            worst = {
                "snr_db": min(a["snr_db"] for a in accuracy.values()),
                "cosine": min(a["cosine"] for a in accuracy.values()),
            }
            searched["final_measured"] = worst
            emulated = searched["final"].get("snr_db")
            if emulated is not None:
                self.notes.append(
                    f"the search's pick: {emulated:.1f} dB as the search emulated it, {worst['snr_db']:.1f} dB as "
                    "written and run (the figures above)"
                )
        if measured.how == "estimated":
            self.notes.append(
                f"accuracy is ESTIMATED, not measured: {measured.why}; the {o.precision.upper()} tensors were rounded "
                "and the arithmetic done in FP32 (run the written model where it has kernels to measure it)"
            )
        return measured

    # ------------------------------------------------------------ the result
    def wide(self) -> list[dict[str, Any]]:
        """The tensors holding values no range covers (sentinels, inf, NaN)."""
        return [
            {"tensor": t, "sentinels": s.sentinels, "nonfinite": s.nonfinite}
            for t, s in self.stats.items()
            if s.sentinels or s.nonfinite
        ]

    def closing_notes(self, w: _Written, measured: Measured) -> None:
        """The data and the dims first, then what the user should know about the result."""
        notes, precision = self.notes, self.o.precision.upper()
        notes.insert(0, self.cdata.describe())
        if self.chosen:
            notes.insert(
                1,
                f"recipe {self.chosen.text}, from {self.chosen.source}, as the window chooses it; "
                "give --recipe to prepare the images otherwise",
            )
        notes[1:1] = self.dims_plan.notes()
        wide = self.wide()
        if wide:
            hold = "holds" if len(wide) == 1 else "hold"
            notes.append(
                f"{plural(len(wide), 'tensor')} {hold} values no {precision} range covers (attention-mask "
                "sentinels, inf or NaN): counted apart and left out of their ranges"
            )
        if not self.cdata.random and self.held.files and self.held.files[0] in self.cdata.files:
            notes.append("no samples beyond the calibration set: accuracy was measured on calibration samples")
        searched = w.searched
        if searched is not None and "met" in searched and not searched["met"]:
            notes.append(
                f"the budget {self.o.budget} was not met even with {plural(len(searched['keep']), 'node')} kept in "
                "float: the written model is mostly or wholly unquantized"
            )
        if not w.counts["nodes"]:
            notes.append(self._nothing_reduced())
        if self.cdata.skipped:
            notes.append(f"skipped: {'; '.join(self.cdata.skipped[:5])}")

    def _nothing_reduced(self) -> str:
        graph, precision = self.proto.graph, self.o.precision.upper()
        inside = sum(body_nodes(n) for n in graph.node)
        if inside > len(graph.node):
            return (
                f"nothing was made {precision}: {inside} of the model's {inside + len(graph.node)} nodes sit in "
                "If/Loop/Scan bodies, which this calibration does not enter yet (an export without control flow, "
                "or one branch per model, can be calibrated)"
            )
        if already := sorted({n.op_type for n in graph.node if n.op_type in ALREADY_QUANTIZED}):
            return (
                f"nothing was made {precision}: the model is already quantized ({', '.join(already)}); calibrate "
                "its FP32 export instead (TensorRT wants Q/DQ pairs, not integer ops)"
            )
        return f"nothing was made {precision} (every candidate node kept in float, or no range found)"

    def document(self, w: _Written, measured: Measured) -> dict[str, Any]:
        """The result as the command line's ``--json`` writes it."""
        from splitscope.engine.runtime.store import model_key

        o, cdata, counts = self.o, self.cdata, w.counts
        written = self.writer.path if self.writer.path.exists() else None
        doc: dict[str, Any] = {
            "model": str(self.model),
            "model_key": model_key(self.model),
            "dims": dict(self.dims or {}),
            "out": str(self.out),
            "method": o.method,
            "precision": o.precision,
            "samples": cdata.samples if cdata.random else len(cdata.files),
            "random_data": cdata.random,
            "seconds": round(time.perf_counter() - self.t0, 3),
            "stats_cached": self.cached,
            "stats_cache_matched": cdata.matched() if self.cached else None,
            "inputs": {k: r.text() for k, r in cdata.rules.items()} if cdata.random else {},
            "stats_seconds": round(self.stats_s, 3),
            "stats_folded_on": self.folded_on[0] if self.folded_on else ("cache" if self.cached else None),
            "stats_phases": self.phases,
            "backend": o.backend,
            "tensors": counts.get("activations", len(self.tensors)),
            "weights": counts["weights"],
            "weight_sources": weight_sources(self.sources, written, None if self.low else list(self.qplan.weights)),
            "weights_per_channel": counts.get("weights_per_channel", 0),
            "weights_per_tensor": counts.get("weights_per_tensor", 0),
            "accuracy_measured": measured.record(),
            "quantized_nodes": counts["nodes"],
            "excluded": w.excluded,
            "accuracy": measured.accuracy,
            "wide_range": self.wide(),
            "ranges": {t: round(v, 6) for t, v in w.ranges.items()},
            "notes": self.notes,
            "quantized": w.quantized,
        }
        if self.low:
            emulated = measured.how != "measured"
            doc.update({"casts": counts["casts"], "kept_reasons": self.cplan.reasons, "emulated": emulated})
        elif w.half is not None:
            doc["half"] = w.half
        if w.searched is not None:
            doc["search"] = w.searched
        if o.details:
            doc["histograms"] = self.histograms()
        return doc

    def histograms(self) -> dict[str, Any]:
        """Each tensor's histogram in 256 bins, with every method's threshold on it (the calibration view)."""
        o, hists = self.o, {}
        for t in self.tensors:
            st = self.stats.get(t)
            if st is None or not st.hist.size:
                continue
            counts = st.hist.reshape(256, -1).sum(axis=1) if st.hist.size % 256 == 0 else st.hist
            hists[t] = {
                "max": st.hist_max,
                "counts": counts.tolist(),
                "absmax": st.absmax,
                "sentinels": st.sentinels,
                "nonfinite": st.nonfinite,
                "thresholds": {m: round(amax(st, m, o.percentile, o.precision), 6) for m in METHODS},
            }
        return hists
