// Baseline for `host histogram`: build on the GPU machine with `nvcc -O3 -arch=sm_90 -o guide_histogram guide_histogram.cu`.
// The CUDA C++ Programming Guide's distributed-shared-memory histogram (clusterHist_kernel), nvcc -O3 -arch=sm_90.
// Usage: guide_histogram NBINS CLUSTER [BLOCKS THREADS]; 2^26 uniform ints; default grid = n / 256 blocks of 256 (as in the Guide),
// or the given persistent grid (the Guide's grid-stride loop covers any grid).
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
namespace cg = cooperative_groups;
#define CK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { printf("CUDA %s at %d\n", cudaGetErrorString(err_), __LINE__); exit(1);} } while (0)
__global__ void clusterHist_kernel(int *bins, const int nbins, const int bins_per_block, const int *__restrict__ input, size_t array_size) {
  extern __shared__ int smem[];
  int tid = cg::this_grid().thread_rank();
  cg::cluster_group cluster = cg::this_cluster();
  unsigned int clusterBlockRank = cluster.block_rank();
  int cluster_size = cluster.dim_blocks().x;
  for (int i = threadIdx.x; i < bins_per_block; i += blockDim.x) smem[i] = 0;
  cluster.sync();
  for (int i = tid; i < array_size; i += blockDim.x * gridDim.x) {
    int ldata = input[i];
    int binid = ldata;
    if (ldata < 0) binid = 0; else if (ldata >= nbins) binid = nbins - 1;
    int dst_block_rank = (int)(binid / bins_per_block);
    int dst_offset = binid % bins_per_block;
    int *dst_smem = cluster.map_shared_rank(smem, dst_block_rank);
    atomicAdd(dst_smem + dst_offset, 1);
  }
  cluster.sync();
  int *lbins = bins + cluster.block_rank() * bins_per_block;
  for (int i = threadIdx.x; i < bins_per_block; i += blockDim.x) atomicAdd(&lbins[i], smem[i]);
}
int main(int argc, char **argv) {
  int nbins = atoi(argv[1]), cs = atoi(argv[2]); size_t n = 1 << 26; int tpb = argc > 4 ? atoi(argv[4]) : 256; int blocks = argc > 3 ? atoi(argv[3]) : (int)(n / tpb);
  std::vector<int> h(n); for (auto &x : h) x = rand() % nbins;
  int *in, *bins; CK(cudaMalloc(&in, 4 * n)); CK(cudaMalloc(&bins, 4 * (size_t)nbins)); CK(cudaMemcpy(in, h.data(), 4 * n, cudaMemcpyHostToDevice));
  cudaLaunchConfig_t config = {0}; config.gridDim = blocks; config.blockDim = tpb;
  int bpb = nbins / cs; config.dynamicSmemBytes = bpb * sizeof(int);
  CK(cudaFuncSetAttribute((void *)clusterHist_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, config.dynamicSmemBytes));
  cudaLaunchAttribute attribute[1]; attribute[0].id = cudaLaunchAttributeClusterDimension; attribute[0].val.clusterDim.x = cs; attribute[0].val.clusterDim.y = 1; attribute[0].val.clusterDim.z = 1;
  config.numAttrs = 1; config.attrs = attribute;
  auto run = [&] { CK(cudaMemsetAsync(bins, 0, 4 * (size_t)nbins)); CK(cudaLaunchKernelEx(&config, clusterHist_kernel, bins, nbins, bpb, (const int *)in, n)); };
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b)); std::vector<float> t;
  for (int i = 0; i < 3; ++i) run();
  for (int i = 0; i < 20; ++i) { CK(cudaEventRecord(a)); run(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms); }
  CK(cudaGetLastError()); std::sort(t.begin(), t.end());
  std::vector<int> out(nbins); CK(cudaMemcpy(out.data(), bins, 4 * (size_t)nbins, cudaMemcpyDeviceToHost)); long long s = 0; for (int v : out) s += v;
  printf("nvcc guide histogram 2^26 ints, %d bins, cluster %d, %d x %d: median %.3f ms (%.0f GB/s) sum=%lld\n", nbins, cs, blocks, tpb, 0.5 * (t[9] + t[10]), 4.0 * n / (0.5 * (t[9] + t[10])) / 1e6, s);
}
