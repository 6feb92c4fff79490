"""The stakeholder report: one self-contained HTML file (styles and SVG figures inline, nothing fetched when
opened) and a paginated PDF of the same content (WeasyPrint renders that HTML with print styles: it is made
for paginated output from HTML and CSS, so the PDF cannot drift from the HTML; BSD-licensed).

:func:`report_data` gathers every figure into one JSON-ready document, each with how it was obtained;
:func:`render_html` fills the Jinja2 template (``resources/report.html.j2``) from it, so the HTML shows exactly
the document's figures; :func:`write_report` writes either form atomically. A profile, engine or calibration
file of another model is refused with one line naming the mismatch.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Generator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import CancelToken, JobEvent, Progress
from splitscope.engine.kernel.answers import parser_answers
from splitscope.engine.kernel.results import KernelDoc
from splitscope.engine.model import GraphModel, Status
from splitscope.engine.palette import colour_table
from splitscope.engine.plan.outcome import ScenarioOutcome
from splitscope.engine.plan.scenario import PLANS, Scenario, decision, evaluate, items, work_share
from splitscope.engine.present import figures
from splitscope.engine.present.inputs import check_same_model, load_doc
from splitscope.engine.runtime.results import ProfileDoc
from splitscope.engine.sweep.results import SweepDoc
from splitscope.engine.text import format_bytes as fmt_bytes

TITLE = "Splitscope report"


@dataclass(frozen=True, slots=True)
class ReportExtras:
    """What the report shows beside the analysis that the model does not hold: a generation profile's section
    (:func:`generation_section`), a sweep and the kernel workbench's results (each a kernel job's JSON:
    the "Custom work" section, and the parser's answers the planner counts)."""

    generation: dict[str, Any] | None = None
    sweep: SweepDoc | None = None
    kernels: tuple[dict[str, Any], ...] = ()


def generation_section(doc: dict[str, Any]) -> dict[str, Any]:
    """The report's generation section from a generation profile's JSON."""
    return {**doc["generation"], "backend": doc.get("backend", "")}


