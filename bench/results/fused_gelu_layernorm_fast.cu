// launch: grid=(ROWS) block=256
// GELU then LayerNorm, one block per row of 768, the row held in registers (3 values a thread), one pass of
// warp-shuffle sums for the mean and one for the variance.
__device__ __forceinline__ float wsum(float v) { for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o); return v; }
__device__ float bsum(float v) {
    __shared__ float s[8]; v = wsum(v); if ((threadIdx.x & 31) == 0) s[threadIdx.x >> 5] = v; __syncthreads();
    v = (threadIdx.x & 31) < 8 ? s[threadIdx.x & 31] : 0.f; v = wsum(v); __syncthreads(); return v; }
extern "C" __global__ void kernel(const float* __restrict__ in0, const float* __restrict__ in1, const float* __restrict__ in2, const float* __restrict__ in3, const float* __restrict__ in4, const float* __restrict__ in5, float* __restrict__ out0) {
    const long long row = blockIdx.x; const float* x = in0 + row * COLS;
    float g[3]; float s = 0.f;
    for (int k = 0; k < 3; ++k) { float v = x[threadIdx.x + 256 * k]; g[k] = 0.5f * v * (1.f + erff(v * 0.70710678f)); s += g[k]; }
    const float mean = bsum(s) / COLS; float q = 0.f;
    for (int k = 0; k < 3; ++k) { float d = g[k] - mean; q += d * d; }
    const float inv = rsqrtf(bsum(q) / COLS + 1e-5f);
    for (int k = 0; k < 3; ++k) { int c = threadIdx.x + 256 * k; out0[row * COLS + c] = (g[k] - mean) * inv * in4[c] + in5[c]; }
}
