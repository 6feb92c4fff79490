"""Reading what TensorRT did: the real TensorRT 8 files of TREx's samples, and TensorRT 10 and 11 files
written from the format spec for a real export, mapped onto its ONNX graph."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import onnx
import pytest
from splitscope.engine.cli import main as cli
from splitscope.engine.split.analyze import analyze_model
from splitscope.engine.trtdata.compare import compare
from splitscope.engine.trtdata.doc import EngineComparison
from splitscope.engine.trtdata.importer import import_files
from splitscope.engine.trtdata.lint import engine_doc, lint
from splitscope.engine.trtdata.mapping import metadata_nodes, name_tokens
from splitscope.engine.trtdata.precision import format_precision, layer_precision
from splitscope.engine.trtdata.readers import EngineDataError, read_file

from tests.engine import trt_files

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "data" / "trex"  # TREx's TensorRT 8 samples (Apache-2.0; README.md there says where from)
TRANSFORMER = ROOT / "tests" / "data" / "torch_transformer.onnx"


def _pair(stem: str) -> list[Path]:
    return [SAMPLES / f"{stem}.onnx.engine.graph.json", SAMPLES / f"{stem}.onnx.engine.profile.json"]


def test_tensorrt8_samples_read_with_precision_and_lint():
    fp16 = import_files(_pair("pytorch__resnet__A100__fp16__resnet"))
    j = fp16.to_json()
    assert j["layout"] == "bindings" and j["detailed"] and len(j["layers"]) == 36
    assert abs(sum(x["share"] for x in j["layers"]) - 1) < 1e-6
    by = {x["name"]: x for x in j["layers"]}
    assert by["Conv_0 + Relu_1"]["precision"] == "FP16"
    assert by["Reformatting CopyNode for Input Tensor 0 to Conv_0 + Relu_1"]["reformat"]
    kinds = {f["kind"]: f for f in lint(fp16)}
    assert kinds["reformat"]["ms"] > 0 and len(kinds["reformat"]["layers"]) == 2  # the 10 NoOp CopyNodes cost 0 ms
    qat = import_files(_pair("pytorch__resnet__A100__qat__resnet-qat"))
    prec = {x["name"]: x["precision"] for x in qat.to_json()["layers"]}
    assert prec["layer1.0.conv1.weight + QuantizeLinear_20 + Conv_22"] == "INT8"
    assert any(f["kind"] == "fp32-island" and "MaxPool_12" in f["layers"] for f in lint(qat))
    mobilenet = import_files(_pair("tests-inputs__mobilenet.qat"))
    assert len(mobilenet.rows) == 73 and mobilenet.profile.count == 6610
    c = compare(fp16, qat)
    typed = EngineComparison.from_json(c)
    assert (typed.a_total_ms, typed.b_total_ms) == (c["a_total_ms"], c["b_total_ms"])
    assert [r.name for r in typed.by_layer_type] == [r["type"] for r in c["by_layer_type"]]
    assert c["a_layers"] == 36 and c["b_layers"] == 37 and c["largest_changes"]
    times = read_file(SAMPLES / "tensorflow__resnet__RTX-3090__fp32__resnet.onnx.engine.timing.json")
    s = times.summary()
    assert len(times.records) == 263 and s["latencyMs"]["mean"] > 0 and s["h2dMs"]["max"] == 0


@pytest.mark.parametrize("layout", ["bindings", "io_tensors"])
def test_tensorrt10_and_11_files_map_onto_the_onnx_graph(tmp_path, layout):
    gm = analyze_model(TRANSFORMER, parser="table")
    lp, pp, expect = trt_files.write(gm, tmp_path, layout, "encoder/layers.1/self_attn")
    data = import_files([pp, lp], gm)  # any order: each file is recognised from its content
    j = data.to_json()
    assert j["layout"] == layout
    assert len(j["layers"]) == expect["layers"]  # the second profile's layers are set apart
    if layout == "io_tensors":
        assert j["other_profiles"] == [1] and j["io_tensors"][0]["ProfileInfo"][0]["OptShape"] == [4, 16]
    assert j["unmapped_layers"] == []
    foreign = next(x for x in j["layers"] if x["foreign"])
    assert foreign["mapped_by"] == "foreign"
    assert foreign["onnx_nodes"] == [gm.nodes[i].name for i in expect["foreign"]]
    assert all(x["mapped_by"] in ("metadata", "foreign", "reformat") for x in j["layers"])
    assert j["mapped_node_share"] >= 0.5  # the rest are shape and constant nodes TensorRT folds away
    kinds = {f["kind"]: f for f in lint(data)}
    assert expect["island"] in kinds["fp32-island"]["nodes"]
    assert kinds["reformat"]["layers"] == [expect["reformat"]]
    assert kinds["foreign-node"]["ms"] == pytest.approx(0.5)
    # Every ONNX node a layer holds knows the layer's time share and precision.
    assert data.node_ms() and set(data.node_precision().values()) <= {"FP16", "FP32"}
    # What the window reads: the same document through its types.
    typed = engine_doc(data)
    assert [(r.name, r.type, r.precision, r.ms, list(r.onnx_nodes), r.mapped_by) for r in typed.layers] == [
        (x["name"], x["type"], x["precision"] or "", x["ms"], x["onnx_nodes"], x["mapped_by"]) for x in j["layers"]
    ]
    assert typed.unmapped == 0 and typed.mapped_data_node_share == j["mapped_data_node_share"]
    assert [(f.kind, list(f.nodes), f.ms) for f in typed.lint] == [(f["kind"], f["nodes"], f["ms"]) for f in lint(data)]
    assert engine_doc(data) is typed  # made once


def test_names_metadata_and_formats():
    assert metadata_nodes("[ONNX Layer: /a/MatMul]\x1e[ONNX Layer: /a/Add]") == ["/a/MatMul", "/a/Add"]
    assert metadata_nodes("[ONNX Layer: x]\x1f[ONNX Layer: y]") == ["x", "y"]
    assert name_tokens("conv1.weight + QuantizeLinear_7 + Conv_9 + PWN(Clip_16, Mul_17) || Conv_2") == [
        "conv1.weight",
        "QuantizeLinear_7",
        "Conv_9",
        "Clip_16",
        "Mul_17",
        "Conv_2",
    ]
    assert format_precision("Thirty-two wide channel vectorized row major Int8 format") == "INT8"
    assert format_precision("Channel major FP16 format where channel % 8 == 0") == "FP16"
    assert format_precision("Row major linear BF16") == "BF16"
    from splitscope.engine.trtdata.readers import Layer, TensorDesc

    assert (
        layer_precision(
            Layer(
                "c",
                inputs=[TensorDesc("a", [], "Row major linear FP32")],
                outputs=[TensorDesc("b", [], "Row major linear FP32")],
                tactic="sm80_xmma_gemm_tf32f32",
            )
        )
        == "TF32"
    )


def test_bad_files_get_one_line_naming_the_file_and_field(tmp_path):
    cases = {
        "trunc.json": '{"Layers": [{"Name": "a"',
        "bin.json": b"\xff\xfe\x00garbage",
        "noname.json": json.dumps({"Layers": [{"LayerType": "Conv"}]}),
        "badtime.json": json.dumps([{"count": 1}, {"name": "a", "timeMs": "fast", "averageMs": 1}]),
        "other.json": json.dumps({"hello": 1}),
    }
    for name, content in cases.items():
        p = tmp_path / name
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        with pytest.raises(EngineDataError) as e:
            read_file(p)
        assert name in e.value.message and "\n" not in e.value.message
    assert "no 'Name'" in _msg(tmp_path / "noname.json") and "'timeMs'" in _msg(tmp_path / "badtime.json")


def _msg(p: Path) -> str:
    try:
        read_file(p)
    except EngineDataError as e:
        return e.message
    return ""


def test_cli_engine(tmp_path, capsys):
    out = tmp_path / "e.json"
    lp, pp = _pair("pytorch__resnet__A100__fp16__resnet")
    cp = _pair("pytorch__resnet__A100__qat__resnet-qat")
    assert (
        cli(
            [
                "engine",
                "--layers",
                str(lp),
                "--profile",
                str(pp),
                "--compare",
                str(cp[0]),
                "--compare-profile",
                str(cp[1]),
                "--json",
                str(out),
            ]
        )
        == 0
    )
    j = json.loads(out.read_text())
    for key in ("layout", "layers", "unmapped_layers", "mapped_node_share", "lint", "comparison"):
        assert key in j
    assert {"name", "type", "precision", "ms", "share", "onnx_nodes"} <= set(j["layers"][0])
    assert "reformat" in capsys.readouterr().out
    # A profile alone is common.
    assert cli(["engine", "--profile", str(pp), "-q"]) == 0
    assert cli(["engine", "-q"]) == 2
    bad = tmp_path / "x.json"
    bad.write_text("{")
    assert cli(["engine", "--layers", str(bad)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 2


def test_cli_engine_maps_onto_a_model(tmp_path, capsys):
    gm = analyze_model(TRANSFORMER, parser="table")
    lp, pp, _ = trt_files.write(gm, tmp_path, "io_tensors", "encoder/layers.0/self_attn")
    model = tmp_path / "m.onnx"
    shutil.copy(TRANSFORMER, model)
    out = tmp_path / "e.json"
    assert (
        cli(
            [
                "engine",
                str(model),
                "--layers",
                str(lp),
                "--profile",
                str(pp),
                "--parser",
                "table",
                "--json",
                str(out),
                "-q",
            ]
        )
        == 0
    )
    j = json.loads(out.read_text())
    assert j["layout"] == "io_tensors" and j["mapped_node_share"] >= 0.5
    other = tmp_path / "other.onnx"  # the same node names, other weights: the report refuses it by content
    m = onnx.load(model)
    t = next(t for t in m.graph.initializer if t.raw_data)
    t.raw_data = bytes(len(t.raw_data))
    onnx.save(m, other)
    html = tmp_path / "r.html"
    assert cli(["report", str(other), "--parser", "table", "--engine", str(out), "--out", str(html), "-q"]) == 2
    assert "--engine e.json is of another model (m.onnx: not the content of other.onnx)" in capsys.readouterr().err
    assert cli(["report", str(model), "--parser", "table", "--engine", str(out), "--out", str(html), "-q"]) == 0


def test_our_own_rtx_build_lists_its_layers_and_maps_them():
    """TensorRT-RTX builds on the CPU; its verbose log lists the engine's layers with ONNX metadata."""
    pytest.importorskip("tensorrt_rtx", reason="tensorrt_rtx is not installed (the test extra installs it)")
    from splitscope.engine.runtime.trt import from_build

    from tests.engine.models import LIGHT_DIR

    model = LIGHT_DIR / "light_squeezenet.onnx"
    gm = analyze_model(model, parser="table")
    data = from_build(model, gm, "rtx")
    j = data.to_json()
    assert len(j["layers"]) > 20 and j["unmapped_layers"] == []
    assert j["mapped_layer_share"] == 1.0 and j["mapped_data_node_share"] >= 0.8
    convs = [x for x in j["layers"] if x["mapped_by"] == "metadata" and x["precision"]]
    assert convs and {x["precision"] for x in convs} == {"FP32"}  # no reduced types in the model: FP32
    assert any(len(x["onnx_nodes"]) >= 2 for x in j["layers"])  # fusions: several ONNX nodes in one layer


