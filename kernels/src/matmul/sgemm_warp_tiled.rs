//! `sgemm_warp_tiled`: the register-tiled SGEMM with more work per thread. Each block computes a
//! [`BLOCK_M`] x [`BLOCK_N`] tile of `C` with [`THREADS`] = 128 threads: four warps, each
//! owning a 64 x 64 warp tile, each thread an [`THREAD_M`] x [`THREAD_N`] = 8 x 16 tile of
//! accumulators (siboehm/SGEMM_CUDA's kernel 10, "warptiling", with CUTLASS's SIMT lane layout).
//! Against `sgemm` (256 threads, 8 x 8 each) every shared-memory operand feeds twice the FMAs
//! (6 16-byte loads per 128 FMAs instead of 4 per 64), a barrier covers twice the work, and
//! ptxas has 235 registers per thread to schedule in. It needs long waves to pay: with 4 warps
//! per block, an SM that runs one block in the last partial wave has one warp per scheduler, and
//! short `k` leaves the prologue and epilogue exposed. The `auto` planner picks between the two
//! (`host::matmul::plan`).
//!
//! # Parameters
//! As `sgemm`: row-major `A[m x k]`, `B[k x n]`, `C[m x n]`, any `m, k, n >= 1`; 16-byte
//! global accesses when `k % 4 == 0`, `n % 4 == 0` and the bases are 16-byte aligned
//! ([`vector_path`]), guarded 4-byte accesses otherwise; split-K on the grid's z dimension
//! ([`split_k_range`](super::split_k::split_k_range)`(z, k_chunk, k)`, slice `z` of `c`),
//! `k_chunk` a positive multiple of [`BLOCK_K`].
//!
//! # Thread mapping
//! Block 128 threads along x, grid `(ceil(n / 128), ceil(m / 128), splits)`, tiles in
//! [`grouped_tile`] order. Warp `w` owns rows `64 (w / 2) ..` and columns `64 (w % 2) ..` of
//! the block tile; lane `l` owns rows `4 (l / 4) + {0..4}` and `+ 32`, and columns
//! `4 (l % 4) + {0..4}` and `+ 16`, `+ 32`, `+ 48` of its warp tile ([`c_row`], [`c_col`]). Per
//! `k` a warp reads 8 distinct 16-byte pieces of the `A` column and 4 of the `B` row, each read
//! broadcast to the lanes sharing it.
//!
//! # Tiling
//! As `sgemm`: [`BLOCK_K`] = 8 deep slices, `A` stored transposed (`k`-major, rows padded to
//! [`A_TILE_STRIDE`] floats) and `B` as it is, double-buffered in static shared memory with one
//! barrier per slice; the next slice is loaded into registers during the multiply (two 16-byte
//! loads of `A` and two of `B` per thread, [`a_load_slot`], [`b_load_slot`]) and stored after it.
//! The 128 FMAs of each `k` walk the accumulators two rows at a time, both rows per column, the
//! columns reversed every other pair of rows ([`fma_order`]). The order of the FMAs in the PTX
//! is all this changes, and ptxas schedules this one into 2-3% less time than row by row
//! (measured at 2048^3-8192^3).
//!
//! # Shared memory
//! Static: [`SHARED_BYTES`] = 2 stages x (8 x 132 + 8 x 128) x 4 = 16,640 bytes.
//!
//! # Registers (sm_90, ptxas 12.9)
//! 235 registers, 0 spills: two blocks (8 warps) per SM. Check the `build-ptx --release`
//! report after changes: above 256 one block would fit.
//!
//! # Safety
//! `a`, `b`, `c` point to device allocations of `m*k`, `k*n`, `gridDim.z*m*n` `f32`; `c`
//! overlaps neither `a` nor `b`; the block is [`THREADS`] x 1 x 1; `k_chunk` is a positive
//! multiple of [`BLOCK_K`].

pub use super::sgemm::{grouped_tile, vector_path};

