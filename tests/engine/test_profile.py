"""Profiling on the CPU backend end to end on real models, its inputs, statistics, verdict and saved sessions.

The GPU parts (NVML, copies, ort-cuda) run on a GPU machine (BENCHMARKS.md says what was measured there);
here they must say in one line that there is no GPU, and everything else must work.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from splitscope.engine.cli import main as cli
from splitscope.engine.dims import parse_dims
from splitscope.engine.errors import SplitscopeError
from splitscope.engine.jobs import Sample, run_to_end
from splitscope.engine.runtime.device import NoGpu, gpu_info
from splitscope.engine.runtime.inputs import ProfileInputError, file_feeds, input_specs, random_feeds
from splitscope.engine.runtime.profile import profile
from splitscope.engine.runtime.roofline import classify, verdict
from splitscope.engine.runtime.stats import latency_stats
from splitscope.engine.runtime.store import load_results, model_key, save_result
from splitscope.engine.runtime.telemetry import NvmlSampler
from splitscope.engine.split.analyze import analyze_model

from tests.engine.models import LIGHT_DIR

ROOT = Path(__file__).resolve().parents[2]
SQUEEZENET = LIGHT_DIR / "light_squeezenet.onnx"
TRANSFORMER = ROOT / "tests" / "data" / "torch_transformer.onnx"


def _events(job):  # type: ignore[no-untyped-def]
    events = []
    while True:
        try:
            events.append(next(job))
        except StopIteration as stop:
            return events, stop.value


def test_ort_cpu_profile_of_a_real_cnn():
    gm = analyze_model(SQUEEZENET, parser="table")
    events, res = _events(profile(SQUEEZENET, gm, iterations=12, warmup=2, profiled=4, telemetry=False))
    lat = [e for e in events if isinstance(e, Sample) and e.series == "latency"]
    assert len(lat) == 12 and len(res.samples_ms) == 12 and len(res.warmup_ms) == 2
    assert set(res.latency_ms) == {"mean", "min", "p50", "p90", "p99", "max", "std"}
    assert res.latency_ms["min"] <= res.latency_ms["p50"] <= res.latency_ms["max"]
    assert any(e.series == "nodes" for e in events if isinstance(e, Sample))  # per-node times arrive live
    # Per-node times name the model's own nodes (its Convs, each with the Relu the CPU runs in it, and Concats) and
    # add up to one.
    matched = [r for r in res.per_node if r["index"] is not None]
    assert len(matched) >= 0.9 * len(res.per_node) and {"Conv", "Concat"} <= {r["op_type"] for r in matched}
    assert abs(sum(r["share"] for r in res.per_node) - 1) < 1e-3
    assert res.verdict["verdict"] in ("graph-bound", "kernel-bound", "transfer-bound")
    assert res.device == "CPU" and res.throughput["inferences_per_s"] > 0
    # Profiled in 4 sessions of one run: each node's time lies within its spread across them (a mean of the
    # sessions' own), and rows are ranked slowest first, a tie sharing the rank of the row before.
    for r in res.per_node:
        lo, hi = r["spread_ms"]
        assert lo - 1e-5 <= r["ms"] <= hi + 1e-5
    ranks = [r["rank"] for r in res.per_node]
    assert ranks[0] == 1 and ranks == sorted(ranks)
    assert all(r["rank"] == k + 1 or r["tie"] for k, r in enumerate(res.per_node))
    json.dumps(res.to_json())


def test_ties_are_rows_whose_spreads_overlap_the_row_before():
    from splitscope.engine.runtime.profile import _spread_and_ties

    sessions = [{"a": 5.0, "b": 4.0, "c": 3.9, "d": 1.0}, {"a": 5.2, "b": 4.2, "c": 4.1, "d": 1.1}]
    rows = [{"name": n, "ms": sum(s[n] for s in sessions) / 2} for n in "abcd"]
    _spread_and_ties(rows, sessions)
    got = [(r["name"], r["rank"], r["tie"], r["spread_ms"]) for r in rows]
    assert got == [
        ("a", 1, False, [5.0, 5.2]),
        ("b", 2, True, [4.0, 4.2]),  # b's 4.0-4.2 and c's 3.9-4.1 overlap: a tie, ranked 2 both
        ("c", 2, True, [3.9, 4.1]),
        ("d", 4, False, [1.0, 1.1]),
    ]
    one = [{"name": "a", "ms": 1.0}, {"name": "b", "ms": 1.0}]
    _spread_and_ties(one, sessions[:1])  # one session: no spread, so no tie is claimed
    assert [(r["rank"], r["tie"], "spread_ms" in r) for r in one] == [(1, False, False), (2, False, False)]


def test_symbolic_dims_and_a_run_that_fails_say_what_to_do():
    gm = analyze_model(TRANSFORMER, parser="table")
    # seq has no value: refused, named (never run at a guessed 1).
    with pytest.raises(Exception, match="Input 'ids' has no value for seq: give --dim seq=VALUE") as e:
        run_to_end(profile(TRANSFORMER, gm, iterations=2, warmup=0, profiled=1, telemetry=False))
    assert "\n" not in str(e.value)
    # The TorchScript export baked batch x heads = 16 and seq = 16 into a Reshape: other dims fail to run.
    with pytest.raises(Exception, match="symbolic dims: set them with --dim") as e:
        run_to_end(profile(TRANSFORMER, gm, iterations=2, warmup=0, profiled=1, telemetry=False, dims={"seq": 8}))
    assert "\n" not in str(e.value)
    res = run_to_end(
        profile(TRANSFORMER, gm, iterations=3, warmup=1, profiled=2, telemetry=False, dims={"batch": 4, "seq": 16})
    )
    assert res.throughput["batch"] == 4 and res.throughput["items_per_s"] > res.throughput["inferences_per_s"]


def test_inputs_random_per_dtype_and_from_files(tmp_path):
    specs = input_specs(onnx.load(TRANSFORMER))
    assert [(s.name, s.dtype, s.dims) for s in specs] == [("ids", np.dtype("int64"), ("batch", "seq"))]
    a = random_feeds(specs, {"batch": 2, "seq": 5}, seed=3)["ids"]
    assert a.shape == (2, 5) and a.dtype == np.int64
    assert np.array_equal(a, random_feeds(specs, {"batch": 2, "seq": 5}, seed=3)["ids"])  # seeded
    np.savez(tmp_path / "ok.npz", ids=np.zeros((4, 16), np.int64))
    assert file_feeds(tmp_path / "ok.npz", specs)["ids"].shape == (4, 16)
    np.savez(tmp_path / "name.npz", tokens=np.zeros((4, 16), np.int64))
    np.savez(tmp_path / "dtype.npz", ids=np.zeros((4, 16), np.float32))
    np.savez(tmp_path / "rank.npz", ids=np.zeros((4,), np.int64))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    for f, words in (
        ("name.npz", "no array for input 'ids'"),
        ("dtype.npz", "save it as int64"),
        ("rank.npz", "reshape it"),
        ("junk.npz", "numpy.savez"),
        ("gone.npz", "does not exist"),
    ):
        with pytest.raises(ProfileInputError, match=words) as e:
            file_feeds(tmp_path / f, specs)
        assert "\n" not in e.value.message
    with pytest.raises(SplitscopeError, match="NAME=INT"):
        parse_dims(["batch"])


def test_latency_statistics():
    s = latency_stats([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s["min"] == 1.0 and s["max"] == 100.0 and s["p50"] == 3.0 and s["mean"] == 22.0
    assert s["p99"] > s["p90"] > s["p50"]


def test_roofline_classes_and_verdicts():
    peaks, bw = {"fp32": 60e12}, 4.8e12  # H200-like: ridge at 12.5 FLOP/byte
    assert classify(1.0, int(1e12 * 1e-3 * 50), int(1e9), "float32", peaks, bw)["class"] == "compute-bound"
    mem = classify(1.0, int(1e6), int(4e9 * 1e-3 * 1000), "float32", peaks, bw)
    assert mem["class"] == "memory-bound" and 0 < mem["sol_ms"] < 1.0 and mem["headroom_ms"] > 0
    assert classify(0.005, 1000, 4000, "float32", peaks, bw)["class"] == "launch-bound"
    small = [{"name": f"n{i}", "ms": 0.005, "class": "launch-bound"} for i in range(100)]
    assert verdict(0.6, small, 0.0, 0.0, 0.0)["verdict"] == "graph-bound"
    heavy = [{"name": "gemm", "ms": 5.0, "class": "compute-bound"}]
    assert verdict(5.2, heavy, 0.1, 0.0, 0.0)["verdict"] == "kernel-bound"
    v = verdict(5.2, heavy, 3.0, 1.0, 0.5)
    assert v["verdict"] == "transfer-bound" and v["numbers"]["transfer_share"] > 0.3 and "pin" in v["fix"]


def test_launches_over_a_fifth_of_the_latency_make_a_model_graph_bound():
    """BERT-base on the H200: CUPTI's kernels covered 72-73% of the latency, the rest the device idle between
    kernels while the host launches; that quarter is what TensorRT's fusion or a CUDA graph removes, so the verdict
    leads with it (it said kernel-bound), and the time split counts it as graph time."""
    from splitscope.engine.runtime.roofline import time_split

    heavy = [{"name": f"gemm{i}", "ms": 0.4, "class": "compute-bound"} for i in range(12)]  # 4.8 ms of kernels
    v = verdict(6.6, heavy, 0.0, 0.0, 0.0, cover=0.727, launch_share=0.273)
    assert v["verdict"] == "graph-bound" and "launches cost 27% of the latency" in v["why"]
    assert "fusion" in v["fix"] and "CUDA graph" in v["fix"]
    assert v["numbers"]["launch_idle_ms"] == pytest.approx(0.273 * 6.6, abs=1e-3)
    graph, kernels, _ = time_split({"verdict": v})
    assert graph[1] + kernels[1] == pytest.approx(6.6, rel=0.01)  # kernels and the idle between them: the latency
    assert verdict(6.6, heavy, 0.0, 0.0, 0.0, cover=0.85, launch_share=0.15)["verdict"] == "kernel-bound"


def test_without_a_gpu_the_gpu_parts_say_so_in_one_line():
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has an NVIDIA GPU: the no-GPU messages cannot be seen here")
    with pytest.raises(NoGpu) as e:
        gpu_info()
    assert str(e.value) and "\n" not in str(e.value)
    s = NvmlSampler()
    why = s.start()
    assert why and "\n" not in why
    assert s.summary()["samples"] == 0
    assert cli(["profile", str(SQUEEZENET), "--backend", "ort-cuda", "-q"]) == 2


def test_cli_profile_writes_the_json_and_fails_in_one_line(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert (
        cli(
            [
                "profile",
                str(SQUEEZENET),
                "--iterations",
                "5",
                "--warmup",
                "1",
                "--profiled",
                "2",
                "--parser",
                "table",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    j = json.loads(out.read_text())
    for key in ("backend", "device", "iterations", "latency_ms", "throughput", "per_node", "copies", "verdict"):
        assert key in j
    assert {"name", "op_type", "ms", "share"} <= set(j["per_node"][0])
    assert "verdict:" in capsys.readouterr().out
    assert cli(["profile", str(ROOT / "resources" / "sample.onnx"), "--parser", "table", "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "custom-op library" in err[0]
    assert cli(["profile", str(SQUEEZENET), "--dim", "batch"]) == 2
    assert cli(["profile", str(SQUEEZENET), "--input", str(tmp_path / "none.npz"), "--parser", "table"]) == 2


# The CLI as a terminal starts it. A shell's background job (`.ci/run &`, `nohup`) starts with SIGINT ignored, and a
# child inherits that: Python then installs no KeyboardInterrupt handler and Ctrl-C never reaches the CLI. The child
# here installs the handler Python installs when started in a terminal, then runs the CLI's own entry point.
AS_IN_A_TERMINAL = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from splitscope.engine.cli import main; sys.exit(main(sys.argv[1:]))"
)


def test_cli_profile_interrupted_exits_130_and_writes_nothing(tmp_path):
    out = tmp_path / "p.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            AS_IN_A_TERMINAL,
            "profile",
            str(SQUEEZENET),
            "--iterations",
            "100000",
            "--parser",
            "table",
            "--json",
            str(out),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=slave,  # a terminal: the CLI shows its progress there, so the test sees the timing start
    )
    os.close(slave)
    seen = b""

    def drain(timeout: float) -> str:
        """Read what the CLI wrote to its terminal: "data", "idle" (nothing within ``timeout``) or "closed"."""
        nonlocal seen
        if not select.select([master], [], [], timeout)[0]:
            return "idle"
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the other end closed
            return "closed"
        seen += chunk
        return "data" if chunk else "closed"

    try:
        end = time.monotonic() + 300  # a generous deadline on a busy machine; the condition ends the wait
        while b"Iteration" not in seen and time.monotonic() < end and proc.poll() is None:
            drain(1.0)
        assert b"Iteration" in seen, seen[-400:]
        proc.send_signal(signal.SIGINT)
        # The terminal is read until the CLI ends: unread, it fills and the CLI's next write (its progress, its
        # last line) blocks for good.
        end = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < end and drain(0.5) != "closed":
            pass
        proc.communicate(timeout=60)
        while drain(0.5) == "data":
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        os.close(master)
    err = seen.decode(errors="replace")
    assert proc.returncode == 130, err[-400:]
    assert not out.exists() and not list(tmp_path.iterdir())
    assert "Traceback" not in err


def test_saved_results_come_back_by_content_not_path(tmp_path):
    a = tmp_path / "a.onnx"
    shutil.copy(SQUEEZENET, a)
    b = tmp_path / "renamed.onnx"
    shutil.copy(SQUEEZENET, b)
    assert model_key(a) == model_key(b)
    save_result(a, "profile", {"backend": "ort-cpu", "latency_ms": {"mean": 1.0}})
    got = load_results(b, "profile")
    assert len(got) == 1 and got[0]["result"]["backend"] == "ort-cpu"
    with b.open("r+b") as f:  # one byte changed in the middle: another model
        f.seek(b.stat().st_size // 2)
        f.write(b"\x00")
    assert model_key(b) != model_key(a) and load_results(b) == []
    assert got[0]["file"].startswith(os.environ["SPLITSCOPE_DATA_DIR"])  # the test's data folder, not the user's


def test_a_models_key_is_read_once_until_the_file_changes(tmp_path, monkeypatch):
    """The window asks for the key of the model on screen on its UI thread: the analysis read it already."""
    from pathlib import Path

    a = tmp_path / "a.onnx"
    shutil.copy(SQUEEZENET, a)
    import time
    import types

    from splitscope.engine.runtime import store

    later = types.SimpleNamespace(time=lambda: time.time() + 10)  # the file was written ten seconds ago
    monkeypatch.setattr(store, "time", later)
    key = model_key(a)
    opened = []
    real_open = Path.open
    monkeypatch.setattr(Path, "open", lambda self, *a, **k: opened.append(self) or real_open(self, *a, **k))
    assert model_key(a) == key and opened == []
    with real_open(a, "r+b") as f:  # changed now: read again
        f.seek(a.stat().st_size // 2)
        f.write(b"\x00")
    assert model_key(a) != key and opened == [a]


def test_a_fused_nodes_time_goes_to_the_model_node_it_starts_from():
    """ONNX Runtime's names for what it fused (seen on the H200 with a torchvision ViT at full optimisation) keep the
    first node's name, then the fusions': their times go to that model node; nodes the runtime inserted keep theirs."""
    from splitscope.engine.runtime.ort import model_node_name, to_model_nodes

    index_of = {"/enc/l0/attn/MatMul": 3, "/enc/l0/attn/MatMul_1": 4, "/enc/l0/attn/Gather_2": 5, "/enc/Add": 6}
    runtime = {
        "/enc/l0/attn/MatMul/MatMulAddFusion": 10.0,
        "/enc/l0/attn/MatMul_1/MatMulScaleFusion//MatmulTransposeFusion/": 4.0,
        "/enc/l0/attn/Gather_2/GatherSliceToSplitFusion": 1.0,
        "/enc/Add": 2.0,
        "/enc/l0/attn/MatMul_1_new_reshape": 0.5,
        "gemm_input_reshape": 0.5,
        "Transpose_token_213": 0.25,
        "Add_token_7": 0.125,
    }
    index_of["Add"] = 7  # a bare name: the runtime's Add_token_7 is not it
    assert model_node_name("/enc/l0/attn/MatMul_10", index_of) is None  # a prefix of a name is not the node
    assert model_node_name("/enc/l0/attn/MatMul_10_new_reshape", {**index_of, "/enc/l0/attn/MatMul_10": 9}) == (
        "/enc/l0/attn/MatMul_10"
    )
    times, moved = to_model_nodes(runtime, index_of)
    assert moved == 4
    assert times == {
        "/enc/l0/attn/MatMul": 10.0,
        "/enc/l0/attn/MatMul_1": 4.5,
        "/enc/l0/attn/Gather_2": 1.0,
        "/enc/Add": 2.0,
        "gemm_input_reshape": 0.5,
        "Transpose_token_213": 0.25,
        "Add_token_7": 0.125,
    }


def test_cpu_node_times_are_of_the_optimised_session_that_was_timed(tmp_path):
    """On the CPU the profiled session runs at the timed session's full optimisation: its blocked-layout convolutions
    (named after their outputs, ``feat_nchwc``) are counted at the model's nodes, and the layout reorders it adds
    that no model node holds are rows of their own."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((32, 16, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 32, 3, 3)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["feat"], "stem", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["feat"], ["act"], "act"),
        helper.make_node("Conv", ["act", "w2"], ["y"], "head", pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 56, 56])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 56, 56])],
        [w1, w2],
    )
    path = tmp_path / "convs.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    gm = analyze_model(path, parser="table")
    res = run_to_end(profile(path, gm, iterations=4, warmup=1, profiled=3, telemetry=False))
    rows = {r["name"]: r for r in res.per_node}
    assert {"stem", "head"} <= set(rows) and not any(n.endswith("_nchwc") for n in rows)
    assert rows["stem"]["op_type"] == "Conv" and rows["stem"]["index"] == 0
    made = [r for r in res.per_node if r["index"] is None]
    assert all(r["status"] == "runtime" for r in made)  # reorders: the runtime's own rows
    assert any("timed session's graph optimisation" in n for n in res.notes)
