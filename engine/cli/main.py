"""``splitscope``: the headless command line over the same engine as the app.

``splitscope analyze [MODEL] [--json PATH] [--parser auto|tensorrt|rtx|table]``
prints a short summary and writes the JSON document of :mod:`splitscope.engine.report`;
``splitscope optimize`` runs an ONNX optimizer on a copy; ``splitscope profile`` times the model
(:mod:`splitscope.engine.runtime.profile`).
Exit status: 0 success, 2 bad input (one line on stderr, no traceback),
130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from splitscope.engine.cli.analyze import (
    _cmd_analyze,
    _dims,
    _write_json,
    add_dims,
    add_output,
    add_parser_choice,
    progress_bar,
)
from splitscope.engine.cli.remote import remote_calibrate, remote_profile
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.remote.target import TARGET_HELP, target_of
from splitscope.engine.text import plural


def _cmd_optimize(args: argparse.Namespace) -> int:
    import json

    from splitscope.engine import api
    from splitscope.engine.report.files import write_text_atomic
    from splitscope.engine.text import format_bytes

    with progress_bar() as bar:
        res = api.optimize(args.model, args.out, parser=args.parser, dims=_dims(args.dim), progress=bar)
    if not args.quiet:
        b, a = res.before, res.after
        print(f"{res.source.name} -> {res.output} ({res.optimizer}, {res.optimizer_seconds:.2f} s)")
        print(f"  {'':16}{'before':>12}{'after':>12}")
        for label, x, y in (
            ("nodes", b.nodes, a.nodes),
            ("plugin nodes", b.plugin, a.plugin),
            ("partitions", b.partitions, a.partitions),
        ):
            print(f"  {label:16}{x:>12,}{y:>12,}")
        print(f"  {'boundary bytes':16}{format_bytes(b.boundary_bytes):>12}{format_bytes(a.boundary_bytes):>12}")
        if res.compared:
            print(
                f"  outputs: {res.outputs} compared with ONNX Runtime on seeded inputs, max abs difference "
                f"{res.max_abs_diff:.3g}, max relative {res.max_rel_diff:.3g}"
            )
        for note in res.notes:
            print(f"  note: {note}")
    if args.json:
        write_text_atomic(args.json, json.dumps(res.to_json(), indent=1))
    return 0


def _cmd_profile(args: argparse.Namespace) -> int:
    from splitscope.engine import api
    from splitscope.engine.runtime.ort import check_backend
    from splitscope.engine.runtime.profile import UNVERIFIED

    if args.iterations < 1 or args.warmup < 0:
        raise SplitscopeError("--iterations must be 1 or more and --warmup 0 or more.")
    check_backend(args.backend)
    if args.generate is not None:
        if args.generate < 1:
            raise SplitscopeError("--generate takes the number of decode steps: 1 or more (e.g. --generate 64).")
        from splitscope.engine.cli.generate import profile_generation

        return profile_generation(args)  # before the analysis: say at once that the backend cannot run here
    target = target_of(args)
    if target is not None:
        j = remote_profile(args, target)
        where = f"{j.get('model', args.model)} on {target.label}"
    else:
        with progress_bar() as bar:
            res = api.profile(
                args.model,
                backend=args.backend,
                iterations=args.iterations,
                warmup=args.warmup,
                profiled=args.profiled,
                dims=_dims(args.dim),
                inputs=args.input,
                parser=args.parser,
                custom_ops=args.custom_op_library,
                progress=bar,
            )
        j = res.to_json()
        where = res.model
    if not args.quiet:
        lat, v = j["latency_ms"], j["verdict"]
        print(
            f"{where}: {args.backend} on {j['device']}, {plural(args.iterations, 'iteration')} "
            f"after {args.warmup} warm-up"
        )
        print(
            f"  latency ms: mean {lat['mean']:.3f}  p50 {lat['p50']:.3f}  p90 {lat['p90']:.3f}  "
            f"p99 {lat['p99']:.3f}  min {lat['min']:.3f}  max {lat['max']:.3f}  std {lat['std']:.3f}"
        )
        print(
            f"  throughput: {j['throughput']['inferences_per_s']:.1f} inferences/s"
            + (f", {j['throughput']['items_per_s']:.1f} items/s" if "items_per_s" in j["throughput"] else "")
        )
        for row in j["per_node"][:8]:  # the roofline class needs the GPU's peaks: shown where known
            cls = row["class"] if row["class"] != "unknown" else ""
            rank = f"{row.get('rank', '')}{'=' if row.get('tie') else ''}"
            lo, hi = row.get("spread_ms") or (row["ms"], row["ms"])
            print(
                f"  {rank:>4} {row['ms']:9.4f} ms ({lo:.4f}-{hi:.4f}) {row['share']:6.1%}  {row['op_type']:<18} "
                f"{row['name'][:60]}  {cls}".rstrip()
            )
        if any(row.get("tie") for row in j["per_node"][:8]):
            print("  (n= : tied: their times across the profiled sessions overlap, so their order is not a finding)")
        sc = j["split_cost"]
        if sc["plugin_nodes"] and sc["boundary_copy_ms"] is not None:
            print(
                f"  the custom part: {sc['plugin_ms']:.3f} ms in plugin nodes + {sc['boundary_copy_ms']:.3f} ms of "
                f"boundary copies = {sc['share_of_end_to_end']:.1%} of end to end"
            )
        elif sc["plugin_nodes"]:
            print(
                f"  the custom part: {sc['plugin_ms']:.3f} ms in plugin nodes; boundary copies not measured "
                f"({sc.get('not_measured', 'no GPU')})"
            )
        if not j.get("verified", True):
            print(f"  ({args.backend}: {UNVERIFIED}; its figures are from code tested against a fake engine)")
        print(f"  verdict: {v['verdict']}: {v['why']}")
        print(f"  fix: {v['fix']}")
        for note in j["notes"]:
            print(f"  note: {note}")
    _write_json(args, j)
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from splitscope.engine import api
    from splitscope.engine.calib.accuracy import accuracy_line
    from splitscope.engine.calib.results import weights_text
    from splitscope.engine.sample import SAMPLE_MODEL

    target = target_of(args)
    if target is not None:
        res = remote_calibrate(args, target)
    else:
        with progress_bar() as bar:
            res = api.calibrate(
                args.model or SAMPLE_MODEL,
                args.out,
                data=args.data,
                method=args.method,
                precision=args.precision,
                samples=args.samples,
                keep=args.keep,
                dims=_dims(args.dim),
                percentile=args.percentile,
                budget=args.budget,
                sensitivity=args.sensitivity,
                backend=args.backend,
                recipe=args.recipe,
                half=args.fp16 or args.bf16,
                half_precision="bf16" if args.bf16 else "fp16",
                labels=args.labels,
                metric=args.metric,
                progress=bar,
            ).to_json()
    if not args.quiet:
        cached = (
            f" (statistics from the cache, which matched {res['stats_cache_matched']})" if res["stats_cached"] else ""
        )
        if "casts" in res:
            low = res["precision"].upper()
            print(
                f"{res['model']} -> {res['out']}: {plural(res['quantized_nodes'], 'node')} in {low}, "
                f"{plural(res['casts'], 'Cast')}, {weights_text(res)} stored in {low}, "
                f"{len(res['excluded'])} kept in FP32, {res['seconds']:.2f} s" + cached
            )
        else:
            print(
                f"{res['model']} -> {res['out']}: {res['precision']} Q/DQ by {res['method']} on {res['samples']} "
                f"samples, {res['tensors']} activations and {weights_text(res)}, {res['seconds']:.2f} s" + cached
            )
        how = res.get("accuracy_measured") or {}
        if how:
            runtime = how.get("runtime", "ONNX Runtime")
            if how.get("how") == "measured":
                print(f"  accuracy measured: {res['out']} run in {runtime} against FP32")
            else:
                print(f"  accuracy ESTIMATED: an emulation of {res['out']} run in {runtime} against FP32 (see note)")
        for name, a in res["accuracy"].items():
            print(f"  {name}: {accuracy_line(a)}")
        if "search" in res:
            s = res["search"]
            worst = sorted(s["sensitivity"], key=lambda r: -r["gain_db"])[:5]
            print("  most sensitive: " + ", ".join(f"{r['node']} (+{r['gain_db']:.1f} dB in float)" for r in worst))
            if "met" in s:
                print(
                    f"  search: {plural(len(s['keep']), 'node')} kept in float, {s['metric']} "
                    f"{s['final'][s['metric']]:.4g} "
                    f"({'meets' if s['met'] else 'misses'} {s['target']:g})"
                )
                c = s.get("kept_cost", {})
                if c.get("extra_ms_at_peak") is not None:
                    extra = c["extra_ms_at_peak"]
                    t = f"{extra * 1000:.3f} µs" if extra < 0.01 else f"{extra:.4f} ms"
                    print(
                        f"  the kept nodes: {c['flops']:,} FLOPs, {t} more per inference at the peaks of "
                        f"{c['gpu']} than in {res['precision'].upper()}"
                    )
        if res.get("half"):
            h = res["half"]
            print(
                f"  pinned to {h['precision'].upper()}: {plural(len(h['nodes']), 'node')}, {plural(h['casts'], 'Cast')}"
            )
        for note in res["notes"]:
            print(f"  note: {note}")
    _write_json(args, res)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from splitscope.engine import api

    if not args.out and not args.node_data:
        raise SplitscopeError("Give --out report.html|report.pdf, or --node-data DIR, or both.")
    res = None
    build = None
    if args.out and args.verify == "build":  # the partitions built first, at the shapes in force
        from splitscope.engine.cli.analyze import _verify_by_building

        gm = api.analyze(args.model, parser=args.parser, dims=_dims(args.dim)).model
        build = _verify_by_building(gm, args.verify_budget, args.dim_range)
    if args.out:
        with progress_bar() as bar:
            res = api.report(
                args.model,
                args.out,
                profiles=args.profile,
                engine=args.engine,
                calibration=args.calibration,
                scenario=args.scenario,
                parser=args.parser,
                dims=_dims(args.dim),
                build=build,
                kernels=args.kernel,
                generation=args.generation,
                sweep=args.sweep,
                progress=bar,
            ).json
        if not args.quiet:
            print(f"wrote {res['out']} ({res['bytes'] / 1e6:.2f} MB): {res['headline']}")
    if args.node_data:
        from splitscope.engine.present.node_data import write_node_data
        from splitscope.engine.present.report import check_same_model, load_doc

        gm = api.analyze(args.model, parser=args.parser, dims=_dims(args.dim), require_dims=False).model
        docs = {
            k: load_doc(v, k) if v else None
            for k, v in (
                ("profile", (args.profile or [None])[0]),
                ("engine", args.engine),
                ("calibration", args.calibration),
            )
        }
        for k, v in (
            ("profile", (args.profile or [None])[0]),
            ("engine", args.engine),
            ("calibration", args.calibration),
        ):
            if v:
                check_same_model(gm, docs[k], k, v)  # type: ignore[arg-type]
        files = write_node_data(gm, args.node_data, docs["profile"], docs["engine"], docs["calibration"])
        if not args.quiet:
            print("wrote Model Explorer node data: " + ", ".join(str(f) for f in files))
    if res is not None:
        _write_json(args, {k: v for k, v in res.items() if k != "figures"})
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    from splitscope.engine.cli.engine import add_parser as add_engine
    from splitscope.engine.cli.kernel import add_parser as add_kernel
    from splitscope.engine.cli.remote import add_parser as add_targets
    from splitscope.engine.cli.sweep import add_parser as add_sweep

    ap = argparse.ArgumentParser(prog="splitscope", description="What TensorRT takes, and what needs custom CUDA.")
    sub = ap.add_subparsers(dest="command", required=True)
    for add in (_add_analyze, _add_optimize, _add_profile, add_engine, _add_calibrate):
        add(sub)
    for add in (add_kernel, add_targets, add_sweep, _add_report):
        add(sub)
    return ap


def _add_analyze(sub: Any) -> None:
    a = sub.add_parser("analyze", help="split a model between TensorRT and custom CUDA")
    a.add_argument("model", nargs="?", help="ONNX model (default: the bundled sample)")
    add_parser_choice(a, "auto: TensorRT if installed, else TensorRT-RTX, else the support table")
    a.add_argument(
        "--verify",
        choices=["none", "build"],
        default="none",
        help="build: build each engine partition with TensorRT-RTX at the shapes in force (it builds on the CPU), "
        "narrow a failing one down to the nodes the builder rejects, and mark them plugin (source: builder)",
    )
    a.add_argument("--verify-budget", type=float, default=300.0, metavar="SECONDS", help="time the builds may take")
    a.add_argument(
        "--dim-range",
        action="append",
        default=[],
        metavar="NAME=MIN:MAX",
        help="with --verify build: build over this range of a dim (an optimisation profile: min, the --dim value "
        "as opt, max) instead of at its value alone",
    )
    add_dims(a, "value of a symbolic dimension for FLOPs and bytes (a batch-like dim not given is 1)")
    add_output(a, "write the analysis as JSON")
    a.set_defaults(func=_cmd_analyze)


def _add_optimize(sub: Any) -> None:
    o = sub.add_parser("optimize", help="run an ONNX optimizer on a copy, check it, show the split before and after")
    o.add_argument("model", help="ONNX model (never changed)")
    o.add_argument("--out", required=True, metavar="OUT.onnx", help="where the optimized model goes")
    add_parser_choice(o)
    add_dims(o, "value of a symbolic dimension (test inputs, FLOPs and bytes; a batch-like dim not given is 1)")
    add_output(o, "write the before/after figures as JSON")
    o.set_defaults(func=_cmd_optimize)


def _add_profile(sub: Any) -> None:
    p = sub.add_parser("profile", help="time the model on this machine: latency, per-node time, copies, verdict")
    p.add_argument("model", nargs="?", help="ONNX model (default: the bundled sample)")
    p.add_argument(
        "--backend",
        choices=["ort-cpu", "ort-cuda", "tensorrt", "rtx"],
        default="ort-cpu",
        help="tensorrt and rtx are not yet run against a real engine (their JSON says verified: false)",
    )
    p.add_argument("--iterations", type=int, default=100, help="timed iterations (no profiler attached)")
    p.add_argument("--warmup", type=int, default=10, help="warm-up iterations, reported apart")
    p.add_argument("--profiled", type=int, default=20, help="profiled iterations for per-node times")
    add_dims(p, "value of a symbolic dimension of the inputs (a batch-like dim not given is 1)")
    p.add_argument("--input", metavar="FILE.npz", help="inputs from a .npz (one array per input) or .npy")
    p.add_argument(
        "--custom-op-library",
        action="append",
        default=[],
        metavar="LIB.so",
        help="an ONNX Runtime custom-op library for the model's custom ops",
    )
    add_parser_choice(p, "who decides the split (plugin nodes, partitions) the costs are put against")
    p.add_argument(
        "--generate",
        type=int,
        default=None,
        metavar="N",
        help="a decoder with a key/value cache: a prefill, then N decode steps feeding present back as past",
    )
    p.add_argument("--prompt-len", type=int, default=128, metavar="L", help="the prefill's length (--generate)")
    p.add_argument(
        "--generations",
        type=int,
        default=3,
        metavar="G",
        help="timed generations after a whole untimed one; each figure is their median, with its spread (--generate)",
    )
    p.add_argument("--target", metavar="TARGET", help=TARGET_HELP)
    add_output(p, "write the profile as JSON")
    p.set_defaults(func=_cmd_profile)


def _add_calibrate(sub: Any) -> None:
    c = sub.add_parser(
        "calibrate", help="calibrate and write a Q/DQ (INT8/FP8) or Cast (FP16/BF16) model as TensorRT 11 wants it"
    )
    c.add_argument("model", nargs="?", help="ONNX model (default: the bundled sample)")
    c.add_argument(
        "--data",
        default="random",
        help="a folder of images (prepared by --recipe) or of .npy/.npz samples, or 'random' (plumbing only)",
    )
    c.add_argument(
        "--recipe",
        help="for a folder of images: preset=imagenet|unit|symmetric|letterbox|grayscale|ppocr, then keys that "
        "override it: fit=crop|stretch|letterbox|pad,resize=256,mean=0.485/0.456/0.406,std=0.229/0.224/0.225,"
        "layout=nchw,gray=0|1,order=rgb|bgr (default: a Paddle inference.yml/infer_cfg.yml beside the model, "
        "Ultralytics metadata, one channel, else ImageNet's; said in the result)",
    )
    c.add_argument(
        "--metric",
        choices=["auto", "classification", "sequence", "detection", "dense", "none"],
        default="auto",
        help="the task agreement beside SNR: auto (from each output's shape), top-1/top-5 for a classifier, "
        "detections matched at IoU 0.5 after NMS for a YOLO head, IoU of thresholded maps for dense outputs",
    )
    c.add_argument("--method", choices=["max", "percentile", "entropy", "mse"], default="entropy")
    c.add_argument("--percentile", type=float, default=99.99)
    c.add_argument("--precision", choices=["int8", "fp8", "fp16", "bf16"], default="int8")
    c.add_argument("--samples", type=int, default=32)
    c.add_argument("--keep", action="append", default=[], metavar="NODE", help="a node left in float")
    c.add_argument(
        "--budget",
        metavar="snr=30",
        help="keep the most sensitive nodes in float until this is met (snr=DB or cosine=VALUE)",
    )
    c.add_argument("--sensitivity", action="store_true", help="measure each quantized node's sensitivity")
    c.add_argument(
        "--labels",
        metavar="FILE",
        help="the held-out samples' classes ('NAME LABEL' a line): "
        "top-1 accuracy as the task metric, and --budget top1=ACCURACY",
    )
    half = c.add_mutually_exclusive_group()
    half.add_argument(
        "--fp16",
        action="append",
        default=[],
        metavar="NODE",
        help="with int8/fp8: run this node in FP16 (casts) instead of quantizing it (repeat)",
    )
    half.add_argument("--bf16", action="append", default=[], metavar="NODE", help="the same in BF16")
    c.add_argument(
        "--backend", choices=["ort-cpu", "ort-cuda"], default="ort-cpu", help="what runs the FP32 statistics pass"
    )
    add_dims(c)
    c.add_argument("--out", required=True, metavar="OUT.onnx")
    c.add_argument("--target", metavar="TARGET", help=TARGET_HELP)
    add_output(c)
    c.set_defaults(func=_cmd_calibrate)


def _add_report(sub: Any) -> None:
    r = sub.add_parser(
        "report", help="write the stakeholder report (self-contained HTML, or PDF) and Model Explorer node data"
    )
    r.add_argument("model", nargs="?", help="ONNX model (default: the bundled sample)")
    r.add_argument(
        "--profile",
        action="append",
        metavar="P.json",
        help="a 'splitscope profile --json' file (repeat for ONNX Runtime and TensorRT side by side)",
    )
    r.add_argument("--engine", metavar="L.json", help="a 'splitscope engine --json' file")
    r.add_argument("--calibration", metavar="C.json", help="a 'splitscope calibrate --json' file")
    r.add_argument("--scenario", metavar="NAME", help="the planner scenario to present (saved with the model)")
    r.add_argument("--out", metavar="report.html|report.pdf")
    r.add_argument(
        "--node-data", metavar="DIR", help="also write Model Explorer node data (split, time, precision) into DIR"
    )
    add_parser_choice(r)
    add_dims(r)
    r.add_argument(
        "--verify", choices=["none", "build"], default="none", help="build: verify the split by building first"
    )
    r.add_argument("--verify-budget", type=float, default=300.0, metavar="SECONDS")
    r.add_argument("--dim-range", action="append", default=[], metavar="NAME=MIN:MAX")
    r.add_argument(
        "--kernel", action="append", default=[], metavar="K.json", help="a 'splitscope kernel --json' result"
    )
    r.add_argument("--generation", metavar="G.json", help="a 'splitscope profile --generate N --json' result")
    r.add_argument("--sweep", metavar="S.json", help="a 'splitscope sweep --json' result (its cells of this model)")
    add_output(r, "write every figure of the report as JSON")
    r.set_defaults(func=_cmd_report)


PATH_ARGS = (
    "model",
    "out",
    "json",
    "csv",
    "data",
    "labels",
    "input",
    "layers",
    "profile",
    "times",
    "compare",
    "compare_profile",
    "engine",
    "calibration",
    "generation",
    "sweep",
    "node_data",
    "custom_op_library",
)
"""The options that name files or folders: made absolute where they enter, relative to the working folder (a job
may run in a child process started elsewhere, and a model is staged in a folder of its own)."""


def _absolute_paths(args: argparse.Namespace) -> None:
    def absolute(v: object) -> object:
        if isinstance(v, str) and v and v not in ("random", "-") and "://" not in v:
            return os.path.abspath(os.path.expanduser(v))
        if isinstance(v, list):
            return [absolute(x) for x in v]
        return v

    for name in PATH_ARGS:
        if hasattr(args, name):
            setattr(args, name, absolute(getattr(args, name)))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status."""
    return execute(build_parser().parse_args(argv))


def execute(args: argparse.Namespace) -> int:
    """Run the verb of an already parsed command line; return the exit status."""
    _absolute_paths(args)
    try:
        return int(args.func(args))
    except SplitscopeError as e:
        print(f"splitscope: {e.message}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        return 0
    except KeyboardInterrupt:
        print("splitscope: interrupted", file=sys.stderr)
        return 130
    except OSError as e:
        print(f"splitscope: {e.strerror or e}: {e.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
