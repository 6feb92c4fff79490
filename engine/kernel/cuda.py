"""A CUDA C++ starting kernel for an op, for its real dtypes and shapes, following the launch convention of
:mod:`splitscope.engine.runtime.nvrtc` (inputs then outputs as pointers; sizes as macros; a ``// launch:`` line).

Kinds with a working kernel: elementwise ops and activations (broadcasting included), reductions and
normalisations over the last axis (LayerNormalization, Softmax, LogSoftmax, ReduceSum/Mean/Max/Min/L2), Gather,
and RoiAlign. Any other op gets the signature with its sizes and an empty body to fill in (``kind`` says which).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from splitscope.engine.kernel.extract import Extract

C_TYPES = {
    "float32": "float",
    "float16": "__half",
    "float64": "double",
    "int64": "long long",
    "int32": "int",
    "int8": "signed char",
    "uint8": "unsigned char",
    "bool": "bool",
}

UNARY = {
    "Relu": "fmaxf(x, 0.0f)",
    "Sigmoid": "1.0f / (1.0f + expf(-x))",
    "Tanh": "tanhf(x)",
    "Exp": "expf(x)",
    "Log": "logf(x)",
    "Sqrt": "sqrtf(x)",
    "Abs": "fabsf(x)",
    "Neg": "-x",
    "Erf": "erff(x)",
    "Sin": "sinf(x)",
    "Cos": "cosf(x)",
    "Reciprocal": "1.0f / x",
    "Floor": "floorf(x)",
    "Ceil": "ceilf(x)",
    "Round": "rintf(x)",
    "Sign": "(float)((x > 0.0f) - (x < 0.0f))",
    "Identity": "x",
    "Cast": "x",
    "Softplus": "(x > 20.0f ? x : log1pf(expf(x)))",
    "Gelu": "0.5f * x * (1.0f + erff(x * 0.70710678118654752f))",
    "HardSwish": "x * fminf(fmaxf(x / 6.0f + 0.5f, 0.0f), 1.0f)",
    "Mish": "x * tanhf(x > 20.0f ? x : log1pf(expf(x)))",
    "LeakyRelu": "(x >= 0.0f ? x : ATTR_ALPHA * x)",
    "Elu": "(x >= 0.0f ? x : ATTR_ALPHA * (expf(x) - 1.0f))",
    "HardSigmoid": "fminf(fmaxf(ATTR_ALPHA * x + ATTR_BETA, 0.0f), 1.0f)",
    "Selu": "(x > 0.0f ? ATTR_GAMMA * x : ATTR_GAMMA * (ATTR_ALPHA * expf(x) - ATTR_ALPHA))",
    "ThresholdedRelu": "(x > ATTR_ALPHA ? x : 0.0f)",
}
DEFAULT_ATTRS = {
    "LeakyRelu": {"alpha": 0.01},
    "Elu": {"alpha": 1.0},
    "HardSigmoid": {"alpha": 0.2, "beta": 0.5},
    "Selu": {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875},
    "ThresholdedRelu": {"alpha": 1.0},
}
BINARY = {
    "Add": "x + y",
    "Sub": "x - y",
    "Mul": "x * y",
    "Div": "x / y",
    "Pow": "powf(x, y)",
    "PRelu": "(x < 0.0f ? y * x : x)",
}
VARIADIC = {"Max": "fmaxf({a}, {b})", "Min": "fminf({a}, {b})", "Sum": "{a} + {b}", "Mean": "{a} + {b}"}
INTEGER = {  # integer outputs, computed in their own type (a float would lose ids above 2^24)
    "Identity": "a",
    "Cast": "a",
    "Neg": "-a",
    "Abs": "(a < 0 ? -a : a)",
    "Add": "a + b",
    "Sub": "a - b",
    "Mul": "a * b",
    "Div": "a / b",
    "Max": "(a > b ? a : b)",
    "Min": "(a < b ? a : b)",
}
ROWWISE = {
    "LayerNormalization",
    "Softmax",
    "LogSoftmax",
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceL2",
}


@dataclass
class Generated:
    """A starting kernel: its source, the kind it was made for, and whether its body is written (not a stub)."""

    source: str
    kind: str
    complete: bool
    note: str = ""


def _ctype(dtype: str) -> str:
    return C_TYPES.get(dtype, "float")


HALF = (
    "#include <cuda_fp16.h>\n"
    "__device__ __forceinline__ float ld(__half v) { return __half2float(v); }\n"
    "template <> __device__ __forceinline__ __half st<__half>(float v) { return __float2half(v); }\n"
)


def _header(ex: Extract, kind: str) -> str:
    sig = ", ".join(f"{t.name}: {t.dtype}{list(t.shape) if t.shape else ''}" for t in ex.inputs)
    outs = ", ".join(f"{t.name}: {t.dtype}{list(t.shape) if t.shape else ''}" for t in ex.outputs)
    return (
        f"// {ex.op} ({', '.join(ex.labels[:3])}{' ...' if len(ex.labels) > 3 else ''}): a starting kernel ({kind}).\n"
        f"// inputs:  {sig}\n// outputs: {outs}\n"
        "// Sizes are macros (N, ROWS, COLS, IN0_D0, OUT0_N, ATTR_...); see the launch convention.\n"
        "__device__ __forceinline__ float ld(float v) { return v; }\n"
        "__device__ __forceinline__ float ld(double v) { return (float)v; }\n"
        "__device__ __forceinline__ float ld(long long v) { return (float)v; }\n"
        "__device__ __forceinline__ float ld(int v) { return (float)v; }\n"
        "__device__ __forceinline__ float ld(bool v) { return v ? 1.0f : 0.0f; }\n"
        "template <typename T> __device__ __forceinline__ T st(float v) { return (T)v; }\n"
        "#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n"
        + (HALF if any(t.dtype == "float16" for t in (*ex.inputs, *ex.outputs)) else "")
    )


def _params(ex: Extract) -> str:
    ins = [f"const {_ctype(t.dtype)}* __restrict__ in{i}" for i, t in enumerate(ex.inputs)]
    outs = [f"{_ctype(t.dtype)}* __restrict__ out{i}" for i, t in enumerate(ex.outputs)]
    return ", ".join(ins + outs)


def _broadcast_offset(i: int, in_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> str:
    """C code computing ``off{i}``: the offset in input ``i`` of output element ``idx`` (numpy broadcasting)."""
    rank = len(out_shape)
    shape = (1,) * (rank - len(in_shape)) + tuple(in_shape)
    if shape == tuple(out_shape):
        return f"    const long long off{i} = idx;\n"
    if math.prod(shape) == 1:
        return f"    const long long off{i} = 0;\n"
    strides, s = [0] * rank, 1
    for k in range(rank - 1, -1, -1):
        strides[k] = s if shape[k] != 1 else 0
        s *= shape[k]
    lines = [f"    long long off{i} = 0, r{i} = idx;\n"]
    for k in range(rank - 1, -1, -1):
        if strides[k]:
            lines.append(f"    off{i} += (r{i} % {out_shape[k]}LL) * {strides[k]}LL;\n")
        lines.append(f"    r{i} /= {out_shape[k]}LL;\n")
    return "".join(lines)


def _elementwise(ex: Extract) -> str | None:
    """One thread per output element; each operand read at its broadcast offset. None: not generated."""
    op, out = ex.op, ex.outputs[0]
    assert out.shape is not None
    ops = ex.operands or list(range(len(ex.inputs)))
    used = sorted({k for k in ops if k >= 0})
    body = "".join(_broadcast_offset(i, ex.inputs[i].shape or (), out.shape) for i in used)

    def val(pos: int, default: str = "0.0f", raw: bool = False) -> str:
        k = ops[pos] if pos < len(ops) else -1
        return default if k < 0 else (f"in{k}[off{k}]" if raw else f"ld(in{k}[off{k}])")

    T = _ctype(out.dtype)
    if out.dtype not in ("float32", "float16"):
        if op not in INTEGER or len(ops) > 2:
            return None
        expr = INTEGER[op].replace("a", f"({T}){val(0, raw=True)}", 1)
        if "b" in INTEGER[op]:
            expr = expr.replace("b", f"({T}){val(1, raw=True)}")
        return _wrap(ex, body, f"    out0[idx] = {expr};\n")
    if op in UNARY:
        expr = UNARY[op]
        body += f"    const float x = {val(0)};\n"
    elif op == "Where":
        expr = "c ? x : y"
        body += f"    const bool c = {val(0, 'false', raw=True)};\n"
        body += f"    const float x = {val(1)}; const float y = {val(2)};\n"
    elif op == "Clip":  # opset 11+: min and max as inputs (either left out); before: attributes
        lo = val(1, "-INFINITY") if ex.opset >= 11 else ("ATTR_MIN" if "min" in ex.attributes else "-INFINITY")
        hi = val(2, "INFINITY") if ex.opset >= 11 else ("ATTR_MAX" if "max" in ex.attributes else "INFINITY")
        expr = "fminf(fmaxf(x, lo), hi)"
        body += f"    const float x = {val(0)};\n    const float lo = {lo};\n    const float hi = {hi};\n"
    elif op in VARIADIC:
        acc = val(0)
        for pos in range(1, len(ops)):
            acc = VARIADIC[op].format(a=acc, b=val(pos))
        expr = f"({acc}) / {len(ops)}.0f" if op == "Mean" else acc
    else:
        expr = BINARY[op]
        body += f"    const float x = {val(0)}; const float y = {val(1)};\n"
    return _wrap(ex, body, f"    out0[idx] = st<{T}>({expr});\n")


def _wrap(ex: Extract, body: str, store: str) -> str:
    return (
        "// launch: grid=CEIL_DIV(N, 256) block=256\n"
        f'extern "C" __global__ void kernel({_params(ex)}) {{\n'
        "    const long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (idx >= N) return;\n"
        f"{body}{store}"
        "}\n"
    )


_BLOCK_REDUCE = """
__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
    return v;
}
__device__ __forceinline__ float warp_min(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fminf(v, __shfl_xor_sync(0xffffffff, v, o));
    return v;
}
// The whole block's sum / max / min, returned to every thread (each warp sums the warps' partials);
// blockDim.x a multiple of 32, at most 1024.
#define BLOCK_REDUCE(NAME, WARP, INIT)                                                  \\
    __device__ __forceinline__ float NAME(float v) {                                    \\
        __shared__ float part[32];                                                      \\
        v = WARP(v);                                                                    \\
        if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;                        \\
        __syncthreads();                                                                \\
        v = (threadIdx.x & 31) < (blockDim.x >> 5) ? part[threadIdx.x & 31] : INIT;     \\
        v = WARP(v);                                                                    \\
        __syncthreads();                                                                \\
        return v;                                                                       \\
    }
