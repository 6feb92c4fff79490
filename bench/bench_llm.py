"""The window on LLM-scale real exports: startup figures against one bare TensorRT-RTX parser call.

The models come from ``bench/export_llms.py`` (PyTorch's TorchScript exporter, a Llama decoder of 66,
300 and 1,200 tiny layers: about 11k, 50k and 200k nodes). For each, interleaved ``--repeat`` times:

- ``bare``: a Python process that reads the file and calls ``OnnxParser.supports_model_v2`` once;
- ``window``: ``main.py MODEL --report-startup`` (default parser), with settings and data folders in a
  temporary directory: seconds to the window, to the first paint, the longest UI-thread stall, and what
  the first view shows.

Usage::

    python bench/export_llms.py bench/out/llm --llama-layers 66 300 1200
    python bench/bench_llm.py bench/out/llm/llama_ts_*.onnx [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_analyze import BARE  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", type=Path, nargs="+")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="splitscope-llm-bench-"))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen"),
        **{k: str(home / k) for k in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")},
    }
    rows = []
    for path in args.models:
        bare: list[float] = []
        runs: list[dict[str, float]] = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", BARE, str(path)], env=env, check=True, capture_output=True)
            bare.append(time.perf_counter() - t0)
            r = subprocess.run(
                [sys.executable, "main.py", str(path), "--report-startup"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=900,
            )
            line = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
            if r.returncode != 0 or not line:
                raise RuntimeError(f"main.py failed on {path}: {r.stderr[-1500:]}")
            runs.append(json.loads(line[-1]))
        row: dict[str, object] = {"model": path.name, "bare_s": round(statistics.median(bare), 2)}
        for k in runs[0]:
            vals = [r[k] for r in runs]
            if k == "max_ui_stall_where":  # the worst run's
                row[k] = max(runs, key=lambda r: r["max_ui_stall_ms"])[k]
            else:
                row[k] = max(vals) if k == "max_ui_stall_ms" else statistics.median(vals)
        row["first_paint_runs"] = [r["first_paint_s"] for r in runs]
        row["first_paint_over_bare"] = round(float(row["first_paint_s"]) / float(row["bare_s"]), 2)  # type: ignore[arg-type]
        print(json.dumps(row), flush=True)
        rows.append(row)
    meta = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "repeat": args.repeat,
        "results": rows,
    }
    (args.out / "llm.json").write_text(json.dumps(meta, indent=1))


if __name__ == "__main__":
    main()
