//! GPU kernels written in Rust and compiled to PTX by rustc's `nvptx64-nvidia-cuda` backend.
//!
//! One kernel family per file (matmul families under [`matmul`], the histogram tiers under
//! [`histogram`], its sorted and bucketed tiers in [`histogram::sorted`] and
//! [`histogram::bucketed`]); the file name names the kernel
//! and its PTX symbol. Each family
//! exports the constants of its launch contract (block shape, tile size, shared bytes) so the host
//! plans launches from the same numbers the kernel was compiled with.
//!
//! The device API is the `nvptx-std` crate, which this crate depends on like any user's kernels
//! crate would; it is re-exported as [`device`] so that kernels name it `crate::device::...`.
//!
//! On the host this crate builds as an ordinary `no_std` rlib holding only those constants and
//! pure helpers (and the host-side types of kernels declared outside `nvptx64`-only modules, for
//! typed launches); the kernels themselves exist only for `nvptx64`.
#![no_std]
#![deny(missing_docs)]
// What the expansions of `nvptx_std::kernel!` (the kernel ABI) and `shared_array!` (`asm!` for
// nvptx) need in the crate that uses them.
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch, stmt_expr_attributes))]
// The sm_90a module (feature `hopper`) compiles only the Hopper kernels: the helpers of the
// others are unused there.
#![cfg_attr(feature = "hopper", allow(dead_code, unused_imports, unused_macros))]

pub use nvptx_std as device;
pub use nvptx_std::{dynamic_shared_array, shared_array};

pub mod histogram;
pub mod matmul;
pub mod occupancy;
pub mod saxpy;

