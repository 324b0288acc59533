// A CUDA C model of the _n16 kernels' load side (docs/matmul.md, "Sixteen rows on tensor
// cores"): how fast a persistent grid streams B (k x n BF16, n contiguous) through a TMA ring of
// 128-column tiles when its consumers do nothing but release the stages. It prints the read
// ceiling of the memory, then per shape the ring as the kernels build it (10 stages of two
// 64 x 64 boxes), a ring released at once, 12 stages, one 128 x 128 box a stage, L2 promotion,
// stream-K over 132 blocks and 64-column tiles.
//
//   nvcc -arch=sm_90a -O3 -std=c++17 scripts/tma_ring_model.cu -lcuda -o tma_ring_model && ./tma_ring_model
//
// H200, 2026-11-28: 112 blocks of 4096 x 14336 0.0335 ms (3.5 TB/s, cuBLASLt's BF16 kernel on
// its own 112 blocks 0.032-0.034), 10 or 12 stages alike; 8192 x 28672 on 132 blocks 0.111.
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>

__device__ __forceinline__ uint32_t sa(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap* map, int c0, int c1, uint32_t bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
      :: "r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void expect(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
__device__ __forceinline__ void wait(uint32_t bar, uint32_t parity) {
  asm volatile("{ .reg .pred p; W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1; @!p bra W; }" :: "r"(bar), "r"(parity) : "memory");
}


// mode 0: items (tile, split) handed out round-robin; mode 1: stream-K, CTA c takes the units
// [c U / G, (c + 1) U / G) of U = tiles * KT, in (tile, kt) order.
template <int STAGES, int BOXES, int BOXN, int BK, int HOLD>
__global__ void __launch_bounds__(384, 1) stream(const __grid_constant__ CUtensorMap map, int k, int n, int splits, int mode, float* sink) {
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = (uint8_t*)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
  constexpr int BOX_BYTES = BOXN * BK * 2, STAGE_BYTES = BOXES * BOX_BYTES, TILE_N = BOXES * BOXN;
  __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
  int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  if (tid == 0) {
    for (int s = 0; s < STAGES; s++) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(sa(&full[s])));
      asm volatile("mbarrier.init.shared::cta.b64 [%0], 8;" :: "r"(sa(&empty[s])));
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  int tiles = n / TILE_N, KT = k / BK;
  long U = (long)tiles * KT;
  int G = gridDim.x, c = blockIdx.x;
  // Enumerate this CTA's (tile, kt) units in order.
  auto for_units = [&](auto&& f) {
    if (mode == 0) {
      int per = (KT + splits - 1) / splits, items = tiles * splits;
      for (int it = c; it < items; it += G) {
        int tile = it % tiles, z = it / tiles;
        int kt0 = z * per, kt1 = min(KT, kt0 + per);
        for (int kt = kt0; kt < kt1; kt++) f(tile, kt);
      }
    } else {
      long u0 = U * c / G, u1 = U * (c + 1) / G;
      for (long u = u0; u < u1; u++) f((int)(u / KT), (int)(u % KT));
    }
  };
  if (warp == 8) {
    if (lane == 0) {
      int i = 0;
      for_units([&](int tile, int kt) {
        int s = i % STAGES; uint32_t par = ((i / STAGES) & 1) ^ 1;
        wait(sa(&empty[s]), par);
        expect(sa(&full[s]), STAGE_BYTES);
        for (int j = 0; j < BOXES; j++)
          tma_load(sa(smem + s * STAGE_BYTES + j * BOX_BYTES), &map, tile * TILE_N + j * BOXN, kt * BK, sa(&full[s]));
        i++;
      });
    }
    return;
  }
  if (warp > 8) return;
  float acc = 0;
  int i = 0;
  for_units([&](int tile, int kt) {
    int s = i % STAGES; uint32_t par = (i / STAGES) & 1;
    wait(sa(&full[s]), par);
    acc += __uint_as_float(*(const uint32_t*)(smem + s * STAGE_BYTES + 4 * tid));
    __syncwarp();
    if (HOLD) {
      if (i > 0 && lane == 0) arrive(sa(&empty[(i + STAGES - 1) % STAGES]));
    } else {
      if (lane == 0) arrive(sa(&empty[s]));
    }
    i++;
  });
  if (HOLD && i > 0 && lane == 0) arrive(sa(&empty[(i + STAGES - 1) % STAGES]));
  if (acc == 12345.f) sink[tid] = acc;
}

__global__ void read_all(const uint4* p, size_t n16, float* sink) {
  uint32_t x = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n16; i += (size_t)gridDim.x * blockDim.x) {
    uint4 v; asm volatile("ld.global.nc.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p + i));
    x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (x == 0x12345) sink[0] = 1;
}

typedef CUresult (*EncodeFn)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*, const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static uint16_t* B; static float* sink; static size_t MAXB = (size_t)8192 * 28672;

template <int STAGES, int BOXES, int BOXN, int BK, int HOLD>
void bench(const char* name, int k, int n, int splits, int mode, int grid, int l2promo = 0) {
  auto kern = stream<STAGES, BOXES, BOXN, BK, HOLD>;
  int shmem = STAGES * BOXES * BOXN * BK * 2 + 1024;
  cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, shmem);
  size_t kn = (size_t)k * n; int nrot = std::max<size_t>(1, MAXB / kn);
  std::vector<CUtensorMap> maps(nrot);
  for (int r = 0; r < nrot; r++) {
    cuuint64_t dims[2] = {(cuuint64_t)n, (cuuint64_t)k}, strides[1] = {(cuuint64_t)n * 2};
    cuuint32_t box[2] = {(cuuint32_t)BOXN, (cuuint32_t)BK}, es[2] = {1, 1};
    CUresult rc = cuTensorMapEncodeTiled(&maps[r], CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, B + r * kn, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
           BOXN * 2 == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
           l2promo ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B : CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (rc) { printf("encode error %d\n", rc); return; }
  }
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  std::vector<float> ts;
  for (int i = 0; i < 25; i++) {
    cudaEventRecord(e0);
    kern<<<grid, 384, shmem>>>(maps[i % nrot], k, n, splits, mode, sink);
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1); if (i >= 5) ts.push_back(ms);
  }
  std::sort(ts.begin(), ts.end());
  double med = ts[ts.size() / 2];
  cudaError_t err = cudaGetLastError();
  printf("%-44s k=%5d n=%5d splits=%d grid=%3d %.4f ms %5.0f GB/s %s\n", name, k, n, splits, grid, med, (double)kn * 2 / med / 1e6,
         err ? cudaGetErrorString(err) : "");
}

int main() {
  cudaMalloc(&B, MAXB * 2); cudaMalloc(&sink, 4096);
  cudaMemset(B, 0, MAXB * 2);
  {
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    std::vector<float> ts;
    for (int i = 0; i < 15; i++) {
      cudaEventRecord(e0); read_all<<<132 * 8, 256>>>((const uint4*)B, MAXB * 2 / 16, sink); cudaEventRecord(e1); cudaEventSynchronize(e1);
      float ms; cudaEventElapsedTime(&ms, e0, e1); if (i >= 5) ts.push_back(ms);
    }
    std::sort(ts.begin(), ts.end());
    printf("read ceiling (ld.global.nc.v4, 470 MB): %.4f ms %.0f GB/s\n", ts[5], MAXB * 2 / ts[5] / 1e6);
  }
  struct S { int k, n, splits; } shapes[] = {{4096, 14336, 1}, {8192, 28672, 1}, {14336, 4096, 4}, {4096, 4096, 4}};
  for (auto s : shapes) {
    int tiles = s.n / 128, items = tiles * s.splits, g0 = std::min(items, 132);
    bench<10, 2, 64, 64, 1>("as built: 10 x (2 boxes 64x64 sw128), hold 1", s.k, s.n, s.splits, 0, g0);
    bench<10, 2, 64, 64, 0>("10 stages, release at once", s.k, s.n, s.splits, 0, g0);
    bench<12, 2, 64, 64, 1>("12 stages, hold 1", s.k, s.n, s.splits, 0, g0);
    bench<6, 1, 128, 128, 1>("6 x (1 box 128x128 no swizzle), hold 1", s.k, s.n, s.splits, 0, g0);
    bench<10, 2, 64, 64, 1>("as built + L2 256B promotion", s.k, s.n, s.splits, 0, g0, 1);
    bench<10, 2, 64, 64, 1>("stream-K 132, 10 stages", s.k, s.n, 1, 1, 132);
    bench<12, 2, 64, 64, 1>("stream-K 132, 12 stages", s.k, s.n, 1, 1, 132);
    bench<5, 1, 64, 64, 1>("64-col tiles, 5 stages, grid tiles", s.k, s.n, s.splits, 0, std::min(items * 2, 264));
  }
  return 0;
}