def test_build_log_text_is_read_like_the_inspector_json():
    from splitscope.engine.trtdata.buildlog import layers_from_log

    log = (
        "Layers:\nName: n0_myl0_1, LayerType: correlation, Inputs: [ { Name: x, Dimensions: [1,3,8,8], "
        "Datatype: Half, Format: (NHWC) Channel major format }], Constants: [], Outputs: [ { Name: y, "
        "Dimensions: [1,4,8,8], Datatype: Half, Format: (NHWC) Channel major format }], TacticName: t, "
        "StreamId: 0, Metadata: [ONNX Layer: conv]\x1f[ONNX Layer: relu]\n Multi-Device: Disabled"
    )
    (layer,) = layers_from_log(log).layers
    assert layer.name == "n0_myl0_1" and layer.type == "correlation" and layer.outputs[0].dims == [1, 4, 8, 8]
    assert layer_precision(layer) == "FP16"
    assert metadata_nodes(layer.metadata) == ["conv", "relu"]


def test_an_engine_of_another_model_is_refused_with_one_line():
    """The layers of a ResNet engine name no node of the sample: refused, never mapped at 0% onto it."""
    from splitscope.engine.sample import SAMPLE_MODEL
    from splitscope.engine.split.analyze import analyze_model
    from splitscope.engine.trtdata.importer import EngineDataError, import_files

    gm = analyze_model(SAMPLE_MODEL, parser="table")
    files = [SAMPLES / "pytorch__resnet__A100__fp16__resnet.onnx.engine.graph.json"]
    with pytest.raises(EngineDataError, match=r"None of the engine's \d+ layers maps to a node of sample.onnx") as e:
        import_files(files, gm)
    assert "\n" not in e.value.message
    assert import_files(files).rows  # with no model open, the same files read


