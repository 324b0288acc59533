// A probe of the stores the row-staged epilogue makes (docs/matmul.md, "Where the time goes"):
// 236 MB of f32 (8841 x 6665, the rows of C of 8841x28x6665) written by warps of 32 consecutive
// floats, each store one 128-byte line (flat aligned), the same shifted by one float (every store
// two lines), rows of odd length in boxes of 32 columns (a warp a row's box, as the epilogue's
// read-back stores them, with an integer division a box), and the same rows as the aligned lines
// of the flat array; at 8 (the tile kernels' consumer warps), 16, 32 and 64 warps an SM, the
// best of 10 runs after 2.
//
//   nvcc -O3 -arch=sm_90a -o store_alignment_probe scripts/store_alignment_probe.cu && ./store_alignment_probe
//
// H200, 2026-11-29 (GB/s at 8, 16, 32, 64 warps an SM): flat aligned 3747, 3910, 3672, 3536;
// shifted one float 2813, 2397, 2368, 1975; rows in boxes of 32 columns 879, 1492, 1881, 2020;
// rows as aligned lines 2511, 3846, 3699, 3576. The row-staged epilogue itself wrote 1.55 TB/s
// (0.152 ms) and the TMA's 3.3 (8841x32x6664, 0.072 ms).
#include <cstdio>
#include <cuda_runtime.h>
__global__ void flat(float* c, size_t len, int shift, int lines_per_warp_step) {
  size_t warps = (size_t)gridDim.x * blockDim.x / 32;
  size_t w = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  for (size_t line = w; line * 32 + 32 + shift <= len; line += warps) {
    c[line * 32 + lane + shift] = (float)line;
  }
}
// rows-like: row r, 32-column boxes; m rows of n floats; each warp takes (row, box) items
__global__ void rows(float* c, int m, int n) {
  size_t warps = (size_t)gridDim.x * blockDim.x / 32;
  size_t w = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  int boxes = (n + 31) / 32;
  for (size_t it = w; it < (size_t)m * boxes; it += warps) {
    int r = it / boxes, b = it % boxes;
    int col = b * 32 + lane;
    if (col < n) c[(size_t)r * n + col] = (float)it;
  }
}
// aligned windows: the same rows, each warp storing the 32 floats of one 128-byte line of the flat
// array that fall in the row (the row's first and last lines partial)
__global__ void windows(float* c, int m, int n) {
  size_t warps = (size_t)gridDim.x * blockDim.x / 32;
  size_t w = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  size_t len = (size_t)m * n;
  for (size_t line = w; line * 32 < len; line += warps) {
    size_t i = line * 32 + lane;
    if (i < len) c[i] = (float)line;
  }
}
int main() {
  int m = 8841, n = 6665;
  size_t len = (size_t)m * n;
  float* c; cudaMalloc(&c, len * 4 + 4096);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int wps : {8, 16, 32, 64}) {
    int threads = 256, blocks = 132 * wps / 8;
    for (int mode = 0; mode < 4; ++mode) {
      float best = 1e9;
      for (int rep = 0; rep < 12; ++rep) {
        cudaEventRecord(a);
        if (mode == 0) flat<<<blocks, threads>>>(c, len, 0, 1);
        if (mode == 1) flat<<<blocks, threads>>>(c, len, 1, 1);
        if (mode == 2) rows<<<blocks, threads>>>(c, m, n);
        if (mode == 3) windows<<<blocks, threads>>>(c, m, n);
        cudaEventRecord(b); cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b); if (rep > 1 && ms < best) best = ms;
      }
      const char* names[] = {"flat aligned", "flat shifted 1 float", "rows 32-col boxes (odd n)", "rows as aligned lines"};
      printf("%2d warps/SM  %-28s %.4f ms  %.0f GB/s\n", wps, names[mode], best, len * 4 / best / 1e6);
    }
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
