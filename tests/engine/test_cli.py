"""`splitscope analyze`: summary, JSON fields, exit codes, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from splitscope.engine.cli import main

from tests.engine import models as M

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "splitscope.engine.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


def test_analyze_sample_json(tmp_path, capsys):
    out = tmp_path / "a.json"
    assert main(["analyze", "--parser", "table", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "sample.onnx: 41 nodes" in printed and "DCNv4" in printed
    d = json.loads(out.read_text())
    for key in ("model", "parser", "nodes", "summary", "partitions", "boundary_bytes", "node_status"):
        assert key in d
    assert d["parser"]["name"] == "table" and d["parser"]["version"] == "11.1"
    assert d["nodes"] == 41 == len(d["node_status"])
    assert d["summary"]["plugin"]["nodes"] == 2
    assert abs(d["summary"]["delegate"]["node_share"] + d["summary"]["plugin"]["node_share"] - 1) < 1e-9
    assert {"name", "bytes"} <= set(d["partitions"][0]["boundary_tensors"][0])
    assert d["boundary_bytes"] == 51700 or d["boundary_bytes"] > 0
    row = next(r for r in d["node_status"] if r["op_type"] == "DCNv4")
    assert row == {**row, "domain": "com.example.vision", "status": "plugin", "source": "table"}
    assert {"name", "op_type", "domain", "status", "role", "reason", "source", "flops"} <= set(row)


@pytest.mark.parametrize("parser", ["rtx", "auto"])
def test_analyze_with_real_parser(tmp_path, parser):
    pytest.importorskip("tensorrt_rtx", reason="TensorRT-RTX not installed")
    out = tmp_path / "a.json"
    r = _run("analyze", "--parser", parser, "--json", str(out))
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert d["parser"]["name"] in ("tensorrt-rtx", "tensorrt")
    assert all(n["source"] == "parser" for n in d["node_status"])


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "No such file"),
        (b"", "empty"),
        (b"\x08\x07garbage\xff\xff\xff\xff", "not"),
    ],
)
@pytest.mark.parametrize("parser", ["table", "rtx"])
def test_bad_input_exit_2_one_line(tmp_path, content, needle, parser):
    """With a real parser asked, the parser started before the engine is loaded is stopped when the file is bad."""
    if parser == "rtx":
        pytest.importorskip("tensorrt_rtx", reason="TensorRT-RTX not installed")
    p = tmp_path / "bad.onnx"
    if content is not None:
        p.write_bytes(content)
    r = _run("analyze", str(p), "--parser", parser)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("splitscope: ") and needle in lines[0]
    assert "Traceback" not in r.stderr


def test_unnamed_nodes_in_json(tmp_path):
    from onnx import TensorProto as T
    from onnx import helper as h

    m = M.model(
        [h.make_node("Relu", ["x"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    p = M.save(m, tmp_path / "m.onnx")
    out = tmp_path / "o.json"
    assert main(["analyze", str(p), "--parser", "table", "--json", str(out), "-q"]) == 0
    assert json.loads(out.read_text())["node_status"][0]["name"] == "#0"


def test_json_write_is_atomic(tmp_path, monkeypatch):
    """A failure while writing leaves the previous file intact and no temp file behind."""
    from splitscope.engine.report import files as report

    out = tmp_path / "a.json"
    out.write_text("previous")

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report.os, "fsync", boom)
    with pytest.raises(OSError):
        report.write_text_atomic(out, "new")
    assert out.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_bad_dim_flag(capsys):
    assert main(["analyze", "--parser", "table", "--dim", "batch"]) == 2
    assert "NAME=INT" in capsys.readouterr().err


def test_written_files_get_ordinary_permissions(tmp_path):
    """Atomic writes go through mkstemp (mode 0600); the result must look like any file the user saves."""
    import os

    from splitscope.engine.report.files import atomic_path, write_text_atomic

    old = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "a.json", "{}")
        with atomic_path(tmp_path / "b.png") as tmp:
            tmp.write_bytes(b"png")
    finally:
        os.umask(old)
    for name in ("a.json", "b.png"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.png"]


def test_a_dim_the_model_lacks_is_refused_with_the_models_dims_named(capsys):
    """``--dim H=640`` on a model whose dims are batch and seq: exit 2, naming them (never silently ignored)."""
    from pathlib import Path

    model = Path(__file__).resolve().parents[2] / "tests" / "data" / "torch_transformer.onnx"
    assert main(["analyze", str(model), "--dim", "H=640", "--parser", "table", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--dim H" in err and "batch, seq" in err and "\n" not in err


def test_the_summary_counts_the_constant_nodes_folded_into_each_partition(tmp_path, capsys):
    """A weight aliased and cast (two constant-only nodes) feeds partition 1's MatMul; a custom op splits the graph,
    and partition 2 reads no constant node."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h

    w = h.make_tensor("w", T.FLOAT16, [4, 4], [0.0] * 16)
    nodes = [
        h.make_node("Identity", ["w"], ["w1"], name="alias"),
        h.make_node("Cast", ["w1"], ["w2"], name="cast", to=T.FLOAT),
        h.make_node("MatMul", ["x", "w2"], ["m"], name="mm"),
        h.make_node("Odd", ["m"], ["o"], name="odd", domain="com.example"),
        h.make_node("Relu", ["o"], ["y"], name="relu"),
    ]
    g = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
        [w],
    )
    p = tmp_path / "m.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.example", 1)]), str(p))
    assert main(["analyze", str(p), "--parser", "table"]) == 0
    lines = [ln.strip() for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("engine partition ")]
    assert lines[0].startswith("engine partition 1: 1 node (+2 constant-only, folded in as weights)")
    assert lines[1].startswith("engine partition 2: 1 node,")


