"""A million nodes in the engine, stage by stage, this checkout against another revision (the peer), interleaved in
one run, each a fresh process with the cyclic collector off (as the window's workers run): the preview of the file
(the light read, the node table, the adjacency), the first view (the group tree, the layout context, the layout), a
relayout (expand one top group, collapse it again: median of 5), and a search (where the revision has an index: its
making once, then the median of 5 for each text).

    python bench/make_models.py DIR --nodes 1000000 --hidden 16
    python bench/bench_million.py DIR/transformer_1000k_h16.onnx --peer 5e168f3 [--repeat 2] [--json OUT.jsonl]

The peer revision is checked out with ``git worktree`` and run from there (its own sources, this venv)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import gc, json, statistics, sys, time
from pathlib import Path
gc.disable()
from splitscope.engine.jobs import run_to_end
from splitscope.engine.split.preview import preview_model
from splitscope.engine.view.layout import compute_layout, prepare_view
out = {}
t = time.perf_counter()
gm, _ = preview_model(Path(sys.argv[1]), "rtx")
out["preview_s"] = time.perf_counter() - t
t = time.perf_counter()
view = run_to_end(prepare_view(gm, viewport=(1366, 768)))
out["first_view_s"] = time.perf_counter() - t
ctx, exp = view.ctx, set(view.layout.expanded)
top = ctx.h.groups[0].groups[0]
times = []
for _ in range(5):
    for e in (exp | {top}, exp):
        t = time.perf_counter()
        run_to_end(compute_layout(ctx, e))
        times.append(time.perf_counter() - t)
out["relayout_ms"] = 1000 * statistics.median(times)
try:
    from splitscope.engine.view.find import LabelIndex
    t = time.perf_counter()
    index = LabelIndex(gm.nodes)
    out["index_s"] = time.perf_counter() - t
    find = index.find
except ImportError:  # a revision before the index: the window's scan of every node
    def find(text):
        return [n.index for n in gm.nodes if text in n.label.lower() or text in n.op_type.lower()]
for text in ("layer.9999/", "softmax_", "matmul"):
    ms = []
    for _ in range(5 if "index_s" in out else 1):
        t = time.perf_counter()
        hits = find(text)
        ms.append(1000 * (time.perf_counter() - t))
    out[f"search_ms[{text}]"] = statistics.median(ms)
    out[f"hits[{text}]"] = len(hits)
print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}))
"""


def run(site: Path | None, model: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(site)} if site is not None else dict(os.environ)
    with tempfile.TemporaryDirectory() as home:  # never the user's cache
        env["SPLITSCOPE_CACHE_DIR"] = home
        proc = subprocess.run(  # run from elsewhere: this checkout's own splitscope/ would come first on the path
            [sys.executable, "-c", PROBE, str(model)], env=env, cwd=home, capture_output=True, text=True, timeout=1800
        )
    line = next((x for x in reversed(proc.stdout.splitlines()) if x.startswith("{")), None)
    return json.loads(line) if line else {"error": proc.stderr[-500:]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", type=Path)
    ap.add_argument("--peer", required=True, help="the git revision to compare with")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--json", type=Path, help="append each run as a JSON line")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    from peer import peer_tree, site

    with peer_tree(args.peer) as peer, tempfile.TemporaryDirectory() as tmp:
        peer_site = site(peer, Path(tmp) / "site")
        for k in range(args.repeat):  # interleaved: the machine's noise falls on both alike
            for who, where in (("ours", None), ("peer", peer_site)):
                row = {"who": who, "round": k, "model": args.model.name, **run(where, args.model.resolve())}
                print(json.dumps(row), flush=True)
                if args.json:
                    with args.json.open("a", encoding="utf-8") as f:
                        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
