//! `sgemm`: the "optimized" rung of the matmul ladder. Each block computes a
//! [`BLOCK_M`] x [`BLOCK_N`] tile of `C` and each thread an 8 x 8 tile of it in registers, from
//! [`BLOCK_K`]-deep slices of `A` and `B` staged in double-buffered shared memory (the technique
//! of siboehm/SGEMM_CUDA's kernels 5-6, "2D blocktiling" and "vectorized memory access", plus a
//! register prefetch of the next slice).
//!
//! # Narrow tiles
//! The same body runs on four narrow [`Tile`]s of the same area, for products with a side of at
//! most 32 or 64 ([`TILE_KERNELS`]: `sgemm_512x32`, `sgemm_256x64`, `sgemm_64x256`,
//! `sgemm_32x512`, each with BF16 and F16 forms): the 256 threads lie along the long side
//! ([`Tile::c_row`], [`Tile::c_col`]), a thread loads [`Tile::a_vectors`] / 256 vectors of `A`
//! and [`Tile::b_vectors`] / 256 of `B` per slice (at least one, or none for the threads past a
//! slice smaller than the block), its vectors 128 rows of `A` (or `256 / (block_n / 4)` rows of
//! `B`) apart. The 512 x 32 tile prefetches a slice in four parts ([`Tile::parts`]): a part's
//! loads are issued, a quarter of the slice multiplied, and the previous part stored, which
//! keeps it at 128 registers. The sections below describe the square tile; the narrow ones differ
//! only in these counts.
//!
//! # Small tiles
//! The same body on 64 x 128 (`sgemm_64x128`, 128 threads) and 64 x 64 (`sgemm_64x64`, 64
//! threads) tiles, each thread still an 8 x 8 register tile and whole vectors of the slices
//! ([`Tile::threads`]), for grids whose 128 x 128 tiles would leave the SMs few warps: four or
//! eight blocks share an SM, so one block's barrier no longer stalls the SM, and a small grid
//! spreads over more SMs.
//!
//! # Parameters
//! Row-major `A[m x k]`, `B[k x n]`, `C[m x n]` (`C = A * B`), any `m, k, n >= 1`; `A` and `B`
//! of `f32` (`sgemm`), BF16 (`sgemm_bf16`) or F16 (`sgemm_f16`), widened exactly to `f32` as
//! they are loaded ([`KERNELS`]), `C` of `f32`. Slices that cross an edge of `A` or `B` are
//! zero-filled in shared memory, and stores outside `C` are skipped. When `k % 4 == 0`,
//! `n % 4 == 0`, `a` and `b` are aligned for four elements (16 bytes of `f32`, 8 of BF16 or F16)
//! and `c` to 16 bytes ([`vector_path`]; every `cuMemAlloc` is), rows of `A` and `B` move four
//! elements per access (`ld.global.nc.v4.f32`, `ld.global.nc.v2.u32`) and rows of `C` in
//! `st.global.v4.f32`; otherwise the same kernel takes a scalar path, one guarded access per
//! element. The choice is one uniform branch per launch.
//!
//! # Split-K
//! The grid's z dimension splits the inner dimension: block `(bx, by, z)` multiplies columns
//! [`split_k_range`](super::split_k::split_k_range)`(z, k_chunk, k)` of `A` (rows of `B`) and writes its tile into slice `z` of
//! `c`, which then holds `gridDim.z` consecutive `m x n` partial products
//! (`super::split_k::matmul_split_k_reduce` adds them in a fixed order). With one split
//! (`k_chunk >= k`, grid z = 1) `c` is `C` itself. `k_chunk` is a multiple of [`BLOCK_K`], so
//! every split starts on a 16-byte boundary of `A`'s rows.
//!
//! # Thread mapping
//! Block [`THREADS`] (256) threads along x, grid `(ceil(n / BLOCK_N), ceil(m / BLOCK_M))`:
//! block `(bx, by)` owns `C[by * 128 ..][bx * 128 ..]`. Thread `t` (`tx = t % 16`,
//! `ty = t / 16`) accumulates the 8 x 8 product of tile rows `4 ty + {0..4}` and `64 + 4 ty +
//! {0..4}` with tile columns `4 tx + {0..4}` and `64 + 4 tx + {0..4}` ([`c_row`], [`c_col`]). The
//! split into halves 64 apart makes eight neighbouring lanes read 128 contiguous bytes of the `B`
//! tile (one conflict-free `ld.shared.v4.f32` wavefront; the two `ty` of a warp read the same
//! `B` and broadcast two `A` addresses), and sixteen lanes write 256 contiguous bytes of a row
//! of `C`.
//!
//! # Tiling
//! For each `BLOCK_K` = 8 slice of the inner dimension, thread `t` loads four consecutive
//! elements of `A` (row `t / 2`, columns `4 (t % 2) ..`, [`a_load_slot`]) and four of `B`
//! (row `t / 32`, columns `4 (t % 32) ..`, [`b_load_slot`]). `A`'s slice is stored transposed
//! (`k`-major, rows padded to [`A_TILE_STRIDE`] = 132 floats so the transposing stores of a warp
//! hit 32 different banks), `B`'s as it is, so that each inner step reads both operands with
//! `ld.shared.v4.f32`: per `k`, 2 + 2 vector loads feed 64 FMAs. While a slice is multiplied,
//! the next one is already loading from global memory into registers; it is written to the
//! other shared buffer after the multiply, and one barrier per slice orders both buffers.
//!
//! # Shared memory
//! Static: [`SHARED_BYTES`] = 2 stages x (8 x 132 + 8 x 128) x 4 = 16,640 bytes; no dynamic
//! shared memory.
//!
//! # Registers and SASS (sm_90, ptxas 12.9)
//! Release build: 128 registers for each operand type, 16,640 bytes of shared memory, 0-byte
//! stack, 0 spills, so two blocks (16 warps) fit on an SM; above 128 registers only one would.
//! The body generic over the operand type came out at 129, so the release PTX declares
//! `.maxntid 512` for the three kernels and for the narrow tiles' kernels that fit without
//! spilling, all but `sgemm_{bf16,f16}_256x64` (129 registers uncapped: one block an SM)
//! (`kernels::MAIN_MAX_THREADS`: 65,536 / 512 = 128 registers a thread, for blocks of 256);
//! check these figures in the `cargo xtask build-ptx --release` report after any change. On the vector path the main
//! loop is one pass of 580 instructions per 8-deep slice: 512 `FFMA` (88%), 32 `LDS.128`
//! (per `kk`: two of `A`, two of `B`, immediate offsets from two base registers), 2
//! `LDG.E.128.CONSTANT` (the next slice), 4 `STS` + 1 `STS.128` (storing it), one `BAR.SYNC`, and
//! about 25 integer instructions; no `LDL`/`STL` anywhere. `C` leaves through 16 `STG.E.128` per
//! thread. The scalar path's loop is the same multiply with 8 predicated `LDG.E.CONSTANT` (603
//! instructions). The accumulators stay in registers only because every index into them is a
//! compile-time constant: every loop over a register array is spelled out with `unroll!`.
//! The checked build (`build-ptx` without `--release`) needs 240 registers: it is for finding
//! bugs, not for timing.
//!
//! # Safety
//! `a`, `b`, `c` point to device allocations of `m*k`, `k*n` operand elements and
//! `gridDim.z*m*n` `f32`; `c` overlaps neither `a` nor `b` (they are read through the
//! non-coherent cache); the block is [`THREADS`] x 1 x 1; `k_chunk` is a positive multiple of
//! [`BLOCK_K`].