BLOCK_REDUCE(block_sum, warp_sum, 0.0f)
BLOCK_REDUCE(block_max, warp_max, -INFINITY)
BLOCK_REDUCE(block_min, warp_min, INFINITY)
"""


def _rowwise(ex: Extract, inputs: dict[str, np.ndarray]) -> str | None:
    """One block per row of the last axis; None when the op reduces another axis."""
    op, x = ex.op, ex.inputs[0]
    assert x.shape is not None
    rank, cols = len(x.shape), x.shape[-1] if x.shape else 1
    axis = ex.attributes.get("axis", -1)
    if op in ("Softmax", "LogSoftmax") and ex.opset < 13:  # before 13: the input as 2-D at axis (default 1)
        axis = int(ex.attributes.get("axis", 1)) % max(rank, 1)
        cols = math.prod(x.shape[axis:])
        axis = rank - 1  # a row of the flattened view is contiguous: the last-axis kernel serves
    if op.startswith("Reduce"):
        axes = ex.attributes.get("axes")
        if axes is None and len(ex.inputs) > 1 and ex.inputs[1].name in inputs:
            axes = [int(a) for a in np.asarray(inputs[ex.inputs[1].name]).ravel()]
        if axes is None or [a % rank for a in axes] != [rank - 1]:
            return None
    elif axis % max(rank, 1) != rank - 1:
        return None
    head = f"// launch: grid=({math.prod(x.shape) // max(cols, 1)}) block=256\n{_BLOCK_REDUCE}"
    sig = f'extern "C" __global__ void kernel({_params(ex)}) {{\n'
    pre = (
        f"    const long long row = blockIdx.x;\n    const int cols = {cols};\n    const auto* xr = in0 + row * cols;\n"
    )
    T = _ctype(ex.outputs[0].dtype)
    if op == "LayerNormalization":
        eps = float(ex.attributes.get("epsilon", 1e-5))
        scale = "ld(in1[c])" if len(ex.inputs) > 1 else "1.0f"
        bias = "ld(in2[c])" if len(ex.inputs) > 2 else "0.0f"
        return (
            head + sig + pre + "    float s = 0.0f;\n"
            "    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += ld(xr[c]);\n"
            "    const float mean = block_sum(s) / cols;\n"
            "    float v = 0.0f;\n"
            "    for (int c = threadIdx.x; c < cols; c += blockDim.x) { float d = ld(xr[c]) - mean; v += d * d; }\n"
            f"    const float inv = rsqrtf(block_sum(v) / cols + {eps!r}f);\n"
            "    for (int c = threadIdx.x; c < cols; c += blockDim.x)\n"
            f"        out0[row * cols + c] = st<{T}>((ld(xr[c]) - mean) * inv * {scale} + {bias});\n"
            "}\n"
        )
    if op in ("Softmax", "LogSoftmax"):
        final = "(ld(xr[c]) - m) - logf(s)" if op == "LogSoftmax" else "expf(ld(xr[c]) - m) / s"
        return (
            head + sig + pre + "    float m = -INFINITY;\n"
            "    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, ld(xr[c]));\n"
            "    m = block_max(m);\n    float s = 0.0f;\n"
            "    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(ld(xr[c]) - m);\n"
            "    s = block_sum(s);\n"
            f"    for (int c = threadIdx.x; c < cols; c += blockDim.x) out0[row * cols + c] = st<{T}>({final});\n"
            "}\n"
        )
    init, acc, reduce, fin = {
        "ReduceSum": ("0.0f", "a += v", "block_sum", "a"),
        "ReduceMean": ("0.0f", "a += v", "block_sum", "a / cols"),
        "ReduceMax": ("-INFINITY", "a = fmaxf(a, v)", "block_max", "a"),
        "ReduceMin": ("INFINITY", "a = fminf(a, v)", "block_min", "a"),
        "ReduceL2": ("0.0f", "a += v * v", "block_sum", "sqrtf(a)"),
    }[op]
    return (
        head + sig + pre + f"    float a = {init};\n"
        f"    for (int c = threadIdx.x; c < cols; c += blockDim.x) {{ const float v = ld(xr[c]); {acc}; }}\n"
        f"    a = {reduce}(a);\n"
        f"    if (threadIdx.x == 0) out0[row] = st<{T}>({fin});\n"
        "}\n"
    )


def _gather(ex: Extract) -> str:
    data, idx = ex.inputs[0], ex.inputs[1]
    assert data.shape is not None and idx.shape is not None
    axis = int(ex.attributes.get("axis", 0)) % len(data.shape)
    inner = math.prod(data.shape[axis + 1 :])
    n_idx = max(math.prod(idx.shape), 1)
    return (
        "// launch: grid=CEIL_DIV(N, 256) block=256\n"
        f'extern "C" __global__ void kernel({_params(ex)}) {{\n'
        "    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i >= N) return;\n"
        f"    const long long inner = i % {inner}LL, j = (i / {inner}LL) % {n_idx}LL;\n"
        f"    const long long outer = i / ({inner}LL * {n_idx}LL);\n"
        "    long long k = (long long)in1[j];\n"
        f"    if (k < 0) k += {data.shape[axis]}LL;\n"
        f"    if (k < 0 || k >= {data.shape[axis]}LL) {{ out0[i] = 0; return; }}  // ORT refuses it; no stray read\n"
        f"    out0[i] = in0[(outer * {data.shape[axis]}LL + k) * {inner}LL + inner];\n"
        "}\n"
    )


def _roialign(ex: Extract) -> str:
    """ONNX RoiAlign (avg and max modes, half_pixel and output_half_pixel), one thread per output element, the
    sampling grid and the bilinear weights as ONNX Runtime computes them."""
    x, out = ex.inputs[0], ex.outputs[0]
    assert x.shape is not None and out.shape is not None
    _, c, h, w = x.shape
    ph, pw = out.shape[2], out.shape[3]
    a = ex.attributes
    mode = a.get("mode", b"avg")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    ctm = a.get("coordinate_transformation_mode", b"half_pixel" if ex.opset >= 16 else b"output_half_pixel")
    ctm = ctm.decode() if isinstance(ctm, bytes) else str(ctm)
    half = ctm == "half_pixel"
    ratio = int(a.get("sampling_ratio", 0))
    scale = float(a.get("spatial_scale", 1.0))
    T = _ctype(out.dtype)
    acc = (
        "acc = fmaxf(acc, fmaxf(fmaxf(w1 * v1, w2 * v2), fmaxf(w3 * v3, w4 * v4)));"
        if mode == "max"
        else ("acc += w1 * v1 + w2 * v2 + w3 * v3 + w4 * v4;")
    )
    final = "(gh * gw > 0 ? acc : 0.0f)" if mode == "max" else "acc / (float)max(gh * gw, 1)"  # as ORT
    grid_h = ratio if ratio > 0 else f"(int)ceilf(rh / {ph})"
    grid_w = ratio if ratio > 0 else f"(int)ceilf(rw / {pw})"
    return f"""// launch: grid=CEIL_DIV(N, 256) block=256
