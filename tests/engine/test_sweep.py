"""Sweeps: the grid, keys, the Pareto front, and real cells run in child processes on a local Ray and in sequence."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from splitscope.engine.cli import main as cli
from splitscope.engine.errors import JobCancelledError, SplitscopeError
from splitscope.engine.jobs import CancelToken, Sample, run_to_end
from splitscope.engine.sweep import run as R
from splitscope.engine.sweep.grid import Cell, cell_key, expand, parse_dim_values
from splitscope.engine.sweep.results import SweepCell, SweepDoc
from splitscope.engine.sweep.summary import pareto, to_csv


def _mlp(path, hidden: int = 256):  # type: ignore[no-untyped-def]
    """Two MatMuls and a ReLU over a dynamic batch: real work for int8 and fp16 to change."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((64, hidden)).astype(np.float32) * 0.1, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((hidden, 10)).astype(np.float32) * 0.1, "w2")
    g = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"], name="/fc1/MatMul"),
            helper.make_node("Relu", ["h"], ["r"], name="/act/Relu"),
            helper.make_node("MatMul", ["r", "w2"], ["y"], name="/fc2/MatMul"),
        ],
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 10])],
        [w1, w2],
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_grid_dims_and_keys():
    assert parse_dim_values(["batch=1,8,32", "seq=128"]) == {"batch": [1, 8, 32], "seq": [128]}
    for bad in ("batch", "batch=", "batch=0", "batch=a", "=3"):
        with pytest.raises(SplitscopeError):
            parse_dim_values([bad])
    cells = expand(["m.onnx"], {"batch": [1, 8]}, ["ort-cpu", "ort-cuda"], ["fp32", "int8"])
    here = str(Path("m.onnx").resolve())  # absolute: a cell's child runs in a folder of its own
    assert len(cells) == 8 and cells[0] == Cell(here, {"batch": 1}, "ort-cpu", "fp32")
    with pytest.raises(SplitscopeError):
        expand(["m.onnx"], {}, ["onnxruntime"], ["fp32"])
    a = cell_key(cells[0], "h1", "1.0")
    assert a == cell_key(Cell("elsewhere/m.onnx", {"batch": 1}), "h1", "1.0"), (
        "the path is not the model: its content is"
    )
    assert (
        len({a, cell_key(cells[0], "h2", "1.0"), cell_key(cells[0], "h1", "1.1"), cell_key(cells[1], "h1", "1.0")}) == 4
    )


def test_pareto_front_of_latency_against_accuracy():
    def cell(i, ms, snr, model="a"):  # type: ignore[no-untyped-def]
        return {"index": i, "status": "done", "latency_ms": {"p50": ms}, "snr_db": snr, "params": {"model": model}}

    docs = [cell(0, 1.0, None), cell(1, 0.5, 30.0), cell(2, 0.6, 25.0), cell(3, 0.4, 20.0), cell(4, 2.0, 10.0, "b")]
    docs.append({"index": 5, "status": "failed", "params": {"model": "a"}})
    cells = [SweepCell.from_json(d) for d in docs]
    assert pareto(cells) == {0, 1, 3, 4}


def test_a_sweep_on_a_local_ray_marks_the_failed_cell_and_reuses_the_rest(tmp_path, restores_environment):
    pytest.importorskip("ray", reason="Ray is not installed: pip install 'splitscope[sweep]'")
    model = _mlp(tmp_path / "mlp.onnx")
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(model.read_bytes()[:300])  # a truncated export: that cell fails, the others go on
    cells = expand([str(model)], {"batch": [1, 2, 4, 8]}, ["ort-cpu"], ["fp32", "fp16", "int8"], iterations=5, warmup=1)
    cells.append(Cell(str(bad), {"batch": 1}, iterations=5, warmup=1))
    store = tmp_path / "store"
    seen: list[int] = []
    gen = R.run_sweep(cells, ray=True, folder=store)
    while True:
        try:
            ev = next(gen)
        except StopIteration as stop:
            doc = stop.value
            break
        if isinstance(ev, Sample):
            seen.append(int(ev.x))
    assert doc["runner"] == "ray" and len(doc["cells"]) == 13 and sorted(seen) == list(range(13))
    status = [c["status"] for c in doc["cells"]]
    assert status[:12] == ["done"] * 12 and status[12] == "failed"
    assert "broken.onnx" in doc["cells"][12]["error"] or "truncated" in doc["cells"][12]["error"]
    for c in doc["cells"][:12]:
        assert c["latency_ms"]["p50"] > 0 and c["device"]
        assert (c["snr_db"] is None) == (c["params"]["precision"] == "fp32")
    # Run again: the finished cells are reused, the failed one runs again.
    again = run_to_end(R.run_sweep(cells, ray=True, folder=store))
    assert [c["reused"] for c in again["cells"]] == [True] * 12 + [False]
    assert again["cells"][0]["latency_ms"] == doc["cells"][0]["latency_ms"]


def test_without_ray_the_sweep_runs_in_sequence_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(R, "ray_module", lambda: None)
    model = _mlp(tmp_path / "mlp.onnx", hidden=32)
    cells = expand([str(model)], {"batch": [1, 2]}, ["ort-cpu"], ["fp32"], iterations=3, warmup=1)
    doc = run_to_end(R.run_sweep(cells, folder=tmp_path / "store"))
    assert doc["runner"] == "sequence" and any("Ray is not installed" in n for n in doc["notes"])
    assert [c["status"] for c in doc["cells"]] == ["done", "done"]
    csv_text = to_csv(SweepDoc.from_json(doc))
    assert csv_text.splitlines()[0].startswith("model,dims,backend,precision") and len(csv_text.splitlines()) == 3