/// PTX symbol of the kernel on `f32` operands.
pub const KERNEL: &str = "sgemm";
/// PTX symbols of the kernel by operand type, in
/// [`OperandType::ALL`](super::element::OperandType::ALL) order.
///
/// ```
/// use kernels::matmul::element::OperandType;
/// assert_eq!(kernels::matmul::sgemm::KERNELS[OperandType::Bf16.index()], "sgemm_bf16");
/// ```
pub const KERNELS: [&str; 3] = [KERNEL, "sgemm_bf16", "sgemm_f16"];
/// Rows of `C` per block.
pub const BLOCK_M: u32 = 128;
/// Columns of `C` per block.
pub const BLOCK_N: u32 = 128;
/// Depth of the `A` and `B` slices staged in shared memory per step.
pub const BLOCK_K: u32 = 8;
/// Rows of `C` per thread (two groups of 4, [`BLOCK_M`] / 2 apart).
pub const THREAD_M: u32 = 8;
/// Columns of `C` per thread (two groups of 4, [`BLOCK_N`] / 2 apart).
pub const THREAD_N: u32 = 8;
/// Threads per block (one-dimensional).
pub const THREADS: u32 = (BLOCK_M / THREAD_M) * (BLOCK_N / THREAD_N);
/// Floats between consecutive `k` rows of the transposed `A` tile: [`BLOCK_M`] plus 4 floats of
/// padding (keeps 16-byte alignment, spreads a warp's transposing stores over all 32 banks).
pub const A_TILE_STRIDE: u32 = BLOCK_M + 4;
/// Shared buffers per operand: one is multiplied while the next slice is written to the other.
pub const STAGES: u32 = 2;
/// Floats of one stage of the transposed `A` tile.
pub const A_STAGE_FLOATS: u32 = BLOCK_K * A_TILE_STRIDE;
/// Floats of one stage of the `B` tile.
pub const B_STAGE_FLOATS: u32 = BLOCK_K * BLOCK_N;
/// Static shared memory of one block: both stages of both tiles.
pub const SHARED_BYTES: u32 = STAGES * (A_STAGE_FLOATS + B_STAGE_FLOATS) * size_of::<f32>() as u32;

// The load mappings give each thread exactly one 4-float vector of each tile, and the thread
// tile is two 4 x 4 quarters per dimension.
const _: () = assert!(THREADS * 4 == BLOCK_M * BLOCK_K && THREADS * 4 == BLOCK_K * BLOCK_N);
// `unroll!` lists in the kernel spell out 0..BLOCK_K and 0..THREAD_M.
const _: () = assert!(THREAD_M == 8 && THREAD_N == 8 && BLOCK_K == 8);
const _: () = assert!(A_TILE_STRIDE.is_multiple_of(4) && SHARED_BYTES <= 48 * 1024);

/// A block tile of the kernel family: one thread per 8 x 8 register tile of `C` (in two halves
/// per dimension), so a tile of 128 x 128's area has [`THREADS`] threads. [`Tile::SQUARE`] is
/// `sgemm`'s; the narrow tiles put the block's 256 threads along the long side of a product
/// whose other side is 32 or 64 wide, where a square tile would multiply padding; the small
/// tiles ([`Tile::HALF_WIDE`], [`Tile::QUARTER`]) have half or a quarter of its area and
/// threads, for grids too small to fill the SMs with 128 x 128 tiles ([`TILE_KERNELS`]).
///
/// ```
/// use kernels::matmul::sgemm::Tile;
/// assert_eq!((Tile::SQUARE.block_m(), Tile::SQUARE.block_n(), Tile::SQUARE.threads()), (128, 128, 256));
/// assert_eq!((Tile::TALL_32.block_m(), Tile::TALL_32.block_n()), (512, 32));
/// // 512 rows x 8 of k: four 16-byte vectors of A per thread and slice; B's 8 x 32 takes 64 threads.
/// assert_eq!((Tile::TALL_32.a_vectors(), Tile::TALL_32.b_vectors()), (1024, 64));
/// // 64 x 64 on 64 threads: two vectors of each operand per thread and slice.
/// assert_eq!((Tile::QUARTER.threads(), Tile::QUARTER.a_vectors(), Tile::QUARTER.b_vectors()), (64, 128, 128));
/// ```
///
/// The seven constants are the only tiles (the fields are private): a kernel exists for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    /// Rows of `C` per block.
    block_m: u32,
    /// Columns of `C` per block.
    block_n: u32,
}

impl Tile {
    /// `sgemm`'s 128 x 128.
    pub const SQUARE: Self = Self::of_width(128);
    /// 256 x 64, for products 33 to 64 columns wide.
    pub const TALL_64: Self = Self::of_width(64);
    /// 512 x 32, for products at most 32 columns wide.
    pub const TALL_32: Self = Self::of_width(32);
    /// 64 x 256, for products 33 to 64 rows tall.
    pub const WIDE_64: Self = Self::of_width(256);
    /// 32 x 512, for products at most 32 rows tall.
    pub const WIDE_32: Self = Self::of_width(512);
    /// 64 x 128 on 128 threads: half the square's area.
    pub const HALF_WIDE: Self = Self::new(64, 128);
    /// 64 x 64 on 64 threads: a quarter of the square's area.
    pub const QUARTER: Self = Self::new(64, 64);

    /// The tile of 128 x 128's area `block_n` wide (32, 64, 128, 256 or 512).
    pub(crate) const fn of_width(block_n: u32) -> Self {
        Self::new(BLOCK_M * BLOCK_N / block_n, block_n)
    }

    /// The tile `block_m x block_n`.
    pub(crate) const fn new(block_m: u32, block_n: u32) -> Self {
        Self { block_m, block_n }
    }