/// PTX symbol of the kernel.
pub const KERNEL: &str = "sgemm_warp_tiled";
/// Rows of `C` per block.
pub const BLOCK_M: u32 = 128;
/// Columns of `C` per block.
pub const BLOCK_N: u32 = 128;
/// Depth of the `A` and `B` slices staged in shared memory per step.
pub const BLOCK_K: u32 = 8;
/// Rows of `C` per thread (two groups of 4, [`ROW_GROUP_STEP`] apart).
pub const THREAD_M: u32 = 8;
/// Columns of `C` per thread (four groups of 4, [`COL_GROUP_STEP`] apart).
pub const THREAD_N: u32 = 16;
/// Rows and columns of a warp's tile of `C`.
pub const WARP_TILE: u32 = 64;
/// Threads per block (one-dimensional): four warps.
pub const THREADS: u32 = (BLOCK_M / WARP_TILE) * (BLOCK_N / WARP_TILE) * 32;
/// Distance between a thread's groups of 4 rows.
pub const ROW_GROUP_STEP: u32 = 32;
/// Distance between a thread's groups of 4 columns.
pub const COL_GROUP_STEP: u32 = 16;
/// Floats between consecutive `k` rows of the transposed `A` tile (16-byte aligned rows, and a
/// warp's transposing stores spread over all 32 banks).
pub const A_TILE_STRIDE: u32 = BLOCK_M + 4;
/// Floats of one stage of the transposed `A` tile.
pub const A_STAGE_FLOATS: u32 = BLOCK_K * A_TILE_STRIDE;
/// Floats of one stage of the `B` tile.
pub const B_STAGE_FLOATS: u32 = BLOCK_K * BLOCK_N;
/// Floats of one stage (the `A` tile, then the `B` tile).
pub const STAGE_FLOATS: u32 = A_STAGE_FLOATS + B_STAGE_FLOATS;
/// Static shared memory of one block: two stages.
pub const SHARED_BYTES: u32 = 2 * STAGE_FLOATS * size_of::<f32>() as u32;
/// 16-byte loads of each operand per thread and slice.
pub const LOADS_PER_OPERAND: u32 = BLOCK_M * BLOCK_K / 4 / THREADS;

const _: () = assert!(THREADS == 128 && LOADS_PER_OPERAND == 2 && BLOCK_K * BLOCK_N / 4 / THREADS == 2);
const _: () = assert!(ROW_GROUP_STEP * (THREAD_M / 4) == WARP_TILE && COL_GROUP_STEP * (THREAD_N / 4) == WARP_TILE);
const _: () = assert!(SHARED_BYTES <= 48 * 1024 && A_TILE_STRIDE.is_multiple_of(4));

/// Thread `tid`'s load `q` (`0..2`) of the `A` slice: `(row in the block tile, first of its 4 k
/// columns)`.
pub const fn a_load_slot(tid: u32, q: u32) -> (u32, u32) {
    (tid / 2 + q * (BLOCK_M / 2), (tid % 2) * 4)
}

/// Thread `tid`'s load `q` (`0..2`) of the `B` slice: `(k row, first of its 4 columns)`.
pub const fn b_load_slot(tid: u32, q: u32) -> (u32, u32) {
    (tid / 32 + q * (BLOCK_K / 2), (tid % 32) * 4)
}

/// Row in the block tile of thread `tid`'s accumulator row `i` (`0..8`).
pub const fn c_row(tid: u32, i: u32) -> u32 {
    let (warp, lane) = (tid / 32, tid % 32);
    (warp / 2) * WARP_TILE + (lane / 4) * 4 + i % 4 + (i / 4) * ROW_GROUP_STEP
}

/// Column in the block tile of thread `tid`'s accumulator column `j` (`0..16`).
pub const fn c_col(tid: u32, j: u32) -> u32 {
    let (warp, lane) = (tid / 32, tid % 32);
    (warp % 2) * WARP_TILE + (lane % 4) * 4 + j % 4 + (j / 4) * COL_GROUP_STEP
}