def report_data(
    gm: GraphModel,
    view: Any,
    profiles: list[dict[str, Any]] | None = None,
    engine: dict[str, Any] | None = None,
    calibration: dict[str, Any] | None = None,
    scenarios: list[Scenario] | None = None,
    chosen: str | None = None,
    extras: ReportExtras | None = None,
) -> dict[str, Any]:
    """Every figure of the report, with its source (JSON-ready)."""
    from splitscope.engine.report.stats import headline, split_summary

    profiles = profiles or []
    summary = split_summary(gm)
    its = items(gm)
    prof = next((p for p in profiles if p.get("backend") in ("tensorrt", "rtx")), profiles[0] if profiles else None)
    scen = [Scenario("today"), *(scenarios or [])]
    kernels = extras.kernels if extras else ()
    answers = parser_answers(KernelDoc.from_json(k) for k in kernels)
    typed = ProfileDoc.from_json(prof) if prof else None
    evaluated = [evaluate(gm, s, typed, its, answers) for s in scen]
    if chosen is not None and chosen not in {s.name for s in scen}:
        raise SplitscopeError(
            f"--scenario {chosen!r}: no scenario of that name is saved for this model "
            f"({', '.join(s.name for s in scen[1:]) or 'none saved yet'}); make it in the "
            "planner (View › Panels › Planner) first."
        )
    pick = next((e for e in evaluated if e.name == chosen), evaluated[0])  # none chosen: today
    share, share_caption = work_share(gm, typed)
    plugins = [n for n in gm.nodes if n.status is Status.PLUGIN]
    dele = summary.get("delegate", {})
    gpu = next((p.get("gpu") for p in profiles if p.get("gpu")), None)
    data: dict[str, Any] = {
        "title": TITLE,
        "model": gm.path.name if gm.path else "model",
        "model_path": str(gm.path or ""),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "producer": gm.producer,
        "input_shapes": gm.shapes_label() + ("; " + "; ".join(gm.dim_notes) if gm.dim_notes else ""),
        "parser": f"{gm.parser.name} {gm.parser.version}".strip(),
        "gpu": (gpu or {}).get("name")
        or (f"none: profiled with {profiles[0].get('backend')} on the CPU" if profiles else None),
        "tensorrt": _trt_version(gm, engine),
        "headline": headline(gm, summary),
        "build": gm.build,
        "kernels": [kernel_row(k) for k in kernels],
        "generation": extras.generation if extras else None,
        "sweep": sweep_section(extras.sweep, gm.path.name if gm.path else "") if extras and extras.sweep else None,
        "decision": decision(its, evaluated[0], pick),
        "numbers": {
            "delegated_flops_share": dele.get("flops_share"),
            "delegated_node_share": dele.get("node_share"),
            "work_share": share,
            "work_caption": share_caption,
            "nodes": len(gm.nodes),
            "plugin_nodes": len(plugins),
            "partitions": len(gm.partitions),
            "boundary_bytes": gm.boundary_bytes,
        },
        "scenarios": [e.to_json() for e in evaluated],
        "chosen": pick.name,
        "custom": [_custom_row(it, pick) for it in its],
        "partitions": [
            {
                "index": p.index,
                "nodes": len(p.nodes),
                "flops": p.flops,
                "boundary_bytes": p.boundary_bytes,
                "boundary_tensors": len(p.boundary_tensors),
            }
            for p in gm.partitions
        ],
        "figures": {"overview": figures.overview(view)},
        "sources": _sources(gm, prof, engine, calibration),
    }
    lat = [(e.name, e.latency) for e in evaluated if e.latency is not None]
    if lat:
        data["figures"]["scenarios"] = figures.bars(
            [{"name": name, "ms": r.high_ms, "low": r.low_ms, "high": r.high_ms} for name, r in lat],
            "ms",
            "estimated latency per inference (range)",
            "ms",
            "low",
            "high",
        )
    elif len(evaluated) > 1:  # nothing to compare with today alone
        data["figures"]["scenarios"] = figures.bars(
            [{"name": e.name, "kb": e.boundary_bytes / 1e3} for e in evaluated],
            "kb",
            "bytes crossing engine boundaries per inference",
            "kB",
        )
    if prof:
        data["time"] = _time(prof)
        data["figures"]["roofline"] = figures.roofline(prof)
        data["figures"]["time"] = figures.time_split(data["time"]["split"])
    data["commitment"] = _commitment(gm, profiles, engine)
    if calibration:
        data["calibration"] = _calibration(calibration)
    if engine:
        data["engine"] = _engine(engine)
    data["numbers"]["boundary"] = fmt_bytes(gm.boundary_bytes)
    for key in ("time", "calibration", "engine"):
        data.setdefault(key, None)
    data["figures"].setdefault("roofline", "")
    data["figures"].setdefault("scenarios", "")
    return data


def _trt_version(gm: GraphModel, engine: dict[str, Any] | None) -> str:
    if gm.parser.name in ("tensorrt", "tensorrt-rtx"):
        return f"{gm.parser.name} {gm.parser.version} (its ONNX parser decided the split)"
    return "none here: the split is the support table's prediction"


def _custom_row(it: Any, pick: ScenarioOutcome) -> dict[str, Any]:
    best = it.matches[0] if it.matches else None
    return {
        "key": it.key,
        "label": it.label,
        "kind": it.kind,
        "reason": it.reason,
        "remedy": it.remedy,
        "plan": PLANS[pick.plans.get(it.key, it.today)],
        "suggested": PLANS[it.suggested],
        "shipped": f"{best['plugin']} ({best['kind']})" if best else "",
        "flops": it.flops,
        "bytes": it.bytes,
    }


