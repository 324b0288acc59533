// histogram_cluster_exchange.cu: probe of a cluster-exchange (DSMEM) histogram on an H200
// (sm_90a), the measurements behind docs/histogram.md's "cluster exchange" paragraph.
// Build: nvcc -O3 -std=c++17 -arch=sm_90a -o /tmp/hx scripts/histogram_cluster_exchange.cu
// n = 2^26 int32 values (each already a bin in [0, bins)), bins in {65536, 262144, 1048576},
// uniform and zipf(1.1) inputs. Variants:
//   remote : every value is an atomicAdd through cg::this_cluster().map_shared_rank() into the
//            owner block's counters (owner = bin % C, local = bin / C). Cluster barrier at start/end.
//   xchg_* : persistent clusters; warps 0..NPW-1 (producers) load tiles of T values, drop the
//            hot bins (< hot) into per-warp shared counters, rank the others by owner into a
//            staging buffer of u16 local indices, and copy each owner's run into the owner's inbox
//            with 16-byte st.shared::cluster.v4 stores; warps NPW.. (consumers) count their block's
//            inbox into its counters with shared atomics. One split cluster barrier per tile
//            (barrier.cluster.arrive.release ... barrier.cluster.wait.acquire), double-buffered
//            inboxes, so sending tile t+1 overlaps counting tile t.
//            ranking: ballot = per-warp multisplit with LOGC ballots + one leader atomic per owner;
//                     match  = __match_any_sync on the owner instead of the ballots;
//                     scan   = per-thread packed u16 digit counters + a block scan (CUB-style).
//   wr_*   : warp-private exchange (k_wr): each producer warp ranks its 32*V values with ballots
//            only (lane d < C holds owner d's running count in a register, lane C+b the count of
//            hot bin b < C, which never leaves the warp), stages them in its own [owner][CAPW]
//            region and sends each owner's run (16-byte DSMEM stores, partial last chunk) with
//            a count header to inbox slot (source rank, source warp) of the owner: no shared
//            atomics, no block barriers on the producer side, one cluster barrier per tile.
//            Slot overflow (>= CAPW) goes to the owner by exact remote atomics (second pass).
//            Consumers: one slot per lane, warp scan of chunk counts -> chunk list -> counting.
//            wr_T<T>_w<NPW>c<NCW>[_nohot]; diag_wr_nocount (consumers count nothing),
//            diag_wr_nosend (rank + stage, empty runs sent), diag_wr_norank (load only).
// Counters: u32 where bins/C*4 <= 128 KiB, else 16-bit pairs in a u32 word with exact wraps.
// Environment: HX_ALL=1 also runs the older xchg_* / remote variants; HX_ONLY=a,b runs only the
// variants whose name contains one of the comma-separated strings.
#include <cuda_runtime.h>
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cmath>
#include <vector>
#include <algorithm>
#include <chrono>
#include <functional>
#include <type_traits>
#include <string>
#include <cstring>
#include <unistd.h>
#include <signal.h>
#include <sched.h>
#include <sys/wait.h>
#include <sys/prctl.h>
#include <sys/mman.h>
namespace cg = cooperative_groups;

#define FULLM 0xffffffffu
#define SENT 0xffffffffu
static constexpr long long NVAL = 1ll << 26;
static constexpr double CEIL_GBS = 4251.0;
__host__ __device__ constexpr int ilog2c(int x) { return x <= 1 ? 0 : 1 + ilog2c(x / 2); }

