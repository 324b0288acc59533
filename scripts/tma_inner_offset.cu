// Does a TMA tile load accept an inner box coordinate that is not a multiple of 16 bytes?
// Loads an 8 x 32 f32 box of a 64 x 100 matrix (rows of 400 bytes) at columns x = 0..3, without
// and with the 128-byte swizzle, and prints what landed; stops at the first failure.
// H200, CUDA 13 (2026-11-29): x = 0 loads; x = 1 (4 bytes in) is CUDA_ERROR_ILLEGAL_INSTRUCTION.
//   nvcc -arch=sm_90a -o tma_inner_offset scripts/tma_inner_offset.cu -lcuda && ./tma_inner_offset
#include <cuda.h>
#include <cstdio>
#include <cstdint>
__global__ void load(const __grid_constant__ CUtensorMap map, int x, int y, float* out) {
  __shared__ alignas(1024) float tile[8 * 32];
  __shared__ alignas(8) uint64_t bar;
  unsigned s = (unsigned)__cvta_generic_to_shared(tile), b = (unsigned)__cvta_generic_to_shared(&bar);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(b));
    asm volatile("fence.proxy.async.shared::cta;");
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" :: "r"(b), "r"(8 * 32 * 4));
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(s), "l"(&map), "r"(x), "r"(y), "r"(b) : "memory");
    asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared.b64 p, [%0], 0; @!p bra W; }" :: "r"(b));
  }
  __syncthreads();
  for (int i = threadIdx.x; i < 256; i += blockDim.x) out[i] = tile[i];
}
int main() {
  cuInit(0); CUdevice d; cuDeviceGet(&d, 0); CUcontext c; cuDevicePrimaryCtxRetain(&c, d); cuCtxSetCurrent(c);
  const int rows = 64, cols = 100;
  float h[rows * cols]; for (int i = 0; i < rows * cols; i++) h[i] = i;
  float *A, *out; cudaMalloc(&A, sizeof h); cudaMalloc(&out, 1024); cudaMemcpy(A, h, sizeof h, cudaMemcpyHostToDevice);
  for (int sw = 0; sw < 2; sw++) for (int x = 0; x < 4; x++) {
    CUtensorMap map; cuuint64_t dims[2] = {cols, rows}, strides[1] = {cols * 4}; cuuint32_t box[2] = {32, 8}, es[2] = {1, 1};
    CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, A, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
        sw ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    load<<<1, 32>>>(map, x, 3, out);
    cudaError_t e = cudaDeviceSynchronize();
    float g[256]; cudaMemcpy(g, out, 1024, cudaMemcpyDeviceToHost);
    // Row 0 of the box: without swizzle element j is A[3][x + j]; with 128B swizzle chunk 0 of row 0 stays.
    printf("swizzle %d x %d: encode %d, kernel %s, first %g (want %g), [1] %g\n", sw, x, (int)r, cudaGetErrorString(e), g[0], h[3 * cols + x], g[1]);
    if (e != cudaSuccess) return 1;
  }
  return 0;
}
