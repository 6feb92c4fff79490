"""Every written model is run where users run it before it is reported as written: ONNX Runtime CPU at its
default optimisation level (in a child: it can crash) and TensorRT-RTX's parser. The FP16 transformer no longer
carries the pattern that crashes ONNX Runtime 1.30-1.32's CPU optimiser, and that crash is detected and named."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from splitscope.engine.calib import casts
from splitscope.engine.calib.calibrate import calibrate
from splitscope.engine.jobs import run_to_end
from splitscope.engine.runtime.written import WrittenModelError, verify_written

from tests.engine.test_calib import DIMS, ROOT, TRANSFORMER

ORT_CRASHES = tuple(int(x) for x in ort.__version__.split(".")[:2]) in ((1, 30), (1, 31), (1, 32))


def _runs_at_default(path) -> int:
    """Create a default-level CPU session in a fresh process and run it: the process's exit code."""
    code = (
        "import sys, onnx, onnxruntime as ort\n"
        "from splitscope.engine.runtime.inputs import input_specs, random_feeds\n"
        f"p = {str(path)!r}\n"
        "s = ort.InferenceSession(p, providers=['CPUExecutionProvider'])\n"
        f"s.run(None, random_feeds(input_specs(onnx.load(p, load_external_data=False)), {DIMS!r}))\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={"PYTHONPATH": str(ROOT)}, capture_output=True, check=False
    ).returncode


def test_the_written_fp16_transformer_runs_in_onnx_runtime_cpu_at_the_default_level(tmp_path):
    out = tmp_path / "t.fp16.onnx"
    res = run_to_end(calibrate(TRANSFORMER, out, precision="fp16", samples=2, dims=DIMS))
    assert any("loads and runs in ONNX Runtime" in n for n in res["written_checks"])
    assert res["written_runs"]["ort_cpu"] == "runs"
    assert _runs_at_default(out) == 0
    kept = [k for k, r in res["kept_reasons"].items() if r == casts.ORT_TRANSPOSE_REASON]
    assert all("Transpose" in k for k in kept) and bool(kept) == casts.ort_has_transpose_bug()
    pytest.importorskip("tensorrt_rtx", reason="tensorrt_rtx is not installed (the test extra installs it)")
    assert "TensorRT-RTX's parser takes t.fp16.onnx" in res["written_checks"]


def _crash_pattern(path) -> None:
    """The smallest model of the pattern: FP16 3-D Transpose(perm=[1,0,2]) into an FP16 MatMul (valid ONNX)."""
    w = numpy_helper.from_array((np.random.default_rng(0).standard_normal((32, 64)) * 0.1).astype(np.float16), "W")
    g = helper.make_graph(
        [helper.make_node("Transpose", ["X"], ["t"], perm=[1, 0, 2]), helper.make_node("MatMul", ["t", "W"], ["Y"])],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT16, [16, 1, 32])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT16, [1, 16, 64])],
        [w],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, path)


@pytest.mark.skipif(
    not ORT_CRASHES,
    reason=f"onnxruntime {ort.__version__} is not one of the releases (1.30-1.32) "
    "whose CPU optimiser crashes on the pattern",
)
def test_onnx_runtimes_crash_is_detected_and_named_with_the_workaround(tmp_path):
    path = tmp_path / "pattern.onnx"
    _crash_pattern(path)
    checks = verify_written(path, rtx=False)
    assert checks.ort == "crashes-at-default"
    (note,) = checks.notes
    assert "crashes" in note and "ORT_ENABLE_BASIC" in note and "its bug" in note


def test_a_written_model_onnx_runtime_rejects_is_not_written(tmp_path):
    shape = numpy_helper.from_array(np.array([3], np.int64), "shape")
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [shape],
    )
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    with pytest.raises(WrittenModelError, match="does not run in ONNX Runtime"):
        verify_written(path, rtx=False)


@pytest.mark.skipif(
    not ORT_CRASHES,
    reason=f"onnxruntime {ort.__version__} is not one of the releases (1.30-1.32) "
    "whose CPU optimiser crashes on the pattern",
)
def test_optimize_never_runs_in_its_own_process_a_model_onnx_runtime_crashes_on(tmp_path):
    """Optimize Export runs in the window's process: a user's model that crashes ONNX Runtime is checked in a
    child first and not compared (this test's process would die otherwise)."""
    from splitscope.engine.rewrite.optimize import optimize_export

    src = tmp_path / "pattern.onnx"
    _crash_pattern(src)
    res = run_to_end(optimize_export(src, tmp_path / "opt.onnx", parser="table"))
    assert not res.compared and any("crashes" in n for n in res.notes)
