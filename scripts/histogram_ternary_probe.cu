// histogram_ternary_probe.cu: probe of one-pass histograms of up to 2^20 bins in base-3 counters
// (19 trits to a 32-bit shared word: 2^20 bins in 216 KiB, one block per SM) on an H200 (sm_90a).
// Build: nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/ht scripts/histogram_ternary_probe.cu
//
// A bin's trit takes 3^d added to its word (d = bin % 19); the atomic returns the word before the
// add, and the add carried out of the trit where the trit plus the increment reached 3. The test
// needs no division: trit d is 2 exactly where the fraction of word / 3^(d+1) is at least 2/3,
// read from the top 32 bits of word * ceil(2^64 / 3^(d+1)) mod 2^64 (a multiply-high and a
// multiply-add; `check` verifies it on every 32-bit word, every trit and both increments).
// A carry counts 3 in the counter's pair of slots of the block's table (1,024 slots, a key and a
// count, claimed by a compare-and-swap; where both are held by other counters, in the global
// count) and is taken back from the trit above with a shared atomic; with HOT, a counter that
// holds a slot adds its values there, in 32 bits, instead of to its trit. Exactness under
// every interleaving: every atomic's effect on the word's 19 trits is a function of the word it
// returned, so the lane that made it knows it; a count is its final trit plus, over the atomics
// on its word, what each was meant to add minus what it changed in the trit. Where an add or its
// take-back did more than the common carry (a carry into a full trit, a take-back that borrowed,
// a wrap of the word), the lane sends the difference to the global counts.
// Each block stores its words; a second kernel sums the blocks' trits into the counts.
//
// n = 2^26 int32 values (each already a bin in [0, bins) for uniform/zipf(1.1)/constant), bins in
// {524288, 1048576}; merged (lanes of lane 0's bin add as one) and plain adds, each with and without
// HOT; median of 10 CUDA-event timings after a warm-up, counts checked exactly against the CPU.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>
#include <algorithm>
#include <string>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

static constexpr int PER = 19;            // trits per word
static constexpr int SLOTS = 1024;        // carry table slots
static constexpr uint32_t NOBIN = 0xffffffffu;
static constexpr uint32_t THR1 = 2863311528u;  // fraction >= 2/3: trit 2 (an add of 1 carries)
static constexpr uint32_t THR2 = 1431655763u;  // fraction >= 1/3: trit >= 1 (an add of 2 carries)
static constexpr uint32_t WRAP = 3520126318u;   // 2^32 - 2 * 3^18: no add of at most 2 * 3^18 wraps below it

struct Pow { uint32_t pow, rlo, rhi, pad; };
__constant__ Pow c_pow[PER + 1];

static uint32_t words_for(uint32_t bins) { return (bins + PER - 1) / PER; }
static size_t smem_for(uint32_t bins) { return (size_t)words_for(bins) * 4 + 2 * SLOTS * 4 + (PER + 1) * 16; }

__device__ __forceinline__ uint32_t frac_hi(uint32_t w, uint32_t rlo, uint32_t rhi) { return __umulhi(w, rlo) + w * rhi; }

// ---------------------------------------------------------------- exhaustive test of the carry test
__global__ void check(unsigned long long* bad) {
  unsigned long long local = 0;
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t w64 = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; w64 < (1ull << 32); w64 += stride) {
    uint32_t w = (uint32_t)w64, x = w;
#pragma unroll
    for (int d = 0; d < PER; d++) {
      uint32_t t = x % 3;
      x /= 3;
      uint32_t f = frac_hi(w, c_pow[d].rlo, c_pow[d].rhi);
      local += ((f >= THR1) != (t == 2)) + ((f >= THR2) != (t >= 1));
    }
  }
  if (local) atomicAdd(bad, local);
}

// ---------------------------------------------------------------- the counting kernel
__device__ __forceinline__ uint32_t slot_of(uint32_t counter) { return (counter * 0x9E3779B1u) >> (32 - 10); }

// Every trit's change by an add of r to trit j (old -> nw) and its take-back (old2 -> nw2, both
// zero where it made none), against what they were meant to add (r to trit j, of which the table
// or the global count already took 3 where it carried): the rare corrections, to the global counts.
__device__ __noinline__ void correct_all(uint32_t* counts, uint32_t nbins, uint32_t first, uint32_t j, uint32_t r,
                                         bool carried, uint32_t old, uint32_t nw, uint32_t old2, uint32_t nw2) {
  uint32_t a = old, b = nw, c = old2, d = nw2;
  for (uint32_t k = 0; k < PER; k++) {
    int delta = (int)(b % 3) - (int)(a % 3) + (int)(d % 3) - (int)(c % 3);
    int corr = (k == j ? (int)r - (carried ? 3 : 0) : 0) - delta;
    if (corr != 0 && first + k < nbins) atomicAdd(&counts[first + k], (uint32_t)corr);
    a /= 3; b /= 3; c /= 3; d /= 3;
  }
}

