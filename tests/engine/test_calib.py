"""Calibration the TensorRT 11 way, on real models: ranges by method against hand-computed references, the
histogram that re-bins, wide-range activations, the Q/DQ structure, TensorRT-RTX parsing and building every
output, cancel leaving nothing, and bad data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from splitscope.engine.calib.calibrate import calibrate
from splitscope.engine.calib.data import CalibDataError
from splitscope.engine.calib.methods import amax
from splitscope.engine.calib.stats import TensorStats
from splitscope.engine.cli import main as cli
from splitscope.engine.errors import JobCancelledError, SplitscopeError
from splitscope.engine.jobs import CancelToken, Progress, run_to_end

ROOT = Path(__file__).resolve().parents[2]
TRANSFORMER = ROOT / "tests" / "data" / "torch_transformer.onnx"
DIMS = {"batch": 4, "seq": 16}


def _stats(*arrays: np.ndarray) -> TensorStats:
    s = TensorStats("t")
    for a in arrays:
        s.update(a)
    return s


def test_ranges_by_method_against_hand_computed_references():
    x = np.linspace(-1.0, 1.0, 200_001, dtype=np.float32)  # |x| uniform on [0, 1]
    s = _stats(x)
    assert amax(s, "max") == pytest.approx(1.0)
    assert amax(s, "percentile", 99.0) == pytest.approx(0.99, abs=2 / s.bins)
    assert amax(s, "mse") > 0.95  # clipping a uniform distribution only hurts: the threshold stays near the max
    rng = np.random.default_rng(0)
    g = np.concatenate([rng.standard_normal(200_000), [60.0, -55.0]]).astype(np.float32)  # two outliers
    sg = _stats(g)
    assert amax(sg, "max") == pytest.approx(60.0)
    assert 3.0 < amax(sg, "entropy") < 30.0  # the KL search clips the outliers, keeps the body
    assert 3.0 < amax(sg, "percentile", 99.99) < 10.0


def _kl_by_definition(hist: np.ndarray, i: int, levels: int = 128) -> float:
    """KL divergence of the histogram clipped at bin ``i`` against its ``levels``-level quantization, bin by bin
    as TensorRT's entropy calibrator defines it."""
    h = hist[:i].astype(np.float64)
    ref = h.copy()
    ref[i - 1] += hist[i:].sum()
    level = (np.arange(i) * levels) // i
    nz = h > 0
    sums = np.bincount(level, weights=h, minlength=levels)
    cnt = np.bincount(level, weights=nz, minlength=levels)
    q = np.where(nz, (sums / np.maximum(cnt, 1))[level], 0.0)
    if q.sum() == 0:
        return float("inf")
    pn, qn = ref / ref.sum(), q / q.sum()
    mask = pn > 0
    qn = np.where(mask & (qn == 0), 1e-12, qn)
    return float(np.sum(pn[mask] * np.log(pn[mask] / qn[mask])))


def test_the_entropy_search_weighs_every_threshold_as_defined_bin_by_bin():
    from splitscope.engine.calib.methods import _kl_of_thresholds

    rng = np.random.default_rng(3)
    for k, a in enumerate(
        [
            np.abs(rng.normal(size=50_000)),
            np.maximum(rng.normal(size=40_000), 0),
            np.concatenate([rng.laplace(size=60_000), rng.normal(size=5) * 80]),
            rng.integers(0, 6, size=2_000).astype(np.float64) * 1.7,  # sparse: empty bins everywhere
            np.array([0.0, 1.0, 2.0, 3.0, 1000.0]),
        ]
    ):
        s = TensorStats(f"t{k}")
        s.update(a.astype(np.float32))
        hist = s.hist.astype(np.float64)
        hist[0] = 0.0
        cands = np.arange(128, 2049, 7)
        got = _kl_of_thresholds(hist, cands, 128)
        want = np.array([_kl_by_definition(hist, int(i)) for i in cands])
        assert np.array_equal(np.isinf(got), np.isinf(want))
        np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-7, atol=1e-9)


def test_the_histogram_rebins_as_the_range_grows_and_keeps_every_count():
    s = _stats(np.full(1000, 0.5, np.float32))
    before = s.hist_max
    s.update(np.array([100.0], np.float32))
    assert s.rebins >= 7 and s.hist_max >= 100.0 and s.hist_max / before == 2**s.rebins
    assert int(s.hist.sum()) == s.count == 1001
    assert s.hist.size == s.bins  # fixed size: re-binned, not rebuilt


