#!/usr/bin/env bash
# Calibration on a GPU machine: the FP32 statistics pass with ONNX Runtime CUDA against the CPU, same model,
# same data. Usage: bash bench/gpu_calib.sh OUT_DIR MODEL.onnx
set -uo pipefail
out=${1:?OUT_DIR}; model=${2:?MODEL}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 SPLITSCOPE_CACHE_DIR=$(mktemp -d)
for b in ort-cuda ort-cpu; do
  rm -rf "$SPLITSCOPE_CACHE_DIR"/calib
  python3 -m splitscope.engine.cli calibrate "$model" --backend $b --method entropy --samples 64 \
    --out "/tmp/q-$b.onnx" --json "$out/calib_$b.json" | head -3
done
