"""The one model writer: the .onnx and its <out>.data are staged together and moved into place together. Re-runs
into the same --out, a failure midway and Cancel each leave the old pair or the new pair, never a mix or an
orphan; a source with external data keeps it external in every output."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto
from splitscope.engine.calib import calibrate as calibrate_mod
from splitscope.engine.calib.calibrate import calibrate
from splitscope.engine.errors import JobCancelledError
from splitscope.engine.jobs import CancelToken, Progress, run_to_end
from splitscope.engine.onnxio import writer
from splitscope.engine.onnxio.writer import ModelWriter, external_locations, write_model
from splitscope.engine.rewrite.optimize import optimize_export

from tests.engine.test_calib import _cnn


def _external_cnn(tmp_path: Path) -> Path:
    src = onnx.load(_cnn(tmp_path / "plain.onnx"))
    ext = tmp_path / "src" / "cnn.onnx"
    ext.parent.mkdir()
    onnx.save(
        src,
        str(ext),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="cnn.weights",
        size_threshold=0,
    )
    return ext


def _digest(*paths: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") or p.name.endswith(".tmp"))


def _runs(path: Path) -> None:
    ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"x": np.ones((1, 3, 16, 16), np.float32)}
    )


@pytest.mark.parametrize("precision", ["int8", "fp16"])
def test_rerun_into_the_same_out_replaces_the_pair(tmp_path, monkeypatch, precision):
    """onnx 1.23 refuses to write external data over an existing file (older onnx appends): a second run into
    the same --out must still give one model and one sidecar of the right size."""
    monkeypatch.setattr(writer, "EXTERNAL_ABOVE", 100)
    src = _external_cnn(tmp_path)
    out = tmp_path / f"q.{precision}.onnx"
    run_to_end(calibrate(src, out, precision=precision, samples=2, method="max"))
    first = (tmp_path / f"{out.name}.data").stat().st_size
    run_to_end(calibrate(src, out, precision=precision, samples=2, method="max"))
    assert (tmp_path / f"{out.name}.data").stat().st_size == first  # replaced, not appended
    assert external_locations(out) == {f"{out.name}.data"}
    assert _leftovers(tmp_path) == []
    if precision == "int8":
        _runs(out)


def test_a_failure_midway_leaves_the_old_pair(tmp_path, monkeypatch):
    src = _external_cnn(tmp_path)
    out = tmp_path / "q.onnx"
    run_to_end(calibrate(src, out, samples=2, method="max"))
    pair = [out, tmp_path / "q.onnx.data"]
    before = _digest(*pair)

    def broken(*_a, **_k):  # the accuracy pass fails after the new model was staged
        raise RuntimeError("injected failure after staging")

    monkeypatch.setattr(calibrate_mod, "measure", broken)
    with pytest.raises(RuntimeError, match="injected"):
        run_to_end(calibrate(src, out, samples=2, method="percentile"))
    assert _digest(*pair) == before and _leftovers(tmp_path) == []
    _runs(out)


def test_cancel_after_staging_leaves_the_old_pair(tmp_path):
    src = _external_cnn(tmp_path)
    out = tmp_path / "q.onnx"
    run_to_end(calibrate(src, out, samples=2, method="max"))
    pair = [out, tmp_path / "q.onnx.data"]
    before = _digest(*pair)
    token = CancelToken()
    job = calibrate(src, out, samples=2, method="mse", cancel=token)
    staged_seen = False
    with pytest.raises(JobCancelledError):
        for ev in job:
            if isinstance(ev, Progress) and ev.stage == "accuracy":
                staged_seen = any(p.name.endswith(".staging") for p in tmp_path.iterdir())
                token.cancel()
    assert staged_seen  # the new model was staged when Cancel came
    assert _digest(*pair) == before and _leftovers(tmp_path) == []


def test_a_model_without_sidecar_over_one_with_removes_the_old_sidecar(tmp_path):
    cnn = _cnn(tmp_path / "cnn.onnx")
    out = tmp_path / "out.onnx"
    write_model(onnx.load(cnn), out, external=True)
    assert (tmp_path / "out.onnx.data").exists()
    write_model(onnx.load(cnn), out)  # the new pair is the model alone
    assert not (tmp_path / "out.onnx.data").exists() and external_locations(out) == set()
    _runs(out)


def test_a_file_the_old_model_did_not_name_is_never_removed(tmp_path):
    m = onnx.load(_cnn(tmp_path / "cnn.onnx"))
    out = tmp_path / "out.onnx"
    (tmp_path / "out.onnx.data").write_bytes(b"the user's own file")
    write_model(m, out)
    write_model(m, out)
    assert (tmp_path / "out.onnx.data").read_bytes() == b"the user's own file"


def test_a_killed_writer_leaves_a_stage_the_next_one_removes(tmp_path):
    """A job killed outright (SIGKILL after Cancel's grace) cannot clean up: the next writer of the same
    target removes the staging folder of the process that no longer runs."""
    out = tmp_path / "out.onnx"
    code = (
        "import os, onnx, sys; from splitscope.engine.onnxio.writer import ModelWriter\n"
        f"w = ModelWriter({str(out)!r}).__enter__(); w.save(onnx.load({str(_cnn(tmp_path / 'c.onnx'))!r}))\n"
        "os._exit(9)\n"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".staging")]
    write_model(onnx.load(tmp_path / "c.onnx"), out)
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".staging")]


def test_nothing_staged_cannot_be_committed(tmp_path):
    with ModelWriter(tmp_path / "x.onnx") as w, pytest.raises(FileNotFoundError):
        w.commit()
    assert _leftovers(tmp_path) == []


def test_optimize_keeps_external_data_external(tmp_path):
    src = _external_cnn(tmp_path)
    out = tmp_path / "opt.onnx"
    res = run_to_end(optimize_export(src, out))
    assert res.compared
    m = onnx.load(str(out), load_external_data=False)
    assert any(i.data_location == TensorProto.EXTERNAL for i in m.graph.initializer)
    assert external_locations(out) == {"opt.onnx.data"} and _leftovers(tmp_path) == []
    _runs(out)