// ------------------------------------------------------------------ PTX helpers
#define DEV __device__ __forceinline__
DEV unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// shared::cta address -> shared::cluster address of the same offset in block `r` of the cluster
DEV unsigned mapa_u32(unsigned a, unsigned r) {
  unsigned d;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(r));
  return d;
}
DEV void st_cluster_v4(unsigned a, uint4 v) {
  asm volatile("st.shared::cluster.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
DEV void st_cluster_u32(unsigned a, unsigned v) { asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory"); }
// split cluster barrier: every thread of every block arrives once and waits once per phase.
// Called only where whole warps are present; __syncwarp() makes the .aligned forms safe.
DEV void cluster_arrive() { __syncwarp(); asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
DEV void cluster_wait() { __syncwarp(); asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }
// named barrier among the producer warps only (barrier 0 is __syncthreads)
DEV void bar_sync(unsigned id, unsigned n) { __syncwarp(); asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
DEV unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
DEV unsigned lanemask_lt() {
  unsigned m;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
  return m;
}

// ------------------------------------------------------------------ exact counter adds
// Packed: word w holds local bins 2w (low half) and 2w+1 (high half), 16 bits each, all updates
// are atomic adds mod 2^32 with return. A low-half add that sees 0xFFFF wrapped: +65536 to its
// global bin; it also carried +1 into the high half, which is taken back with an add of
// 0xFFFF0000. The high half's true count = final half + 65536 * (forward wraps - backward wraps),
// where a forward wrap is any +1 to it that saw 0xFFFF (a real add or the carry) and a backward
// wrap is a take-back that saw 0. Every op sees its own old value, so this is exact under any
// interleaving. Global counters are u32 mod 2^32, so a transient -65536 is harmless.
__device__ __noinline__ void wrap_fix(unsigned* w, unsigned old, unsigned l, unsigned* g, unsigned C, unsigned r) {
  atomicAdd(g + l * C + r, 65536u);
  if ((l & 1u) == 0u) {
    if ((old >> 16) == 0xffffu) atomicAdd(g + (l + 1) * C + r, 65536u);
    const unsigned o2 = atomicAdd(w, 0xffff0000u);
    if ((o2 >> 16) == 0u) atomicAdd(g + (l + 1) * C + r, 0xffff0000u);
  }
}
// this thread's V values of the tile starting at value `base`: 16-byte vectors NPT threads
// apart, values at or past n read as -1 (outside every bin range: skipped)
template <int V, int NPT>
DEV void load_tile(unsigned (&val)[V], const int* __restrict__ in, long long n, long long base, int pt) {
#pragma unroll
  for (int q = 0; q < V / 4; q++) {
    const long long idx = base + ((long long)q * NPT + pt) * 4;
    int4 x;
    if (idx + 3 < n) {
      x = __ldcs(reinterpret_cast<const int4*>(in + idx));
    } else {
      x.x = idx < n ? in[idx] : -1, x.y = idx + 1 < n ? in[idx + 1] : -1;
      x.z = idx + 2 < n ? in[idx + 2] : -1, x.w = idx + 3 < n ? in[idx + 3] : -1;
    }
    val[4 * q] = x.x, val[4 * q + 1] = x.y, val[4 * q + 2] = x.z, val[4 * q + 3] = x.w;
  }
}
// zeroes the first `bytes` (a multiple of 16) of the block's shared memory
DEV void zero_shared(unsigned char* sm, int bytes, int tid, int nt) {
  uint4* z = reinterpret_cast<uint4*>(sm);
  for (int i = tid; i < bytes / 16; i += nt) z[i] = make_uint4(0u, 0u, 0u, 0u);
}
// the consumers' side of the exchange: phase 0 (every block running), then per tile step i the
// inbox of step i-1 counted (when `count`) before arriving, so that producers may refill it;
// the last step's inbox after the last phase
template <class F>
DEV void consumer_phases(int steps, bool count, F consume) {
  cluster_arrive();
  cluster_wait();
  for (int i = 0; i < steps; i++) {
    if (i > 0 && count) consume((i - 1) & 1);
    cluster_arrive();  // phase i+1: done with inbox[(i-1)&1], producers may refill it
    cluster_wait();
  }
  if (count) consume((steps - 1) & 1);
}

// add 1 to local bin l of the counters at c (local shared or a DSMEM pointer); r = owner rank
template <bool PACKED>
DEV void count_add(unsigned* c, unsigned l, unsigned* g, unsigned C, unsigned r) {
  if constexpr (!PACKED) {
    atomicAdd(c + l, 1u);
  } else {
    const unsigned sh = (l & 1u) << 4;
    const unsigned old = atomicAdd(c + (l >> 1), 1u << sh);
    if ((~old & (0xffffu << sh)) == 0u) wrap_fix(c + (l >> 1), old, l, g, C, r);
  }
}
// each block adds its non-zero counters to the global histogram (bin = local * C + rank)
template <bool PACKED>
DEV void flush_counters(const unsigned* cw, int nwords, unsigned* g, unsigned C, unsigned rank, int tid, int nt) {
  for (int w = tid; w < nwords; w += nt) {
    const unsigned x = cw[w];
    if constexpr (!PACKED) {
      if (x) atomicAdd(g + (unsigned)w * C + rank, x);
    } else {
      if (x & 0xffffu) atomicAdd(g + (2u * w) * C + rank, x & 0xffffu);
      if (x >> 16) atomicAdd(g + (2u * w + 1u) * C + rank, x >> 16);
    }
  }
}

// ------------------------------------------------------------------ baseline: remote atomics
template <int C_, bool P_>
struct RCfg {
  static constexpr int C = C_, NT = 1024;
  static constexpr bool PACKED = P_;
  static size_t smem(int bins) { return (size_t)(bins / C) * (P_ ? 2 : 4); }
};

template <class X>
__global__ void __launch_bounds__(1024, 1)
    k_remote(const int* __restrict__ in, long long n, unsigned* __restrict__ g, int bins, int hot,
             int steps) {
  constexpr int C = X::C, LOGC = ilog2c(C);
  extern __shared__ __align__(16) unsigned char sm[];
  unsigned* cw = reinterpret_cast<unsigned*>(sm);
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const int nwords = X::PACKED ? bins / C / 2 : bins / C;
  for (int i = threadIdx.x; i < nwords; i += blockDim.x) cw[i] = 0;
  cluster.sync();
  const long long n4 = n / 4, stride = (long long)gridDim.x * blockDim.x;
  const long long t0 = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (long long i = t0; i < n4; i += stride) {
    const int4 q = __ldcs(reinterpret_cast<const int4*>(in) + i);
    const unsigned v[4] = {(unsigned)q.x, (unsigned)q.y, (unsigned)q.z, (unsigned)q.w};
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const unsigned o = v[k] & (C - 1);
      count_add<X::PACKED>(cluster.map_shared_rank(cw, o), v[k] >> LOGC, g, C, o);
    }
  }
  for (long long i = n4 * 4 + t0; i < n; i += stride) {
    const unsigned v = (unsigned)in[i], o = v & (C - 1);
    count_add<X::PACKED>(cluster.map_shared_rank(cw, o), v >> LOGC, g, C, o);
  }
  cluster.sync();
  flush_counters<X::PACKED>(cw, nwords, g, C, rank, threadIdx.x, blockDim.x);
}

// ------------------------------------------------------------------ cluster exchange
// C blocks per cluster, V values per producer thread per tile, NPW producer warps, NCW consumer
// warps, inbox slot capacity CAP = (T/C) * CAPQ/4 (rounded to 8), RANK 0 ballot, 1 match, 2 scan.
template <int C_, int V_, int NPW_, int NCW_, int CAPQ_, bool PACKED_, int RANK_>
struct XCfg {
  static constexpr int C = C_, V = V_, NPW = NPW_, NCW = NCW_, RANK = RANK_;
  static constexpr bool PACKED = PACKED_;
  static constexpr int NPT = NPW * 32, NCT = NCW * 32, NT = NPT + NCT, T = NPT * V;
  static constexpr int CAP = ((T / C) * CAPQ_ / 4 + 7) / 8 * 8, CAPX = CAP + 8;
  static constexpr int R = C / 2;                              // rows of packed rank counters
  static constexpr int SSZ = RANK == 2 ? T : C * CAP;          // staging u16 entries per buffer
  static constexpr int O_INBOX = 0;                            // [2][C][CAPX] u16
  static constexpr int O_HDR = O_INBOX + 2 * C * CAPX * 2;     // [2][C] u32: lo << 16 | count
  static constexpr int O_STG = O_HDR + 2 * C * 4;              // [2][SSZ] u16
  static constexpr int O_OCNT = O_STG + 2 * SSZ * 2;           // ballot: [3][C]; scan: [2][C+1]
  static constexpr int O_WT = O_OCNT + (4 * C + 8) * 4;        // [32] warp totals (scan)
  static constexpr int O_HOT = O_WT + 32 * 4;                  // [NPW][32] hot-bin counters
  static constexpr int O_CNTR = O_HOT + NPW * 32 * 4;          // scan: [R][NPT] packed u16 pairs
  static constexpr int O_CNT = O_CNTR + (RANK == 2 ? R * NPT * 4 : 0);  // the block's counters
  static size_t smem(int bins) { return (size_t)O_CNT + (size_t)(bins / C) * (PACKED ? 2 : 4); }
  static_assert(C == 8 || C == 16, "C");
  static_assert(NPW >= C && NPW % C == 0 && NPW <= 32, "one send job per producer warp");
  static_assert(V % 4 == 0 && V <= 16, "V");
  static_assert((NPT & (NPT - 1)) == 0, "NPT power of two (scan)");
  static_assert(T < 65536, "16-bit packed scan");
  static_assert(O_CNT % 16 == 0 && O_STG % 16 == 0 && O_CNTR % 16 == 0, "alignment");
};

template <class X>
__global__ void __launch_bounds__(X::NT, 1)
    k_xchg(const int* __restrict__ in, long long n, unsigned* __restrict__ g, int bins, int hotmode,
           int steps) {
  constexpr int C = X::C, V = X::V, NPW = X::NPW, NPT = X::NPT, NCT = X::NCT, NT = X::NT;
  constexpr int T = X::T, CAP = X::CAP, CAPX = X::CAPX, R = X::R;
  constexpr int LOGC = ilog2c(C), LOGR = ilog2c(R);
  constexpr bool PK = X::PACKED;
  extern __shared__ __align__(16) unsigned char sm[];
  unsigned short* inbox = reinterpret_cast<unsigned short*>(sm + X::O_INBOX);
  unsigned* hdr = reinterpret_cast<unsigned*>(sm + X::O_HDR);
  unsigned short* stg = reinterpret_cast<unsigned short*>(sm + X::O_STG);
  unsigned* ocnt = reinterpret_cast<unsigned*>(sm + X::O_OCNT);
  unsigned* wt = reinterpret_cast<unsigned*>(sm + X::O_WT);
  unsigned* hotT = reinterpret_cast<unsigned*>(sm + X::O_HOT);
  unsigned* cntr = reinterpret_cast<unsigned*>(sm + X::O_CNTR);
  unsigned* cw = reinterpret_cast<unsigned*>(sm + X::O_CNT);
  cg::cluster_group cluster = cg::this_cluster();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned rank = cluster_rank();
  const int nwords = PK ? bins / C / 2 : bins / C;
  const int G = gridDim.x;
  // hotmode: bins below (hotmode & 255) are counted by the producers; diagnostic mode bits
  // (hotmode >> 8, results then wrong): 1 = consumers count nothing, 2 = producers rank nothing
  const int hot = hotmode & 255, mode = hotmode >> 8;
  zero_shared(sm, X::O_CNT + nwords * 4, tid, NT);
  __syncthreads();

  if (warp < NPW) {
    // ================================================================ producers
    const int pt = tid;
    unsigned* hw = hotT + warp * 32;
    const unsigned ltm = lanemask_lt();
    unsigned val[V];
    // tile i of this block: values [(i*G + blockIdx.x) * T, +T); outside n -> SENT (skipped)
    auto load = [&](int i) { load_tile<V, NPT>(val, in, n, ((long long)i * G + blockIdx.x) * (long long)T, pt); };
    // rare path: a run longer than the inbox slot goes straight to the owner's counters
    auto remote_add = [&](unsigned r, unsigned l) {
      count_add<PK>(cluster.map_shared_rank(cw, r), l, g, C, r);
    };
    auto partition = [&](int q) {
      const int b = q & 1;
      if (mode & 2) {  // diagnostic: keep the loads alive, send empty runs
        unsigned x = 0;
#pragma unroll
        for (int k = 0; k < V; k++) x ^= val[k];
        if (x == 0x9e3779b9u) hw[0]++;
        return;
      }
      if constexpr (X::RANK != 2) {
        // ---- ballot / match multisplit: owner runs at stg[b][owner*CAP ...], counts ocnt[q%3][]
        unsigned* oc = ocnt + (q % 3) * C;
        if (pt < C) ocnt[((q + 1) % 3) * C + pt] = 0;  // ring of 3: last read by send(q-2)
        unsigned short* sg = stg + b * X::SSZ;
#pragma unroll
        for (int k = 0; k < V; k++) {
          const unsigned v = val[k];
          if (v < (unsigned)hot) atomicAdd(&hw[v], 1u);
          const bool ok = v >= (unsigned)hot && v < (unsigned)bins;
          const unsigned ow = v & (C - 1);
          unsigned peers;
          if constexpr (X::RANK == 1) {
            peers = __match_any_sync(FULLM, ok ? ow : 0xffffffffu);
          } else {
            peers = __ballot_sync(FULLM, ok);
#pragma unroll
            for (int bit = 0; bit < LOGC; bit++) {
              const bool p = (ow >> bit) & 1u;
              const unsigned bb = __ballot_sync(FULLM, p);
              peers &= p ? bb : ~bb;
            }
          }
          const unsigned rk = __popc(peers & ltm);
          unsigned base = 0;
          if (ok && rk == 0) base = atomicAdd(&oc[ow], (unsigned)__popc(peers));
          base = __shfl_sync(FULLM, base, __ffs(peers) - 1);
          if (ok) {
            const unsigned pos = base + rk;
            if (pos < (unsigned)CAP) sg[ow * CAP + pos] = (unsigned short)(v >> LOGC);
            else remote_add(ow, v >> LOGC);
          }
        }
      } else {
        // ---- scan ranker: digit counters cntr[row][pt] (row = d % R, half = d / R), packed u16
        unsigned short* sg = stg + b * T;
        unsigned* ss = ocnt + b * (C + 1);  // digit starts in the sorted tile, ss[C] = total
#pragma unroll
        for (int k = 0; k < V; k++) {
          unsigned v = val[k];
          if (v < (unsigned)hot) atomicAdd(&hw[v], 1u), v = SENT;
          if (v < (unsigned)bins) {
            const unsigned d = v & (C - 1), sh = (d >> LOGR) << 4;
            unsigned* p = cntr + (d & (R - 1)) * NPT + pt;
            const unsigned o = *p;
            *p = o + (1u << sh);
            val[k] = (((o >> sh) & 0xffu) << 24) | v;  // rank within thread < V, v < 2^24
          } else val[k] = SENT;
        }
        bar_sync(1, NPT);
        {
          // exclusive scan over the linear order (row, thread): thread pt owns [pt*R, pt*R+R)
          unsigned w[R];
          const uint4* src = reinterpret_cast<const uint4*>(cntr + pt * R);
#pragma unroll
          for (int j = 0; j < R / 4; j++) {
            const uint4 x = src[j];
            w[4 * j] = x.x, w[4 * j + 1] = x.y, w[4 * j + 2] = x.z, w[4 * j + 3] = x.w;
          }
          unsigned run = 0;
#pragma unroll
          for (int j = 0; j < R; j++) {
            const unsigned x = w[j];
            w[j] = run, run += x;
          }
          unsigned inc = run;
#pragma unroll
          for (int o = 1; o < 32; o <<= 1) {
            const unsigned y = __shfl_up_sync(FULLM, inc, o);
            if (lane >= o) inc += y;
          }
          if (lane == 31) wt[warp] = inc;
          bar_sync(1, NPT);
          unsigned ws = lane < NPW ? wt[lane] : 0u;
#pragma unroll
          for (int o = 1; o < 32; o <<= 1) {
            const unsigned y = __shfl_up_sync(FULLM, ws, o);
            if (lane >= o) ws += y;
          }
          unsigned wpre = __shfl_sync(FULLM, ws, (warp + 31) & 31);
          if (warp == 0) wpre = 0;
          const unsigned tot = __shfl_sync(FULLM, ws, NPW - 1);
          // high halves (digits R..C-1) follow all low-half digits: add the low total to them
          const unsigned add = wpre + (inc - run) + ((tot & 0xffffu) << 16);
          uint4* dst = reinterpret_cast<uint4*>(cntr + pt * R);
#pragma unroll
          for (int j = 0; j < R / 4; j++)
            dst[j] = make_uint4(w[4 * j] + add, w[4 * j + 1] + add, w[4 * j + 2] + add,
                                w[4 * j + 3] + add);
          if (((pt * R) & (NPT - 1)) == 0) {
            const int row = pt * R / NPT;
            ss[row] = (w[0] + add) & 0xffffu;
            ss[row + R] = (w[0] + add) >> 16;
          }
          if (pt == 0) ss[C] = (tot & 0xffffu) + (tot >> 16);
        }
        bar_sync(1, NPT);
#pragma unroll
        for (int k = 0; k < V; k++) {
          const unsigned x = val[k];
          if (x != SENT) {
            const unsigned v = x & 0xffffffu, d = v & (C - 1), sh = (d >> LOGR) << 4;
            const unsigned pre = (cntr[(d & (R - 1)) * NPT + pt] >> sh) & 0xffffu;
            sg[pre + (x >> 24)] = (unsigned short)(v >> LOGC);
          }
        }
        // only this thread reads its column after the scan: clear it for the next tile
#pragma unroll
        for (int j = 0; j < R; j++) cntr[j * NPT + pt] = 0;
      }
    };
    // one job per producer warp: owner r = warp % C, chunk part = warp / C
    auto send = [&](int q) {
      constexpr int PARTS = NPW / C;
      const int b = q & 1;
      const unsigned short* sg = stg + b * X::SSZ;
      const unsigned r = warp & (C - 1), part = warp >> LOGC;
      unsigned st, nr;
      if constexpr (X::RANK == 2) {
        st = ocnt[b * (C + 1) + r];
        nr = ocnt[b * (C + 1) + r + 1] - st;
      } else {
        st = r * CAP;
        nr = min(ocnt[(q % 3) * C + r], (unsigned)CAP);  // beyond CAP went to remote_add
      }
      const unsigned m = min(nr, (unsigned)CAP), lo = st & 7u, nch = (lo + m + 7) >> 3;
      const uint4* src = reinterpret_cast<const uint4*>(sg + (st & ~7u));
      const unsigned dst = mapa_u32(smem_addr(inbox + (b * C + rank) * CAPX), r);
      for (unsigned c = part * 32 + lane; c < nch; c += PARTS * 32) st_cluster_v4(dst + c * 16, src[c]);
      if (part == 0 && lane == 0)
        st_cluster_u32(mapa_u32(smem_addr(hdr + b * C + rank), r), (lo << 16) | m);
      if constexpr (X::RANK == 2) {
        for (unsigned e = st + CAP + part * 32 + lane; e < st + nr; e += PARTS * 32)
          remote_add(r, sg[e]);
      }
    };
    load(0);
    cluster_arrive();  // phase 0: every block of the cluster is running and zeroed (before any
    cluster_wait();    // DSMEM access, including partition's rare remote adds)
    partition(0);
    load(1);
    bar_sync(1, NPT);
    for (int i = 0; i < steps; i++) {
      send(i);  // inbox[i&1] of every owner: its consumers finished tile i-2 before phase i
      cluster_arrive();  // phase i+1: my tile-i runs are in place
      if (i + 1 < steps) {
        partition(i + 1);
        load(i + 2);
      }
      bar_sync(1, NPT);
      cluster_wait();
    }
  } else {
    // ================================================================ consumers
    const int ct = tid - NPT;
    auto consume = [&](int b) {
      const unsigned h0 = hdr[b * C + (lane & (C - 1))];
      const unsigned mc = __reduce_max_sync(FULLM, ((h0 >> 16) + (h0 & 0xffffu) + 7u) >> 3);
      const int lim = C * (int)mc;
      for (int j = ct; j < lim; j += NCT) {
        const int s = j & (C - 1), c = j >> LOGC;
        const unsigned h = hdr[b * C + s];
        const int lo = (int)(h >> 16), hi = lo + (int)(h & 0xffffu), e0 = c * 8;
        if (e0 >= hi) continue;
        const uint4 x = *reinterpret_cast<const uint4*>(inbox + (b * C + s) * CAPX + e0);
        const unsigned ww[4] = {x.x, x.y, x.z, x.w};
        if (e0 >= lo && e0 + 8 <= hi) {
          if constexpr (!PK) {
#pragma unroll
            for (int k = 0; k < 8; k++) atomicAdd(cw + ((ww[k >> 1] >> ((k & 1) * 16)) & 0xffffu), 1u);
          } else {
            unsigned old[8];
#pragma unroll
            for (int k = 0; k < 8; k++) {
              const unsigned l = (ww[k >> 1] >> ((k & 1) * 16)) & 0xffffu;
              old[k] = atomicAdd(cw + (l >> 1), 1u << ((l & 1u) << 4));
            }
#pragma unroll
            for (int k = 0; k < 8; k++) {
              const unsigned l = (ww[k >> 1] >> ((k & 1) * 16)) & 0xffffu, sh = (l & 1u) << 4;
              if ((~old[k] & (0xffffu << sh)) == 0u) wrap_fix(cw + (l >> 1), old[k], l, g, C, rank);
            }
          }
        } else {
#pragma unroll
          for (int k = 0; k < 8; k++)
            if (e0 + k >= lo && e0 + k < hi)
              count_add<PK>(cw, (ww[k >> 1] >> ((k & 1) * 16)) & 0xffffu, g, C, rank);
        }
      }
    };
    consumer_phases(steps, !(mode & 1), consume);
  }
  __syncthreads();  // all DSMEM traffic into this block ended before the last cluster phase
  flush_counters<PK>(cw, nwords, g, C, rank, tid, NT);
  for (int bn = tid; bn < hot; bn += NT) {
    unsigned s = 0;
    for (int w = 0; w < NPW; w++) s += hotT[w * 32 + bn];
    if (s) atomicAdd(g + bn, s);
  }
}

// ------------------------------------------------------------------ warp-private exchange (wr)
// Every producer warp ranks its own 32*V values of the tile with ballots only (no shared atomics,
// no block barriers) into its own staging region [owner][CAPW] and sends owner d's run to inbox
// slot (source rank, source warp) of block d: inbox [2][S = C*NPW][CAPW] u16 plus a count header
// [2][S] u32 per slot. Lane d (< C) keeps the running count of owner d in a register; with HOT,
// lane C + b keeps the count of hot bin b < C (bins 0..C-1 never leave the producer warp and are
// added to the global histogram at the end). Per value: 1 + HOT + LOGC ballots, E (lane L: the
// lanes whose owner bits equal L % C), 2 shuffles (E and the count of the value's owner), 2 popc.
// A value whose slot is >= CAPW goes straight to its owner's counters (exact remote atomics).
// Consumer warp c handles slots [c*SPW, c*SPW+SPW): lane = slot, a warp scan of the chunk counts
// builds a list of 16-byte chunks (u16: chunk index << 3 | valid-1), then lanes walk the list.
template <int C_, int V_, int NPW_, int NCW_, int CAPW_, bool PACKED_, bool HOT_>
struct WCfg {
  static constexpr int C = C_, V = V_, NPW = NPW_, NCW = NCW_, CAPW = CAPW_, CAP = CAPW_;
  static constexpr bool PACKED = PACKED_, HOT = HOT_;
  static constexpr int NPT = NPW * 32, NCT = NCW * 32, NT = NPT + NCT, T = NPT * V;
  static constexpr int S = C * NPW, SPW = S / NCW, LISTN = (SPW * (CAPW / 8) + 7) / 8 * 8;
  static constexpr int O_INBOX = 0;                          // [2][S][CAPW] u16
  static constexpr int O_HDR = O_INBOX + 2 * S * CAPW * 2;   // [2][S] u32 counts
  static constexpr int O_STG = O_HDR + 2 * S * 4;            // [NPW][C][CAPW] u16
  static constexpr int O_LIST = O_STG + NPW * C * CAPW * 2;  // [NCW][LISTN] u16
  static constexpr int O_CNT = (O_LIST + NCW * LISTN * 2 + 15) / 16 * 16;
  static size_t smem(int bins) { return (size_t)O_CNT + (size_t)(bins / C) * (PACKED ? 2 : 4); }
  static_assert(C == 8 || C == 16, "C");
  static_assert(CAPW % 8 == 0 && CAPW > 0, "CAPW: whole 16-byte chunks");
  static_assert(S % NCW == 0 && SPW <= 32 && SPW >= 1, "one slot per consumer lane");
  static_assert(V % 4 == 0 && V >= 4, "V");
  static_assert(S * (CAPW / 8) <= 8192, "u16 chunk descriptors");
  static_assert(NT <= 1024, "threads");
  static_assert(O_HDR % 16 == 0 && O_STG % 16 == 0 && O_CNT % 16 == 0, "alignment");
};

template <class X>
__global__ void __launch_bounds__(X::NT, 1)
    k_wr(const int* __restrict__ in, long long n, unsigned* __restrict__ g, int bins, int hotmode,
         int steps) {
  constexpr int C = X::C, V = X::V, NPW = X::NPW, NPT = X::NPT, NT = X::NT, T = X::T;
  constexpr int CAPW = X::CAPW, S = X::S, SPW = X::SPW, LOGC = ilog2c(C);
  constexpr unsigned HB = X::HOT ? (unsigned)C : 0u;  // bins below HB stay in the producer warp
  constexpr bool PK = X::PACKED;
  extern __shared__ __align__(16) unsigned char sm[];
  unsigned short* inbox = reinterpret_cast<unsigned short*>(sm + X::O_INBOX);
  unsigned* hdr = reinterpret_cast<unsigned*>(sm + X::O_HDR);
  unsigned short* stg = reinterpret_cast<unsigned short*>(sm + X::O_STG);
  unsigned short* lists = reinterpret_cast<unsigned short*>(sm + X::O_LIST);
  unsigned* cw = reinterpret_cast<unsigned*>(sm + X::O_CNT);
  cg::cluster_group cluster = cg::this_cluster();
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned rank = cluster_rank();
  const int nwords = PK ? bins / C / 2 : bins / C;
  const int G = gridDim.x;
  // diagnostic mode bits (hotmode >> 8, results then wrong): 1 = consumers count nothing,
  // 2 = producers rank nothing (send empty runs), 4 = producers rank but send empty runs
  const int mode = hotmode >> 8;
  zero_shared(sm, X::O_CNT + nwords * 4, tid, NT);
  __syncthreads();

  if (warp < NPW) {
    // ================================================================ producers
    const int pt = tid;
    const unsigned ltm = lanemask_lt();
    const unsigned d = lane & (C - 1), grp = lane >> LOGC;
    unsigned nl[LOGC];  // bb ^ nl[bit] = lanes whose value has bit `bit` equal to this lane's
#pragma unroll
    for (int bit = 0; bit < LOGC; bit++) nl[bit] = ((lane >> bit) & 1) ? 0u : FULLM;
    unsigned short* sw = stg + warp * (C * CAPW);
    const unsigned slot = rank * NPW + warp;  // my inbox slot in every owner
    const unsigned dbase = mapa_u32(smem_addr(inbox + slot * CAPW), d);
    const unsigned hbase = mapa_u32(smem_addr(hdr + slot), d);
    unsigned val[V];
    unsigned c = 0;  // lanes < C: count of owner d in this tile; lanes C..2C-1: hot bin d (total)
    auto load = [&](int i) { load_tile<V, NPT>(val, in, n, ((long long)i * G + blockIdx.x) * (long long)T, pt); };
    // one pass over the tile's values; SLOW: values whose slot is >= CAPW go to their owner's
    // counters by remote atomics; fast pass: they only raise `ovf` (no branch in the loop)
    auto rank_pass = [&](auto slow_tag, bool& ovf) {
      constexpr bool SLOW = decltype(slow_tag)::value;
#pragma unroll
      for (int k = 0; k < V; k++) {
        const unsigned v = val[k];
        const bool ok = v - HB < (unsigned)bins - HB;  // HB <= v < bins (SENT and hot: not ok)
        const unsigned okm = __ballot_sync(FULLM, ok);
        unsigned hm = 0;
        if constexpr (X::HOT) hm = __ballot_sync(FULLM, v < HB);
        unsigned E = FULLM;
#pragma unroll
        for (int bit = 0; bit < LOGC; bit++) E &= __ballot_sync(FULLM, (v >> bit) & 1u) ^ nl[bit];
        const unsigned ow = v & (C - 1);
        const unsigned Eo = __shfl_sync(FULLM, E, ow);  // lanes whose value has owner ow
        const unsigned co = __shfl_sync(FULLM, c, ow);  // owner ow's count before this value
        c += __popc(E & (grp == 0 ? okm : hm));
        const unsigned sl = co + __popc(Eo & okm & ltm);
        if (ok && sl < (unsigned)CAPW) sw[ow * CAPW + sl] = (unsigned short)(v >> LOGC);
        if constexpr (SLOW) {
          if (ok && sl >= (unsigned)CAPW) count_add<PK>(cluster.map_shared_rank(cw, ow), v >> LOGC, g, C, ow);
        } else {
          ovf |= ok && sl >= (unsigned)CAPW;
        }
      }
    };
    auto rank_tile = [&]() {
      if (grp == 0) c = 0;
      if (mode & 2) {  // diagnostic: keep the loads alive, send empty runs
        unsigned x = 0;
#pragma unroll
        for (int k = 0; k < V; k++) x ^= val[k];
        if (x == 0x9e3779b9u) sw[0] = 1;
        return;
      }
      const unsigned c0 = c;
      bool ovf = false;
      rank_pass(std::integral_constant<bool, false>{}, ovf);
      if (__any_sync(FULLM, ovf)) {  // rare: redo the tile (same slots), now with remote adds
        c = c0;
        rank_pass(std::integral_constant<bool, true>{}, ovf);
      }
    };
    auto send = [&](int i) {
      __syncwarp();  // staging written by other lanes of this warp
      const unsigned b = i & 1;
      const unsigned m = (mode & 4) ? 0u : min(__shfl_sync(FULLM, c, d), (unsigned)CAPW);
      const unsigned nch = (m + 7) >> 3;
      const uint4* src = reinterpret_cast<const uint4*>(sw + d * CAPW);
      const unsigned dst = dbase + b * (unsigned)(S * CAPW * 2);
      for (unsigned ch = grp; ch < nch; ch += 32 / C) st_cluster_v4(dst + ch * 16, src[ch]);
      if (grp == 0) st_cluster_u32(hbase + b * (unsigned)(S * 4), m);
    };
    load(0);
    cluster_arrive();  // phase 0: every block of the cluster is running and zeroed
    cluster_wait();
    rank_tile();
    load(1);
    for (int i = 0; i < steps; i++) {
      send(i);  // inbox[i&1] of every owner: its consumers finished tile i-2 before phase i
      cluster_arrive();  // phase i+1: my tile-i runs are in place
      if (i + 1 < steps) {
        rank_tile();  // staging reuse: the sends above read it before cluster_arrive's syncwarp
        load(i + 2);
      }
      cluster_wait();
    }
    if (X::HOT && grp == 1 && c != 0u) atomicAdd(g + d, c);
  } else {
    // ================================================================ consumers
    const int cwp = warp - NPW;
    unsigned short* lst = lists + cwp * X::LISTN;
    const unsigned s = (unsigned)(cwp * SPW + lane);
    auto consume = [&](int b) {
      const unsigned m = lane < SPW ? hdr[b * S + s] : 0u;
      const unsigned nch = (m + 7) >> 3;
      unsigned inc = nch;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const unsigned y = __shfl_up_sync(FULLM, inc, o);
        if (lane >= o) inc += y;
      }
      const unsigned tot = __shfl_sync(FULLM, inc, 31), p = inc - nch;
      for (unsigned k = 0; k < nch; k++)
        lst[p + k] = (unsigned short)(((s * (CAPW / 8) + k) << 3) | (min(8u, m - 8u * k) - 1u));
      __syncwarp();
      const unsigned short* ib = inbox + b * (S * CAPW);
      for (unsigned j = lane; j < tot; j += 32) {
        const unsigned dsc = lst[j], nv = (dsc & 7u) + 1u;
        const uint4 x = *reinterpret_cast<const uint4*>(ib + (dsc >> 3) * 8);
        const unsigned ww[4] = {x.x, x.y, x.z, x.w};
        if constexpr (!PK) {
#pragma unroll
          for (int k = 0; k < 8; k++)
            if ((unsigned)k < nv) atomicAdd(cw + ((ww[k >> 1] >> ((k & 1) * 16)) & 0xffffu), 1u);
        } else {
          unsigned old[8];
#pragma unroll
          for (int k = 0; k < 8; k++) {
            const unsigned l = (ww[k >> 1] >> ((k & 1) * 16)) & 0xffffu;
            old[k] = 0u;  // inactive: never looks like a wrap
            if ((unsigned)k < nv) old[k] = atomicAdd(cw + (l >> 1), 1u << ((l & 1u) << 4));
          }
          bool wr = false;
#pragma unroll
          for (int k = 0; k < 8; k++) {
            const unsigned l = (ww[k >> 1] >> ((k & 1) * 16)) & 0xffffu, sh = (l & 1u) << 4;
            wr |= (~old[k] & (0xffffu << sh)) == 0u;
          }
          if (wr) {  // rare: some half wrapped
#pragma unroll
            for (int k = 0; k < 8; k++) {
              const unsigned l = (ww[k >> 1] >> ((k & 1) * 16)) & 0xffffu, sh = (l & 1u) << 4;
              if ((~old[k] & (0xffffu << sh)) == 0u) wrap_fix(cw + (l >> 1), old[k], l, g, C, rank);
            }
          }
        }
      }
      __syncwarp();  // the list is rewritten by the next consume
    };
    consumer_phases(steps, !(mode & 1), consume);
  }
  __syncthreads();  // all DSMEM traffic into this block ended before the last cluster phase
  flush_counters<PK>(cw, nwords, g, C, rank, tid, NT);
}

// ------------------------------------------------------------------ host
struct KInfo {  // one kernel instantiation
  const void* f;
  const char* tag;
  int C, nt, T, CAP;
  bool packed, exch;
  size_t (*smem)(int);
};
template <class X> KInfo kx(const char* tag) {
  return {(const void*)&k_xchg<X>, tag, X::C, X::NT, X::T, X::CAP, X::PACKED, true, &X::smem};
}
template <class X> KInfo kw(const char* tag) {
  return {(const void*)&k_wr<X>, tag, X::C, X::NT, X::T, X::CAPW, X::PACKED, true, &X::smem};
}
template <class X> KInfo kr(const char* tag) {
  return {(const void*)&k_remote<X>, tag, X::C, X::NT, 0, 0, X::PACKED, false, &X::smem};
}
struct Var {  // one variant: u32 counters first, then 16-bit packed (f == nullptr: none)
  const char* name;
  int hot;
  KInfo k[2];
  int mode = 0;  // != 0: diagnostic k_xchg run with parts switched off: timed, not checked
};
//                  C   V  NPW NCW CAPQ packed rank(0 ballot, 1 match, 2 scan)
using XB8 = XCfg<8, 8, 16, 16, 8, false, 0>;
using XS8 = XCfg<8, 8, 16, 16, 8, false, 2>;
using XB16 = XCfg<16, 8, 16, 16, 8, false, 0>;
using XB16P = XCfg<16, 8, 16, 16, 8, true, 0>;
using XM16 = XCfg<16, 8, 16, 16, 8, false, 1>;
using XM16P = XCfg<16, 8, 16, 16, 8, true, 1>;
using XS16 = XCfg<16, 8, 16, 16, 8, false, 2>;
using XS16P = XCfg<16, 8, 16, 16, 8, true, 2>;
using XB16L = XCfg<16, 16, 16, 8, 5, false, 0>;
using XB16LP = XCfg<16, 16, 16, 8, 5, true, 0>;
using XS16L = XCfg<16, 16, 16, 8, 5, false, 2>;
using XS16LP = XCfg<16, 16, 16, 8, 5, true, 2>;
//                 C   V  NPW NCW CAPW packed hot
using W8 = WCfg<16, 32, 8, 4, 112, false, true>;
using W8P = WCfg<16, 32, 8, 4, 112, true, true>;
using W8C8 = WCfg<16, 32, 8, 8, 112, false, true>;
using W8C8P = WCfg<16, 32, 8, 8, 112, true, true>;
using W8N = WCfg<16, 32, 8, 4, 112, false, false>;
using W8NP = WCfg<16, 32, 8, 4, 112, true, false>;
using W16 = WCfg<16, 16, 16, 8, 56, false, true>;
using W16P = WCfg<16, 16, 16, 8, 56, true, true>;
using WL = WCfg<16, 32, 16, 8, 112, false, true>;   // T = 16384: not at 2^20 bins
using WLP = WCfg<16, 32, 16, 8, 112, true, true>;
using WC8 = WCfg<8, 32, 8, 4, 224, false, true>;    // C = 8: not at 2^20 bins
using WC8P = WCfg<8, 32, 8, 4, 224, true, true>;
// HX_ALL=1: also the older variants; HX_ONLY=a,b,c: only variants whose name contains one of them
static std::vector<Var> make_vars() {
  const KInfo none = {nullptr, "", 0, 0, 0, 0, false, false, nullptr};
  const KInfo b16 = kx<XB16>("XB16"), b16p = kx<XB16P>("XB16P");
  const KInfo w8 = kw<W8>("W8"), w8p = kw<W8P>("W8P");
  std::vector<Var> old = {
      {"xchg_ballot_T4096", 32, {b16, b16p}},
      {"xchg_ballot_T4096", 32, {kx<XB8>("XB8"), none}},
      {"xchg_ballot_T4096_nohot", 0, {b16, b16p}},
      {"xchg_match_T4096", 32, {kx<XM16>("XM16"), kx<XM16P>("XM16P")}},
      {"xchg_scan_T4096", 32, {kx<XS16>("XS16"), kx<XS16P>("XS16P")}},
      {"xchg_scan_T4096", 32, {kx<XS8>("XS8"), none}},
      {"xchg_ballot_T8192", 32, {kx<XB16L>("XB16L"), kx<XB16LP>("XB16LP")}},
      {"diag_ballot_nocount", 32, {b16, b16p}, 1},
      {"diag_ballot_norank", 32, {b16, b16p}, 3},
      {"remote", 0, {kr<RCfg<16, false>>("R16"), kr<RCfg<16, true>>("R16P")}},
      {"remote", 0, {kr<RCfg<8, false>>("R8"), none}},
  };
  std::vector<Var> v = {
      {"xchg_scan_T8192", 32, {kx<XS16L>("XS16L"), kx<XS16LP>("XS16LP")}},
      {"wr_T8192_w8c4", 16, {w8, w8p}},
      {"wr_T8192_w8c8", 16, {kw<W8C8>("W8C8"), kw<W8C8P>("W8C8P")}},
      {"wr_T8192_w16c8", 16, {kw<W16>("W16"), kw<W16P>("W16P")}},
      {"wr_T16384_w16c8", 16, {kw<WL>("WL"), kw<WLP>("WLP")}},
      {"wr_T8192_w8c4", 8, {kw<WC8>("WC8"), kw<WC8P>("WC8P")}},
      {"wr_T8192_w8c4_nohot", 0, {kw<W8N>("W8N"), kw<W8NP>("W8NP")}},
      {"diag_wr_nocount", 16, {w8, w8p}, 1},
      {"diag_wr_nosend", 16, {w8, w8p}, 5},
      {"diag_wr_norank", 16, {w8, w8p}, 3},
  };
  const char* all = getenv("HX_ALL");
  if (all && atoi(all)) v.insert(v.begin(), old.begin(), old.end());
  const char* only = getenv("HX_ONLY");
  if (only && *only) {
    std::vector<Var> f;
    for (const Var& x : v) {
      bool keep = false;
      for (const char* p = only; *p;) {
        const char* e = strchr(p, ',');
        const std::string tok(p, e ? e - p : strlen(p));
        if (!tok.empty() && strstr(x.name, tok.c_str())) keep = true;
        p = e ? e + 1 : p + strlen(p);
      }
      if (keep) f.push_back(x);
    }
    v = f;
  }
  return v;
}

static size_t g_optin = 232448;  // re-read from the device by every child
static bool fits(const KInfo& k, int bins) {  // u32 counters only up to 128 KiB, else 16-bit pairs
  return k.f && (k.packed || (size_t)(bins / k.C) * 4 <= 131072) && k.smem(bins) <= g_optin;
}
static const KInfo* pick(const Var& v, int bins) {
  return fits(v.k[0], bins) ? &v.k[0] : fits(v.k[1], bins) ? &v.k[1] : nullptr;
}
static cudaError_t set_attrs(const KInfo& k, size_t smem) {
  cudaError_t e = cudaFuncSetAttribute(k.f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
  return e != cudaSuccess ? e : cudaFuncSetAttribute(k.f, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
}
static cudaLaunchConfig_t make_cfg(const KInfo& k, int grid, size_t smem, cudaLaunchAttribute* at) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid, 1, 1), cfg.blockDim = dim3(k.nt, 1, 1);
  cfg.dynamicSmemBytes = smem, cfg.stream = 0;
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = k.C, at[0].val.clusterDim.y = 1, at[0].val.clusterDim.z = 1;
  cfg.attrs = at, cfg.numAttrs = 1;
  return cfg;
}
static int max_clusters(const KInfo& k, size_t smem, cudaError_t* err) {
  cudaLaunchAttribute at[1];
  const cudaLaunchConfig_t cfg = make_cfg(k, k.C, smem, at);
  int nc = 0;
  *err = cudaOccupancyMaxActiveClusters(&nc, k.f, &cfg);
  return nc;
}
static double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// a kernel still running after 8 s is taken as a deadlock: report it and end this child
static cudaError_t wait_event(cudaEvent_t e, const char* what) {
  for (const double t0 = now_s();; sched_yield()) {
    const cudaError_t r = cudaEventQuery(e);
    if (r != cudaErrorNotReady) return r;
    if (now_s() - t0 > 8.0) {
      printf("%s TIMEOUT (kernel still running after 8 s: deadlock?)\n", what);
      fflush(stdout);
      _exit(3);
    }
  }
}

// inputs of the current bin count, made by forked workers in shared anonymous memory (the
// parent never touches CUDA), inherited by the measuring children
static int* h_in[2];
static std::vector<unsigned> h_ref[2];
static const char* INPUT_NAME[2] = {"uniform", "zipf"};
static constexpr long long GCHUNK = 1ll << 22;  // values per generation chunk (own seed)
static uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// uniform: top 32 bits of splitmix64 scaled to bins; zipf 1.1 over 1..=bins, minus 1: inverse
// CDF through a guide table (guide[j] = smallest bin whose CDF exceeds j/K) and a binary search
static void gen_chunk(int bins, int inp, long long c, const std::vector<double>& cdf,
                      const std::vector<int>& guide, unsigned* ref) {
  uint64_t s = 0x1234567ull + (uint64_t)bins * 1000003ull + (uint64_t)inp * 7919ull + (uint64_t)c * 0x9E37ull;
  const int K = (int)guide.size() - 1;
  int* out = h_in[inp] + c * GCHUNK;
  for (long long i = 0; i < GCHUNK; i++) {
    const uint64_t x = splitmix(s);
    int v;
    if (inp == 0) {
      v = (int)(((x >> 32) * (uint64_t)bins) >> 32);
    } else {
      const double u = (double)(x >> 11) * 0x1.0p-53;
      const int j = (int)(u * K);
      int lo = guide[j], hi = guide[j + 1];
      while (lo < hi) {
        const int mid = (lo + hi) >> 1;
        if (cdf[mid] > u) hi = mid;
        else lo = mid + 1;
      }
      v = lo;
    }
    out[i] = v, ref[v]++;
  }
}
static void* shared_alloc(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) printf("mmap of %zu B failed\n", bytes), exit(1);
  return p;
}
static void gen_inputs(int bins) {
  const double t0 = now_s();
  for (int i = 0; i < 2; i++) {
    if (!h_in[i]) h_in[i] = (int*)shared_alloc(NVAL * sizeof(int));
    h_ref[i].assign(bins, 0u);
  }
  std::vector<double> cdf(bins);
  double acc = 0;
  for (int k = 1; k <= bins; k++) cdf[k - 1] = (acc += std::pow((double)k, -1.1));
  for (int k = 0; k < bins; k++) cdf[k] /= acc;
  cdf[bins - 1] = 2.0;
  std::vector<int> guide((1 << 20) + 1);
  const int K = 1 << 20;
  for (int j = 0, i = 0; j <= K; j++) {
    while (cdf[i] <= (double)j / K) i++;
    guide[j] = i;
  }
  const long long nch = NVAL / GCHUNK;
  const int nw = (int)std::max(1L, std::min(16L, sysconf(_SC_NPROCESSORS_ONLN)));
  const size_t refsz = (size_t)nw * 2 * bins * sizeof(unsigned);
  unsigned* refs = (unsigned*)shared_alloc(refsz);
  fflush(stdout);
  std::vector<pid_t> pids;
  for (int w = 0; w < nw; w++) {
    const pid_t pid = fork();
    if (pid > 0) {
      pids.push_back(pid);
      continue;
    }
    for (long long c = w; c < nch; c += nw)  // the worker (or the parent, if fork failed)
      for (int inp = 0; inp < 2; inp++) gen_chunk(bins, inp, c, cdf, guide, refs + ((size_t)w * 2 + inp) * bins);
    if (pid == 0) _exit(0);
  }
  for (pid_t p : pids) waitpid(p, nullptr, 0);
  long long tot = 0;
  for (int w = 0; w < nw; w++)
    for (int inp = 0; inp < 2; inp++)
      for (int b = 0; b < bins; b++) h_ref[inp][b] += refs[((size_t)w * 2 + inp) * bins + b];
  munmap(refs, refsz);
  for (int b = 0; b < bins; b++) tot += h_ref[0][b] + h_ref[1][b];
  printf("# bins %d: inputs made in %.1f s by %d workers (zipf: bin 0 %.2f%%, bin 1 %.2f%%)%s\n", bins,
         now_s() - t0, nw, 100.0 * h_ref[1][0] / NVAL, 100.0 * h_ref[1][1] / NVAL,
         tot == 2 * NVAL ? "" : " REFERENCE COUNT WRONG");
}

static void report(cudaError_t e, const char* call, const char* what) {
  printf("%s ERROR %s (%s)\n", what, cudaGetErrorString(e), call);
  cudaGetLastError();
  if (cudaDeviceSynchronize() != cudaSuccess) {  // sticky: this child cannot go on
    printf("%s: sticky CUDA error, leaving this group\n", what);
    fflush(stdout);
    _exit(2);
  }
}
#define CK(call)                                       \
  do {                                                 \
    const cudaError_t e_ = (call);                     \
    if (e_ != cudaSuccess) return report(e_, #call, what), false; \
  } while (0)
static void query_optin() {
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) == cudaSuccess && v > 0)
    g_optin = (size_t)v;
}

// one (variant, bins, input): exact check of the first and the last run, median of 10 timed
// runs after 3 warm-ups; the histogram is zeroed before each run, outside the events
static bool run_input(const Var& var, const KInfo& k, int bins, int inp, int grid, int steps,
                      size_t smem, int* d_in, unsigned* d_h, cudaEvent_t e0, cudaEvent_t e1) {
  char what[160];
  snprintf(what, sizeof what, "%s %d %d %s", var.name, k.C, bins, INPUT_NAME[inp]);
  long long nn = NVAL;
  int hot = var.hot | (var.mode << 8);
  std::vector<unsigned> got(bins);
  CK(cudaMemcpy(d_in, h_in[inp], NVAL * sizeof(int), cudaMemcpyHostToDevice));
  void* args[] = {(void*)&d_in, (void*)&nn, (void*)&d_h, (void*)&bins, (void*)&hot, (void*)&steps};
  cudaLaunchAttribute at[1];
  const cudaLaunchConfig_t cfg = make_cfg(k, grid, smem, at);
  std::vector<float> ms;
  for (int run = 0; run < 13; run++) {
    CK(cudaMemsetAsync(d_h, 0, (size_t)bins * sizeof(unsigned), 0));
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(e0, 0));
    CK(cudaLaunchKernelExC(&cfg, k.f, args));
    CK(cudaEventRecord(e1, 0));
    CK(wait_event(e1, what));
    CK(cudaGetLastError());
    float t = 0;
    CK(cudaEventElapsedTime(&t, e0, e1));
    if (run >= 3) ms.push_back(t);
    if ((run == 0 || run == 12) && var.mode == 0) {
      CK(cudaMemcpy(got.data(), d_h, (size_t)bins * sizeof(unsigned), cudaMemcpyDeviceToHost));
      for (int b = 0; b < bins; b++)
        if (got[b] != h_ref[inp][b]) {
          printf("%-26s %2d %8d %-7s        -      - MISMATCH (run %d: first bad bin %d: got %u, want %u)\n",
                 var.name, k.C, bins, INPUT_NAME[inp], run, b, got[b], h_ref[inp][b]);
          return true;
        }
    }
  }
  std::sort(ms.begin(), ms.end());
  const double med = 0.5 * (ms[4] + ms[5]), pct = 100.0 * (NVAL * 4.0) / (med * 1e-3) / (CEIL_GBS * 1e9);
  printf("%-26s %2d %8d %-7s %9.4f %6.1f %s (min %.4f max %.4f)\n", var.name, k.C, bins, INPUT_NAME[inp], med,
         pct, var.mode ? "diag" : "ok  ", ms.front(), ms.back());
  return true;
}

