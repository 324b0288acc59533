// Baseline for `host matmul`: build on the GPU machine with `nvcc -O3 -arch=sm_90 -o guide_matmul guide_matmul.cu`, run `./guide_matmul 4096`.
// The CUDA C++ Programming Guide's matmul kernels (naive; shared-memory tiles), built with nvcc -O3 -arch=sm_90,
// timed with CUDA events: median of 20 runs after 3 warm-ups, inputs rotated like the Rust host.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(err_), __LINE__); exit(1);} } while (0)
__global__ void naive(const float* A, const float* B, float* C, int m, int k, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = 0; for (int e = 0; e < k; ++e) acc += A[row * k + e] * B[e * n + col];
  C[row * n + col] = acc;
}
template <int T> __global__ void tiled(const float* A, const float* B, float* C, int m, int k, int n) {
  __shared__ float As[T][T], Bs[T][T];
  int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
  float acc = 0;
  for (int t = 0; t < k; t += T) {
    As[ty][tx] = (row < m && t + tx < k) ? A[row * k + t + tx] : 0.f;
    Bs[ty][tx] = (t + ty < k && col < n) ? B[(t + ty) * n + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int e = 0; e < T; ++e) acc += As[ty][e] * Bs[e][tx];
    __syncthreads();
  }
  if (row < m && col < n) C[row * n + col] = acc;
}
template <class F> float med(F f, int sets) {
  std::vector<float> t; cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) f(i % sets);
  for (int i = 0; i < 20; ++i) { CK(cudaEventRecord(a)); f(i % sets); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms); }
  CK(cudaGetLastError()); std::sort(t.begin(), t.end()); return 0.5f * (t[9] + t[10]);
}
int main(int argc, char** argv) {
  int s = atoi(argv[1]); size_t e = (size_t)s * s; int sets = std::max<size_t>(1, std::min<size_t>(16, (150ull << 20) / (8 * e) + 1));
  std::vector<float*> A(sets), B(sets), C(sets); std::vector<float> h(e); for (auto& x : h) x = rand() / (float)RAND_MAX - 0.5f;
  for (int i = 0; i < sets; ++i) { CK(cudaMalloc(&A[i], 4 * e)); CK(cudaMalloc(&B[i], 4 * e)); CK(cudaMalloc(&C[i], 4 * e)); CK(cudaMemcpy(A[i], h.data(), 4 * e, cudaMemcpyHostToDevice)); CK(cudaMemcpy(B[i], h.data(), 4 * e, cudaMemcpyHostToDevice)); }
  dim3 g16((s + 15) / 16, (s + 15) / 16), g32((s + 31) / 32, (s + 31) / 32);
  float tn = med([&](int i) { naive<<<g16, dim3(16, 16)>>>(A[i], B[i], C[i], s, s, s); }, sets);
  float t16 = med([&](int i) { tiled<16><<<g16, dim3(16, 16)>>>(A[i], B[i], C[i], s, s, s); }, sets);
  float t32 = med([&](int i) { tiled<32><<<g32, dim3(32, 32)>>>(A[i], B[i], C[i], s, s, s); }, sets);
  double gf = 2.0 * s * s * (double)s / 1e6;
  printf("nvcc guide %d^3 (%d sets): naive %.3f ms (%.0f GFLOP/s)  tiled16 %.3f ms (%.0f)  tiled32 %.3f ms (%.0f)\n", s, sets, tn, gf / tn, t16, gf / t16, t32, gf / t32);
}
