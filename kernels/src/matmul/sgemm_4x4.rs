//! `sgemm_4x4`: `sgemm`'s scheme with a 4 x 4 tile of `C` per thread (`sgemm`: 8 x 8), on
//! block tiles of 32 rows and 32 or 64 columns, for small products, whose 128 x 128 tiles would
//! leave most of the GPU idle or split `k` into partial products that a second launch adds. A
//! 32 x 32 block tile takes 64 threads, so a product of 950 x 270 runs 270 blocks where `sgemm`'s
//! square tiles are 16: every SM works, each thread on a quarter of `sgemm`'s outputs. The shape
//! of cuBLAS's kernels for such products (`sm80_xmma_gemm_f32f32_..._tilesize32x32x8`, 4 x 4 per
//! thread).
//!
//! # Tiles
//! [`Tile`]: 32 x 32 (64 threads) and 32 x 64 (128 threads), each with kernels on `f32`, BF16
//! and F16 operands ([`KERNELS`]: `sgemm_4x4_32x32`, `sgemm_4x4_bf16_32x32`, ...),
//! the 16-bit ones widening exactly to `f32` as they load.
//!
//! # Parameters
//! As `sgemm`'s: row-major `A[m x k]`, `B[k x n]`, `C[m x n]` of `f32`, any `m, k, n >= 1`, the
//! grid `(ceil(n / block_n), ceil(m / block_m), splits)`; with `splits > 1` block `(bx, by, z)`
//! multiplies columns [`split_k_range`](super::split_k::split_k_range)`(z, k_chunk, k)` of `A`
//! and writes slice `z` of `c` (`super::split_k::matmul_split_k_reduce` adds the slices). The
//! vector path (one 16-byte load of 4 `f32`, or 8 bytes of 4 BF16 or F16, and 16-byte stores) is
//! `sgemm`'s: `k % 4 == 0`, `n % 4 == 0` and aligned bases ([`super::sgemm::vector_path`]);
//! otherwise one guarded access per element.
//!
//! # Thread mapping
//! Thread `t` of the block owns rows `4 (t / (block_n / 4)) ..` and columns `4 (t % (block_n /
//! 4)) ..` of the block's tile: the lanes of a warp read one row of the `B` slice in consecutive
//! 16-byte pieces and broadcast a few pieces of the transposed `A` slice, and a row of `C`
//! leaves in 16-byte stores of consecutive lanes.
//!
//! # Tiling
//! For each [`BLOCK_K`] = 8 slice, `A`'s `block_m x 8` elements are `2 block_m` vectors of 4
//! (vector `v`: row `v / 2`, columns `4 (v % 2) ..`) and `B`'s `8 x block_n` are `2 block_n`
//! (vector `v`: row `v / (block_n / 4)`, columns `4 (v % (block_n / 4)) ..`); thread `t` loads
//! vector `t` of each that exists (every thread of the 32 x 32 tile loads one of each, half the
//! 32 x 64 tile's threads one of `A`). `A` is stored transposed (`k`-major,
//! rows padded to `block_m + 4` floats, so a warp's transposing stores hit 32 banks), `B` as it
//! is. While a slice is multiplied (per `k`, one 16-byte shared load of each operand feeds 16
//! FMAs), the next one loads into registers; it is stored into the other of the two shared
//! stages after the multiply, and one barrier per slice orders both.
//!
//! # Registers
//! 59 a thread on `f32`, 63 on BF16 and F16 (release build; `cargo xtask build-ptx --release`
//! reports them), no spills: sixteen blocks of 64 threads fit on an SM.
//!
//! # Safety
//! `a`, `b`, `c` point to device allocations of `m*k`, `k*n` operand elements and
//! `gridDim.z*m*n` `f32`; `c` overlaps neither `a` nor `b` (they are read through the
//! non-coherent cache); the block is the tile's [`Tile::threads`] x 1 x 1; `k_chunk` is a
//! positive multiple of [`BLOCK_K`]; `guard` is null or a finished split-TF32 scan's guard (the
//! kernel then runs only on its FP32 path).

/// Depth of the `A` and `B` slices staged in shared memory per step.
pub const BLOCK_K: u32 = 8;
/// Rows and columns of `C` per thread.
pub const THREAD_TILE: u32 = 4;
/// Shared buffers per operand: one is multiplied while the next slice is written to the other.
pub const STAGES: u32 = 2;

