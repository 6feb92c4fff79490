#!/usr/bin/env bash
# Calibration on a GPU machine: the FP32 statistics pass with ONNX Runtime CUDA (statistics folded on the GPU)
# against the CPU (folded by the host), same model, same data, interleaved, each run a cold process. The first
# CUDA run compiles the statistics kernels into the cache; the later ones load them.
# Usage: bash bench/gpu_calib.sh OUT_DIR MODEL.onnx [SAMPLES]
set -uo pipefail
out=${1:?OUT_DIR}; model=${2:?MODEL}; samples=${3:-64}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 SPLITSCOPE_CACHE_DIR=$(mktemp -d)
k=0
for b in ort-cuda ort-cpu ort-cuda ort-cpu ort-cuda; do
  k=$((k + 1))
  rm -rf "$SPLITSCOPE_CACHE_DIR"/calib  # the statistics cache, not the compiled kernels
  python3 -m splitscope.engine.cli calibrate "$model" --backend $b --method entropy --samples "$samples" \
    --out "/tmp/q-$b.onnx" --json "$out/calib_${k}_$b.json" > /dev/null 2>&1
  python3 - "$out/calib_${k}_$b.json" "$b" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
acc = next(iter((d.get("accuracy") or {}).values()), {})
print(f"{sys.argv[2]:9s} run {d['seconds']:7.2f} s  statistics {d['stats_seconds']:6.2f} s  folded on "
      f"{d.get('stats_folded_on')}  tensors {d['tensors']}  SNR {acc.get('snr_db')}")
PY
done