// one child process: one (variant, bins) on both inputs
static bool run_group(const Var& var, int bins) {
  query_optin();
  const KInfo* kp = pick(var, bins);
  char what[160];
  snprintf(what, sizeof what, "%s %d %d", var.name, var.k[0].C, bins);
  if (!kp) return printf("# %s: skipped (counters and buffers exceed %zu B of shared memory)\n", what, g_optin), true;
  const KInfo& k = *kp;
  const size_t smem = k.smem(bins);
  CK(set_attrs(k, smem));
  cudaError_t err;
  const int ncl = max_clusters(k, smem, &err);
  CK(err);
  if (ncl <= 0) return printf("# %s: no cluster of %d fits (smem %zu B)\n", what, k.C, smem), true;
  const int grid = ncl * k.C;
  const long long tiles = k.exch ? (NVAL + k.T - 1) / k.T : 0;
  const int steps = k.exch ? (int)((tiles + grid - 1) / grid) : 0;
  printf("# %s: kernel %s, %s counters, smem %zu B, %d threads, max active clusters %d, grid %d, "
         "T %d, CAP %d, steps %d, hot %d\n", what, k.tag, k.packed ? "16-bit packed" : "u32", smem, k.nt,
         ncl, grid, k.T, k.CAP, steps, var.hot);
  int* d_in = nullptr;
  unsigned* d_h = nullptr;
  cudaEvent_t e0, e1;
  CK(cudaMalloc(&d_in, NVAL * sizeof(int)));
  CK(cudaMalloc(&d_h, (size_t)bins * sizeof(unsigned)));
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int inp = 0; inp < 2; inp++) run_input(var, k, bins, inp, grid, steps, smem, d_in, d_h, e0, e1);
  cudaFree(d_in), cudaFree(d_h);
  return true;
}

