"""The kernel workbench's CPU parts (issue 19) on real models: the op cut out at the dims in force with its real
signature, its real inputs captured from a run of the model, the reference, starting kernels by kind, plugin
projects, and the real TensorRT-RTX parser's answer with the generated plugin registered. The GPU parts (NVRTC,
launches, timing) ran on an H200: BENCHMARKS.md; here their pure parts (the launch line, the sizes, the
comparison) are checked."""

from __future__ import annotations

import json
import py_compile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from splitscope.engine.jobs import CancelToken, JobCancelledError, Progress, run_to_end
from splitscope.engine.kernel.cuda import generate
from splitscope.engine.kernel.extract import (
    KernelError,
    capture,
    extract,
    model_feeds,
    reference,
    resolve_nodes,
)
from splitscope.engine.kernel.job import kernel_job
from splitscope.engine.runtime import nvrtc
from splitscope.engine.split.analyze import analyze_model

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "resources" / "sample.onnx"
TWO_STAGE = ROOT / "tests" / "data" / "torch_two_stage.onnx"  # PyTorch's exporter: a backbone, then RoiAlign
TRANSFORMER = ROOT / "tests" / "data" / "torch_transformer.onnx"


def _cut(path: Path, nodes: list[str], parser: str = "table", dims: dict | None = None):
    gm = analyze_model(path, parser=parser, dims=dims)
    proto = onnx.load(str(path))
    ex = extract(gm, proto, resolve_nodes(gm, nodes))
    return gm, proto, ex, capture(gm, proto, ex, model_feeds(gm, proto))


def test_roialign_of_a_real_export_is_cut_with_its_real_tensors():
    _, _, ex, inputs = _cut(TWO_STAGE, ["/RoiAlign"])
    # The op's own input order (features, rois, batch indices), each at its concrete shape.
    assert [t.shape for t in ex.inputs] == [(1, 32, 8, 8), (64, 4), (64,)]
    assert [t.dtype for t in ex.inputs] == ["float32", "float32", "int64"]
    assert ex.attributes["output_height"] == 4 and ex.outputs[0].shape == (64, 32, 4, 4)
    feats = inputs[ex.inputs[0].name]
    assert feats.shape == (1, 32, 8, 8) and feats.min() >= 0 and feats.std() > 0  # after a Relu, not zeros
    ref = reference(ex, inputs)
    assert ref.how == "onnxruntime-cpu" and ref.outputs[ex.outputs[0].name].shape == (64, 32, 4, 4)
    gen = generate(ex, inputs)
    assert gen.kind == "roialign" and gen.complete
    assert 'extern "C" __global__ void kernel(' in gen.source and "// launch: grid=CEIL_DIV(N, 256)" in gen.source


def test_kinds_of_starting_kernels_on_a_transformer_export():
    made = {}
    for op in ("Softmax", "LayerNormalization", "Relu", "Add", "Gather", "ReduceMean"):
        gm = analyze_model(TRANSFORMER, parser="table", dims={"batch": 4, "seq": 16})
        node = next(n for n in gm.nodes if n.op_type == op)
        _, _, ex, inputs = _cut(TRANSFORMER, [node.label], dims={"batch": 4, "seq": 16})
        made[op] = generate(ex, inputs)
    assert {k: v.kind for k, v in made.items()} == {
        "Softmax": "reduction",
        "LayerNormalization": "reduction",
        "Relu": "elementwise",
        "Add": "elementwise",
        "Gather": "gather",
        "ReduceMean": "stub",  # it averages the sequence axis, not the last one: the body is the user's
    }
    assert "block_sum" in made["LayerNormalization"].source and "in1[c]" in made["LayerNormalization"].source
    assert "r0 /= " in made["Add"].source and "off1 = idx" in made["Add"].source  # the bias [96] broadcast


def test_a_custom_op_needs_a_reference_the_user_writes(tmp_path):
    """The sample's DCNv4 (com.example.vision) has no ONNX Runtime kernel: 'no reference' is said, the template
    is generated, and a user's numpy function becomes the reference (checked for its shapes)."""
    _, _, ex, inputs = _cut(SAMPLE, ["/neck/dcn/DCNv4"])
    assert ex.custom and ex.domain == "com.example.vision"
    ref = reference(ex, inputs)
    assert ref.how == "none" and "--reference" in ref.note
    out = ex.outputs[0]
    good = tmp_path / "ref.py"
    good.write_text(
        "import numpy as np\n"
        "def reference(inputs, attributes):\n"
        f"    return {{'{out.name}': np.zeros({list(out.shape)}, np.float32)}}\n"
    )
    assert reference(ex, inputs, good).how == f"python:{good}"
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\ndef reference(inputs, attributes):\n    return [np.zeros((2, 2))]\n")
    with pytest.raises(KernelError, match="has shape"):
        reference(ex, inputs, bad)