/// A block tile of `sgemm_4x4`: `block_m x block_n` of `C`, 4 x 4 per thread.
///
/// ```
/// use kernels::matmul::sgemm_4x4::Tile;
/// assert_eq!((Tile::T32X32.threads(), Tile::T32X64.threads()), (64, 128));
/// assert_eq!(Tile::T32X64.shared_bytes(), 2 * (8 * 36 + 8 * 64) * 4);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tile {
    block_m: u32,
    block_n: u32,
}

impl Tile {
    /// 32 x 32: 64 threads.
    pub const T32X32: Self = Self { block_m: 32, block_n: 32 };
    /// 32 x 64: 128 threads.
    pub const T32X64: Self = Self { block_m: 32, block_n: 64 };
    /// Every tile, smallest first.
    pub const ALL: [Self; 2] = [Self::T32X32, Self::T32X64];

    /// Rows of `C` per block.
    pub const fn block_m(self) -> u32 {
        self.block_m
    }

    /// Columns of `C` per block.
    pub const fn block_n(self) -> u32 {
        self.block_n
    }

    /// Threads per block: one per 4 x 4 of the tile.
    pub const fn threads(self) -> u32 {
        (self.block_m / THREAD_TILE) * (self.block_n / THREAD_TILE)
    }

    /// Floats between consecutive `k` rows of the transposed `A` slice.
    pub const fn a_stride(self) -> u32 {
        self.block_m + 4
    }

    /// Floats of one stage of the transposed `A` slice.
    pub const fn a_stage_floats(self) -> u32 {
        BLOCK_K * self.a_stride()
    }

    /// Floats of one stage of the `B` slice.
    pub const fn b_stage_floats(self) -> u32 {
        BLOCK_K * self.block_n
    }

    /// Static shared memory of one block: both stages of both slices.
    pub const fn shared_bytes(self) -> u32 {
        STAGES * (self.a_stage_floats() + self.b_stage_floats()) * 4
    }
}

/// The kernels of each tile, by operand type in
/// [`OperandType::ALL`](super::element::OperandType::ALL) order.
///
/// ```
/// use kernels::matmul::sgemm_4x4::{KERNELS, Tile};
/// assert_eq!(KERNELS[0], (Tile::T32X32, ["sgemm_4x4_32x32", "sgemm_4x4_bf16_32x32", "sgemm_4x4_f16_32x32"]));
/// ```
pub const KERNELS: [(Tile, [&str; 3]); 2] = [
    (Tile::T32X32, ["sgemm_4x4_32x32", "sgemm_4x4_bf16_32x32", "sgemm_4x4_f16_32x32"]),
    (Tile::T32X64, ["sgemm_4x4_32x64", "sgemm_4x4_bf16_32x64", "sgemm_4x4_f16_32x64"]),
];

// Each thread loads at most one vector of each operand per slice: 2 block_m vectors of A and
// 2 block_n of B against block_m * block_n / 16 threads.
const _: () = {
    let mut i = 0;
    while i < KERNELS.len() {
        let t = KERNELS[i].0;
        assert!(2 * t.block_m <= t.threads() && 2 * t.block_n <= t.threads());
        assert!(t.shared_bytes() <= 48 * 1024);
        i += 1;
    }
};

#[cfg(target_arch = "nvptx64")]
mod device_code {
    use super::{BLOCK_K, STAGES, Tile};
    use crate::device::shared::SharedArray;
    use crate::device::{math::fma, thread};
    use crate::matmul::element::{Bf16, Element, F16};
    use crate::matmul::guarded;
    use crate::matmul::sgemm::vector_path;
    use crate::matmul::split_k::split_k_range;
    use crate::{gpu_kernel, shared_array};

    /// Floats of both stages of the transposed `A` slice of the tile `block_m x block_n`.
    const fn a_floats(block_m: u32, block_n: u32) -> usize {
        (STAGES * Tile { block_m, block_n }.a_stage_floats()) as usize
    }

    /// Floats of both stages of the `B` slice of the tile `block_m x block_n`.
    const fn b_floats(block_m: u32, block_n: u32) -> usize {
        (STAGES * Tile { block_m, block_n }.b_stage_floats()) as usize
    }

    tile_storage! {
        tiles_32x32: 32 x 32, SGEMM_4X4_32X32_A, SGEMM_4X4_32X32_B;
        tiles_32x64: 32 x 64, SGEMM_4X4_32X64_A, SGEMM_4X4_32X64_B;
    }

