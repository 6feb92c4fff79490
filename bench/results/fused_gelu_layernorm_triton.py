import torch
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
