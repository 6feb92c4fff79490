"""Shape inference at the dims in force on a deep model, this checkout against another revision (the peer),
interleaved in one run, each a fresh process: the seconds of ``infer_concrete``, how many of the graph's tensors got
a concrete shape, how many nodes have no FLOPs and the model's total FLOPs (an ``analyze --parser table`` in the same
process).

    python bench/export_llms.py /tmp/m --llama-layers 300
    python bench/bench_concrete.py /tmp/m/llama_ts_300.onnx --dim seq=128 --peer 5df746c [--repeat 3]

The peer revision is checked out with ``git worktree`` and run from there (its own sources, this venv)."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, sys, time
import onnx
import splitscope.engine.onnxio.concrete as _c
print("source", _c.__file__, file=sys.stderr)
from splitscope.engine.onnxio.concrete import concrete_shapes
from splitscope.engine.onnxio.shapes import infer_concrete
from splitscope.engine.split.analyze import analyze_model
path, dims = sys.argv[1], json.loads(sys.argv[2])
m = onnx.load(path)
t = time.perf_counter()
out, _ = infer_concrete(m, dims, [])
s = time.perf_counter() - t
made = {o for n in out.graph.node for o in n.output if o}
typed = concrete_shapes(out.graph)
gm = analyze_model(path, parser="table", dims=dims)
print(json.dumps({"seconds": round(s, 3), "tensors": len(made), "concrete": sum(1 for o in made if o in typed),
                  "nodes_without_flops": sum(1 for n in gm.nodes if n.flops is None), "flops": gm.total_flops()}))
"""


def run(site: Path, model: Path, dims: dict[str, int]) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(model), json.dumps(dims)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        cwd=site,  # not the checkout: its own splitscope/ would come first on the path
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", type=Path)
    ap.add_argument("--dim", action="append", default=[], help="NAME=VALUE")
    ap.add_argument("--peer", required=True, help="the git revision to compare with")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    dims = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
    sys.path.insert(0, str(ROOT / "bench"))
    from peer import peer_tree, site

    tmp = Path(tempfile.mkdtemp(prefix="splitscope-bench-concrete-"))
    with peer_tree(args.peer) as peer:
        sites = {"ours": site(ROOT, tmp / "site-ours"), "peer": site(peer, tmp / "site-peer")}
        runs: dict[str, list[dict]] = {"ours": [], "peer": []}
        for _ in range(args.repeat):  # interleaved: the machine's noise falls on both alike
            for who, site in sites.items():
                runs[who].append(run(site, args.model.resolve(), dims))
                print(who, json.dumps(runs[who][-1]), flush=True)
        row = {
            who: {**r[-1], "seconds": round(statistics.median(x["seconds"] for x in r), 3)} for who, r in runs.items()
        }
        print(json.dumps({"model": args.model.name, "dims": dims, **row}), flush=True)


if __name__ == "__main__":
    main()
