// GEMV (m = 1) model for matmul_gemv: the k split inside the block (row groups summed through
// shuffles and shared memory), by columns per block, threads and rows in flight, against cuBLAS
// SGEMM in the same process (docs/matmul.md, "One row of f32"). nvcc -O3 -arch=sm_90a -lcublas.
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cublas_v2.h>
#include <cuda_runtime.h>

template <int C, int T, int U>
__global__ void __launch_bounds__(T) gemv(const float* __restrict__ a, const float* __restrict__ b,
                                          float* __restrict__ out, int k, int n, int k_chunk) {
    constexpr int L = C / 4;
    constexpr int G = T / L;
    int z = blockIdx.z;
    int kb = z * k_chunk, ke = min(k, kb + k_chunk);
    int tid = threadIdx.x, g = tid / L, c = tid % L;
    int col = blockIdx.x * C + c * 4;
    bool inside = col < n;
    float4 acc = make_float4(0, 0, 0, 0);
    for (int kk = kb + g; kk < ke; kk += G * U) {
        float4 r[U];
        float x[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int row = kk + u * G;
            if (row < ke && inside) {
                r[u] = __ldg(reinterpret_cast<const float4*>(b + (size_t)row * n + col));
                x[u] = __ldg(a + row);
            } else {
                r[u] = make_float4(0, 0, 0, 0);
                x[u] = 0;
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            acc.x = fmaf(x[u], r[u].x, acc.x);
            acc.y = fmaf(x[u], r[u].y, acc.y);
            acc.z = fmaf(x[u], r[u].z, acc.z);
            acc.w = fmaf(x[u], r[u].w, acc.w);
        }
    }
    for (int off = L; off < 32; off <<= 1) {
        acc.x += __shfl_xor_sync(~0u, acc.x, off);
        acc.y += __shfl_xor_sync(~0u, acc.y, off);
        acc.z += __shfl_xor_sync(~0u, acc.z, off);
        acc.w += __shfl_xor_sync(~0u, acc.w, off);
    }
    __shared__ float4 part[T / 32][L < 32 ? L : 32];
    int lane = tid % 32, warp = tid / 32;
    if (L >= 32) {
        part[warp][lane] = acc;
    } else if (lane < L) {
        part[warp][lane] = acc;
    }
    __syncthreads();
    constexpr int LW = L < 32 ? L : 32;           // lanes per warp holding distinct columns
    constexpr int GW = L < 32 ? T / 32 : T / L;   // partials per column
    if (tid < L) {
        // column group tid: in warps w with (w*32 + lane) % L == tid
        float4 s = make_float4(0, 0, 0, 0);
        if (L < 32) {
            for (int w = 0; w < T / 32; w++) { float4 p = part[w][tid]; s.x += p.x; s.y += p.y; s.z += p.z; s.w += p.w; }
        } else {
            for (int w = tid / 32; w < T / 32; w += L / 32) { float4 p = part[w][tid % 32]; s.x += p.x; s.y += p.y; s.z += p.z; s.w += p.w; }
        }
        if (inside) *reinterpret_cast<float4*>(out + (size_t)z * n + col) = s;
    }
    (void)LW; (void)GW;
}

__global__ void reduce(const float* __restrict__ part, float* __restrict__ out, int n, int s) {
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (i >= n) return;
    float4 acc = make_float4(0, 0, 0, 0);
    for (int z = 0; z < s; z++) {
        float4 p = *reinterpret_cast<const float4*>(part + (size_t)z * n + i);
        acc.x += p.x; acc.y += p.y; acc.z += p.z; acc.w += p.w;
    }
    *reinterpret_cast<float4*>(out + i) = acc;
}

static float median(std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

template <int C, int T, int U>
void run(const char* name, const float* a, const float* b, float* part, float* out, int k, int n, int s,
         const std::vector<double>& ref) {
    int chunk = ((k + s - 1) / s + 3) / 4 * 4;
    int splits = (k + chunk - 1) / chunk;
    dim3 grid((n + C - 1) / C, 1, splits);
    auto launch = [&]() {
        if (splits == 1) {
            gemv<C, T, U><<<grid, T>>>(a, b, out, k, n, chunk);
        } else {
            gemv<C, T, U><<<grid, T>>>(a, b, part, k, n, chunk);
            reduce<<<(n / 4 + 255) / 256, 256>>>(part, out, n, splits);
        }
    };
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0); cudaEventCreate(&e1);
    for (int i = 0; i < 3; i++) launch();
    std::vector<float> t;
    for (int i = 0; i < 20; i++) {
        cudaEventRecord(e0); launch(); cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms);
    }
    std::vector<float> h(n);
    cudaMemcpy(h.data(), out, n * 4, cudaMemcpyDeviceToHost);
    double err = 0;
    for (int j = 0; j < n; j++) err = std::max(err, std::abs(h[j] - ref[j]) / (std::abs(ref[j]) + 1.0));
    printf("  %-22s splits %3d blocks %6d: %.4f ms  err %.1e\n", name, splits, grid.x * grid.z, median(t), err);
}

