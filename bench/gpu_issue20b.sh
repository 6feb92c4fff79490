#!/usr/bin/env bash
# Issue 20's GPU follow-up on the H200 (after bench/gpu_issue20.sh's install): the calibration statistics pass on CUDA
# against the 16 CPU cores with the pass's parts in each JSON (stats_phases), at 64 samples and at 512 (a calibration
# set of the size TensorRT's guidance asks for); CUPTI's node times of ResNet-50 and ViT-B/16 (bench/gpu_cupti.py).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=/var/tmp/site:$PWD
out=${1:?OUT_DIR}
mkdir -p "$out" /var/tmp/m
[ -f /var/tmp/m/resnet50.onnx ] || python3 bench/export_llms.py /var/tmp/m --llama-layers --resnet50 > /dev/null 2>&1
for n in 64 512; do
  bash bench/gpu_calib.sh "$out/calib_r50_$n" /var/tmp/m/resnet50.onnx $n 2>&1 | tee -a "$out/calib.txt"
done
python3 - "$out" <<'PY' | tee "$out/phases.txt"
import glob, json, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/calib_r50_*/*.json")):
    d = json.load(open(f))
    print(f.split("/")[-2], f.split("/")[-1], d["stats_seconds"], d.get("stats_phases"))
PY
python3 bench/gpu_cupti.py "$out/cupti" 2>&1 | grep -v Warning | grep '^[rv]' | cut -c1-900
