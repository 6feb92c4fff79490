"""``splitscope``: the headless command line over the same engine as the app.

``splitscope analyze [MODEL] [--json PATH] [--parser auto|tensorrt|rtx|table]``
prints a short summary and writes the JSON document of :mod:`splitscope.engine.report`.
Exit status: 0 success, 2 bad input (one line on stderr, no traceback),
130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence

from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import run_to_end


def _dims(values: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        name, sep, num = v.partition("=")
        if not sep or not (num.strip().isascii() and num.strip().isdigit()):
            raise SplitscopeError(f"--dim expects NAME=INT (e.g. batch=8), got '{v}'.")
        out[name.strip()] = int(num)
    return out


def _print_summary(gm: object, summary: dict[str, dict[str, float | int]]) -> None:
    from splitscope.engine.model import GraphModel, Status
    from splitscope.engine.report.stats import headline
    from splitscope.engine.text import decided_by, format_bytes, node_op_label, plural

    assert isinstance(gm, GraphModel)
    p = gm.parser
    print(f"{gm.path}: {plural(len(gm.nodes), 'node')}, split by the {decided_by(p)}")
    print(headline(gm, summary))
    plugin = [n for n in gm.nodes if n.status is Status.PLUGIN]
    if plugin:
        print("Needs custom CUDA / a TensorRT plugin:")
        by_op = Counter(node_op_label(n) for n in plugin)
        for op, count in by_op.most_common(10):
            first = next(n for n in plugin if node_op_label(n) == op)
            print(f"  {op} x{count}: {first.reason[:160]}")
            if first.remedy:
                print(f"    fix: {first.remedy}")
        if len(by_op) > 10:
            print(f"  ... and {len(by_op) - 10} more op types")
    for part in gm.partitions[:8]:
        print(f"  partition {part.index}: {len(part.nodes)} nodes, {len(part.boundary_tensors)} boundary "
              f"tensors, {format_bytes(part.boundary_bytes)}")
    if len(gm.partitions) > 8:
        print(f"  ... and {len(gm.partitions) - 8} more partitions")
    for w in gm.warnings:
        print(f"warning: {w}", file=sys.stderr)


def _cmd_analyze(args: argparse.Namespace) -> int:
    from splitscope.engine.report.files import write_json
    from splitscope.engine.report.stats import split_summary
    from splitscope.engine.split.analyze import analyze

    gm = run_to_end(analyze(args.model, parser=args.parser, dims=_dims(args.dim)))
    summary = split_summary(gm)  # once: the printed summary and the JSON share it
    if not args.quiet:
        _print_summary(gm, summary)
    if args.json:
        write_json(gm, args.json, summary)
        if not args.quiet:
            print(f"wrote {args.json}")
    return 0


def _cmd_optimize(args: argparse.Namespace) -> int:
    import json

    from splitscope.engine.report.files import write_text_atomic
    from splitscope.engine.rewrite.optimize import optimize_export
    from splitscope.engine.text import format_bytes

    res = run_to_end(optimize_export(args.model, args.out, parser=args.parser, dims=_dims(args.dim)))
    if not args.quiet:
        b, a = res.before, res.after
        print(f"{res.source.name} -> {res.output} ({res.optimizer}, {res.optimizer_seconds:.2f} s)")
        print(f"  {'':16}{'before':>12}{'after':>12}")
        for label, x, y in (("nodes", b.nodes, a.nodes), ("plugin nodes", b.plugin, a.plugin),
                            ("partitions", b.partitions, a.partitions)):
            print(f"  {label:16}{x:>12,}{y:>12,}")
        print(f"  {'boundary bytes':16}{format_bytes(b.boundary_bytes):>12}{format_bytes(a.boundary_bytes):>12}")
        if res.compared:
            print(f"  outputs: {res.outputs} compared with ONNX Runtime on seeded inputs, max abs difference "
                  f"{res.max_abs_diff:.3g}, max relative {res.max_rel_diff:.3g}")
        for note in res.notes:
            print(f"  note: {note}")
    if args.json:
        write_text_atomic(args.json, json.dumps(res.to_json(), indent=1))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    ap = argparse.ArgumentParser(prog="splitscope", description="What TensorRT takes, and what needs custom CUDA.")
    sub = ap.add_subparsers(dest="command", required=True)
    a = sub.add_parser("analyze", help="split a model between TensorRT and custom CUDA")
    a.add_argument("model", nargs="?", help="ONNX model (default: the bundled sample)")
    a.add_argument("--json", metavar="PATH", help="write the analysis as JSON")
    a.add_argument("--parser", choices=["auto", "tensorrt", "rtx", "table"], default="auto",
                   help="auto: TensorRT if installed, else TensorRT-RTX, else the support table")
    a.add_argument("--dim", action="append", default=[], metavar="NAME=INT",
                   help="value of a symbolic dimension for FLOPs and bytes (default 1)")
    a.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    a.set_defaults(func=_cmd_analyze)
    o = sub.add_parser("optimize", help="run an ONNX optimizer on a copy, check it, show the split before and after")
    o.add_argument("model", help="ONNX model (never changed)")
    o.add_argument("--out", required=True, metavar="OUT.onnx", help="where the optimized model goes")
    o.add_argument("--json", metavar="PATH", help="write the before/after figures as JSON")
    o.add_argument("--parser", choices=["auto", "tensorrt", "rtx", "table"], default="auto")
    o.add_argument("--dim", action="append", default=[], metavar="NAME=INT",
                   help="value of a symbolic dimension (test inputs, FLOPs and bytes; default 1)")
    o.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    o.set_defaults(func=_cmd_optimize)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status."""
    args = build_parser().parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