    /// Rows of `C` per block.
    pub const fn block_m(self) -> u32 {
        self.block_m
    }

    /// Columns of `C` per block.
    pub const fn block_n(self) -> u32 {
        self.block_n
    }

    /// Threads along a row of the tile (each 2 x 4 of its columns).
    pub const fn threads_x(self) -> u32 {
        self.block_n / THREAD_N
    }

    /// Threads of a block: one per 8 x 8 of the tile.
    pub const fn threads(self) -> u32 {
        (self.block_m / THREAD_M) * (self.block_n / THREAD_N)
    }

    /// Floats between consecutive `k` rows of the transposed `A` tile: `block_m` plus 4 of
    /// padding (16-byte alignment kept; a warp's transposing stores spread over all 32 banks).
    pub const fn a_stride(self) -> u32 {
        self.block_m + 4
    }

    /// Floats of one stage of the transposed `A` tile.
    pub const fn a_stage_floats(self) -> u32 {
        BLOCK_K * self.a_stride()
    }

    /// Floats of one stage of the `B` tile.
    pub const fn b_stage_floats(self) -> u32 {
        BLOCK_K * self.block_n
    }

    /// Static shared memory of one block: both stages of both tiles.
    pub const fn shared_bytes(self) -> u32 {
        STAGES * (self.a_stage_floats() + self.b_stage_floats()) * size_of::<f32>() as u32
    }

    /// 4-float vectors of one slice of `A` (`block_m x BLOCK_K`): vector `f` is loaded by thread
    /// `f % threads`, its `f / threads`-th.
    pub const fn a_vectors(self) -> u32 {
        self.block_m * BLOCK_K / 4
    }

    /// 4-float vectors of one slice of `B` (`BLOCK_K x block_n`), dealt out as [`Self::a_vectors`].
    pub const fn b_vectors(self) -> u32 {
        BLOCK_K * self.block_n / 4
    }

    /// Vectors of a slice of `vectors` one thread loads (threads past `vectors` load none).
    pub const fn per_thread(self, vectors: u32) -> u32 {
        let threads = self.threads();
        if vectors > threads { vectors / threads } else { 1 }
    }

    /// Parts a slice is prefetched in: one per vector of `A` where a thread loads four (the
    /// 512 x 32 tile), else one. A part's vectors are loaded, then its share of the slice's `k`
    /// is multiplied, then they are stored to the other stage: a quarter of the registers in
    /// flight, which keeps that tile at 128 registers (two blocks an SM; in one part it spills
    /// under the cap). The other tiles fit in one part, where the whole slice's loads have the
    /// whole multiply to arrive: the 32 x 512 tile (four vectors of `B` a thread) ran 29 x 3987
    /// x 15107 in 0.160 ms in one part and 0.256 in four (H200).
    pub const fn parts(self) -> u32 {
        let a = self.per_thread(self.a_vectors());
        if a > 2 { a } else { 1 }
    }

    /// Vector `f` of the `A` slice: `(row in the block tile, first of its 4 k columns)`.
    pub const fn a_load_slot(self, f: u32) -> (u32, u32) {
        let per_row = BLOCK_K / 4;
        (f / per_row, (f % per_row) * 4)
    }

    /// Vector `f` of the `B` slice: `(k row, first of its 4 columns in the block tile)`.
    pub const fn b_load_slot(self, f: u32) -> (u32, u32) {
        let per_row = self.block_n / 4;
        (f / per_row, (f % per_row) * 4)
    }

    /// Row in the block tile of thread `tid`'s accumulator row `i` (`0..8`).
    pub const fn c_row(self, tid: u32, i: u32) -> u32 {
        (tid / self.threads_x()) * 4 + i % 4 + (i / 4) * (self.block_m / 2)
    }

    /// Column in the block tile of thread `tid`'s accumulator column `j` (`0..8`).
    pub const fn c_col(self, tid: u32, j: u32) -> u32 {
        (tid % self.threads_x()) * 4 + j % 4 + (j / 4) * (self.block_n / 2)
    }

    /// Index in one stage of the transposed `A` tile of `A[row][kk]` of the slice.
    pub const fn a_tile_index(self, kk: u32, row: u32) -> u32 {
        kk * self.a_stride() + row
    }

    /// Index in one stage of the `B` tile of `B[kk][col]` of the slice.
    pub const fn b_tile_index(self, kk: u32, col: u32) -> u32 {
        kk * self.block_n + col
    }
}

/// Every tile with its kernels' PTX symbols by operand type (in
/// [`OperandType::ALL`](super::element::OperandType::ALL) order): [`KERNELS`] first.
///
/// ```
/// use kernels::matmul::sgemm::{TILE_KERNELS, Tile};
/// assert_eq!(TILE_KERNELS[1], (Tile::TALL_64, ["sgemm_256x64", "sgemm_bf16_256x64", "sgemm_f16_256x64"]));
/// ```
pub const TILE_KERNELS: [(Tile, [&str; 3]); 7] = [
    (Tile::SQUARE, KERNELS),
    (Tile::TALL_64, ["sgemm_256x64", "sgemm_bf16_256x64", "sgemm_f16_256x64"]),
    (Tile::TALL_32, ["sgemm_512x32", "sgemm_bf16_512x32", "sgemm_f16_512x32"]),
    (Tile::WIDE_64, ["sgemm_64x256", "sgemm_bf16_64x256", "sgemm_f16_64x256"]),
    (Tile::WIDE_32, ["sgemm_32x512", "sgemm_bf16_32x512", "sgemm_f16_32x512"]),
    (Tile::HALF_WIDE, ["sgemm_64x128", "sgemm_bf16_64x128", "sgemm_f16_64x128"]),
    (Tile::QUARTER, ["sgemm_64x64", "sgemm_bf16_64x64", "sgemm_f16_64x64"]),
];

/// Most 4-float vectors of `A` or `B` one thread loads per slice, over every tile.
pub const MAX_VECTORS_PER_THREAD: u32 = 4;

// Each thread loads whole vectors of both slices, at most MAX_VECTORS_PER_THREAD of either; a
// block is whole warps.
const _: () = {
    let mut i = 0;
    while i < TILE_KERNELS.len() {
        let t = TILE_KERNELS[i].0;
        let threads = t.threads();
        assert!(threads * THREAD_M * THREAD_N == t.block_m * t.block_n && threads.is_multiple_of(32));
        assert!(threads <= THREADS && t.block_m.is_multiple_of(2 * 4) && t.block_n.is_multiple_of(2 * 4));
        assert!(t.a_vectors() <= MAX_VECTORS_PER_THREAD * threads && t.b_vectors() <= MAX_VECTORS_PER_THREAD * threads);
        assert!(t.a_vectors().is_multiple_of(threads) || t.a_vectors() < threads);
        assert!(t.b_vectors().is_multiple_of(threads) || t.b_vectors() < threads);
        assert!(t.a_stride() % 32 == 4 && t.shared_bytes() <= 48 * 1024);
        i += 1;
    }
};

