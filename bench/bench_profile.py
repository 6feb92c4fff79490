"""Profiling figures against a plain ONNX Runtime timing loop (and, on a GPU, a bare cuda-python copy loop),
measured in the same run.

For each model, ``--repeat`` times, interleaved:

- ``plain``: an ``InferenceSession`` at full optimisation and a ``time.perf_counter`` loop of
  ``--iterations`` runs after ``--warmup`` (on CUDA with inputs and outputs bound on the device, as ours);
- ``ours``: :func:`splitscope.engine.runtime.profile.profile` with the same counts; its latency mean, and the
  share of a profiled run its per-node times cover.

Targets (issue 8): mean latency within 5% of the plain loop; per-node cover at least 95% on the CPU and
90% on CUDA; pinned copies at least 90% of the bare loop's GB/s.

Usage::

    python bench/bench_profile.py MODEL.onnx [...] [--backend ort-cpu|ort-cuda] [--dim NAME=VALUE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from splitscope.engine.dims import parse_dims  # noqa: E402
from splitscope.engine.jobs import run_to_end  # noqa: E402
from splitscope.engine.runtime.inputs import input_specs, random_feeds  # noqa: E402
from splitscope.engine.runtime.ort import OrtBackend  # noqa: E402
from splitscope.engine.runtime.profile import profile  # noqa: E402
from splitscope.engine.split.analyze import analyze_model  # noqa: E402


def plain_loop(path: Path, backend: str, feeds: dict, iterations: int, warmup: int) -> float:
    """Mean ms of a bare timing loop (the peer)."""
    be = OrtBackend(path, backend)
    sess = be.session()
    run = be.runner(sess, feeds)
    for _ in range(warmup):
        run()
    t = []
    for _ in range(iterations):
        a = time.perf_counter()
        run()
        t.append((time.perf_counter() - a) * 1000)
    be.close()
    return statistics.fmean(t)


def bare_copies(sizes: list[int], repeat: int = 5) -> list[dict[str, float]]:
    """Pinned host-to-device and device-to-host GB/s of a bare synchronous cudaMemcpy loop."""
    from cuda.bindings import runtime as rt

    out = []
    for size in sizes:
        _, dev = rt.cudaMalloc(size)
        _, host = rt.cudaMallocHost(size)
        row: dict[str, float] = {"bytes": size}
        for name, kind, dst, src in (
            ("h2d", rt.cudaMemcpyKind.cudaMemcpyHostToDevice, dev, host),
            ("d2h", rt.cudaMemcpyKind.cudaMemcpyDeviceToHost, host, dev),
        ):
            rt.cudaMemcpy(dst, src, size, kind)
            ts = []
            for _ in range(repeat):
                a = time.perf_counter()
                rt.cudaMemcpy(dst, src, size, kind)
                ts.append(time.perf_counter() - a)
            row[f"{name}_pinned_gbps"] = round(size / statistics.median(ts) / 1e9, 2)
        rt.cudaFree(dev)
        rt.cudaFreeHost(host)
        out.append(row)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", type=Path, nargs="+")
    ap.add_argument("--backend", default="ort-cpu")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dim", action="append", default=[])
    ap.add_argument("--copies", action="store_true", help="also compare copies with a bare cuda-python loop")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "profile.json")
    args = ap.parse_args()
    dims = parse_dims(args.dim)
    rows = []
    for path in args.models:
        import onnx

        specs = input_specs(onnx.load(str(path), load_external_data=False))
        model_dims = {k: v for k, v in dims.items() if any(k in s.dims for s in specs)}
        feeds = random_feeds(specs, model_dims)
        gm = analyze_model(path, parser="table", dims=model_dims)
        plain, ours, cover, node_sum = [], [], [], []
        for _ in range(args.repeat):
            plain.append(plain_loop(path, args.backend, feeds, args.iterations, args.warmup))
            res = run_to_end(
                profile(
                    path,
                    gm,
                    backend=args.backend,
                    iterations=args.iterations,
                    warmup=args.warmup,
                    profiled=20,
                    dims=model_dims,
                    telemetry=False,
                )
            )
            ours.append(res.latency_ms["mean"])
            cover.append(res.node_cover)
            node_sum.append(sum(r["ms"] for r in res.per_node) / res.latency_ms["mean"])
        row = {
            "model": path.name,
            "backend": args.backend,
            "plain_ms": round(statistics.median(plain), 4),
            "ours_ms": round(statistics.median(ours), 4),
            "cover": round(statistics.median(cover), 4),
            "node_sum_over_latency": [round(x, 3) for x in node_sum],
            "verdict": res.verdict["verdict"],
            "profiled_run_ms": res.profiled_run_ms,
        }
        row["ours_over_plain"] = round(row["ours_ms"] / row["plain_ms"], 3)
        print(json.dumps(row), flush=True)
        rows.append(row)
    meta: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "iterations": args.iterations,
        "repeat": args.repeat,
        "results": rows,
    }
    if args.copies:
        from splitscope.engine.runtime.device import measure_copies

        sizes = [1 << 20, 16 << 20, 64 << 20, 256 << 20]
        bare = bare_copies(sizes)
        ours_c = measure_copies(sizes)
        meta["copies"] = [
            {
                "bytes": b["bytes"],
                "bare_h2d_gbps": b["h2d_pinned_gbps"],
                "ours_h2d_gbps": o["h2d_pinned_gbps"],
                "bare_d2h_gbps": b["d2h_pinned_gbps"],
                "ours_d2h_gbps": o["d2h_pinned_gbps"],
                "ours_h2d_pageable_gbps": o["h2d_pageable_gbps"],
                "ours_d2h_pageable_gbps": o["d2h_pageable_gbps"],
                "h2d_ratio": round(o["h2d_pinned_gbps"] / b["h2d_pinned_gbps"], 3),
            }
            for b, o in zip(bare, ours_c, strict=True)
        ]
        print(json.dumps(meta["copies"]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(meta, indent=1))


if __name__ == "__main__":
    main()