def test_an_engine_alone_keeps_its_onnx_names_and_gets_no_split(tmp_path):
    """Without its model: each layer keeps the ONNX node names its Metadata gives, a names-only file is an
    ordered chain of layers (not boxes without an edge), and the engine is never given partitions."""
    from splitscope.engine.split.analyze import analyze_model
    from splitscope.engine.trtdata.engine_graph import to_onnx
    from splitscope.engine.trtdata.importer import import_files
    from splitscope.engine.trtdata.readers import read_file

    layers = [
        {
            "Name": "conv1 + relu1",
            "LayerType": "CaskConvolution",
            "Metadata": "[ONNX Layer: /conv1/Conv]\x1e[ONNX Layer: /relu1/Relu]",
            "Inputs": [{"Name": "x"}],
            "Outputs": [{"Name": "a"}],
        },
        {
            "Name": "nms",
            "LayerType": "PluginV3",
            "Metadata": "[ONNX Layer: /post/NMS]",
            "Inputs": [{"Name": "a"}],
            "Outputs": [{"Name": "y"}],
        },
    ]
    p = tmp_path / "layers.json"
    p.write_text(json.dumps({"Layers": layers, "Bindings": ["x", "y"]}))
    doc = import_files([p]).to_json()
    assert (
        doc["layers"][0]["onnx_nodes"] == ["/conv1/Conv", "/relu1/Relu"] and doc["layers"][0]["mapped_by"] == "metadata"
    )
    m = tmp_path / "engine.onnx"
    import onnx

    onnx.save(to_onnx(read_file(p)), m)
    gm = analyze_model(m, parser="table")
    assert gm.engine_graph and gm.partitions == [] and gm.parser_subgraphs == []
    from splitscope.engine.report.stats import headline

    text = headline(gm)
    assert "A built engine of 2 layers" in text and "1 plugin layer" in text and "partition" not in text
    names = tmp_path / "names.json"
    names.write_text(json.dumps({"Layers": [f"layer {k}" for k in range(6)], "Bindings": ["x", "y"]}))
    onnx.save(to_onnx(read_file(names)), m)
    gm = analyze_model(m, parser="table")
    assert [gm.graph.tensors[n.inputs[0]].producer for n in gm.nodes[1:]] == list(range(5))  # one chain, in order
    assert "names only" in headline(gm)


