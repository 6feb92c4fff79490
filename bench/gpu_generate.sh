#!/usr/bin/env bash
# A generation profile on a GPU machine (BENCHMARKS.md): a Llama-style decoder with a key/value cache (8 layers,
# hidden 512, 8 query and 4 key/value heads, vocabulary 8192, random weights) exported by PyTorch's exporter, a
# prefill of 512 tokens then 64 decode steps on ONNX Runtime CUDA (the cache bound on the device) and on the CPU.
# Usage: bash bench/gpu_generate.sh OUT_DIR   (PyTorch and onnxruntime-gpu importable)
set -uo pipefail
out=${1:?OUT_DIR}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python3 bench/export_kv.py /tmp/decoder_kv.onnx --layers 8 --hidden 512 --heads 8 --kv-heads 4 --vocab 8192 2>&1 | tail -1
for b in ort-cuda ort-cpu; do
  python3 -m splitscope.engine.cli profile /tmp/decoder_kv.onnx --backend $b --generate 64 --prompt-len 512 \
    --json "$out/generate_$b.json"
done
