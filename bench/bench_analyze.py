"""Benchmark `splitscope analyze` against the bare TensorRT-RTX call and Polygraphy.

For each model (made by make_models.py: about 1k, 10k and 50k nodes, fully
supported, plus a 50k model split by a custom op every 100 layers), runs these
commands, interleaved, ``--repeat`` times, and reports median wall time and the
peak resident memory of the whole process tree (sampled every 100 ms):

- ``bare``: a Python process that reads the file and calls
  ``OnnxParser.supports_model_v2`` once (TensorRT-RTX), nothing else;
- ``polygraphy``: ``polygraphy inspect capability`` with POLYGRAPHY_USE_TENSORRT_RTX=1;
- ``ours-rtx``: ``splitscope analyze --parser rtx --json``;
- ``ours-table``: ``splitscope analyze --parser table --json``.

Usage::

    python bench/bench_analyze.py [--repeat 3] [--sizes 1000 10000 50000] [--out bench/out]
    python bench/bench_analyze.py --sizes --split-size 0 --extra llama_ts_300.onnx --dim seq=128 --no-polygraphy

``--extra`` adds models of one's own (an exporter's), ``--dim NAME=VALUE`` is given to every ``analyze``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from make_models import make_transformer  # noqa: E402

BARE = """
import sys, tensorrt_rtx as trt
logger = trt.Logger(trt.Logger.ERROR)
builder = trt.Builder(logger)
network = builder.create_network(0)
parser = trt.OnnxParser(network, logger)
data = open(sys.argv[1], 'rb').read()
ok = parser.supports_model_v2(data, sys.argv[1])
print(ok, parser.num_subgraphs, parser.num_errors)
"""


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of a process and all its descendants, in kB."""
    total = 0
    stack = [pid]
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    while stack:
        p = stack.pop()
        stack.extend(children.get(p, []))
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def run(cmd: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    """Run ``cmd``; return (wall seconds, peak tree RSS in MB, stdout tail)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss_kb(proc.pid))
        time.sleep(0.1)
    wall = time.perf_counter() - t0
    out = proc.stdout.read() if proc.stdout else ""
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({proc.returncode}): {out[-2000:]}")
    return wall, peak // 1024, out.strip().splitlines()[-1] if out.strip() else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 50000])
    ap.add_argument("--split-size", type=int, default=50000, help="size of the split model (0: none)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    ap.add_argument("--no-polygraphy", action="store_true")
    ap.add_argument("--extra", type=Path, nargs="*", default=[], help="more models (an exporter's)")
    ap.add_argument("--dim", action="append", default=[], help="NAME=VALUE for every analyze")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="splitscope-bench-"))
    models: list[tuple[str, Path, int]] = []
    import onnx

    for n in args.sizes:
        m = make_transformer(n)
        p = tmp / f"transformer_{n}.onnx"
        onnx.save(m, p)
        models.append((f"transformer {len(m.graph.node)} nodes", p, len(m.graph.node)))
        del m
    if args.split_size:
        m = make_transformer(args.split_size, break_every=100)
        p = tmp / f"transformer_{args.split_size}_split.onnx"
        onnx.save(m, p)
        models.append((f"transformer {len(m.graph.node)} nodes, custom op every 100 layers", p, len(m.graph.node)))
        del m

    for p in args.extra:
        models.append((p.name, p.resolve(), len(onnx.load(str(p), load_external_data=False).graph.node)))
    dims = [a for d in args.dim for a in ("--dim", d)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "POLYGRAPHY_USE_TENSORRT_RTX": "1"}
    polygraphy = shutil.which("polygraphy")
    cmds = {
        "bare": lambda p: [sys.executable, "-c", BARE, str(p)],
        "ours-rtx": lambda p: [
            sys.executable,
            "-m",
            "splitscope.engine.cli",
            "analyze",
            str(p),
            "--parser",
            "rtx",
            "-q",
            *dims,
            "--json",
            str(tmp / "out.json"),
        ],
        "ours-table": lambda p: [
            sys.executable,
            "-m",
            "splitscope.engine.cli",
            "analyze",
            str(p),
            "--parser",
            "table",
            "-q",
            *dims,
            "--json",
            str(tmp / "out.json"),
        ],
    }
    if polygraphy and not args.no_polygraphy:
        cmds["polygraphy"] = lambda p: [polygraphy, "inspect", "capability", str(p), "-o", str(tmp / "poly")]
    results = []
    for label, path, nodes in models:
        times: dict[str, list[float]] = {k: [] for k in cmds}
        mems: dict[str, list[int]] = {k: [] for k in cmds}
        for _ in range(args.repeat):
            for name, make in cmds.items():
                wall, mb, _ = run(make(path), env)
                times[name].append(wall)
                mems[name].append(mb)
        row = {"model": label, "nodes": nodes, "file_mb": round(path.stat().st_size / 1e6, 1)}
        for name in cmds:
            row[f"{name}_s"] = round(statistics.median(times[name]), 2)
            row[f"{name}_mb"] = max(mems[name])
        row["ours_rtx_over_bare"] = round(row["ours-rtx_s"] / row["bare_s"], 2)
        if "polygraphy" in cmds:
            row["ours_rtx_over_polygraphy"] = round(row["ours-rtx_s"] / row["polygraphy_s"], 2)
        print(json.dumps(row), flush=True)
        results.append(row)
    meta = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "repeat": args.repeat,
        "results": results,
    }
    (args.out / "analyze.json").write_text(json.dumps(meta, indent=1))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
