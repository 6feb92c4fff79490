"""Calibration measured on the artefact, with weights wherever the model keeps them.

Weights in ``Constant`` nodes (Paddle's opset-11 exports) and behind constant chains are quantized per channel and
stored in FP16 like initializers; every accuracy figure is the written model run in ONNX Runtime, checked here by
running that model in ONNX Runtime in the test itself; task metrics are chosen only when the values show them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from splitscope.engine.calib import task
from splitscope.engine.calib.calibrate import calibrate
from splitscope.engine.jobs import run_to_end
from splitscope.engine.onnxio.weights import hoist


def _paddle_style(path: Path) -> Path:
    """A small CNN whose weights are all ``Constant`` nodes, one reached through Identity and Reshape, as
    Paddle's opset-11 exporter writes them."""
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((8 * 8 * 9,)).astype(np.float32) * 0.3
    fc = rng.standard_normal((8, 4)).astype(np.float32)

    def const(name: str, a: np.ndarray) -> onnx.NodeProto:
        return helper.make_node("Constant", [], [name], name=f"{name}_const", value=numpy_helper.from_array(a))

    nodes = [
        const("w1", w1),
        const("w2_flat", w2),
        const("w2_shape", np.array([8, 8, 3, 3], np.int64)),
        helper.make_node("Identity", ["w2_flat"], ["w2_id"], name="w2_identity"),
        helper.make_node("Reshape", ["w2_id", "w2_shape"], ["w2"], name="w2_reshape"),
        const("fc", fc),
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("GlobalAveragePool", ["c2"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("MatMul", ["f", "fc"], ["y"], name="fc_matmul"),
    ]
    g = helper.make_graph(
        nodes,
        "paddle_style",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), path)
    return path


def _snr(ref: np.ndarray, got: np.ndarray) -> float:
    r, g = ref.astype(np.float64).ravel(), got.astype(np.float64).ravel()
    return float(10 * np.log10(np.sum(r**2) / np.sum((r - g) ** 2)))


def _samples(folder: Path, n: int, shape: list[int]) -> Path:
    folder.mkdir()
    for k in range(n):
        np.save(folder / f"s{k:02d}.npy", np.random.default_rng(k).standard_normal(shape).astype(np.float32))
    return folder


def _independent_snr(model: Path, written: Path, files: list[Path]) -> float:
    """The written model run in ONNX Runtime here (every node as written), against the FP32 model, on the
    held-out files: not through our runner."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    a = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(str(written), so, providers=["CPUExecutionProvider"])
    refs, gots = [], []
    for f in files:
        x = np.load(f)
        refs.append(a.run(None, {"x": x})[0])
        gots.append(b.run(None, {"x": x})[0])
    return _snr(np.concatenate(refs), np.concatenate(gots))


def test_hoisting_moves_constants_and_folds_chains_without_changing_a_value(tmp_path):
    model = _paddle_style(tmp_path / "p.onnx")
    m = onnx.load(model)
    found = hoist(m)
    onnx.checker.check_model(m, full_check=True)
    assert {n.op_type for n in m.graph.node} == {"Conv", "Relu", "GlobalAveragePool", "Flatten", "MatMul"}
    assert found.counts(["w1", "w2", "fc"]) == {"constant": 2, "folded": 1}
    x = np.random.default_rng(0).standard_normal((1, 3, 16, 16)).astype(np.float32)
    before = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    after = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.array_equal(before, after)


def test_the_kernel_workbench_reads_weights_from_constant_nodes_without_running_them(tmp_path, monkeypatch):
    """conv2's weight is a Constant reshaped: the workbench takes its value from the model, as the analysis and
    calibration find it, not from running the nodes that make it (nothing upstream of the weight is run)."""
    from splitscope.engine.kernel import extract as ex_mod
    from splitscope.engine.onnxio.weights import constant_values
    from splitscope.engine.split.analyze import analyze_model

    model = _paddle_style(tmp_path / "p.onnx")
    proto = onnx.load(model)
    gm = analyze_model(model, parser="table")
    conv2 = next(n.index for n in gm.nodes if n.name == "conv2")
    ex = ex_mod.extract(gm, proto, [conv2])
    x = np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32)
    asked: list[list[str]] = []
    real_run = ex_mod._run_ort
    monkeypatch.setattr(ex_mod, "_run_ort", lambda m, f, names: asked.append(list(names)) or real_run(m, f, names))
    got = ex_mod.capture(gm, proto, ex, {"x": x})
    assert asked == [["r1"]]  # only the activation is computed upstream
    hoisted = onnx.load(model)
    hoist(hoisted)
    w2 = next(numpy_helper.to_array(t) for t in hoisted.graph.initializer if t.name == "w2")
    assert np.array_equal(got["w2"], w2) and got["w2"].shape == (8, 8, 3, 3)
    assert set(constant_values(proto, ["w1", "w2", "fc", "x", "r1"])) == {"w1", "w2", "fc"}
    assert len(proto.graph.node) == len(onnx.load(model).graph.node)  # read, not changed


def test_the_planner_and_the_decode_verdict_count_constant_node_weights_as_weights(tmp_path):
    """A host node reading a weight held in Constant nodes copies only its activation per inference; the weight
    bytes of a decode step include what Constant nodes hold. Counted here from the model's own arrays."""
    from splitscope.engine.plan.scenario import _host_bytes
    from splitscope.engine.runtime.generate import _weight_bytes
    from splitscope.engine.split.analyze import analyze_model

    model = _paddle_style(tmp_path / "p.onnx")
    gm = analyze_model(model, parser="table")
    conv2 = next(n.index for n in gm.nodes if n.name == "conv2")
    r1 = 1 * 8 * 16 * 16 * 4  # conv1's activation at 16x16, float32
    assert _host_bytes(gm, {conv2}) == (r1, 8 * 16 * 16 * 4)
    m = onnx.load(model)
    held = sum(numpy_helper.to_array(a.t).nbytes for n in m.graph.node for a in n.attribute if a.name == "value")
    assert _weight_bytes(model) == held > 0


def test_int8_of_constant_weights_is_per_channel_and_measured(tmp_path):
    model = _paddle_style(tmp_path / "p.onnx")
    out = tmp_path / "p.int8.onnx"
    data = _samples(tmp_path / "data", 12, [1, 3, 16, 16])
    res = run_to_end(calibrate(model, out, data=str(data), method="max", samples=8, heldout=4))
    m = onnx.load(out)
    dq = {n.name: n for n in m.graph.node if n.op_type == "DequantizeLinear"}
    for w, axis in (("w1", 0), ("w2", 0), ("fc", 1)):
        node = dq[f"{w}_DequantizeLinear"]
        assert next(a.i for a in node.attribute if a.name == "axis") == axis  # per channel, not per tensor
    assert res["weights"] == 3 and res["weights_per_channel"] == 3 and res["weights_per_tensor"] == 0
    assert res["weight_sources"] == {"constant": 2, "folded": 1}
    assert res["accuracy_measured"]["how"] == "measured"
    # The figure is the written model's: run here apart from our runner on the held-out files (past the eight).
    held = sorted(data.iterdir())[8:]
    assert res["accuracy"]["y"]["snr_db"] == pytest.approx(_independent_snr(model, out, held), abs=0.01)


def test_fp16_stores_constant_weights_in_fp16_without_a_cast_each(tmp_path):
    model = _paddle_style(tmp_path / "p.onnx")
    out = tmp_path / "p.fp16.onnx"
    data = _samples(tmp_path / "data", 6, [1, 3, 16, 16])
    res = run_to_end(calibrate(model, out, data=str(data), precision="fp16", samples=2, heldout=4))
    m = onnx.load(out)
    inits = {t.name: t for t in m.graph.initializer}
    assert all(inits[w].data_type == TensorProto.FLOAT16 for w in ("w1", "w2"))
    assert sum(n.op_type == "Cast" for n in m.graph.node) <= 3  # at the borders only, none per weight
    assert res["weight_sources"].get("constant", 0) >= 1
    assert res["accuracy_measured"] == {"how": "measured", "runtime": "ONNX Runtime CPU"}
    measured = _independent_snr(model, out, sorted(data.iterdir())[2:])
    assert measured > 40 and res["accuracy"]["y"]["snr_db"] == pytest.approx(measured, abs=0.01)


def test_a_detection_metric_needs_a_heads_values():
    rng = np.random.default_rng(0)
    regression = rng.standard_normal((1, 400, 32)).astype(np.float32) * 3  # box-regression logits, not boxes
    kind, why = task.explain(regression.shape, regression)
    assert kind == "none" and "not a detection head" in why
    head = np.zeros((1, 84, 400), np.float32)  # YOLOv8: centre, size in pixels, scores in [0, 1]
    head[0, :4] = rng.uniform(5, 300, (4, 400))
    head[0, 4:] = rng.uniform(0, 1, (80, 400))
    assert task.guess(head.shape, head) == "detection"


def test_no_f1_over_no_reference_detection_and_f1_says_what_it_rests_on():
    empty = np.zeros((1, 84, 400), np.float32)
    empty[0, :4] = 50.0
    got = task.metric("detection", [empty], [empty])
    assert got is not None and got["value"] is None and "no F1" in got["note"]
    one = empty.copy()
    one[0, 4, 0] = 0.9
    got = task.metric("detection", [one], [one])
    assert got is not None and got["value"] == 1.0 and got["fp32_detections"] == 1
    assert "over 1 FP32 detections" in task.text(got)


def test_a_ctc_recogniser_is_judged_by_its_decoded_strings():
    def probs(ids: list[int], classes: int = 6) -> np.ndarray:
        p = np.full((len(ids), classes), 0.01, np.float32)
        p[np.arange(len(ids)), ids] = 1.0
        return (p / p.sum(axis=1, keepdims=True))[None]

    ref = [probs([1, 1, 0, 2, 3]), probs([4, 0, 4, 5, 5])]
    got = [probs([1, 0, 0, 2, 3]), probs([4, 4, 4, 5, 5])]  # "123" and "445" against "123" and "45"
    m = task.metric("auto", ref, got)
    assert m is not None and m["kind"] == "sequence"
    assert m["matched"] == 1 and m["sequences"] == 2 and m["value"] == 0.5
    assert m["per_position"] == 0.8  # what per position alone would have said
    assert task.ctc_decode(np.array([1, 1, 0, 1, 2, 2, 0])) == (1, 1, 2)


def test_a_time_first_ctc_head_of_log_probabilities_is_read_as_one():
    """PyTorch CRNN exports give ``log_softmax`` laid out ``[T, N, C]`` (nn.CTCLoss's order): at a batch of one,
    ``[T, 1, C]``; decoded along T, not along the batch."""

    def logp(ids: list[int], classes: int = 6) -> np.ndarray:
        p = np.full((len(ids), classes), 0.01, np.float64)
        p[np.arange(len(ids)), ids] = 1.0
        return np.log(p / p.sum(axis=1, keepdims=True)).astype(np.float32)[:, None, :]  # [T, 1, C]

    ref = [logp([1, 1, 0, 2, 3]), logp([4, 0, 4, 5, 5])]
    got = [logp([1, 0, 0, 2, 3]), logp([4, 4, 4, 5, 5])]
    kind, why = task.explain(ref[0].shape, ref[0])
    assert kind == "sequence" and "time first" in why
    m = task.metric("auto", ref, got)
    assert m is not None and (m["matched"], m["sequences"], m["per_position"]) == (1, 2, 0.8)


@pytest.mark.parametrize("shape", [(1, 10), (4, 1000)])
def test_a_classifier_says_how_many_samples_its_top1_rests_on(shape):
    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    m = task.metric("auto", [a], [a])
    assert m is not None and m["samples"] == shape[0] and f"({shape[0]} samples)" in task.text(m)


def test_relative_paths_work_in_every_verb_that_writes(tmp_path):
    """Users type relative paths: the model, --out, --data and --json are taken from the working folder."""
    import json
    import os
    import subprocess
    import sys

    _paddle_style(tmp_path / "p.onnx")
    _samples(tmp_path / "data", 6, [1, 3, 16, 16])

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "splitscope.engine.cli", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,  # the child's folder; this process's own stays as it is
            env=dict(os.environ),
            timeout=600,
        )

    for verb in (
        ["calibrate", "p.onnx", "--out", "q.onnx", "--data", "data", "--samples", "4", "--json", "c.json"],
        ["calibrate", "p.onnx", "--out", "h.onnx", "--precision", "fp16", "--samples", "2"],
        ["optimize", "p.onnx", "--out", "o.onnx", "--json", "o.json"],
        ["analyze", "p.onnx", "--parser", "table", "--json", "a.json"],
        ["profile", "p.onnx", "--iterations", "2", "--warmup", "1", "--profiled", "1", "--json", "pr.json"],
    ):
        done = cli(*verb)
        assert done.returncode == 0, (verb, done.stderr[-500:])
    for name in ("q.onnx", "h.onnx", "o.onnx", "c.json", "o.json", "a.json", "pr.json"):
        assert (tmp_path / name).is_file(), name
    assert json.loads((tmp_path / "c.json").read_text())["out"] == str(tmp_path / "q.onnx")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left behind


