# ruff: noqa: E501
"""The kernel workbench on a GPU (BENCHMARKS.md, "Custom kernels on the H200"): generated NVRTC kernels for an
elementwise op, a normalisation and RoiAlign on real tensors, each checked against ONNX Runtime CPU and timed
against ONNX Runtime CUDA and the bound; then a hand-fused GELU + LayerNorm kernel, a fast and a naive version,
against the runtime default on a transformer export (the verdicts).

Usage, on a machine with an NVIDIA GPU, cuda-python, onnxruntime-gpu and PyTorch:
    python bench/gpu_kernels.py OUT_DIR YOLOV8.onnx PHOTOS_DIR
YOLOV8.onnx: an Ultralytics YOLOv8 export with dynamic height/width (nudenet's 320n.onnx); PHOTOS_DIR: photos.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import onnx
from kernel_models import yolo_with_roialign
from splitscope.engine.jobs import run_to_end
from splitscope.engine.kernel.job import kernel_job

OUT, YOLO, PHOTOS = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
OUT.mkdir(parents=True, exist_ok=True)
SIZE = {"height": 640, "width": 640}
results: dict[str, dict] = {}


def run(tag: str, model: Path, nodes: list[str], dims: dict, **kw) -> dict:
    doc = run_to_end(kernel_job(str(model), nodes=nodes, dims=dims, parser="table", ask_parser=False, **kw))
    k = doc["kernel"] or {}
    ex = doc["extract"]
    row = {
        "nodes": doc["nodes"],
        "shapes": [i["shape"] for i in ex["inputs"]],
        "source": doc["source"]["origin"],
        **{
            x: k.get(x)
            for x in ("compiled", "error", "max_abs_err", "max_ulp", "beyond", "numerics_ok", "ms", "host_ms")
        },
        **{x: k.get(x) for x in ("spread_ms", "default_ms", "default_how", "sol_ms", "sol_how", "verdict", "gpu")},
    }
    results[tag] = row
    (OUT / f"{tag}.json").write_text(json.dumps(doc, indent=1))
    print(tag, json.dumps(row)[:900], flush=True)
    return doc


# 1. YOLOv8 at 640 on a real photo: an activation (elementwise).
photo = dict(data=PHOTOS, recipe="preset=letterbox")
run("yolo_sigmoid", YOLO, ["/model.2/cv1/act/Sigmoid"], SIZE, **photo)
run("yolo_mul", YOLO, ["/model.2/cv1/act/Mul"], SIZE, **photo)

# 2. RoiAlign on YOLOv8's stride-8 features of the same photo (256 boxes on a grid), appended to the model.
two_stage = yolo_with_roialign(YOLO, OUT.parent / "yolo_roialign.onnx")
run("roialign", two_stage, ["roi_align"], SIZE, **photo)

# 3. A transformer export (PyTorch's exporter): LayerNorm alone, then GELU + LayerNorm fused by hand.
import torch  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.mha.set_fastpath_enabled(False)  # the exporter cannot write the fused encoder layer


class MLM(torch.nn.Module):
    def __init__(self, d: int = 768) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(1000, d)
        layer = torch.nn.TransformerEncoderLayer(d, 12, 4 * d, activation="gelu", batch_first=True, dropout=0.0)
        self.encoder = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.dense, self.act, self.norm = torch.nn.Linear(d, d), torch.nn.GELU(), torch.nn.LayerNorm(d)
        self.decoder = torch.nn.Linear(d, 1000)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.norm(self.act(self.dense(self.encoder(self.embed(ids))))))


torch.manual_seed(0)
tr = OUT.parent / "mlm.onnx"
with torch.no_grad():
    torch.onnx.export(
        MLM().eval(),
        (torch.randint(0, 1000, (8, 512)),),
        str(tr),
        dynamo=False,
        opset_version=17,
        input_names=["ids"],
        output_names=["logits"],
    )
g = onnx.load(str(tr)).graph
ln = next(n for n in g.node if n.op_type == "LayerNormalization" and n.name.startswith("/norm/"))
run("layernorm", tr, [ln.name], {})
# The GELU of the head (PyTorch writes it as Div, Erf, Add, Mul, Mul) and the LayerNorm after it.
fused = [n.name for n in g.node if n.name.startswith("/act/") and n.op_type != "Constant"] + [ln.name]
print("fused nodes:", fused, flush=True)
from splitscope.engine.kernel.extract import extract  # noqa: E402
from splitscope.engine.split.analyze import analyze_model  # noqa: E402

gm = analyze_model(str(tr), parser="table")
ex = extract(gm, onnx.load(str(tr)), sorted(n.index for n in gm.nodes if n.label in fused))
sig = [(t.name, t.shape) for t in ex.inputs]
print("signature:", sig, flush=True)
xi = next(i for i, (_, s) in enumerate(sig) if s and len(s) == 3)
wi = [i for i, (n, s) in enumerate(sig) if s == (768,)]
params = ", ".join(f"const float* __restrict__ in{i}" for i in range(len(sig))) + ", float* __restrict__ out0"
FAST = f"""// launch: grid=(ROWS) block=256
// GELU then LayerNorm, one block per row of 768, the row held in registers (3 values a thread), one pass of
// warp-shuffle sums for the mean and one for the variance.
__device__ __forceinline__ float wsum(float v) {{ for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o); return v; }}
__device__ float bsum(float v) {{
    __shared__ float s[8]; v = wsum(v); if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = v; __syncthreads();
    v = (threadIdx.x & 31) < 8 ? s[threadIdx.x & 31] : 0.f; v = wsum(v); __syncthreads(); return v; }}
