#!/usr/bin/env bash
# The GPU figures of BENCHMARKS.md in a few calls of a lent machine, after the wheels are installed under
# /root/pkgs (onnxruntime-gpu, cupti-python, nvidia-ml-py and the engine's own pure-Python dependencies) and the
# acceptance models copied under /root/site:
#   bash bench/gpu_session.sh accept1 OUT   # the acceptance table, first half of the models
#   bash bench/gpu_session.sh accept2 OUT   # the second half
#   bash bench/gpu_session.sh figures OUT   # time accounted (ResNet-50, BERT), steady decode, kernels, calibration
#   bash bench/gpu_session.sh calib64 OUT   # calibration at 64 samples, CUDA against the CPU (after figures)
#   bash bench/gpu_session.sh fp16 OUT      # the acceptance rows whose FP16 accuracy differed most by provider
set -uo pipefail
part=${1:?PART}; out=${2:?OUT_DIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH=/root/pkgs:$PWD SPLITSCOPE_CACHE_DIR=/root/cache
site=/root/site
acc() { python3 bench/bench_gpu_acceptance.py --site $site --iterations 100 --out "$out/$1" "${@:2}" 2>&1 | grep -v Warning; }
r50() {  # ResNet-50 (random weights) exported once to /root/models/r50.onnx
  mkdir -p /root/models
  [ -f /root/models/r50.onnx ] || python3 - /root/models/r50.onnx <<'PY' 2>&1 | tail -1
import sys, torch, torchvision
m = torchvision.models.resnet50(weights=None).eval()
torch.onnx.export(m, (torch.randn(8, 3, 224, 224),), sys.argv[1], dynamo=False, opset_version=17,
                  input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
print("exported resnet50")
PY
}
# Calibration of ResNet-50 at 64 samples on CUDA and on the CPU, interleaved three rounds: the first CUDA run with
# an empty kernel cache (it compiles the statistics kernels), the rest with the cache as the first left it. The
# statistics cache is emptied before every run: a run that found the last one's statistics would compute none.
calib64() {
  local cli="python3 -m splitscope.engine.cli" m=/root/models r b s
  r50
  python3 -m compileall -q engine profiler splitscope > /dev/null  # no bytecode written inside a timed run
  rm -rf /root/cache/kernels
  for r in 1 2 3; do
    for b in ort-cuda ort-cpu; do
      rm -rf /root/cache/calib
      s=$EPOCHREALTIME
      $cli calibrate $m/r50.onnx --data random --dim batch=1 --backend $b --method entropy --samples 64 \
        --out /root/q_$b.onnx --json "$1/calib64_$b.json" -q
      python3 -c "import sys, time; print('calibrate 64 round', sys.argv[3], sys.argv[1], round(time.time() - float(sys.argv[2]), 2), 's')" $b $s $r
    done
  done
}
case $part in
accept1) acc a1 --only yolov8-detector --only dbnet-text-detector --only svtr-text-recogniser \
  --only orientation-classifier --only silero-vad-if-bodies ;;
accept2) acc a2 --only picodet-layout-constant-weights --only ppocrv5-ctc-recogniser --only ppocrv5-text-detector \
  --only ppocrv5-direction-classifier --only magika-file-bytes ;;
figures)
  m=/root/models; mkdir -p $m
  [ -f $m/bert_base.onnx ] || python3 bench/make_models.py $m --nodes 1000 --bert > /dev/null
  [ -f $m/decoder_kv.onnx ] || python3 bench/export_kv.py $m/decoder_kv.onnx --layers 8 --hidden 512 --heads 8 \
    --kv-heads 4 --vocab 8192 2>&1 | tail -1
  r50
  cli="python3 -m splitscope.engine.cli"
  for k in 1 2 3; do
    $cli profile $m/r50.onnx --backend ort-cuda --dim batch=8 --iterations 200 --parser table -q --json "$out/r50_$k.json"
    $cli profile $m/bert_base.onnx --backend ort-cuda --iterations 200 --parser table -q --json "$out/bert_$k.json"
  done
  python3 bench/gpu_generate_steady.py $m/decoder_kv.onnx --out "$out" 2>&1 | tail -4
  python3 bench/gpu_kernel_device.py "$out" 2>&1 | tail -12
  calib64 "$out" ;;
calib64) calib64 "$out" ;;
fp16) acc f --only orientation-classifier --only svtr-text-recogniser --only yolov8-detector \
  --only ppocrv5-direction-classifier ;;
esac
