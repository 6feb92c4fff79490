#!/usr/bin/env bash
# The GPU measurements of BENCHMARKS.md ("Profiling on the H200"), on a machine with an NVIDIA GPU,
# PyTorch (for the ResNet-50 export) and onnxruntime-gpu importable. Usage: bash bench/gpu_run.sh OUT_DIR [LLAMA.onnx]
set -uo pipefail
out=${1:?OUT_DIR}; llama=${2:-}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 - "$out" <<'PY'
import json, sys, time
from splitscope.engine.runtime.device import gpu_info
from splitscope.engine.runtime.telemetry import NvmlSampler
info = gpu_info()
s = NvmlSampler(period=0.01); print("sampler:", s.start() or "started"); time.sleep(2.0); s.stop()
json.dump({"gpu": info.to_json(), "sampler_2s": s.summary()}, open(f"{sys.argv[1]}/probe.json", "w"), indent=1)
print(json.dumps({"gpu": info.to_json(), "sampler": s.summary()})[:1500])
PY
python3 - <<'PY'
import torch, torchvision
m = torchvision.models.resnet50(weights=None).eval()
torch.onnx.export(m, (torch.randn(8, 3, 224, 224),), "/tmp/r50.onnx", dynamo=False, opset_version=17,
                  input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
print("exported resnet50")
PY
cli="python3 -m splitscope.engine.cli profile"
$cli /tmp/r50.onnx --backend ort-cuda --dim batch=8 --iterations 200 --warmup 20 --parser table --json "$out/r50_cuda.json" | tail -12
$cli /tmp/r50.onnx --backend ort-cpu --dim batch=8 --iterations 20 --warmup 3 --parser table -q --json "$out/r50_cpu.json"
$cli tests/data/torch_transformer.onnx --backend ort-cuda --dim batch=4 --dim seq=16 --iterations 200 --parser table --json "$out/tt_cuda.json" | tail -12
if [ -n "$llama" ]; then
  $cli "$llama" --backend ort-cuda --dim seq=128 --iterations 100 --parser table --json "$out/llama_cuda.json" | tail -12
fi
python3 bench/bench_profile.py /tmp/r50.onnx --backend ort-cuda --dim batch=8 --iterations 100 --repeat 3 --copies \
  --out "$out/bench_profile_cuda.json"
python3 bench/bench_profile.py tests/data/torch_transformer.onnx --backend ort-cuda --dim batch=4 --dim seq=16 \
  --iterations 100 --repeat 3 --out "$out/bench_profile_cuda_tt.json"
