"""The calibration job: statistics in one pass (cached), ranges by method, the Q/DQ model written, and its
accuracy against the original on held-out samples."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from splitscope.engine.calib import casts, qdq
from splitscope.engine.calib.accuracy import labels_for, read_labels
from splitscope.engine.calib.collect import collect, load_stats, save_stats
from splitscope.engine.calib.data import IMAGE_SUFFIXES, CalibData, batches, open_data
from splitscope.engine.calib.emulation import emulate
from splitscope.engine.calib.measure import measure
from splitscope.engine.calib.methods import METHODS, amax
from splitscope.engine.calib.pipeline import model_recipe
from splitscope.engine.calib.search import qdq_builder
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.onnxio.weights import WeightSources, hoist
from splitscope.engine.onnxio.writer import ModelWriter, has_external_data
from splitscope.engine.runtime.inputs import input_specs
from splitscope.engine.runtime.ort import OrtBackend
from splitscope.engine.runtime.written import verify_written
from splitscope.engine.text import plural


def _load(model: Path, external: bool = True) -> onnx.ModelProto:
    """``model`` with its weights where calibration finds them: ``Constant`` nodes and constant chains made
    initializers (:func:`~splitscope.engine.onnxio.weights.hoist`)."""
    m = onnx.load(str(model), load_external_data=external)
    hoist(m)
    return m


def _body_nodes(n: onnx.NodeProto) -> int:
    """Nodes inside the bodies of ``n`` (nested ones too)."""
    total = 0
    for a in n.attribute:
        for g in [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs):
            total += len(g.node) + sum(_body_nodes(m) for m in g.node)
    return total


def _for_casts(proto: onnx.ModelProto, precision: str, notes: list[str]) -> tuple[onnx.ModelProto, bool]:
    """The model at an opset whose schemas allow ``precision`` on its ops (BF16 Conv, Gemm, pools need opset
    22; FP16 is allowed everywhere): converted when needed, or as it is with a note when the converter fails."""
    if precision != "bf16":
        return proto, False
    try:
        conv = qdq._at_least(proto, 22)
        return conv, conv is not proto
    except SplitscopeError as e:
        try:
            conv = qdq._at_least(proto, 13)
        except SplitscopeError:
            conv = proto
        notes.append(f"BF16 on fewer ops: {e} (Conv, Gemm and pooling allow BF16 from opset 22)")
        return conv, conv is not proto


def _qdq_with_half(
    model: Path,
    writer: ModelWriter,
    ranges: dict[str, float],
    qplan: qdq.QdqPlan,
    precision: str,
    half: set[str],
    half_precision: str,
    notes: list[str],
    dims: dict[str, int] | None = None,
) -> tuple[dict[str, int], bytes, dict[str, Any]]:
    """Write Q/DQ for the quantized nodes and casts for the nodes pinned to FP16/BF16; return the counts, the
    emulation to measure (the Q/DQ as written, the pinned nodes' tensors rounded) and the pins' record."""
    m, counts = qdq.apply(_load(model), ranges, qplan, precision)
    if half_precision == "bf16":
        m = qdq._at_least(m, 22)
    hplan = casts.plan(m, half_precision, default_keep=False, only=half)
    emulation = emulate(m, hplan, dims).SerializeToString()
    written, hc = casts.apply(m, hplan)
    _check_written(written, half_precision)
    writer.save(written)
    missed = sorted(half - set(hplan.low))
    if missed:
        notes.append(
            f"{plural(len(missed), 'node')} pinned to {half_precision.upper()} cannot run in it (their ONNX schema "
            f"does not allow it, or they compute nothing): left in FP32: {', '.join(missed[:5])}"
        )
    return (
        counts,
        emulation,
        {"precision": half_precision, "nodes": hplan.low, "casts": hc["casts"], "not_reduced": missed},
    )


def _check_written(m: onnx.ModelProto, precision: str) -> None:
    """Refuse to write a model ONNX's checker rejects (nothing is written then)."""
    if m.ByteSize() > 1_900_000_000:
        return  # the checker needs the file for a model over 2 GB; TensorRT's parser checks it on import
    try:
        onnx.checker.check_model(m, full_check=True)
    except Exception as e:  # noqa: BLE001 - the checker's ValidationError / InferenceError
        why = str(e).splitlines()[0][:160]
        raise SplitscopeError(
            f"The {precision.upper()} model would not be valid ONNX ({why}): nothing was "
            "written; keep the node it names in FP32 with --keep, and report it."
        ) from None


def _full_model(model: Path, converted: onnx.ModelProto | None) -> onnx.ModelProto:
    """The model with its weights loaded (``converted``'s graph when the opset was raised)."""
    if converted is None:
        return _load(model)
    from onnx.external_data_helper import load_external_data_for_model

    full = copy.deepcopy(converted)
    if any(i.data_location == onnx.TensorProto.EXTERNAL for i in full.graph.initializer):
        load_external_data_for_model(full, str(model.parent))
    return full


PRECISIONS = ("int8", "fp8", "fp16", "bf16")
ALREADY_QUANTIZED = frozenset(
    {
        "ConvInteger",
        "MatMulInteger",
        "DynamicQuantizeLinear",
        "DynamicQuantizeLSTM",
        "QLinearConv",
        "QLinearMatMul",
        "QLinearAdd",
        "QuantizeLinear",
        "DequantizeLinear",
    }
)
"""Ops of a model quantized already (ONNX Runtime's dynamic or static quantization, a Q/DQ export)."""


def _weight_sources(sources: WeightSources, written: Path | None, quantized: list[str] | None) -> dict[str, int]:
    """Where the weights that were made reduced came from (an initializer, a ``Constant`` node, a folded chain):
    the Q/DQ's weights, or the written FP16/BF16 model's reduced initializers."""
    if quantized is not None:
        return sources.counts(quantized)
    if written is None:
        return {}
    m = onnx.load(str(written), load_external_data=False)
    low = {onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}
    return sources.counts([t.name for t in m.graph.initializer if t.data_type in low])


def _heldout(cdata: CalibData, specs: Any, dims: dict[str, int] | None, samples: int, heldout: int) -> CalibData:
    """The held-out samples: other seeds of random data, or the files past the calibration set (the same for
    the search and for the result, so their figures agree)."""
    if cdata.random:
        return CalibData(specs, None, heldout, dict(dims or {}), seed=10_000, rules=cdata.rules)
    kinds = IMAGE_SUFFIXES if cdata.recipe is not None else (".npy", ".npz")
    rest = sorted(p for p in cdata.folder.iterdir() if p.suffix.lower() in kinds)[samples:]  # type: ignore[union-attr]
    return CalibData(
        specs, cdata.folder, heldout, dict(dims or {}), files=(rest or cdata.files)[:heldout], recipe=cdata.recipe
    )


def _sensitivity_and_search(
    model: Path,
    build: Any,
    nodes: list[str],
    precision: str,
    held: CalibData,
    dims: dict[str, int] | None,
    budget: str | None,
    backend: str,
    cancel: CancelToken,
    labels: list[int] | None,
) -> Generator[JobEvent, None, dict[str, Any]]:
    from splitscope.engine.calib.search import Evaluator, parse_budget, search, sensitivity

    target = parse_budget(budget) if budget else None
    if target is not None and target[0] == "top1" and labels is None:
        raise SplitscopeError(
            "--budget top1=… needs the held-out samples' classes: give --labels FILE "
            "(a line 'NAME LABEL' a sample file) with --data DIR."
        )
    feeds = list(batches(held))
    ref = OrtBackend(model, backend, exact_fp32=True).session()
    outs = [o.name for o in ref.get_outputs()]
    refs: dict[str, list[np.ndarray]] = {o: [] for o in outs}
    for f in feeds:
        for o, a in zip(outs, ref.run(outs, f), strict=True):
            refs[o].append(a)
    ev = Evaluator(build, feeds, refs, model, labels)
    base = ev.score(set())
    sens = yield from sensitivity(ev, nodes, cancel, base)
    doc: dict[str, Any] = {"all_quantized": base, "sensitivity": sens}
    if target is not None:
        doc.update((yield from search(ev, sens, target[0], target[1], base, cancel)))
        doc["kept_cost"] = kept_cost(model, doc.get("keep", []), precision, dims)
    doc["evaluations"] = ev.runs
    return doc


def kept_cost(model: Path, keep: list[str], precision: str, dims: dict[str, int] | None) -> dict[str, Any]:
    """What keeping ``keep`` in FP32 costs at the GPU's peaks: their FLOPs at FP32 against the reduced type
    (this GPU's own peaks, or an H200's where there is none)."""
    from splitscope.engine.runtime.device import FLOP_PER_CLK_PER_SM, NoGpu, gpu_info
    from splitscope.engine.split.analyze import analyze_model

    try:
        g = gpu_info()
        peaks, gpu = g.peak_flops, g.name
    except NoGpu:
        per_sm = FLOP_PER_CLK_PER_SM[(9, 0)]
        peaks = {k: float(v) * 132 * 1980e6 for k, v in per_sm.items()}
        gpu = "an H200 (no GPU here: its peaks from the whitepaper table)"
    gm = analyze_model(model, parser="table", dims=dims)
    flops = sum(n.flops or 0 for n in gm.nodes if n.name in set(keep))
    low = peaks.get(precision) or peaks.get("int8", 0.0)
    fp32 = peaks.get("tf32") or peaks.get("fp32", 0.0)
    return {
        "flops": flops,
        "gpu": gpu,
        "fp32_ms_at_peak": flops / fp32 * 1000 if fp32 else None,
        f"{precision}_ms_at_peak": flops / low * 1000 if low else None,
        "extra_ms_at_peak": flops / fp32 * 1000 - flops / low * 1000 if fp32 and low else None,
    }


def calibrate(model: str | Path, out: str | Path, **kw: Any) -> Generator[JobEvent, None, dict[str, Any]]:
    """Calibrate ``model`` and write the quantized model to ``out`` (see :func:`_calibrate` for the options).

    The model and its external data (kept external when the source has it) are staged beside ``out`` and
    moved onto it only when the whole run succeeded (accuracy included): a run that fails or is cancelled
    midway leaves ``out`` (and its sidecar) as they were."""
    out = Path(out)
    if not out.parent.is_dir():
        raise SplitscopeError(f"--out {out}: the folder {out.parent} does not exist; create it or write elsewhere.")
    with ModelWriter(out, external=has_external_data(model) or None) as writer:
        doc = yield from _calibrate(model, out, writer=writer, **kw)
        if writer.path.exists():
            yield Progress("check", 0, 0, f"Running {out.name} in ONNX Runtime (CPU) and TensorRT-RTX's parser")
            checks = verify_written(writer.path, kw.get("dims"), source=model, cancel=kw.get("cancel"))
            doc["written_checks"] = checks.notes
            doc["written_runs"] = {"ort_cpu": checks.ort, "tensorrt_rtx": checks.rtx}
            if checks.ort not in ("runs", "sizes"):
                doc["notes"].append(checks.notes[0])
            writer.commit()
    return doc


def _calibrate(
    model: str | Path,
    out: str | Path,
    *,
    writer: ModelWriter,
    data: str = "random",
    method: str = "entropy",
    precision: str = "int8",
    samples: int = 32,
    keep: list[str] | None = None,
    dims: dict[str, int] | None = None,
    percentile: float = 99.99,
    heldout: int = 8,
    backend: str = "ort-cpu",
    cancel: CancelToken | None = None,
    details: bool = False,
    budget: str | None = None,
    sensitivity: bool = False,
    recipe: str | None = None,
    half: list[str] | None = None,
    half_precision: str = "fp16",
    labels: str | None = None,
    metric: str = "auto",
) -> Generator[JobEvent, None, dict[str, Any]]:
    """Calibrate ``model`` and write the Q/DQ model to ``out``; returns the result document (with ``details``:
    each tensor's histogram, 256 bins, and every method's threshold on it, for the calibration view).
    ``half``: in an INT8/FP8 run, nodes pinned to ``half_precision`` (FP16 or BF16): left out of the Q/DQ and
    given casts instead, so one model mixes INT8, FP16 and FP32 as TensorRT 11's strong typing runs it."""
    cancel = cancel or CancelToken()
    t0 = time.perf_counter()
    model, out = Path(model), Path(out)
    from splitscope.engine.runtime.ort import check_backend

    check_backend(backend)
    if method not in METHODS:
        raise SplitscopeError(f"--method {method}: use one of {', '.join(METHODS)}.")
    if precision not in PRECISIONS:
        raise SplitscopeError(f"--precision {precision}: use one of {', '.join(PRECISIONS)}.")
    if samples < 1:
        raise SplitscopeError("--samples must be 1 or more.")
    from splitscope.engine.calib.task import KINDS

    if metric not in KINDS:
        raise SplitscopeError(f"--metric {metric}: use one of {', '.join(KINDS)}.")
    if out.resolve() == model.resolve():
        raise SplitscopeError("--out is the model itself: write the quantized copy somewhere else.")
    yield Progress("calibrate", 0, 0, "Reading the model")
    from splitscope.engine.onnxio.loader import load_model

    load_model(model)  # a missing, truncated or corrupt model (or its external data) said in one line, as elsewhere
    proto = source = onnx.load(str(model), load_external_data=False)
    sources = hoist(proto)  # weights in Constant nodes and constant chains are weights too
    specs = input_specs(proto)
    from splitscope.engine.onnxio.concrete import classify_dims

    plan = classify_dims(proto, dims)  # batch-like dims at 1 and the model's own hints (imgsz), said in the notes
    dims = plan.values
    if plan.missing and data == "random":
        raise SplitscopeError(
            f"{model.name}: no value for {', '.join(plan.missing)}, which random samples need: give {plan.example()}."
        )
    chosen = None
    if recipe is None and data != "random" and Path(data).is_dir():
        meta = {m.key: m.value for m in proto.metadata_props}
        shape = specs[0].dims if len(specs) == 1 else []
        found = model_recipe(model, meta, shape)
        if any(f.suffix.lower() in IMAGE_SUFFIXES for f in Path(data).iterdir()):
            recipe, chosen = found.text, found
    cdata = open_data(data, specs, samples, dims, recipe=recipe)
    if cdata.random:
        from splitscope.engine.runtime.feeds import input_rules

        cdata.rules = input_rules(proto)
    if half_precision not in casts.LOW:
        raise SplitscopeError(f"half precision {half_precision}: use fp16 or bf16.")
    node_labels = {n.name for n in proto.graph.node} | {
        n.output[0] for n in proto.graph.node if not n.name and n.output
    }
    unknown = sorted((set(keep or []) | set(half or [])) - node_labels)
    if unknown:
        raise SplitscopeError(
            f"--keep {unknown[0]!r}: no node of that name in the model (names are shown in the "
            "inspector and by 'splitscope analyze --json')."
        )
    low = precision in casts.LOW
    force: set[str] = set()
    notes: list[str] = []
    held = _heldout(cdata, specs, dims, samples, heldout)
    held_labels = None
    if labels:
        if cdata.random:
            raise SplitscopeError("--labels goes with --data DIR (random samples have no classes).")
        held_labels = labels_for(held.files, read_labels(labels))
        if held_labels is None:
            notes.append(
                f"--labels {Path(labels).name} names no class for some held-out files (by name or stem): no task metric"
            )
    if low:
        proto, converted = _for_casts(proto, precision, notes)
        types = casts.infer_types(proto)
        force = set(half or [])  # with --precision fp16/bf16, pins to it override the default keeps and the data
        cplan = casts.plan(proto, precision, set(keep or []), types=types, force=force)
        outputs = {n.name or n.output[0]: list(n.output) for n in proto.graph.node}
        tensors = [t for lbl in cplan.low for t in outputs.get(lbl, [])] if precision == "fp16" else []
    else:
        qplan = qdq.plan(proto, set(keep or []) | set(half or []))
        tensors = qplan.activations
    from splitscope.engine.paths import cache_dir
    from splitscope.engine.runtime.store import model_key

    cache = cache_dir() / "calib" / f"{model_key(model)}-{cdata.key()}.npz"
    stats = load_stats(cache) or {}
    cached = bool(tensors) and set(tensors) <= set(stats)
    stats_s = 0.0
    folded_on: list[str] = []
    phases: dict[str, float] = {}
    if tensors and not cached:
        c0 = time.perf_counter()
        fresh = yield from collect(model, tensors, cdata, backend, cancel, folded_on, proto=source, phases=phases)
        stats_s = time.perf_counter() - c0
        stats = {**stats, **fresh}
        save_stats(stats, cache)
    cancel.raise_if_cancelled()
    searched = None
    half_doc: dict[str, Any] | None = None
    if low:
        absmax = {t: stats[t].absmax for t in tensors if t in stats}
        full = _full_model(model, proto if converted else None)
        original = _load(model) if converted else full
        cplan = casts.plan(proto, precision, set(keep or []), absmax=absmax, types=types, force=force)

        def emulation(p: casts.CastPlan) -> onnx.ModelProto:
            """The emulation runs the model at its own opset (ONNX Runtime may lack kernels of the raised one,
            such as RoiAlign-22): the same nodes, their positions read from the schema there."""
            if not converted:
                return emulate(full, p, dims)
            there = casts.plan(original, "fp16", default_keep=False, only=set(p.low))
            there.precision = p.precision
            return emulate(original, there, dims)

        def build(more: set[str]) -> onnx.ModelProto:
            return emulation(
                casts.plan(full, precision, set(keep or []) | more, absmax=absmax, types=types, force=force - more)
            )

        if budget or sensitivity:
            searched = yield from _sensitivity_and_search(
                model, build, cplan.compute(), precision, held, dims, budget, backend, cancel, held_labels
            )
            keep = sorted(set(keep or []) | set(searched.get("keep", [])))
            cplan = casts.plan(proto, precision, set(keep), absmax=absmax, types=types)
        yield Progress("write", 0, 0, f"Writing {out.name}")
        candidate: bytes | Path = writer.path
        written, counts = casts.apply(copy.deepcopy(full), cplan)
        _check_written(written, precision)
        writer.save(written)
        del written
        ranges: dict[str, float] = {}
        excluded, quantized = cplan.excluded, cplan.low
        notes.append(f"{precision.upper()} needs no ranges (--method is not used)")
        if force - set(cplan.low):
            notes.append(
                f"pinned to {precision.upper()} but left in FP32 (their ONNX schema does not allow it, or "
                f"their types are unknown): {', '.join(sorted(force - set(cplan.low))[:5])}"
            )
        if precision == "fp16":
            over = [lbl for lbl, r in cplan.reasons.items() if "calibration data" in r]
            if over:
                outputs = "its output exceeds" if len(over) == 1 else "their outputs exceed"
                notes.append(
                    f"{plural(len(over), 'node')} kept in FP32 because {outputs} FP16's safe range on the "
                    "calibration data"
                )
    else:
        ranges = {t: amax(stats[t], method, percentile, precision) for t in qplan.activations if t in stats}
        if budget or sensitivity:
            build_q = qdq_builder(_load(model), ranges, precision)
            searched = yield from _sensitivity_and_search(
                model, build_q, list(qplan.nodes), precision, held, dims, budget, backend, cancel, held_labels
            )
            keep = sorted(set(keep or []) | set(searched.get("keep", [])))
            qplan = qdq.plan(_load(model, external=False), set(keep) | set(half or []))
        yield Progress("write", 0, 0, f"Writing {out.name}")
        if half:
            counts, candidate, half_doc = _qdq_with_half(
                model, writer, ranges, qplan, precision, set(half), half_precision, notes, dims
            )
        else:
            counts = qdq.write(_load(model), writer, ranges, qplan, precision)
            candidate, half_doc = writer.path, None
        excluded, quantized = [x for x in qplan.excluded if x not in set(half or [])], qplan.nodes
    qplan_weights = None if low else list(qplan.weights)
    # Accuracy on held-out samples (other seeds, or the files past the calibration set), of the model as written.
    yield Progress("accuracy", 0, heldout, f"Running {out.name} against the FP32 model")
    fallback: Callable[[], bytes] | None = None
    if low:
        written_plan = cplan

        def fallback_low() -> bytes:
            return emulation(written_plan).SerializeToString()

        fallback = fallback_low
    elif isinstance(candidate, bytes):
        emulated = candidate

        def fallback_emulated() -> bytes:
            return emulated

        fallback = fallback_emulated

    measured = yield from measure(
        model, writer.path, held, backend, metric, cancel, held_labels, emulation=fallback, count=heldout
    )
    accuracy = measured.accuracy
    if searched is not None and searched.get("final") and accuracy and measured.how == "measured":
        # The search emulates for speed; its pick is the model just measured: say how far the two are apart.
        worst = {
            "snr_db": min(a["snr_db"] for a in accuracy.values()),
            "cosine": min(a["cosine"] for a in accuracy.values()),
        }
        searched["final_measured"] = worst
        emulated = searched["final"].get("snr_db")
        if emulated is not None:
            notes.append(
                f"the search's pick: {emulated:.1f} dB as the search emulated it, {worst['snr_db']:.1f} dB as written "
                "and run (the figures above)"
            )
    if measured.how == "estimated":
        notes.append(
            f"accuracy is ESTIMATED, not measured: {measured.why}; the {precision.upper()} tensors were rounded and "
            "the arithmetic done in FP32 (run the written model where it has kernels to measure it)"
        )
    wide = [
        {"tensor": t, "sentinels": s.sentinels, "nonfinite": s.nonfinite}
        for t, s in stats.items()
        if s.sentinels or s.nonfinite
    ]
    notes.insert(0, cdata.describe())
    if chosen:
        notes.insert(
            1,
            f"recipe {chosen.text}, from {chosen.source}, as the window chooses it; "
            "give --recipe to prepare the images otherwise",
        )
    notes[1:1] = plan.notes()
    if wide:
        hold = "holds" if len(wide) == 1 else "hold"
        notes.append(
            f"{plural(len(wide), 'tensor')} {hold} values no {precision.upper()} range covers (attention-mask "
            "sentinels, inf or NaN): counted apart and left out of their ranges"
        )
    if not cdata.random and held.files and held.files[0] in cdata.files:
        notes.append("no samples beyond the calibration set: accuracy was measured on calibration samples")
    if searched is not None and "met" in searched and not searched["met"]:
        notes.append(
            f"the budget {budget} was not met even with {plural(len(searched['keep']), 'node')} kept in float: "
            "the written model is mostly or wholly unquantized"
        )
    if not counts["nodes"]:
        inside = sum(_body_nodes(n) for n in proto.graph.node)
        if inside > len(proto.graph.node):
            notes.append(
                f"nothing was made {precision.upper()}: {inside} of the model's "
                f"{inside + len(proto.graph.node)} nodes sit in If/Loop/Scan bodies, which this calibration does "
                "not enter yet (an export without control flow, or one branch per model, can be calibrated)"
            )
        elif already := sorted({n.op_type for n in proto.graph.node if n.op_type in ALREADY_QUANTIZED}):
            notes.append(
                f"nothing was made {precision.upper()}: the model is already quantized ({', '.join(already)}); "
                "calibrate its FP32 export instead (TensorRT wants Q/DQ pairs, not integer ops)"
            )
        else:
            notes.append(
                f"nothing was made {precision.upper()} (every candidate node kept in float, or no range found)"
            )
    if cdata.skipped:
        notes.append(f"skipped: {'; '.join(cdata.skipped[:5])}")
    doc: dict[str, Any] = {
        "model": str(model),
        "model_key": model_key(model),
        "dims": dict(dims or {}),
        "out": str(out),
        "method": method,
        "precision": precision,
        "samples": cdata.samples if cdata.random else len(cdata.files),
        "random_data": cdata.random,
        "seconds": round(time.perf_counter() - t0, 3),
        "stats_cached": cached,
        "stats_cache_matched": cdata.matched() if cached else None,
        "inputs": {k: r.text() for k, r in cdata.rules.items()} if cdata.random else {},
        "stats_seconds": round(stats_s, 3),
        "stats_folded_on": folded_on[0] if folded_on else ("cache" if cached else None),
        "stats_phases": phases,
        "backend": backend,
        "tensors": counts.get("activations", len(tensors)),
        "weights": counts["weights"],
        "weight_sources": _weight_sources(sources, writer.path if writer.path.exists() else None, qplan_weights),
        "weights_per_channel": counts.get("weights_per_channel", 0),
        "weights_per_tensor": counts.get("weights_per_tensor", 0),
        "accuracy_measured": measured.record(),
        "quantized_nodes": counts["nodes"],
        "excluded": excluded,
        "accuracy": accuracy,
        "wide_range": wide,
        "ranges": {t: round(v, 6) for t, v in ranges.items()},
        "notes": notes,
        "quantized": quantized,
    }
    if low:
        doc.update({"casts": counts["casts"], "kept_reasons": cplan.reasons, "emulated": measured.how != "measured"})
    elif half_doc is not None:
        doc["half"] = half_doc
    if searched is not None:
        doc["search"] = searched
    if details:
        hists = {}
        for t in tensors:
            st = stats.get(t)
            if st is None or not st.hist.size:
                continue
            counts = st.hist.reshape(256, -1).sum(axis=1) if st.hist.size % 256 == 0 else st.hist
            hists[t] = {
                "max": st.hist_max,
                "counts": counts.tolist(),
                "absmax": st.absmax,
                "sentinels": st.sentinels,
                "nonfinite": st.nonfinite,
                "thresholds": {m: round(amax(st, m, percentile, precision), 6) for m in METHODS},
            }
        doc["histograms"] = hists
    return doc
