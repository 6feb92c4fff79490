"""The backends behind one interface: each runner has every member of the Runner protocol, ONNX Runtime's runner gives
what a plain ONNX Runtime session gives on real exports, and what a runner cannot do is said in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from splitscope.engine.errors import BackendUnavailableError
from splitscope.engine.jobs import CancelToken, Progress, Sample, run_to_end
from splitscope.engine.runtime.feeds import input_rules
from splitscope.engine.runtime.inputs import input_specs, random_feeds
from splitscope.engine.runtime.ort import InferenceError
from splitscope.engine.runtime.runner import Runner, Timing, open_runner
from splitscope.engine.split.analyze import analyze_model

DATA = Path(__file__).resolve().parents[1] / "data"
EXPORTS = ["torch_transformer.onnx", "torch_detector_if.onnx", "decoder_kv_tiny.onnx"]
DIMS = {"batch": 1, "seq": 16, "sequence_length": 8, "past_sequence_length": 4, "total_sequence_length": 12}


def _feeds(path: Path) -> dict[str, np.ndarray]:
    proto = onnx.load(str(path), load_external_data=False)
    specs = input_specs(proto)
    names = {d for s in specs for d in s.dims if isinstance(d, str)}
    return random_feeds(specs, {n: DIMS[n] for n in names}, 0, input_rules(proto))


@pytest.mark.parametrize("name", EXPORTS)
def test_ort_runner_infers_what_a_plain_session_gives(name):
    path = DATA / name
    feeds = _feeds(path)
    plain = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    outs = [o.name for o in plain.get_outputs()]
    want = plain.run(outs, feeds)
    runner = open_runner(path, "ort-cpu")
    assert isinstance(runner, Runner) and not runner.on_device and not runner.engine and runner.verified
    try:
        run_to_end(runner.open())
        got = runner.infer(feeds, outs)
    finally:
        runner.close()
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_ort_runner_times_then_profiles_the_model_nodes():
    path = DATA / "torch_transformer.onnx"
    gm = analyze_model(path, parser="table", dims={"batch": 1, "seq": 16})
    feeds = _feeds(path)
    runner = open_runner(path, "ort-cpu")
    events: list[object] = []

    def drain(gen):  # type: ignore[no-untyped-def]
        while True:
            try:
                events.append(next(gen))
            except StopIteration as stop:
                return stop.value

    try:
        drain(runner.open())
        runner.feeds(feeds)
        timing = drain(runner.time(2, 5, CancelToken(), 0.0))
        nt = drain(runner.profile_nodes(gm, 4, CancelToken()))
        with pytest.raises(InferenceError, match="open it and give the feeds"):
            runner.run()  # the timed session was closed for the profiled ones
    finally:
        runner.close()
    assert isinstance(timing, Timing) and len(timing.warm) == 2 and len(timing.times) == 5
    assert sum(isinstance(e, Sample) and e.series == "latency" for e in events) == 5
    assert any(isinstance(e, Progress) and e.stage == "nodes" for e in events)
    names = {n.name: n.index for n in gm.nodes}
    assert nt.kept == 4 and nt.nodes_of
    for key, held in nt.nodes_of.items():  # a key held by the model is that node
        assert held == [names[key]]


def test_a_backend_that_cannot_run_here_or_a_name_nobody_knows_is_one_line():
    with pytest.raises(BackendUnavailableError, match=r"Unknown backend 'trt'.*use one of") as e:
        open_runner(DATA / "torch_transformer.onnx", "trt")
    assert "\n" not in str(e.value)


def test_an_engine_runner_says_it_does_not_read_outputs_back():
    pytest.importorskip("tensorrt_rtx", reason="tensorrt_rtx is not installed (the test extra installs it)")
    from tests.engine.fake_trt import fake_session_factory

    path = DATA / "torch_transformer.onnx"
    runner = open_runner(path, "rtx", session_factory=fake_session_factory(str(path), {}))
    assert isinstance(runner, Runner) and runner.on_device and runner.engine and not runner.verified
    with pytest.raises(BackendUnavailableError, match="use --backend ort-cpu or ort-cuda") as e:
        runner.infer(_feeds(path), ["y"])
    assert "\n" not in str(e.value)
    runner.close()


def test_the_cuda_runners_binding_feeds_a_cache_back_as_onnx_runtime_runs_it():
    """The CUDA runner's I/O binding (host arrays and values already bound, outputs left where they were made, fed
    back as the next step's inputs) run for real by ONNX Runtime, with every value on the host: no GPU here, so the
    subclass changes only the device name and the provider."""
    from splitscope.engine.runtime.ort_runner import OrtCudaRunner

    class HostBound(OrtCudaRunner):
        backend, device = "ort-cpu", "cpu"

    path = DATA / "decoder_kv_tiny.onnx"
    feeds = _feeds(path)
    plain = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    outs = [o.name for o in plain.get_outputs()]
    runner = HostBound(path)
    try:
        run_to_end(runner.open())
        past = {k: runner.to_device(v) for k, v in feeds.items() if k.startswith("past_key_values")}
        got = runner.infer({**feeds, **past}, outs)
        assert all(isinstance(v, ort.OrtValue) for v in got)  # left where they were made, not copied back
        host = runner.infer(feeds, outs, on_host=True)
    finally:
        runner.close()
    want = plain.run(outs, feeds)
    for a, b, c in zip(got, host, want, strict=True):
        np.testing.assert_allclose(a.numpy(), c, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, c, rtol=1e-5, atol=1e-6)


def test_a_generation_keeps_its_cache_bound_where_the_runner_lives(monkeypatch):
    """The generation profile on a device runner: the empty cache put on the device, each step's present fed back
    as the next step's past without a copy, the cache's bytes read from the bound values; the same figures as on the
    CPU (the CUDA runner's code, every value on the host: no GPU here)."""
    from splitscope.engine.runtime import runner as runner_mod
    from splitscope.engine.runtime.generate import generate
    from splitscope.engine.runtime.ort_runner import OrtCudaRunner

    class HostBound(OrtCudaRunner):
        backend, device = "ort-cpu", "cpu"

    made: list[HostBound] = []

    def open_ort(path, backend, job, **options):  # type: ignore[no-untyped-def]
        made.append(HostBound(Path(path), **options))
        return made[-1]

    path = DATA / "decoder_kv_tiny.onnx"
    cpu = run_to_end(generate(path, "ort-cpu", prompt_len=8, steps=4, generations=1))
    monkeypatch.setattr(runner_mod, "open_ort", open_ort)
    bound = run_to_end(generate(path, "ort-cpu", prompt_len=8, steps=4, generations=1))
    assert made and made[0].on_device
    assert (
        (bound.kv_bytes_per_token, bound.kv_bytes_final) == (cpu.kv_bytes_per_token, cpu.kv_bytes_final) == (256, 3072)
    )
    assert len(bound.step_ms) == 4 and bound.per_node["decode"]


def test_statistics_on_a_device_runner_without_its_gpu_fold_are_folded_on_the_host(monkeypatch):
    """Where the GPU's folder cannot be made (no NVRTC, no driver), the statistics pass on a device runner asks for
    its activations on the host and folds them there: the same statistics as the CPU's (the CUDA runner's code with
    every value on the host: no GPU here)."""
    from splitscope.engine.calib import collect as collect_mod
    from splitscope.engine.calib.collect import collect
    from splitscope.engine.calib.data import open_data
    from splitscope.engine.runtime.ort_runner import OrtCudaRunner

    class HostBound(OrtCudaRunner):
        backend, device = "ort-cpu", "cpu"

    path = DATA / "torch_detector_if.onnx"
    tensors = [n.output[0] for n in onnx.load(str(path)).graph.node if n.op_type in ("Conv", "Relu")][:6]
    specs = input_specs(onnx.load(str(path), load_external_data=False))
    cpu = run_to_end(collect(path, tensors, open_data("random", specs, samples=3), "ort-cpu"))
    monkeypatch.setattr(collect_mod, "open_ort", lambda p, b, job, **o: HostBound(Path(p), **o))
    where: list[str] = []
    bound = run_to_end(collect(path, tensors, open_data("random", specs, samples=3), "ort-cpu", where=where))
    assert where and where[0].startswith("host (the GPU's fold is unavailable")
    assert tensors and set(bound) == set(cpu)
    for t in tensors:
        assert bound[t].count == cpu[t].count and bound[t].absmax == cpu[t].absmax
