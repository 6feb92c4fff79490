import cupy as cp
from cupyx.scipy.special import erf


def kernel(x, *rest):
    w, b = rest[-2], rest[-1]
    g = 0.5 * x * (1.0 + erf(x * 0.7071067811865476))
    mean = g.mean(-1, keepdims=True)
    var = ((g - mean) ** 2).mean(-1, keepdims=True)
    return (g - mean) / cp.sqrt(var + 1e-5) * w + b
