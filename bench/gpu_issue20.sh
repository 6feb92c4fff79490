#!/usr/bin/env bash
# Issue 20's GPU measurements on the H200 (BENCHMARKS.md, "Speed and sight, fifth part"), after onnxruntime-gpu,
# cupti-python (with pyelftools) and platformdirs are installed into /var/tmp/site:
#   the device statistics against the host's (the GPU test); calibration's statistics pass on CUDA against the 16 CPU
#   cores, cold CLI runs interleaved (bench/gpu_calib.sh); CUPTI's node times, the CUDA-graph latency and the
#   fused-node names on ResNet-50 and ViT-B/16 (bench/gpu_cupti.py); one calibration pass against a plain pass on
#   the CPU (bench/calib_threads.py at 4 and 6 folding threads).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=/var/tmp/site:$PWD
out=${1:?OUT_DIR}
mkdir -p "$out" /var/tmp/m
python3 -m pytest -c /dev/null -q -p no:cacheprovider tests/engine/test_devstats.py 2>&1 | tail -4 | tee "$out/devstats_test.txt"
[ -f /var/tmp/m/resnet50.onnx ] || python3 bench/export_llms.py /var/tmp/m --llama-layers --resnet50 --resnet18 > /dev/null 2>&1
for m in resnet50 resnet18; do
  bash bench/gpu_calib.sh "$out/calib_$m" /var/tmp/m/$m.onnx 64 2>&1 | tee -a "$out/calib.txt"
done
python3 bench/gpu_cupti.py "$out/cupti" 2>&1 | grep -v Warning | tail -8
python3 bench/calib_threads.py /var/tmp/m/resnet50.onnx 4 6 4 6 2>&1 | tail -5 | tee "$out/calib_threads.txt"
python3 -m splitscope.engine.cli profile /tmp/resnet50.onnx --backend ort-cuda --parser table --iterations 100 \
  --json "$out/r50_b8_cuda.json" 2>&1 | tail -6
python3 -m splitscope.engine.cli profile /tmp/vit_b_16.onnx --backend ort-cuda --parser table --iterations 100 \
  --json "$out/vit_b8_cuda.json" 2>&1 | tail -3
