"""``splitscope sweep MODEL... --dim batch=1,8,32 --backend ort-cpu,ort-cuda --precision fp32,fp16,int8``.

Every combination is a cell, run on Ray (a local one when Ray is installed, ``--ray ADDRESS`` for a cluster) or in
sequence; finished cells are reused when the sweep runs again. The JSON has ``cells``, each with its ``params``,
``status`` and, when it ran, ``latency_ms`` as ``profile`` gives it; ``--csv`` writes the table."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from splitscope.engine.cli.analyze import _run_with_bar, add_output


def _split(values: list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


def _cmd_sweep(args: argparse.Namespace) -> int:
    from splitscope.engine.errors import SplitscopeError
    from splitscope.engine.jobs import CancelToken
    from splitscope.engine.remote.target import parse_target
    from splitscope.engine.report.files import write_text_atomic
    from splitscope.engine.sweep.grid import expand, parse_dim_values
    from splitscope.engine.sweep.results import SweepDoc
    from splitscope.engine.sweep.run import run_sweep
    from splitscope.engine.sweep.summary import rows, to_csv

    if args.iterations < 1 or args.timeout <= 0:
        raise SplitscopeError("--iterations must be 1 or more and --timeout above 0.")
    from splitscope.engine.onnxio.loader import load_model

    for model in args.models:  # a missing, truncated or corrupt model said in one line before any cell runs
        load_model(model)
    targets = [parse_target(t).address() for t in _split(args.target)] or ["local"]
    dims = parse_dim_values(args.dim)
    precisions = _split(args.precision) or ["fp32"]
    cells = expand(
        args.models,
        dims,
        _split(args.backend) or ["ort-cpu"],
        precisions,
        targets,
        iterations=args.iterations,
        warmup=args.warmup,
        samples=args.samples,
    )
    if args.search_candidates:  # ranked on the first model at its first dims
        from splitscope.engine.sweep.search import search_cells, search_note

        cells, ranking = _run_with_bar(search_cells(cells, args.search_candidates, CancelToken()))
        if not args.quiet:
            print(search_note(ranking, args.search_candidates))
    ray: str | bool | None = False if args.no_ray else (args.ray or None)
    doc = _run_with_bar(run_sweep(cells, ray=ray, timeout_s=args.timeout, cancel=CancelToken()))
    sweep = SweepDoc.from_json(doc)
    if not args.quiet:
        table = rows(sweep)
        how = "run by Ray" if sweep.runner == "ray" else "run one after another"
        print(f"{len(table)} cells, {how}:")
        for r in table:
            lat = f"{r['p50_ms']:9.3f} ms" if r["p50_ms"] is not None else f"{r['status']:>12}"
            snr = "" if r["snr_db"] is None else f"  SNR {r['snr_db']:.1f} dB"
            mark = " *" if r["pareto"] else ""
            tail = " (reused)" if r["reused"] else ""
            err = f"  {r['error']}" if r["error"] else ""
            print(
                f"  {lat}  {r['backend']:<8} {r['precision']:<5} {r['dims']:<18} {r['target']:<12}"
                f"{snr}{mark}{tail}{err}".rstrip()
            )
        print("  * on the Pareto front of latency against accuracy (per model)")
        for note in sweep.notes:
            print(f"  note: {note}")
    if args.json:
        write_text_atomic(args.json, json.dumps(doc, indent=1))
    if args.csv:
        write_text_atomic(args.csv, to_csv(sweep))
    failed = [c for c in sweep.cells if not c.done]
    if failed:  # said even with -q: the exit status alone does not say which cell or why
        first = failed[0]
        why = (first.error or first.status or "failed").splitlines()[0]
        print(
            f"splitscope: {len(failed)} of {len(sweep.cells)} cells did not finish; the first: {why}",
            file=sys.stderr,
        )
    return 0 if not failed else 3


def add_parser(sub: Any) -> None:
    s = sub.add_parser(
        "sweep", help="a grid of profiles (models x dims x backends x precisions x targets) on Ray or in sequence"
    )
    s.add_argument("models", nargs="+", metavar="MODEL")
    s.add_argument("--dim", action="append", default=[], metavar="NAME=INT[,INT...]", help="values of a dim (repeat)")
    s.add_argument("--backend", action="append", default=[], metavar="B[,B...]", help="ort-cpu, ort-cuda, ...")
    s.add_argument("--precision", action="append", default=[], metavar="P[,P...]", help="fp32, fp16, bf16, int8, fp8")
    s.add_argument("--target", action="append", default=[], metavar="T[,T...]", help="local or SSH targets")
    s.add_argument(
        "--search-candidates",
        type=int,
        default=0,
        metavar="K",
        help="a precision search as a grid: each reduced precision with nothing, then the 1..K most sensitive nodes "
        "(ranked by a sensitivity pass on the first model) kept in float",
    )
    s.add_argument("--ray", metavar="ADDRESS", help="a Ray cluster's address (default: a local Ray, if installed)")
    s.add_argument("--no-ray", action="store_true", help="run the cells in sequence here")
    s.add_argument("--iterations", type=int, default=50)
    s.add_argument("--warmup", type=int, default=5)
    s.add_argument("--samples", type=int, default=8, help="calibration samples for reduced precisions")
    s.add_argument("--timeout", type=float, default=900.0, metavar="S", help="seconds a cell may take")
    s.add_argument("--csv", metavar="PATH")
    add_output(s)
    s.set_defaults(func=_cmd_sweep)
