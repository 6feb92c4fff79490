"""Compare this checkout with an earlier revision on the same models, interleaved (a restructure must
not cost speed). The earlier revision is checked out into a temporary git worktree and run with the
same Python environment.

    python bench/bench_versions.py REV [--repeat 5] [--model bench/out/transformer_50k.onnx]

For each of ``analyze --parser table``, ``analyze --parser rtx`` and the app's ``--report-startup``
(first paint), runs old and new in turn, ``--repeat`` times, and prints the median seconds of each
and the median of the per-pair ratios old/new (above 1: this checkout is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cli(tree: Path, new: bool, model: Path, parser: str, out: Path) -> list[str]:
    packaged = new or (tree / "splitscope" / "__init__.py").exists()  # revisions before the one package: engine.cli
    module = "splitscope.engine.cli" if packaged else "engine.cli"
    return [sys.executable, "-m", module, "analyze", str(model), "--parser", parser, "-q", "--json", str(out)]


def _env() -> dict[str, str]:
    """Offscreen, with settings, cache, data and logs in a fresh temporary folder: a benchmark never reads or
    writes the user's own (and every run starts from the same state)."""
    tmp = Path(tempfile.mkdtemp(prefix="splitscope-bench-"))
    return {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "SPLITSCOPE_CONFIG_DIR": str(tmp / "sconfig"),
        "SPLITSCOPE_CACHE_DIR": str(tmp / "cache"),
        "SPLITSCOPE_DATA_DIR": str(tmp / "data"),
        "SPLITSCOPE_LOG_DIR": str(tmp / "log"),
    }


def _timed(cmd: list[str], cwd: Path) -> float:
    env = _env()
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, env=env)
    return time.perf_counter() - t0


def _first_paint(tree: Path, model: Path) -> float:
    proc = subprocess.run(
        [sys.executable, "main.py", str(model), "--report-startup"],
        cwd=tree,
        check=True,
        capture_output=True,
        text=True,
        env=_env(),
    )
    return float(json.loads(proc.stdout.strip().splitlines()[-1])["first_paint_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--model", type=Path, default=ROOT / "bench" / "out" / "transformer_50k.onnx")
    args = ap.parse_args()
    if not args.model.exists():
        subprocess.run(
            [sys.executable, str(ROOT / "bench" / "make_models.py"), str(args.model.parent), "--nodes", "50000"],
            check=True,
        )
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-f", "--detach", str(old), args.rev],
            check=True,
            capture_output=True,
        )
        try:
            out = Path(tmp) / "out.json"
            cases = {
                "analyze --parser table": lambda tree, new: _timed(_cli(tree, new, args.model, "table", out), tree),
                "analyze --parser rtx": lambda tree, new: _timed(_cli(tree, new, args.model, "rtx", out), tree),
                "app first paint": lambda tree, new: _first_paint(tree, args.model),
            }
            report = {}
            for name, run in cases.items():
                olds, news = [], []
                for _ in range(args.repeat):
                    olds.append(run(old, False))
                    news.append(run(ROOT, True))
                ratios = [o / n for o, n in zip(olds, news, strict=True)]
                report[name] = {
                    "old_s": round(statistics.median(olds), 3),
                    "new_s": round(statistics.median(news), 3),
                    "old_over_new": round(statistics.median(ratios), 3),
                    "ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
                }
                print(name, report[name], flush=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], capture_output=True)
    (ROOT / "bench" / "out").mkdir(exist_ok=True)
    (ROOT / "bench" / "out" / "versions.json").write_text(json.dumps({"rev": args.rev, **report}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