def test_a_cancelled_sweep_keeps_nothing_it_did_not_finish(tmp_path):
    model = _mlp(tmp_path / "mlp.onnx", hidden=32)
    cells = expand([str(model)], {"batch": [1, 2, 3]}, ["ort-cpu"], ["fp32"], iterations=3, warmup=1)
    token = CancelToken()
    gen = R.run_sweep(cells, ray=False, cancel=token, folder=tmp_path / "store")
    with pytest.raises(JobCancelledError):
        for ev in gen:
            if isinstance(ev, Sample):
                token.cancel()  # after the first cell
    kept = list((tmp_path / "store").glob("*.json"))
    assert len(kept) == 1, "only the finished cell is kept"


def test_cli_sweep_json_and_csv(tmp_path):
    model = _mlp(tmp_path / "mlp.onnx", hidden=32)
    out, table = tmp_path / "sweep.json", tmp_path / "sweep.csv"
    args = ["sweep", str(model), "--dim", "batch=1,2", "--precision", "fp32,int8", "--iterations", "3", "--no-ray"]
    assert cli([*args, "--json", str(out), "--csv", str(table), "-q"]) == 0
    doc = json.loads(out.read_text())
    assert len(doc["cells"]) == 4
    for c in doc["cells"]:
        assert set(c["params"]) >= {"model", "dims", "backend", "precision", "target"}
        assert c["status"] == "done" and "p50" in c["latency_ms"]
    assert len(table.read_text().splitlines()) == 5
    assert cli(["sweep", str(model), "--dim", "batch=x"]) == 2


def test_a_silent_cell_times_out_and_a_cancel_reaches_it(monkeypatch, test_job_kinds):
    """The deadline and Cancel hold while the cell's child says nothing at all (a hung build)."""
    import time

    from splitscope.engine.process import JobProcess

    monkeypatch.setattr(R, "_job", lambda cell: JobProcess("test-sleep", {"seconds": 60}))
    t0 = time.perf_counter()
    doc = R.run_one(Cell("m.onnx"), timeout_s=1.0)
    assert doc["status"] == "timeout" and time.perf_counter() - t0 < 10
    token = CancelToken()
    import threading

    threading.Timer(1.0, token.cancel).start()
    doc = R.run_one(Cell("m.onnx"), timeout_s=60, cancel=token)
    assert doc["status"] == "cancelled" and doc["seconds"] < 10


def test_the_report_shows_the_sweep_of_its_model(tmp_path):
    import html5lib

    model = _mlp(tmp_path / "mlp.onnx", hidden=32)
    out, page = tmp_path / "sweep.json", tmp_path / "report.html"
    assert (
        cli(
            [
                "sweep",
                str(model),
                "--dim",
                "batch=1,2",
                "--precision",
                "fp32,int8",
                "--iterations",
                "3",
                "--no-ray",
                "--json",
                str(out),
                "-q",
            ]
        )
        == 0
    )
    assert (
        cli(
            [
                "report",
                str(model),
                "--parser",
                "table",
                "--dim",
                "batch=1",
                "--sweep",
                str(out),
                "--out",
                str(page),
                "-q",
            ]
        )
        == 0
    )
    html = page.read_text()
    html5lib.HTMLParser(strict=True).parse(html)
    section = html[html.index('<section id="sweep">') :]
    section = section[: section.index("</section>")]
    assert section.count("<tr>") == 5 and "batch=2" in section and "★" in section and "reference" in section
    other = _mlp(tmp_path / "other.onnx", hidden=16)
    assert (
        cli(
            [
                "report",
                str(other),
                "--parser",
                "table",
                "--dim",
                "batch=1",
                "--sweep",
                str(out),
                "--out",
                str(tmp_path / "r2.html"),
                "-q",
            ]
        )
        == 2
    )


def test_a_precision_search_runs_as_a_grid_of_its_candidates(tmp_path):
    model = _mlp(tmp_path / "mlp.onnx", hidden=64)
    out = tmp_path / "search.json"
    args = ["sweep", str(model), "--dim", "batch=2", "--precision", "fp32,int8", "--search-candidates", "2"]
    assert cli([*args, "--iterations", "3", "--samples", "4", "--no-ray", "--json", str(out), "-q"]) == 0
    doc = json.loads(out.read_text())
    kept = [(c["params"]["precision"], len(c["params"]["keep"])) for c in doc["cells"]]
    assert kept == [("fp32", 0), ("int8", 0), ("int8", 1), ("int8", 2)]
    assert all(c["status"] == "done" for c in doc["cells"])
    one = doc["cells"][2]["params"]["keep"]
    assert one and set(one) <= set(doc["cells"][3]["params"]["keep"]), "candidates grow by the next most sensitive"
    snr = [c["snr_db"] for c in doc["cells"][1:]]
    assert snr[2] >= snr[0] - 1.0, "keeping nodes in float does not lose accuracy"


def test_a_sweep_file_edited_out_of_shape_is_refused_in_one_line():
    from splitscope.engine.errors import SplitscopeError

    bad = {"cells": [{"index": 0, "params": {"model": "m.onnx", "dims": {"batch": "eight"}}, "status": "done"}]}
    with pytest.raises(SplitscopeError, match="run the sweep again"):
        SweepDoc.from_json(bad)