static void run_info(const std::vector<Var>& vars) {
  query_optin();
  cudaDeviceProp p;
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return (void)printf("no CUDA device\n");
  int rt = 0, dv = 0;
  cudaRuntimeGetVersion(&rt), cudaDriverGetVersion(&dv);
  printf("# device: %s, sm_%d%d, %d SMs, opt-in smem/block %zu B, smem/SM %zu B, L2 %d B, runtime %d, "
         "driver %d\n", p.name, p.major, p.minor, p.multiProcessorCount, (size_t)p.sharedMemPerBlockOptin,
         (size_t)p.sharedMemPerMultiprocessor, p.l2CacheSize, rt, dv);
  std::vector<const void*> seen;
  for (const Var& v : vars)
    for (const KInfo& k : v.k) {
      if (!k.f || std::find(seen.begin(), seen.end(), k.f) != seen.end()) continue;
      seen.push_back(k.f);
      cudaFuncAttributes a;
      const cudaError_t e = cudaFuncGetAttributes(&a, k.f);
      if (e != cudaSuccess) {
        printf("# kernel %s: cudaFuncGetAttributes: %s\n", k.tag, cudaGetErrorString(e));
        continue;
      }
      printf("# kernel %-6s C=%2d threads %4d T %5d CAP %4d: %3d registers, %d B local (spills), max "
             "threads %d; max active clusters:", k.tag, k.C, k.nt, k.T, k.CAP, a.numRegs,
             (int)a.localSizeBytes, a.maxThreadsPerBlock);
      for (int b : {65536, 262144, 1048576}) {
        if (!fits(k, b)) continue;
        cudaError_t e2 = set_attrs(k, k.smem(b));
        const int nc = e2 == cudaSuccess ? max_clusters(k, k.smem(b), &e2) : 0;
        printf(" %d bins (%zu B smem): %d%s%s", b, k.smem(b), nc, e2 == cudaSuccess ? "" : " error ",
               e2 == cudaSuccess ? "" : cudaGetErrorString(e2));
      }
      printf("\n");
    }
}