def test_lint_names_standalone_qdq_and_precision_the_engine_ignored():
    from types import SimpleNamespace as NS

    from splitscope.engine.trtdata.lint import _asks_half, _standalone_qdq

    def layer(type_: str, base: str, origin: str = "") -> NS:
        return NS(type=type_, base=base, origin=origin, metadata="")

    assert _standalone_qdq(layer("Scale", "QuantizeLinear_7"))
    assert not _standalone_qdq(layer("Convolution", "QuantizeLinear_7 + Conv_8"))  # fused into the conv
    assert not _standalone_qdq(layer("Scale", "DequantizeLinear_3 + Add_4"))  # fused into a pointwise op
    assert not _standalone_qdq(layer("Reformat", "QuantizeLinear_7", "REFORMAT"))

    def model(*dtypes: str | None) -> NS:
        tensors = {f"t{k}": NS(dtype=d) for k, d in enumerate(dtypes)}
        nodes = [NS(outputs=[f"t{k}"]) for k in range(len(dtypes))]
        return NS(nodes=nodes, graph=NS(tensors=tensors))

    assert _asks_half(model("float16", "bfloat16"), [0, 1])
    assert not _asks_half(model("float16", "float"), [0, 1])  # one FP32 output: the layer may run in FP32
    assert not _asks_half(model(None), [0]) and not _asks_half(model("float16"), [])  # nothing known, or no node
