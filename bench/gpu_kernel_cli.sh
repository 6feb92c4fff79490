#!/usr/bin/env bash
# The kernel workbench's CLI on a GPU machine, end to end through its child process: a generated kernel on
# YOLOv8's first SiLU at 640 on a photo, the exported plugin project's own test run there, and an edited source
# with a typo (the NVRTC error and its line). Usage: bash bench/gpu_kernel_cli.sh OUT_DIR YOLOV8.onnx PHOTOS_DIR
set -uo pipefail
out=${1:?OUT_DIR}; yolo=${2:?YOLOV8}; photos=${3:?PHOTOS}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
k="python3 -m splitscope.engine.cli kernel $yolo /model.2/cv1/act/Sigmoid --dim height=640 --dim width=640 --data $photos --recipe preset=letterbox --parser table"
$k --out /tmp/sigmoid_plugin --json "$out/sigmoid.json"; echo "rc=$?"
(cd /tmp/sigmoid_plugin && python3 test_plugin.py); echo "project test rc=$?"
sed 's/ld(in0\[off0\])/ld(in0[offset0])/' /tmp/sigmoid_plugin/kernel.cu > /tmp/typo.cu
$k --source /tmp/typo.cu --no-compare-default --json "$out/typo.json"; echo "rc=$? (1: the kernel does not compile)"