extern "C" __global__ void kernel({params}) {{
    const long long row = blockIdx.x; const float* x = in{xi} + row * COLS;
    float g[3]; float s = 0.f;
    for (int k = 0; k < 3; ++k) {{ float v = x[threadIdx.x + 256 * k]; g[k] = 0.5f * v * (1.f + erff(v * 0.70710678f)); s += g[k]; }}
    const float mean = bsum(s) / COLS; float q = 0.f;
    for (int k = 0; k < 3; ++k) {{ float d = g[k] - mean; q += d * d; }}
    const float inv = rsqrtf(bsum(q) / COLS + 1e-5f);
    for (int k = 0; k < 3; ++k) {{ int c = threadIdx.x + 256 * k; out0[row * COLS + c] = (g[k] - mean) * inv * in{wi[0]}[c] + in{wi[1]}[c]; }}
}}
"""
NAIVE = f"""// launch: grid=CEIL_DIV(ROWS, 64) block=64
// GELU then LayerNorm the obvious way: one thread per row, three passes over the row in global memory.
extern "C" __global__ void kernel({params}) {{
    const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; if (row >= ROWS) return;
    const float* x = in{xi} + row * COLS; float* y = out0 + row * COLS; float s = 0.f;
    for (int c = 0; c < COLS; ++c) {{ float v = x[c]; y[c] = 0.5f * v * (1.f + erff(v * 0.70710678f)); s += y[c]; }}
    const float mean = s / COLS; float q = 0.f;
    for (int c = 0; c < COLS; ++c) {{ float d = y[c] - mean; q += d * d; }}
    const float inv = rsqrtf(q / COLS + 1e-5f);
    for (int c = 0; c < COLS; ++c) y[c] = (y[c] - mean) * inv * in{wi[0]}[c] + in{wi[1]}[c];
}}
"""
for tag, src in (("fused_fast", FAST), ("fused_naive", NAIVE)):
    path = OUT.parent / f"{tag}.cu"
    path.write_text(src)
    run(tag, tr, fused, {}, source=str(path))
# The same fusion written in Python: a Triton kernel on PyTorch tensors, and plain CuPy array code.
TRITON = """import torch
import triton
import triton.language as tl

ARRAYS = "torch"


@triton.jit
def _gelu_ln(X, W, B, Y, N: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(X + row * N + cols, mask=mask, other=0.0)
    g = tl.where(mask, 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476)), 0.0)
    mean = tl.sum(g, 0) / N
    d = tl.where(mask, g - mean, 0.0)
    inv = tl.rsqrt(tl.sum(d * d, 0) / N + 1e-5)
    tl.store(Y + row * N + cols, d * inv * tl.load(W + cols, mask=mask) + tl.load(B + cols, mask=mask), mask=mask)


def kernel(x, *rest):
    w, b = rest[-2], rest[-1]
    y = torch.empty_like(x)
    _gelu_ln[(x.numel() // x.shape[-1],)](x, w, b, y, x.shape[-1], BLOCK=triton.next_power_of_2(x.shape[-1]))
    return y
"""
CUPY = """import cupy as cp
from cupyx.scipy.special import erf


def kernel(x, *rest):
    w, b = rest[-2], rest[-1]
    g = 0.5 * x * (1.0 + erf(x * 0.7071067811865476))
    mean = g.mean(-1, keepdims=True)
    var = ((g - mean) ** 2).mean(-1, keepdims=True)
    return (g - mean) / cp.sqrt(var + 1e-5) * w + b
"""
for tag, src in (("fused_triton", TRITON), ("fused_cupy", CUPY)):
    path = OUT.parent / f"{tag}.py"
    path.write_text(src)
    run(tag, tr, fused, {}, source=str(path))
(OUT / "kernels.json").write_text(json.dumps(results, indent=1))
print("wrote", OUT / "kernels.json")
