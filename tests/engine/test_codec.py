"""Each result kind's document is named and versioned: older files read (upgraded a version at a time), a newer
one or one of another kind refused in one line that says what to do, and every typed reader goes through it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from splitscope.engine.calib.results import CalibrationDoc
from splitscope.engine.codec import CODECS, Codec, read, stamp
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.kernel.results import KernelDoc
from splitscope.engine.rewrite.optimize import OptimizeResult
from splitscope.engine.runtime.generate import GenerationDoc
from splitscope.engine.runtime.results import ProfileDoc
from splitscope.engine.runtime.verify import BuildReport
from splitscope.engine.sweep.results import SweepDoc
from splitscope.engine.trtdata.doc import EngineDoc

ROOT = Path(__file__).resolve().parents[2]
READERS = {
    "profile": ProfileDoc.from_json,
    "calibration": CalibrationDoc.from_json,
    "generation": GenerationDoc.from_json,
    "kernel": KernelDoc.from_json,
    "sweep": SweepDoc.from_json,
    "engine": EngineDoc.from_json,
    "build": BuildReport.from_json,
    "optimize": OptimizeResult.from_json,
}
"""Every kind's typed reader but the analysis's: an analysis is read back by analysing the model again (its
document is what the CLI and the report write, never an input)."""

LEAST = {"generation": {"generation": {"backend": "ort-cpu", "prompt_len": 8, "steps": 4}}}
"""The least document of a kind its reader takes (the others read from nothing)."""


def test_a_stamp_comes_first_and_leaves_the_document_as_it_was():
    doc = {"latency_ms": {"mean": 1.0}, "schema_version": 7}
    out = stamp("profile", doc)
    assert list(out)[:3] == ["schema", "schema_version", "latency_ms"]
    assert out["schema"] == "splitscope-profile" and out["schema_version"] == CODECS["profile"].version
    assert doc == {"latency_ms": {"mean": 1.0}, "schema_version": 7}


@pytest.mark.parametrize("kind", sorted(READERS))
def test_every_typed_reader_reads_an_unversioned_file_and_refuses_a_newer_one(kind):
    """A file written before versions came in (no stamp) reads; one from a later release says to update; one of
    another kind says where it belongs."""
    reader, least = READERS[kind], LEAST.get(kind, {})
    old = reader(dict(least))
    assert old.to_json()["schema"] == f"splitscope-{kind}"
    assert reader(stamp(kind, least)).to_json()["schema_version"] == CODECS[kind].version
    newer = {"schema": f"splitscope-{kind}", "schema_version": CODECS[kind].version + 1}
    with pytest.raises(SplitscopeError, match=r"written by a newer Splitscope .*update Splitscope to read it"):
        reader(newer)
    other = "analysis"
    with pytest.raises(SplitscopeError, match=f"is a splitscope-{other} document, not a splitscope-{kind} one"):
        reader(stamp(other, {}))


def test_upgrades_run_one_version_at_a_time_in_order():
    seen: list[int] = []

    def up(v: int):
        def f(d: dict) -> dict:
            seen.append(v)
            return {**d, f"v{v + 1}": True}

        return f

    codec = Codec("profile", 3, {0: up(0), 2: up(2)})  # v1 -> v2 needed nothing but the stamp
    doc = codec.read({"x": 1})
    assert seen == [0, 2]
    assert doc == {"schema": "splitscope-profile", "schema_version": 3, "x": 1, "v1": True, "v3": True}
    current = codec.stamp({"x": 1})
    assert codec.read(current) is current  # a current document is not copied


def test_a_recorded_profile_of_an_older_release_reads_through_its_codec():
    """The H200 kernel run recorded before versions: read as version 0, every field kept."""
    doc = json.loads((ROOT / "tests" / "data" / "kernel_fused_fast_h200.json").read_text())
    assert "schema" not in doc
    up = read("kernel", doc, "kernel_fused_fast_h200.json")
    assert {k: v for k, v in up.items() if not k.startswith("schema")} == doc


def test_a_version_that_is_not_a_number_is_refused():
    with pytest.raises(SplitscopeError, match="schema_version 'two' is not a version"):
        read("sweep", {"schema": "splitscope-sweep", "schema_version": "two"}, "sweep.json")


def test_the_report_refuses_a_later_releases_file_and_another_kinds(tmp_path):
    """``splitscope report --profile F``: a profile of a later release, or a calibration given as a profile, is
    refused in one line naming the option and the file."""
    from splitscope.engine.present.inputs import load_doc

    newer = tmp_path / "p.json"
    newer.write_text(json.dumps({"schema": "splitscope-profile", "schema_version": 99, "latency_ms": {}}))
    with pytest.raises(SplitscopeError, match=r"--profile .*p\.json was written by a newer Splitscope"):
        load_doc(newer, "profile")
    other = tmp_path / "c.json"
    other.write_text(json.dumps(stamp("calibration", {"accuracy": {}})))
    with pytest.raises(SplitscopeError, match=r"--profile .*c\.json is a splitscope-calibration document"):
        load_doc(other, "profile")
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"latency_ms": {"mean": 1.0}}))  # before versions: read
    assert load_doc(old, "profile")["latency_ms"] == {"mean": 1.0}


def test_every_result_kind_but_the_analysis_has_a_typed_reader():
    assert set(READERS) == set(CODECS) - {"analysis"}


@pytest.mark.parametrize("kind", ["build", "optimize"])
def test_a_result_made_here_reads_back_equal(kind):
    """What the engine returns and what its document reads back as are the same result."""
    from splitscope.engine.rewrite.optimize import SplitFigures
    from splitscope.engine.runtime.verify import PartitionBuild

    made = (
        BuildReport("rtx", "1.7", "n=8", [PartitionBuild(0, "failed", 3, 0.5, None, None, "x", ["/a"], True)], 1.0)
        if kind == "build"
        else OptimizeResult(
            Path("a.onnx"), Path("b.onnx"), SplitFigures(3, 1, 2, 40), SplitFigures(2, 1, 2, 40), "o", 0.1, True
        )
    )
    back = READERS[kind](json.loads(json.dumps(made.to_json())))
    assert back.to_json() == json.loads(json.dumps(made.to_json()))
