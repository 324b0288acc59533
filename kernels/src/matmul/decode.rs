//! `matmul_decode_bf16` and `matmul_decode_f16`: `C = A * B` for `m <= 16` ("decode" shapes: one
//! token, or a few, times a weight matrix) from BF16 (or F16) operands, `f32` accumulation and
//! output, on the warp-level tensor cores (`mma.sync.m16n8k16`), streaming `B` from global memory
//! once at the memory's bandwidth. The two kernels differ in the instruction's input type only.
//! Built into the `sm_90a` module (`hopper` feature) beside `wgmma_bf16`, whose operand formats it
//! takes.
//!
//! # Why this design
//! With `m <= 16` the product does at most 16 multiply-adds per element of `B` (32 FLOPs per 2
//! bytes): the time is the time to read `B` (`k x n x 2` bytes: 117 MB at `k = 4096, n =
//! 14336`), and everything else is about keeping enough bytes in flight per SM. `wgmma_bf16`'s
//! 128 x 256 tiles waste at least 7/8 of their `A` rows and put the `B` stream behind a TMA ring sized
//! for compute-bound tiles; here each thread loads `B` with 16-byte `ld.global.nc` straight into
//! registers, 12 loads (192 bytes) issued back to back before the first is used, and no shared
//! memory stands between `B` and the tensor cores.
//!
//! `mma.sync` wants `B` "column-major" (two consecutive `k` of one column per register) while
//! `B` is row-major (`n` contiguous). No shuffle or `ldmatrix` is needed for that: an `mma`'s
//! sum over its 16 `k` does not depend on which physical rows of `B` fill which `k` slot, as
//! long as `A` uses the same assignment; nor does it matter which physical column fills which
//! `n` slot, as long as the store knows. So lane `(g, t)` (`g = lane / 4`, `t = lane % 4`) loads
//! rows `4t .. 4t + 4` of a 16-row step, 8 consecutive columns `8g .. 8g + 8` each, and packs the
//! pairs `(row 4t, row 4t+1)` and `(row 4t+2, row 4t+3)` of each column into its two `B`
//! registers ([`pack_low`], [`pack_high`]): the `k` slots `2t, 2t+1, 2t+8, 2t+9` of the
//! instruction hold the physical rows `4t .. 4t + 4`, and `mma` number `j` (of 8 per step) takes
//! the physical columns `8g + j` in its `n` slot `g`. `A`'s matching fragment is one 8-byte load
//! of `A[g][4t .. 4t + 4]` (and of row `g + 8`). [`output_coords`] maps the accumulators back.
//!
//! # Parameters
//! `a`: `A`, `m x k` BF16 row-major at leading dimension `ld_a` (elements); `b`: `B`, `k x n`
//! BF16 row-major at `ld_b`; both 16-byte aligned, leading dimensions multiples of 8 (the
//! `Bf16Rows16` format the host prepares for `wgmma_bf16`); `c`: `C`, `m x n` `f32` row-major;
//! with a split of `k` (`gridDim.z > 1`), `partials`: room for `gridDim.z` partial products of
//! `m x n` `f32`, packed, one after another, and `counters`: one `u32` per strip, zero at the
//! launch (the launch leaves them zero); without one both may be null; `k_chunk`: the `k`
//! of each split (`crate::matmul::split_k::split_k_range`), a positive multiple of 4 (so that
//! every 4 columns of `A` a lane loads start 8-byte aligned; the planner's are multiples of 8).
//!
//! # Thread mapping and tiling
//! [`THREADS`] = 256: [`WARPS`] warps that share one strip of [`BLOCK_N`] columns of `C` and one
//! split of `k` (grid `(ceil(n / BLOCK_N), 1, splits)`). The split is cut into super-steps of
//! [`SUPER_K`] rows of `B` ([`STEPS_PER_LOAD`] steps of 16); warp `w` takes super-steps `w, w +
//! WARPS, ...`, so the block's warps read neighbouring rows at the same time. Per super-step each
//! lane loads 12 x 16 bytes of `B` and 3 x 2 x 8 bytes of `A` (`A` is small and shared by all
//! blocks: it stays in L1 and L2), then issues 24 `mma`s into 8 x 4 accumulators.
//! Rows past the split's end, columns past `n` and rows of `A` past `m` read as zeros (guarded
//! loads; a full super-step takes unguarded 16-byte loads), so ragged shapes need no padding.
//!
//! # Reduction (deterministic)
//! Each warp writes its 16 x 64 accumulators to shared memory ([`REDUCE_FLOATS`] floats, 32 KiB,
//! static); after a barrier thread `i` adds the warps' values of 4 elements in warp order and
//! writes rows `< m`, columns `< n` (16-byte stores where `n % 4 == 0`) of `C`, or with a split
//! of `k` of its split's partial product. Then the strip's counter counts the block, and the
//! strip's last block to arrive adds the strip's partial products into `C` in split order (the
//! order of `matmul_split_k_reduce`, so the sum does not depend on which block came last),
//! [`REDUCE_LOADS`] of them loaded before any is added, and sets the counter back to zero: the
//! splits cost no second launch (`matmul_split_k_reduce` had; on the H200, timed back to back,
//! 16 x 4096 x 4096 went from 0.0183 ms to 0.0181). The only atomics count arrivals: reruns are
//! bitwise equal.
//!
//! # Registers
//! Declared `.maxntid` [`DECLARED_MAX_THREADS`] (512, twice the block) so that ptxas keeps the
//! kernel within 128 registers (127, no spills, with 3 steps per super-step; 4 steps took 155
//! registers uncapped and spilled under the cap): two blocks, 16 warps, 96 KiB of `B` loads in
//! flight per SM, against an estimated need of about 36 KB per SM (4.8 TB/s over 132 SMs, times
//! a memory latency near 1 us).
//!
//! # Safety
//! `a` and `b` hold `A` and `B` as above and are not written during the kernel; `c` holds `m *
//! n` `f32`; with `gridDim.z > 1`, `partials` holds `gridDim.z * m * n` `f32` and `counters`
//! `gridDim.x` `u32`, zero, that no other launch uses while this one runs; the outputs overlap
//! neither each other nor the inputs; `m <= 16`; the block is [`THREADS`] threads;
//! `k_chunk` a positive multiple of 4 and `gridDim.z = ceil(k / k_chunk)`, `gridDim.x = ceil(n /
//! BLOCK_N)`.