/// The accumulator `(i, j)` of the `step`-th FMA of one `k` (`0..128`): rows in pairs, both
/// rows of a pair per column, columns forward for even pairs and backward for odd ones.
pub const fn fma_order(step: u32) -> (u32, u32) {
    let pair = step / (2 * THREAD_N);
    let in_pair = step % (2 * THREAD_N);
    let j = if pair.is_multiple_of(2) { in_pair / 2 } else { THREAD_N - 1 - in_pair / 2 };
    (2 * pair + in_pair % 2, j)
}

/// Index in one stage of the transposed `A` tile of `A[row][kk]` of the slice.
pub const fn a_tile_index(kk: u32, row: u32) -> u32 {
    kk * A_TILE_STRIDE + row
}

/// Index in one stage of `B[kk][col]` of the slice.
pub const fn b_tile_index(kk: u32, col: u32) -> u32 {
    A_STAGE_FLOATS + kk * BLOCK_N + col
}

#[cfg(target_arch = "nvptx64")]
mod device_code {
    use super::{
        A_TILE_STRIDE, BLOCK_K, BLOCK_M, BLOCK_N, COL_GROUP_STEP, ROW_GROUP_STEP, STAGE_FLOATS, THREAD_M, THREAD_N,
        a_load_slot, a_tile_index, b_load_slot, b_tile_index, c_col, c_row, fma_order, grouped_tile, vector_path,
    };
    use crate::device::shared::SharedArray;
    use crate::device::{math::fma, thread};
    use crate::matmul::guarded;
    use crate::matmul::split_k::split_k_range;
    use crate::{gpu_kernel, shared_array};

    const FLOATS: usize = 2 * STAGE_FLOATS as usize;
    type Tile = SharedArray<f32, FLOATS>;
    /// One slice's loads of this thread: two 4-float pieces of `A`, two of `B`.
    type Loads = [[f32; 4]; 4];

    gpu_kernel! {
        /// `C = A * B` with 128 x 128 block tiles, 64 x 64 warp tiles and 8 x 16 thread tiles;
        /// see the [module documentation](super).
        ///
        /// # Safety
        /// `a`, `b`, `c` hold `m*k`, `k*n`, `gridDim.z*m*n` `f32` on the device, `c` overlaps
        /// neither input, the block is `THREADS` x 1 x 1, and `k_chunk` is a positive multiple
        /// of `BLOCK_K`; `guard` is null (the kernel runs) or the guard of a finished split-TF32
        /// scan of `a` and `b` (`crate::matmul::tf32x3`: the kernel runs only on its FP32 path).
        #[allow(clippy::too_many_arguments)]
        pub unsafe fn sgemm_warp_tiled(
            a: *const f32,
            b: *const f32,
            c: *mut f32,
            m: u32,
            k: u32,
            n: u32,
            k_chunk: u32,
            guard: *const u32,
        ) {
            // SAFETY: the guard is null or a finished scan's (kernel contract).
            if unsafe { crate::matmul::tf32x3::split_path_taken(guard) } {
                return;
            }
            let tile = shared_array!(SGEMM_WARP_TILED_STAGES: [f32; FLOATS]);
            let (k_begin, k_len) = split_k_range(thread::block_idx_z(), k_chunk, k);
            // On the vector path k_begin % 8 == 0 and n % 4 == 0, so every row piece and the
            // output slice stay 16-byte aligned whenever the bases are.
            let aligned = (a as usize | b as usize | c as usize).is_multiple_of(16);
            // Uniform across the launch: every thread takes the same path.
            if vector_path(k, n) && aligned {
                // SAFETY: forwarded kernel contract; k % 4 == n % 4 == 0 and aligned bases.
                unsafe { block_product::<true>(tile, a, b, c, m, k, n, k_begin, k_len) }
            } else {
                // SAFETY: forwarded kernel contract.
                unsafe { block_product::<false>(tile, a, b, c, m, k, n, k_begin, k_len) }
            }
        }
    }