/// The PTX symbol of every kernel this crate emits, in the order the host lists them.
pub const KERNEL_NAMES: &[&str] = &[
    matmul::naive::KERNEL,
    matmul::tiled::KERNEL_TILE16,
    matmul::tiled::KERNEL_TILE32,
    matmul::sgemm::KERNEL,
    matmul::sgemm_warp_tiled::KERNEL,
    matmul::skinny::FEW_ROWS_KERNELS[0].1,
    matmul::skinny::FEW_ROWS_KERNELS[1].1,
    matmul::skinny::FEW_ROWS_KERNELS[2].1,
    matmul::skinny::FEW_ROWS_KERNELS[3].1,
    matmul::skinny::FEW_ROWS_KERNELS[4].1,
    matmul::skinny::GEMV_KERNEL,
    matmul::skinny::FEW_COLS_KERNELS[0].1,
    matmul::skinny::FEW_COLS_KERNELS[1].1,
    matmul::skinny::FEW_COLS_KERNELS[2].1,
    matmul::skinny::FEW_COLS_KERNELS[3].1,
    matmul::skinny::FEW_COLS_KERNELS[4].1,
    matmul::sgemm::KERNELS[1],
    matmul::sgemm::KERNELS[2],
    matmul::skinny::FEW_ROWS_KERNELS_BF16[0].1,
    matmul::skinny::FEW_ROWS_KERNELS_BF16[1].1,
    matmul::skinny::FEW_ROWS_KERNELS_BF16[2].1,
    matmul::skinny::FEW_ROWS_KERNELS_BF16[3].1,
    matmul::skinny::FEW_ROWS_KERNELS_BF16[4].1,
    matmul::skinny::FEW_ROWS_KERNELS_F16[0].1,
    matmul::skinny::FEW_ROWS_KERNELS_F16[1].1,
    matmul::skinny::FEW_ROWS_KERNELS_F16[2].1,
    matmul::skinny::FEW_ROWS_KERNELS_F16[3].1,
    matmul::skinny::FEW_ROWS_KERNELS_F16[4].1,
    matmul::skinny::FEW_COLS_KERNELS_BF16[0].1,
    matmul::skinny::FEW_COLS_KERNELS_BF16[1].1,
    matmul::skinny::FEW_COLS_KERNELS_BF16[2].1,
    matmul::skinny::FEW_COLS_KERNELS_BF16[3].1,
    matmul::skinny::FEW_COLS_KERNELS_BF16[4].1,
    matmul::skinny::FEW_COLS_KERNELS_F16[0].1,
    matmul::skinny::FEW_COLS_KERNELS_F16[1].1,
    matmul::skinny::FEW_COLS_KERNELS_F16[2].1,
    matmul::skinny::FEW_COLS_KERNELS_F16[3].1,
    matmul::skinny::FEW_COLS_KERNELS_F16[4].1,
    matmul::skinny::FEW_COLS_SHARED_KERNELS[0].1,
    matmul::skinny::FEW_COLS_SHARED_KERNELS[1].1,
    matmul::skinny::FEW_COLS_SHARED_KERNELS[2].1,
    matmul::skinny::FEW_COLS_SHARED_KERNELS_BF16[0].1,
    matmul::skinny::FEW_COLS_SHARED_KERNELS_BF16[1].1,
    matmul::skinny::FEW_COLS_SHARED_KERNELS_BF16[2].1,
    matmul::skinny::FEW_COLS_SHARED_KERNELS_F16[0].1,
    matmul::skinny::FEW_COLS_SHARED_KERNELS_F16[1].1,
    matmul::skinny::FEW_COLS_SHARED_KERNELS_F16[2].1,
    matmul::skinny::FEW_COLS_SHORT_K_KERNELS[0].1,
    matmul::skinny::FEW_COLS_SHORT_K_KERNELS[1].1,
    matmul::skinny::FEW_COLS_SHORT_K_KERNELS_BF16[0].1,
    matmul::skinny::FEW_COLS_SHORT_K_KERNELS_BF16[1].1,
    matmul::skinny::FEW_COLS_SHORT_K_KERNELS_F16[0].1,
    matmul::skinny::FEW_COLS_SHORT_K_KERNELS_F16[1].1,
    matmul::split_k::KERNEL,
    matmul::sgemm::TILE_KERNELS[1].1[0],
    matmul::sgemm::TILE_KERNELS[1].1[1],
    matmul::sgemm::TILE_KERNELS[1].1[2],
    matmul::sgemm::TILE_KERNELS[2].1[0],
    matmul::sgemm::TILE_KERNELS[2].1[1],
    matmul::sgemm::TILE_KERNELS[2].1[2],
    matmul::sgemm::TILE_KERNELS[3].1[0],
    matmul::sgemm::TILE_KERNELS[3].1[1],
    matmul::sgemm::TILE_KERNELS[3].1[2],
    matmul::sgemm::TILE_KERNELS[4].1[0],
    matmul::sgemm::TILE_KERNELS[4].1[1],
    matmul::sgemm::TILE_KERNELS[4].1[2],
    matmul::sgemm::TILE_KERNELS[5].1[0],
    matmul::sgemm::TILE_KERNELS[5].1[1],
    matmul::sgemm::TILE_KERNELS[5].1[2],
    matmul::sgemm::TILE_KERNELS[6].1[0],
    matmul::sgemm::TILE_KERNELS[6].1[1],
    matmul::sgemm::TILE_KERNELS[6].1[2],
    matmul::sgemm_4x4::KERNELS[0].1[0],
    matmul::sgemm_4x4::KERNELS[0].1[1],
    matmul::sgemm_4x4::KERNELS[0].1[2],
    matmul::sgemm_4x4::KERNELS[1].1[0],
    matmul::sgemm_4x4::KERNELS[1].1[1],
    matmul::sgemm_4x4::KERNELS[1].1[2],
    matmul::short_k::KERNELS[0],
    matmul::short_k::KERNELS[1],
    matmul::short_k::KERNELS[2],
    histogram::TYPED_KERNELS[0].shared,
    histogram::TYPED_KERNELS[0].cluster,
    histogram::TYPED_KERNELS[0].global,
    histogram::TYPED_KERNELS[0].scatter,
    histogram::TYPED_KERNELS[0].tile_sort,
    histogram::TYPED_KERNELS[1].shared,
    histogram::TYPED_KERNELS[1].cluster,
    histogram::TYPED_KERNELS[1].global,
    histogram::TYPED_KERNELS[1].scatter,
    histogram::TYPED_KERNELS[1].tile_sort,
    histogram::TYPED_KERNELS[2].shared,
    histogram::TYPED_KERNELS[2].cluster,
    histogram::TYPED_KERNELS[2].global,
    histogram::TYPED_KERNELS[2].scatter,
    histogram::TYPED_KERNELS[2].tile_sort,
    histogram::TYPED_KERNELS[3].shared,
    histogram::TYPED_KERNELS[3].cluster,
    histogram::TYPED_KERNELS[3].global,
    histogram::TYPED_KERNELS[3].scatter,
    histogram::TYPED_KERNELS[3].tile_sort,
    histogram::bucketed::KERNEL_BUCKET_BINS,
    histogram::sorted::KERNEL_SORTED_BINS,
    histogram::KERNEL_WIDEN_ADD,
    histogram::channels::KERNELS[0][0],
    histogram::channels::KERNELS[0][1],
    histogram::channels::KERNELS[0][2],
    histogram::channels::KERNELS[0][3],
    histogram::channels::KERNELS[1][0],
    histogram::channels::KERNELS[1][1],
    histogram::channels::KERNELS[1][2],
    histogram::channels::KERNELS[1][3],
    histogram::channels::KERNELS[2][0],
    histogram::channels::KERNELS[2][1],
    histogram::channels::KERNELS[2][2],
    histogram::channels::KERNELS[2][3],
    histogram::channels::KERNELS[3][0],
    histogram::channels::KERNELS[3][1],
    histogram::channels::KERNELS[3][2],
    histogram::channels::KERNELS[3][3],
    histogram::channels::PACKED16_KERNELS[0],
    histogram::channels::PACKED16_KERNELS[1],
    histogram::channels::PACKED16_KERNELS[2],
    histogram::channels::PACKED16_KERNELS[3],
    histogram::channels::PACKED_KERNELS[0],
    histogram::channels::PACKED_KERNELS[1],
    histogram::channels::PACKED_KERNELS[2],
    histogram::channels::PACKED_KERNELS[3],
    histogram::channels::PACKED6_KERNELS[0],
    histogram::channels::PACKED6_KERNELS[1],
    histogram::channels::PACKED6_KERNELS[2],
    histogram::channels::PACKED6_KERNELS[3],
    histogram::channels::PACKED6_SUM_KERNEL,
    histogram::channels::PACKED4_KERNELS[0],
    histogram::channels::PACKED4_KERNELS[1],
    histogram::channels::PACKED4_KERNELS[2],
    histogram::channels::PACKED4_KERNELS[3],
    histogram::channels::PACKED4_SUM_KERNEL,
    histogram::edges::KERNELS[0],
    histogram::edges::KERNELS[1],
    histogram::edges::KERNELS[2],
    histogram::edges::KERNELS[3],
    histogram::weighted::KERNELS[0],
    histogram::weighted::KERNELS[1],
    histogram::weighted::KERNELS[2],
    histogram::weighted::KERNELS[3],
    histogram::weighted::PARTIALS_KERNELS[0],
    histogram::weighted::PARTIALS_KERNELS[1],
    histogram::weighted::PARTIALS_KERNELS[2],
    histogram::weighted::PARTIALS_KERNELS[3],
    histogram::segmented::KERNELS[0],
    histogram::segmented::KERNELS[1],
    histogram::segmented::KERNELS[2],
    histogram::segmented::KERNELS[3],
    histogram::segmented::DOUBLE_KERNELS[0],
    histogram::segmented::DOUBLE_KERNELS[1],
    histogram::segmented::DOUBLE_KERNELS[2],
    histogram::segmented::DOUBLE_KERNELS[3],
    histogram::segmented::WARP_KERNELS[0],
    histogram::segmented::WARP_KERNELS[1],
    histogram::segmented::WARP_KERNELS[2],
    histogram::segmented::WARP_KERNELS[3],
    histogram::hist2d::KERNEL,
    histogram::hist2d::KERNEL_WEIGHTED,
    histogram::hist2d::KERNEL_PAIRED_FLUSH,
    saxpy::KERNEL,
    matmul::operands::KERNEL_TO_BF16,
    matmul::operands::KERNEL_TRANSPOSE,
    matmul::operands::KERNEL_PAD,
    matmul::tf32x3::KERNEL_SPLIT,
    matmul::convert::CONVERT_KERNELS[0].1,
    matmul::convert::CONVERT_KERNELS[1].1,
    matmul::convert::CONVERT_KERNELS[2].1,
    matmul::convert::CONVERT_KERNELS[3].1,
    matmul::convert::CONVERT_KERNELS[4].1,
    matmul::convert::CONVERT_KERNELS[5].1,
    matmul::convert::CONVERT_KERNELS[6].1,
    matmul::convert::CONVERT_PAIR_KERNELS[0].1,
    matmul::convert::CONVERT_PAIR_KERNELS[1].1,
    matmul::convert::CONVERT_PAIR_KERNELS[2].1,
    matmul::convert::CONVERT_PAIR_KERNELS[3].1,
    matmul::convert::CONVERT_PAIR_KERNELS[4].1,
    matmul::convert::CONVERT_PAIR_KERNELS[5].1,
    matmul::convert::CONVERT_PAIR_KERNELS[6].1,
    matmul::convert::EPILOGUE_KERNELS[0].1,
    matmul::convert::EPILOGUE_KERNELS[1].1,
    matmul::convert::EPILOGUE_KERNELS[2].1,
];

