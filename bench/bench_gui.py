"""Benchmark the desktop app's graph view against Graphviz dot and Netron, in one run.

For transformer-style models of about 1k, 10k and 50k nodes (bench/make_models.py):

- ``ours``: ``python main.py MODEL --report-startup`` (the real app, offscreen Qt,
  default parser), median of ``--repeat`` runs: window, layout and first coloured
  paint times from process start, and the longest UI-thread stall seen meanwhile;
- ``ours-full``: in-process, our layout of *every* node (all groups expanded), the
  like-for-like comparison with the peers, which always lay out every node; with
  a 5 ms heartbeat timer on the UI thread while that layout runs in its worker;
- ``frame``: paint time of the fully expanded 50k-node view at several zooms, and
  after a pan (offscreen raster, median of 10 paints);
- ``dot``: Graphviz ``dot -Tplain`` on the same graph (nodes and edges), capped;
- ``netron``: Netron (the ``netron`` package, on 127.0.0.1) rendering the model in
  headless Debian chromium driven by playwright-core (bench/netron), capped.

Usage::

    python bench/bench_gui.py [--repeat 3] [--sizes 1000 10000 50000] [--cap 300]
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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from make_models import make_transformer  # noqa: E402


def ours_startup(path: Path, repeat: int) -> dict[str, float]:
    runs = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(repeat):
        r = subprocess.run(
            [sys.executable, "main.py", str(path), "--report-startup"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("{")]
        if r.returncode != 0 or not line:
            raise RuntimeError(f"main.py failed: {r.stderr[-1500:]}")
        runs.append(json.loads(line[-1]))
    return {
        k: statistics.median(r[k] for r in runs) if k != "max_ui_stall_ms" else max(r[k] for r in runs) for k in runs[0]
    }


def ours_full_layout(path: Path) -> dict[str, float]:
    """Lay out every node in a worker with a UI heartbeat; then time paints of that view."""
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication
    from splitscope.engine.split.analyze import analyze_model
    from splitscope.engine.view.hierarchy import build_hierarchy
    from splitscope.gui.canvas.canvas import GraphCanvas
    from splitscope.profiler.jobs import JobRunner

    app = QApplication.instance() or QApplication([])
    assert app is not None
    gm = analyze_model(path, parser="table")
    every = {g.id for g in build_hierarchy(gm, gm.order).groups if g.parent != -1}
    from splitscope.engine.view.layout import prepare_view

    runner = JobRunner()
    result: dict[str, object] = {}
    loop = QEventLoop()
    runner.job_finished.connect(lambda v: (result.__setitem__("view", v), loop.quit()))
    runner.job_failed.connect(lambda m, d: (result.__setitem__("error", m), loop.quit()))
    beat = {"last": time.perf_counter(), "max": 0.0}

    def tick() -> None:
        now = time.perf_counter()
        beat["max"] = max(beat["max"], now - beat["last"])
        beat["last"] = now

    timer = QTimer()
    timer.setInterval(5)
    timer.timeout.connect(tick)
    timer.start()
    t0 = time.perf_counter()
    beat["last"] = t0
    runner.start(lambda token: prepare_view(gm, expanded=every, cancel=token))
    loop.exec()
    full = time.perf_counter() - t0
    timer.stop()
    view = result["view"]
    out: dict[str, float] = {
        "full_layout_s": round(full, 3),
        "items": view.layout.size,  # type: ignore[union-attr]
        "ui_stall_during_layout_ms": round(beat["max"] * 1000, 1),
    }
    canvas = GraphCanvas()
    canvas.resize(1400, 900)
    canvas.show()
    canvas.set_graph(gm, view.hier, view.layout)  # type: ignore[union-attr]
    x0, y0, x1, y1 = view.layout.bounds()  # type: ignore[union-attr]

    from PySide6.QtGui import QImage, QPainter

    frame = QImage(1400, 900, QImage.Format.Format_ARGB32_Premultiplied)

    def frame_ms(scale: float, cx: float, cy: float) -> float:
        """What paintEvent does, into a window-sized raster image, panning 40 px a frame."""
        canvas.scale, canvas.cy = scale, cy
        times = []
        for k in range(10):
            canvas.cx = cx + k * 40 / scale
            t = time.perf_counter()
            p = QPainter(frame)
            canvas.render_to(p, frame.rect(), canvas.scene_rect(), canvas.scale)
            p.end()
            times.append((time.perf_counter() - t) * 1000)
        return round(statistics.median(times), 2)

    mid_y = (y0 + y1) / 2
    out["frame_fit_width_ms"] = frame_ms(min(1400 / (x1 - x0), 1.0), (x0 + x1) / 2, mid_y)
    out["frame_overview_ms"] = frame_ms(max(900 / (y1 - y0), 1e-4), (x0 + x1) / 2, mid_y)
    out["frame_mid_ms"] = frame_ms(0.3, (x0 + x1) / 2, mid_y)
    out["frame_close_ms"] = frame_ms(1.0, (x0 + x1) / 2, mid_y)
    canvas.close()
    return out


def write_dot(path: Path, out: Path) -> int:
    from splitscope.engine.split.analyze import analyze_model

    gm = analyze_model(path, parser="table")
    lines = ["digraph g {", "node [shape=box];"]
    for n in gm.nodes:
        lines.append(f'n{n.index} [label="{n.op_type}"];')
    edges = 0
    for n in gm.nodes:
        for i in n.inputs:
            t = gm.graph.tensors.get(i) if i else None
            if t is not None and t.producer is not None:
                lines.append(f"n{t.producer} -> n{n.index};")
                edges += 1
    lines.append("}")
    out.write_text("\n".join(lines))
    return edges


def timed(cmd: list[str], cap: int) -> tuple[float | None, str]:
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=cap)
    except subprocess.TimeoutExpired:
        return None, f"> {cap} s (stopped)"
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        return None, f"failed: {r.stderr.strip()[-200:]}"
    return wall, r.stdout.strip()


def netron_render(path: Path, cap: int) -> tuple[float | None, str]:
    import netron

    node_dir = ROOT / "bench" / "netron"
    if not (node_dir / "node_modules" / "playwright-core").exists() or not Path("/usr/bin/chromium").exists():
        return None, "not run: needs `npm install` in bench/netron and Debian chromium"
    host, port = netron.serve(str(path), address=("127.0.0.1", 0), browse=False)
    try:
        _, out = timed(["node", str(node_dir / "render.mjs"), f"http://{host}:{port}", str(cap * 1000)], cap + 60)
        d = json.loads(out) if out.startswith("{") else {"error": out}
        if "render_s" in d:
            return float(d["render_s"]), f"{d['nodes']} nodes drawn"
        return None, d.get("error", out)
    finally:
        netron.stop((host, port))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    ap.add_argument("--cap", type=int, default=300, help="seconds after which dot and Netron are stopped")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="splitscope-gui-bench-"))
    import onnx

    rows = []
    for n in args.sizes:
        model = make_transformer(n)
        path = tmp / f"transformer_{n}.onnx"
        onnx.save(model, path)
        nodes = len(model.graph.node)
        del model
        row: dict[str, object] = {"nodes": nodes}
        row.update({f"ours_{k}": v for k, v in ours_startup(path, args.repeat).items() if k != "nodes"})
        row.update({f"ours_{k}": v for k, v in ours_full_layout(path).items()})
        dot_file = tmp / f"g{n}.dot"
        row["edges"] = write_dot(path, dot_file)
        dot_s, dot_note = (
            timed(["dot", "-Tplain", str(dot_file), "-o", os.devnull], args.cap)
            if shutil.which("dot")
            else (None, "not run: graphviz not installed")
        )
        row["dot_s"], row["dot_note"] = (round(dot_s, 2) if dot_s else None), dot_note if not dot_s else ""
        net_s, net_note = netron_render(path, args.cap)
        row["netron_s"], row["netron_note"] = (round(net_s, 2) if net_s else None), net_note
        full = float(row["ours_full_layout_s"])  # type: ignore[arg-type]
        row["dot_over_ours_full"] = round(dot_s / full, 1) if dot_s else f">= {round(args.cap / full, 1)}"
        row["netron_over_ours_full"] = round(net_s / full, 1) if net_s else f">= {round(args.cap / full, 1)}"
        print(json.dumps(row), flush=True)
        rows.append(row)
    meta = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "repeat": args.repeat,
        "cap_s": args.cap,
        "results": rows,
    }
    (args.out / "gui.json").write_text(json.dumps(meta, indent=1))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
