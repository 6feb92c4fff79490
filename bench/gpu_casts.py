"""FP16/BF16 cast models on a GPU: the accuracy of the written model run by ONNX Runtime CUDA (real FP16
kernels) against the emulation ``splitscope calibrate`` reports (FP32 arithmetic on rounded tensors), both
against TRUE FP32: ONNX Runtime CPU, and ONNX Runtime CUDA with TF32 off (``use_tf32=0``; with TF32 on, CUDA's
FP32 is only about 70 dB from the CPU's, too noisy to judge a fraction of a dB).

    python bench/gpu_casts.py OUT_DIR MODEL.onnx [--dim NAME=INT ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("model", type=Path)
    ap.add_argument("--dim", action="append", default=[])
    args = ap.parse_args()
    import onnx
    import onnxruntime as ort

    if hasattr(ort, "preload_dlls"):
        ort.preload_dlls()
    from splitscope.engine.calib.accuracy import compare_outputs
    from splitscope.engine.calib.calibrate import calibrate
    from splitscope.engine.dims import parse_dims
    from splitscope.engine.jobs import run_to_end
    from splitscope.engine.runtime.inputs import input_specs, random_feeds

    dims = parse_dims(args.dim)
    args.out.mkdir(parents=True, exist_ok=True)
    specs = input_specs(onnx.load(str(args.model), load_external_data=False))
    feeds = [random_feeds(specs, dims, 10_000 + k) for k in range(8)]  # calibrate's held-out samples
    so = ort.SessionOptions()
    so.log_severity_level = 3
    no_tf32 = [("CUDAExecutionProvider", {"use_tf32": "0"})]
    cpu = ort.InferenceSession(str(args.model), so, providers=["CPUExecutionProvider"])
    refs = [cpu.run(None, f) for f in feeds]  # true FP32: the emulation's own reference
    ref = ort.InferenceSession(str(args.model), so, providers=no_tf32)
    refs_cuda = [ref.run(None, f) for f in feeds]
    outs0 = [o.name for o in cpu.get_outputs()]
    agree = {o: compare_outputs([r[k] for r in refs], [g[k] for g in refs_cuda])["snr_db"] for k, o in enumerate(outs0)}
    print(json.dumps({"cuda_fp32_no_tf32_vs_cpu_db": agree}), flush=True)
    rows = []
    for precision in ("fp16", "bf16"):
        q = args.out / f"{args.model.stem}.{precision}.onnx"
        res = run_to_end(calibrate(args.model, q, precision=precision, samples=8, dims=dims))
        row = {
            "model": args.model.name,
            "precision": precision,
            "nodes_reduced": res["quantized_nodes"],
            "casts": res["casts"],
            "emulated": {o: a["snr_db"] for o, a in res["accuracy"].items()},
        }
        try:
            sess = ort.InferenceSession(str(q), so, providers=no_tf32)
            outs = [o.name for o in sess.get_outputs()]
            got = [sess.run(None, f) for f in feeds]
            row["cuda"] = {
                o: compare_outputs([r[k] for r in refs], [g[k] for g in got])["snr_db"] for k, o in enumerate(outs)
            }
            row["cuda_vs_cuda_fp32"] = {
                o: compare_outputs([r[k] for r in refs_cuda], [g[k] for g in got])["snr_db"] for k, o in enumerate(outs)
            }
            row["gap_db"] = {o: round(row["emulated"][o] - row["cuda"][o], 3) for o in outs if o in row["emulated"]}
            row["cuda_provider_nodes"] = "CUDAExecutionProvider" in sess.get_providers()
        except Exception as e:  # noqa: BLE001 - report what ONNX Runtime says
            row["cuda_error"] = str(e).splitlines()[0][:300]
        print(json.dumps(row), flush=True)
        rows.append(row)
    (args.out / f"casts_{args.model.stem}.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
