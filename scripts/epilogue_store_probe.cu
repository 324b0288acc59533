// A probe of the row-staged epilogue's stores alone (docs/matmul.md, "Where the time goes"): the
// 236 MB of C of 8841x28x6665 written from registers in the epilogue's order, tiles of 128 x 256
// on 132 persistent blocks of 256 threads (two warpgroups of 64 rows), each warp a row's box of
// 32 columns for rows w, w + 4, ... of its warpgroup, boxes in order, no shared memory and no
// barriers; against the same at n = 6664 (whole lines, as the TMA stores them), the 128-byte
// lines of each pair of boxes, and per box the line that ends inside it (its first columns from
// the box before; after the last box the row's tail), which leaves two partial lines a tile row.
// Then checks that the last writes every element. Best of 10 runs after 2.
//
//   nvcc -O3 -arch=sm_90a -o epilogue_store_probe scripts/epilogue_store_probe.cu && ./epilogue_store_probe
//
// H200, 2026-11-29 (ms at 1 and 2 blocks an SM): whole lines 0.073, 0.075; boxes at n = 6665 (two
// lines a store) 0.151, 0.174; each pair's lines 0.211, 0.142; the line ending in each box 0.120,
// 0.109. The kernels: wgmma_bf16_rows 0.152 at 8841x28x6665, wgmma_bf16 (TMA) 0.072 at 8841x32x6664.
#include <cstdio>
#include <cuda_runtime.h>
#include <cstdlib>
template <int MODE>
__global__ void epi(float* c, int m, int n) {
  int tiles_m = (m + 127) / 128, tiles_n = (n + 255) / 256;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = warp / 4, wi = warp % 4;
  for (int t = blockIdx.x; t < tiles_m * tiles_n; t += gridDim.x) {
    int tm = t % tiles_m, tn = t / tiles_m;
    int y0 = tm * 128 + 64 * g, x0 = tn * 256;
    for (int p = 0; p < 4; ++p) {
      if (MODE < 2) {
        for (int side = 0; side < 2; ++side) {
          int col = x0 + (2 * p + side) * 32 + lane;
          if (col < n)
            for (int r = wi; r < 64 && y0 + r < m; r += 4) c[(size_t)(y0 + r) * n + col] = (float)r;
        }
      } else if (MODE == 3) {
        // per box, the 128-byte line that ends inside it (its first columns from the box before),
        // and after the last box the tile row's tail: one line a store
        for (int side = 0; side < 2; ++side) {
          int i = 2 * p + side;
          for (int r = wi; r < 64 && y0 + r < m; r += 4) {
            size_t row = (size_t)(y0 + r) * n;
            int o = (int)((row + x0) % 32);
            int col = x0 + 32 * i - o + lane;
            if (col >= x0 && col < n) c[row + col] = (float)r;
            if (i == 7 && lane < o && x0 + 256 - o + lane < n) c[row + x0 + 256 - o + lane] = (float)r;
          }
        }
      } else {
        // aligned windows: the pair's 64 columns of a row as the 128-byte lines they touch
        int c0 = x0 + 64 * p, c1 = min(c0 + 64, n);
        if (c0 < n)
          for (int r = wi; r < 64 && y0 + r < m; r += 4) {
            size_t row = (size_t)(y0 + r) * n;
            size_t first = (row + c0) & ~(size_t)31;
            for (size_t line = first; line < row + c1; line += 32) {
              size_t i = line + lane;
              if (i >= row + c0 && i < row + c1) c[i] = (float)r;
            }
          }
      }
      __syncwarp();
    }
  }
}
int main() {
  int m = 8841;
  float* c; cudaMalloc(&c, (size_t)m * 6666 * 4 + 4096);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  struct { int n, mode; const char* name; } cases[] = {
    {6664, 0, "n 6664, 32-column boxes (whole lines)"},
    {6665, 0, "n 6665, 32-column boxes (two lines a store)"},
    {6665, 2, "n 6665, aligned lines of each pair"},
    {6665, 3, "n 6665, the line ending in each box"},
  };
  for (int blocks_per_sm : {1, 2}) {
    for (auto cs : cases) {
      float best = 1e9;
      for (int rep = 0; rep < 12; ++rep) {
        cudaEventRecord(a);
        if (cs.mode == 0) epi<0><<<132 * blocks_per_sm, 256>>>(c, m, cs.n);
        else if (cs.mode == 2) epi<2><<<132 * blocks_per_sm, 256>>>(c, m, cs.n);
        else epi<3><<<132 * blocks_per_sm, 256>>>(c, m, cs.n);
        cudaEventRecord(b); cudaEventSynchronize(b);
        float ms; cudaEventElapsedTime(&ms, a, b); if (rep > 1 && ms < best) best = ms;
      }
      printf("%d blocks/SM  %-44s %.4f ms  %.0f GB/s\n", blocks_per_sm, cs.name, best, (double)m * cs.n * 4 / best / 1e6);
    }
  }
  // coverage check of mode 3: every element written once
  {
    int n = 6665; size_t len = (size_t)m * n;
    cudaMemset(c, 0xff, len * 4);
    epi<3><<<132, 256>>>(c, m, n);
    float* h = (float*)malloc(len * 4); cudaMemcpy(h, c, len * 4, cudaMemcpyDeviceToHost);
    size_t bad = 0; for (size_t i = 0; i < len; ++i) if (h[i] != h[i]) ++bad;
    printf("mode 3 unwritten elements: %zu\n", bad);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
