"""What counting at the shapes in force costs: the analysis of a transformer whose inputs are symbolic (batch,
sequence), given ``--dim sequence=128``, against the same model written with those shapes fixed, which needs no
second inference. Both run in turn (ABAB...), each a whole CLI process with its own settings folders, and the
ratio is taken pair by pair (the machine is shared and noisy). The FLOPs of the two must be equal: the symbolic
model at 128 is the fixed model.

    python bench/bench_dims.py [--nodes 10000 50000] [--repeat 5] [--out bench/out]
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
from make_models import SEQ, make_transformer  # noqa: E402


def _symbolic(m: onnx.ModelProto) -> onnx.ModelProto:
    s = onnx.ModelProto()
    s.CopyFrom(m)
    for vi in (*s.graph.input, *s.graph.output):
        dims = vi.type.tensor_type.shape.dim
        dims[0].dim_param, dims[1].dim_param = "batch", "sequence"
    del s.graph.value_info[:]
    return s


def _run(model: Path, out: Path, dims: list[str]) -> float:
    cmd = [sys.executable, "-m", "splitscope.engine.cli", "analyze", str(model), "--parser", "table", "-q"]
    t0 = time.perf_counter()
    subprocess.run([*cmd, *dims, "--json", str(out)], check=True, capture_output=True, env=_env(), cwd=ROOT)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, nargs="+", default=[10000, 50000])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for n in args.nodes:
        fixed = make_transformer(n, 0)
        a, b = args.out / f"dims_fixed_{n}.onnx", args.out / f"dims_symbolic_{n}.onnx"
        onnx.save(fixed, a)
        onnx.save(_symbolic(fixed), b)
        ja, jb = args.out / "dims_fixed.json", args.out / "dims_symbolic.json"
        _run(a, ja, []), _run(b, jb, ["--dim", f"sequence={SEQ}"])  # warm-up
        ta, tb = [], []
        for _ in range(args.repeat):
            ta.append(_run(a, ja, []))
            tb.append(_run(b, jb, ["--dim", f"sequence={SEQ}"]))
        fa, fb = json.loads(ja.read_text())["flops"], json.loads(jb.read_text())["flops"]
        ratios = [y / x for x, y in zip(ta, tb, strict=True)]
        print(
            f"{len(fixed.graph.node):>6} nodes: fixed {statistics.median(ta):.2f} s, symbolic at sequence={SEQ} "
            f"{statistics.median(tb):.2f} s, ratio symbolic/fixed median {statistics.median(ratios):.2f} "
            f"(min {min(ratios):.2f}, max {max(ratios):.2f}); FLOPs {fa:,} vs {fb:,} "
            f"({'equal' if fa == fb else 'DIFFER'})"
        )


if __name__ == "__main__":
    main()
