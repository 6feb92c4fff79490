"""What a verifying build adds: ``analyze --parser rtx --verify build`` against ``analyze --parser rtx`` (the
parser alone) on the generated transformer at several sizes, in turn, pair by pair, each a whole CLI process
with its own settings folders (the machine is shared and noisy: the ratio is the figure).

    python bench/bench_verify.py [--nodes 1000 10000] [--repeat 3] [--out bench/out]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import onnx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_versions import _env  # noqa: E402
from make_models import make_transformer  # noqa: E402


def _run(model: Path, out: Path, verify: bool) -> float:
    cmd = [sys.executable, "-m", "splitscope.engine.cli", "analyze", str(model), "--parser", "rtx", "-q"]
    extra = ["--verify", "build", "--verify-budget", "3000"] if verify else []
    t0 = time.perf_counter()
    subprocess.run([*cmd, *extra, "--json", str(out)], check=True, capture_output=True, env=_env(), cwd=ROOT)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for n in args.nodes:
        m = make_transformer(n, 0)
        path = args.out / f"verify_{n}.onnx"
        onnx.save(m, path)
        ja, jb = args.out / "verify_parser.json", args.out / "verify_build.json"
        ta, tb = [], []
        for _ in range(args.repeat):
            ta.append(_run(path, ja, False))
            tb.append(_run(path, jb, True))
        build = json.loads(jb.read_text())["build"]
        parts = build["partitions"]
        ratios = [y / x for x, y in zip(ta, tb, strict=True)]
        print(
            f"{len(m.graph.node):>6} nodes: parser {statistics.median(ta):.2f} s, with a verifying build "
            f"{statistics.median(tb):.2f} s, ratio median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, "
            f"max {max(ratios):.2f}); {len(parts)} partition(s) {[p['status'] for p in parts]}, "
            f"builder {sum(p['seconds'] for p in parts):.2f} s, engine {sum(p['engine_bytes'] or 0 for p in parts):,} B"
        )


if __name__ == "__main__":
    main()