/// PTX symbol of the kernel.
pub const KERNEL: &str = "matmul_decode_bf16";
/// PTX symbol of the same kernel on F16 (IEEE half) operands (`mma.sync...f32.f16.f16.f32`).
pub const KERNEL_F16: &str = "matmul_decode_f16";
/// Most rows of `A` and `C` (one `m16` instruction).
pub const MAX_M: u32 = 16;
/// Warps per block.
pub const WARPS: u32 = 8;
/// Threads per block.
pub const THREADS: u32 = WARPS * 32;
/// Columns of `C` per block (and per warp): 8 lanes' groups of 8 columns, 8 `mma`s of `n = 8`.
pub const BLOCK_N: u32 = 64;
/// `k` per `mma` step.
pub const STEP_K: u32 = 16;
/// Steps whose loads a lane issues before using the first (3: 48 registers of `B` per lane;
/// see the module's Registers section).
pub const STEPS_PER_LOAD: u32 = 3;
/// Rows of `B` per super-step of a warp.
pub const SUPER_K: u32 = STEP_K * STEPS_PER_LOAD;
/// Floats of shared memory for the in-block reduction: every warp's 16 x [`BLOCK_N`] sums.
pub const REDUCE_FLOATS: u32 = WARPS * MAX_M * BLOCK_N;
/// The `.maxntid` the module declares for the kernel (it is launched with [`THREADS`]): caps
/// its registers at `65536 / 512 = 128`, so that two blocks fit an SM.
pub const DECLARED_MAX_THREADS: u32 = 2 * THREADS;
/// Partial products the last block of a strip loads before it adds them (in split order).
pub const REDUCE_LOADS: usize = 8;
/// Blocks an SM holds (registers: 2 x 256 x 128 = 65,536; shared memory: 2 x 32 KiB).
pub const BLOCKS_PER_SM: u32 = 2;

/// Column strips of [`BLOCK_N`]: the grid's x extent for `n` columns.
///
/// ```
/// use kernels::matmul::decode::strips;
/// assert_eq!((strips(1), strips(64), strips(65), strips(14336)), (1, 1, 2, 224));
/// ```
pub const fn strips(n: u32) -> u32 {
    n.div_ceil(BLOCK_N)
}

