// Copying a matrix into rows of 16-byte multiples (what a tensor-core plan does with an operand
// whose rows the TMA cannot read as they lie): the library's untransposed conversion against
// forms that load more per instruction, and against cudaMemcpy2DAsync.
//
//   nvcc -O3 -arch=sm_90 -o convert_rows_probe scripts/convert_rows_probe.cu && ./convert_rows_probe
//
// Kernels (same type in and out: the padding copy of a BF16/F16 or f32 operand):
//   scalar4      the library's form: 4 consecutive elements of one row a thread, loaded one by one,
//                one vector store; blocks of 32 x 8 threads, grid-striding over rows
//   scalar4x4    the same, 4 rows a thread per pass (all loads, then the stores)
//   vec16xR      16 bytes of a destination row a thread: the two aligned 16-byte chunks of the
//                source that hold them, loaded as vectors and funnel-shifted into place; R rows a
//                thread per pass; edges (chunks leaving the source) element by element
//   memcpy2d     cudaMemcpy2DAsync, device to device
// Each is checked byte for byte against memcpy2d's copy. Times: median of 15 launches, each
// between its own CUDA events, after 5 warm-ups.
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

// Stores the first `count` of the four values v at `to`: one 8- or 16-byte store where all four
// are there (`to` is then aligned: the destination's rows are padded to 16 bytes).
template <typename T>
__device__ __forceinline__ void store4(T* to, const T (&v)[4], uint32_t count) {
  if (count == 4) {
    if (sizeof(T) == 2) {
      uint32_t w0 = (uint32_t)v[0] | (uint32_t)v[1] << 16, w1 = (uint32_t)v[2] | (uint32_t)v[3] << 16;
      *(uint2*)to = make_uint2(w0, w1);
    } else {
      *(uint4*)to = make_uint4(v[0], v[1], v[2], v[3]);
    }
  } else {
    for (uint32_t e = 0; e < count; e++) to[e] = v[e];
  }
}

template <typename T>
__global__ void scalar4(const T* src, T* dst, uint32_t rows, uint32_t cols, uint32_t sld, uint32_t dld) {
  uint32_t c = blockIdx.x * 128 + 4 * threadIdx.x;
  if (c >= cols) return;
  uint32_t count = min(cols - c, 4u);
  for (uint32_t r = blockIdx.y * 8 + threadIdx.y; r < rows; r += gridDim.y * 8) {
    const T* from = src + (size_t)r * sld + c;
    T* to = dst + (size_t)r * dld + c;
    T v[4] = {0, 0, 0, 0};
    for (uint32_t e = 0; e < 4; e++) if (e < count) v[e] = from[e];
    store4(to, v, count);
  }
}

template <typename T>
__global__ void scalar4x4(const T* src, T* dst, uint32_t rows, uint32_t cols, uint32_t sld, uint32_t dld) {
  uint32_t c = blockIdx.x * 128 + 4 * threadIdx.x;
  if (c >= cols) return;
  uint32_t count = min(cols - c, 4u);
  for (uint32_t r0 = blockIdx.y * 32 + threadIdx.y; r0 < rows; r0 += gridDim.y * 32) {
    T v[4][4];
    #pragma unroll
    for (int i = 0; i < 4; i++) {
      uint32_t r = r0 + 8 * i;
      const T* from = src + (size_t)r * sld + c;
      #pragma unroll
      for (uint32_t e = 0; e < 4; e++) v[i][e] = (r < rows && e < count) ? from[e] : T(0);
    }
    #pragma unroll
    for (int i = 0; i < 4; i++) {
      uint32_t r = r0 + 8 * i;
      if (r >= rows) break;
      store4(dst + (size_t)r * dld + c, v[i], count);
    }
  }
}

// Bytes s .. s + 16 of the 32 bytes lo ++ hi (s a multiple of 2, below 16).
__device__ __forceinline__ uint4 window(uint4 lo, uint4 hi, uint32_t s) {
  uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  uint32_t sh = (s & 3) * 8;
  uint32_t o[4];
  // The word shift is uniform along a row: a switch, so that w stays in registers.
  switch (s >> 2) {
#define WIN(q) case q: _Pragma("unroll") for (int i = 0; i < 4; i++) o[i] = __funnelshift_r(w[q + i], w[q + i + 1], sh); break;
    WIN(0) WIN(1) WIN(2) WIN(3)
#undef WIN
  }
  return make_uint4(o[0], o[1], o[2], o[3]);
}

template <typename T, int R>
__global__ void vec16(const T* src, T* dst, uint32_t rows, uint32_t cols, uint32_t sld, uint32_t dld,
                      const char* src_end) {
  constexpr uint32_t V = 16 / sizeof(T);
  uint32_t c = (blockIdx.x * 32 + threadIdx.x) * V;
  if (c >= cols) return;
  uint32_t count = min(cols - c, V);
  const char* src_begin = (const char*)src;
  for (uint32_t r0 = blockIdx.y * 8 * R + threadIdx.y; r0 < rows; r0 += gridDim.y * 8 * R) {
    uint4 lo[R], hi[R];
    uint32_t s[R];
    bool fast[R];
    #pragma unroll
    for (int i = 0; i < R; i++) {
      uint32_t r = r0 + 8 * i;
      const char* from = (const char*)(src + (size_t)r * sld + c);
      const char* base = (const char*)((uintptr_t)from & ~(uintptr_t)15);
      s[i] = (uint32_t)(from - base);
      fast[i] = r < rows && count == V && base >= src_begin && base + (s[i] ? 32 : 16) <= src_end;
      if (fast[i]) {
        lo[i] = *(const uint4*)base;
        hi[i] = s[i] ? *(const uint4*)(base + 16) : lo[i];
      }
    }
    #pragma unroll
    for (int i = 0; i < R; i++) {
      uint32_t r = r0 + 8 * i;
      if (r >= rows) break;
      T* to = dst + (size_t)r * dld + c;
      if (fast[i]) {
        *(uint4*)to = window(lo[i], hi[i], s[i]);
      } else {
        const T* from = src + (size_t)r * sld + c;
        for (uint32_t e = 0; e < count; e++) to[e] = from[e];
      }
    }
  }
}

