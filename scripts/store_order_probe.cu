// A probe of the order in which the persistent tensor-core kernels take their tiles, where a tile's
// time is its stores (short k): C of f32 (rows of odd length, so every row starts off a 128-byte
// line) written from registers by 132 persistent blocks of 256 threads, tiles of 128 x bn, each
// warp 16 rows of its tile; tiles in bands of `group` tile rows, column by column within a band
// (the kernels' tile_coords_in_bands: group 16 is GROUP_M, group 1 a row of tiles at a time).
// Each row is stored three ways: warps of 32 consecutive floats from the tile's first column (the
// row-staged epilogue's stores), the 128-byte lines the row's span covers (lanes outside it
// masked), and 16-byte vectors from the first aligned column (scalars at both ends). Median of
// 10 runs after 3; then cudaMemset of the 8841 x 6665 matrix.
//
//   nvcc -O3 -arch=sm_90 -o store_order_probe scripts/store_order_probe.cu && ./store_order_probe
//
// H200, 2026-12-01 (ms; rows of 32 / lines / vectors), 8841 x 6665:
//   bn 256: group 16 0.092 0.085 0.091, group 1 0.082 0.070 0.076
//   bn 128: group 16 0.116 0.099 0.098, group 1 0.070 0.096 0.097
//   bn  64: group 16 0.165 0.179 0.189, group 1 0.102 0.176 0.185
// 8841 x 6664 (16-byte rows), rows of 32: bn 256 0.068/0.064, bn 128 0.066/0.065, bn 64
// 0.102/0.102 (group 16/1); 2455 x 3667 bn 128: 0.017/0.016; 7700 x 433: about 0.010 in every
// order. cudaMemset: 0.055 ms (4.27 TB/s).
#include <cstdio>
#include <vector>
#include <algorithm>
__device__ __forceinline__ void tile_of(int t, int tiles_m, int tiles_n, int &tm, int &tn, int group) {
  int per_band = group * tiles_n, band = t / per_band, first = band * group;
  int rows = min(group, tiles_m - first), within = t % per_band;
  tm = first + within % rows; tn = within / rows;
}
template <int MODE>
__global__ void __launch_bounds__(256) store_tiles(float *c, int m, int n, int bn, int group) {
  int tiles_m = (m + 127) / 128, tiles_n = (n + bn - 1) / bn;
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int t = blockIdx.x; t < tiles_m * tiles_n; t += gridDim.x) {
    int tm, tn; tile_of(t, tiles_m, tiles_n, tm, tn, group);
    int c0 = tn * bn, cols = min(bn, n - c0);
    for (int rr = 0; rr < 16; rr++) {
      int row = tm * 128 + warp * 16 + rr;
      if (row >= m) break;
      long start = (long)row * n + c0, end = start + cols;
      float v = (float)(row + lane);
      if (MODE == 0) {
        for (int cb = 0; cb < bn; cb += 32) { int col = cb + lane; if (col < cols) c[start + col] = v; }
      } else if (MODE == 1) {
        for (long L = start & ~31L; L < end; L += 32) { long i = L + lane; if (i >= start && i < end) c[i] = v; }
      } else {
        long a0 = (start + 3) & ~3L, a1 = end & ~3L;
        if (start + lane < a0 && start + lane < end) c[start + lane] = v;
        for (long i = a0 + 4 * lane; i < a1; i += 128) *(float4 *)(c + i) = make_float4(v, v, v, v);
        if (a1 >= a0 && a1 + lane < end) c[a1 + lane] = v;
      }
    }
  }
}
template <int MODE> float run(float *c, int m, int n, int bn, int group) {
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> ts;
  for (int i = 0; i < 13; i++) {
    cudaEventRecord(e0); store_tiles<MODE><<<132, 256>>>(c, m, n, bn, group); cudaEventRecord(e1);
    cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); if (i >= 3) ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end()); return ts[ts.size() / 2];
}
int main() {
  int shapes[][2] = {{8841, 6665}, {8841, 6664}, {2455, 3667}, {7700, 433}};
  float *c; cudaMalloc(&c, 8841L * 6665 * 4 + 64);
  for (auto &s : shapes) for (int bn : {256, 128, 64}) for (int group : {16, 1}) {
    int m = s[0], n = s[1]; double gb = (double)m * n * 4 / 1e9;
    float t0 = run<0>(c, m, n, bn, group), t1 = run<1>(c, m, n, bn, group), t2 = run<2>(c, m, n, bn, group);
    printf("%dx%d bn %3d group %2d: rows-of-32 %.4f ms %.2f TB/s | line-aligned %.4f %.2f | v4 %.4f %.2f\n", m, n, bn, group,
           t0, gb / t0, t1, gb / t1, t2, gb / t2);
  }
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  cudaEventRecord(e0); for (int i = 0; i < 10; i++) cudaMemsetAsync(c, 0, 8841L * 6665 * 4); cudaEventRecord(e1); cudaEventSynchronize(e1);
  float ms; cudaEventElapsedTime(&ms, e0, e1); printf("memset 8841x6665: %.4f ms %.2f TB/s\n", ms / 10, 8841.0 * 6665 * 4 / 1e9 / (ms / 10));
  return 0;
}