/// The PTX symbol of every kernel of the second module, built for `sm_90a` with the `hopper`
/// feature (`wgmma` exists only there; the decode kernel's `mma.sync` would run on `sm_90` too,
/// but it belongs with the tensor-core variants that `Gpu::hopper_status` gates); the first
/// module, [`KERNEL_NAMES`], stays `sm_90`.
pub const HOPPER_KERNEL_NAMES: &[&str] = &[
    matmul::wgmma::KERNEL_NAMES[0],
    matmul::wgmma::KERNEL_NAMES[1],
    matmul::wgmma::KERNEL_NAMES[2],
    matmul::wgmma::KERNEL_NAMES[3],
    matmul::wgmma::KERNEL_NAMES[4],
    matmul::wgmma::KERNEL_NAMES[5],
    matmul::wgmma::KERNEL_NAMES[6],
    matmul::wgmma::KERNEL_NAMES[7],
    matmul::wgmma::KERNEL_NAMES[8],
    matmul::wgmma::KERNEL_NAMES[9],
    matmul::wgmma::KERNEL_NAMES[10],
    matmul::wgmma::KERNEL_NAMES[11],
    matmul::wgmma::KERNEL_NAMES[12],
    matmul::wgmma::KERNEL_NAMES[13],
    matmul::wgmma::KERNEL_NAMES[14],
    matmul::wgmma::KERNEL_NAMES[15],
    matmul::wgmma::KERNEL_NAMES[16],
    matmul::wgmma::KERNEL_NAMES[17],
    matmul::wgmma::KERNEL_NAMES[18],
    matmul::wgmma::KERNEL_NAMES[19],
    matmul::wgmma::KERNEL_NAMES[20],
    matmul::wgmma::KERNEL_NAMES[21],
    matmul::wgmma::KERNEL_NAMES[22],
    matmul::wgmma::KERNEL_NAMES[23],
    matmul::wgmma::KERNEL_NAMES[24],
    matmul::wgmma::KERNEL_NAMES[25],
    matmul::wgmma::KERNEL_NAMES[26],
    matmul::wgmma::KERNEL_NAMES[27],
    matmul::wgmma::KERNEL_NAMES[28],
    matmul::wgmma::KERNEL_NAMES[29],
    matmul::wgmma::KERNEL_NAMES[30],
    matmul::wgmma::KERNEL_NAMES[31],
    matmul::wgmma::KERNEL_NAMES[32],
    matmul::decode::KERNEL,
    matmul::decode::KERNEL_F16,
];