    /// The block's product over columns `k_begin .. k_begin + k_len` of `A`, written to slice
    /// `blockIdx.z` of `c`; `VEC` as in `sgemm`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn block_product<const VEC: bool>(
        tile: Tile,
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        k_begin: u32,
        k_len: u32,
    ) {
        let tid = thread::thread_idx_x();
        let (tile_row, tile_col) =
            grouped_tile(thread::block_idx_x(), thread::block_idx_y(), thread::grid_dim_x(), thread::grid_dim_y());
        let (block_row, block_col) = (tile_row * BLOCK_M, tile_col * BLOCK_N);
        // The grid covers C with ceil divisions, so neither subtraction underflows.
        let (rows_left, cols_left) = (m - block_row, n - block_col);

        // Load q = 1 of A is 64 rows below load 0, of B 4 rows below: one pointer each.
        let (a_row, a_k) = a_load_slot(tid, 0);
        let (b_k, b_col) = b_load_slot(tid, 0);
        let a_rows_inside = [a_row < rows_left, a_row + BLOCK_M / 2 < rows_left];
        let b_col_inside = b_col < cols_left;
        let a_second = (BLOCK_M / 2) as usize * k as usize;
        let b_second = (BLOCK_K / 2) as usize * n as usize;
        // Only dereferenced where the load guards hold; wrapping arithmetic keeps the
        // out-of-range pointers of edge threads free of undefined behaviour.
        let mut a_next = a.wrapping_add((block_row + a_row) as usize * k as usize + (k_begin + a_k) as usize);
        let mut b_next = b.wrapping_add((k_begin + b_k) as usize * n as usize + (block_col + b_col) as usize);
        let b_step = BLOCK_K as usize * n as usize;
        let load = |a_next: *const f32, b_next: *const f32, k_left: u32| -> Loads {
            // SAFETY: the guards check every element against m, n and this split's k range.
            unsafe {
                [
                    guarded::load4::<_, VEC>(a_next, a_rows_inside[0], a_k, k_left),
                    guarded::load4::<_, VEC>(a_next.wrapping_add(a_second), a_rows_inside[1], a_k, k_left),
                    guarded::load4::<_, VEC>(b_next, b_col_inside && b_k < k_left, b_col, cols_left),
                    guarded::load4::<_, VEC>(
                        b_next.wrapping_add(b_second),
                        b_col_inside && b_k + BLOCK_K / 2 < k_left,
                        b_col,
                        cols_left,
                    ),
                ]
            }
        };
        let (a_store, b_store) = (a_tile_index(a_k, a_row) as usize, b_tile_index(b_k, b_col) as usize);
        let store = |stage: usize, loads: Loads| {
            unroll!(i in [0, 1, 2, 3] {
                let at = stage + a_store + i * A_TILE_STRIDE as usize;
                // SAFETY: (a_k + i, a_row) and (a_k + i, a_row + 64) of the stage: in bounds,
                // this thread's own slots, and no thread reads the stage before the next barrier.
                unsafe {
                    tile.store(at, loads[0][i]);
                    tile.store(at + (BLOCK_M / 2) as usize, loads[1][i]);
                }
            });
            // SAFETY: rows b_k and b_k + 4, columns b_col.. of the stage: in bounds, multiples
            // of 4, this thread's own slots.
            unsafe {
                tile.store4(stage + b_store, loads[2]);
                tile.store4(stage + b_store + (BLOCK_K / 2 * BLOCK_N) as usize, loads[3]);
            }
        };
        let mut k_left = k_len;
        store(0, load(a_next, b_next, k_left));
        // Stage 0 is complete before any thread reads another thread's elements of it.
        thread::sync_threads();
        let (a_read, b_read) = (c_row(tid, 0) as usize, b_tile_index(0, c_col(tid, 0)) as usize);
        let mut acc = [[0.0f32; THREAD_N as usize]; THREAD_M as usize];
        let mut stage = 0;
        // One pass per slice, the same instructions every pass: the slice after the last one is
        // all outside A and B, so its loads are predicated off and it stores zeros nobody reads.
        for _ in 0..k_len.div_ceil(BLOCK_K) {
            k_left = k_left.saturating_sub(BLOCK_K);
            a_next = a_next.wrapping_add(BLOCK_K as usize);
            b_next = b_next.wrapping_add(b_step);
            // Issued now, completing during the multiply.
            let next = load(a_next, b_next, k_left);
            // SAFETY: reads only the current stage, complete since the last barrier.
            unsafe { multiply_slice(tile, stage + a_read, stage + b_read, &mut acc) };
            stage = STAGE_FLOATS as usize - stage;
            // The other stage was last read before the last barrier.
            store(stage, next);
            // The new stage is complete before anyone reads it, and every thread has finished
            // reading the old one before the next pass overwrites it.
            thread::sync_threads();
        }
        let c = c.wrapping_add(thread::block_idx_z() as usize * m as usize * n as usize);
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
            let row = c_row(tid, i as u32);
            if row < rows_left {
                let c_row_ptr = c.wrapping_add((block_row + row) as usize * n as usize + block_col as usize);
                unroll!(g in [0, 1, 2, 3] {
                    let col = c_col(tid, 4 * g as u32);
                    let v = [acc[i][4 * g], acc[i][4 * g + 1], acc[i][4 * g + 2], acc[i][4 * g + 3]];
                    // SAFETY: row < m; the guard admits columns < n; this thread's own
                    // elements; 16-byte aligned on the vector path (c, n, col multiples of 4).
                    unsafe { guarded::store4::<VEC>(c_row_ptr.wrapping_add(col as usize), v, col, cols_left) };
                });
            }
        });
    }

    /// Adds one slice's product into the accumulators: per `k`, two 16-byte loads of the
    /// transposed `A` column and four of the `B` row, then 128 FMAs in [`fma_order`].
    ///
    /// # Safety
    /// `a_at` / `b_at` are this thread's operand offsets in the current stage, which a barrier
    /// has made complete and no thread writes until the next barrier.
    #[inline(always)]
    unsafe fn multiply_slice(tile: Tile, a_at: usize, b_at: usize, acc: &mut [[f32; 16]; 8]) {
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            let (a_row, b_row) = (a_at + kk * A_TILE_STRIDE as usize, b_at + kk * BLOCK_N as usize);
            let mut a_frag = [0.0f32; 8];
            let mut b_frag = [0.0f32; 16];
            unroll!(g in [0, 1] {
                // SAFETY: multiples of 4 inside the stage, complete since the last barrier.
                let v = unsafe { tile.load4(a_row + g * ROW_GROUP_STEP as usize) };
                unroll!(e in [0, 1, 2, 3] { a_frag[4 * g + e] = v[e]; });
            });
            unroll!(g in [0, 1, 2, 3] {
                // SAFETY: as above.
                let v = unsafe { tile.load4(b_row + g * COL_GROUP_STEP as usize) };
                unroll!(e in [0, 1, 2, 3] { b_frag[4 * g + e] = v[e]; });
            });
            unroll!(step in [
                0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49,
                50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73,
                74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97,
                98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116,
                117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127
            ] {
                let (i, j) = fma_order(step as u32);
                let (i, j) = (i as usize, j as usize);
                acc[i][j] = fma(a_frag[i], b_frag[j], acc[i][j]);
            });
        });
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::matmul::test_support::{
        assert_emulation_matches_plain_product, assert_partition, bank, store_thread_tiles,
    };
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn launch_contract_is_128_threads_and_16640_bytes_of_static_shared_memory() {
        assert_eq!((THREADS, SHARED_BYTES), (128, 2 * (8 * 132 + 8 * 128) * 4));
    }

    #[test]
    fn load_slots_cover_each_slice_exactly_once_in_vectors_of_four() {
        let loads = |slot: fn(u32, u32) -> (u32, u32)| {
            (0..THREADS).flat_map(move |t| (0..LOADS_PER_OPERAND).map(move |q| slot(t, q)))
        };
        assert_partition(BLOCK_M, BLOCK_K, loads(a_load_slot).flat_map(|(row, k)| (0..4).map(move |i| (row, k + i))));
        assert_partition(BLOCK_K, BLOCK_N, loads(b_load_slot).flat_map(|(k, col)| (0..4).map(move |i| (k, col + i))));
        // The kernel reaches load 1 from load 0 by a fixed distance.
        for t in 0..THREADS {
            assert_eq!(a_load_slot(t, 1), (a_load_slot(t, 0).0 + BLOCK_M / 2, a_load_slot(t, 0).1));
            assert_eq!(b_load_slot(t, 1), (b_load_slot(t, 0).0 + BLOCK_K / 2, b_load_slot(t, 0).1));
        }
    }

    #[test]
    fn thread_tiles_partition_the_block_tile_in_groups_of_four() {
        assert_partition(
            BLOCK_M,
            BLOCK_N,
            (0..THREADS)
                .flat_map(|t| (0..THREAD_M).flat_map(move |i| (0..THREAD_N).map(move |j| (c_row(t, i), c_col(t, j))))),
        );
        for t in 0..THREADS {
            for i in 0..THREAD_M {
                assert_eq!(c_row(t, i), c_row(t, 0) + i % 4 + (i / 4) * ROW_GROUP_STEP);
            }
            for j in 0..THREAD_N {
                assert_eq!(c_col(t, j), c_col(t, 0) + j % 4 + (j / 4) * COL_GROUP_STEP);
            }
            assert!(c_row(t, 0).is_multiple_of(4) && c_col(t, 0).is_multiple_of(4));
        }
    }

    #[test]
    fn each_warp_owns_one_64x64_tile() {
        for warp in 0..THREADS / 32 {
            let lanes = warp * 32..warp * 32 + 32;
            let rows: Vec<u32> = lanes.clone().flat_map(|t| (0..THREAD_M).map(move |i| c_row(t, i))).collect();
            let cols: Vec<u32> = lanes.flat_map(|t| (0..THREAD_N).map(move |j| c_col(t, j))).collect();
            let span = |v: &[u32]| (v.iter().min().copied().unwrap(), v.iter().max().copied().unwrap());
            assert_eq!(span(&rows), ((warp / 2) * 64, (warp / 2) * 64 + 63));
            assert_eq!(span(&cols), ((warp % 2) * 64, (warp % 2) * 64 + 63));
        }
    }

    #[test]
    fn fma_order_visits_every_accumulator_once_two_rows_per_column_snaking() {
        let steps = THREAD_M * THREAD_N;
        assert_partition(THREAD_M, THREAD_N, (0..steps).map(fma_order));
        for s in (0..steps).step_by(2) {
            // Each element of B feeds two consecutive FMAs, rows 2p and 2p + 1.
            let ((i0, j0), (i1, j1)) = (fma_order(s), fma_order(s + 1));
            assert_eq!((j0, i0 % 2, i1), (j1, 0, i0 + 1));
        }
        for pair in 1..THREAD_M / 2 {
            // A new row pair starts in the column where the last one ended.
            let s = pair * 2 * THREAD_N;
            assert_eq!(fma_order(s).1, fma_order(s - 1).1);
        }
    }

    #[test]
    fn a_warps_transposing_stores_hit_32_distinct_banks() {
        for warp in 0..THREADS / 32 {
            for q in 0..LOADS_PER_OPERAND {
                for i in 0..4 {
                    let mut banks: Vec<u32> = (warp * 32..warp * 32 + 32)
                        .map(|t| {
                            let (row, k) = a_load_slot(t, q);
                            bank(a_tile_index(k + i, row))
                        })
                        .collect();
                    banks.sort_unstable();
                    banks.dedup();
                    assert_eq!(banks.len(), 32, "warp {warp}, load {q}, store {i}: bank conflicts");
                }
            }
        }
    }

    #[test]
    fn operand_reads_of_a_warp_touch_distinct_banks_per_piece() {
        // A warp's 16-byte reads of one group: 8 distinct pieces of A, 4 of B, each in its own
        // 4 banks (lanes reading the same piece are served by one broadcast).
        for warp in 0..THREADS / 32 {
            let lanes = warp * 32..warp * 32 + 32;
            let mut a: Vec<u32> = lanes.clone().map(|t| a_tile_index(0, c_row(t, 0))).collect();
            let mut b: Vec<u32> = lanes.map(|t| b_tile_index(0, c_col(t, 0))).collect();
            for (pieces, want) in [(&mut a, 8), (&mut b, 4)] {
                pieces.sort_unstable();
                pieces.dedup();
                assert_eq!(pieces.len(), want);
                let mut banks: Vec<u32> = pieces.iter().flat_map(|&p| (0..4).map(move |e| bank(p + e))).collect();
                banks.sort_unstable();
                banks.dedup();
                assert_eq!(banks.len(), 4 * want);
            }
        }
    }

    /// The kernel's data flow on the CPU, guards included: zero-padded slices staged through the
    /// load slots and tile indices, accumulation per `kk` in [`fma_order`], stores inside `C`.
    fn emulate(a: &[f32], b: &[f32], m: u32, k: u32, n: u32) -> Vec<f32> {
        let mut c = vec![f32::NAN; (m * n) as usize];
        for block_row in (0..m).step_by(BLOCK_M as usize) {
            for block_col in (0..n).step_by(BLOCK_N as usize) {
                let mut acc = vec![[[0.0f32; THREAD_N as usize]; THREAD_M as usize]; THREADS as usize];
                for k0 in (0..k).step_by(BLOCK_K as usize) {
                    let mut stage = vec![f32::NAN; STAGE_FLOATS as usize];
                    for t in 0..THREADS {
                        for q in 0..LOADS_PER_OPERAND {
                            let (row, ka) = a_load_slot(t, q);
                            let (kb, col) = b_load_slot(t, q);
                            for i in 0..4 {
                                let (r, kk) = (block_row + row, k0 + ka + i);
                                let v = if r < m && kk < k { a[(r * k + kk) as usize] } else { 0.0 };
                                stage[a_tile_index(ka + i, row) as usize] = v;
                                let (kk, cc) = (k0 + kb, block_col + col + i);
                                let v = if kk < k && cc < n { b[(kk * n + cc) as usize] } else { 0.0 };
                                stage[b_tile_index(kb, col + i) as usize] = v;
                            }
                        }
                    }
                    for (t, acc) in acc.iter_mut().enumerate() {
                        let t = t as u32;
                        for kk in 0..BLOCK_K {
                            for step in 0..THREAD_M * THREAD_N {
                                let (i, j) = fma_order(step);
                                let x = stage[a_tile_index(kk, c_row(t, i)) as usize];
                                let y = stage[b_tile_index(kk, c_col(t, j)) as usize];
                                let cell = &mut acc[i as usize][j as usize];
                                *cell = x.mul_add(y, *cell);
                            }
                        }
                    }
                }
                store_thread_tiles(&mut c, &acc, (block_row, block_col), (m, n), c_row, c_col);
            }
        }
        c
    }

    #[test]
    fn emulated_data_flow_matches_a_plain_product_on_ragged_shapes() {
        assert_emulation_matches_plain_product(emulate);
    }
}
