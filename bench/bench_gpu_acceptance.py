"""The acceptance suite's real models on a GPU: each through ``profile --backend ort-cuda`` against a plain ONNX
Runtime CUDA loop written here (the same session settings: every optimisation on, inputs and outputs bound on the
device), interleaved, and through ``calibrate --backend ort-cuda`` (INT8 entropy and FP16 on the suite's photos)
with the accuracy we report beside the SNR of the same written model run here on CUDA (TF32 off) and on the CPU.

    bash .ci/acceptance          # the packages that ship the models (or --site at a folder holding their files)
    PYTHONPATH=. python bench/bench_gpu_acceptance.py --site build/acceptance --out OUT_DIR

``--backend ort-cpu`` runs the same on the CPU (a dry run of the script where no GPU is). Writes ``gpu.json`` and
``gpu.md`` (one table) under ``--out``; one line of JSON per model on stdout as it goes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from splitscope.engine.calib.calibrate import calibrate
from splitscope.engine.calib.data import batches, open_data
from splitscope.engine.calib.steps import heldout_data
from splitscope.engine.jobs import run_to_end
from splitscope.engine.onnxio.concrete import classify_dims
from splitscope.engine.runtime.feeds import input_rules
from splitscope.engine.runtime.inputs import input_specs, random_feeds
from splitscope.engine.runtime.profile import profile
from splitscope.engine.split.analyze import analyze_model

ROOT = Path(__file__).resolve().parents[1]


def _ort():  # type: ignore[no-untyped-def]
    import onnxruntime as ort

    if hasattr(ort, "preload_dlls"):
        ort.preload_dlls()
    return ort


def plain_loop(path: Path, feeds: dict[str, np.ndarray], backend: str, iterations: int, warmup: int) -> float:
    """The p50 latency (ms) of a bare ONNX Runtime loop: default options (every optimisation on), on CUDA with
    inputs and outputs bound on the device and synchronised each run, as a user's own loop would be."""
    ort = _ort()
    cuda = backend == "ort-cuda"
    providers = ["CUDAExecutionProvider", "CPUExecutionProvider"] if cuda else ["CPUExecutionProvider"]
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(path), so, providers=providers)
    if cuda:
        io = sess.io_binding()
        for name, a in feeds.items():
            io.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(a, "cuda", 0))
        for o in sess.get_outputs():
            io.bind_output(o.name, "cuda", 0)

        def run() -> None:
            sess.run_with_iobinding(io)
            io.synchronize_outputs()
    else:

        def run() -> None:
            sess.run(None, feeds)

    for _ in range(warmup):
        run()
    times = []
    for _ in range(iterations):
        a = time.perf_counter()
        run()
        times.append((time.perf_counter() - a) * 1000)
    return statistics.median(times)


def snr_here(model: Path, written: Path, feeds: list[dict[str, np.ndarray]], cuda: bool) -> float:
    """The first output's SNR (dB) of ``written`` against ``model``, both run by this script; on CUDA with TF32 off
    for the FP32 reference, every node of the written model as written."""
    ort = _ort()
    providers: list[Any] = (
        [("CUDAExecutionProvider", {"use_tf32": "0"}), "CPUExecutionProvider"] if cuda else ["CPUExecutionProvider"]
    )
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    a = ort.InferenceSession(str(model), providers=providers)
    b = ort.InferenceSession(str(written), so, providers=providers)
    name = a.get_outputs()[0].name
    r = np.concatenate([np.asarray(a.run([name], f)[0], np.float64).ravel() for f in feeds])
    g = np.concatenate([np.asarray(b.run([name], f)[0], np.float64).ravel() for f in feeds])
    noise = float(np.sum((r - g) ** 2))
    return 999.0 if noise == 0 else round(float(10 * np.log10(np.sum(r**2) / noise)), 2)


