"""``splitscope kernel``: the kernel workbench headless. The op (a plugin node by default, or the nodes named) is
cut out at the dims in force, its real inputs captured, a reference made, the plugin project written (``--out``),
the parser asked with the plugin registered, and the kernel (generated, or ``--source``) run on the GPU in a child
process; without a GPU the CPU parts are done and the JSON says the kernel did not run."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from splitscope.engine.cli.analyze import _dims, _run_with_bar, add_dims, add_output, add_parser_choice, progress_bar
from splitscope.engine.text import plural


def add_parser(sub: Any) -> None:
    k = sub.add_parser(
        "kernel",
        help="the custom part worked: the op alone, its real tensors, a plugin project, a CUDA kernel checked and "
        "timed on the GPU against the runtime default",
    )
    k.add_argument("model")
    k.add_argument("nodes", nargs="*", metavar="NODE", help="nodes to work on (default: the first plugin node)")
    k.add_argument("--source", metavar="K.cu", help="your kernel (launch convention: see launch.py in --out)")
    k.add_argument("--reference", metavar="ref.py", help="a numpy reference(inputs, attributes) for a custom op")
    k.add_argument(
        "--compare-default",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time ONNX Runtime CUDA on the same nodes (the runtime default)",
    )
    add_dims(k)
    k.add_argument("--data", default="random", help="random, or a folder of .npy/.npz samples or images")
    k.add_argument("--recipe", default="", help="pre-processing for images (as calibrate's)")
    add_parser_choice(k)
    k.add_argument("--iterations", type=int, default=100)
    k.add_argument("--atol", type=float, default=1e-4)
    k.add_argument("--rtol", type=float, default=1e-3)
    k.add_argument("--out", metavar="DIR", help="write the plugin project here")
    from splitscope.engine.remote.target import TARGET_HELP

    k.add_argument("--target", metavar="TARGET", help=TARGET_HELP)
    add_output(k)
    k.set_defaults(func=_cmd_kernel)


def _cmd_kernel(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from splitscope.engine import api
    from splitscope.engine.jobs import CancelToken
    from splitscope.engine.remote.target import target_of
    from splitscope.engine.report.files import write_text_atomic

    options: dict[str, Any] = {
        "source": args.source,
        "reference": args.reference,
        "compare_default": bool(args.compare_default),
        "dims": _dims(args.dim),
        "data": args.data,
        "recipe": args.recipe,
        "parser": args.parser,
        "iterations": int(args.iterations),
        "atol": args.atol,
        "rtol": args.rtol,
        "out": args.out,
    }
    target = target_of(args)
    if target is not None:  # the same job on the target; its plugin project comes back to --out
        from splitscope.engine.remote.job import RemoteJob

        push = ("model", "source", "reference") + (("data",) if args.data and Path(args.data).exists() else ())
        job_args = api.kernel_args(args.model, list(args.nodes), **options)
        job = RemoteJob(target, "kernel", job_args, push=push, fetch=("out",))
        doc = _run_with_bar(job.events(CancelToken()))
    else:
        with progress_bar() as bar:
            doc = api.kernel(args.model, list(args.nodes), **options, progress=bar).json
    if args.json:
        write_text_atomic(args.json, json.dumps(doc, indent=1))
    if not args.quiet:
        _print(doc)
        if args.json:
            print(f"wrote {args.json}")
    k = doc.get("kernel") or {}
    return 1 if (k.get("error") and k.get("gpu")) or k.get("numerics_ok") is False else 0


def _print(doc: dict[str, Any]) -> None:
    ex = doc["extract"]
    print(
        f"{', '.join(doc['nodes'][:4])}{' ...' if len(doc['nodes']) > 4 else ''} ({ex['op']}) at {doc['shapes']}: "
        f"{plural(len(ex['inputs']), 'input')}, {plural(len(ex['outputs']), 'output')}, "
        f"{'delegated' if doc['delegated'] else 'needs custom CUDA'}"
    )
    ref = doc["reference"]
    print(f"reference: {ref['how']}{': ' + ref['note'] if ref['note'] else ''}")
    src = doc["source"]
    print(f"kernel source: {src['origin']}{' (a stub: write its body)' if not src['complete'] else ''}")
    plug = doc.get("plugin") or {}
    if plug.get("folder"):
        print(f"plugin project: {plug['folder']} ({', '.join(plug['files'])})")
    p = plug.get("parser") or {}
    if p:
        line = f"parser with the plugin registered: {p['how']}"
        if "partitions_before" in p:
            line += (
                f"; partitions {p['partitions_before']} -> {p['partitions_after']}, boundary bytes "
                f"{p['boundary_bytes_before']} -> {p['boundary_bytes_after']}"
            )
        print(line + (f" ({p['message'][:160]})" if p.get("message") else ""))
    k = doc.get("kernel") or {}
    if not k.get("gpu"):
        print(f"kernel: not run: {k.get('error') or 'no GPU here'}; the CPU parts are in the JSON")
        return
    if not k.get("ran"):
        print(f"kernel: {k.get('error')}", file=sys.stderr)
        return
    print(
        f"kernel on {k['gpu']}: {k['ms']:.4f} ms (p10-p90 {k['spread_ms'][0]:.4f}-{k['spread_ms'][1]:.4f}), "
        f"max abs err {k['max_abs_err']}, max ULP {k['max_ulp']}, beyond tolerance {k['beyond']}"
    )
    if k.get("device_ms") is not None:
        theirs = k.get("default_device_ms")
        print(
            f"device time (CUPTI): kernel {k['device_ms']:.4f} ms"
            + (f", the runtime default's kernels {theirs:.4f} ms" if theirs is not None else "")
        )
    else:
        print(f"device time: {k.get('device_how') or 'not measured'}")
    host = f"host, launch included: kernel {k['host_ms']:.4f} ms, " if k.get("host_ms") is not None else ""
    print(
        f"{host}default {k['default_ms']:.4f} ms" if k.get("default_ms") is not None else f"default: {k['default_how']}"
    )
    if k.get("sol_ms") is not None:
        print(f"bound: {k['sol_ms']:.4f} ms ({k['sol_how']})")
    print(f"verdict: {k['verdict']}")