def _time(prof: dict[str, Any]) -> dict[str, Any]:
    from splitscope.engine.runtime.roofline import time_split

    v = prof.get("verdict") or {}
    colours = colour_table()["time_split"]
    split = [
        (label, ms, colours[k]) for k, (label, ms) in zip(("graph", "kernels", "copies"), time_split(prof), strict=True)
    ]
    top = sorted(prof.get("per_node", []), key=lambda r: -(r.get("ms") or 0))[:10]
    return {
        "backend": prof.get("backend"),
        "device": prof.get("device"),
        "latency_ms": prof.get("latency_ms"),
        "verdict": v.get("verdict"),
        "why": v.get("why"),
        "fix": v.get("fix"),
        "split": [(a, round(b, 4) if b is not None else None, c) for a, b, c in split],
        "verified": prof.get("verified", True),
        "copies_not_measured": (prof.get("copies") or {}).get("not_measured"),
        "top": [
            {
                "name": r["name"],
                "op_type": r["op_type"],
                "ms": r["ms"],
                "share": r.get("share"),
                "status": r["status"],
                "class": r.get("class"),
                "rank": f"{r['rank']}{'=' if r.get('tie') else ''}" if r.get("rank") else "",
                "spread": r.get("spread_ms"),
            }
            for r in top
        ],
        "ties": any(r.get("tie") for r in top),
        "node_cover": prof.get("node_cover"),
    }


def _commitment(gm: GraphModel, profiles: list[dict[str, Any]], engine: dict[str, Any] | None) -> dict[str, Any]:
    gpu = next((p.get("gpu") for p in profiles if p.get("gpu")), None) or {}
    ort = next((p for p in profiles if str(p.get("backend", "")).startswith("ort")), None)
    trt = next((p for p in profiles if p.get("backend") in ("tensorrt", "rtx")), None)
    return {
        "architecture": f"compute capability {gpu['compute_capability']} ({gpu.get('name')})"
        if gpu.get("compute_capability")
        else "the GPU it is built on (none profiled here)",
        "tensorrt": _trt_version(gm, engine),
        "ort_ms": ort["latency_ms"]["mean"] if ort else None,
        "ort_backend": ort.get("backend") if ort else None,
        "trt_ms": trt["latency_ms"]["mean"] if trt else None,
    }


def _task(task: dict[str, Any] | None) -> str:
    """The task metric's phrase, or why there is none."""
    from splitscope.engine.calib.task import text

    if task and task.get("kind") == "none":
        return f"none: {task.get('why', '')}"
    return text(task)


def _calibration(c: dict[str, Any]) -> dict[str, Any]:
    return {
        "precision": c.get("precision"),
        "method": c.get("method"),
        "samples": c.get("samples"),
        "random_data": c.get("random_data"),
        "quantized": len(c.get("quantized", [])),
        "excluded": len(c.get("excluded", [])),
        "accuracy": [
            {
                "output": o,
                **{k: a.get(k) for k in ("snr_db", "cosine", "max_abs", "top1_agreement")},
                "task": _task(a.get("task")),
            }
            for o, a in c.get("accuracy", {}).items()
        ],
        **(c.get("accuracy_measured") or {"how": "estimated" if c.get("emulated") else "measured"}),
        "search": {k: c["search"].get(k) for k in ("metric", "target", "met", "final")}
        if c.get("search") and "met" in c["search"]
        else None,
        "notes": c.get("notes", []),
    }


def _engine(e: dict[str, Any]) -> dict[str, Any]:
    layers = e.get("layers", [])
    top = sorted((r for r in layers if r.get("ms") is not None), key=lambda r: -r["ms"])[:10]
    precisions: dict[str, int] = {}
    for r in layers:
        precisions[r.get("precision") or "?"] = precisions.get(r.get("precision") or "?", 0) + 1
    return {
        "layers": len(layers),
        "layout": e.get("layout"),
        "total_ms": e.get("total_layer_ms"),
        "mapped_node_share": e.get("mapped_node_share"),
        "precisions": precisions,
        "top": [
            {"name": r["name"], "type": r["type"], "precision": r["precision"], "ms": r["ms"], "share": r["share"]}
            for r in top
        ],
        "lint": [
            {"kind": f["kind"], "advice": f["advice"], "layers": len(f["layers"]), "ms": f["ms"]}
            for f in e.get("lint", [])
        ],
    }