/// Thread `tid`'s share of the square tile's `A` slice: `(row in the block tile, first of its 4 k columns)`.
pub const fn a_load_slot(tid: u32) -> (u32, u32) {
    Tile::SQUARE.a_load_slot(tid)
}

/// Thread `tid`'s share of the square tile's `B` slice: `(k row, first of its 4 columns in the block tile)`.
pub const fn b_load_slot(tid: u32) -> (u32, u32) {
    Tile::SQUARE.b_load_slot(tid)
}

/// Row in the square block tile of thread `tid`'s accumulator row `i` (`0..8`).
pub const fn c_row(tid: u32, i: u32) -> u32 {
    Tile::SQUARE.c_row(tid, i)
}

/// Column in the square block tile of thread `tid`'s accumulator column `j` (`0..8`).
pub const fn c_col(tid: u32, j: u32) -> u32 {
    Tile::SQUARE.c_col(tid, j)
}

/// Index in one stage of the square tile's transposed `A` of `A[row][kk]` of the slice.
pub const fn a_tile_index(kk: u32, row: u32) -> u32 {
    Tile::SQUARE.a_tile_index(kk, row)
}

/// Index in one stage of the square tile's `B` of `B[kk][col]` of the slice.
pub const fn b_tile_index(kk: u32, col: u32) -> u32 {
    Tile::SQUARE.b_tile_index(kk, col)
}

/// Tile rows per group of [`grouped_tile`].
pub const GROUP_ROWS: u32 = 16;

/// The tile `(row, col)` of `C` that block `(bx, by)` of a `gx x gy` grid computes: blocks run
/// in launch order (x fastest), and consecutive ones walk down a group of [`GROUP_ROWS`] tile rows
/// before moving one tile column right, so the ~264 blocks resident at once share 16 rows of `A`
/// and 16 columns of `B` (32 + 32 MB at 4096^3) instead of 8 rows and all 32 columns (16 +
/// 64 MB), more of which stays in the 50 MB L2. A bijection of the grid onto the tiles.
pub const fn grouped_tile(bx: u32, by: u32, gx: u32, gy: u32) -> (u32, u32) {
    let id = by * gx + bx;
    let per_group = GROUP_ROWS * gx;
    let first_row = (id / per_group) * GROUP_ROWS;
    let rows = if gy - first_row < GROUP_ROWS { gy - first_row } else { GROUP_ROWS };
    let in_group = id % per_group;
    (first_row + in_group % rows, in_group / rows)
}

/// Whether rows of `A` (`k` floats) and of `B` and `C` (`n` floats) keep every 4-float group
/// that starts at a multiple of 4 16-byte aligned (given 16-byte aligned base pointers), and
/// inside the row or wholly outside it: the condition of the vector path.
pub const fn vector_path(k: u32, n: u32) -> bool {
    k.is_multiple_of(4) && n.is_multiple_of(4)
}

#[cfg(target_arch = "nvptx64")]
mod device_code {
    use super::{BLOCK_K, MAX_VECTORS_PER_THREAD, STAGES, Tile, grouped_tile, vector_path};
    use crate::device::shared::SharedArray;
    use crate::device::{math::fma, thread};
    use crate::matmul::element::{Bf16, Element, F16};
    use crate::matmul::guarded;
    use crate::matmul::split_k::split_k_range;
    use crate::{gpu_kernel, shared_array};

    /// Floats of both stages of the transposed `A` tile of the tile `block_m x block_n`.
    const fn a_floats(block_m: u32, block_n: u32) -> usize {
        (STAGES * Tile::new(block_m, block_n).a_stage_floats()) as usize
    }

    /// Floats of both stages of the `B` tile of the tile `block_m x block_n`.
    const fn b_floats(block_m: u32, block_n: u32) -> usize {
        (STAGES * Tile::new(block_m, block_n).b_stage_floats()) as usize
    }

    tile_storage! {
        square_tiles: 128 x 128, SGEMM_A, SGEMM_B;
        tall_64_tiles: 256 x 64, SGEMM_256X64_A, SGEMM_256X64_B;
        tall_32_tiles: 512 x 32, SGEMM_512X32_A, SGEMM_512X32_B;
        wide_64_tiles: 64 x 256, SGEMM_64X256_A, SGEMM_64X256_B;
        wide_32_tiles: 32 x 512, SGEMM_32X512_A, SGEMM_32X512_B;
        half_wide_tiles: 64 x 128, SGEMM_64X128_A, SGEMM_64X128_B;
        quarter_tiles: 64 x 64, SGEMM_64X64_A, SGEMM_64X64_B;
    }