def test_bad_dims_and_bad_models_get_one_line_in_every_verb(tmp_path, capsys):
    from splitscope.engine.cli import main

    model = _paddle_style(tmp_path / "p.onnx")
    dynamic = tmp_path / "dyn.onnx"
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, "H", "W"])],
    )
    onnx.save(helper.make_model(g), dynamic)
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(model.read_bytes()[: model.stat().st_size // 2])
    out = tmp_path / "out.onnx"
    cases = [
        (["analyze", str(dynamic), "--dim", "H=0"], "H=0: a dimension is 1 or more"),
        (["profile", str(dynamic), "--dim", "H=-1", "--dim", "W=4"], "H=-1: a dimension is 1 or more"),
        (["profile", str(dynamic), "--dim", "H=100000", "--dim", "W=100000"], "more than this machine's"),
        (["calibrate", str(dynamic), "--out", str(out), "--dim", "H=100000", "--dim", "W=100000"], "need "),
    ]
    cases += [
        ([verb, str(truncated), *extra], "not a readable ONNX model")
        for verb, extra in (
            ("analyze", []),
            ("profile", []),
            ("calibrate", ["--out", str(out)]),
            ("optimize", ["--out", str(out)]),
            ("report", ["--out", str(tmp_path / "r.html")]),
        )
    ]
    for argv, said in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0], (argv, err)
    assert not out.exists() and not (tmp_path / "r.html").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_the_cli_prepares_images_as_the_window_would_and_says_so(tmp_path):
    """A model carrying Ultralytics metadata is letterboxed by the CLI too (not given an ImageNet crop in silence)."""
    from PIL import Image

    g = helper.make_graph(
        [helper.make_node("Conv", ["images", "w"], ["y"], name="conv")],
        "det",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 32, 32])],
        [numpy_helper.from_array(np.ones((2, 3, 1, 1), np.float32), "w")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    helper.set_model_props(m, {"author": "Ultralytics", "task": "detect"})
    model = tmp_path / "det.onnx"
    onnx.save(m, model)
    photos = tmp_path / "photos"
    photos.mkdir()
    for k in range(3):
        Image.fromarray(np.random.default_rng(k).integers(0, 255, (20, 40, 3), dtype=np.uint8)).save(
            photos / f"{k}.png"
        )
    res = run_to_end(calibrate(model, tmp_path / "q.onnx", data=str(photos), samples=2, heldout=1))
    assert any(n.startswith("recipe preset=letterbox, from Ultralytics metadata (task=detect)") for n in res["notes"])
    given = run_to_end(
        calibrate(model, tmp_path / "q2.onnx", data=str(photos), samples=2, heldout=1, recipe="preset=unit")
    )
    assert not any(n.startswith("recipe preset=") for n in given["notes"])


def test_a_result_belongs_to_its_model_content_and_dims(tmp_path, capsys):
    """Two models with the same node names: a profile of one is refused for the other's report, by content, not by
    names; a profile taken at other dims is refused with the dims said."""
    from splitscope.engine.cli import main

    a = _paddle_style(tmp_path / "a.onnx")
    b = tmp_path / "b.onnx"
    m = onnx.load(a)
    m.graph.node[0].attribute[0].t.raw_data = bytes(len(m.graph.node[0].attribute[0].t.raw_data))  # other weights
    onnx.save(m, b)
    prof = tmp_path / "a.json"
    args = ["profile", str(a), "--parser", "table", "--iterations", "2", "--warmup", "1", "--profiled", "1", "-q"]
    assert main([*args, "--json", str(prof)]) == 0
    html = tmp_path / "r.html"
    assert main(["report", str(b), "--parser", "table", "--profile", str(prof), "--out", str(html), "-q"]) == 2
    err = capsys.readouterr().err
    assert "is of another model (a.onnx: not the content of b.onnx)" in err and not html.exists()
    assert main(["report", str(a), "--parser", "table", "--profile", str(prof), "--out", str(html), "-q"]) == 0
    kern = tmp_path / "k.json"  # a kernel result too, though its node names are the other model's
    assert (
        main(["kernel", str(a), "conv2", "--parser", "table", "--out", str(tmp_path / "k"), "--json", str(kern)]) == 0
    )
    assert main(["report", str(b), "--parser", "table", "--kernel", str(kern), "--out", str(html), "-q"]) == 2
    assert "--kernel k.json is of another model (a.onnx: not the content of b.onnx)" in capsys.readouterr().err

    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "dyn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, "H", "W"])],
    )
    dyn = tmp_path / "dyn.onnx"
    onnx.save(helper.make_model(g), dyn)
    p2 = tmp_path / "dyn.json"
    dims = ["--dim", "H=8", "--dim", "W=8"]
    assert main(["profile", str(dyn), "--parser", "table", "--iterations", "2", *dims, "--json", str(p2), "-q"]) == 0
    other = ["--dim", "H=16", "--dim", "W=8"]
    assert main(["report", str(dyn), "--parser", "table", *other, "--profile", str(p2), "--out", str(html), "-q"]) == 2
    assert "was taken at H=8, not at H=16 as here" in capsys.readouterr().err