def test_attention_mask_sentinels_inf_and_nan_are_counted_apart():
    a = np.array([0.5, -0.25, -3.4e38, np.inf, np.nan, 1.0], dtype=np.float32)
    s = _stats(a)
    assert s.sentinels == 1 and s.nonfinite == 2 and s.absmax == pytest.approx(1.0) and s.count == 3
    assert amax(s, "entropy") <= 1.0


def _cnn(path: Path) -> Path:
    """A small CNN with real (random) weights and a residual add, as exporters write it."""
    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3, "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((8, 8, 3, 3)).astype(np.float32) * 0.3, "w2")
    fc = numpy_helper.from_array(rng.standard_normal((8, 4)).astype(np.float32), "fc")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["a"], name="residual"),
        helper.make_node("GlobalAveragePool", ["a"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("MatMul", ["f", "fc"], ["y"], name="fc"),
    ]
    g = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [w1, w2, fc],
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_qdq_structure_follows_tensorrts_placement(tmp_path):
    model = _cnn(tmp_path / "cnn.onnx")
    out = tmp_path / "cnn.int8.onnx"
    res = run_to_end(calibrate(model, out, method="max", samples=4))
    m = onnx.load(out)
    nodes = {n.name: n for n in m.graph.node}
    inits = {i.name: i for i in m.graph.initializer}
    # Every quantized op reads its activation and its weight through a DequantizeLinear named after them.
    for name, act, w, axis in (("conv1", "x", "w1", 0), ("conv2", "r1", "w2", 0), ("fc", "f", "fc", 1)):
        n = nodes[name]
        assert n.input[0] == f"{act}_dequantized" and n.input[1] == f"{w}_dequantized"
        dq = nodes[f"{w}_DequantizeLinear"]
        assert next(a.i for a in dq.attribute if a.name == "axis") == axis
        zp = numpy_helper.to_array(inits[f"{w}_zero_point"])
        assert zp.dtype == np.int8 and not zp.any() and zp.size == numpy_helper.to_array(inits[w]).shape[axis]
        act_zp = numpy_helper.to_array(inits[f"{act}_zero_point"])
        assert act_zp.shape == () and act_zp == 0  # symmetric, per tensor
    # The residual add reads its skip input quantized (TensorRT fuses it into conv2); the pool its input.
    assert "r1_dequantized" in nodes["residual"].input and nodes["pool"].input[0] == "a_dequantized"
    assert res["tensors"] == 4 and res["weights"] == 3 and res["random_data"]
    assert "plumbing only" in res["notes"][0]
    onnx.checker.check_model(m)


@pytest.mark.parametrize("precision", ["int8", "fp8", "fp16", "bf16"])
def test_tensorrt_rtx_parses_and_builds_every_output(tmp_path, precision):
    pytest.importorskip("tensorrt_rtx", reason="tensorrt_rtx is not installed (the test extra installs it)")
    from splitscope.engine.runtime.trt import build_engine

    for model in (_cnn(tmp_path / "cnn.onnx"), TRANSFORMER):
        out = tmp_path / f"{model.stem}.{precision}.onnx"
        res = run_to_end(calibrate(model, out, method="entropy", precision=precision, samples=4, dims=DIMS))
        assert res["accuracy"] and all(a["cosine"] > 0.9 for a in res["accuracy"].values())
        assert len(build_engine(out, "rtx", DIMS)) > 10_000


def test_switching_method_reuses_the_statistics(tmp_path):
    out = tmp_path / "t.onnx"
    first = run_to_end(calibrate(TRANSFORMER, out, method="max", samples=4, dims=DIMS))
    second = run_to_end(calibrate(TRANSFORMER, out, method="mse", samples=4, dims=DIMS))
    assert not first["stats_cached"] and second["stats_cached"]
    assert first["ranges"].keys() == second["ranges"].keys() and first["ranges"] != second["ranges"]


def test_cancel_leaves_nothing_behind(tmp_path):
    from splitscope.engine.paths import cache_dir

    token = CancelToken()
    out = tmp_path / "t.onnx"
    job = calibrate(TRANSFORMER, out, method="max", samples=50, dims={"batch": 4, "seq": 16}, cancel=token)
    before = set((cache_dir() / "calib").glob("*")) if (cache_dir() / "calib").exists() else set()
    with pytest.raises(JobCancelledError):
        for ev in job:
            if isinstance(ev, Progress) and ev.stage == "calibrate" and ev.done == 3:
                token.cancel()
    assert not out.exists() and list(tmp_path.iterdir()) == []
    after = set((cache_dir() / "calib").glob("*")) if (cache_dir() / "calib").exists() else set()
    assert after == before  # no statistics saved from a cancelled pass


def test_bad_calibration_data_says_what_to_do(tmp_path):
    model = _cnn(tmp_path / "cnn.onnx")
    data = tmp_path / "data"
    data.mkdir()
    np.save(data / "a.npy", np.zeros((3, 8, 8), np.float32))  # wrong spatial size
    with pytest.raises(CalibDataError, match=r"shape \[1, 3, 8, 8\].*wants \[1, 3, 16, 16\]"):
        run_to_end(calibrate(model, tmp_path / "o.onnx", data=str(data)))
    for f in data.iterdir():
        f.unlink()
    np.save(data / "a.npy", np.random.default_rng(0).standard_normal((3, 16, 16)))  # float64, one sample
    (data / "b.npy").write_bytes(b"garbage")
    res = run_to_end(calibrate(model, tmp_path / "o.onnx", data=str(data)))
    assert res["samples"] == 2 and any("skipped: b.npy" in n for n in res["notes"]) and not res["random_data"]
    assert cli(["calibrate", str(model), "--data", str(tmp_path / "none"), "--out", str(tmp_path / "x.onnx")]) == 2
    assert cli(["calibrate", str(model), "--keep", "nope", "--out", str(tmp_path / "x.onnx")]) == 2


def test_cli_calibrate_json(tmp_path):
    out, js = tmp_path / "q.onnx", tmp_path / "q.json"
    assert (
        cli(
            [
                "calibrate",
                str(TRANSFORMER),
                "--method",
                "percentile",
                "--samples",
                "4",
                "--dim",
                "batch=4",
                "--dim",
                "seq=16",
                "--keep",
                "/head/Gemm",
                "--out",
                str(out),
                "--json",
                str(js),
                "-q",
            ]
        )
        == 0
    )
    j = json.loads(js.read_text())
    for key in ("method", "precision", "samples", "seconds", "tensors", "excluded", "accuracy"):
        assert key in j
    assert j["excluded"] == ["/head/Gemm"] and set(j["accuracy"]["logits"]) >= {"snr_db", "cosine", "max_abs"}


def test_sensitivity_and_a_search_that_meets_its_budget(tmp_path):
    model = _cnn(tmp_path / "cnn.onnx")
    out = tmp_path / "q.onnx"
    loose = run_to_end(calibrate(model, out, method="max", samples=4, sensitivity=True))
    s = loose["search"]
    assert {r["node"] for r in s["sensitivity"]} == set(loose["quantized"]) and s["evaluations"] >= 1 + 4
    base = s["all_quantized"]["snr_db"]
    # A budget above the fully quantized model's SNR: the search keeps nodes in float until it is met.
    res = run_to_end(calibrate(model, out, method="max", samples=4, budget=f"snr={base + 3:.1f}"))
    sr = res["search"]
    assert sr["path"][0]["kept"] == 0 and sr["path"][-1]["kept"] == len(sr["keep"])
    assert sr["met"] and sr["keep"] and set(sr["keep"]) <= set(res["excluded"])
    cost = sr["kept_cost"]  # what keeping them in float costs at the GPU's peaks
    assert cost["flops"] > 0 and cost["fp32_ms_at_peak"] > cost["int8_ms_at_peak"] > 0
    assert res["accuracy"]["y"]["snr_db"] >= base + 3 - 0.5
    # The pick was emulated by the search and then measured as written: both said.
    assert sr["final_measured"]["snr_db"] == res["accuracy"]["y"]["snr_db"]
    assert any(n.startswith("the search's pick:") for n in res["notes"])
    assert cli(["calibrate", str(model), "--budget", "snr", "--out", str(out)]) == 2


def test_a_folder_of_images_with_a_preprocessing_recipe(tmp_path):
    from PIL import Image

    model = _cnn(tmp_path / "cnn.onnx")
    imgs = tmp_path / "imgs"
    imgs.mkdir()
    rng = np.random.default_rng(0)
    for k in range(5):
        Image.fromarray(rng.integers(0, 255, (40 + k, 50, 3), dtype=np.uint8)).save(imgs / f"{k}.png")
    (imgs / "broken.jpg").write_bytes(b"not an image")
    res = run_to_end(
        calibrate(model, tmp_path / "q.onnx", data=str(imgs), method="max", samples=4, recipe="resize=20,layout=nchw")
    )
    assert not res["random_data"] and res["tensors"] == 4 and res["accuracy"]["y"]["cosine"] > 0.9
    assert any("broken.jpg" in n for n in res["notes"]) or res["samples"] == 4
    with pytest.raises(CalibDataError, match="--recipe"):
        run_to_end(calibrate(model, tmp_path / "q.onnx", data=str(imgs), recipe="size=3"))


def test_a_large_batch_samples_every_channel_for_its_histogram():
    from splitscope.engine.calib.stats import HIST_VALUES, sample_stride

    x = np.zeros((1, 512, 512, 3), np.float32)  # NHWC: channel 2 holds the large values
    x[..., 2] = np.linspace(0, 100, 512 * 512).reshape(512, 512)
    s = sample_stride(x.size)
    assert x.size % s and s >= x.size // HIST_VALUES
    st = _stats(x)
    assert st.absmax == 100.0 and amax(st, "percentile", 99.99) > 90  # not only channel 0's zeros


def test_labels_give_a_task_metric_and_a_top1_budget(tmp_path):
    """A folder of real .npy samples with their classes: top-1 accuracy for FP32 and INT8 on the held-out
    files, and a search against a top-1 budget measured on the same files."""
    import onnxruntime as ort

    model = _cnn(tmp_path / "cnn.onnx")
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.default_rng(3)
    sess = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    lines = []
    for k in range(12):
        x = rng.standard_normal((1, 3, 16, 16)).astype(np.float32)
        np.save(data / f"s{k:02d}.npy", x)
        cls = int(np.argmax(sess.run(None, {"x": x})[0][0]))
        lines.append(f"s{k:02d}.npy {cls if k % 4 else (cls + 1) % 4}")  # one held-out sample in 4 mislabelled
    (tmp_path / "labels.txt").write_text("# name class\n" + "\n".join(lines) + "\n")
    res = run_to_end(
        calibrate(
            model,
            tmp_path / "q.onnx",
            data=str(data),
            method="max",
            samples=8,
            heldout=4,
            labels=str(tmp_path / "labels.txt"),
            budget="top1=0.75",
        )
    )
    acc = res["accuracy"]["y"]
    assert acc["top1_fp32"] == 0.75 and 0 <= acc["top1"] <= 1  # 3 of the 4 held-out files are labelled right
    assert res["search"]["metric"] == "top1" and res["search"]["met"]
    with pytest.raises(SplitscopeError, match="--labels goes with --data DIR"):
        run_to_end(calibrate(model, tmp_path / "q2.onnx", labels=str(tmp_path / "labels.txt")))
    (tmp_path / "bad.txt").write_text("s00.npy cat\n")
    with pytest.raises(SplitscopeError, match="line 1: write 'NAME LABEL'"):
        run_to_end(calibrate(model, tmp_path / "q3.onnx", data=str(data), samples=8, labels=str(tmp_path / "bad.txt")))


def test_a_run_that_fails_midway_leaves_the_old_output(tmp_path, monkeypatch):
    """The model is staged and moved onto --out only when the run (accuracy included) succeeded."""
    from splitscope.engine.calib import calibrate as module

    def broken(*_: object, **__: object) -> None:
        raise RuntimeError("injected: the held-out comparison fails")

    monkeypatch.setattr(module, "measure", broken)
    out = tmp_path / "t.onnx"
    out.write_bytes(b"the user's earlier file")
    with pytest.raises(RuntimeError, match="injected"):  # the held-out pass fails, after the model was staged
        run_to_end(calibrate(TRANSFORMER, out, precision="bf16", samples=2, dims=DIMS))
    with pytest.raises(SplitscopeError, match="no value for seq, which random samples need: give --dim seq="):
        run_to_end(calibrate(TRANSFORMER, out, precision="bf16", samples=2))  # refused before anything runs
    assert out.read_bytes() == b"the user's earlier file" and sorted(p.name for p in tmp_path.iterdir()) == ["t.onnx"]


def test_statistics_folded_by_several_threads_equal_one_threads():
    """On a large machine a batch's tensors are shared out to several folding threads: the same statistics."""
    from splitscope.engine.calib.collect import _HostFolder
    from splitscope.engine.calib.stats import TensorStats

    rng = np.random.default_rng(7)
    names = [f"t{k}" for k in range(7)]
    batches = [
        [(rng.standard_normal(37 * (k + 1) * (b + 1)) * (b + 1)).astype(np.float32) for k in range(7)] for b in range(4)
    ]
    got = {}
    for threads in (1, 3):
        stats = {n: TensorStats(n) for n in names}
        folder = _HostFolder(names, stats, threads)
        ranges = [folder.wait()]
        for outs in batches:
            folder.submit(outs)
            ranges.append(folder.wait())
        folder.close()
        assert ranges[0] is None and ranges[-1] == {n: stats[n].absmax for n in names}
        got[threads] = stats
    for n in names:
        a, b = got[1][n], got[3][n]
        assert (a.count, a.min, a.max, a.hist_max, a.rebins) == (b.count, b.min, b.max, b.hist_max, b.rebins)
        np.testing.assert_array_equal(a.hist, b.hist)