    /// Declares the kernel for each operand type and tile: `$name(a, b, ...)` on `*const $t`
    /// operands with the tile `$bm x $bn`, whose shared memory `$tiles()` declares.
    macro_rules! sgemm_kernels {
        ($($name:ident: $t:ty, $bm:literal x $bn:literal, $tiles:ident;)*) => {
            gpu_kernel! {
                $(
                    #[doc = concat!("`C = A * B` on `", stringify!($t), "` operands with block tiles of ", stringify!($bm), " x ", stringify!($bn))]
                    /// and 8 x 8 thread tiles; see the [module documentation](super).
                    ///
                    /// # Safety
                    /// `a`, `b` hold `m*k`, `k*n` elements and `c` `gridDim.z*m*n` `f32` on the
                    /// device, `c` overlaps neither input, the block is the tile's
                    /// [`Tile::threads`](super::Tile::threads) x 1 x 1, and
                    /// `k_chunk` is a positive multiple of `BLOCK_K`; `guard` is null (the kernel
                    /// runs) or the guard of a finished split-TF32 scan of `a` and `b`
                    /// (`crate::matmul::tf32x3`: the kernel runs only on its FP32 path).
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
                        // SAFETY: forwarded kernel contract.
                        unsafe { sgemm_body::<$t, $bm, $bn, _, _>(tile_a, tile_b, a, b, c, m, k, n, k_chunk) }
                    }
                )*
            }
        };
    }
    sgemm_kernels! {
        sgemm: f32, 128 x 128, square_tiles;
        sgemm_bf16: Bf16, 128 x 128, square_tiles;
        sgemm_f16: F16, 128 x 128, square_tiles;
        sgemm_256x64: f32, 256 x 64, tall_64_tiles;
        sgemm_bf16_256x64: Bf16, 256 x 64, tall_64_tiles;
        sgemm_f16_256x64: F16, 256 x 64, tall_64_tiles;
        sgemm_512x32: f32, 512 x 32, tall_32_tiles;
        sgemm_bf16_512x32: Bf16, 512 x 32, tall_32_tiles;
        sgemm_f16_512x32: F16, 512 x 32, tall_32_tiles;
        sgemm_64x256: f32, 64 x 256, wide_64_tiles;
        sgemm_bf16_64x256: Bf16, 64 x 256, wide_64_tiles;
        sgemm_f16_64x256: F16, 64 x 256, wide_64_tiles;
        sgemm_32x512: f32, 32 x 512, wide_32_tiles;
        sgemm_bf16_32x512: Bf16, 32 x 512, wide_32_tiles;
        sgemm_f16_32x512: F16, 32 x 512, wide_32_tiles;
        sgemm_64x128: f32, 64 x 128, half_wide_tiles;
        sgemm_bf16_64x128: Bf16, 64 x 128, half_wide_tiles;
        sgemm_f16_64x128: F16, 64 x 128, half_wide_tiles;
        sgemm_64x64: f32, 64 x 64, quarter_tiles;
        sgemm_bf16_64x64: Bf16, 64 x 64, quarter_tiles;
        sgemm_f16_64x64: F16, 64 x 64, quarter_tiles;
    }

    /// The kernels' body on operands of type `T` with the tile `BM x BN`.
    ///
    /// # Safety
    /// As the kernels'.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn sgemm_body<T: Element, const BM: u32, const BN: u32, const AF: usize, const BF: usize>(
        tile_a: SharedArray<f32, AF>,
        tile_b: SharedArray<f32, BF>,
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        k: u32,
        n: u32,
        k_chunk: u32,
    ) {
        let (k_begin, k_len) = split_k_range(thread::block_idx_z(), k_chunk, k);
        // On the vector path k_begin % 8 == 0 and n % 4 == 0, so the split's first element of
        // A and B and its slice of the output are aligned for their vectors whenever the bases are.
        let aligned = guarded::bases_aligned(a, b, c);
        // Uniform across the launch: every thread takes the same path.
        if vector_path(k, n) && aligned {
            // SAFETY: forwarded kernel contract; k % 4 == n % 4 == 0 and aligned bases.
            unsafe { block_product::<T, true, BM, BN, AF, BF>(tile_a, tile_b, a, b, c, m, k, n, k_begin, k_len) }
        } else {
            // SAFETY: forwarded kernel contract.
            unsafe { block_product::<T, false, BM, BN, AF, BF>(tile_a, tile_b, a, b, c, m, k, n, k_begin, k_len) }
        }
    }

    /// This thread's loads of one slice: up to [`MAX_VECTORS_PER_THREAD`] vectors of each operand.
    type Slice = ([[f32; 4]; MAX_VECTORS_PER_THREAD as usize], [[f32; 4]; MAX_VECTORS_PER_THREAD as usize]);

    /// Whether this thread of `tile`'s block loads its `v`-th vector of a slice of `vectors`
    /// vectors in `part` of `parts`.
    #[inline(always)]
    fn loads(tile: Tile, tid: u32, v: usize, vectors: u32, part: u32, parts: u32) -> bool {
        // Tiles with fewer vectors than threads leave the higher threads idle; with more, every
        // thread loads vectors / threads. All but tid are compile-time constants.
        let per_thread = tile.per_thread(vectors);
        let in_part = (v as u32) * parts / per_thread == part;
        in_part && (v as u32) < per_thread && (vectors >= tile.threads() || tid < vectors)
    }

    /// The block's whole product over columns `k_begin .. k_begin + k_len` of `A` (rows of `B`),
    /// written to slice `blockIdx.z` of `c`. `VEC`: vector global accesses, which needs
    /// `vector_path(k, n)`, `a` and `b` aligned to `T::VECTOR_BYTES` and `c` to 16 bytes.
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
        let tile = Tile::new(BM, BN);
        let tid = thread::thread_idx_x();
        let (tile_row, tile_col) =
            grouped_tile(thread::block_idx_x(), thread::block_idx_y(), thread::grid_dim_x(), thread::grid_dim_y());
        let (block_row, block_col) = (tile_row * tile.block_m, tile_col * tile.block_n);
        // The grid covers C with ceil divisions, so block_row < m and block_col < n: these are
        // the rows and columns of C from the tile's corner to the edge, and never underflow.
        let (rows_left, cols_left) = (m - block_row, n - block_col);

        // Vector v of this thread is vector tid + v * threads of the slice; its first row of A
        // (column of B) and its k, for the guards and the shared stores.
        let (a_row, a_k) = tile.a_load_slot(tid);
        let (b_k, b_col) = tile.b_load_slot(tid);
        // Vectors of one thread are threads apart: whole rows of A further down, whole k rows of B.
        let a_rows_apart = tile.threads() / (BLOCK_K / 4);
        let b_ks_apart = tile.threads() / (tile.block_n / 4);
        // Only dereferenced where the load guards hold; wrapping arithmetic keeps the
        // out-of-range pointers of edge threads free of undefined behaviour.
        let mut a_next = a.wrapping_add((block_row + a_row) as usize * k as usize + (k_begin + a_k) as usize);
        let mut b_next = b.wrapping_add((k_begin + b_k) as usize * n as usize + block_col as usize + b_col as usize);
        let (a_apart, b_apart) = (a_rows_apart as usize * k as usize, b_ks_apart as usize * n as usize);
        let b_step = BLOCK_K as usize * n as usize;
        // Where this thread's loads land in a stage, and where its operands start.
        let a_store = tile.a_tile_index(a_k, a_row) as usize;
        let b_store = tile.b_tile_index(b_k, b_col) as usize;
        let (a_read, b_read) = (tile.c_row(tid, 0) as usize, tile.c_col(tid, 0) as usize);

        // SAFETY (both loads): the guards inside check every element against m, n and this
        // block's k range (k_left columns of A, rows of B, from a_next / b_next on).
        let parts = tile.parts();
        let load = |a_next: *const T, b_next: *const T, k_left: u32, part: u32| -> Slice {
            let mut s: Slice = ([[0.0; 4]; 4], [[0.0; 4]; 4]);
            unroll!(v in [0, 1, 2, 3] {
                if loads(tile, tid, v, tile.a_vectors(), part, parts) {
                    let row = a_row + v as u32 * a_rows_apart;
                    s.0[v] = unsafe {
                        guarded::load4::<_, VEC>(a_next.wrapping_add(v * a_apart), row < rows_left, a_k, k_left)
                    };
                }
                if loads(tile, tid, v, tile.b_vectors(), part, parts) {
                    let kb = b_k + v as u32 * b_ks_apart;
                    s.1[v] = unsafe {
                        guarded::load4::<_, VEC>(b_next.wrapping_add(v * b_apart), kb < k_left, b_col, cols_left)
                    };
                }
            });
            s
        };
        // Writes this thread's loaded vectors into one stage: A transposed (4 scalar stores per
        // vector, k-major), B as 16-byte stores.
        // SAFETY (callers): no thread reads that stage until the next barrier; the slots are
        // this thread's own, inside the stage.
        let store = |stage: usize, s: &Slice, part: u32| {
            let (a_at, b_at) = (stage * tile.a_stage_floats() as usize, stage * tile.b_stage_floats() as usize);
            unroll!(v in [0, 1, 2, 3] {
                if loads(tile, tid, v, tile.a_vectors(), part, parts) {
                    let at = a_at + a_store + v * a_rows_apart as usize;
                    unroll!(i in [0, 1, 2, 3] {
                        // SAFETY: (a_k + i, row) of the stage: in bounds, this thread's own slot.
                        unsafe { tile_a.store(at + i * tile.a_stride() as usize, s.0[v][i]) };
                    });
                }
                if loads(tile, tid, v, tile.b_vectors(), part, parts) {
                    let at = b_at + b_store + v * (b_ks_apart * tile.block_n) as usize;
                    // SAFETY: a multiple of 4 inside the stage, this thread's own 4 slots.
                    unsafe { tile_b.store4(at, s.1[v]) };
                }
            });
        };

        let mut acc = [[0.0f32; 8]; 8];
        let mut k_left = k_len;
        // The first slice whole, its loads in flight together: one round trip, not one a part.
        let mut first: [Slice; 4] = [([[0.0; 4]; 4], [[0.0; 4]; 4]); 4];
        unroll!(part in [0, 1, 2, 3] {
            if (part as u32) < parts {
                first[part] = load(a_next, b_next, k_left, part as u32);
            }
        });
        unroll!(part in [0, 1, 2, 3] {
            if (part as u32) < parts {
                store(0, &first[part], part as u32);
            }
        });
        // Stage 0 must be complete before any thread reads another thread's elements of it.
        thread::sync_threads();
        // One pass per slice, the same instructions every pass: the slice after the last one
        // is all outside A and B, so its loads are predicated off and it stores zeros that no
        // one reads. A body without an early exit is the one copy of the multiply; a peeled last
        // pass (a `break` after the multiply) was a second copy, where ptxas hoisted all 32
        // shared loads of the slice and the kernel grew to 219 registers.
        let mut stage = 0;
        for _ in 0..k_len.div_ceil(BLOCK_K) {
            k_left = k_left.saturating_sub(BLOCK_K);
            a_next = a_next.wrapping_add(BLOCK_K as usize);
            b_next = b_next.wrapping_add(b_step);
            let other = stage ^ 1;
            // Each part's loads have two parts' multiplies to arrive: a part is stored after the
            // next part's loads are issued and its own multiply is done.
            let mut held: Slice = ([[0.0; 4]; 4], [[0.0; 4]; 4]);
            unroll!(part in [0, 1, 2, 3] {
                if (part as u32) < parts {
                    let next = load(a_next, b_next, k_left, part as u32);
                    if part > 0 {
                        // The other stage was last read in the previous pass, before the last barrier.
                        store(other, &held, part as u32 - 1);
                    }
                    // SAFETY: reads only the current stage, complete since the last barrier.
                    unsafe {
                        multiply_slice(
                            tile,
                            tile_a,
                            tile_b,
                            stage * tile.a_stage_floats() as usize + a_read,
                            stage * tile.b_stage_floats() as usize + b_read,
                            &mut acc,
                            part as u32,
                        )
                    };
                    held = next;
                }
            });
            store(other, &held, parts - 1);
            stage = other;
            // One barrier per slice: the new stage is complete before anyone reads it, and
            // every thread has finished reading the old stage before the next pass overwrites it.
            thread::sync_threads();
        }
        // The output slice is located only now: a pointer computed before the loop would hold two
        // registers through it (147 instead of 127, one block per SM instead of two).
        let c = c.wrapping_add(thread::block_idx_z() as usize * m as usize * n as usize);
        // SAFETY: forwarded contract; each thread writes its own 8 x 8 elements of its slice.
        unsafe { store_c::<VEC>(tile, c, acc, tid, block_row, block_col, rows_left, cols_left, n) };
    }

    /// Adds `part` of the tile's [`Tile::parts`] of one slice's product into the accumulators
    /// (its share of the slice's `kk`): for each `kk`, two 16-byte loads of the transposed `A`
    /// column and two of the `B` row, then 64 FMAs (an outer product).
    ///
    /// # Safety
    /// `a_at` / `b_at` are this thread's operand offsets in the current stage, which a barrier
    /// has made complete and no thread writes until the next barrier.
    #[inline(always)]
    unsafe fn multiply_slice<const AF: usize, const BF: usize>(
        tile: Tile,
        tile_a: SharedArray<f32, AF>,
        tile_b: SharedArray<f32, BF>,
        a_at: usize,
        b_at: usize,
        acc: &mut [[f32; 8]; 8],
        part: u32,
    ) {
        let parts = tile.parts();
        let (half_m, half_n) = ((tile.block_m / 2) as usize, (tile.block_n / 2) as usize);
        unroll!(kk in [0, 1, 2, 3, 4, 5, 6, 7] {
            if (kk as u32) * parts / BLOCK_K == part {
                let (a_row, b_row) = (a_at + kk * tile.a_stride() as usize, b_at + kk * tile.block_n as usize);
                // SAFETY: multiples of 4 inside the stage (c_row/c_col offsets + kk rows), complete
                // since the last barrier.
                let (a_lo, a_hi, b_lo, b_hi) = unsafe {
                    (tile_a.load4(a_row), tile_a.load4(a_row + half_m), tile_b.load4(b_row), tile_b.load4(b_row + half_n))
                };
                let a_frag = [a_lo[0], a_lo[1], a_lo[2], a_lo[3], a_hi[0], a_hi[1], a_hi[2], a_hi[3]];
                let b_frag = [b_lo[0], b_lo[1], b_lo[2], b_lo[3], b_hi[0], b_hi[1], b_hi[2], b_hi[3]];
                unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
                    unroll!(j in [0, 1, 2, 3, 4, 5, 6, 7] {
                        acc[i][j] = fma(a_frag[i], b_frag[j], acc[i][j]);
                    });
                });
            }
        });
    }

    /// Writes this thread's 8 x 8 accumulators to `C`, skipping elements outside it; with `VEC`,
    /// 4 columns per 16-byte store.
    ///
    /// # Safety
    /// `C` holds `m * n` floats and no other thread writes these elements; with `VEC`, `c` is
    /// 16-byte aligned and `n % 4 == 0`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    unsafe fn store_c<const VEC: bool>(
        tile: Tile,
        c: *mut f32,
        acc: [[f32; 8]; 8],
        tid: u32,
        block_row: u32,
        block_col: u32,
        rows_left: u32,
        cols_left: u32,
        n: u32,
    ) {
        unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] {
            let row = tile.c_row(tid, i as u32);
            if row < rows_left {
                let c_row_ptr = c.wrapping_add((block_row + row) as usize * n as usize + block_col as usize);
                unroll!(half in [0, 1] {
                    let col = tile.c_col(tid, 4 * half as u32);
                    let v = [acc[i][4 * half], acc[i][4 * half + 1], acc[i][4 * half + 2], acc[i][4 * half + 3]];
                    // SAFETY: row < m; the guard admits columns < n; this thread's own elements;
                    // 16-byte aligned on the vector path (c, n and col multiples of 4).
                    unsafe { guarded::store4::<VEC>(c_row_ptr.wrapping_add(col as usize), v, col, cols_left) };
                });
            }
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

    const TILES: [Tile; 7] =
        [Tile::SQUARE, Tile::TALL_64, Tile::TALL_32, Tile::WIDE_64, Tile::WIDE_32, Tile::HALF_WIDE, Tile::QUARTER];

    #[test]
    fn every_tile_has_a_kernel_per_operand_type() {
        for tile in TILES {
            assert_eq!(TILE_KERNELS.iter().filter(|(t, _)| *t == tile).count(), 1, "{tile:?}");
            assert_eq!(tile.block_m() * tile.block_n(), tile.threads() * THREAD_M * THREAD_N, "{tile:?}");
        }
        assert_eq!(TILE_KERNELS.len(), TILES.len());
    }

    #[test]
    fn launch_contract_is_256_threads_and_static_shared_memory_under_48_kib() {
        // The 48 KiB limit of static shared memory is a compile-time assertion above.
        assert_eq!(THREADS, 256);
        assert_eq!(SHARED_BYTES, 2 * (8 * 132 + 8 * 128) * 4);
        assert_eq!(Tile::SQUARE.shared_bytes(), SHARED_BYTES);
        assert_eq!(Tile::TALL_32.shared_bytes(), 2 * (8 * 516 + 8 * 32) * 4);
        assert_eq!(Tile::WIDE_32.shared_bytes(), 2 * (8 * 36 + 8 * 512) * 4);
        assert_eq!(Tile::QUARTER.shared_bytes(), 2 * (8 * 68 + 8 * 64) * 4);
        assert_eq!(TILE_KERNELS.map(|(t, _)| t), TILES);
        // The narrow tiles keep the square's 256 threads; the small ones have half or a quarter.
        assert_eq!(TILES.map(Tile::threads), [256, 256, 256, 256, 256, 128, 64]);
        // Only the tiles whose threads load four vectors of an operand prefetch in parts.
        assert_eq!(TILES.map(Tile::parts), [1, 1, 4, 1, 1, 1, 1]);
    }

    /// The indices of the vectors of a slice of `vectors` that `t`'s threads load, each thread
    /// its first [`Tile::per_thread`] at `tid + v * threads`, as the kernel's `loads` admits them.
    fn loaded(t: Tile, vectors: u32) -> Vec<u32> {
        let (per_thread, threads) = (t.per_thread(vectors), t.threads());
        (0..threads)
            .flat_map(|tid| (0..per_thread.min(MAX_VECTORS_PER_THREAD)).map(move |v| tid + v * threads))
            .filter(|&f| f < vectors)
            .collect()
    }

    #[test]
    fn load_slots_cover_each_slice_exactly_once_in_vectors_of_four() {
        for t in TILES {
            let a: Vec<(u32, u32)> = loaded(t, t.a_vectors()).into_iter().map(|f| t.a_load_slot(f)).collect();
            assert!(a.iter().all(|&(_, k)| k.is_multiple_of(4)));
            assert_partition(t.block_m, BLOCK_K, a.into_iter().flat_map(|(row, k)| (0..4).map(move |i| (row, k + i))));
            let b: Vec<(u32, u32)> = loaded(t, t.b_vectors()).into_iter().map(|f| t.b_load_slot(f)).collect();
            assert!(b.iter().all(|&(_, col)| col.is_multiple_of(4)));
            assert_partition(BLOCK_K, t.block_n, b.into_iter().flat_map(|(k, col)| (0..4).map(move |i| (k, col + i))));
        }
    }

    #[test]
    fn a_threads_vectors_are_whole_rows_of_a_and_k_rows_of_b_apart() {
        // The kernel steps a thread's vectors by threads / 2 rows of A and threads / (block_n / 4)
        // k rows of B from its first.
        for t in TILES {
            let threads = t.threads();
            for tid in 0..threads {
                let (row, k) = t.a_load_slot(tid);
                let (kb, col) = t.b_load_slot(tid);
                for v in 1..t.per_thread(t.a_vectors()) {
                    assert_eq!(t.a_load_slot(tid + v * threads), (row + v * threads / 2, k));
                }
                for v in 1..t.per_thread(t.b_vectors()) {
                    assert_eq!(t.b_load_slot(tid + v * threads), (kb + v * threads / (t.block_n / 4), col));
                }
            }
        }
    }

    #[test]
    fn thread_tiles_partition_the_block_tile() {
        for t in TILES {
            assert_partition(
                t.block_m,
                t.block_n,
                (0..t.threads()).flat_map(|tid| {
                    (0..THREAD_M).flat_map(move |i| (0..THREAD_N).map(move |j| (t.c_row(tid, i), t.c_col(tid, j))))
                }),
            );
            // Each half of a thread tile is 4 consecutive rows / columns starting at a multiple
            // of 4, so `ld.shared.v4.f32` reads it.
            for tid in 0..t.threads() {
                for half in 0..2 {
                    assert!(t.c_row(tid, 4 * half).is_multiple_of(4) && t.c_col(tid, 4 * half).is_multiple_of(4));
                    for i in 1..4 {
                        assert_eq!(t.c_row(tid, 4 * half + i), t.c_row(tid, 4 * half) + i);
                        assert_eq!(t.c_col(tid, 4 * half + i), t.c_col(tid, 4 * half) + i);
                    }
                }
            }
        }
        // The square tile's free functions are its methods.
        for tid in 0..THREADS {
            assert_eq!((c_row(tid, 5), c_col(tid, 6)), (Tile::SQUARE.c_row(tid, 5), Tile::SQUARE.c_col(tid, 6)));
        }
    }

    #[test]
    fn a_warps_transposing_stores_hit_32_distinct_banks() {
        for t in TILES {
            for f0 in (0..t.a_vectors()).step_by(32) {
                for i in 0..4 {
                    let mut banks: Vec<u32> = (f0..(f0 + 32).min(t.a_vectors()))
                        .map(|f| {
                            let (row, k) = t.a_load_slot(f);
                            bank(t.a_tile_index(k + i, row))
                        })
                        .collect();
                    let lanes = banks.len();
                    banks.sort_unstable();
                    banks.dedup();
                    assert_eq!(banks.len(), lanes, "{t:?}, vectors {f0}.., store {i}: bank conflicts");
                }
            }
        }
    }

    /// Asserts that 16-byte reads at `index` by each group of 8 lanes (one wavefront's share) of
    /// `threads` are conflict-free: distinct 16-byte chunks on distinct banks, equal ones
    /// broadcast.
    fn assert_conflict_free(threads: u32, index: impl Fn(u32) -> u32) {
        for lanes in (0..threads).collect::<Vec<_>>().chunks(8) {
            let mut chunks: Vec<u32> = lanes.iter().map(|&t| index(t)).collect();
            chunks.sort_unstable();
            chunks.dedup();
            let mut banks: Vec<u32> = chunks.iter().flat_map(|&c| (0..4).map(move |j| bank(c + j))).collect();
            banks.sort_unstable();
            banks.dedup();
            assert_eq!(banks.len(), 4 * chunks.len());
        }
    }

    #[test]
    fn operand_reads_of_eight_lanes_are_one_conflict_free_wavefront() {
        for t in TILES {
            let threads = t.threads();
            assert_conflict_free(threads, |tid| t.b_tile_index(0, t.c_col(tid, 0)));
            assert_conflict_free(threads, |tid| t.b_tile_index(3, t.c_col(tid, 4)));
            assert_conflict_free(threads, |tid| t.a_tile_index(0, t.c_row(tid, 0)));
            assert_conflict_free(threads, |tid| t.a_tile_index(5, t.c_row(tid, 4)));
        }
    }

    #[test]
    fn grouped_tiles_cover_every_tile_once_on_ragged_grids() {
        for (gx, gy) in [(1, 1), (32, 32), (65, 33), (1, 100), (100, 1), (86, 4), (7, 17)] {
            assert_partition(gy, gx, (0..gy).flat_map(|by| (0..gx).map(move |bx| grouped_tile(bx, by, gx, gy))));
        }
        // Launch order walks down a group's rows first.
        assert_eq!((grouped_tile(0, 0, 32, 32), grouped_tile(1, 0, 32, 32)), ((0, 0), (1, 0)));
        assert_eq!(grouped_tile(16, 0, 32, 32), (0, 1));
    }

    #[test]
    fn vector_guard_matches_element_guards_on_the_vector_path() {
        for k in (4..64).step_by(4) {
            assert!(vector_path(k, 8));
            for k_left in (0..=k).rev().step_by(BLOCK_K as usize) {
                for t in 0..THREADS {
                    let (_, a_k) = a_load_slot(t);
                    let each: Vec<bool> = (0..4).map(|i| a_k + i < k_left).collect();
                    assert!(each.iter().all(|&e| e == (a_k < k_left)), "k {k}, k_left {k_left}, a_k {a_k}");
                }
            }
        }
        assert!(!vector_path(6, 8) && !vector_path(8, 6) && !vector_path(1, 1));
    }

    /// The kernel's data flow on the CPU, element guards included: each block stages zero-padded
    /// slices through the load slots and tile indices, each thread accumulates its `c_row` x
    /// `c_col` elements in kernel order (FMA per `kk`), and stores only inside `C`.
    fn emulate(t: Tile, a: &[f32], b: &[f32], m: u32, k: u32, n: u32) -> Vec<f32> {
        let mut c = vec![f32::NAN; (m * n) as usize];
        for block_row in (0..m).step_by(t.block_m as usize) {
            for block_col in (0..n).step_by(t.block_n as usize) {
                let mut acc = vec![[[0.0f32; 8]; 8]; t.threads() as usize];
                for k0 in (0..k).step_by(BLOCK_K as usize) {
                    let mut tile_a = vec![f32::NAN; t.a_stage_floats() as usize];
                    let mut tile_b = vec![f32::NAN; t.b_stage_floats() as usize];
                    for f in loaded(t, t.a_vectors()) {
                        let (row, ka) = t.a_load_slot(f);
                        for i in 0..4 {
                            let (r, kk) = (block_row + row, k0 + ka + i);
                            let v = if r < m && kk < k { a[(r * k + kk) as usize] } else { 0.0 };
                            tile_a[t.a_tile_index(ka + i, row) as usize] = v;
                        }
                    }
                    for f in loaded(t, t.b_vectors()) {
                        let (kb, col) = t.b_load_slot(f);
                        for i in 0..4 {
                            let (kk, cc) = (k0 + kb, block_col + col + i);
                            let v = if kk < k && cc < n { b[(kk * n + cc) as usize] } else { 0.0 };
                            tile_b[t.b_tile_index(kb, col + i) as usize] = v;
                        }
                    }
                    for (tid, acc) in acc.iter_mut().enumerate() {
                        for kk in 0..BLOCK_K {
                            for (i, acc_row) in acc.iter_mut().enumerate() {
                                let x = tile_a[t.a_tile_index(kk, t.c_row(tid as u32, i as u32)) as usize];
                                for (j, cell) in acc_row.iter_mut().enumerate() {
                                    let y = tile_b[t.b_tile_index(kk, t.c_col(tid as u32, j as u32)) as usize];
                                    *cell = x.mul_add(y, *cell);
                                }
                            }
                        }
                    }
                }
                store_thread_tiles(
                    &mut c,
                    &acc,
                    (block_row, block_col),
                    (m, n),
                    |tid, i| t.c_row(tid, i),
                    |tid, j| t.c_col(tid, j),
                );
            }
        }
        c
    }

    #[test]
    fn emulated_data_flow_matches_a_plain_product_on_ragged_shapes() {
        for t in TILES {
            assert_emulation_matches_plain_product(|a, b, m, k, n| emulate(t, a, b, m, k, n));
        }
    }
}