/// The low halves of `x` and `y` as one register, `x`'s low: the elements of column `2i` of two
/// rows, `x` = 2 BF16 of row `r` and `y` of row `r + 1`, as an `mma` `B` register takes them.
///
/// ```
/// use kernels::matmul::decode::{pack_high, pack_low};
/// assert_eq!(pack_low(0xAAAA_1111, 0xBBBB_2222), 0x2222_1111);
/// assert_eq!(pack_high(0xAAAA_1111, 0xBBBB_2222), 0xBBBB_AAAA);
/// ```
#[inline(always)]
pub const fn pack_low(x: u32, y: u32) -> u32 {
    (x & 0xFFFF) | (y << 16)
}

/// The high halves of `x` and `y` as one register, `x`'s low (the elements of column `2i + 1`).
///
/// ```
/// assert_eq!(kernels::matmul::decode::pack_high(0x1234_0000, 0x5678_0000), 0x5678_1234);
/// ```
#[inline(always)]
pub const fn pack_high(x: u32, y: u32) -> u32 {
    (x >> 16) | (y & 0xFFFF_0000)
}

/// The `B` registers of `mma` number `j` (`0..8`) of a step, from the lane's four loaded rows
/// (each 8 BF16 columns in 4 words): rows 0 and 1 in the first register, 2 and 3 in the second,
/// of column `j`.
///
/// ```
/// use kernels::matmul::decode::b_fragment;
/// // Rows r hold words with column c's element = 16 * r + c in each half.
/// let row = |r: u32| core::array::from_fn(|w| (16 * r + 2 * w as u32) | (16 * r + 2 * w as u32 + 1) << 16);
/// let rows = [row(0), row(1), row(2), row(3)];
/// assert_eq!(b_fragment(&rows, 3), [3 | (16 + 3) << 16, (32 + 3) | (48 + 3) << 16]);
/// ```
#[inline(always)]
pub const fn b_fragment(rows: &[[u32; 4]; 4], j: usize) -> [u32; 2] {
    let w = j / 2;
    if j.is_multiple_of(2) {
        [pack_low(rows[0][w], rows[1][w]), pack_low(rows[2][w], rows[3][w])]
    } else {
        [pack_high(rows[0][w], rows[1][w]), pack_high(rows[2][w], rows[3][w])]
    }
}

/// Where accumulator `i` (`0..4`) of `mma` `j` of lane `(g, t)` lies in the block's 16 x
/// [`BLOCK_N`] tile of `C`: `(row, column)`. The `mma`'s `n` slot `2t + i % 2` holds the
/// columns lane group `2t + i % 2` loaded, of which `j` is this `mma`'s.
///
/// ```
/// use kernels::matmul::decode::output_coords;
/// assert_eq!(output_coords(0, 0, 0, 0), (0, 0));
/// assert_eq!(output_coords(5, 3, 7, 3), (13, 63));
/// ```
#[inline(always)]
pub const fn output_coords(g: u32, t: u32, j: u32, i: u32) -> (u32, u32) {
    (g + 8 * (i / 2), 8 * (2 * t + i % 2) + j)
}

#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
mod gpu {
    use super::*;
    use crate::device::{atomic, mem, mma, thread};
    use crate::matmul::split_k::split_k_range;

    /// 8 BF16 of row `row` of `B` from column `col`: one 16-byte load when `full` (the whole
    /// super-step inside the split and `n`) or when this row and its 8 columns are inside, else
    /// guarded 2-byte loads (zeros past `n` or past the split's last row `k_end`).
    #[inline(always)]
    unsafe fn b_row(b: *const u8, ld_b: u32, row: u32, col: u32, n: u32, k_end: u32, full: bool) -> [u32; 4] {
        let at = b.wrapping_add(2 * (row as usize * ld_b as usize + col as usize));
        if full || (row < k_end && col + 8 <= n) {
            // SAFETY: row < k_end <= k and col + 8 <= n <= ld_b; 16-byte aligned (b aligned, ld_b
            // and col multiples of 8); B is read-only (kernel contract).
            return unsafe { mem::load_global_nc_v4_u32(at) };
        }
        let mut words = [0u32; 4];
        if row < k_end {
            for (w, word) in words.iter_mut().enumerate() {
                for h in 0..2 {
                    let c = col + 2 * w as u32 + h;
                    if c < n {
                        // SAFETY: row < k, c < n: an element of B.
                        *word |=
                            unsafe { mem::load_global_nc_u16(at.wrapping_add(2 * (2 * w + h as usize))) } << (16 * h);
                    }
                }
            }
        }
        words
    }