def test_the_parser_started_first_is_the_one_the_analysis_takes(tmp_path):
    """``analyze`` starts the real parser before importing the engine; the analysis takes that child (no second
    one), and one nobody takes is stopped."""
    pytest.importorskip("tensorrt_rtx", reason="TensorRT-RTX not installed")
    from splitscope.engine.split import parser as P
    from splitscope.engine.split.analyze import analyze_model

    model = ROOT / "tests" / "data" / "torch_two_stage_ort.onnx"
    P.start_early("rtx", str(model))
    early = next(iter(P._EARLY.values()))
    gm = analyze_model(model, parser="rtx")
    assert not P._EARLY and early.proc.poll() is not None  # taken, asked and ended
    assert gm.parser.name == "tensorrt-rtx" and any(n.status.value == "plugin" for n in gm.nodes)
    P.start_early("rtx", str(model))
    left = next(iter(P._EARLY.values()))
    P.drop_early()
    assert not P._EARLY and left.proc.poll() is not None
    P.start_early("table", str(model))
    P.start_early("rtx", str(tmp_path / "missing.onnx"))
    assert not P._EARLY  # nothing to start: the analysis says what is wrong
    # What the console script reads: the model analyze is given, never another path on its command line.
    from splitscope.engine.cli.start import _parser_first

    other = tmp_path / "out.json"
    other.write_text("{}")
    for argv in (["analyze", "--json", str(other)], ["analyze", "--parser", "table", str(model)], ["analyze", "-x"]):
        _parser_first(argv)
        assert not P._EARLY, argv
    _parser_first(["analyze", "--json", str(other), "--parser", "rtx", str(model)])
    assert list(P._EARLY) == [("tensorrt_rtx", model.resolve())]
    P.drop_early()


def test_json_to_a_folder_or_an_unwritable_place_names_the_path_asked_for(tmp_path, capsys):
    """The atomic write's temporary file beside the target is no name to give the user."""
    folder = tmp_path / "out"
    folder.mkdir()
    assert main(["analyze", "--parser", "table", "--json", str(folder), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [err] and f"{folder} is a folder" in err and ".tmp" not in err
    assert list(folder.iterdir()) == []
    target = Path("/proc/splitscope-test.json")  # a folder nobody can create files in, root included
    assert main(["analyze", "--parser", "table", "--json", str(target), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert f"cannot write {target}" in err and ".tmp" not in err
