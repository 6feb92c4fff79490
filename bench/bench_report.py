"""Report generation time and size for large models, against the analysis alone in the same run.

For each model (a synthetic 50k-node transformer split by a custom op every 100 layers, from
make_models.py, plus any ``--extra`` model such as export_llms.py's 50k-node TorchScript Llama), runs,
interleaved, ``--repeat`` times, each in a fresh process, and reports the median wall time:

- ``analyze``: ``splitscope analyze --parser table --json`` (the peer: what the report builds on);
- ``report-html``: ``splitscope report --parser table --out report.html``;
- ``report-pdf``: ``splitscope report --parser table --out report.pdf``;

with the size of each file written; and, as the window does on File > Export Report (the analysis in hand),
``window-html`` / ``window-pdf``: the report job alone, timed in a process that analysed the model first. The
target (issue 20): a 50k-node report, HTML and PDF, within 5 s on a 2-core machine, under 10 MB.

``--dim NAME=VALUE`` is passed to every command (a model whose dims have no value is counted without its
shapes at those dims).

Usage::

    python bench/bench_report.py [--repeat 3] [--extra MODEL.onnx ...] [--dim seq=128] [--out bench/out/report.json]
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

WINDOW = r"""
import json, sys, time
from splitscope.engine.jobs import run_to_end
from splitscope.engine.present.report import report_job
from splitscope.engine.split.analyze import analyze_model
model, out, dims = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
gm = analyze_model(model, parser="table", dims=dims or None)
t = time.perf_counter()
run_to_end(report_job(gm, out))
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def run(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--extra", type=Path, nargs="*", default=[])
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "report.json")
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args()
    dims = {k: int(v) for k, v in (d.split("=", 1) for d in args.dim)}
    sys.path.insert(0, str(ROOT))
    import onnx

    from bench.make_models import make_transformer

    tmp = Path(tempfile.mkdtemp(prefix="splitscope-report-bench-"))
    synth = tmp / "synthetic_50k_split.onnx"
    onnx.save(make_transformer(50_000, break_every=100), synth)
    env = {**os.environ, "SPLITSCOPE_DATA_DIR": str(tmp / "data"), "XDG_CACHE_HOME": str(tmp / "cache")}
    cli = [sys.executable, "-m", "splitscope.engine.cli"]
    rows = []
    for model in [synth, *args.extra]:
        n = len(onnx.load(str(model), load_external_data=False).graph.node)
        known = {k: v for k, v in dims.items() if k in _dim_names(model)}
        mine = [a for k, v in known.items() for a in ("--dim", f"{k}={v}")]
        cmds = {
            "analyze": [*cli, "analyze", str(model), "--parser", "table", "--json", str(tmp / "a.json"), "-q", *mine],
            "report-html": [*cli, "report", str(model), "--parser", "table", "--out", str(tmp / "r.html"), "-q", *mine],
            "report-pdf": [*cli, "report", str(model), "--parser", "table", "--out", str(tmp / "r.pdf"), "-q", *mine],
        }
        times: dict[str, list[float]] = {k: [] for k in [*cmds, "window-html", "window-pdf"]}
        for _ in range(args.repeat):
            for k, c in cmds.items():
                times[k].append(run(c, env))
            for kind in ("html", "pdf"):
                out = tmp / f"w.{kind}"
                r = subprocess.run(
                    [sys.executable, "-c", WINDOW, str(model), str(out), json.dumps(known)],
                    check=True,
                    capture_output=True,
                    env=env,
                    text=True,
                )
                times[f"window-{kind}"].append(json.loads(r.stdout.strip().splitlines()[-1])["seconds"])
        med = {k: statistics.median(v) for k, v in times.items()}
        row = {
            "model": model.name,
            "nodes": n,
            "dims": known,
            "seconds": {k: round(v, 2) for k, v in med.items()},
            "over_analyze": {k: round(v / med["analyze"], 2) for k, v in med.items()},
            "bytes": {"html": (tmp / "r.html").stat().st_size, "pdf": (tmp / "r.pdf").stat().st_size},
        }
        print(json.dumps(row), flush=True)
        rows.append(row)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"cores": os.cpu_count(), "results": rows}, indent=1))


def _dim_names(model: Path) -> set[str]:
    import onnx
    from splitscope.engine.onnxio.concrete import input_dims

    return {d for _, _, d in input_dims(onnx.load(str(model), load_external_data=False).graph)}


if __name__ == "__main__":
    main()