// RoiAlign mode={mode} coordinate_transformation_mode={ctm} sampling_ratio={ratio} spatial_scale={scale!r}
extern "C" __global__ void kernel({_params(ex)}) {{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N) return;
    const int pw_ = i % {pw}, ph_ = (i / {pw}) % {ph}, ch = (i / ({pw} * {ph})) % {c};
    const long long r = i / ({pw}LL * {ph} * {c});
    const float off = {"0.5f" if half else "0.0f"};
    const float x0 = ld(in1[r * 4 + 0]) * {scale!r}f - off, y0 = ld(in1[r * 4 + 1]) * {scale!r}f - off;
    const float x1 = ld(in1[r * 4 + 2]) * {scale!r}f - off, y1 = ld(in1[r * 4 + 3]) * {scale!r}f - off;
    float rw = x1 - x0, rh = y1 - y0;
    {"" if half else "rw = fmaxf(rw, 1.0f); rh = fmaxf(rh, 1.0f);"}
    const float bh = rh / {ph}, bw = rw / {pw};
    const int gh = {grid_h}, gw = {grid_w};
    const long long b = (long long)in2[r];
    const auto* img = in0 + (b * {c} + ch) * {h * w}LL;
    float acc = {"-INFINITY" if mode == "max" else "0.0f"};
    for (int iy = 0; iy < gh; ++iy) {{
        float y = y0 + ph_ * bh + (iy + 0.5f) * bh / gh;
        for (int ix = 0; ix < gw; ++ix) {{
            float x = x0 + pw_ * bw + (ix + 0.5f) * bw / gw;
            float w1 = 0.f, w2 = 0.f, w3 = 0.f, w4 = 0.f, v1 = 0.f, v2 = 0.f, v3 = 0.f, v4 = 0.f;
            if (!(y < -1.0f || y > {h} || x < -1.0f || x > {w})) {{
                float yy = fmaxf(y, 0.0f), xx = fmaxf(x, 0.0f);
                int yl = (int)yy, xl = (int)xx, yh, xh;
                if (yl >= {h - 1}) {{ yh = yl = {h - 1}; yy = (float)yl; }} else yh = yl + 1;
                if (xl >= {w - 1}) {{ xh = xl = {w - 1}; xx = (float)xl; }} else xh = xl + 1;
                const float ly = yy - yl, lx = xx - xl, hy = 1.0f - ly, hx = 1.0f - lx;
                w1 = hy * hx; w2 = hy * lx; w3 = ly * hx; w4 = ly * lx;
                v1 = ld(img[yl * {w} + xl]); v2 = ld(img[yl * {w} + xh]);
                v3 = ld(img[yh * {w} + xl]); v4 = ld(img[yh * {w} + xh]);
            }}
            {acc}
        }}
    }}
    out0[i] = st<{T}>({final});
}}
"""


def _nms(ex: Extract) -> str | None:
    """ONNX NonMaxSuppression as ONNX Runtime computes it, in one block: for each batch and class, the best box
    left (score above the threshold; ties: the lower index) is selected, written as [batch, class, box] in
    that order, and the boxes it overlaps by more than the IoU threshold are suppressed, until the class's quota.
    The output's length is the reference's (it depends on the data)."""
    ops = ex.operands or list(range(len(ex.inputs)))
    boxes, scores = ex.inputs[ops[0]], ex.inputs[ops[1]]
    if boxes.shape is None or scores.shape is None or len(ex.outputs) != 1:
        return None
    b, c, n = scores.shape
    center = int(ex.attributes.get("center_point_box", 0))

    def scalar(pos: int, kind: str, default: str) -> str:
        k = ops[pos] if pos < len(ops) else -1
        return default if k < 0 else f"({kind})in{k}[0]"

    quota = scalar(2, "long long", "0")
    iou_t = scalar(3, "float", "0.0f")
    score_t = scalar(4, "float", "-INFINITY")
    corners = (
        "x1 = p[0] - p[2] / 2; y1 = p[1] - p[3] / 2; x2 = p[0] + p[2] / 2; y2 = p[1] + p[3] / 2;"
        if center  # [x_center, y_center, width, height]
        else "y1 = fminf(p[0], p[2]); x1 = fminf(p[1], p[3]); y2 = fmaxf(p[0], p[2]); x2 = fmaxf(p[1], p[3]);"
    )
    bi, si = f"in{ops[0]}", f"in{ops[1]}"
    return f"""// launch: grid=1 block=256 shared={n}