def _sources(
    gm: GraphModel, prof: dict[str, Any] | None, engine: dict[str, Any] | None, calibration: dict[str, Any] | None
) -> list[str]:
    from splitscope.engine.plan.catalog import source

    out = [
        f"The split: {gm.parser.name} {gm.parser.version}".strip()
        + (
            " (the real ONNX parser, asked about this model)"
            if gm.parser.name != "table"
            else " (TensorRT's published operator support table and static checks; no parser was run)"
        ),
        (
            f"FLOPs and bytes: counted at the input shapes in force, {gm.shapes_label()} (every tensor's shape "
            "inferred again at those values; a dim without a value leaves its costs unknown, never 1)"
            + (f"; unknown here: {', '.join(gm.missing_dims)} has no value" if gm.missing_dims else "")
        ),
        "Partitions: constant-only nodes are weights of their consumer, not partitions (the parser's raw "
        "subgraphs are kept apart in the JSON)"
        + (
            f"; verified by building with {gm.build.get('backend')} {gm.build.get('version')}"
            if gm.build is not None
            else "; parser only, not verified by building"
        ),
        "Partitions and boundary bytes: recomputed from the split for each scenario (the same partitioning "
        "as the analysis); bytes at the model's dtypes",
        "Shipped plugins: " + source(),
    ]
    if prof:
        dims = ", ".join(f"{k}={v}" for k, v in (prof.get("dims") or {}).items()) or "no symbolic dims"
        out.append(
            f"Latency and node times: measured with {prof.get('backend')} on {prof.get('device')}, "
            f"{prof.get('iterations')} iterations after {prof.get('warmup')} warm-up, {prof.get('started')}, "
            f"on {Path(str(prof.get('model', '?'))).name} ({dims})"
        )
        out.append(
            "Scenario latencies: estimates: a node brought into the engine between its speed-of-light bound "
            "and its measured time; host copies at the measured (or stated) copy rate; engine switches "
            "beyond the copies are not priced"
        )
    if engine:
        out.append(
            "Engine layers: trtexec's layer information and profile (or TensorRT-RTX's build log), read "
            "and mapped onto the model's nodes"
        )
    if calibration:
        out.append(
            "Accuracy: ONNX Runtime (CPU), the quantized model against FP32 on held-out samples"
            + (" (random data: plumbing only)" if calibration.get("random_data") else "")
        )
    return out


def render_html(data: dict[str, Any]) -> str:
    """The report as one HTML document (Jinja2, autoescaped; the SVG figures are ours and inserted as is)."""
    from importlib import resources

    import jinja2
    from markupsafe import Markup

    text = resources.files("splitscope.resources").joinpath("report.html.j2").read_text("utf-8")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["pct"] = lambda v: "—" if v is None else f"{v:.0%}"
    env.filters["ms"] = lambda v: "—" if v is None else f"{v:.4g} ms"
    env.filters["num"] = lambda v: "—" if v is None else f"{v:,}"
    env.filters["bytes"] = lambda v: "—" if v is None else fmt_bytes(int(v))
    env.filters["css"] = lambda v: Markup(  # a CSS string: no HTML entities in it
        "".join(c if c.isalnum() or c in " ._-:()[]+,/" else f"\\{ord(c):06x}" for c in str(v))
    )
    return env.from_string(text).render(
        d={**data, "palette": colour_table()}, svg=lambda k: Markup(data["figures"].get(k) or "")
    )