// The rare path: the lane's merged count had q whole threes, and/or its add of r to trit j of
// its word carried (or wrapped the word, which only pending take-backs of the top trit's carries
// can bring near 2^32). A carry (3 counts) and the threes go to the counter's pair of slots of
// the table of hot counters, claimed here if one is free, else to the global count.
__device__ __forceinline__ void settle(uint32_t* words, uint32_t* keys, uint32_t* tcounts, const Pow* pw,
                                       uint32_t* counts, uint32_t nbins, uint32_t counter, uint32_t r, uint32_t q,
                                       bool carried, uint32_t old) {
  uint32_t word = counter / PER, j = counter - word * PER;
  uint32_t units = q + (carried ? 1 : 0);
  if (units) {
    uint32_t at = slot_of(counter) & ~1u;
    uint32_t k0 = keys[at], k1 = keys[at + 1];
    if (k0 != counter + 1 && k1 != counter + 1) {
      if (k0 == 0) k0 = atomicCAS(&keys[at], 0u, counter + 1), k0 = k0 == 0 ? counter + 1 : k0;
      if (k0 != counter + 1 && k1 == 0) k1 = atomicCAS(&keys[at + 1], 0u, counter + 1), k1 = k1 == 0 ? counter + 1 : k1;
    }
    if (k0 == counter + 1) atomicAdd(&tcounts[at], 3 * units);
    else if (k1 == counter + 1) atomicAdd(&tcounts[at + 1], 3 * units);
    else atomicAdd(&counts[counter], 3 * units);
  }
  uint32_t nw = old + r * pw[j].pow;
  bool wrap = nw < old;
  if (!carried && !wrap) return;
  uint32_t old2 = 0, nw2 = 0;
  bool simple = !wrap;
  if (carried) {
    Pow e = pw[j + 1];
    old2 = atomicSub(&words[word], e.pow);
    nw2 = old2 - e.pow;
    // the carry went into trit j + 1 below 2 (no further), and its take-back found it at 1 or more
    simple = simple && (j == PER - 1 ? old2 >= e.pow
                                     : frac_hi(old, e.rlo, e.rhi) < THR1 && frac_hi(old2, e.rlo, e.rhi) >= THR2);
  }
  if (!simple) correct_all(counts, nbins, counter - j, j, r, carried, old, nw, old2, nw2);
}

// HOT: a counter whose slot of the table it holds adds there, in 32 bits, without carries.
template <bool AGG, bool HOT>
__global__ void __launch_bounds__(1024, 1) count_trits(const int4* __restrict__ in, uint32_t nvec, uint32_t nbins,
                                                       uint32_t* counts, uint32_t* block_words) {
  extern __shared__ __align__(16) uint32_t sm[];
  uint32_t nwords = (nbins + PER - 1) / PER;
  Pow* pw = reinterpret_cast<Pow*>(sm);
  uint32_t* keys = sm + (PER + 1) * 4;
  uint32_t* tcounts = keys + SLOTS;
  uint32_t* words = tcounts + SLOTS;
  for (uint32_t i = threadIdx.x; i < nwords; i += blockDim.x) words[i] = 0;
  for (uint32_t i = threadIdx.x; i < 2 * SLOTS; i += blockDim.x) keys[i] = 0;
  if (threadIdx.x < PER + 1) pw[threadIdx.x] = c_pow[threadIdx.x];
  __syncthreads();
  uint32_t lane = threadIdx.x & 31;
  uint32_t idle = lane % nwords;  // an idle lane adds 0 to a word of its own

  auto process = [&](int4 x) {
    uint32_t v[4] = {(uint32_t)x.x, (uint32_t)x.y, (uint32_t)x.z, (uint32_t)x.w};
    bool when[4], slow[4], carried[4];
    uint32_t r[4], q[4], old[4], fr[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
      bool valid = v[i] < nbins;
      uint32_t cnt = valid ? 1 : 0;
      if (AGG) {
        uint32_t key = valid ? v[i] : NOBIN;
        uint32_t f = __shfl_sync(0xffffffffu, key, 0);
        uint32_t bal = __ballot_sync(0xffffffffu, key == f);
        bool merged = key == f;
        bool adds = valid && (!merged || lane == 0);
        cnt = adds ? (merged ? __popc(bal) : 1) : 0;
      }
      bool hot = false;
      uint32_t hs = slot_of(v[i]);
      if (HOT) {
        uint2 k2 = *reinterpret_cast<const uint2*>(&keys[hs & ~1u]);
        bool h0 = k2.x == v[i] + 1, h1 = k2.y == v[i] + 1;
        hot = cnt != 0 && (h0 | h1);
        hs = (hs & ~1u) | (h1 ? 1 : 0);
      }
      r[i] = hot ? 0 : cnt % 3;
      q[i] = hot ? 0 : cnt / 3;
      when[i] = r[i] != 0;
      uint32_t b = when[i] ? v[i] : idle * PER;
      uint32_t w = b / PER, j = b - w * PER;
      Pow e = pw[j];
      uint32_t* addr = hot ? &tcounts[hs] : &words[w];
      old[i] = atomicAdd(addr, hot ? cnt : when[i] ? e.pow * r[i] : 0);
      fr[i] = frac_hi(old[i], e.rlo, e.rhi);
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
      carried[i] = when[i] && fr[i] >= (r[i] == 1 ? THR1 : THR2);
      // a word at or above WRAP might wrap past 2^32 (its top part holds pending carries)
      slow[i] = carried[i] || q[i] != 0 || (when[i] && old[i] >= WRAP);
    }
    if (slow[0] | slow[1] | slow[2] | slow[3]) {
#pragma unroll
      for (int i = 0; i < 4; i++)
        if (slow[i]) settle(words, keys, tcounts, pw, counts, nbins, v[i], r[i], q[i], carried[i], old[i]);
    }
  };

  uint32_t stride = gridDim.x * blockDim.x;
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + stride < nvec; i += 2 * stride) {
    int4 a = __ldg(in + i), b = __ldg(in + i + stride);
    process(a);
    process(b);
  }
  // every lane of a warp takes the last step together (idle lanes count nothing)
  {
    int4 a = i < nvec ? __ldg(in + i) : make_int4(-1, -1, -1, -1);
    process(a);
  }
  __syncthreads();
  uint32_t* out = block_words + (size_t)blockIdx.x * nwords;
  for (uint32_t w = threadIdx.x; w < nwords; w += blockDim.x) out[w] = words[w];
  for (uint32_t t = threadIdx.x; t < SLOTS; t += blockDim.x)
    if (keys[t]) atomicAdd(&counts[keys[t] - 1], tcounts[t]);
}