// NonMaxSuppression: {b} batch(es), {c} class(es), {n} boxes; center_point_box={center}. One block, greedy.
__device__ __forceinline__ void corners(const float* p, float& x1, float& y1, float& x2, float& y2) {{
    {corners}
}}
__device__ __forceinline__ float iou(const float* a, const float* b) {{
    float ax1, ay1, ax2, ay2, bx1, by1, bx2, by2;
    corners(a, ax1, ay1, ax2, ay2);
    corners(b, bx1, by1, bx2, by2);
    const float aa = (ax2 - ax1) * (ay2 - ay1), ab = (bx2 - bx1) * (by2 - by1);
    if (aa <= 0.0f || ab <= 0.0f) return 0.0f;
    const float w = fmaxf(fminf(ax2, bx2) - fmaxf(ax1, bx1), 0.0f);
    const float h = fmaxf(fminf(ay2, by2) - fmaxf(ay1, by1), 0.0f);
    return w * h / (aa + ab - w * h);
}}
extern "C" __global__ void kernel({_params(ex)}) {{
    extern __shared__ unsigned char gone[];
    __shared__ float best_s[256];
    __shared__ int best_i[256];
    const long long quota = {quota};
    const float iou_t = {iou_t}, score_t = {score_t};
    long long pos = 0;
    for (int b = 0; b < {b}; ++b) {{
        const float* bx = {bi} + (long long)b * {n} * 4;
        for (int c = 0; c < {c}; ++c) {{
            const float* sc = {si} + ((long long)b * {c} + c) * {n};
            for (int i = threadIdx.x; i < {n}; i += blockDim.x) gone[i] = !(sc[i] > score_t);
            __syncthreads();
            for (long long taken = 0; taken < quota && pos < OUT0_D0; ++taken) {{
                float s = -INFINITY; int at = -1;
                for (int i = threadIdx.x; i < {n}; i += blockDim.x)
                    if (!gone[i] && (sc[i] > s || (sc[i] == s && at > i))) {{ s = sc[i]; at = i; }}
                best_s[threadIdx.x] = s; best_i[threadIdx.x] = at;
                __syncthreads();
                for (int h = blockDim.x / 2; h > 0; h >>= 1) {{
                    if (threadIdx.x < h) {{
                        const float o = best_s[threadIdx.x + h]; const int oi = best_i[threadIdx.x + h];
                        if (oi >= 0 && (best_i[threadIdx.x] < 0 || o > best_s[threadIdx.x] ||
                                        (o == best_s[threadIdx.x] && oi < best_i[threadIdx.x]))) {{
                            best_s[threadIdx.x] = o; best_i[threadIdx.x] = oi;
                        }}
                    }}
                    __syncthreads();
                }}
                const int sel = best_i[0];
                __syncthreads();
                if (sel < 0) break;
                if (threadIdx.x == 0) {{
                    out0[pos * 3 + 0] = b; out0[pos * 3 + 1] = c; out0[pos * 3 + 2] = sel;
                    gone[sel] = 1;
                }}
                ++pos;
                for (int i = threadIdx.x; i < {n}; i += blockDim.x)
                    if (!gone[i] && iou(bx + (long long)sel * 4, bx + (long long)i * 4) > iou_t) gone[i] = 1;
                __syncthreads();
            }}
        }}
    }}
}}
"""


def _stub(ex: Extract, why: str) -> str:
    return (
        "// launch: grid=CEIL_DIV(N, 256) block=256\n"
        f"// No starting kernel for {ex.op}: {why}. Write its body; inputs in0.., outputs out0.. (see the sizes).\n"
        f'extern "C" __global__ void kernel({_params(ex)}) {{\n'
        "    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i >= N) return;\n"
        "    // out0[i] = ...;\n"
        "}\n"
    )


def generate(ex: Extract, inputs: dict[str, np.ndarray] | None = None) -> Generated:
    """The starting kernel for ``ex`` at its dtypes and shapes (``inputs``: the captured tensors, for constant
    operands such as a reduction's axes)."""
    op = ex.op
    if any(t.shape is None for t in (*ex.inputs, *ex.outputs)):
        return Generated(_header(ex, "stub") + _stub(ex, "an output's size depends on the data"), "stub", False)
    if op == "NonMaxSuppression":
        src = _nms(ex)
        if src is not None:
            return Generated(_header(ex, "nms") + src, "nms", True)
    if len(ex.outputs) != 1 or op == "Fused":
        why = "a selection of several nodes" if op == "Fused" else "several outputs"
        return Generated(_header(ex, "stub") + _stub(ex, why), "stub", False, f"write the kernel for {why}")
    kind, src = "stub", None
    odd = [t.dtype for t in (*ex.inputs, *ex.outputs) if t.dtype not in C_TYPES]
    if odd:
        why = f"its {odd[0]} tensors are not generated"
        return Generated(_header(ex, "stub") + _stub(ex, why), "stub", False, why)
    if op in UNARY or op in BINARY or op in VARIADIC or op in ("Where", "Clip"):
        src = _elementwise(ex)
        kind = "elementwise" if src else "stub"
    elif op in ROWWISE:
        src = _rowwise(ex, inputs or {})
        kind = "reduction" if src else "stub"
    elif op == "Gather":
        kind, src = "gather", _gather(ex)
    elif op == "RoiAlign":
        kind, src = "roialign", _roialign(ex)
    if src is None:
        why = "this kind is not generated" if kind == "stub" and op not in ROWWISE else "it reduces an inner axis"
        return Generated(_header(ex, "stub") + _stub(ex, why), "stub", False, why)
    return Generated(_header(ex, kind) + src, kind, True)


def attributes_for(ex: Extract) -> dict[str, Any]:
    """The attributes the kernel's macros see (the op's, with ONNX's defaults where the op has them)."""
    return {**DEFAULT_ATTRS.get(ex.op, {}), **ex.attributes}
