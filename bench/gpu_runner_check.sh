#!/usr/bin/env bash
# The backends behind the Runner interface on a GPU, after the wheels are installed under /root/pkgs (onnxruntime-gpu
# and the engine's pure-Python dependencies): a profile, a generation, calibration statistics folded on the device, an
# accuracy check and a precision search, each on --backend ort-cuda, with the CPU's figures beside them.
#   bash bench/gpu_runner_check.sh OUT
set -uo pipefail
out=${1:?OUT_DIR}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=/root/pkgs:$PWD SPLITSCOPE_CACHE_DIR=/root/cache
cli="python3 -m splitscope.engine.cli"
m=/root/models; mkdir -p $m
[ -f $m/r18.onnx ] || python3 - $m/r18.onnx <<'PY' 2>&1 | tail -1
import sys, torch, torchvision
m = torchvision.models.resnet18(weights=None).eval()
torch.onnx.export(m, (torch.randn(1, 3, 224, 224),), sys.argv[1], dynamo=False, opset_version=17,
                  input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
print("exported resnet18")
PY
for b in ort-cuda ort-cpu; do
  $cli profile $m/r18.onnx --backend $b --dim batch=8 --iterations 50 --parser table -q --json "$out/r18_$b.json"; echo "profile $b rc=$?"
  $cli profile tests/data/decoder_kv_tiny.onnx --backend $b --generate 16 --prompt-len 32 -q --json "$out/gen_$b.json"; echo "generate $b rc=$?"
  $cli calibrate $m/r18.onnx --data random --dim batch=1 --backend $b --samples 16 --budget snr=30 \
    --out /root/q18_$b.onnx --json "$out/cal_$b.json" -q; echo "calibrate $b rc=$?"
done
python3 - "$out" <<'PY'
import json, sys
from pathlib import Path
o = Path(sys.argv[1])
for b in ("ort-cuda", "ort-cpu"):
    p = json.loads((o / f"r18_{b}.json").read_text())
    print(b, "profile", p["device"], "mean", round(p["latency_ms"]["mean"], 3), "ms; node_times", p["node_times"],
          "cover", p["node_cover"], "graph", (p.get("cuda_graph_ms") or {}).get("p50"), "nodes", len(p["per_node"]))
    g = json.loads((o / f"gen_{b}.json").read_text())["generation"]
    print(b, "generate ttft", g["ttft_ms"], "tpot", g["tpot_ms"], "kv/token", g["kv_bytes_per_token"], g["verdict"])
    c = json.loads((o / f"cal_{b}.json").read_text())
    acc = next(iter(c.get("accuracy", {}).values()), {})
    s = c.get("search") or {}
    print(b, "calibrate", c.get("accuracy_measured"), "snr", acc.get("snr_db"), "stats on", c.get("stats_folded_on"),
          "search all-quantized", s.get("all_quantized"), "keep", len(s.get("keep", [])), "evaluations", s.get("evaluations"))
PY