/// `.maxntid` per kernel of the `sm_90a` module in the release profile: `wgmma`'s
/// ([`matmul::wgmma::MAX_THREADS`]) and the decode kernel's register cap
/// ([`matmul::decode::DECLARED_MAX_THREADS`]).
///
/// ```
/// assert!(kernels::HOPPER_MAX_THREADS.contains(&("matmul_decode_bf16", 512)));
/// ```
pub const HOPPER_MAX_THREADS: &[(&str, u32)] = &[
    matmul::wgmma::MAX_THREADS[0],
    matmul::wgmma::MAX_THREADS[1],
    matmul::wgmma::MAX_THREADS[2],
    matmul::wgmma::MAX_THREADS[3],
    matmul::wgmma::MAX_THREADS[4],
    matmul::wgmma::MAX_THREADS[5],
    matmul::wgmma::MAX_THREADS[6],
    matmul::wgmma::MAX_THREADS[7],
    matmul::wgmma::MAX_THREADS[8],
    matmul::wgmma::MAX_THREADS[9],
    matmul::wgmma::MAX_THREADS[10],
    matmul::wgmma::MAX_THREADS[11],
    matmul::wgmma::MAX_THREADS[12],
    matmul::wgmma::MAX_THREADS[13],
    matmul::wgmma::MAX_THREADS[14],
    matmul::wgmma::MAX_THREADS[15],
    matmul::wgmma::MAX_THREADS[16],
    matmul::wgmma::MAX_THREADS[17],
    matmul::wgmma::MAX_THREADS[18],
    matmul::wgmma::MAX_THREADS[19],
    matmul::wgmma::MAX_THREADS[20],
    matmul::wgmma::MAX_THREADS[21],
    matmul::wgmma::MAX_THREADS[22],
    matmul::wgmma::MAX_THREADS[23],
    matmul::wgmma::MAX_THREADS[24],
    (matmul::decode::KERNEL, matmul::decode::DECLARED_MAX_THREADS),
    (matmul::decode::KERNEL_F16, matmul::decode::DECLARED_MAX_THREADS),
];