int main() {
    int shapes[][2] = {{4096, 4096}, {4096, 14336}, {14336, 4096}, {8192, 28672}, {4096, 1024}, {1024, 4096}};
    cublasHandle_t h; cublasCreate(&h);
    for (auto& sh : shapes) {
        int k = sh[0], n = sh[1];
        std::vector<float> ha(k), hb((size_t)k * n);
        unsigned x = 12345;
        auto rnd = [&]() { x = x * 1664525u + 1013904223u; return (float)((x >> 8) & 0xffff) / 65536.0f - 0.5f; };
        for (auto& v : ha) v = rnd();
        for (auto& v : hb) v = rnd();
        std::vector<double> ref(n, 0.0);
        for (int r = 0; r < k; r++) for (int j = 0; j < n; j++) ref[j] += (double)ha[r] * hb[(size_t)r * n + j];
        float *a, *b, *part, *out;
        cudaMalloc(&a, k * 4); cudaMalloc(&b, (size_t)k * n * 4); cudaMalloc(&part, (size_t)64 * n * 4); cudaMalloc(&out, n * 4);
        cudaMemcpy(a, ha.data(), k * 4, cudaMemcpyHostToDevice);
        cudaMemcpy(b, hb.data(), (size_t)k * n * 4, cudaMemcpyHostToDevice);
        printf("1 x %d x %d\n", k, n);
        {
            float one = 1, zero = 0;
            auto launch = [&]() { cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, 1, k, &one, b, n, a, k, &zero, out, n); };
            cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
            for (int i = 0; i < 3; i++) launch();
            std::vector<float> t;
            for (int i = 0; i < 20; i++) { cudaEventRecord(e0); launch(); cudaEventRecord(e1); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); t.push_back(ms); }
            printf("  %-22s                      : %.4f ms\n", "cublasSgemm", median(t));
        }
        for (int s : {1, 2, 4, 8}) {
            run<32, 512, 4>("C32 T512 U4", a, b, part, out, k, n, s, ref);
            run<32, 512, 8>("C32 T512 U8", a, b, part, out, k, n, s, ref);
            run<32, 1024, 4>("C32 T1024 U4", a, b, part, out, k, n, s, ref);
            run<32, 256, 8>("C32 T256 U8", a, b, part, out, k, n, s, ref);
            run<64, 512, 4>("C64 T512 U4", a, b, part, out, k, n, s, ref);
            run<64, 512, 8>("C64 T512 U8", a, b, part, out, k, n, s, ref);
            run<128, 512, 4>("C128 T512 U4", a, b, part, out, k, n, s, ref);
            run<128, 1024, 4>("C128 T1024 U4", a, b, part, out, k, n, s, ref);
            run<16, 512, 8>("C16 T512 U8", a, b, part, out, k, n, s, ref);
        }
        cudaFree(a); cudaFree(b); cudaFree(part); cudaFree(out);
    }
    return 0;
}