def write_report(data: dict[str, Any], out: str | os.PathLike[str]) -> Path:
    """Write the report to ``out`` (``.html`` or ``.pdf``), atomically."""
    from splitscope.engine.report.files import write_bytes_atomic, write_text_atomic

    out = Path(out)
    html = render_html(data)
    if out.suffix.lower() == ".html":
        return write_text_atomic(out, html)
    if out.suffix.lower() != ".pdf":
        raise SplitscopeError(f"--out {out.name}: write .html or .pdf.")
    if _PDF_IMPORT:  # two threads importing one package can see it half made (the import lock yields to avoid a
        _PDF_IMPORT[0].join()  # deadlock): the import begun beside the analysis is waited for
    try:
        import weasyprint
    except ImportError:
        raise SplitscopeError(
            "PDF reports need WeasyPrint, an optional extra: pip install 'splitscope[pdf]' (or write .html)."
        ) from None
    except OSError as e:  # the Pango library it needs is missing
        raise SplitscopeError(
            f"PDF needs the Pango library ({str(e).splitlines()[0][:100]}): install it "
            "(packaging/system-deps.sh), or write .html."
        ) from None
    pdf = weasyprint.HTML(string=html).write_pdf()  # bytes, with no target given
    assert pdf is not None
    return write_bytes_atomic(out, pdf)


def _import_pdf_beside() -> None:
    """Import the PDF library (a second of module code) on a thread of its own, while the analysis waits on its
    parser and shape processes; :func:`write_report` then finds it imported, or says it is missing."""
    import threading

    def load() -> None:
        with contextlib.suppress(Exception):
            import weasyprint  # noqa: F401

    t = threading.Thread(target=load, name="import-weasyprint", daemon=True)
    _PDF_IMPORT[:] = [t]
    t.start()


_PDF_IMPORT: list[Any] = []
"""The thread :func:`_import_pdf_beside` started, if any."""


def _checked_out(out: str | os.PathLike[str]) -> Path:
    out = Path(out)
    if out.suffix.lower() not in (".html", ".pdf"):
        raise SplitscopeError(f"--out {out.name}: write .html or .pdf.")
    if not out.parent.is_dir():
        raise SplitscopeError(f"--out {out}: the folder {out.parent} does not exist; choose another.")
    return out


def kernel_row(doc: dict[str, Any]) -> dict[str, Any]:
    """One kernel workbench result as the report's "Custom work" row: what was worked, how it was checked and
    timed, and the verdict (or why it did not run)."""
    k = doc.get("kernel") or {}
    answer = (doc.get("plugin") or {}).get("parser") or {}
    return {
        "nodes": doc.get("nodes", []),
        "op": doc.get("extract", {}).get("op", ""),
        "shapes": doc.get("shapes", ""),
        "delegated": doc.get("delegated", False),
        "reference": doc.get("reference", {}).get("how", "none"),
        "source": doc.get("source", {}).get("origin", ""),
        "parser": answer.get("how", "not asked"),
        "partitions": (
            f"{answer['partitions_before']} → {answer['partitions_after']}" if "partitions_before" in answer else ""
        ),
        "ran": bool(k.get("ran")),
        "gpu": k.get("gpu", ""),
        "ms": k.get("ms"),
        "host_ms": k.get("host_ms"),
        "default_ms": k.get("default_ms"),
        "sol_ms": k.get("sol_ms"),
        "max_abs_err": k.get("max_abs_err"),
        "max_ulp": k.get("max_ulp"),
        "beyond": k.get("beyond"),
        "verdict": k.get("verdict") or (f"not run: {k.get('error')}" if k.get("error") else "not run"),
    }