def test_a_dim_without_a_value_is_asked_for(tmp_path):
    g = h.make_graph(
        [h.make_node("Relu", ["x"], ["y"], name="r")],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [1, "height"])],
        [h.make_tensor_value_info("y", T.FLOAT, [1, "height"])],
    )
    p = tmp_path / "m.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(p))
    gm = analyze_model(p, parser="table")
    with pytest.raises(KernelError, match="height"):
        extract(gm, onnx.load(str(p)), [0])


pytest_rtx = pytest.mark.skipif(
    __import__("importlib").util.find_spec("tensorrt_rtx") is None,
    reason="the test extra installs TensorRT-RTX (its parser runs on the CPU)",
)


@pytest_rtx
def test_the_parser_maps_the_custom_op_to_the_generated_plugin(tmp_path):
    """With the generated creator registered, TensorRT-RTX's parser finds and creates the plugin for DCNv4 (then
    its process ends: its Python network cannot add a plugin), so the engine partitions go from 2 to 1; the
    planner takes this answer instead of its estimate."""
    doc = run_to_end(kernel_job(str(SAMPLE), parser="rtx", out=str(tmp_path / "dcn"), run_gpu=False))
    answer = doc["plugin"]["parser"]
    assert answer["how"] == "mapped" and "created the plugin (DCNv4)" in answer["message"]
    assert (answer["partitions_before"], answer["partitions_after"]) == (2, 1)
    assert answer["boundary_bytes_after"] < answer["boundary_bytes_before"]
    files = set(doc["plugin"]["files"])
    assert {"plugin.py", "plugin.cu", "CMakeLists.txt", "kernel.cu", "launch.py", "inputs.npz"} <= files
    assert {"test_plugin.py", "reference_template.py", "README.md", "op.onnx"} <= files
    for name in ("plugin.py", "launch.py", "test_plugin.py", "reference_template.py"):
        py_compile.compile(str(tmp_path / "dcn" / name), doraise=True)
    text = (tmp_path / "dcn" / "plugin.py").read_text()
    assert 'NAME, VERSION, NAMESPACE = "DCNv4", "1", "com.example.vision"' in text
    cpp = (tmp_path / "dcn" / "plugin.cu").read_text()
    assert "REGISTER_TENSORRT_PLUGIN(DCNv4Creator)" in cpp and "in[0].d[0]" in cpp
    with np.load(tmp_path / "dcn" / "inputs.npz") as z:
        assert sorted(z[k].shape for k in z.files) == [(1, 64, 10, 10), (64, 64, 3, 3)]  # the features, the weight
    # The planner: writing the plugin is counted as the parser answered, not estimated.
    from splitscope.engine.kernel.answers import parser_answers
    from splitscope.engine.kernel.results import KernelDoc
    from splitscope.engine.plan.scenario import Scenario, evaluate, items

    gm = analyze_model(SAMPLE, parser="rtx")
    answers = parser_answers([KernelDoc.from_json(doc)])
    assert list(answers) == ["/neck/dcn/DCNv4"] and answers["/neck/dcn/DCNv4"].how == "mapped"
    its = items(gm)
    key = next(it.key for it in its if "/neck/dcn/DCNv4" in [gm.nodes[i].label for i in it.nodes])
    res = evaluate(gm, Scenario("plugin", {key: "write-plugin"}), all_items=its, answers=answers)
    assert res.plugin_basis[key] == "parser: mapped" and res.partitions == 1


@pytest_rtx
def test_the_parser_keeps_its_own_importer_for_a_standard_op(tmp_path):
    """RoiAlign has an importer of its own (it asks for TensorRT's ROIAlign_TRT plugin): a plugin named after the
    op does not change the parser's answer, and the planner keeps the node outside."""
    doc = run_to_end(kernel_job(str(TWO_STAGE), ["/RoiAlign"], parser="rtx", run_gpu=False))
    answer = doc["plugin"]["parser"]
    assert answer["how"] == "not-found" and "ROIAlign plugin was not found" in answer["message"]
    assert answer["partitions_after"] == answer["partitions_before"]


