"""The JSON each CLI verb writes, against the keys the user guide documents for it: a schema test per verb, on real
models (the bundled sample, a model the onnx package ships, trtexec files from the engine explorer's
samples). A key renamed or dropped in a result type fails here before a user's script does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from splitscope.engine.cli import main as cli
from splitscope.engine.codec import CODECS

from tests.engine.models import LIGHT_DIR

ROOT = Path(__file__).resolve().parents[2]
SQUEEZENET = LIGHT_DIR / "light_squeezenet.onnx"
TREX = ROOT / "tests" / "data" / "trex"


KINDS = {
    "analyze": "analysis",
    "profile": "profile",
    "calibrate": "calibration",
    "optimize": "optimize",
    "engine": "engine",
}
"""The result kind each verb writes (its codec: splitscope.engine.codec)."""


def _run(tmp_path: Path, *argv: str) -> dict:
    out = tmp_path / f"{argv[0]}.json"
    assert cli([*argv, "--json", str(out), "-q"]) == 0
    doc = json.loads(out.read_text())
    kind = KINDS.get(argv[0])
    if kind is not None:  # every document opens with its kind and version
        assert list(doc)[:2] == ["schema", "schema_version"]
        assert (doc["schema"], doc["schema_version"]) == (f"splitscope-{kind}", CODECS[kind].version)
    return doc


def _has(doc: dict, keys: list[str], where: str) -> None:
    missing = [k for k in keys if k not in doc]
    assert not missing, f"{where} lacks {missing}"


def test_analyze(tmp_path):
    doc = _run(tmp_path, "analyze", "--parser", "table")
    _has(
        doc,
        ["model", "parser", "nodes", "summary", "roles", "partitions", "boundary_bytes", "unproven", "node_status"],
        "analyze",
    )
    _has(doc["parser"], ["name", "version", "calls"], "analyze.parser")
    _has(doc["unproven"], ["count", "nodes"], "analyze.unproven")
    _has(doc["partitions"][0], ["nodes", "boundary_tensors"], "analyze.partitions[]")
    row = next(r for r in doc["node_status"] if r["status"] == "plugin")
    _has(
        row,
        [
            "name",
            "op_type",
            "domain",
            "status",
            "role",
            "reason",
            "cause",
            "remedy",
            "source",
            "flops",
            "bytes",
            "scope",
            "table_status",
        ],
        "analyze.node_status[] (plugin)",
    )


def test_profile(tmp_path):
    doc = _run(
        tmp_path,
        "profile",
        str(SQUEEZENET),
        "--iterations",
        "3",
        "--warmup",
        "1",
        "--profiled",
        "2",
        "--parser",
        "table",
    )
    _has(
        doc,
        [
            "backend",
            "device",
            "iterations",
            "warmup",
            "latency_ms",
            "throughput",
            "per_node",
            "per_op",
            "copies",
            "split_cost",
            "verdict",
            "verified",
            "notes",
        ],
        "profile",
    )
    _has(doc["latency_ms"], ["mean", "min", "p50", "p90", "p99", "max", "std"], "profile.latency_ms")
    _has(
        doc["per_node"][0],
        ["name", "index", "op_type", "ms", "share", "status", "flops", "bytes", "class", "sol_ms", "headroom_ms"],
        "profile.per_node[]",
    )
    _has(doc["verdict"], ["verdict", "why", "fix", "numbers"], "profile.verdict")
    _has(doc["verdict"]["numbers"], ["io_copy_ms", "boundary_copy_ms", "copies_measured"], "profile.verdict.numbers")
    assert doc["verified"] is True  # ONNX Runtime ran it for real
    if "measured" not in doc["copies"]:  # no GPU here: said, and no copy figure filled in
        assert doc["copies"]["not_measured"] and "io_pageable_ms" not in doc["copies"]


def test_engine(tmp_path):
    doc = _run(
        tmp_path,
        "engine",
        "--layers",
        str(TREX / "pytorch__resnet__A100__fp16__resnet.onnx.engine.graph.json"),
        "--profile",
        str(TREX / "pytorch__resnet__A100__fp16__resnet.onnx.engine.profile.json"),
    )
    _has(doc, ["layout", "layers", "unmapped_layers", "mapped_node_share", "mapped_data_node_share", "lint"], "engine")
    _has(doc["layers"][0], ["name", "type", "precision", "ms", "share", "onnx_nodes", "mapped_by"], "engine.layers[]")


@pytest.mark.parametrize("precision", ["int8", "fp16"])
def test_calibrate(tmp_path, precision):
    doc = _run(
        tmp_path,
        "calibrate",
        str(SQUEEZENET),
        "--samples",
        "2",
        "--method",
        "max",
        "--precision",
        precision,
        "--out",
        str(tmp_path / f"q.{precision}.onnx"),
    )
    _has(
        doc,
        [
            "method",
            "precision",
            "samples",
            "seconds",
            "tensors",
            "excluded",
            "accuracy",
            "ranges",
            "written_checks",
            "notes",
            "quantized",
        ],
        "calibrate",
    )
    if precision == "fp16":
        _has(doc, ["casts", "kept_reasons", "emulated"], "calibrate (fp16)")
    assert any("ONNX Runtime" in n for n in doc["written_checks"])
    from splitscope.engine.calib.results import CalibrationDoc

    typed = CalibrationDoc.from_json(doc)  # as the window reads it
    assert typed.to_json() is doc and typed.precision == precision and typed.uses_casts == (precision == "fp16")
    assert set(typed.accuracy) == set(doc["accuracy"]) and typed.excluded == tuple(doc["excluded"])


def test_optimize(tmp_path):
    doc = _run(tmp_path, "optimize", str(SQUEEZENET), "--out", str(tmp_path / "o.onnx"), "--parser", "table")
    _has(
        doc,
        ["source", "output", "optimizer", "before", "after", "compared", "max_abs_diff", "tolerance", "notes"],
        "optimize",
    )
    _has(doc["before"], ["nodes", "plugin", "partitions", "boundary_bytes"], "optimize.before")


def test_report(tmp_path):
    prof = tmp_path / "p.json"
    assert (
        cli(
            [
                "profile",
                str(SQUEEZENET),
                "--iterations",
                "2",
                "--warmup",
                "0",
                "--profiled",
                "1",
                "--parser",
                "table",
                "--json",
                str(prof),
                "-q",
            ]
        )
        == 0
    )
    doc = _run(
        tmp_path,
        "report",
        str(SQUEEZENET),
        "--profile",
        str(prof),
        "--parser",
        "table",
        "--out",
        str(tmp_path / "r.html"),
    )
    _has(
        doc,
        [
            "title",
            "model",
            "parser",
            "headline",
            "decision",
            "numbers",
            "scenarios",
            "custom",
            "partitions",
            "time",
            "out",
            "bytes",
        ],
        "report",
    )
    _has(doc["time"], ["backend", "latency_ms", "verdict", "split", "verified", "copies_not_measured"], "report.time")


def test_the_window_reads_a_profile_as_typed_records(tmp_path):
    """The profile the CLI writes, read as the window reads it (typed records, not string keys), gives back
    the same document; an older saved profile (copies' "note", no copies_measured) reads too."""
    from splitscope.engine.runtime.results import ProfileDoc

    doc = _run(
        tmp_path,
        "profile",
        str(SQUEEZENET),
        "--iterations",
        "3",
        "--warmup",
        "1",
        "--profiled",
        "2",
        "--parser",
        "table",
    )
    typed = ProfileDoc.from_json(doc)
    assert typed.to_json() is doc and typed.backend == "ort-cpu" and typed.verified
    assert typed.latency.mean == doc["latency_ms"]["mean"] and len(typed.per_node) == len(doc["per_node"])
    top = typed.per_node[0]
    assert (top.name, top.ms, top.roofline_class) == (
        doc["per_node"][0]["name"],
        doc["per_node"][0]["ms"],
        doc["per_node"][0]["class"],
    )
    old = ProfileDoc.from_json(
        {
            "backend": "ort-cpu",
            "copies": {"note": "no GPU"},
            "verdict": {"numbers": {"io_copy_ms": 0.0, "boundary_copy_ms": 0.0}},
        }
    )
    assert old.copies.not_measured == "no GPU" and old.verdict.copies_measured and old.per_node == ()