def profile_row(real: Any, path: Path, backend: str, iterations: int) -> dict[str, Any]:
    """Ours against the plain loop, interleaved: plain, ours, plain, ours, plain (the medians compared)."""
    gm = analyze_model(path, parser="table", dims=real.dims)
    proto = onnx.load(str(path), load_external_data=False)
    feeds = random_feeds(input_specs(proto), dict(gm.dims), 0, input_rules(proto))  # silero's sr=16000, as profile
    warm = max(iterations // 10, 5)
    plain, ours, doc = [], [], {}
    for k in range(5):
        if k % 2 == 0:
            plain.append(plain_loop(path, feeds, backend, iterations, warm))
        else:
            res = run_to_end(
                profile(path, gm, backend=backend, iterations=iterations, warmup=warm, profiled=20, dims=real.dims)
            )
            doc = res.to_json()
            ours.append(doc["latency_ms"]["p50"])
    v = doc["verdict"]
    nums = v.get("numbers", {})
    return {
        "ours_p50_ms": round(statistics.median(ours), 4),
        "plain_p50_ms": round(statistics.median(plain), 4),
        "ratio": round(statistics.median(ours) / statistics.median(plain), 3),
        "node_times": doc.get("node_times"),
        "node_share": nums.get("node_cover"),  # the nodes' (device, under CUPTI) time over the timed latency
        "idle_share": None if nums.get("node_cover") is None else round(1 - nums["node_cover"], 3),
        "cuda_graph_ms": nums.get("cuda_graph_ms"),
        "verdict": v["verdict"],
        "notes": doc.get("notes", [])[:4],
    }


def calib_rows(real: Any, path: Path, backend: str, tmp: Path, site: Path) -> dict[str, Any]:
    """INT8 and FP16 calibrated on the suite's photos on ``backend``; reported against measured here."""
    photos = tmp / real.id
    photos.mkdir()
    for k, name in enumerate((*real.calibrate_on, *real.held_out)):
        shutil.copyfile(site / "skimage" / "data" / name, photos / f"{k:02d}_{name}")
    proto = onnx.load(str(path), load_external_data=False)
    specs = input_specs(proto)
    dims = classify_dims(proto, real.dims).values
    n = len(real.calibrate_on)
    cdata = open_data(str(photos), specs, n, dims, recipe=real.recipe)
    held = list(batches(heldout_data(cdata, specs, dims, n, 2)))
    row: dict[str, Any] = {}
    for precision in ("int8", "fp16"):
        out = tmp / f"{real.id}.{precision}.onnx"
        kw = {"data": str(photos), "recipe": real.recipe, "samples": n, "heldout": 2, "backend": backend}
        a = time.perf_counter()
        doc = run_to_end(calibrate(path, out, dims=real.dims, precision=precision, **kw))
        first = next(iter(doc["accuracy"].values()))
        row[f"{precision}_seconds"] = round(time.perf_counter() - a, 2)
        row[f"{precision}_reported_db"] = first["snr_db"]
        row[f"{precision}_how"] = doc["accuracy_measured"]["how"]
        if backend == "ort-cuda":
            row[f"{precision}_cuda_db"] = snr_here(path, out, held, cuda=True)
        row[f"{precision}_cpu_db"] = snr_here(path, out, held, cuda=False)
    return row


def table(rows: list[dict[str, Any]], device: str) -> str:
    head = (
        f"| model ({device}) | ours p50 ms | plain loop p50 ms | ratio | node share | idle share | CUDA graph ms "
        "| verdict | INT8 reported / CUDA / CPU dB | FP16 reported / CUDA / CPU dB |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |\n"
    )

    def acc(r: dict[str, Any], p: str) -> str:
        if f"{p}_reported_db" not in r:
            return r.get("calib_error", "-")
        return f"{r[f'{p}_reported_db']} / {r.get(f'{p}_cuda_db', '-')} / {r[f'{p}_cpu_db']}"

    lines = []
    for r in rows:
        if "profile_error" in r:
            lines.append(
                f"| {r['model']} | failed: {r['profile_error']} | | | | | | | {acc(r, 'int8')} | {acc(r, 'fp16')} |"
            )
            continue
        share = lambda x: "-" if x is None else f"{x:.0%}"  # noqa: E731
        lines.append(
            f"| {r['model']} | {r['ours_p50_ms']} | {r['plain_p50_ms']} | {r['ratio']} | {share(r['node_share'])} "
            f"| {share(r['idle_share'])} | {r['cuda_graph_ms'] or '-'} | {r['verdict']} | {acc(r, 'int8')} "
            f"| {acc(r, 'fp16')} |"
        )
    return head + "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", type=Path, default=ROOT / "build" / "acceptance")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--backend", default="ort-cuda", choices=["ort-cuda", "ort-cpu"])
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--only", action="append", default=[], help="an acceptance model's id (repeatable)")
    args = ap.parse_args()
    import importlib

    mod = importlib.import_module("tests.acceptance.test_real_models")  # the suite's models (PYTHONPATH=.)
    args.out.mkdir(parents=True, exist_ok=True)
    device = "CPU"
    if args.backend == "ort-cuda":
        from splitscope.engine.runtime.device import gpu_info

        device = gpu_info(0).name
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="splitscope-gpu-acceptance-"))
    try:
        for real in mod.REAL:
            path = args.site / real.path
            if (args.only and real.id not in args.only) or not path.is_file():
                continue
            row: dict[str, Any] = {"model": real.id}
            try:
                row.update(profile_row(real, path, args.backend, args.iterations))
            except Exception as e:  # noqa: BLE001 - a model that fails is a row of the table
                row["profile_error"] = str(e).splitlines()[0][:160]
                traceback.print_exc()
            if real.recipe:
                try:
                    row.update(calib_rows(real, path, args.backend, tmp, args.site))
                except Exception as e:  # noqa: BLE001
                    row["calib_error"] = str(e).splitlines()[0][:160]
                    traceback.print_exc()
            print(json.dumps(row), flush=True)
            rows.append(row)
            (args.out / "gpu.json").write_text(json.dumps({"device": device, "rows": rows}, indent=1) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (args.out / "gpu.md").write_text(table(rows, device))
    print(table(rows, device))


if __name__ == "__main__":
    main()