def test_the_cli_does_the_cpu_parts_and_says_the_kernel_did_not_run(tmp_path, capsys):
    from splitscope.engine.cli import main

    out = tmp_path / "k.json"
    args = ["kernel", str(TWO_STAGE), "/RoiAlign", "--parser", "table", "--out", str(tmp_path / "p"), "--json"]
    assert main([*args, str(out)]) == 0
    text = capsys.readouterr().out
    assert "reference: onnxruntime-cpu" in text and "kernel: not run" in text
    doc = json.loads(out.read_text())
    assert doc["nodes"] == ["/RoiAlign"] and doc["reference"]["outputs"][0]["shape"] == [64, 32, 4, 4]
    assert doc["plugin"]["files"] and doc["kernel"]["ran"] is False and doc["kernel"]["error"]


def test_a_cancelled_job_leaves_no_project(tmp_path):
    token = CancelToken()
    folder = tmp_path / "p"
    gen = kernel_job(str(TWO_STAGE), ["/RoiAlign"], parser="table", out=str(folder), run_gpu=False, cancel=token)
    with pytest.raises(JobCancelledError):
        for ev in gen:
            if isinstance(ev, Progress) and ev.stage == "reference":
                token.cancel()
    assert not folder.exists() and not list(tmp_path.iterdir())


def test_the_launch_convention():
    a = np.zeros((2, 3, 8), np.float32)
    m = nvrtc.macros([a], [((2, 3, 8), "float32")], {"epsilon": 1e-5, "axis": -1, "mode": b"avg"})
    assert (m["N"], m["ROWS"], m["COLS"], m["IN0_D2"], m["ATTR_AXIS"]) == (48, 6, 8, 8, -1) and "ATTR_MODE" not in m
    src = '// launch: grid=CEIL_DIV(N, 32) block=(32, 2) shared=4 * COLS\nextern "C" __global__ void k(float* y) {}'
    spec = nvrtc.launch_spec(src, m)
    assert (spec.name, spec.grid, spec.block, spec.shared) == ("k", (2, 1, 1), (32, 2, 1), 32)
    with pytest.raises(nvrtc.LaunchLineError, match="No launch line"):
        nvrtc.launch_spec('extern "C" __global__ void kernel() {}', m)
    with pytest.raises(nvrtc.LaunchLineError, match="unknown name"):
        nvrtc.launch_spec('// launch: grid=M block=1\nextern "C" __global__ void kernel() {}', m)


def test_the_comparison_of_a_kernel_with_its_reference():
    ref = np.linspace(-2, 2, 1000, dtype=np.float32).reshape(10, 100)
    got = ref.copy()
    got[3, 7] = np.nextafter(got[3, 7], np.float32(9))  # one ULP off
    c = nvrtc.compare(got, ref)
    assert c["ok"] and c["max_ulp"] == 1 and c["beyond"] == 0.0
    got[9, 99] += 0.5
    c = nvrtc.compare(got, ref)
    assert not c["ok"] and c["worst"]["index"] == [9, 99] and c["beyond"] == pytest.approx(0.001)
    assert nvrtc.compare(got[:2], ref)["ok"] is False  # a shape the reference does not have


def test_verdicts_say_their_numbers():
    from splitscope.engine.kernel.workbench import KernelResult, verdict

    r = KernelResult(compiled=True, ran=True, numerics_ok=True, ms=0.25, host_ms=0.26, default_ms=0.074, sol_ms=0.005)
    assert verdict(r, 6, True).startswith("Your kernel is 3.5x slower than the runtime default on these 6 nodes")
    assert "keep them delegated" in verdict(r, 6, True)
    r.host_ms, r.ms = 0.032, 0.029
    assert "2.3x faster" in verdict(r, 6, True) and "worth a plugin" in verdict(r, 6, True)
    assert "on the host: no device times here" in verdict(r, 6, True)
    r.numerics_ok, r.beyond, r.max_abs_err, r.worst = False, 0.99, 846.0, {"index": [6, 325, 672]}
    assert verdict(r, 6, True).startswith("The kernel is wrong: 99.0% of the elements")


