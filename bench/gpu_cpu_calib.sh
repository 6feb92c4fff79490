#!/usr/bin/env bash
# One calibration pass against a plain pass on the device machine's 16 CPU cores (no GPU needed), with where the pass
# went (stats_phases): bench/calib_threads.py at four folding threads, then one CLI calibration's JSON.
set -uo pipefail
export PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD SPLITSCOPE_CACHE_DIR=$(mktemp -d)
out=${1:?OUT_DIR}
mkdir -p "$out" /var/tmp/m
[ -f /var/tmp/m/resnet50.onnx ] || python3 bench/export_llms.py /var/tmp/m --llama-layers --resnet50 > /dev/null 2>&1
python3 bench/calib_threads.py /var/tmp/m/resnet50.onnx 4 4 2>&1 | tail -3 | tee "$out/calib_threads.txt"
python3 -m splitscope.engine.cli calibrate /var/tmp/m/resnet50.onnx --backend ort-cpu --method entropy --samples 64 \
  --out /tmp/q.onnx --json "$out/calib_cpu.json" > /dev/null 2>&1
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['stats_seconds'], d['stats_phases'])" "$out/calib_cpu.json"
