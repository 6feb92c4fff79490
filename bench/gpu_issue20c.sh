#!/usr/bin/env bash
# Issue 20's last GPU check on the H200 (after bench/gpu_issue20.sh's install), with the samples made ahead on a
# thread: one calibration pass against a plain pass on the 16 CPU cores (bench/calib_threads.py, four folding
# threads, twice), and ResNet-18's statistics pass on CUDA against the CPU (bench/gpu_calib.sh, 64 samples).
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=/var/tmp/site:$PWD
out=${1:?OUT_DIR}
mkdir -p "$out" /var/tmp/m
[ -f /var/tmp/m/resnet18.onnx ] || python3 bench/export_llms.py /var/tmp/m --llama-layers --resnet50 --resnet18 > /dev/null 2>&1
python3 bench/calib_threads.py /var/tmp/m/resnet50.onnx 4 4 2>&1 | tail -3 | tee "$out/calib_threads.txt"
bash bench/gpu_calib.sh "$out/calib_r18_64" /var/tmp/m/resnet18.onnx 64 2>&1 | tee "$out/calib_r18.txt"
