"""Optimize export on real exports: a real optimizer (onnxscript), checked by onnx, our loader and ONNX Runtime
on seeded inputs, before/after figures; nothing written when anything fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from splitscope.engine.jobs import run_to_end
from splitscope.engine.onnxio.loader import load_model
from splitscope.engine.rewrite.optimize import ATOL, OptimizeError, optimize_export

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def test_torchscript_transformer_loses_half_its_nodes_and_none_of_its_outputs(tmp_path):
    src = DATA / "torch_transformer.onnx"
    before = src.read_bytes()
    res = run_to_end(optimize_export(src, tmp_path / "opt.onnx", parser="table"))
    assert src.read_bytes() == before  # the original is never touched
    assert res.after.nodes < res.before.nodes * 0.7
    assert res.compared and res.outputs == 1 and res.max_abs_diff <= ATOL
    assert res.after.plugin == res.before.plugin == 0
    load_model(tmp_path / "opt.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["opt.onnx"]


def test_custom_op_model_is_optimized_but_not_compared(tmp_path):
    res = run_to_end(optimize_export(ROOT / "resources" / "sample.onnx", tmp_path / "s.onnx", parser="table"))
    assert not res.compared and any("not compared" in n for n in res.notes)
    assert res.after.plugin == res.before.plugin == 2


def test_writing_over_the_original_is_refused(tmp_path):
    src = tmp_path / "m.onnx"
    src.write_bytes((DATA / "torch_detector_if.onnx").read_bytes())
    with pytest.raises(OptimizeError):
        run_to_end(optimize_export(src, src, parser="table"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx"]


def test_cli_optimize_prints_and_writes_json(tmp_path):
    out = tmp_path / "d.onnx"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "splitscope.engine.cli",
            "optimize",
            str(DATA / "torch_detector_if.onnx"),
            "--out",
            str(out),
            "--parser",
            "table",
            "--json",
            str(tmp_path / "d.json"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "before" in proc.stdout and "after" in proc.stdout
    doc = json.loads((tmp_path / "d.json").read_text())
    assert doc["before"]["nodes"] == 34 and doc["after"]["nodes"] < 34 and doc["compared"] is True
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "splitscope.engine.cli",
            "optimize",
            str(tmp_path / "missing.onnx"),
            "--out",
            str(tmp_path / "x.onnx"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