// Sums the trits of word x of every block into the 19 counts of the word (after count_trits on the
// stream: a plain read-modify-write), eight blocks' words in flight.
__global__ void sum_trits(const uint32_t* __restrict__ block_words, uint32_t blocks, uint32_t nwords, uint32_t nbins,
                          uint32_t* counts) {
  uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
  if (w >= nwords) return;
  uint32_t sums[PER];
#pragma unroll
  for (int d = 0; d < PER; d++) sums[d] = 0;
  auto add = [&](uint32_t x) {
#pragma unroll
    for (int d = 0; d < PER; d++) {
      uint32_t q = x / 3;
      sums[d] += x - 3 * q;
      x = q;
    }
  };
  uint32_t b = 0;
  for (; b + 8 <= blocks; b += 8) {
    uint32_t x[8];
#pragma unroll
    for (int i = 0; i < 8; i++) x[i] = block_words[(size_t)(b + i) * nwords + w];
#pragma unroll
    for (int i = 0; i < 8; i++) add(x[i]);
  }
  for (; b < blocks; b++) add(block_words[(size_t)b * nwords + w]);
#pragma unroll
  for (int d = 0; d < PER; d++) {
    uint32_t i = w * PER + d;
    if (i < nbins) counts[i] += sums[d];
  }
}

__global__ void copy_kernel(const int4* __restrict__ a, int4* b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) b[i] = a[i];
}

// ---------------------------------------------------------------- host
static uint64_t rng_state = 0x12345678abcdefull;
static inline uint64_t next_u64() {
  rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
  return rng_state;
}
static inline double next_unit() { return (next_u64() >> 11) * (1.0 / 9007199254740992.0); }

static std::vector<int> make_input(size_t n, uint32_t bins, const std::string& dist) {
  std::vector<int> v(n);
  if (dist == "uniform") {
    for (auto& x : v) x = (int)(next_u64() % bins);
  } else if (dist == "constant") {
    for (auto& x : v) x = (int)(bins / 2);
  } else {
    std::vector<double> cdf(bins);
    double acc = 0;
    for (uint32_t k = 0; k < bins; k++) cdf[k] = (acc += std::pow((double)k + 1, -1.1));
    for (auto& c : cdf) c /= acc;
    for (auto& x : v) x = (int)std::min<size_t>(std::lower_bound(cdf.begin(), cdf.end(), next_unit()) - cdf.begin(), bins - 1);
  }
  return v;
}

