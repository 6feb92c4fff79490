"""The window opening a model until the final model is shown (``main.py MODEL --report-ready``), this checkout against
another revision (the peer), interleaved in one run, each a fresh process with fresh settings: the first paint, the
time to ready, the longest UI stall until then (and where the UI thread was), and how each process ended (a crash is
an exit status of -11 or 139).

    python bench/bench_ready.py /tmp/m/llama_ts_1200.onnx --peer 5df746c [--repeat 3] [--json OUT.jsonl]

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


def run(tree: Path, model: Path) -> dict:
    with tempfile.TemporaryDirectory() as home:  # never the user's settings or data
        env = {
            **os.environ,
            "QT_QPA_PLATFORM": "offscreen",
            "SPLITSCOPE_DATA_DIR": f"{home}/d",
            "SPLITSCOPE_CACHE_DIR": f"{home}/c",
            "XDG_CONFIG_HOME": f"{home}/x",
        }
        out = subprocess.run(
            [sys.executable, str(tree / "main.py"), str(model), "--report-ready"],
            env=env,
            cwd=tree,
            capture_output=True,
            text=True,
            timeout=600,
        )
    line = next((x for x in reversed(out.stdout.splitlines()) if x.startswith("{")), None)
    doc = json.loads(line) if line else {}
    keep = ("first_paint_s", "ready_s", "max_ui_stall_ms", "max_ui_stall_where")
    return {"rc": out.returncode, **{k: doc.get(k) for k in keep}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", type=Path)
    ap.add_argument("--peer", required=True, help="the git revision to compare with")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", type=Path, help="append each run as a JSON line")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "bench"))
    from peer import peer_tree

    with peer_tree(args.peer) as peer:
        for k in range(args.repeat):  # interleaved: the machine's noise falls on both alike
            for who, tree in (("ours", ROOT), ("peer", peer)):
                row = {"who": who, "round": k, "model": args.model.name, **run(tree, args.model.resolve())}
                print(json.dumps(row), flush=True)
                if args.json:
                    with args.json.open("a") as f:
                        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