// each group runs in its own child: a deadlock or a sticky CUDA error loses that group only
static void in_child(const std::function<void()>& fn, const char* what, double limit_s) {
  fflush(stdout), fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) return (void)printf("fork failed for %s\n", what);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    fn();
    fflush(stdout);
    _exit(0);
  }
  int st = 0;
  for (const double t0 = now_s(); waitpid(pid, &st, WNOHANG) != pid; usleep(10000))
    if (now_s() - t0 > limit_s) {
      kill(pid, SIGKILL), waitpid(pid, &st, 0);
      return (void)printf("%s: child killed after %.0f s\n", what, limit_s);
    }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) printf("%s: child ended abnormally (status 0x%x)\n", what, st);
}

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const double t0 = now_s();
  const std::vector<Var> vars = make_vars();
  // a holder process keeps the driver initialised between the children (in case persistence
  // mode is off); it steps aside unless the GPU is in the default (shared) compute mode
  int pfd[2] = {-1, -1};
  if (pipe(pfd) != 0) pfd[0] = pfd[1] = -1;
  fflush(stdout);
  pid_t holder = fork();
  if (holder == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int mode = -1;
    char c = 'x';
    if (cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, 0) == cudaSuccess && mode == cudaComputeModeDefault &&
        cudaFree(0) == cudaSuccess)
      c = 'h';
    if (pfd[1] < 0 || write(pfd[1], &c, 1) != 1) c = 'x';
    while (c == 'h') pause();
    _exit(0);
  }
  char hc = 'x';
  if (pfd[0] < 0 || read(pfd[0], &hc, 1) != 1) hc = 'x';
  if (hc != 'h' && holder > 0) waitpid(holder, nullptr, 0), holder = -1;
  printf("# driver holder process: %s\n", hc == 'h' ? "yes" : "no");
  in_child([&] { run_info(vars); }, "info", 60);
  printf("# columns: variant C bins input median_ms pct_of_4251 ok|MISMATCH|diag; n = 2^26 i32 values\n");
  for (int bins : {65536, 262144, 1048576}) {
    gen_inputs(bins);
    for (const Var& v : vars) {
      char what[96];
      snprintf(what, sizeof what, "%s C=%d bins %d", v.name, v.k[0].C, bins);
      in_child([&] { run_group(v, bins); }, what, 60);
    }
  }
  if (holder > 0) kill(holder, SIGKILL), waitpid(holder, nullptr, 0);
  printf("# total %.1f s\n", now_s() - t0);
  return 0;
}
