"""The Python API's notebook (docs/api_tour.py) run whole on two real models and real photos, as a user would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIMS = ["--dims-a", "height=320,width=320", "--dims-b", "p2o.DynamicDimension.1=640,p2o.DynamicDimension.2=640"]


def test_the_api_tour_runs_on_two_real_models(packages: Path, photos, tmp_path: Path):
    data = photos("chelsea.png", "coffee.png", "motorcycle_left.png", "rocket.jpg")
    yolo = packages / "nudenet" / "320n.onnx"
    dbnet = packages / "rapidocr_onnxruntime" / "models" / "ch_PP-OCRv4_det_infer.onnx"
    run = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "api_tour.py"), str(yolo), str(dbnet), str(data), *DIMS],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    assert re.search(r"A TensorRT(-RTX)? takes all 323 nodes", out) and "at images [1, 3, 320, 320]" in out
    assert re.search(r"B TensorRT(-RTX)? takes all 672 nodes", out) and "at x [1, 3, 640, 640]" in out
    assert re.search(r"p50 [\d.]+ ms, verdict: \S", out)
    int8, fp16 = map(float, re.search(r"output0: INT8 ([\d.-]+) dB, FP16 ([\d.-]+) dB", out).groups())
    assert 15 < int8 < fp16  # the written models were run: INT8 of YOLOv8n on 4 photos ~28 dB, FP16 ~68 dB
    written = re.search(r"written: (\S+) (\S+)", out).groups()
    assert all(Path(p).is_file() and Path(p).is_relative_to(tmp_path) for p in written)
