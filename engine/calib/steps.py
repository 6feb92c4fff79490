"""The calibration job's steps apart from the run itself: the model loaded as calibration reads it, the opset a
reduced precision needs, the written model checked, Q/DQ beside FP16/BF16 pins, the held-out samples, the
sensitivity and budget search, and what keeping nodes in float costs."""

from __future__ import annotations

import copy
from collections.abc import Generator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from splitscope.engine.calib import casts, qdq
from splitscope.engine.calib.data import IMAGE_SUFFIXES, CalibData, batches
from splitscope.engine.calib.emulation import emulate
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent
from splitscope.engine.onnxio.weights import WeightSources, hoist
from splitscope.engine.onnxio.writer import ModelWriter
from splitscope.engine.runtime.runner import open_ort
from splitscope.engine.text import plural


def load_hoisted(model: Path, external: bool = True) -> onnx.ModelProto:
    """``model`` with its weights where calibration finds them: ``Constant`` nodes and constant chains made
    initializers (:func:`~splitscope.engine.onnxio.weights.hoist`)."""
    m = onnx.load(str(model), load_external_data=external)
    hoist(m)
    return m


def body_nodes(n: onnx.NodeProto) -> int:
    """Nodes inside the bodies of ``n`` (nested ones too)."""
    total = 0
    for a in n.attribute:
        for g in [a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs):
            total += len(g.node) + sum(body_nodes(m) for m in g.node)
    return total


def for_casts(proto: onnx.ModelProto, precision: str, notes: list[str]) -> tuple[onnx.ModelProto, bool]:
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


def qdq_with_half(
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
    m, counts = qdq.apply(load_hoisted(model), ranges, qplan, precision)
    if half_precision == "bf16":
        m = qdq._at_least(m, 22)
    hplan = casts.plan(m, half_precision, default_keep=False, only=half)
    emulation = emulate(m, hplan, dims).SerializeToString()
    written, hc = casts.apply(m, hplan)
    check_written(written, half_precision)
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


def check_written(m: onnx.ModelProto, precision: str) -> None:
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


def full_model(model: Path, converted: onnx.ModelProto | None) -> onnx.ModelProto:
    """The model with its weights loaded (``converted``'s graph when the opset was raised)."""
    if converted is None:
        return load_hoisted(model)
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


def weight_sources(sources: WeightSources, written: Path | None, quantized: list[str] | None) -> dict[str, int]:
    """Where the weights that were made reduced came from (an initializer, a ``Constant`` node, a folded chain):
    the Q/DQ's weights, or the written FP16/BF16 model's reduced initializers."""
    if quantized is not None:
        return sources.counts(quantized)
    if written is None:
        return {}
    m = onnx.load(str(written), load_external_data=False)
    low = {onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}
    return sources.counts([t.name for t in m.graph.initializer if t.data_type in low])


def heldout_data(cdata: CalibData, specs: Any, dims: dict[str, int] | None, samples: int, heldout: int) -> CalibData:
    """The held-out samples: other seeds of random data, or the files past the calibration set (the same for
    the search and for the result, so their figures agree)."""
    if cdata.random:
        return CalibData(specs, None, heldout, dict(dims or {}), seed=10_000, rules=cdata.rules)
    kinds = IMAGE_SUFFIXES if cdata.recipe is not None else (".npy", ".npz")
    rest = sorted(p for p in cdata.folder.iterdir() if p.suffix.lower() in kinds)[samples:]  # type: ignore[union-attr]
    return CalibData(
        specs, cdata.folder, heldout, dict(dims or {}), files=(rest or cdata.files)[:heldout], recipe=cdata.recipe
    )


def sensitivity_and_search(
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
    ref = open_ort(model, backend, "The precision search", exact_fp32=True)
    try:
        yield from ref.open()
        outs = [o.name for o in ref.outputs()]
        refs: dict[str, list[np.ndarray]] = {o: [] for o in outs}
        for f in feeds:
            for o, a in zip(outs, ref.infer(f, outs, on_host=True), strict=True):
                refs[o].append(a)
    finally:
        ref.close()
    ev = Evaluator(build, feeds, refs, model, labels, backend)
    try:
        base = ev.score(set())
        sens = yield from sensitivity(ev, nodes, cancel, base)
        doc: dict[str, Any] = {"all_quantized": base, "sensitivity": sens}
        if target is not None:
            doc.update((yield from search(ev, sens, target[0], target[1], base, cancel)))
            doc["kept_cost"] = kept_cost(model, doc.get("keep", []), precision, dims)
    finally:
        ev.close()
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