/// The same in the checked profile.
///
/// ```
/// assert!(kernels::HOPPER_CHECKED_MAX_THREADS.contains(&("matmul_decode_bf16", 512)));
/// ```
pub const HOPPER_CHECKED_MAX_THREADS: &[(&str, u32)] = &[
    matmul::wgmma::CHECKED_MAX_THREADS[0],
    matmul::wgmma::CHECKED_MAX_THREADS[1],
    matmul::wgmma::CHECKED_MAX_THREADS[2],
    matmul::wgmma::CHECKED_MAX_THREADS[3],
    matmul::wgmma::CHECKED_MAX_THREADS[4],
    matmul::wgmma::CHECKED_MAX_THREADS[5],
    matmul::wgmma::CHECKED_MAX_THREADS[6],
    matmul::wgmma::CHECKED_MAX_THREADS[7],
    matmul::wgmma::CHECKED_MAX_THREADS[8],
    matmul::wgmma::CHECKED_MAX_THREADS[9],
    matmul::wgmma::CHECKED_MAX_THREADS[10],
    matmul::wgmma::CHECKED_MAX_THREADS[11],
    matmul::wgmma::CHECKED_MAX_THREADS[12],
    matmul::wgmma::CHECKED_MAX_THREADS[13],
    matmul::wgmma::CHECKED_MAX_THREADS[14],
    matmul::wgmma::CHECKED_MAX_THREADS[15],
    matmul::wgmma::CHECKED_MAX_THREADS[16],
    matmul::wgmma::CHECKED_MAX_THREADS[17],
    matmul::wgmma::CHECKED_MAX_THREADS[18],
    matmul::wgmma::CHECKED_MAX_THREADS[19],
    matmul::wgmma::CHECKED_MAX_THREADS[20],
    matmul::wgmma::CHECKED_MAX_THREADS[21],
    matmul::wgmma::CHECKED_MAX_THREADS[22],
    matmul::wgmma::CHECKED_MAX_THREADS[23],
    matmul::wgmma::CHECKED_MAX_THREADS[24],
    matmul::wgmma::CHECKED_MAX_THREADS[25],
    matmul::wgmma::CHECKED_MAX_THREADS[26],
    matmul::wgmma::CHECKED_MAX_THREADS[27],
    matmul::wgmma::CHECKED_MAX_THREADS[28],
    matmul::wgmma::CHECKED_MAX_THREADS[29],
    matmul::wgmma::CHECKED_MAX_THREADS[30],
    matmul::wgmma::CHECKED_MAX_THREADS[31],
    matmul::wgmma::CHECKED_MAX_THREADS[32],
    (matmul::decode::KERNEL, matmul::decode::DECLARED_MAX_THREADS),
    (matmul::decode::KERNEL_F16, matmul::decode::DECLARED_MAX_THREADS),
];