    /// Declares the kernel for each operand type and tile: `$name` on `*const $t` operands with
    /// the tile `$bm x $bn`, whose shared slices `$tiles()` declares.
    macro_rules! kernels_4x4 {
        ($($name:ident: $t:ty, $bm:literal x $bn:literal, $tiles:ident;)*) => {
            gpu_kernel! {
                $(
                    #[doc = concat!("`C = A * B` on `", stringify!($t), "` operands with block tiles of ", stringify!($bm), " x ", stringify!($bn))]
                    /// and 4 x 4 thread tiles; see the [module documentation](super).
                    ///
                    /// # Safety
                    /// As in the [module documentation](super).
                    #[allow(clippy::too_many_arguments)]
                    pub unsafe fn $name(
                        a: *const $t,
                        b: *const $t,
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
                        let (tile_a, tile_b) = $tiles();
                        let (k_begin, k_len) = split_k_range(thread::block_idx_z(), k_chunk, k);
                        let aligned = guarded::bases_aligned(a, b, c);
                        // Uniform across the launch: every thread takes the same path.
                        if vector_path(k, n) && aligned {
                            // SAFETY: forwarded kernel contract; k % 4 == n % 4 == 0, aligned bases.
                            unsafe { block_product::<$t, true, $bm, $bn, _, _>(tile_a, tile_b, a, b, c, m, k, n, k_begin, k_len) }
                        } else {
                            // SAFETY: forwarded kernel contract.
                            unsafe { block_product::<$t, false, $bm, $bn, _, _>(tile_a, tile_b, a, b, c, m, k, n, k_begin, k_len) }
                        }
                    }
                )*
            }
        };
    }
    kernels_4x4! {
        sgemm_4x4_32x32: f32, 32 x 32, tiles_32x32;
        sgemm_4x4_bf16_32x32: Bf16, 32 x 32, tiles_32x32;
        sgemm_4x4_f16_32x32: F16, 32 x 32, tiles_32x32;
        sgemm_4x4_32x64: f32, 32 x 64, tiles_32x64;
        sgemm_4x4_bf16_32x64: Bf16, 32 x 64, tiles_32x64;
        sgemm_4x4_f16_32x64: F16, 32 x 64, tiles_32x64;
    }

