"""A screenshot of a 50k-node Llama export opened at seq=128, the Split summary showing its FLOPs at those shapes
(every layer typed: 578 MFLOPs; before the numpy folding of shape arithmetic the same window said 213).

    python bench/export_llms.py DIR --llama-layers 300
    xvfb-run -s '-screen 0 1920x1080x24' python docs/llm_flops_shot.py DIR/llama_ts_300.onnx

Settings and data go to a temporary folder, never the user's.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parent


def main() -> None:
    sys.path.insert(0, str(DOCS))
    from make_screenshots import _app_and_window, isolated_dirs

    tmp = isolated_dirs()
    t0 = time.perf_counter()
    _app, w, pump = _app_and_window(Path(sys.argv[1]), "table", dims={"seq": 128})
    pump(lambda: w.controller.graph_model is not None and not w.runner.running and not w.layout_runner.running, 600)
    pump(timeout=1.0)
    gm = w.controller.graph_model
    print(f"ready after {time.perf_counter() - t0:.1f} s: {gm.total_flops()} FLOPs at {gm.shapes_label()}")
    w.grab().save(str(DOCS / "llama-50k-flops-at-seq128.png"))
    w.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