/// `.maxntid` per kernel of the `sm_90` module in the release profile:
/// - the packed histogram kernels run blocks of 1,024 threads (one per SM beside up to 227 KiB
///   of counters), which leaves a thread 64 registers; with the cap ptxas fits the 8-bit kernels
///   (without it the carry plane's rare path took them to 66, and no such block could launch),
///   and the 16-bit kernels, which have no carry plane, come out at 50-52 under it;
/// - the `f32`-partials weighted kernels: a 1,024-thread block stays resident where the `f64`
///   kernels' 72 registers leave 768 threads per SM, a third more loads in flight; the `u8`
///   kernel fits the cap's 64 registers, and the wider types, which spilled there with four
///   groups in flight, run two and come out at 56-60 (no spills in
///   `cargo xtask build-ptx --release`, which refuses any);
/// - `matmul_few_cols_shared` on each operand type, its block size
///   (`matmul::skinny::few_cols_shared_threads`): 512 for `_8` (at most 128 registers, a block an
///   SM) and 384 for `_16` and `_32` (at most 170);
/// - `matmul_gemv`, twice its 512 threads: the cap holds ptxas at 64 registers, so that two
///   blocks share an SM (72 uncapped, one block an SM: 448 blocks at `n` = 14,336 would take
///   four waves instead of two);
/// - `sgemm` on each operand type, 512 threads although its blocks have 256: the cap holds ptxas
///   at 128 registers a thread (65,536 / 512), so that two blocks stay resident on an SM; the
///   generic body over `f32`, BF16 and F16 operands came out at 129 registers uncapped, which
///   leaves one.
///
/// ```
/// assert!(kernels::MAIN_MAX_THREADS.contains(&("histogram_packed_f32", 1024)));
/// assert!(kernels::MAIN_MAX_THREADS.contains(&("histogram_packed16_f32", 1024)));
/// assert!(kernels::MAIN_MAX_THREADS.contains(&("histogram_weighted_partials_i32", 1024)));
/// assert!(kernels::MAIN_MAX_THREADS.contains(&("sgemm_bf16", 512)));
/// ```
pub const MAIN_MAX_THREADS: &[(&str, u32)] = &[
    (histogram::channels::PACKED16_KERNELS[0], 1024),
    (histogram::channels::PACKED16_KERNELS[1], 1024),
    (histogram::channels::PACKED16_KERNELS[2], 1024),
    (histogram::channels::PACKED16_KERNELS[3], 1024),
    (histogram::channels::PACKED_KERNELS[0], 1024),
    (histogram::channels::PACKED_KERNELS[1], 1024),
    (histogram::channels::PACKED_KERNELS[2], 1024),
    (histogram::channels::PACKED_KERNELS[3], 1024),
    (histogram::channels::PACKED6_KERNELS[0], histogram::packed::CARRY_TABLE_THREADS),
    (histogram::channels::PACKED6_KERNELS[1], histogram::packed::CARRY_TABLE_THREADS),
    (histogram::channels::PACKED6_KERNELS[2], histogram::packed::CARRY_TABLE_THREADS),
    (histogram::channels::PACKED6_KERNELS[3], histogram::packed::CARRY_TABLE_THREADS),
    // The u8 kernel's four batches a vector keep more live than 640 threads' 96 registers hold
    // around the carry queue's settle; the planner asks the driver what fits (512).
    (histogram::channels::PACKED4_KERNELS[0], histogram::packed::FOUR_BIT_U8_THREADS),
    (
        histogram::channels::PACKED4_KERNELS[1],
        histogram::packed::carry_table_threads(histogram::packed::FOUR_BIT_PACKING),
    ),
    (
        histogram::channels::PACKED4_KERNELS[2],
        histogram::packed::carry_table_threads(histogram::packed::FOUR_BIT_PACKING),
    ),
    (
        histogram::channels::PACKED4_KERNELS[3],
        histogram::packed::carry_table_threads(histogram::packed::FOUR_BIT_PACKING),
    ),
    (histogram::weighted::PARTIALS_KERNELS[0], 1024),
    (histogram::weighted::PARTIALS_KERNELS[1], 1024),
    (histogram::weighted::PARTIALS_KERNELS[2], 1024),
    (histogram::weighted::PARTIALS_KERNELS[3], 1024),
    (matmul::skinny::FEW_COLS_SHARED_KERNELS[0].1, matmul::skinny::few_cols_shared_threads(8)),
    (matmul::skinny::FEW_COLS_SHARED_KERNELS[1].1, matmul::skinny::few_cols_shared_threads(16)),
    (matmul::skinny::FEW_COLS_SHARED_KERNELS[2].1, matmul::skinny::few_cols_shared_threads(32)),
    (matmul::skinny::FEW_COLS_SHARED_KERNELS_BF16[0].1, matmul::skinny::few_cols_shared_threads(8)),
    (matmul::skinny::FEW_COLS_SHARED_KERNELS_BF16[1].1, matmul::skinny::few_cols_shared_threads(16)),
    (matmul::skinny::FEW_COLS_SHARED_KERNELS_BF16[2].1, matmul::skinny::few_cols_shared_threads(32)),
    (matmul::skinny::FEW_COLS_SHARED_KERNELS_F16[0].1, matmul::skinny::few_cols_shared_threads(8)),
    (matmul::skinny::FEW_COLS_SHARED_KERNELS_F16[1].1, matmul::skinny::few_cols_shared_threads(16)),
    (matmul::skinny::FEW_COLS_SHARED_KERNELS_F16[2].1, matmul::skinny::few_cols_shared_threads(32)),
    (matmul::skinny::GEMV_KERNEL, 2 * matmul::skinny::GEMV_THREADS),
    SGEMM_MAX_THREADS[0],
    SGEMM_MAX_THREADS[1],
    SGEMM_MAX_THREADS[2],
    SGEMM_MAX_THREADS[3],
    SGEMM_MAX_THREADS[4],
    SGEMM_MAX_THREADS[5],
    SGEMM_MAX_THREADS[6],
    SGEMM_MAX_THREADS[7],
    SGEMM_MAX_THREADS[8],
    SGEMM_MAX_THREADS[9],
    SGEMM_MAX_THREADS[10],
    SGEMM_MAX_THREADS[11],
    SGEMM_MAX_THREADS[12],
    SGEMM_MAX_THREADS[13],
    SGEMM_MAX_THREADS[14],
    SGEMM_MAX_THREADS[15],
];