def test_with_device_times_the_verdict_is_kernel_against_kernel():
    """Where CUPTI gave both sides' device times, they decide (the host times, launch included, beside them) and the
    bound is against the kernel's own device time: on the H200, LayerNorm's kernel 3.83 us against ONNX Runtime's
    5.47 us is 1.43x faster, where host times (with 10-20 us of launch) said 1.2x."""
    from splitscope.engine.kernel.workbench import KernelResult, verdict

    r = KernelResult(compiled=True, ran=True, numerics_ok=True, ms=0.0112, host_ms=0.0221, default_ms=0.0265)
    r.device_ms, r.default_device_ms, r.sol_ms = 0.00383, 0.00547, 0.0013
    text = verdict(r, 1, False)
    assert text.startswith("Your kernel is 1.4x faster than the runtime default on this node")
    assert "device time 0.0038 ms against 0.0055 ms" in text and "launch included, 0.0221 against 0.0265" in text
    assert "at 34% of the bound" in text  # 0.0013 / 0.00383, not against the events' 0.0112 (12%)


def test_device_time_per_run_from_kernel_records():
    """Each kernel name's median duration times how often it ran a run: a run of two kernels, one launched twice."""
    from splitscope.engine.runtime.cupti_times import Kernel, Trace, device_ms_per_run

    t = Trace()
    for run in range(3):
        base = run * 1_000_000
        t.kernels += [Kernel("a", base, base + 2000, 0), Kernel("b", base, base + 500, 0)]
        t.kernels += [Kernel("b", base, base + 700 if run else base + 9000, 0)]  # one outlier
    # a: 2 us once a run; b: 0.5 and 0.7 us a run (an outlier of 9 us once): its median 0.6 us, twice a run
    assert device_ms_per_run(t, runs=3) == pytest.approx(0.002 + 2 * 0.0006)
    assert device_ms_per_run(Trace()) is None
    one = Trace(kernels=[Kernel("k", 0, 3830, 0), Kernel("k", 0, 3900, 0), Kernel("k", 0, 3800, 0)])
    assert device_ms_per_run(one) == pytest.approx(0.00383)  # a workbench kernel: once a launch


def test_the_recorded_h200_run_holds_together():
    """The fused GELU + LayerNorm kernel's run on the H200 (bench/gpu_kernels.py), kept as the panel's
    screenshot data: its numbers are consistent with its verdict."""
    doc = json.loads((ROOT / "tests" / "data" / "kernel_fused_fast_h200.json").read_text())
    k = doc["kernel"]
    assert k["gpu"] == "NVIDIA H200" and k["numerics_ok"] and len(doc["nodes"]) == 6
    assert k["default_ms"] / k["host_ms"] > 1 and "faster than the runtime default on these 6 nodes" in k["verdict"]


def test_the_report_has_the_custom_work(tmp_path):
    """report --kernel K.json: a "Custom work" section with the numbers and the verdict (the H200 run of the fused
    GELU + LayerNorm kernel, whose model is exported on the device; here a kernel JSON of the two-stage export)."""
    from splitscope.engine.cli import main

    k = tmp_path / "k.json"
    assert main(["kernel", str(TWO_STAGE), "/RoiAlign", "--parser", "table", "--json", str(k), "-q"]) == 0
    doc = json.loads(k.read_text())
    h200 = json.loads((ROOT / "tests" / "data" / "kernel_fused_fast_h200.json").read_text())["kernel"]
    doc["kernel"] = h200  # the GPU's numbers, so the section shows a run (the verdict comes with them)
    k.write_text(json.dumps(doc))
    out = tmp_path / "r.html"
    assert main(["report", str(TWO_STAGE), "--parser", "table", "--kernel", str(k), "--out", str(out), "-q"]) == 0
    page = out.read_text()
    assert "Custom work" in page and "/RoiAlign" in page and "NVIDIA H200" in page and h200["verdict"] in page
    other = tmp_path / "other.json"
    other.write_text(json.dumps(dict(doc, nodes=["not/in/this/model"])))
    assert main(["report", str(TWO_STAGE), "--parser", "table", "--kernel", str(other), "--out", str(out)]) == 2


def test_a_python_kernel_is_loaded_or_its_error_said(tmp_path):
    """A CuPy / Triton kernel module (run on the GPU; BENCHMARKS.md): a syntax error is said at its line, a
    module without kernel() says what to define."""
    from splitscope.engine.kernel import pyfunc

    bad = tmp_path / "bad.py"
    bad.write_text("import numpy\ndef kernel(x:\n    return x\n")
    assert pyfunc.is_python(str(bad)) and not pyfunc.is_python("kernel.cu")
    with pytest.raises(nvrtc.CompileError) as e:
        next(pyfunc.launches(str(bad), [], []))
    assert e.value.line == 2
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    with pytest.raises(nvrtc.CompileError, match="define kernel"):
        next(pyfunc.launches(str(empty), [], []))