    /// `A[row][kk .. kk + 4]` as 2 words, zeros past `m` rows or the split's end `k_end`.
    #[inline(always)]
    unsafe fn a_quad(a: *const u8, ld_a: u32, row: u32, kk: u32, m: u32, k_end: u32) -> [u32; 2] {
        if row >= m || kk >= k_end {
            return [0; 2];
        }
        let at = a.wrapping_add(2 * (row as usize * ld_a as usize + kk as usize));
        if kk + 4 <= k_end {
            // SAFETY: row < m, kk + 4 <= k: in A's row; 8-byte aligned (a 16-byte aligned, ld_a
            // a multiple of 8, kk of 4); A is read-only.
            return unsafe { mem::load_global_nc_v2_u32(at) };
        }
        let mut words = [0u32; 2];
        for (w, word) in words.iter_mut().enumerate() {
            for h in 0..2 {
                if kk + 2 * w as u32 + h < k_end {
                    // SAFETY: an element of A's row `row` before k.
                    *word |= unsafe { mem::load_global_nc_u16(at.wrapping_add(2 * (2 * w + h as usize))) } << (16 * h);
                }
            }
        }
        words
    }

    /// The body of both kernels: `F16` picks the instruction's input type (the fragments and
    /// loads are those of any 16-bit type).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn run<const F16: bool>(
        a: *const u8,
        b: *const u8,
        partials: *mut f32,
        c: *mut f32,
        counters: *mut u32,
        m: u32,
        k: u32,
        n: u32,
        ld_a: u32,
        ld_b: u32,
        k_chunk: u32,
    ) {
        let sums = crate::shared_array!(MATMUL_DECODE_SUMS: [f32; REDUCE_FLOATS as usize]);
        let tid = thread::thread_idx_x();
        let (warp, lane) = (tid / 32, tid % 32);
        let (g, t) = (lane / 4, lane % 4);
        let strip = thread::block_idx_x() * BLOCK_N;
        let col = strip + 8 * g;
        let z = thread::block_idx_z();
        let (k_begin, k_len) = split_k_range(z, k_chunk, k);
        let k_end = k_begin + k_len;
        let cols_full = col + 8 <= n;
        let mut acc = [[0.0f32; 4]; 8];
        let mut r0 = k_begin + warp * SUPER_K;
        while r0 < k_end {
            let full = cols_full && r0 + SUPER_K <= k_end;
            let mut rows = [[[0u32; 4]; 4]; STEPS_PER_LOAD as usize];
            unroll!(s in [0, 1, 2] {
                unroll!(r in [0, 1, 2, 3] {
                    let row = r0 + STEP_K * s as u32 + 4 * t + r as u32;
                    // SAFETY: b_row's contract: B as the kernel contract gives it.
                    rows[s][r] = unsafe { b_row(b, ld_b, row, col, n, k_end, full) };
                });
            });
            let mut frags = [[0u32; 4]; STEPS_PER_LOAD as usize];
            unroll!(s in [0, 1, 2] {
                let kk = r0 + STEP_K * s as u32 + 4 * t;
                // SAFETY: a_quad's contract: A as the kernel contract gives it.
                let lo = unsafe { a_quad(a, ld_a, g, kk, m, k_end) };
                let hi = unsafe { a_quad(a, ld_a, g + 8, kk, m, k_end) };
                frags[s] = [lo[0], hi[0], lo[1], hi[1]];
            });
            unroll!(s in [0, 1, 2] {
                unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7] {
                    // SAFETY: every lane of the warp runs the loop the same number of times
                    // (r0 and k_end are uniform over the warp): converged.
                    acc[j] = unsafe {
                        if F16 {
                            mma::m16n8k16_f16_f32(frags[s], b_fragment(&rows[s], j), acc[j])
                        } else {
                            mma::m16n8k16_bf16_f32(frags[s], b_fragment(&rows[s], j), acc[j])
                        }
                    };
                });
            });
            r0 += WARPS * SUPER_K;
        }
        // Warp w's 16 x 64 tile at w * 1024: row g, columns 16t .. 16t + 16 hold accumulators 0
        // (first 8) and 1 of the 8 mma; row g + 8 accumulators 2 and 3.
        let tile = (warp * MAX_M * BLOCK_N) as usize;
        unroll!(i in [0, 1, 2, 3] {
            let (row, c) = output_coords(g, t, 0, i as u32);
            let at = tile + (row * BLOCK_N + c) as usize;
            // SAFETY: at + 8 <= this warp's tile, 16-byte aligned (c a multiple of 8); only this
            // lane writes these elements before the barrier.
            unsafe {
                sums.store4(at, [acc[0][i], acc[1][i], acc[2][i], acc[3][i]]);
                sums.store4(at + 4, [acc[4][i], acc[5][i], acc[6][i], acc[7][i]]);
            }
        });
        // Every warp's tile is written before any thread adds them.
        thread::sync_threads();
        let splits = thread::grid_dim_z();
        let len = m as usize * n as usize;
        let out = if splits == 1 { c } else { partials.wrapping_add(z as usize * len) };
        let vector = n.is_multiple_of(4) && (out as usize | partials as usize | c as usize).is_multiple_of(16);
        let (row, c4) = (tid / 16, (tid % 16) * 4);
        let first_col = strip + c4;
        let at = row as usize * n as usize + first_col as usize;
        if row < m {
            let tile_at = (row * BLOCK_N + c4) as usize;
            // SAFETY: tile_at + 4 <= a tile, 16-byte aligned; written before the barrier.
            let mut v = unsafe { sums.load4(tile_at) };
            for w in 1..WARPS as usize {
                // SAFETY: as above, in warp w's tile.
                let x = unsafe { sums.load4(w * (MAX_M * BLOCK_N) as usize + tile_at) };
                v = [v[0] + x[0], v[1] + x[1], v[2] + x[2], v[3] + x[3]];
            }
            // SAFETY: row < m, columns < n of C or of split z's partial product; this thread
            // alone writes them (16-byte aligned where vector: n and first_col multiples of 4).
            unsafe { store4(out.wrapping_add(at), v, n - first_col.min(n), vector) };
        }
        if splits == 1 {
            return;
        }
        // The strip's last split to finish adds the partial products in split order (the order
        // of matmul_split_k_reduce, so that the sum is the same whichever block comes last),
        // then sets the counter back to zero for the next launch. A release-acquire handshake
        // as in the tile kernels' split tail: the barrier orders the block's stores before the
        // first thread's fence and increment; its fence after the increment orders the loads.
        let flag = crate::shared_array!(MATMUL_DECODE_LAST: [u32; 1]);
        let counter = counters.wrapping_add(thread::block_idx_x() as usize);
        thread::sync_threads();
        if tid == 0 {
            thread::thread_fence();
            // SAFETY: the strip's counter (kernel contract: one per strip, zero at the launch).
            let arrived = unsafe { atomic::global_fetch_add_u32(counter, 1) };
            thread::thread_fence();
            // SAFETY: element 0 of the one-word array; read after the barrier below.
            unsafe { flag.store(0, (arrived + 1 == splits) as u32) };
        }
        thread::sync_threads();
        // SAFETY: written before the barrier above.
        if unsafe { flag.load(0) } == 0 {
            return;
        }
        if row < m {
            let cols = n - first_col.min(n);
            // SAFETY: row < m, columns < n: split 0's partial, written before the handshake.
            let mut v = unsafe { load4_cg(partials.wrapping_add(at), cols, vector) };
            // REDUCE_LOADS partials in flight, then added in split order: one L2 round trip per
            // split (a load, then its add) made the sum of 8 splits most of a short product's time.
            // The unrolled lists below name REDUCE_LOADS indices: a longer step would skip partials.
            const _: () = assert!(REDUCE_LOADS == 8);
            let mut zz = 1usize;
            while zz < splits as usize {
                let mut xs = [[0.0f32; 4]; REDUCE_LOADS];
                unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                    if zz + i < splits as usize {
                        // SAFETY: the same elements of split zz + i's partial product (< splits).
                        xs[i] = unsafe { load4_cg(partials.wrapping_add((zz + i) * len + at), cols, vector) };
                    }
                });
                unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                    if zz + i < splits as usize {
                        let x = xs[i];
                        v = [v[0] + x[0], v[1] + x[1], v[2] + x[2], v[3] + x[3]];
                    }
                });
                zz += REDUCE_LOADS;
            }
            // SAFETY: row < m, columns < n of C; one writer per element.
            unsafe { store4(c.wrapping_add(at), v, cols, vector) };
        }
        if tid == 0 {
            // SAFETY: the strip's counter; every split of the strip has arrived.
            unsafe { atomic::global_add_u32(counter, 0u32.wrapping_sub(splits)) };
        }
    }

    /// Stores the first `cols.min(4)` of `v` at `dst`: one 16-byte store where `vector` and all
    /// four are inside.
    ///
    /// # Safety
    /// `dst .. dst + cols.min(4)` are `f32` this thread may write; 16-byte aligned where `vector`.
    #[inline(always)]
    unsafe fn store4(dst: *mut f32, v: [f32; 4], cols: u32, vector: bool) {
        if vector && cols >= 4 {
            // SAFETY: forwarded: four elements, 16-byte aligned.
            unsafe { mem::store_global_v4_f32(dst, v) };
            return;
        }
        unroll!(e in [0, 1, 2, 3] {
            if (e as u32) < cols {
                // SAFETY: forwarded: element e < cols.
                unsafe { mem::store_global_f32(dst.wrapping_add(e), v[e]) };
            }
        });
    }

    /// The first `cols.min(4)` `f32` at `src` from L2 (`ld.global.cg`, where other SMs' stores
    /// are), zeros after them.
    ///
    /// # Safety
    /// `src .. src + cols.min(4)` are readable `f32`; 16-byte aligned where `vector`.
    #[inline(always)]
    unsafe fn load4_cg(src: *const f32, cols: u32, vector: bool) -> [f32; 4] {
        if vector && cols >= 4 {
            // SAFETY: forwarded.
            return unsafe { mem::load_global_cg_v4_f32(src) };
        }
        let mut v = [0.0f32; 4];
        unroll!(e in [0, 1, 2, 3] {
            if (e as u32) < cols {
                // SAFETY: forwarded: element e < cols.
                v[e] = unsafe { mem::load_global_cg_f32(src.wrapping_add(e)) };
            }
        });
        v
    }
}

