// Does a TMA tile store accept an inner box coordinate that is not a multiple of 16 bytes? (The
// load does not: scripts/tma_inner_offset.cu.) Stores a 16 x 32 f32 box to class r of the rows of
// an m x n matrix (rows r, r + 4, ...: a map from row r's start rounded down to 16 bytes, o_r
// elements early, rows 16 n bytes apart), at column o_r, so that it lands on column 0 of the rows.
// Arguments: n m r swizzle(0/1) box_rows. One store a process: a failure ends the context.
// H200, CUDA 13 (2026-11-29): every o_r = 0 stores (n = 7, 8, 6664, 6665; r = 0, 1); every
// o_r of 1 to 3 (n = 7 r = 1, n = 6665 r = 1, n = 1 r = 1), with or without swizzle and with 8 or
// 16 rows a box, is CUDA_ERROR_ILLEGAL_INSTRUCTION.
//   nvcc -arch=sm_90a -o tma_store_inner_offset scripts/tma_store_inner_offset.cu -lcuda
//   for a in "7 64 0 1 16" "7 64 1 1 16" "6665 64 1 0 8"; do ./tma_store_inner_offset $a; done
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
__global__ void store_box(const __grid_constant__ CUtensorMap map, int x, int y) {
  __shared__ __align__(1024) float box[16 * 32];
  for (int i = threadIdx.x; i < 512; i += blockDim.x) box[i] = 1.0f + i;
  asm volatile("fence.proxy.async.shared::cta;");
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned s = (unsigned)__cvta_generic_to_shared(box);
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(&map), "r"(x), "r"(y), "r"(s) : "memory");
    asm volatile("cp.async.bulk.commit_group;");
    asm volatile("cp.async.bulk.wait_group 0;");
  }
}
int main(int argc, char** argv) {
  if (argc < 6) { fprintf(stderr, "usage: %s n m r swizzle box_rows\n", argv[0]); return 2; }
  int n = atoi(argv[1]), m = atoi(argv[2]), r = atoi(argv[3]), swz = atoi(argv[4]), box_rows = atoi(argv[5]);
  float* c;
  cudaMalloc(&c, (size_t)m * n * 4 + 4096);
  int o = (int)(((unsigned long long)c / 4 + (unsigned long long)r * n) % 4);
  char* base = (char*)c + 4ull * ((unsigned long long)r * n - o);
  cuuint64_t dims[2] = {(cuuint64_t)(n + o), (cuuint64_t)((m - r + 3) / 4)}, strides[1] = {16ull * n};
  cuuint32_t box[2] = {32, (cuuint32_t)box_rows}, es[2] = {1, 1};
  CUtensorMap map;
  CUresult e = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, base, dims, strides, box, es,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      swz ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  printf("n=%d m=%d r=%d o_r=%d swizzle=%d box_rows=%d encode=%d ", n, m, r, o, swz, box_rows, (int)e);
  store_box<<<1, 128>>>(map, o, 0);
  printf("store: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
  return 0;
}
