"""The Python API (``import splitscope``): keyword functions returning typed results, progress as a callback, cancel
as a token, the same documents as the command line, on real exports; FLOPs against an independent count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx
import onnxruntime as ort
import pytest
from splitscope.engine.calib.results import CalibrationDoc
from splitscope.engine.cli import main as cli
from splitscope.engine.rewrite.optimize import OptimizeResult
from splitscope.engine.runtime.inputs import input_specs, random_feeds
from splitscope.engine.runtime.profile import ProfileResult

import splitscope
from tests.acceptance.independent import DOMINANT, measured_flops

DATA = Path(__file__).resolve().parents[1] / "data"
TRANSFORMER = DATA / "torch_transformer.onnx"  # TorchScript exporter, symbolic batch and seq
TWO_STAGE = DATA / "torch_two_stage_ort.onnx"  # a backbone, then RoiAlign (ONNX Runtime runs it)
TREX = DATA / "trex"
AT = {"batch": 4, "seq": 16}  # the batch its Reshapes were traced at


def test_import_splitscope_is_instant_and_names_the_api():
    code = (
        "import sys, splitscope; "
        "print(sorted(m for m in ('onnx', 'numpy', 'splitscope.engine.api') if m in sys.modules)); "
        "print(callable(splitscope.analyze), splitscope.engine.__name__)"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    loaded, names = out.stdout.splitlines()
    assert loaded == "[]"  # nothing heavy until a function is used
    assert names == "True splitscope.engine"  # the package keeps its name: the engine verb is engine_report
    assert {"analyze", "profile", "calibrate", "optimize", "engine_report", "report", "kernel"} <= set(dir(splitscope))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = splitscope.nothing  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("path", "dims"), [(TRANSFORMER, {"batch": 2, "seq": 16}), (TWO_STAGE, {})], ids=["transformer", "two-stage"]
)
def test_analyze_counts_the_flops_onnx_runtime_shapes_give(path, dims):
    a = splitscope.analyze(path, parser="table", dims=dims)
    table = a.to_pandas()
    assert len(table) == len(a.model.nodes) and {"name", "op_type", "status", "reason", "flops"} <= set(table)
    ours = int(table[table.op_type.isin(DOMINANT)].flops.fillna(0).sum())
    specs = input_specs(onnx.load(str(path), load_external_data=False))
    assert ours == measured_flops(path, random_feeds(specs, a.model.dims, 0))
    assert a.flops == int(table.flops.fillna(0).sum())


def test_the_command_line_writes_what_the_api_returns(tmp_path):
    out = tmp_path / "a.json"
    assert cli(["analyze", str(TWO_STAGE), "--parser", "table", "--json", str(out), "-q"]) == 0
    assert json.loads(out.read_text()) == json.loads(
        json.dumps(splitscope.analyze(TWO_STAGE, parser="table").to_json())
    )


def test_progress_is_told_each_step_and_cancel_stops_the_work():
    seen: list[tuple[int, int, str]] = []
    splitscope.analyze(TRANSFORMER, parser="table", dims={"batch": 1, "seq": 8}, progress=lambda *s: seen.append(s))
    assert seen[0][2].startswith("Loading") and seen[-1][:2] == (seen[-1][1], seen[-1][1])
    token = splitscope.CancelToken()
    with pytest.raises(splitscope.JobCancelledError):
        splitscope.analyze(
            TRANSFORMER, parser="table", dims={"batch": 1, "seq": 8}, progress=lambda *_: token.cancel(), cancel=token
        )


def test_a_missing_dim_is_refused_by_name_unless_left_unknown():
    with pytest.raises(splitscope.SplitscopeError, match="seq"):
        splitscope.analyze(TRANSFORMER, parser="table")
    a = splitscope.analyze(TRANSFORMER, parser="table", require_dims=False)
    assert "seq" in a.model.missing_dims


def test_profile_returns_its_typed_result_and_a_node_table():
    res = splitscope.profile(TWO_STAGE, iterations=3, warmup=1, profiled=2)
    assert isinstance(res, ProfileResult) and res.latency_ms["mean"] > 0 and res.backend == "ort-cpu"
    table = res.to_pandas()
    assert len(table) == len(res.per_node) > 0 and {"name", "op_type", "ms"} <= set(table)
    assert json.loads(json.dumps(res.to_json()))["iterations"] == 3


def test_calibrate_writes_a_model_that_runs_and_measures_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a relative out
    doc = splitscope.calibrate(TRANSFORMER, "int8.onnx", samples=4, dims=AT, method="max")
    assert isinstance(doc, CalibrationDoc) and doc.precision == "int8" and doc.quantized_nodes > 0
    written = ort.InferenceSession(str(tmp_path / "int8.onnx"), providers=["CPUExecutionProvider"])
    feeds = random_feeds(input_specs(onnx.load(str(TRANSFORMER), load_external_data=False)), AT, 0)
    assert written.run(None, feeds)
    table = doc.to_pandas()
    assert list(table.output) == list(doc.accuracy) and "snr_db" in table


def test_a_cancelled_calibration_leaves_nothing(tmp_path):
    token = splitscope.CancelToken()
    steps: list[str] = []

    def progress(done: int, total: int, message: str) -> None:
        steps.append(message)
        if len(steps) == 3:
            token.cancel()

    with pytest.raises(splitscope.JobCancelledError):
        splitscope.calibrate(TRANSFORMER, tmp_path / "q.onnx", samples=8, dims=AT, progress=progress, cancel=token)
    assert not list(tmp_path.iterdir())


def test_optimize_engine_report_and_report(tmp_path):
    opt = splitscope.optimize(TWO_STAGE, tmp_path / "opt.onnx")
    assert isinstance(opt, OptimizeResult) and (tmp_path / "opt.onnx").is_file() and opt.after.nodes > 0
    layers = next(TREX.glob("pytorch__resnet__A100__fp16__resnet*.graph.json"))
    profile = next(TREX.glob("pytorch__resnet__A100__fp16__resnet*.profile.json"))
    eng = splitscope.engine_report(layers=layers, profile=profile)
    assert len(eng.to_pandas()) == len(eng.json["layers"]) > 0 and eng.model is None
    with pytest.raises(splitscope.SplitscopeError, match="--layers"):
        splitscope.engine_report()
    rep = splitscope.report(TWO_STAGE, tmp_path / "r.html", parser="table")
    assert rep.out.is_file() and rep.bytes == rep.out.stat().st_size and rep.headline


def test_to_pandas_without_pandas_says_how_to_get_it(monkeypatch):
    a = splitscope.analyze(TWO_STAGE, parser="table")
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if not installed
    with pytest.raises(splitscope.SplitscopeError, match=r"pip install 'splitscope\[api\]'"):
        a.to_pandas()
    assert a.to_json()["nodes"] == len(a.model.nodes)  # the JSON needs nothing more