int main(int argc, char** argv) {
  int dev = 0, sms = 0;
  CK(cudaSetDevice(dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  Pow hp[PER + 1];
  for (int d = 0; d <= PER; d++) {
    unsigned __int128 p = 1;
    for (int i = 0; i < d; i++) p *= 3;
    unsigned __int128 two64 = (unsigned __int128)1 << 64;
    unsigned __int128 rr = (two64 + p * 3 - 1) / (p * 3);  // ceil(2^64 / 3^(d+1))
    hp[d] = {(uint32_t)p, (uint32_t)rr, (uint32_t)(rr >> 32), 0};
  }
  CK(cudaMemcpyToSymbol(c_pow, hp, sizeof hp));

  unsigned long long* bad;
  CK(cudaMalloc(&bad, 8));
  CK(cudaMemset(bad, 0, 8));
  check<<<sms * 8, 1024>>>(bad);
  unsigned long long hbad = 0;
  CK(cudaMemcpy(&hbad, bad, 8, cudaMemcpyDeviceToHost));
  printf("carry test against exact trits over every 32-bit word, 19 trits, increments 1 and 2: %llu mismatches\n", hbad);

  const size_t n = 1ull << 26;
  int4 *din, *dcopy;
  CK(cudaMalloc(&din, n * 4));
  CK(cudaMalloc(&dcopy, n * 4));
  cudaEvent_t e0, e1, e2;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1)); CK(cudaEventCreate(&e2));
  auto median = [](std::vector<float> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
  // copy ceiling: read + write of the input's bytes
  std::vector<float> ct;
  for (int it = 0; it < 11; it++) {
    CK(cudaEventRecord(e0));
    copy_kernel<<<sms * 8, 512>>>(din, dcopy, n / 4);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms; CK(cudaEventElapsedTime(&ms, e0, e1));
    if (it) ct.push_back(ms);
  }
  double ceil_gbs = 2.0 * n * 4 / (median(ct) * 1e-3) / 1e9;
  printf("copy ceiling %.0f GB/s (read+write, copy of %zu MB in %.3f ms)\n", ceil_gbs, n * 4 >> 20, median(ct));
  printf("%-9s %-9s %-9s %8s %8s %8s %7s %s\n", "bins", "dist", "merge", "total", "count", "sum", "ceil%", "exact");

  uint32_t* counts;
  uint32_t* block_words;
  CK(cudaMalloc(&counts, (1u << 20) * 4));
  CK(cudaMalloc(&block_words, (size_t)sms * words_for(1u << 20) * 4));
  for (uint32_t bins : {524288u, 1048576u}) {
    size_t smem = smem_for(bins);
    CK(cudaFuncSetAttribute(count_trits<true, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaFuncSetAttribute(count_trits<false, false>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaFuncSetAttribute(count_trits<true, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaFuncSetAttribute(count_trits<false, true>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    for (std::string dist : {"uniform", "zipf", "constant"}) {
      auto host = make_input(n, bins, dist);
      std::vector<uint32_t> ref(bins, 0);
      for (int x : host) ref[x]++;
      CK(cudaMemcpy(din, host.data(), n * 4, cudaMemcpyHostToDevice));
      for (int variant = 0; variant < 4; variant++) {
        bool agg = variant % 2 == 0, hot = variant >= 2;
        auto kern = variant == 0 ? count_trits<true, false> : variant == 1 ? count_trits<false, false>
                  : variant == 2 ? count_trits<true, true> : count_trits<false, true>;
        std::vector<float> tt, tc, ts;
        bool exact = true;
        for (int it = 0; it < 11; it++) {
          CK(cudaMemset(counts, 0, bins * 4));
          CK(cudaEventRecord(e0));
          kern<<<sms, 1024, smem>>>(din, n / 4, bins, counts, block_words);
          CK(cudaEventRecord(e1));
          sum_trits<<<(words_for(bins) + 127) / 128, 128>>>(block_words, sms, words_for(bins), bins, counts);
          CK(cudaEventRecord(e2));
          CK(cudaEventSynchronize(e2));
          CK(cudaGetLastError());
          float a, b;
          CK(cudaEventElapsedTime(&a, e0, e1));
          CK(cudaEventElapsedTime(&b, e1, e2));
          if (it) { tt.push_back(a + b); tc.push_back(a); ts.push_back(b); }
          if (it == 0 || it == 10) {
            std::vector<uint32_t> got(bins);
            CK(cudaMemcpy(got.data(), counts, bins * 4, cudaMemcpyDeviceToHost));
            exact = exact && got == ref;
          }
        }
        double t = median(tt);
        double pct = 100.0 * (n * 4 / (t * 1e-3) / 1e9) / ceil_gbs;
        printf("%-9u %-9s %-9s %8.4f %8.4f %8.4f %6.1f%% %s\n", bins, dist.c_str(), hot ? (agg ? "merge+hot" : "plain+hot") : agg ? "merge" : "plain", t, median(tc),
               median(ts), pct, exact ? "yes" : "NO");
        fflush(stdout);
      }
    }
  }
  return 0;
}