/// `sgemm`'s caps, the last entries of [`MAIN_MAX_THREADS`] (release only): 128 registers, so
/// two blocks of 256 threads share an SM (four of the 64 x 128 tile's 128), for every tile's
/// kernels that fit them without spilling. `sgemm_bf16_256x64` and `sgemm_f16_256x64` spill 8
/// bytes under the cap and run uncapped (129 registers, one block an SM), as do the 64 x 64
/// tile's (128 registers for `f32`, 149 for BF16 and F16: six blocks an SM).
const SGEMM_MAX_THREADS: [(&str, u32); 16] = {
    use matmul::sgemm::TILE_KERNELS as T;
    let two = 2 * matmul::sgemm::THREADS;
    [
        (T[0].1[0], two),
        (T[0].1[1], two),
        (T[0].1[2], two),
        (T[1].1[0], two),
        (T[2].1[0], two),
        (T[2].1[1], two),
        (T[2].1[2], two),
        (T[3].1[0], two),
        (T[3].1[1], two),
        (T[3].1[2], two),
        (T[4].1[0], two),
        (T[4].1[1], two),
        (T[4].1[2], two),
        (T[5].1[0], two),
        (T[5].1[1], two),
        (T[5].1[2], two),
    ]
};

/// [`MAIN_MAX_THREADS`] in the checked profile: the histogram kernels' caps (their blocks of
/// 1,024 threads need them), not `sgemm`'s, whose checked build takes 240 registers and would
/// spill under a cap of 128.
///
/// ```
/// assert!(kernels::MAIN_CHECKED_MAX_THREADS.contains(&("histogram_packed_u8", 1024)));
/// assert!(!kernels::MAIN_CHECKED_MAX_THREADS.iter().any(|(k, _)| k.starts_with("sgemm")));
/// ```
pub const MAIN_CHECKED_MAX_THREADS: &[(&str, u32)] =
    MAIN_MAX_THREADS.split_at(MAIN_MAX_THREADS.len() - SGEMM_MAX_THREADS.len()).0;

