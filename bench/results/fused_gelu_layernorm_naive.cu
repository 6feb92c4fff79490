// launch: grid=CEIL_DIV(ROWS, 64) block=64
// GELU then LayerNorm the obvious way: one thread per row, three passes over the row in global memory.
extern "C" __global__ void kernel(const float* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, const float* __restrict__ in3, const float* __restrict__ in4, const float* __restrict__ in5, float* __restrict__ out0) {
    const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x; if (row >= ROWS) return;
    const float* x = in0 + row * COLS; float* y = out0 + row * COLS; float s = 0.f;
    for (int c = 0; c < COLS; ++c) { float v = x[c]; y[c] = 0.5f * v * (1.f + erff(v * 0.70710678f)); s += y[c]; }
    const float mean = s / COLS; float q = 0.f;
    for (int c = 0; c < COLS; ++c) { float d = y[c] - mean; q += d * d; }
    const float inv = rsqrtf(q / COLS + 1e-5f);
    for (int c = 0; c < COLS; ++c) y[c] = (y[c] - mean) * inv * in4[c] + in5[c];
}
