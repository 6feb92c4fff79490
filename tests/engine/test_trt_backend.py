"""The TensorRT backends: the build is real (TensorRT-RTX on the CPU, with its progress monitor and Cancel);
engine execution is FakeEngineSession (tests/engine/fake_trt.py), whose members are checked here to exist
on tensorrt_rtx's real classes, so the fake cannot drift from the API."""

from __future__ import annotations

import pytest
from splitscope.engine.jobs import CancelToken, run_to_end
from splitscope.engine.runtime.profile import profile
from splitscope.engine.runtime.trt import API_USED, BuildCancelled, build_engine, onnx_nodes_of
from splitscope.engine.split.analyze import analyze_model

from tests.engine.fake_trt import FAKES, fake_session_factory
from tests.engine.models import LIGHT_DIR

trt = pytest.importorskip("tensorrt_rtx", reason="tensorrt_rtx is not installed (the test extra installs it)")
MODEL = LIGHT_DIR / "light_squeezenet.onnx"


def test_every_member_the_backend_uses_exists_on_the_real_classes_and_the_fake():
    for cls, members in API_USED.items():
        real = getattr(trt, cls)
        for m in members:
            assert hasattr(real, m), f"tensorrt_rtx.{cls} has no {m}"
        fake = FAKES.get(cls)
        if fake is not None:
            probe = fake.__dict__ | {k: None for k in getattr(fake, "__annotations__", {})}
            for m in members:
                # instance attributes are set in __init__: look at the source for them
                assert m in probe or m in fake.__init__.__code__.co_names, f"{fake.__name__} lacks {m}"


def test_a_real_build_reports_its_phases_and_stops_on_cancel():
    phases: list[str] = []
    plan = build_engine(MODEL, "rtx", on_phase=lambda name, step, total: phases.append(name))
    assert len(plan) > 100_000 and phases
    token = CancelToken()

    def stop(name: str, step: int, total: int) -> None:
        token.cancel()

    with pytest.raises(BuildCancelled):
        build_engine(MODEL, "rtx", cancel=token, on_phase=stop)


def test_inspector_metadata_maps_layers_to_onnx_nodes():
    layer = {"Name": "conv1 + relu1", "Metadata": "[ONNX Layer: /conv1/Conv]\x1e[ONNX Layer: /relu1/Relu]"}
    assert onnx_nodes_of(layer) == ["/conv1/Conv", "/relu1/Relu"]
    assert onnx_nodes_of({"Name": "x"}) == []


def test_rtx_profile_end_to_end_with_the_fake_engine():
    gm = analyze_model(MODEL, parser="table")
    flops = {n.name: n.flops or 0 for n in gm.nodes}
    factory = fake_session_factory(str(MODEL), flops)
    res = run_to_end(profile(MODEL, gm, backend="rtx", iterations=5, warmup=1, profiled=3, session_factory=factory))
    assert res.backend == "rtx" and len(res.samples_ms) == 5 and len(res.warmup_ms) == 1
    assert res.per_node and all(r["onnx_nodes"] for r in res.per_node)  # every layer maps to its ONNX nodes
    top = res.per_node[0]
    assert top["op_type"] == "Conv" and " + " in top["name"]
    assert factory.session.context.runs == 1 + 5 + 3  # warm-up, timed, profiled
    assert not factory.cuda.live  # every buffer freed
    assert any("engine built in" in n for n in res.notes)
    # Nothing unmeasured is shown as measured: no GPU here, so the copies say why and no copy figure is 0.
    doc = res.to_json()
    assert doc["verified"] is False and any("not yet run against a real engine" in n for n in res.notes)
    assert doc["copies"]["not_measured"] and "io_pageable_ms" not in doc["copies"]
    num = doc["verdict"]["numbers"]
    assert num["copies_measured"] is False and num["io_copy_ms"] is None and num["transfer_share"] is None
    assert "not measured" in doc["verdict"]["why"]
    from splitscope.engine.runtime.roofline import time_split, time_split_text

    assert time_split(doc)[-1] == ("data movement", None) and "data movement not measured" in time_split_text(doc)


def test_the_plan_cache_builds_a_model_once_and_never_serves_a_stale_engine(tmp_path, monkeypatch):
    """A second profile of the same model at the same dims takes the engine from the cache; another model's
    bytes or other dims build anew (the key is the content, backend, version, dims and GPU)."""
    import shutil

    from splitscope.engine.runtime import trt as trt_mod

    monkeypatch.setenv("SPLITSCOPE_CACHE_DIR", str(tmp_path / "cache"))
    builds: list[str] = []
    real = trt_mod.build_engine
    monkeypatch.setattr(trt_mod, "build_engine", lambda p, *a, **k: (builds.append(str(p)), real(p, *a, **k))[1])
    model = tmp_path / "m.onnx"
    shutil.copy(MODEL, model)
    first, hit1 = trt_mod.cached_plan(model, "rtx", {})
    again, hit2 = trt_mod.cached_plan(model, "rtx", {})
    assert (hit1, hit2) == (False, True) and again == first and len(builds) == 1
    _, hit3 = trt_mod.cached_plan(model, "rtx", {"batch": 2})  # other dims: another engine
    assert not hit3 and len(builds) == 2
    import onnx

    m = onnx.load(model)
    m.graph.node[0].name = "renamed"  # the same path, other bytes: never the old engine
    onnx.save(m, model)
    _, hit4 = trt_mod.cached_plan(model, "rtx", {})
    assert not hit4 and len(builds) == 3
    assert len(list((tmp_path / "cache" / "trt" / "plans").glob("*.plan"))) == 3


def test_a_dynamic_input_is_never_built_at_a_guessed_1(tmp_path):
    """A dim without a value stops the build before it starts, naming the dim (it once built at 1)."""
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from splitscope.engine.errors import BackendUnavailableError

    m = h.make_model(
        h.make_graph(
            [h.make_node("Relu", ["x"], ["y"])],
            "g",
            [h.make_tensor_value_info("x", T.FLOAT, [1, "seq"])],
            [h.make_tensor_value_info("y", T.FLOAT, [1, "seq"])],
        ),
        opset_imports=[h.make_opsetid("", 17)],
    )
    m.ir_version = 8
    p = tmp_path / "dyn.onnx"
    onnx.save(m, p)
    with pytest.raises(BackendUnavailableError, match=r"Building needs a value for seq \(input 'x'\): give --dim seq="):
        build_engine(p, "rtx", dims={})
    assert build_engine(p, "rtx", dims={"seq": 8})  # with the value it builds