// The lists above name every element of the lists they copy.
const _: () = assert!(
    matmul::wgmma::KERNEL_NAMES.len() == 33
        && matmul::wgmma::MAX_THREADS.len() == 25
        && matmul::wgmma::CHECKED_MAX_THREADS.len() == 33
);

/// One PTX module this crate builds into: what a build script (the library's `build.rs`) and
/// `cargo xtask build-ptx` hand to `nvptx-builder`, so that both build the same modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtxModule {
    /// The module's file stem and name (`kernels`, `kernels_sm90a`).
    pub name: &'static str,
    /// Its `.target` by default.
    pub arch: &'static str,
    /// The features of this crate it is compiled with.
    pub features: &'static [&'static str],
    /// Every kernel it must hold.
    pub kernels: &'static [&'static str],
    /// `.maxntid` per kernel in the release profile (rustc has no attribute for it).
    pub max_threads: &'static [(&'static str, u32)],
    /// The same in the checked profile (whose bounds checks take registers).
    pub checked_max_threads: &'static [(&'static str, u32)],
}

/// The two modules: every kernel but the Hopper ones for `sm_90` (loadable on any GPU from
/// compute capability 9.0), and the tensor-core kernels (`wgmma`, and the `mma.sync` decode
/// kernel) for `sm_90a` (compute capability 9.0 only).
///
/// ```
/// let [main, hopper] = kernels::PTX_MODULES;
/// assert_eq!((main.name, main.arch, hopper.arch), ("kernels", "sm_90", "sm_90a"));
/// assert!(hopper.kernels.iter().all(|k| !main.kernels.contains(k)));
/// // Each module caps threads only of kernels it holds.
/// for module in [main, hopper] {
///     for (kernel, _) in module.max_threads.iter().chain(module.checked_max_threads) {
///         assert!(module.kernels.contains(kernel), "{kernel}");
///     }
/// }
/// ```
pub const PTX_MODULES: [PtxModule; 2] = [
    PtxModule {
        name: "kernels",
        arch: "sm_90",
        features: &[],
        kernels: KERNEL_NAMES,
        max_threads: MAIN_MAX_THREADS,
        checked_max_threads: MAIN_CHECKED_MAX_THREADS,
    },
    PtxModule {
        name: "kernels_sm90a",
        arch: "sm_90a",
        features: &["hopper"],
        kernels: HOPPER_KERNEL_NAMES,
        max_threads: HOPPER_MAX_THREADS,
        checked_max_threads: HOPPER_CHECKED_MAX_THREADS,
    },
];

// The kernel-declaring macros come after the modules that use them, so that those modules name
// them by path (`crate::gpu_kernel!`, `use crate::gpu_kernel`) rather than by textual scope.

/// Declares the kernels of the `sm_90` module: [`nvptx_std::kernel!`], absent from the `sm_90a`
/// module (built with the `hopper` feature), which holds only the kernels of
/// [`hopper_kernel!`](crate::hopper_kernel).
#[macro_export]
macro_rules! gpu_kernel {
    ($($(#[$attr:meta])* pub unsafe fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block)*) => {
        $crate::device::kernel! {
            $(
                $(#[$attr])*
                #[cfg(not(feature = "hopper"))]
                pub unsafe fn $name($($arg: $ty),*) $body
            )*
        }
    };
}

/// Declares the kernels of the `sm_90a` module (built with the `hopper` feature):
/// [`nvptx_std::kernel!`]; callers gate them with `#[cfg(feature = "hopper")]`.
#[macro_export]
macro_rules! hopper_kernel {
    ($($tokens:tt)*) => {
        $crate::device::kernel! { $($tokens)* }
    };
}