    /// The block's product over columns `k_begin .. k_begin + k_len` of `A` (rows of `B`),
    /// written to slice `blockIdx.z` of `c`. `VEC`: vector global accesses, which needs
    /// `vector_path(k, n)`, `a` and `b` aligned to `T::VECTOR_BYTES` and `c` to 16 bytes.
    ///
    /// # Safety
    /// The kernel contract.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn block_product<
        T: Element,
        const VEC: bool,
        const BM: u32,
        const BN: u32,
        const AF: usize,
        const BF: usize,
    >(
        tile_a: SharedArray<f32, AF>,
        tile_b: SharedArray<f32, BF>,
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        k_begin: u32,
        k_len: u32,
    ) {
        let tile = Tile { block_m: BM, block_n: BN };
        let tid = thread::thread_idx_x();
        let (block_row, block_col) = (thread::block_idx_y() * BM, thread::block_idx_x() * BN);
        // The grid covers C with ceil divisions, so block_row < m and block_col < n.
        let (rows_left, cols_left) = (m - block_row, n - block_col);
        // This thread's vector of each slice, if it has one: A's row and first column, B's row
        // and first column.
        let (loads_a, a_row, a_k) = (tid < 2 * BM, tid / 2, (tid % 2) * 4);
        let (loads_b, b_k, b_col) = (tid < 2 * BN, tid / (BN / 4), (tid % (BN / 4)) * 4);
        // Only dereferenced where the load guards hold; wrapping arithmetic keeps the
        // out-of-range pointers of edge threads free of undefined behaviour.
        let mut a_next = a.wrapping_add((block_row + a_row) as usize * k as usize + (k_begin + a_k) as usize);
        let mut b_next = b.wrapping_add((k_begin + b_k) as usize * n as usize + (block_col + b_col) as usize);
        let b_step = BLOCK_K as usize * n as usize;
        // SAFETY (both loads): the guards check every element against m, n and this split's
        // remaining columns of A (rows of B) from the pointer on.
        let load = |a_next: *const T, b_next: *const T, k_left: u32| -> ([f32; 4], [f32; 4]) {
            let va = if loads_a {
                unsafe { guarded::load4::<T, VEC>(a_next, a_row < rows_left, a_k, k_left) }
            } else {
                [0.0; 4]
            };
            let vb = if loads_b {
                unsafe { guarded::load4::<T, VEC>(b_next, b_k < k_left, b_col, cols_left) }
            } else {
                [0.0; 4]
            };
            (va, vb)
        };
        let (a_store, b_store) = ((a_k * tile.a_stride() + a_row) as usize, (b_k * BN + b_col) as usize);
        // Writes this thread's vectors into one stage: A transposed (4 scalar stores), B as one
        // 16-byte store.
        // SAFETY (callers): no thread reads that stage until the next barrier; the slots are
        // this thread's own, inside the stage.
        let store = |stage: usize, (va, vb): ([f32; 4], [f32; 4])| {
            if loads_a {
                let at = stage * tile.a_stage_floats() as usize + a_store;
                unroll!(i in [0, 1, 2, 3] {
                    // SAFETY: (a_k + i, a_row) of the stage, this thread's own slot.
                    unsafe { tile_a.store(at + i * tile.a_stride() as usize, va[i]) };
                });
            }
            if loads_b {
                // SAFETY: a multiple of 4 inside the stage, this thread's own 4 slots.
                unsafe { tile_b.store4(stage * tile.b_stage_floats() as usize + b_store, vb) };
            }
        };
        // This thread's rows and columns of the tile.
        let (row0, col0) = ((tid / (BN / 4)) * 4, (tid % (BN / 4)) * 4);
        let mut acc = [[0.0f32; 4]; 4];
        let mut k_left = k_len;
        store(0, load(a_next, b_next, k_left));
        // Stage 0 is complete before any thread reads another thread's elements of it.
        thread::sync_threads();
        // One pass per slice: the slice after the last is all outside A and B, so its loads are
        // predicated off and it stores zeros that no one reads.
        let mut stage = 0;
        for _ in 0..k_len.div_ceil(BLOCK_K) {
            k_left = k_left.saturating_sub(BLOCK_K);
            a_next = a_next.wrapping_add(BLOCK_K as usize);
            b_next = b_next.wrapping_add(b_step);
            let next = load(a_next, b_next, k_left);
            let (a_at, b_at) = (stage * tile.a_stage_floats() as usize, stage * tile.b_stage_floats() as usize);
            unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
                // SAFETY: multiples of 4 inside the current stage, complete since the last barrier.
                let (fa, fb) = unsafe {
                    (
                        tile_a.load4(a_at + kk * tile.a_stride() as usize + row0 as usize),
                        tile_b.load4(b_at + kk * BN as usize + col0 as usize),
                    )
                };
                unroll!(i in [0, 1, 2, 3] {
                    unroll!(j in [0, 1, 2, 3] {
                        acc[i][j] = fma(fa[i], fb[j], acc[i][j]);
                    });
                });
            });
            // The other stage was last read in the previous pass, before the last barrier.
            store(stage ^ 1, next);
            stage ^= 1;
            // The new stage is complete before anyone reads it, and every thread has finished
            // reading the old one before the next pass overwrites it.
            thread::sync_threads();
        }
        let c = c.wrapping_add(thread::block_idx_z() as usize * m as usize * n as usize);
        unroll!(i in [0, 1, 2, 3] {
            let row = row0 + i as u32;
            if row < rows_left {
                let at = c.wrapping_add((block_row + row) as usize * n as usize + (block_col + col0) as usize);
                // SAFETY: row < m; the guard admits columns < n; this thread's own elements of
                // slice z; 16-byte aligned on the vector path (c, n and col0 multiples of 4).
                unsafe { guarded::store4::<VEC>(at, acc[i], col0, cols_left) };
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_thread_loads_at_most_one_vector_of_each_operand_a_slice() {
        for (tile, _) in KERNELS {
            let (a_vectors, b_vectors) = (2 * tile.block_m(), 2 * tile.block_n());
            assert!(a_vectors <= tile.threads() && b_vectors <= tile.threads(), "{tile:?}");
            // Together the vectors cover the slices exactly.
            assert_eq!(a_vectors * 4, tile.block_m() * BLOCK_K);
            assert_eq!(b_vectors * 4, tile.block_n() * BLOCK_K);
        }
    }

    #[test]
    fn the_threads_cover_the_tile_in_4_by_4_pieces() {
        for (tile, _) in KERNELS {
            let mut covered = [0u32; 32 * 64];
            let per_row = tile.block_n() / 4;
            for t in 0..tile.threads() {
                let (row0, col0) = ((t / per_row) * 4, (t % per_row) * 4);
                for i in 0..4 {
                    for j in 0..4 {
                        covered[((row0 + i) * tile.block_n() + col0 + j) as usize] += 1;
                    }
                }
            }
            let cells = (tile.block_m() * tile.block_n()) as usize;
            assert!(covered[..cells].iter().all(|&c| c == 1), "{tile:?}");
        }
    }
}