@pytest_rtx
def test_the_generated_python_plugin_carries_its_fields(tmp_path, monkeypatch):
    """RoiAlign's plugin, as TensorRT-RTX would create it: a string attribute (mode) goes out as CHAR bytes and
    comes back as a string, ints and floats as their arrays; ONNX's defaults are fields too."""
    import importlib.util
    import sys

    run_to_end(kernel_job(str(TWO_STAGE), ["/RoiAlign"], parser="table", out=str(tmp_path / "p"), run_gpu=False))
    monkeypatch.setenv("SPLITSCOPE_TRT_MODULE", "tensorrt_rtx")
    monkeypatch.syspath_prepend(str(tmp_path / "p"))
    spec = importlib.util.spec_from_file_location("roialign_plugin", tmp_path / "p" / "plugin.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    trt = mod.trt
    assert set(mod.FIELDS) >= {"mode", "output_height", "sampling_ratio", "spatial_scale"}
    plugin = mod.RoiAlignPlugin()
    fields = {f.name: f for f in plugin.get_fields_to_serialize()}
    assert fields["mode"].type == trt.PluginFieldType.CHAR and mod._field_value(fields["mode"]) == "avg"
    assert mod._field_value(fields["output_height"]) == 4
    again = mod.RoiAlignCreator().create_plugin("r", trt.PluginFieldCollection(list(fields.values())), None)
    assert again.fields["mode"] == "avg" and again.fields["spatial_scale"] == pytest.approx(0.25)
    sys.modules.pop("launch", None)


def test_a_data_dependent_output_takes_the_references_size(tmp_path):
    """NonMaxSuppression: its output's length depends on the data; the reference gives it, and the starting
    kernel (greedy, one block) is generated for it."""
    g = h.make_graph(
        [h.make_node("NonMaxSuppression", ["b", "s", "k", "t"], ["y"], name="nms")],
        "g",
        [h.make_tensor_value_info("b", T.FLOAT, [1, 50, 4]), h.make_tensor_value_info("s", T.FLOAT, [1, 2, 50])],
        [h.make_tensor_value_info("y", T.INT64, ["n", 3])],
        [
            onnx.numpy_helper.from_array(np.array([5], np.int64), "k"),
            onnx.numpy_helper.from_array(np.array([0.5], np.float32), "t"),
        ],
    )
    p = tmp_path / "nms.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 11)]), str(p))
    doc = run_to_end(kernel_job(str(p), ["nms"], parser="table", run_gpu=False, ask_parser=False))
    n = doc["reference"]["outputs"][0]["shape"][0]
    assert 1 <= n <= 10 and doc["extract"]["outputs"][0]["shape"] == [n, 3]
    assert doc["source"]["kind"] == "nms" and doc["source"]["complete"] and "shared=50" in doc["source"]["text"]


def test_a_kernel_document_reads_back_typed_whatever_its_release():
    """A kernel job's JSON as the window keeps it: the recorded H200 run (every field), and a CPU-only run with no
    kernel and no parser answer; fields a release did not write read as their defaults, unknown ones are ignored."""
    from splitscope.engine.kernel.results import KernelDoc, KernelResult, ParserAnswer

    doc = json.loads((ROOT / "tests" / "data" / "kernel_fused_fast_h200.json").read_text())
    k = KernelDoc.from_json(doc)
    assert k.kernel is not None and k.kernel.gpu == "NVIDIA H200" and k.kernel.numerics_ok
    assert k.kernel.default_ms == doc["kernel"]["default_ms"] and k.kernel.device_ms is None  # before CUPTI here
    assert len(k.nodes) == 6 and k.op  # written before documents were versioned: read as version 0, stamped now
    assert k.json == {"schema": "splitscope-kernel", "schema_version": 1, **doc}
    bare = KernelDoc.from_json({"nodes": ["/a"], "extract": {"op": "Gelu"}, "kernel": None, "plugin": None})
    assert bare.kernel is None and bare.answer is None and bare.folder is None and bare.op == "Gelu"
    assert KernelResult.from_json({"ms": 1.0, "from_a_later_release": 3}).ms == 1.0
    assert ParserAnswer.from_json({"how": "mapped"}).taken and not ParserAnswer.from_json({}).counted
