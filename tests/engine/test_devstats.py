"""Calibration statistics folded on the GPU (engine/calib/devstats.py): the host's statistics, bin for bin.

The kernels need a CUDA device (CI has none: those tests say so when skipped; they run on the H200 with
``python -m pytest tests/engine/test_devstats.py``); the key order and the host's side run everywhere."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from splitscope.engine.calib.devstats import _unkey
from splitscope.engine.calib.stats import HIST_VALUES, TensorStats


def _order_key(x: np.ndarray) -> np.ndarray:
    """The kernel's ``order_key``, in numpy."""
    b = x.astype(np.float32).view(np.uint32)
    return np.where(b & 0x80000000, ~b, b | np.uint32(0x80000000)).astype(np.uint32)


def test_the_keys_order_as_their_floats_and_decode_to_them():
    x = np.array([-3.4e38, -1.5, -1e-30, -0.0, 0.0, 1e-45, 2.0, 3.4e38], np.float32)
    k = _order_key(x)
    assert (np.diff(k.astype(np.int64)) > 0).all()
    np.testing.assert_array_equal(_unkey(k).view(np.uint32), x.view(np.uint32))


def _gpu() -> str | None:
    """Why the device tests cannot run here, or None."""
    if importlib.util.find_spec("cuda") is None or importlib.util.find_spec("cuda.bindings") is None:
        return "cuda-python is not installed (the gpu extra)"
    try:
        from cuda.bindings import driver as cu

        if int(cu.cuInit(0)[0]) == 0 and cu.cuDeviceGetCount()[1] >= 1:
            return None
    except Exception:  # noqa: BLE001 - the driver library itself is missing
        pass
    return "no CUDA device or driver (CI has none; run on a GPU machine)"


needs_gpu = pytest.mark.skipif(_gpu() is not None, reason=str(_gpu()))


def _device_array(a: np.ndarray):
    from cuda.bindings import driver as cu
    from splitscope.engine.runtime import nvrtc

    nvrtc.context(0)
    d = nvrtc._ok(cu.cuMemAlloc(max(a.nbytes, 1)), "cuMemAlloc")
    nvrtc._ok(cu.cuMemcpyHtoD(d, a.ctypes.data, a.nbytes), "cuMemcpyHtoD")
    return d


@needs_gpu
def test_the_gpu_folds_the_hosts_statistics_bin_for_bin(tmp_path):
    """Batches of every kind (small, past the sample size, growing ranges that rebin, negative only, sentinels,
    NaN and infinities, all-sentinel) folded on the device and on the host give the same statistics; the second
    folder loads the cached kernels instead of compiling them."""
    from cuda.bindings import driver as cu
    from splitscope.engine.calib.devstats import Activation, DeviceFolder

    rng = np.random.default_rng(0)
    finite = [
        rng.standard_normal((8, 3, 32, 32)).astype(np.float32),
        (rng.standard_normal(HIST_VALUES * 3 + 17) * 40).astype(np.float32),
        -np.abs(rng.standard_normal(1000)).astype(np.float32) * 900,
        (rng.standard_normal(3000) * 1e7).astype(np.float32),  # past twelve doublings at once: one bin left
        np.zeros(64, np.float32),
    ]
    odd = rng.standard_normal(5000).astype(np.float32)
    odd[::97], odd[5], odd[7] = -3.4e38, np.nan, np.inf
    batches = [[("a", f), ("b", f * 3)] for f in finite]
    batches.insert(2, [("b", finite[0] * 5)])  # a batch without "a"
    batches.append([("a", odd), ("b", np.full(9, 1e31, np.float32))])
    host = {n: TensorStats(n) for n in "ab"}
    device = {n: TensorStats(n) for n in "ab"}
    for cache_run in range(2):
        folder = DeviceFolder(["a", "b"], tmp_path / "kernels")
        assert len(list((tmp_path / "kernels").glob("*.cubin"))) == 1
        if cache_run:
            folder.close()
            break
        try:
            for batch in batches:
                bufs = [_device_array(a) for _, a in batch]
                acts = [Activation(n, int(d), a.size, "tensor(float)") for (n, a), d in zip(batch, bufs, strict=True)]
                live = folder.fold(acts, device)
                folder.read(device)
                assert live == {n: device[n].absmax for n in "ab"}
                for n, a in batch:
                    host[n].update(a)
                for d in bufs:
                    cu.cuMemFree(d)
                for n in "ab":
                    h, g = host[n], device[n]
                    assert (g.count, g.min, g.max, g.absmax) == (h.count, h.min, h.max, h.absmax)
                    assert g.hist_max == h.hist_max
                    assert (g.nonfinite, g.sentinels, g.rebins) == (h.nonfinite, h.sentinels, h.rebins)
                    if batch is not batches[-1]:  # with NaN and sentinels the device strides the whole batch
                        np.testing.assert_array_equal(g.hist, h.hist)
        finally:
            folder.close()
    assert device["a"].hist.sum() == host["a"].hist.sum()


def test_a_cpu_pass_says_the_host_folded_its_statistics(tmp_path):
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from splitscope.engine.calib.collect import collect
    from splitscope.engine.calib.data import open_data
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.runtime.inputs import input_specs

    g = h.make_graph(
        [h.make_node("Relu", ["x"], ["r"], name="relu"), h.make_node("Neg", ["r"], ["y"], name="neg")],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4])],
    )
    p = tmp_path / "m.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=9), str(p))
    where: list[str] = []
    data = open_data("random", input_specs(onnx.load(str(p))), samples=3)
    stats = run_to_end(collect(p, ["r"], data, "ort-cpu", None, where))
    assert where == ["host"] and stats["r"].count == 12


def test_the_first_samples_are_read_while_the_session_is_made(tmp_path, monkeypatch):
    """A fixed cost paid once, in parallel: the thread that reads and decodes the samples is already working when
    ONNX Runtime makes the session (on CUDA the session and the first sample each took about half a second)."""
    import threading

    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from splitscope.engine.calib.collect import collect
    from splitscope.engine.calib.data import open_data
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.runtime import ort as ort_backend
    from splitscope.engine.runtime.inputs import input_specs

    g = h.make_graph(
        [h.make_node("Relu", ["x"], ["r"], name="relu")],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [h.make_tensor_value_info("r", T.FLOAT, [1, 4])],
    )
    p = tmp_path / "m.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=9), str(p))
    reading: list[bool] = []
    made = ort_backend.OrtBackend.session

    def session(self, *a, **k):  # type: ignore[no-untyped-def]
        reading.append(any(t.name == "splitscope-calib-data" for t in threading.enumerate()))
        return made(self, *a, **k)

    monkeypatch.setattr(ort_backend.OrtBackend, "session", session)
    data = open_data("random", input_specs(onnx.load(str(p))), samples=3)
    stats = run_to_end(collect(p, ["r"], data, "ort-cpu"))
    assert reading == [True] and stats["r"].count == 12
    assert not any(t.name == "splitscope-calib-data" for t in threading.enumerate())  # and gone after