def make_report(
    model: str | os.PathLike[str] | None,
    out: str | os.PathLike[str],
    *,
    profiles: list[str] | None = None,
    engine: str | None = None,
    calibration: str | None = None,
    scenario: str | None = None,
    parser: str = "auto",
    dims: dict[str, int] | None = None,
    cancel: CancelToken | None = None,
    build: dict[str, Any] | None = None,
    kernels: list[str] | None = None,
    generation: str | None = None,
    sweep: str | None = None,
) -> Generator[JobEvent, None, dict[str, Any]]:
    """The report job: analyse, lay out the overview, gather the files given, write ``out``. ``build``: what a
    verifying build found (:mod:`splitscope.engine.runtime.verify`), applied to the analysis; ``kernels``: the
    JSON files of ``splitscope kernel`` (the "Custom work" section)."""
    from splitscope.engine.plan.store import load_scenarios
    from splitscope.engine.split.analyze import analyze

    cancel = cancel or CancelToken()
    out = _checked_out(out)  # before the analysis: a wrong name fails at once
    if out.suffix.lower() == ".pdf":
        _import_pdf_beside()
    gm = yield from analyze(model, parser=parser, dims=dims)
    cancel.raise_if_cancelled()
    if build is not None:
        from splitscope.engine.runtime.verify import apply_report

        apply_report(gm, build)
    docs = {
        "profile": [load_doc(p, "profile") for p in profiles or []],
        "engine": load_doc(engine, "engine") if engine else None,
        "calibration": load_doc(calibration, "calibration") if calibration else None,
    }
    for p, d in zip(profiles or [], docs["profile"], strict=True):
        check_same_model(gm, d, "profile", p)
    if engine:
        check_same_model(gm, docs["engine"], "engine", engine)  # type: ignore[arg-type]
    if calibration:
        check_same_model(gm, docs["calibration"], "calibration", calibration)  # type: ignore[arg-type]
    extras = ReportExtras()
    if generation:
        gdoc = load_doc(generation, "generation")
        if Path(str(gdoc.get("model", ""))).name != (gm.path.name if gm.path else ""):
            raise SplitscopeError(
                f"--generation {Path(generation).name} is of another model ({Path(str(gdoc.get('model'))).name})."
            )
        extras = replace(extras, generation=generation_section(gdoc))
    if sweep:
        sdoc = SweepDoc.from_json(load_doc(sweep, "sweep"))
        mine = gm.path.name if gm.path else ""
        if not any(Path(c.params.model).name == mine for c in sdoc.cells):
            raise SplitscopeError(f"--sweep {Path(sweep).name} has no cell of {mine}: it is a sweep of other models.")
        extras = replace(extras, sweep=sdoc)
    workbench = []
    for k in kernels or []:
        workbench.append(load_doc(k, "kernel"))
        check_same_model(gm, workbench[-1], "kernel", k)
    if workbench:
        extras = replace(extras, kernels=tuple(workbench))
    saved = load_scenarios(gm.path) if gm.path else []
    return (
        yield from report_job(
            gm, out, docs["profile"], docs["engine"], docs["calibration"], saved, scenario, cancel, extras
        )
    )


def report_job(
    gm: GraphModel,
    out: str | os.PathLike[str],
    profiles: list[dict[str, Any]] | None = None,
    engine: dict[str, Any] | None = None,
    calibration: dict[str, Any] | None = None,
    scenarios: list[Scenario] | None = None,
    chosen: str | None = None,
    cancel: CancelToken | None = None,
    extras: ReportExtras | None = None,
) -> Generator[JobEvent, None, dict[str, Any]]:
    """Lay out the overview of an analysed model and write the report of the documents given to ``out``
    (the window's File › Export Report…, with what it has open)."""
    from splitscope.engine.view.layout import prepare_view

    cancel = cancel or CancelToken()
    out = _checked_out(out)
    view = yield from prepare_view(gm, viewport=(1600, 1000), cancel=cancel)
    yield Progress("report", 0, 0, "Writing the report")
    data = report_data(gm, view, profiles, engine, calibration, scenarios, chosen, extras)
    cancel.raise_if_cancelled()
    write_report(data, out)
    data["out"] = str(out)
    data["bytes"] = out.stat().st_size
    return data


def sweep_section(doc: SweepDoc, model: str) -> dict[str, Any]:
    """The report's sweep: its cells of ``model`` (a file name) as the table's rows
    (:func:`splitscope.engine.sweep.summary.rows`), and how it ran."""
    from splitscope.engine.sweep.summary import rows

    table = [r for r in rows(doc) if Path(str(r["model"])).name == model]
    return {
        "rows": table,
        "runner": doc.runner,
        "notes": list(doc.notes),
        "done": sum(1 for r in table if r["status"] == "done"),
    }
