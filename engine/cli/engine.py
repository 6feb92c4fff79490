"""``splitscope engine``: what TensorRT did, read from trtexec's files (layer info, profile, times, TensorRT 8.2 to
11) or from a TensorRT-RTX build made here, mapped onto the ONNX model when one is given, linted, and compared with
another engine."""

from __future__ import annotations

import argparse
from typing import Any

from splitscope.engine.cli.analyze import _dims, _write_json, add_dims, add_output, add_parser_choice
from splitscope.engine.text import plural


def add_parser(sub: Any) -> None:
    e = sub.add_parser("engine", help="read what TensorRT did: trtexec layer info, profile and times, on the graph")
    e.add_argument("model", nargs="?", help="the ONNX model the engine was built from (optional)")
    e.add_argument("--layers", metavar="L.json", help="trtexec --exportLayerInfo (TensorRT 8.2 to 11)")
    e.add_argument("--profile", metavar="P.json", help="trtexec --exportProfile")
    e.add_argument("--times", metavar="T.json", help="trtexec --exportTimes")
    e.add_argument(
        "--build",
        choices=["rtx", "tensorrt"],
        help="build the model here and read the layers its builder lists (TensorRT-RTX builds without a GPU)",
    )
    add_dims(e, "value of a symbolic dim")
    e.add_argument("--compare", metavar="L2.json", help="another engine's layer info, to compare")
    e.add_argument("--compare-profile", metavar="P2.json", help="another engine's profile, to compare")
    add_parser_choice(e, "who splits the model, when one is given")
    add_output(e, "write layers, mapping, lint and comparison as JSON")
    e.set_defaults(func=cmd_engine)


def cmd_engine(args: argparse.Namespace) -> int:

    from splitscope.engine import api

    res = api.engine_report(
        args.model,
        layers=args.layers,
        profile=args.profile,
        times=args.times,
        build=args.build,
        compare=args.compare,
        compare_profile=args.compare_profile,
        parser=args.parser,
        dims=_dims(args.dim),
    )
    doc, data = res.json, res.data
    gm = res.model
    if not args.quiet:
        n = len(doc["layers"])
        layout = {"bindings": "TensorRT 8.2-10 layout", "io_tensors": "TensorRT 11 layout"}.get(
            doc["layout"], "no I/O list"
        )
        print(
            f"{n} engine layers ({layout}{'' if doc['detailed'] or not n else ', names only'})"
            + (f", {doc['total_layer_ms']:.4f} ms of layer time per inference" if data.profile else "")
        )
        if gm is not None:
            print(
                f"  mapped onto {gm.path.name if gm.path else 'the model'}: {doc['mapped_data_node_share']:.0%} "
                f"of its data-path nodes ({doc['mapped_node_share']:.0%} of all), {doc['mapped_layer_share']:.0%} "
                f"of the layers; {plural(len(doc['unmapped_layers']), 'layer')} unmapped"
            )
        work = [r for r in doc["layers"] if r["mapped_by"] != "sync"]  # stream syncs: no work to show
        for row in sorted(work, key=lambda r: (-(r["ms"] or 0), r["reformat"]))[:8]:
            ms = f"{row['ms']:9.4f} ms {row['share']:6.1%}" if row["ms"] is not None else " " * 19
            print(f"  {ms}  {row['precision'] or '?':<16} {row['type'][:22]:<22} {row['name'][:70]}")
        for f in doc["lint"]:
            print(f"  lint {f['kind']}: {f['advice']} ({plural(len(f['layers']), 'layer')}, {f['ms']:.4f} ms)")
        for phase, st in (doc.get("times") or {}).items():
            print(
                f"  {phase}: mean {st['mean']:.4f} ms, p50 {st['p50']:.4f}, p99 {st['p99']:.4f}, max {st['max']:.4f} "
                f"({len(data.times.records) if data.times else 0} iterations)"
            )
        if "comparison" in doc:
            c = doc["comparison"]
            print(f"  compare: A {c['a_total_ms']:.4f} ms, B {c['b_total_ms']:.4f} ms of layer time")
        for note in doc["notes"]:
            print(f"  note: {note}")
    _write_json(args, doc)
    return 0