struct Case { uint32_t rows, cols, esize; const char* what; };

int main() {
  Case cases[] = {
    {3987, 15107, 2, "B of 29x3987x15107"},
    {6358, 11159, 2, "A of 6358x11159x27"},
    {5129, 5108, 2, "B of 47x5129x5108"},
    {7460, 1650, 2, "B of 119x7460x1650 (16-bit)"},
    {7460, 1650, 4, "B of 119x7460x1650 (f32)"},
    {975, 3821, 2, "A of 975x3821x24"},
    {13368, 171, 2, "B of 24x13368x171"},
    {3156, 871, 4, "A of 3156x871x86 (f32)"},
  };
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  printf("%-30s %-12s %9s %9s %s\n", "copy", "kernel", "us", "GB/s", "bytes equal");
  for (auto& k : cases) {
    size_t sld = k.cols, dld = (k.cols * k.esize + 15) / 16 * 16 / k.esize;
    size_t sbytes = ((size_t)(k.rows - 1) * sld + k.cols) * k.esize, dbytes = (size_t)k.rows * dld * k.esize;
    char *src, *ref, *dst;
    // The source starts one element past an allocation's start, as a sub-matrix would.
    CHECK(cudaMalloc(&src, sbytes + 16));
    CHECK(cudaMalloc(&ref, dbytes));
    CHECK(cudaMalloc(&dst, dbytes));
    std::vector<uint8_t> h(sbytes + 16);
    for (size_t i = 0; i < h.size(); i++) h[i] = (uint8_t)(i * 2654435761u >> 13);
    CHECK(cudaMemcpy(src, h.data(), h.size(), cudaMemcpyHostToDevice));
    const char* s = src + k.esize;
    const char* s_end = s + sbytes;
    CHECK(cudaMemset(ref, 0, dbytes));
    CHECK(cudaMemcpy2D(ref, dld * k.esize, s, sld * k.esize, k.cols * k.esize, k.rows, cudaMemcpyDeviceToDevice));
    std::vector<uint8_t> hr(dbytes), hd(dbytes);
    CHECK(cudaMemcpy(hr.data(), ref, dbytes, cudaMemcpyDeviceToHost));
    double moved = 2.0 * k.rows * k.cols * k.esize;
    auto run = [&](const char* name, auto launch) {
      CHECK(cudaMemset(dst, 0, dbytes));
      launch();
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaMemcpy(hd.data(), dst, dbytes, cudaMemcpyDeviceToHost));
      bool equal = true;
      for (uint32_t r = 0; r < k.rows && equal; r++)
        equal = !memcmp(&hd[r * dld * k.esize], &hr[r * dld * k.esize], k.cols * k.esize);
      for (int i = 0; i < 5; i++) launch();
      std::vector<float> t;
      for (int i = 0; i < 15; i++) {
        CHECK(cudaEventRecord(e0));
        launch();
        CHECK(cudaEventRecord(e1));
        CHECK(cudaEventSynchronize(e1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms);
      }
      std::sort(t.begin(), t.end());
      float us = t[7] * 1000;
      printf("%-30s %-12s %9.2f %9.0f %s\n", k.what, name, us, moved / us / 1e3, equal ? "yes" : "NO");
    };
    // The kernels on elements of T (the copy's element size): 16 / sizeof(T) of them a vec16 thread.
    auto kernels = [&](auto element) {
      using T = decltype(element);
      constexpr uint32_t per_block = 32 * (16 / sizeof(T));
      dim3 block(32, 8);
      uint32_t gy_limit = 65535, gx = (k.cols + per_block - 1) / per_block;
      auto S = (const T*)s; auto D = (T*)dst;
      auto rows = [&](uint32_t per) { return std::min((k.rows + per - 1) / per, gy_limit); };
      run("scalar4", [&] { scalar4<T><<<dim3((k.cols + 127) / 128, rows(8)), block>>>(S, D, k.rows, k.cols, sld, dld); });
      run("scalar4x4", [&] { scalar4x4<T><<<dim3((k.cols + 127) / 128, rows(32)), block>>>(S, D, k.rows, k.cols, sld, dld); });
      run("vec16x1", [&] { vec16<T, 1><<<dim3(gx, rows(8)), block>>>(S, D, k.rows, k.cols, sld, dld, s_end); });
      run("vec16x2", [&] { vec16<T, 2><<<dim3(gx, rows(16)), block>>>(S, D, k.rows, k.cols, sld, dld, s_end); });
      run("vec16x4", [&] { vec16<T, 4><<<dim3(gx, rows(32)), block>>>(S, D, k.rows, k.cols, sld, dld, s_end); });
    };
    if (k.esize == 2) kernels(uint16_t{}); else kernels(uint32_t{});
    run("memcpy2d", [&] {
      CHECK(cudaMemcpy2DAsync(dst, dld * k.esize, s, sld * k.esize, k.cols * k.esize, k.rows, cudaMemcpyDeviceToDevice));
    });
    CHECK(cudaFree(src));
    CHECK(cudaFree(ref));
    CHECK(cudaFree(dst));
  }
  return 0;
}