#[cfg(all(target_arch = "nvptx64", feature = "hopper"))]
crate::hopper_kernel! {
    /// `C = A * B` for `m <= 16` from BF16 operands; see the [module documentation](self).
    ///
    /// # Safety
    /// See the module documentation.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn matmul_decode_bf16(
        a: *const u8,
        b: *const u8,
        partials: *mut f32,
        c: *mut f32,
        counters: *mut u32,
        m: u32,
        k: u32,
        n: u32,
        ld_a: u32,
        ld_b: u32,
        k_chunk: u32,
    ) {
        // SAFETY: the kernel contract is the body's.
        unsafe { gpu::run::<false>(a, b, partials, c, counters, m, k, n, ld_a, ld_b, k_chunk) }
    }

    /// `C = A * B` for `m <= 16` from F16 (IEEE half) operands: `matmul_decode_bf16`'s body with
    /// the F16 instruction; see the [module documentation](self).
    ///
    /// # Safety
    /// See the module documentation (F16 where it says BF16).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn matmul_decode_f16(
        a: *const u8,
        b: *const u8,
        partials: *mut f32,
        c: *mut f32,
        counters: *mut u32,
        m: u32,
        k: u32,
        n: u32,
        ld_a: u32,
        ld_b: u32,
        k_chunk: u32,
    ) {
        // SAFETY: the kernel contract is the body's.
        unsafe { gpu::run::<true>(a, b, partials, c, counters, m, k, n, ld_a, ld_b, k_chunk) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `mma.m16n8k16` as the PTX ISA defines its fragments, on the CPU: lane `(g, t)`'s registers
    /// as `[u32; 4]` / `[u32; 2]` of BF16 pairs, accumulators as `[f32; 4]`.
    fn mma_reference(a: &[[u32; 4]; 32], b: &[[u32; 2]; 32], c: &mut [[f32; 4]; 32]) {
        let bf = |bits: u32| f32::from_bits(bits << 16);
        let half = |word: u32, h: usize| bf((word >> (16 * h)) & 0xFFFF);
        // Rebuild the 16 x 16 A and 16 x 8 B from the fragments.
        let mut am = [[0.0f32; 16]; 16];
        let mut bm = [[0.0f32; 8]; 16];
        for lane in 0..32 {
            let (g, t) = (lane / 4, lane % 4);
            for h in 0..2 {
                am[g][2 * t + h] = half(a[lane][0], h);
                am[g + 8][2 * t + h] = half(a[lane][1], h);
                am[g][2 * t + 8 + h] = half(a[lane][2], h);
                am[g + 8][2 * t + 8 + h] = half(a[lane][3], h);
                bm[2 * t + h][g] = half(b[lane][0], h);
                bm[2 * t + 8 + h][g] = half(b[lane][1], h);
            }
        }
        for (lane, c) in c.iter_mut().enumerate() {
            let (g, t) = (lane / 4, lane % 4);
            for (i, c) in c.iter_mut().enumerate() {
                let (row, col) = (g + 8 * (i / 2), 2 * t + i % 2);
                *c += (0..16).map(|kk| am[row][kk] * bm[kk][col]).sum::<f32>();
            }
        }
    }

    /// Small integers as BF16 bits (exact).
    fn bf16_bits(x: i32) -> u32 {
        (x as f32).to_bits() >> 16
    }

    #[test]
    fn the_permuted_fragments_multiply_a_16_row_step_of_row_major_b_into_the_right_columns() {
        // A: 16 x 16, B: 16 x 64 (one warp's strip, one step), small integers: exact in f32.
        let av = |r: usize, kk: usize| ((r * 7 + kk * 3) % 11) as i32 - 5;
        let bv = |kk: usize, c: usize| ((kk * 5 + c * 13) % 9) as i32 - 4;
        let mut acc = [[[0.0f32; 4]; 32]; 8];
        let mut a_frag = [[0u32; 4]; 32];
        let mut rows = [[[0u32; 4]; 4]; 32];
        for lane in 0..32 {
            let (g, t) = (lane / 4, lane % 4);
            // A[row][4t .. 4t + 4] as two words.
            let quad = |row: usize| -> [u32; 2] {
                core::array::from_fn(|w| {
                    bf16_bits(av(row, 4 * t + 2 * w)) | bf16_bits(av(row, 4 * t + 2 * w + 1)) << 16
                })
            };
            let (lo, hi) = (quad(g), quad(g + 8));
            a_frag[lane] = [lo[0], hi[0], lo[1], hi[1]];
            for (r, row) in rows[lane].iter_mut().enumerate() {
                *row = core::array::from_fn(|w| {
                    let c = 8 * g + 2 * w;
                    bf16_bits(bv(4 * t + r, c)) | bf16_bits(bv(4 * t + r, c + 1)) << 16
                });
            }
        }
        for (j, acc) in acc.iter_mut().enumerate() {
            let b: [[u32; 2]; 32] = core::array::from_fn(|lane| b_fragment(&rows[lane], j));
            mma_reference(&a_frag, &b, acc);
        }
        let mut seen = [[false; 64]; 16];
        for lane in 0..32u32 {
            let (g, t) = (lane / 4, lane % 4);
            for j in 0..8u32 {
                for i in 0..4u32 {
                    let (row, col) = output_coords(g, t, j, i);
                    let want: i32 = (0..16).map(|kk| av(row as usize, kk) * bv(kk, col as usize)).sum();
                    assert_eq!(acc[j as usize][lane as usize][i as usize], want as f32, "C[{row}][{col}]");
                    assert!(!seen[row as usize][col as usize]);
                    seen[row as usize][col as usize] = true;
                }
            }
        }
        assert!(seen.iter().all(|r| r.iter().all(|&s| s)), "every element of the 16 x 64 tile once");
    }

    #[test]
    fn the_launch_contract_fits_two_blocks_per_sm() {
        assert_eq!(THREADS, 256);
        assert_eq!(REDUCE_FLOATS * 4, 32 * 1024);
        const { assert!(BLOCKS_PER_SM * REDUCE_FLOATS * 4 <= 227 * 1024) };
        const { assert!(BLOCKS_PER_SM * THREADS * (65_536 / DECLARED_MAX_THREADS) <= 65_536) };
        assert_eq!(BLOCK_N, 8 * 8);
        assert_eq!(SUPER_K, 48);
    }
}
