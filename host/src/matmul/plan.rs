// Over 600 lines with its documentation: about 360 lines of code; the rest are doc comments with
// examples and 290 lines of unit tests.
//! The matmul planner: from a variant, the shape, the device and the precision policy
//! ([`PrecisionPolicy`]) to the kernel, its grid and its split of `k`. `auto` picks the kernel
//! family by these rules, first match wins; under `highest` it skips the first:
//!
//! | shape | kernel | why |
//! | --- | --- | --- |
//! | Hopper, `m > 16`, `n > 16`, `k >=` [`SPLIT_TF32_MIN_K`], at least [`SPLIT_TF32_MIN_TILES`] tiles of 128x128 (`high`: both sides at least [`SPLIT_TF32_MIN_SIDE`], at least [`SPLIT_TF32_MIN_MACS`] multiply-adds and tiles filling [`SPLIT_TF32_MIN_WAVE_FILL`] of their waves) | `high`: `wgmma_tf32x3` (guarded, with the FP32 plan below as its fallback); `medium`: `wgmma_tf32` | split-TF32 on the tensor cores, its sums added in `f32` every 96 of the tripled `k`: within FP32's bound, 0.56-0.89x cuBLAS FP32's time on the suite's wide shapes (H100) |
//! | `n <= 16`, or `n <= 32` with `m` under 512 | `few_cols` | memory-bound: at most 32 FLOPs per float of `A` (64 for 17-32 columns); one warp streams each row of `A` (`n = 1` or `m <= 16`), or each warp four (two) rows with each step's slice of `B` shared by the block's rows through shared memory (`matmul_few_cols_shared`); rows of `A` of at most 32 elements a thread each, staged in shared memory (`matmul_few_cols_short_k`) |
//! | `medium`, Hopper, `m` of [`TF32_N16_MIN_M`] to 16, `B` of at least [`N16_MIN_B_ELEMENTS`] | `wgmma_tf32_n16` | memory-bound: `B` through a TMA ring into TF32 tensor cores on 16-row tiles, where `few_rows`' FMAs per element of `B` slow it |
//! | `m` of 5 to 16, `k >= 8`, at most [`sgemm_4x4::FEW_ROWS_MAX_MACS`] multiply-adds and [`sgemm_4x4::takes`] ([`sgemm_4x4::takes_from_few_rows`]) | `sgemm` on its 4x4-per-thread kernels | too few multiply-adds to hide the copy of `A` into shared memory that `few_rows_8` and `_16` start with |
//! | `m <= 16` | `few_rows` | memory-bound: at most 32 FLOPs per float of `B`; each thread streams 4 columns of `B` (on `f32` with `m = 1`, `n % 4 == 0`, `k >=` [`GEMV_MIN_K`] and `k x n >=` [`GEMV_MIN_B_ELEMENTS`], `matmul_gemv`: a block's 64 row groups share `k`, so that no split across blocks is needed from 4,096 columns) |
//! | `k <=` [`SHORT_K_MAX`], or `k <= 32` with at most [`SHORT_K_TWO_COLUMNS_MAX_OUTPUTS`] elements of `C`; `k` or `n` not a multiple of 4 ([`takes_short_k`]) | `short_k` | bound by the writing of `C`: each thread stores four elements of a row of `C` in one 16-byte store (each block on rows that lie alike against 16-byte boundaries), its four columns of `B` in registers for up to 16 rows |
//! | a side of at most [`sgemm::NARROW_MAX_SIDE`] and `k >=` [`sgemm::NARROW_MIN_K`] | `sgemm` on a narrow tile ([`sgemm::tile_for`]: 512x32, 256x64, 64x256, 32x512) | compute-bound: 128x128 tiles would multiply 64-112 columns (rows) of padding; below that `k` the square tiles' four times as many blocks finish first |
//! | `k >=` [`WARP_TILED_MIN_K`] and the 128x128 tiles, `k` split as below, fill at least [`WARP_TILED_MIN_FILL`] of their waves | `sgemm_warp_tiled` | compute-bound: 8x16 accumulators per thread, 4 warps per block |
//! | at most [`sgemm_4x4::MAX_MACS`] multiply-adds, `k` at most [`sgemm_4x4::MAX_K_PER_SIDE`] `sqrt(m n)` ([`sgemm_4x4::takes`]) | `sgemm` on 4x4-per-thread kernels (`sgemm_4x4_32x32`, `sgemm_4x4_32x64`) | a small product: 32x32 (or, for `n <= 64`, 32x64) tiles give every SM blocks without a split of `k` and its second launch, or with a shallower one ([`sgemm_4x4::choose_split`]) |
//! | otherwise | `sgemm` | compute-bound: 8x8 accumulators per thread, better where short `k` leaves the prologue and epilogue exposed, or too few tiles leave SMs idle even with `k` split; 128x128 tiles, for `k <` [`sgemm::SQUARE_MIN_K`] 64x256 where they put no more blocks on the busiest SM ([`sgemm::tile_on`]), or 64x128 (128 threads) and 64x64 (64 threads) where the warps they put on the busiest SM are estimated to finish first ([`SGEMM_MIN_WARPS`]) |
//!
//! A wave is `slots` = 2 x SMs tiles (both kernels keep two blocks per SM); the fill of `t`
//! blocks is `t / (slots * ceil(t / slots))`. `sgemm_warp_tiled` needs full waves more than
//! `sgemm`: an SM that runs one of its blocks in a partial last wave has one warp per scheduler.
//! Measured on the H100 (one process per shape, time as x cuBLAS, the split-K reduction
//! included): 512x4096x11008 (344 tiles, fill 0.65 unsplit) `sgemm_warp_tiled` 1.56 unsplit,
//! 1.15 / 1.03 / 1.17 with 2 / 3 / 4 splits (fills 0.87 / 0.98 / 0.87), `sgemm` 1.28, or 1.11
//! with 3 splits; 3000^3 (576 tiles) 1.23 unsplit, 1.06 / 1.01 / 1.00 / 0.99 with 2-5 splits,
//! `sgemm` 1.12; 6000^3 (2209 tiles, fill 0.93) 1.01 unsplit, 0.99 with 2 splits; 4000^3 (fill
//! 0.97) 1.05 unsplit, 1.07 with 2 splits; 1000x800x1200 (80 tiles) 0.83 with 3 splits against
//! `sgemm`'s 0.87. And in one `host bench` run: 2048^3 (fill 0.97) 1.07 against `sgemm`'s 1.16,
//! 4096^3 1.07 against 1.14, 8192^3 1.06 against 1.12; with `k` = 129 (4097x129x8193)
//! `sgemm_warp_tiled` ran 1.15-1.35 against 0.91-1.06.
//!
//! Then the split of `k` (the grid's z), for the kernels that take one:
//! - `few_cols`: enough splits for [`NARROW_BLOCKS_PER_SM`] blocks per SM (memory
//!   parallelism), each split at least [`FEW_COLS_MIN_CHUNK`] long ([`FEW_COLS_FEW_BLOCKS_MIN_CHUNK`]
//!   on grids of fewer blocks than SMs); its shared-`B` kernel one block per SM at most, in
//!   splits of at least [`FEW_COLS_SHARED_MIN_CHUNK`].
//! - `few_rows`: for `_8` and `_16` (`m > 4`), and on BF16 or F16 operands for all, the splits
//!   aim at the blocks an SM holds (`few_rows_blocks_per_sm`: 9 for `_1` on 16-bit operands
//!   down to 3 for `_16`; its documentation has the measurements) and round down instead of up,
//!   so that the blocks fit one wave (before `_16` was double-buffered, 12x16384x16384 ran in
//!   0.572 ms with 17 splits, 544 blocks on 528 slots, and in 0.389 ms with 16); `_1`, `_2` and
//!   `_4` on `f32` take enough splits for [`NARROW_BLOCKS_PER_SM`] blocks per SM. Each split is
//!   at least [`FEW_ROWS_MIN_CHUNK`] long ([`FEW_ROWS_PANEL_MIN_CHUNK`] for `_8` and `_16`) but
//!   the last ([`SplitK::up_to`]: the length rounded up once).
//! - `sgemm_warp_tiled`: `s` splits take an estimated `ceil(tiles * s / slots) / s` of the
//!   unsplit time; the planner takes the fewest `s` (at most [`WARP_TILED_MAX_SPLITS`], each
//!   split at least [`WARP_TILED_MIN_CHUNK`] long) within [`WARP_TILED_SPLIT_SLACK`] of the
//!   least estimate, and splits only when that saves at least [`WARP_TILED_SPLIT_GAIN`].
//! - `sgemm`: no split when the tiles fill the `slots` = [`sgemm::BLOCKS_PER_SM`] x SMs block
//!   slots. Otherwise `s` splits (each at least [`SGEMM_MIN_CHUNK`] long) take an estimated
//!   `ceil(tiles * s / slots) * (k / s + SGEMM_BLOCK_OVERHEAD_K) + s * m * n *
//!   SGEMM_REDUCE_K_PER_VALUE`, in columns of `k` of one wave: every block pays a fixed cost
//!   beside its share of `k`, and the reduction reads `s x m x n` partial sums. The planner takes
//!   the fewest `s` within [`SGEMM_SPLIT_SLACK`] of the least estimate, and splits only when that
//!   saves at least a fifth ([`SGEMM_SPLIT_GAIN`]). The two constants are fitted to `sgemm` at
//!   512^3 by split (1 to 64: 0.061, 0.037, 0.023, 0.017, 0.020, 0.019, 0.023, 0.027, 0.055 ms
//!   for 1, 2, 4, 8, 12, 16, 24, 32, 64 splits), and predict 128^3's best near 16 splits of 8
//!   (measured: 0.007 ms with 12 to 32 splits, 0.009 with 4, 0.016 unsplit).
//!
//! - The tensor-core tile kernels (`wgmma_bf16`, `wgmma_f16`, `wgmma_tf32`,
//!   `wgmma_tf32_transposed`; one block per SM): no split when their tiles give every SM one.
//!   Otherwise `s` splits of whole stages (at least [`WGMMA_MIN_CHUNK_STAGES`], at most
//!   [`MAX_SPLITS`](super::split_k::MAX_SPLITS)) take an estimated `ceil(tiles * s / SMs) *
//!   (ceil(stages / s) + WGMMA_ITEM_OVERHEAD_STAGES) + WGMMA_REDUCE_FIXED_STAGES + s * m * n *
//!   WGMMA_REDUCE_STAGES_PER_VALUE`, in stages of one block: every work item pays its pipeline's
//!   fill and its epilogue, and the sum a pass over the partial sums, which each tile's last work
//!   item makes in the same launch (in split order, so the result is deterministic). The
//!   partial sums are also held to [`WGMMA_MAX_PARTIAL_FRACTION`] of the operands' bytes. The
//!   planner takes the fewest `s` within [`WGMMA_SPLIT_SLACK`] of the least estimate, and splits
//!   only when that saves at least a fifth ([`WGMMA_SPLIT_GAIN`]).
//!   The 16-bit kernels on tiles of 64 rows or more split only into their `_cluster` forms (at
//!   most 8 splits, all work items at once), whose sum costs
//!   [`WGMMA_CLUSTER_SUM_STAGES_PER_TILE_VALUE`] per value of the tile; the 16-row tiles have no
//!   cluster form.
//! - Their tile: `wgmma_bf16`, `wgmma_f16` and `wgmma_tf32` come in several widths, tiles of 128 x
//!   256 (`wgmma_tf32`: 256 x 128), of 128 x 128 (the `_n128` kernels, [`TileWidth`]) and of
//!   128 x 64 (`_n64`). The planner estimates each as above, with its best
//!   split, a stage of the narrower tiles costing [`WGMMA_N128_STAGE_COST`] and
//!   [`WGMMA_N64_STAGE_COST`] of the wide one's, and takes the cheapest (the wider on a tie):
//!   more tiles fill the SMs where the wide tiles leave most of them idle (1024^3: 32 tiles of
//!   128 x 256 on 132 SMs, 128 of 128 x 64), with no split or a cheaper sum. For `m <= 16`, every
//!   family has `_n16`'s 16 x 128 tiles ([`WGMMA_N16_STAGE_COST`]). Where the 16-bit kernels'
//!   time is storing `C` through the row-staged epilogue (`k` at most
//!   [`ROW_ORDER_MAX_K`](kernels::matmul::wgmma::ROW_ORDER_MAX_K), rows of `C` the TMA cannot
//!   store, and 128 x 128 tiles filling the SMs), they take 128 x 128 tiles, which store fastest
//!   there, whatever the estimate.
//!
//! Splits are added in a fixed order by `matmul_split_k_reduce`, so every plan is deterministic.

use super::precision::PrecisionPolicy;
use super::shape::MatmulShape;
use super::split_k::{SplitK, reduce_plan};
use super::variant::MatmulVariant;
use super::{naive, sgemm, sgemm_4x4, sgemm_warp_tiled, short_k, skinny, tiled};
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;
pub use kernels::matmul::element::OperandType;
use kernels::matmul::sgemm::Tile;
use kernels::matmul::skinny::{
    FEW_COLS_KERNELS, FEW_COLS_MAX_N, FEW_ROWS_KERNELS, FEW_ROWS_MAX_M, GEMV_KERNEL, GEMV_ROW_GROUPS, GEMV_STEP_ROWS,
    few_cols_kernel_for, few_rows_blocks_per_sm, few_rows_kernel, few_rows_kernel_of,
};
use kernels::matmul::wgmma as wgmma_tiles;

/// Blocks per SM the narrow kernels' splits aim at: enough loads in flight to approach the copy
/// bandwidth.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::NARROW_BLOCKS_PER_SM;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// // A GEMV-like 1 x 4096 x 65536: 128 blocks per split, so k is split 5 ways to fill the SMs.
/// let p = plan(MatmulVariant::Auto, MatmulShape::new(1, 4096, 65_536)?, MatmulDevice::H100)?;
/// let blocks = p.launch_config().grid_dim.0 * p.split().unwrap().splits;
/// assert!(blocks >= NARROW_BLOCKS_PER_SM * MatmulDevice::H100.sm_count);
/// # Ok(()) }
/// ```
pub const NARROW_BLOCKS_PER_SM: u32 = 4;
/// Shortest split of `few_cols` (one warp a row): one step of its warps (1024 columns of `A`),
/// except on grids of fewer blocks than SMs ([`FEW_COLS_FEW_BLOCKS_MIN_CHUNK`]). A second launch
/// for the partial sums costs more than a split gains where the blocks nearly fill the SMs: on
/// the H200 3133 x 1711 x 1 (392 blocks) took 0.0120 ms unsplit and 0.0143 in 2 splits of 856.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::FEW_COLS_MIN_CHUNK;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let p = plan(MatmulVariant::Auto, MatmulShape::new(3133, 1711, 1)?, MatmulDevice::H200)?;
/// assert_eq!(p.split().map(|s| s.splits), Some(1));
/// let p = plan(MatmulVariant::Auto, MatmulShape::new(600, 100_000, 3)?, MatmulDevice::H200)?;
/// assert!(p.split().is_some_and(|s| s.splits > 1 && s.k_chunk >= FEW_COLS_MIN_CHUNK));
/// # Ok(()) }
/// ```
pub const FEW_COLS_MIN_CHUNK: u32 = 1024;
/// Shortest split of `few_cols` (one warp a row) on a grid of fewer blocks than SMs: 64 columns
/// of `A`, half a warp's 16-byte loads. Each element of `A` costs its lane `n` loads of `B` from
/// L1, so on a product of few rows (a block per 8) splits much shorter than a warp's step still
/// gain. On the H200 (ms, `few_cols` on `f32`, same process): 11 x 305 x 14 (2 blocks) 0.0109
/// unsplit, 0.0097 in 2 splits and 0.0077 in 4; 2 x 805 x 15 (1 block) 0.0132 unsplit, 0.0090
/// in 4 and 0.0077 in 8.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::FEW_COLS_FEW_BLOCKS_MIN_CHUNK;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// // Three rows of A cannot fill the GPU: k is split as finely as the most splits allow.
/// let p = plan(MatmulVariant::Auto, MatmulShape::new(3, 100_000, 5)?, MatmulDevice::H100)?;
/// assert_eq!(p.variant(), MatmulVariant::FewCols);
/// assert_eq!(p.split().map(|s| (s.splits, s.k_chunk >= FEW_COLS_FEW_BLOCKS_MIN_CHUNK)), Some((256, true)));
/// // Eleven rows of 305: 4 splits of at least 64.
/// let p = plan(MatmulVariant::Auto, MatmulShape::new(11, 305, 14)?, MatmulDevice::H200)?;
/// assert_eq!(p.split().map(|s| s.splits), Some(4));
/// # Ok(()) }
/// ```
pub const FEW_COLS_FEW_BLOCKS_MIN_CHUNK: u32 = 64;
/// Shortest split of `matmul_few_cols_shared` (a slice of `B` shared through shared memory by
/// its rows), whose splits aim at one block per SM and round down (one wave, as `few_rows`'):
/// 64 columns of `A`. Its blocks take many rows each, so its grids are small, and their loads,
/// not the splits' second launch, are the time. On the H200 (`few_cols` on `f32`, µs, one
/// process, medians of 30; splits: time): 507x416x12 (11 blocks) 1: 7.6, 4: 6.1, 6: 6.0;
/// 484x641x19 (21) 1: 11.2, 4: 7.3, 6: 6.1; 975x3821x24 (41) 3: 21.0, 4: 30.6, 7: 29.0 (the
/// rule before, toward 4 blocks an SM in splits of at least 512); 591x7821x8 (10) 13: 13.2, 15:
/// 18.7, 30: 19.8; and 3796x285x14 (80) 1: 8.1, 2: 13.1.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let splits = |m, k, n| -> hopper_kernels::Result<u32> {
///     let p = plan(MatmulVariant::FewCols, MatmulShape::new(m, k, n)?, MatmulDevice::H200)?;
///     Ok(p.split().map_or(1, |s| s.splits))
/// };
/// // 41 blocks: 3 splits fill 123 of the 132 SMs; 10 blocks: 13 fill 130.
/// assert_eq!((splits(975, 3821, 24)?, splits(591, 7821, 8)?), (3, 13));
/// // 11 blocks and k = 416: 6 splits of at least 64.
/// assert_eq!(splits(507, 416, 12)?, 6);
/// // 80 blocks: no second block for any SM.
/// assert_eq!(splits(3796, 285, 14)?, 1);
/// # Ok(()) }
/// ```
pub const FEW_COLS_SHARED_MIN_CHUNK: u32 = 64;

/// Longest `k` the 16-bit `_ld` tile kernels take ([`MatmulPlan::with_ld`]): two stages of 64.
/// Their producer warpgroup loads a stage in 2-byte loads at about 1-2.5 µs a stage, where the
/// copy into rows of 16-byte multiples costs a launch and one pass over the operands and the
/// TMA then keeps pace with the tensor cores. H200, BF16, µs, `_ld` against the copy (two
/// binaries, `results/h200-ld-kernels.txt`): one stage 6185x39x102 5.5 against 9.2,
/// 12426x33x19 4.3 against 9.9, 8830x45x55 5.3 against 9.1; two stages 486x114x1008 6.6
/// against 7.0, 950x108x270 6.3 against 6.4; three 5344x181x381 14.5 against 13.0 (but
/// 8931x191x45 9.9 against 11.9); longer ones two to three times the copy's time (333x777x555
/// 22.0 against 10.8, 604x1975x2142 79.9 against 27.5).
pub const LD_MAX_K: usize = 128;

/// Shortest `k` for which `few_rows` on one row of `f32` operands runs `matmul_gemv`, which
/// splits `k` among the 64 row groups of each block: one step of a block (eight rows a group).
/// Shorter rows leave most of its loads idle, where `matmul_few_rows_1`'s threads each take
/// every row of their four columns.
pub const GEMV_MIN_K: usize = GEMV_STEP_ROWS as usize;

/// Fewest elements of `B` for which one row of `f32` runs `matmul_gemv` (16 MiB, 4096 x 1024):
/// below that `matmul_few_rows_1`'s many short splits, each a few loads deep, finish as soon
/// (H200, ms: 1 x 673 x 88 0.0049 on `matmul_few_rows_1` against 0.006-0.008 on `matmul_gemv`;
/// 1 x 4096 x 1024 0.009 on `matmul_gemv` against cuBLASLt's 0.013).
pub const GEMV_MIN_B_ELEMENTS: u64 = 1 << 22;

/// Shortest split of `few_rows_{1,2,4}`: 4 steps of 4 rows of `B` per thread. A thread's steps
/// wait on memory one after another, so a product with few blocks per split runs in about
/// (steps x latency): on the H200, 4x2605x269 (one block per split) took 0.061 ms with the
/// former shortest split of 256 rows (10 splits) and 0.013 ms with 128 splits (cuBLASLt 0.013);
/// 1x4096x4096 0.043 ms with 16 splits and 0.023 with 64 (cuBLASLt 0.019). The reduction of the
/// partial products (splits x m x n floats, m <= 4) stays small against `B`.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::FEW_ROWS_MIN_CHUNK;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, SplitK, plan};
/// // One block of few_rows_1 would take 528 splits to fill the SMs; k = 1024 holds 64.
/// let p = plan(MatmulVariant::Auto, MatmulShape::new(1, 1024, 512)?, MatmulDevice::H100)?;
/// assert_eq!(p.split(), Some(SplitK { splits: 64, k_chunk: FEW_ROWS_MIN_CHUNK }));
/// # Ok(()) }
/// ```
pub const FEW_ROWS_MIN_CHUNK: u32 = 16;
/// Shortest `k` for which `auto` runs `sgemm_warp_tiled`: shorter products spend too much of
/// their time in the prologue and epilogue, where its 4 warps per block hide less latency.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::WARP_TILED_MIN_K;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, PlanOptions, PrecisionPolicy, plan_with};
/// let fp32 = PlanOptions { policy: PrecisionPolicy::Highest, split: None, tile: None, ..PlanOptions::default() };
/// let auto = |k| plan_with(MatmulVariant::Auto, MatmulShape::new(4097, k, 8193)?, MatmulDevice::H100, fp32);
/// assert_eq!(auto(WARP_TILED_MIN_K - 1)?.variant(), MatmulVariant::Sgemm);
/// assert_eq!(auto(WARP_TILED_MIN_K)?.variant(), MatmulVariant::SgemmWarpTiled);
/// # Ok(()) }
/// ```
pub const WARP_TILED_MIN_K: usize = 512;
/// Least fill of the waves of `sgemm_warp_tiled`'s blocks (`k` split included) for which `auto`
/// runs it: an SM that gets one block in the last wave runs one warp per scheduler.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, PlanOptions, PrecisionPolicy, plan_with};
/// let fp32 = PlanOptions { policy: PrecisionPolicy::Highest, split: None, tile: None, ..PlanOptions::default() };
/// // 512^3: 16 tiles, even in 2 splits of k, fill 12% of a wave of 264 block slots, below 85%.
/// let p = plan_with(MatmulVariant::Auto, MatmulShape::new(512, 512, 512)?, MatmulDevice::H100, fp32)?;
/// assert_eq!(p.variant(), MatmulVariant::Sgemm);
/// assert!(p.reason().contains("fill 12% of their waves"), "{}", p.reason());
/// # Ok(()) }
/// ```
pub const WARP_TILED_MIN_FILL: f64 = 0.85;
/// Shortest split of `sgemm_warp_tiled`: 32 slices, so that the prologue and epilogue stay
/// small beside the multiply.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::WARP_TILED_MIN_CHUNK;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, SplitK, plan};
/// // One tile, k = 1024: as many splits as splits of 256 allow.
/// let p = plan(MatmulVariant::SgemmWarpTiled, MatmulShape::new(128, 1024, 128)?, MatmulDevice::H100)?;
/// assert_eq!(p.split(), Some(SplitK { splits: 4, k_chunk: WARP_TILED_MIN_CHUNK }));
/// # Ok(()) }
/// ```
pub const WARP_TILED_MIN_CHUNK: u32 = 256;
/// Most splits of `sgemm_warp_tiled`: enough to even out the waves of any grid of at least 33
/// tiles on 132 SMs; products with fewer tiles run `sgemm`, whose splits go deeper.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::WARP_TILED_MAX_SPLITS;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// // One tile and a long k: the split stops at 8.
/// let p = plan(MatmulVariant::SgemmWarpTiled, MatmulShape::new(128, 65_536, 128)?, MatmulDevice::H100)?;
/// assert_eq!(p.split().unwrap().splits, WARP_TILED_MAX_SPLITS);
/// # Ok(()) }
/// ```
pub const WARP_TILED_MAX_SPLITS: u32 = 8;
/// `sgemm_warp_tiled` takes the fewest splits whose estimated time is within this factor of
/// the least (3000^3: 4 splits, estimated 2.25 waves, measured 1.00 x cuBLAS; 5 splits, 2.2
/// waves, 0.99).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// // 3000^3 (576 tiles on 264 slots): 5 splits take an estimated 2.2 waves, 4 splits 2.25, within
/// // 5%: the planner takes 4.
/// let p = plan(MatmulVariant::SgemmWarpTiled, MatmulShape::new(3000, 3000, 3000)?, MatmulDevice::H100)?;
/// assert_eq!(p.split().unwrap().splits, 4);
/// # Ok(()) }
/// ```
pub const WARP_TILED_SPLIT_SLACK: f64 = 1.05;
/// `sgemm_warp_tiled` splits `k` only when the estimated time falls to this fraction or less
/// (6000^3: 2 splits, 0.944, measured 0.99 against 1.01 x cuBLAS unsplit).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let warp_tiled = |n| plan(MatmulVariant::SgemmWarpTiled, MatmulShape::new(n, n, n).unwrap(), MatmulDevice::H100);
/// // 6000^3: 2 splits save 5.6% of the estimate, so k is split; 4000^3: nothing to save.
/// assert_eq!(warp_tiled(6000)?.split().unwrap().splits, 2);
/// assert_eq!(warp_tiled(4000)?.split().unwrap().splits, 1);
/// # Ok(()) }
/// ```
pub const WARP_TILED_SPLIT_GAIN: f64 = 0.95;
/// Shortest split of `few_rows_{8,16}`: 4 steps of 4 rows of `B` per thread, so that small
/// products still fill the SMs: 16x4096x4096 ran in 0.077 ms with 16 splits of 256 (128 blocks)
/// and in 0.044 ms with 64 splits of 64 (H100, before `_16` was double-buffered); on the H200
/// 8x2000x1000 (2 blocks per split) 0.020 ms with 31 splits of 64 and 0.014 ms with 125 of 16
/// (cuBLASLt 0.013), 6x186x6096 0.026 ms with 2 splits and 0.011 with 16.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::FEW_ROWS_PANEL_MIN_CHUNK;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, SplitK, plan};
/// let p = plan(MatmulVariant::Auto, MatmulShape::new(8, 2000, 1000)?, MatmulDevice::H200)?;
/// assert_eq!(p.kernel(), "matmul_few_rows_8");
/// assert_eq!(p.split(), Some(SplitK { splits: 125, k_chunk: FEW_ROWS_PANEL_MIN_CHUNK }));
/// # Ok(()) }
/// ```
pub const FEW_ROWS_PANEL_MIN_CHUNK: u32 = 16;
/// Shortest split of `sgemm`: one 8-deep slice per block (the estimate below weighs the cost of
/// short splits).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::SGEMM_MIN_CHUNK;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, SplitK, plan};
/// // One tile, k = 128: 16 splits of one 8-deep slice each.
/// let p = plan(MatmulVariant::Sgemm, MatmulShape::new(128, 128, 128)?, MatmulDevice::H100)?;
/// assert_eq!(p.split(), Some(SplitK { splits: 16, k_chunk: SGEMM_MIN_CHUNK }));
/// # Ok(()) }
/// ```
pub const SGEMM_MIN_CHUNK: u32 = 8;
/// `sgemm` splits `k` only when the estimated time falls to this fraction or less.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let sgemm = |k| plan(MatmulVariant::Sgemm, MatmulShape::new(1280, k, 1280).unwrap(), MatmulDevice::H100);
/// // 100 tiles on 264 slots. k = 256: 2 splits take an estimated 95% of the unsplit time, too
/// // little to gain; k = 512: 74%, so k is split.
/// assert_eq!(sgemm(256)?.split().unwrap().splits, 1);
/// assert_eq!(sgemm(512)?.split().unwrap().splits, 2);
/// # Ok(()) }
/// ```
pub const SGEMM_SPLIT_GAIN: f64 = 0.8;
/// `sgemm` takes the fewest splits whose estimated time is within this factor of the least:
/// the least itself, since the estimate already charges each split its reduction.
pub const SGEMM_SPLIT_SLACK: f64 = 1.0;
/// The time of a 64 x 256 `sgemm` tile for `k <` [`sgemm::SQUARE_MIN_K`] as a fraction of a 128 x
/// 128 one's, in the planner's estimates ([`sgemm::tile_on`] offers it where its blocks put no
/// more on the busiest SM): unsplit on the H200, 8841x28x6665 0.90, 4042x65x1243 0.89,
/// 15128x344x177 0.91, 854x334x3510 0.94, 16165x300x415 0.94 of the square tiles' time. Where
/// the split it would take is estimated slower than the square tiles' split by more than this,
/// the square tiles run (1935x396x547: 93 tiles in 2 splits against 80 in 3 ran 0.054 ms against
/// 0.046).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::SGEMM_WIDE_COST;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// assert_eq!(SGEMM_WIDE_COST, 0.93);
/// let kernel = |m, k, n| plan(MatmulVariant::Sgemm, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200).unwrap().kernel();
/// assert_eq!(kernel(4042, 65, 1243), "sgemm_64x256");
/// assert_eq!(kernel(1935, 396, 547), "sgemm");
/// # Ok(()) }
/// ```
pub const SGEMM_WIDE_COST: f64 = 0.93;
/// The time of `sgemm`'s 64 x 128 tiles as a multiple of 128 x 128 tiles' for as many warps on
/// the busiest SM, in the planner's comparison of tiles ([`SGEMM_MIN_WARPS`]): the same loads
/// per multiply-add along `k` for half the rows. Fitted on the H200 with the other tile costs on
/// the 58 shapes of the 200-shape sweep where `auto` runs `sgemm`, each timed on every tile: 854x334x3510
/// 0.0614 ms on 64 x 128 against 0.0754 on 64 x 256, 486x114x1008 0.0132 against 0.0183 on 128
/// x 128. Only `C` at least as wide as tall is offered it: 128 x 64 tiles (135-141 registers,
/// three blocks an SM) ran slower than 64 x 64 on every taller shape measured but one
/// (5344x181x381 0.0370 ms against 0.0349 and 128 x 128's 0.0311; 15128x344x177 0.0671 against
/// 0.0681), and were left out.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let kernel = |m, k, n| plan(MatmulVariant::Sgemm, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200).unwrap().kernel();
/// assert_eq!(kernel(854, 334, 3510), "sgemm_64x128");
/// assert_eq!(kernel(4096, 4096, 4096), "sgemm");
/// # Ok(()) }
/// ```
pub const SGEMM_HALF_COST: f64 = 1.0;
/// The time of `sgemm`'s 64 x 64 tiles as a multiple of 128 x 128 tiles' for as many warps on the
/// busiest SM: twice the loads per multiply-add (H200: 5344x181x381 0.0349 ms against 0.0311,
/// eight warps an SM either way; 486x114x1008, one block an SM either way, 0.0128 against
/// 0.0183).
pub const SGEMM_QUARTER_COST: f64 = 1.12;
/// Fewest warps the planner charges an SM in its comparison of `sgemm` tiles: an SM with fewer
/// takes about as long as one with this many (each thread's 8 x 8 multiply-adds are a chain of
/// loads and FMAs whose latency fewer warps leave exposed). With it a block of 64 x 128 alone on
/// an SM is estimated at 3/4 of a 128 x 128 one's time (486x114x1008: 0.0132 against 0.0183 ms
/// on the H200).
pub const SGEMM_MIN_WARPS: f64 = 6.0;
/// An `sgemm` block's cost besides its columns of `k` (prologue, epilogue, scheduling), in
/// columns of `k`: fitted at 512^3 (about 3.6 us, at 0.097 us per column).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::{SGEMM_BLOCK_OVERHEAD_K, SGEMM_REDUCE_K_PER_VALUE};
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// // The estimate of 512^3 (16 tiles: one wave on 264 slots) in s splits of 512 / s columns.
/// let reduction = |s: f64| if s > 1.0 { s * 512.0 * 512.0 * SGEMM_REDUCE_K_PER_VALUE } else { 0.0 };
/// let estimate = |s: f64| 512.0 / s + SGEMM_BLOCK_OVERHEAD_K + reduction(s);
/// let best = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0].into_iter().min_by(|a, b| estimate(*a).total_cmp(&estimate(*b)));
/// let p = plan(MatmulVariant::Sgemm, MatmulShape::new(512, 512, 512)?, MatmulDevice::H100)?;
/// assert_eq!((best, p.split().unwrap().splits), (Some(8.0), 8));
/// # Ok(()) }
/// ```
pub const SGEMM_BLOCK_OVERHEAD_K: f64 = 37.0;
/// The split-K reduction's cost per partial sum, in columns of `k` of one wave of `sgemm`
/// blocks: fitted at 512^3 (about 0.9 us per split of 512 x 512 partial sums).
///
/// ```
/// use hopper_kernels::matmul::plan::{SGEMM_BLOCK_OVERHEAD_K, SGEMM_REDUCE_K_PER_VALUE};
/// // 512^3 in s splits, one wave: without the reduction's cost the deepest split would look best.
/// let estimate = |s: f64, per_value: f64| 512.0 / s + SGEMM_BLOCK_OVERHEAD_K + s * 512.0 * 512.0 * per_value;
/// let best = |per_value: f64| {
///     let splits = [2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
///     splits.into_iter().min_by(|a, b| estimate(*a, per_value).total_cmp(&estimate(*b, per_value)))
/// };
/// assert_eq!((best(0.0), best(SGEMM_REDUCE_K_PER_VALUE)), (Some(64.0), Some(8.0)));
/// ```
pub const SGEMM_REDUCE_K_PER_VALUE: f64 = 3.5e-5;

/// Shortest split of the tensor-core tile kernels, in stages of their pipeline (64 BF16 or F16
/// columns of `k`, 32 TF32): the depth of their ring, so that a split's loads fill it once.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::{PlanOptions, WGMMA_MIN_CHUNK_STAGES, plan_with};
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, SplitK, plan};
/// // Two TF32 tiles of 128 x 64 for 24 x 100 and k = 8192 (256 stages of 32): whole stages, none
/// // under the shortest split; 7 splits of 37 stages, where each tile's last work item sums them.
/// let p = plan(MatmulVariant::WgmmaTf32, MatmulShape::new(24, 8192, 100)?, MatmulDevice::H200)?;
/// let s = p.split().unwrap();
/// assert!(s.k_chunk >= WGMMA_MIN_CHUNK_STAGES * 32 && s.k_chunk % 32 == 0);
/// assert_eq!((s.splits, s.k_chunk), (7, 37 * 32));
/// // Forced, a split may be as short as that.
/// let options = PlanOptions { split: Some(SplitK { splits: 64, k_chunk: WGMMA_MIN_CHUNK_STAGES * 32 }), ..PlanOptions::default() };
/// assert!(plan_with(MatmulVariant::WgmmaTf32, MatmulShape::new(24, 8192, 100)?, MatmulDevice::H200, options).is_ok());
/// # Ok(()) }
/// ```
pub const WGMMA_MIN_CHUNK_STAGES: u32 = 4;
/// A tensor-core work item's cost besides its stages (the pipeline's first loads, the epilogue),
/// in stages of one block (about 0.6 us on the H200: a lone `wgmma_bf16` block ran 24x13368x171's
/// 209 stages in 137 us).
///
/// ```
/// use hopper_kernels::matmul::plan::{WGMMA_ITEM_OVERHEAD_STAGES, WGMMA_MIN_CHUNK_STAGES};
/// // The shortest split pays a third of its time or more in its fill and epilogue.
/// assert!(WGMMA_ITEM_OVERHEAD_STAGES / (WGMMA_MIN_CHUNK_STAGES as f64 + WGMMA_ITEM_OVERHEAD_STAGES) >= 0.33);
/// ```
pub const WGMMA_ITEM_OVERHEAD_STAGES: f64 = 2.0;
/// The fixed cost of a tensor-core split's sum, in stages of one block: each tile's last work
/// item adds the tile's partial products after its own (a second pass over the tile, which the
/// separate reduction kernel these kernels once launched, 4 stages with its launch, no longer
/// costs).
///
/// ```
/// use hopper_kernels::matmul::plan::WGMMA_REDUCE_FIXED_STAGES;
/// assert!(WGMMA_REDUCE_FIXED_STAGES > 0.0);
/// ```
pub const WGMMA_REDUCE_FIXED_STAGES: f64 = 1.0;
/// The cost of a tensor-core split per partial sum, in stages of one block: 8 bytes (written by
/// each work item, read by the tile's last) at about 3 TB/s, over 0.6 us.
///
/// ```
/// use hopper_kernels::matmul::plan::WGMMA_REDUCE_STAGES_PER_VALUE;
/// // 100 splits of a 1024 x 1024 C would cost about 470 stages: far more than they save.
/// assert!(100.0 * 1024.0 * 1024.0 * WGMMA_REDUCE_STAGES_PER_VALUE > 400.0);
/// ```
pub const WGMMA_REDUCE_STAGES_PER_VALUE: f64 = 4.5e-6;
/// The cost of a split summed by each tile's last work item, per split and value of the tile,
/// in stages of one block: that work item reads every split's partial tile through its one SM,
/// one after another, after its own stages. Fitted on the H200 at 975x3821x24 on `wgmma_tf32`'s
/// 128 x 64 tiles (8 tiles; `host matmul`, median of 10): 14 splits 0.022 ms, 8 splits 0.018,
/// where [`WGMMA_REDUCE_STAGES_PER_VALUE`] alone (the memory's bandwidth over `m x n`) had
/// charged 14 splits under two stages of sum and chosen them.
///
/// ```
/// use hopper_kernels::matmul::plan::WGMMA_TILE_SUM_STAGES_PER_VALUE;
/// // A split of a 128 x 64 tile adds about 1.4 stages to its tile's last work item.
/// assert!((128.0 * 64.0 * WGMMA_TILE_SUM_STAGES_PER_VALUE - 1.4f64).abs() < 0.1);
/// ```
pub const WGMMA_TILE_SUM_STAGES_PER_VALUE: f64 = 1.7e-4;
/// The cost of a cluster-summed split (the `_cluster` kernels) per value of its tile, in stages
/// of one block: every block stores its partial product in its shared memory and reads its share
/// of the tile's rows from every block of the cluster, a tile's worth whatever the split count,
/// at the speed of distributed shared memory. Fitted on the H200 (BF16, median of 11 x 10
/// launches): at 64x4096x4096 in clusters of 6 on 128 x 256 tiles 14.5 us, of 3 on 128 x 128
/// 13.6 us, of 2 on 128 x 64 11.1 us; at 128x4096x4096 17.0, 15.1 and 11.9 us: beyond their
/// stages, about 13, 6.5 and 3.3 stages of sum.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::WGMMA_CLUSTER_SUM_STAGES_PER_TILE_VALUE;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// // A 128 x 256 tile's sum costs about 13 stages.
/// assert!((128.0 * 256.0 * WGMMA_CLUSTER_SUM_STAGES_PER_TILE_VALUE - 13.0f64).abs() < 1.0);
/// // 64 x 4096 x 4096: two splits of 128 x 64 tiles in clusters, not six of 128 x 256.
/// let p = plan(MatmulVariant::WgmmaBf16, MatmulShape::new(64, 4096, 4096)?, MatmulDevice::H200)?;
/// assert_eq!((p.kernel(), p.split().unwrap().splits), ("wgmma_bf16_n64_cluster", 2));
/// # Ok(()) }
/// ```
pub const WGMMA_CLUSTER_SUM_STAGES_PER_TILE_VALUE: f64 = 4.0e-4;
/// The most bytes of partial sums (`splits x m x n x 4`) a tensor-core split may write, as a
/// fraction of the operands' bytes (`(m + n) x k` elements): the reduction's traffic stays small
/// beside the product's.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::WGMMA_MAX_PARTIAL_FRACTION;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// // 256 x 512 x 256 (2 tiles, 8 stages): two splits of 4 stages would write 512 KiB of partial
/// // sums against 512 KiB of BF16 operands, more than a quarter: no split.
/// let p = plan(MatmulVariant::WgmmaBf16, MatmulShape::new(256, 512, 256)?, MatmulDevice::H200)?;
/// assert_eq!(p.split().unwrap().splits, 1);
/// assert_eq!(WGMMA_MAX_PARTIAL_FRACTION, 0.25);
/// # Ok(()) }
/// ```
pub const WGMMA_MAX_PARTIAL_FRACTION: f64 = 0.25;
/// The tensor-core split takes the fewest splits whose estimate is within this factor of the
/// least: each split adds partial sums that the estimate charges only roughly.
///
/// ```
/// use hopper_kernels::matmul::plan::WGMMA_SPLIT_SLACK;
/// assert!(WGMMA_SPLIT_SLACK > 1.0 && WGMMA_SPLIT_SLACK < 1.1);
/// ```
pub const WGMMA_SPLIT_SLACK: f64 = 1.05;
/// The tensor-core kernels split `k` only when the estimate falls to this fraction of the
/// unsplit one or less.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// // 4096^3: 512 tiles of 128 x 256 already give every SM a block.
/// let p = plan(MatmulVariant::WgmmaBf16, MatmulShape::new(4096, 4096, 4096)?, MatmulDevice::H200)?;
/// assert_eq!(p.split().unwrap().splits, 1);
/// # Ok(()) }
/// ```
pub const WGMMA_SPLIT_GAIN: f64 = 0.8;
/// A stage of a 128 x 128 tensor-core tile (the `_n128` kernels) in stages of the 128 x 256
/// tile: half the multiply-adds, plus the `A` operand each warpgroup reads per instruction,
/// which the narrow tile spreads over half the columns. Measured on the H200: `wgmma_bf16` at
/// 4096^3 took 0.214 ms on 128 x 256 tiles and 0.245 ms on 128 x 128 (twice the tiles), 0.57
/// of a wide stage each.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::WGMMA_N128_STAGE_COST;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// assert!(WGMMA_N128_STAGE_COST > 0.5 && WGMMA_N128_STAGE_COST < 1.0);
/// // 1000 x 800 x 1200: 40 wide tiles leave 92 of 132 SMs idle, 80 narrow ones 52 (and 160 of
/// // 128 x 64 would take two waves).
/// let p = plan(MatmulVariant::WgmmaBf16, MatmulShape::new(1000, 800, 1200)?, MatmulDevice::H200)?;
/// assert_eq!(p.kernel(), "wgmma_bf16_n128");
/// // 4096^3: 512 wide tiles already fill every SM.
/// let p = plan(MatmulVariant::WgmmaBf16, MatmulShape::new(4096, 4096, 4096)?, MatmulDevice::H200)?;
/// assert_eq!(p.kernel(), "wgmma_bf16");
/// # Ok(()) }
/// ```
pub const WGMMA_N128_STAGE_COST: f64 = 0.57;
/// A stage of a 128 x 64 tensor-core tile (the 16-bit `_n64` kernels) in stages of the
/// 128 x 256 tile: a quarter of the multiply-adds, and the same `A` rows. Measured on the H200
/// (BF16, median of 11 x 10 launches): 4096^3 took 317 us on 128 x 64 tiles against 183 us on
/// 128 x 256 (16 waves of them against 4), 0.43 of a wide stage each; 2048^3 42.0 against 27.6
/// us (4 waves against 1), 0.38.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::WGMMA_N64_STAGE_COST;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// assert!(WGMMA_N64_STAGE_COST > 0.25 && WGMMA_N64_STAGE_COST < 0.57);
/// // 1024^3: 32 wide tiles leave 100 of 132 SMs idle; 128 of 128 x 64 leave 4 (9.6 us against
/// // 10.7 on 128 x 128 and 15.4 on 128 x 256).
/// let p = plan(MatmulVariant::WgmmaBf16, MatmulShape::new(1024, 1024, 1024)?, MatmulDevice::H200)?;
/// assert_eq!(p.kernel(), "wgmma_bf16_n64");
/// # Ok(()) }
/// ```
pub const WGMMA_N64_STAGE_COST: f64 = 0.4;
/// A stage of the `_n16` kernels' 16 x 128 tile in stages of the 128 x 256 tile: where it runs
/// (`m <= 16`) the time is the time to read the stage's bytes, 18 KiB against the wide
/// stage's 48 KiB.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::{WGMMA_N128_STAGE_COST, WGMMA_N16_STAGE_COST};
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// assert!(WGMMA_N16_STAGE_COST < WGMMA_N128_STAGE_COST);
/// // m = 16: the tiles of 16 rows, as many as the 128-row tiles but a seventh of their bytes.
/// let p = plan(MatmulVariant::WgmmaTf32, MatmulShape::new(16, 4096, 4096)?, MatmulDevice::H200)?;
/// assert_eq!(p.kernel(), "wgmma_tf32_n16");
/// // m = 17 does not fit them: tiles of 128 rows (here 128 x 64, in 2 splits).
/// let p = plan(MatmulVariant::WgmmaTf32, MatmulShape::new(17, 4096, 4096)?, MatmulDevice::H200)?;
/// assert_eq!(p.kernel(), "wgmma_tf32_n64");
/// # Ok(()) }
/// ```
pub const WGMMA_N16_STAGE_COST: f64 = 0.375;

/// Fewest rows of `A` for which `medium` takes `wgmma_tf32_n16` over `few_rows` (with
/// [`N16_MIN_B_ELEMENTS`]). Measured on the H200 against `few_rows` (same process, ms, `k x
/// n` of 4096 x 4096, 4096 x 14336, 14336 x 4096, 8192 x 28672): `m = 1` 0.023, 0.064, 0.065,
/// 0.233 against 0.023, 0.061, 0.062, 0.219 (`few_rows` streams `B` at the memory's pace); `m =
/// 2` 0.023 against 0.031 at 4096 x 4096 (cuBLASLt TF32 0.024), `m = 3` 0.237 against 0.256
/// at 8192 x 28672 (cuBLASLt 0.225), where `few_rows_2` and `_4` do 2 and 4 times the FMAs of
/// `_1` per element of `B`; `m =
/// 4` 0.024, 0.065, 0.064 against 0.027, 0.067, 0.070; `m = 16` 0.024, 0.064, 0.065 against
/// 0.035, 0.079, 0.080, where `few_rows`' FMAs per element of `B` slow it (at 8192 x 28672 its
/// 224 tiles take 2 waves of 132 SMs: 0.250 at `m = 4` against 0.236, 0.253 at `m = 16`
/// against 0.272; splitting them in 7, 12 waves of a seventh, took 0.249 at `m = 16`, and 112
/// tiles in 7 splits 0.0731 against 0.0627 unsplit: short work items pay their pipeline's fill).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, PrecisionPolicy, plan::{plan_with, PlanOptions}};
/// let medium = PlanOptions { policy: PrecisionPolicy::Medium, ..PlanOptions::default() };
/// let p = plan_with(MatmulVariant::Auto, MatmulShape::new(16, 4096, 14336)?, MatmulDevice::H200, medium)?;
/// assert_eq!(p.kernel(), "wgmma_tf32_n16");
/// let p = plan_with(MatmulVariant::Auto, MatmulShape::new(1, 4096, 14336)?, MatmulDevice::H200, medium)?;
/// assert_eq!(p.kernel(), "matmul_gemv"); // few_rows on one row of f32
/// # Ok(()) }
/// ```
pub const TF32_N16_MIN_M: u32 = 2;
/// Fewest elements of `B` for which `auto` takes an `_n16` kernel (`medium` with
/// [`TF32_N16_MIN_M`]; BF16 and F16 operands with [`N16_MIN_WAVE_FILL`]): the smallest measured,
/// 4096 x 4096; below it the launch's fixed costs (tensor maps, a pipeline per work item) are
/// unmeasured against `few_rows` and the decode kernels.
pub const N16_MIN_B_ELEMENTS: u64 = 1 << 24;
/// Fewest elements of `B` for which `auto` on BF16 or F16 operands with one row (`m' = 1`) takes
/// `few_rows`' 16-bit kernel, its split filling one wave of its blocks
/// (`few_rows_blocks_per_sm`), over the 16-row tensor-core tiles and the decode kernels. Measured
/// on the H200 (ms, BF16, against cuBLASLt in the same run): `k x n` of 8192 x 28672 (2^27.8
/// elements) 0.114 against 0.111, where the 16-row tiles took 0.124 against 0.108 (224 tiles,
/// two waves); but 4096 x 14336 0.036 against 0.033 (the tiles 0.033 against 0.032), 14336 x
/// 4096 0.038 against 0.032 (0.034 against 0.032) and 4096 x 4096 0.018 against 0.014 (0.014
/// against 0.024).
///
/// ```
/// use hopper_kernels::matmul::plan::{M1_FEW_ROWS_MIN_B_ELEMENTS, N16_MIN_B_ELEMENTS};
/// assert!(M1_FEW_ROWS_MIN_B_ELEMENTS > 14336 * 4096 && M1_FEW_ROWS_MIN_B_ELEMENTS <= 8192 * 28672);
/// assert!(M1_FEW_ROWS_MIN_B_ELEMENTS > N16_MIN_B_ELEMENTS);
/// ```
pub const M1_FEW_ROWS_MIN_B_ELEMENTS: u64 = 1 << 27;
/// Fewest elements of `B` for which `auto` on BF16 or F16 operands with one row (`m' = 1`)
/// takes a tensor-core kernel (the 16-row tiles where they fill the SMs, else the decode kernel)
/// over `few_rows`' 16-bit kernel: the least of the 16-row tiles, [`N16_MIN_B_ELEMENTS`]. Below
/// it the decode kernel's column strips of 64 are too few to keep loads in flight, and a copy
/// of a row of `A` not in whole 16-byte vectors is a second launch, where `few_rows` reads both
/// as they lie, split into one wave of its blocks. Measured on the H200 (us, against cuBLASLt
/// BF16 in the same run): the decode kernel at 1 x 673 x 88 10.1 (8.0 in its best split)
/// against 7.7, 1 x 1166 x 64 7.7 (6.8) against 6.8, 1 x 2048 x 2048 10.3 against 6.8;
/// `few_rows` on `f32` at 1 x 673 x 88 5.1, on BF16 at 1 x 1024 x 2048 7.9 against 6.6.
///
/// ```
/// use hopper_kernels::matmul::plan::{M1_DECODE_MIN_B_ELEMENTS, N16_MIN_B_ELEMENTS};
/// assert_eq!(M1_DECODE_MIN_B_ELEMENTS, N16_MIN_B_ELEMENTS);
/// ```
pub const M1_DECODE_MIN_B_ELEMENTS: u64 = N16_MIN_B_ELEMENTS;
/// Least fill of the SMs' last wave by an `_n16` plan's work items (tiles times splits) for
/// which `auto` takes it over `decode_bf16` (`decode_f16`) on BF16 (F16) operands with `m <=
/// 16`. The `_n16` kernels stream `B` at the pace of the blocks that run, about 32 GB/s each
/// on the H200 whatever the ring's depth (a CUDA C model of their TMA ring alone: 112 blocks
/// of 16 KiB stages took 0.0335 ms for 4096 x 14336 BF16 elements, as cuBLASLt's kernel on its
/// own 112 blocks), so a wave at 85% of the SMs keeps 85% of the memory's pace, where the decode
/// kernels keep 70-80% of it. Measured on the H200 (ms, `m = 16`, the `_n16` kernel against the
/// decode kernel and cuBLASLt): `k x n` of 4096 x 14336 (112 tiles, 85% of the SMs) 0.033
/// against 0.041 and 0.033; 8192 x 28672 (224 tiles, two waves at 85%) 0.120 against 0.140 and
/// 0.111; 4096 x 4096 (32 tiles in 4 splits, 97%) 0.015 against 0.018 and 0.014. A last wave
/// below this leaves too many SMs idle: 140 items would run one SM's tile alone after the
/// first wave.
///
/// ```
/// use hopper_kernels::matmul::plan::N16_MIN_WAVE_FILL;
/// assert!(N16_MIN_WAVE_FILL <= 112.0 / 132.0);
/// ```
pub const N16_MIN_WAVE_FILL: f64 = 0.8;

/// The most of `sgemm`'s 512 x 32 tiles a product of 17 to 32 columns may take for `auto` to run
/// `few_cols`' shared kernels on it instead (FP32): up to 4 tiles `sgemm` must split `k` into
/// many partial sums to fill the SMs, and streaming `A` once is faster. Measured on the H200
/// (ms, `few_cols` against `sgemm`, cuBLAS FP32 beside): 975x3821x24 0.030 against 0.039
/// (0.023); 1000x2000x20 0.015 against 0.016 (0.020); 2000x8000x30 0.081 against 0.087
/// (0.045); from 8 tiles `sgemm`: 4096x4096x24 0.086 against 0.049, 6358x11159x27 0.340 against
/// 0.214.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::FEW_COLS_SHARED_MAX_TILES;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, PlanOptions, PrecisionPolicy, plan_with};
/// let fp32 = PlanOptions { policy: PrecisionPolicy::Highest, ..PlanOptions::default() };
/// let auto = |m, k, n| plan_with(MatmulVariant::Auto, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200, fp32);
/// assert_eq!(auto(975, 3821, 24)?.kernel(), "matmul_few_cols_shared_32");
/// assert_eq!(auto(4096, 4096, 24)?.kernel(), "sgemm_512x32");
/// assert_eq!(FEW_COLS_SHARED_MAX_TILES * 512, 2048);
/// # Ok(()) }
/// ```
pub const FEW_COLS_SHARED_MAX_TILES: u32 = 4;

/// The tile width of the tensor-core kernels that come in two ([`plan_with`] takes the cheaper
/// by its estimate unless [`PlanOptions::tile`] names one).
///
/// ```
/// use hopper_kernels::matmul::plan::TileWidth;
/// assert_eq!(TileWidth::parse("n128"), Some(TileWidth::N128));
/// assert_eq!(TileWidth::N256.name(), "n256");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TileWidth {
    /// The instruction's `n = 256`: tiles of 128 x 256 of `C` (`wgmma_tf32`: 256 x 128).
    N256,
    /// The instruction's `n = 128`: tiles of 128 x 128 (the `_n128` kernels).
    N128,
    /// The instruction's `n = 64`: tiles of 128 x 64 (the `_n64` kernels; `wgmma_tf32_n64`,
    /// which tiles `C^T`, puts both consumer warpgroups on the same 64 columns).
    N64,
    /// The instruction's `n = 16`: the `_n16` kernels' tiles of 16 x 128 of `C` (on `C^T`), for
    /// `m <= 16` (the planner considers them only there).
    N16,
}

impl TileWidth {
    /// Every width, widest first.
    pub const ALL: [Self; 4] = [Self::N256, Self::N128, Self::N64, Self::N16];

    /// The width's name as the command line takes it.
    ///
    /// ```
    /// use hopper_kernels::matmul::plan::TileWidth;
    /// assert_eq!(TileWidth::N128.name(), "n128");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::N256 => "n256",
            Self::N128 => "n128",
            Self::N64 => "n64",
            Self::N16 => "n16",
        }
    }

    /// The `n` of the width's `wgmma` instruction.
    ///
    /// ```
    /// use hopper_kernels::matmul::plan::TileWidth;
    /// assert_eq!(TileWidth::ALL.map(TileWidth::instruction_n), [256, 128, 64, 16]);
    /// ```
    pub fn instruction_n(self) -> u32 {
        match self {
            Self::N256 => 256,
            Self::N128 => 128,
            Self::N64 => 64,
            Self::N16 => 16,
        }
    }

    /// The width named `name` (`n256`, `n128`, `n64`, `n16`).
    ///
    /// ```
    /// use hopper_kernels::matmul::plan::TileWidth;
    /// assert_eq!(TileWidth::parse("n256"), Some(TileWidth::N256));
    /// assert_eq!(TileWidth::parse("wide"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == name)
    }
}

/// What the planner needs to know of the device.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// // A GPU without Hopper's tensor cores: `auto` keeps to the FP32 kernels.
/// let older = MatmulDevice { sm_count: 108, tensor_cores: false, cluster_blocks: [0; 8] };
/// let p = plan(MatmulVariant::Auto, MatmulShape::new(4096, 4096, 4096)?, older)?;
/// assert_eq!(p.variant(), MatmulVariant::SgemmWarpTiled);
/// assert!(p.reason().contains("no tensor-core kernels on this device"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatmulDevice {
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// Whether the Hopper tensor-core kernels (the `sm_90a` module) run on it.
    pub tensor_cores: bool,
    /// Blocks of the tensor-core tile kernels (one per SM) that run at once in clusters of `s`
    /// blocks, at index `s - 1` for `s` = 1 to 8 (`cuOccupancyMaxActiveClusters` times `s`): a
    /// cluster's blocks share a GPC, so past 2 blocks a cluster a GPC's SM count can leave SMs
    /// idle. A split of `k` is summed in clusters only where its work items all fit at once;
    /// zeros: no clusters.
    pub cluster_blocks: [u32; 8],
}

/// [`MatmulDevice::cluster_blocks`] of the H100 and H200 models as `cuOccupancyMaxActiveClusters`
/// gave them for `wgmma_bf16_n128_cluster` on an H100 SXM (a chip's GPCs may differ; a GPU's own
/// [`MatmulDevice::of_gpu`] asks the driver).
const HOPPER_CLUSTER_BLOCKS: [u32; 8] = [132, 132, 117, 120, 110, 102, 105, 120];

impl MatmulDevice {
    /// The H100 SXM (132 SMs, tensor-core kernels).
    ///
    /// ```
    /// use hopper_kernels::{gpu::DeviceModel, matmul::MatmulDevice};
    /// assert_eq!(MatmulDevice::H100, MatmulDevice::of_model(DeviceModel::H100));
    /// assert_eq!(MatmulDevice::H100.sm_count, DeviceModel::H100.info().sm_count);
    /// ```
    pub const H100: Self = Self { sm_count: 132, tensor_cores: true, cluster_blocks: HOPPER_CLUSTER_BLOCKS };
    /// The H200 SXM: the H100's 132 SMs with more and faster memory.
    ///
    /// ```
    /// use hopper_kernels::matmul::MatmulDevice;
    /// // What the planner knows of the H200 is the H100's: the same plans.
    /// assert_eq!(MatmulDevice::H200, MatmulDevice::H100);
    /// ```
    pub const H200: Self = Self { sm_count: 132, tensor_cores: true, cluster_blocks: HOPPER_CLUSTER_BLOCKS };

    /// What the planner knows of a device model.
    ///
    /// ```
    /// use hopper_kernels::{gpu::DeviceModel, matmul::MatmulDevice};
    /// let model: DeviceModel = "h200".parse().unwrap();
    /// assert_eq!(MatmulDevice::of_model(model), MatmulDevice::H200);
    /// assert_eq!(MatmulDevice::H200.sm_count, model.info().sm_count);
    /// ```
    pub fn of_model(model: crate::gpu::DeviceModel) -> Self {
        match model {
            crate::gpu::DeviceModel::H100 => Self::H100,
            crate::gpu::DeviceModel::H200 => Self::H200,
        }
    }
}

/// Shortest `k` for which `auto` runs `wgmma_tf32x3` (or, under `medium`, `wgmma_tf32`): from
/// `k = 120` on, split-TF32's error bound is within FP32's (`Precision::Tf32x3.tolerance`), so
/// `high` keeps FP32's bound on every input. (Measured on the H100, x cuBLAS FP32, against the
/// FP32 kernels' choice: 4097x129x8193 0.89 against 1.13; 8192x64x8192 0.56 against 0.86, which
/// now runs the FP32 kernels: its bound would exceed FP32's.)
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::SPLIT_TF32_MIN_K;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let auto = |k| plan(MatmulVariant::Auto, MatmulShape::new(8192, k, 8192).unwrap(), MatmulDevice::H100);
/// assert_eq!(auto(SPLIT_TF32_MIN_K)?.variant(), MatmulVariant::WgmmaTf32x3);
/// let short = auto(SPLIT_TF32_MIN_K - 1)?;
/// assert_eq!(short.variant(), MatmulVariant::Sgemm);
/// assert!(short.reason().contains("k = 127 < 128"), "{}", short.reason());
/// # Ok(()) }
/// ```
pub const SPLIT_TF32_MIN_K: usize = 128;
/// Fewest tiles of `wgmma_tf32x3` (128 x 128, one block per SM) for which `auto` runs it: with
/// fewer, too many SMs idle (measured, x cuBLAS FP32, against the FP32 kernels' choice: 1000x800x1200,
/// 80 tiles, 0.78 against 0.91; at 64 tiles a draw, 1024^3 0.93 against 0.96 and
/// 1024x4096x1024 1.06 against 1.03; 512^3, 16 tiles, 1.94 against 1.15). Under `high`
/// [`SPLIT_TF32_MIN_WAVE_FILL`] also asks that the tiles fill their waves (on 132 SMs, at least
/// 99 tiles in one wave); `medium`'s one TF32 pass keeps this bound alone.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let auto = |m, n| plan(MatmulVariant::Auto, MatmulShape::new(m, 4096, n).unwrap(), MatmulDevice::H100);
/// // 10 x 10 tiles of 128 x 128 run split-TF32; 8 x 8 run the FP32 kernels.
/// assert_eq!(auto(1280, 1280)?.variant(), MatmulVariant::WgmmaTf32x3);
/// let small = auto(1024, 1024)?;
/// assert!(small.reason().contains("64 tiles of 128x128 < 80"), "{}", small.reason());
/// # Ok(()) }
/// ```
pub const SPLIT_TF32_MIN_TILES: u32 = 80;

/// The narrowest `m` and `n` `auto` takes split-TF32 at under `high`. At a side of 64 or fewer a
/// 128-row tile of `wgmma_tf32_promoted` is at least half padding, and its three products cost
/// more than FP32 FMA on the CUDA cores. On the H200: 29x3987x15107 took 1.23 ms split-TF32
/// against `sgemm_warp_tiled`'s 0.37 (cuBLAS FP32 0.18), 64x16384x16384 2.07 against 1.45 and
/// 16384x16384x64 2.23 against 1.49; `sgemm`'s narrow tiles now take 0.13, 0.83 and 0.86. At a
/// side of 65 to 128 (one row of tiles) the split of the long operand, which reads it once and
/// writes it three times, costs more than the tensor cores save: 128x4096x14336 0.456 ms against
/// `sgemm_warp_tiled`'s 0.346 (cuBLAS FP32 0.333) and 128x8192x28672 1.785 against 1.307 (1.323),
/// where 256 rows keep split-TF32 ahead (256x4096x14336 0.573 against 0.673; 256x8192x28672 2.197
/// against 2.579; H200, 2026-11-30).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::SPLIT_TF32_MIN_SIDE;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let auto = |m, n| plan(MatmulVariant::Auto, MatmulShape::new(m, 16_384, n).unwrap(), MatmulDevice::H200);
/// assert_eq!(auto(SPLIT_TF32_MIN_SIDE, 16_384)?.variant(), MatmulVariant::WgmmaTf32x3);
/// let narrow = auto(SPLIT_TF32_MIN_SIDE - 1, 16_384)?;
/// assert_ne!(narrow.variant(), MatmulVariant::WgmmaTf32x3);
/// assert!(narrow.reason().contains("a side of 128 <= 128"), "{}", narrow.reason());
/// # Ok(()) }
/// ```
pub const SPLIT_TF32_MIN_SIDE: usize = 129;

/// Fewest multiply-adds (`m * k * n`) for which `auto` runs `wgmma_tf32x3` under `high`: below
/// them its fixed costs (the guard's scan of `A` and `B`, the split into two TF32 parts, a product
/// of tripled `k`, three launches) take longer than the FP32 kernels. On the H200 (x cuBLAS FP32,
/// split-TF32 against the FP32 kernels' best, 2026-11-28): 5344x181x381 2.32 against 1.36,
/// 132x272x13653 2.79 against 1.63, 15128x344x177 1.89 against 1.48, 1935x396x547 1.46 against
/// 1.23, 854x334x3510 1.52 against 1.44, 1000x800x1200 0.98 against 0.92; at 2^31 a draw
/// (16165x300x415, 2.0e9: 1.22 against 1.27); above it split-TF32 wins (4741x945x826 1.52
/// against 1.69, 7134x405x1598 0.91 against 1.23, 2048^3 0.62 against 1.07).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::SPLIT_TF32_MIN_MACS;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let auto = |m, k, n| plan(MatmulVariant::Auto, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200);
/// assert_eq!(SPLIT_TF32_MIN_MACS, 1 << 31);
/// assert_eq!(auto(2048, 512, 2048)?.variant(), MatmulVariant::WgmmaTf32x3); // 2^31
/// let small = auto(5344, 181, 381)?;
/// assert_eq!(small.variant(), MatmulVariant::Sgemm);
/// assert!(small.reason().contains("368527584 multiply-adds < 2147483648"), "{}", small.reason());
/// # Ok(()) }
/// ```
pub const SPLIT_TF32_MIN_MACS: u64 = 1 << 31;

/// The least fraction of its waves that `wgmma_tf32x3`'s tiles of 128x128 must fill for `auto`
/// to run it under `high`: `tiles / (ceil(tiles / SMs) * SMs)`, one block an SM. Its tiles are
/// four times the FP32 kernels' 64x64 ones, so a last wave that leaves SMs idle costs it more
/// than them. On the
/// H200 (2026-11-30, x cuBLAS FP32, split-TF32 against the FP32 plan): 604x1975x2142, 85 tiles
/// filling 64%, 1.20 against `sgemm`'s 1.11; 4741x945x826, 266 tiles filling 67%, 1.48 against
/// 1.28; 1955x11446x1438, 192 filling 73%, 1.38 against `sgemm_warp_tiled`'s 1.27; from 80% on
/// split-TF32 wins: 13490x3616x637 (80%) 0.62 against 1.16, 14062x3788x394 (83%) 1.25 against
/// 1.38, 256x4096x14336 (85%) 0.86 against 1.01, 7134x405x1598 (92%) 0.89 against 1.16.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let auto = |m, k, n| plan(MatmulVariant::Auto, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200);
/// // 38 x 7 tiles: two full waves of 132 SMs and 2 tiles.
/// let ragged = auto(4741, 945, 826)?;
/// assert_ne!(ragged.variant(), MatmulVariant::WgmmaTf32x3);
/// assert!(ragged.reason().contains("266 tiles of 128x128 fill 67% of their 3 waves"), "{}", ragged.reason());
/// assert_eq!(auto(7134, 405, 1598)?.variant(), MatmulVariant::WgmmaTf32x3); // 728 tiles: 92%
/// # Ok(()) }
/// ```
pub const SPLIT_TF32_MIN_WAVE_FILL: f64 = 0.75;

/// The most multiply-adds (`m * k * n`) a product with one TF32 pass on the tensor cores (under
/// `medium`) leaves to the FP32 kernels, where its plan would copy operands
/// ([`small_product_reason`], with [`TF32_SMALL_MIN_M`] and [`TF32_SMALL_MIN_N`]). Below it a
/// tensor-core plan's fixed costs (its `f32` operand copies into 16-byte rows for the TMA, tiles
/// mostly padding, more launches) can outweigh its arithmetic. BF16 and F16 operands have no
/// such rule: their copies are half the bytes and `sgemm` on 16-bit operands is slower than on
/// `f32`. Measured on the H200 in one run of `host bench --sweep-shapes` on the 22 shapes of the
/// 200-shape sweep that the rule had left to `sgemm` (2026-11-29, two rounds, us, `sgemm` against
/// the tensor cores with their copies): BF16 950x108x270 15.7 against 6.4, 388x97x540 12.7
/// against 6.3, 190x578x277 16.1 against 8.6, 56x3192x89 14.4 against 8.4, 21x51x4834 8.8
/// against 6.0, the tensor cores faster on 20 of 22 (12426x33x19 8.6 against 9.6, 28x392x35
/// even), F16 the same; TF32 950x108x270 12.2 against 6.6, 148x548x249 12.8 against 10.8,
/// 8830x45x55 10.4 against 8.5, but 56x3192x89 12.8 against 17.6, 105x1610x52 11.1 against
/// 14.1, 48x363x75 6.5 against 9.3 and 12426x33x19 7.9 against 8.7 (fewer than 128 rows or 32
/// columns).
///
/// ```
/// use hopper_kernels::matmul::plan::CUDA_CORE_MAX_MACS;
/// assert_eq!(CUDA_CORE_MAX_MACS, 1 << 25);
/// ```
pub const CUDA_CORE_MAX_MACS: u64 = 1 << 25;

/// Fewest rows of `C` for which a TF32 product of at most [`CUDA_CORE_MAX_MACS`] multiply-adds
/// whose plan copies operands takes the tensor cores (with at least [`TF32_SMALL_MIN_N`]
/// columns): fewer rows leave a 128-row tile mostly padding while `k` is long (measurements at
/// [`CUDA_CORE_MAX_MACS`]).
///
/// ```
/// use hopper_kernels::matmul::plan::{small_product_reason, TF32_SMALL_MIN_M};
/// use hopper_kernels::matmul::MatmulShape;
/// let shape = |m| MatmulShape::new(m, 548, 249).unwrap();
/// assert!(small_product_reason(shape(TF32_SMALL_MIN_M - 1), true).is_some());
/// assert_eq!(small_product_reason(shape(TF32_SMALL_MIN_M), true), None);
/// ```
pub const TF32_SMALL_MIN_M: usize = 128;

/// Fewest columns of `C` for which a small TF32 product whose plan copies operands takes the
/// tensor cores (with at least [`TF32_SMALL_MIN_M`] rows): on the H200 12426x33x19 ran 0.0079 ms
/// on `sgemm` against 0.0087 on the tensor cores.
///
/// ```
/// use hopper_kernels::matmul::plan::{small_product_reason, TF32_SMALL_MIN_N};
/// use hopper_kernels::matmul::MatmulShape;
/// let shape = |n| MatmulShape::new(8830, 45, n).unwrap();
/// assert!(small_product_reason(shape(TF32_SMALL_MIN_N - 1), true).is_some());
/// assert_eq!(small_product_reason(shape(55), true), None);
/// ```
pub const TF32_SMALL_MIN_N: usize = 32;

/// Elements a row of `A` (`k`) and of `B` (`n`) must be a multiple of for [`CUDA_CORE_MAX_MACS`]
/// to leave no product to the CUDA cores: 8 makes whole 16-byte rows of BF16, F16 and `f32`.
///
/// ```
/// use hopper_kernels::matmul::plan::WHOLE_ROWS_ELEMENTS;
/// assert_eq!(WHOLE_ROWS_ELEMENTS * 2, 16);
/// ```
pub const WHOLE_ROWS_ELEMENTS: usize = 8;

/// The longest `k` `auto` gives `short_k` (the kernel's limit for four columns a thread,
/// `kernels::matmul::short_k::FOUR_COLUMNS_MAX_K`), where `k` or `n` is not a multiple of 4: at most 16
/// multiply-adds per element of `C` leave the time to the writing of `C`, which `short_k` does
/// in 16-byte stores on rows of any length (each block on rows of one alignment). On the H200
/// (x cuBLAS FP32, `sgemm` beside it): 2840x1x2119 0.96 (1.48), 7393x1x1103 0.79 (1.41),
/// 3905x4x2614 0.81 (1.44), 5006x6x6049 0.49 (0.61), 150x3x14397 0.95 (0.87). Where both are
/// multiples of 4, `sgemm` writes `C` faster still, 64 KiB a block against `short_k`'s 32:
/// 16384x8x16384 0.277 ms against 0.312, 8192x16x8192 0.090 against 0.118, 20000x16x100 0.009
/// against 0.018.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::SHORT_K_MAX;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let auto = |k: u32, n| plan(MatmulVariant::Auto, MatmulShape::new(4096, k as usize, n)?, MatmulDevice::H200);
/// let p = auto(SHORT_K_MAX - 1, 4096)?;
/// assert_eq!((p.variant(), p.kernel()), (MatmulVariant::ShortK, "matmul_short_k"));
/// assert!(p.reason().contains("k = 15 <= 16"), "{}", p.reason());
/// assert_eq!(auto(SHORT_K_MAX, 4097)?.variant(), MatmulVariant::ShortK);
/// // On sgemm's 16-byte path, and past 16, sgemm.
/// assert_eq!(auto(SHORT_K_MAX, 4096)?.variant(), MatmulVariant::Sgemm);
/// assert_eq!(auto(SHORT_K_MAX + 1, 4097)?.variant(), MatmulVariant::Sgemm);
/// # Ok(()) }
/// ```
pub const SHORT_K_MAX: u32 = kernels::matmul::short_k::FOUR_COLUMNS_MAX_K;

/// Elements of `C` up to which `short_k` also takes `k` of 17 to 32 (its two-columns-a-thread
/// form) where `k` or `n` is not a multiple of 4. Measured on the H200 (`f32` operands, ms),
/// `short_k` against `sgemm` and the BF16 tensor cores (which first copy such operands into
/// 16-byte rows): 2455x19x3667 (9.0M elements) 0.0244 against 0.0279 and 0.0318, 1812x27x494
/// 0.0075 against 0.0105 and 0.0080, 7700x26x433 0.0158 against 0.0151 and 0.0158; above it
/// 8841x28x6665 (58.9M) 0.1636 against 0.1568 and 0.1525. Planned so (H200, `auto` x cuBLASLt
/// in one run, before and after): BF16 2455x19x3667 1.58x to 1.36x, F16 1.56x to 1.26x, FP32
/// 1.01x to 0.88x; 1812x27x494 F16 8.3 to 7.7 us, FP32 10.2 to 7.6; 7700x26x433 a little slower
/// (BF16 15.7 to 16.7 us, FP32 14.9 to 15.7). TF32 keeps its tensor cores, which read such rows
/// in place (2455x19x3667 0.0237).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, plan::takes_short_k};
/// let takes = |m, k, n| takes_short_k(MatmulShape::new(m, k, n).unwrap());
/// assert!(takes(2455, 19, 3667) && takes(1812, 27, 494));
/// assert!(!takes(8841, 28, 6665), "58.9M elements of C");
/// assert!(!takes(2456, 20, 3668), "sgemm's 16-byte path");
/// assert!(!takes(2455, 33, 3667), "k > 32");
/// # Ok(()) }
/// ```
pub const SHORT_K_TWO_COLUMNS_MAX_OUTPUTS: u64 = 1 << 24;

/// Whether `short_k` is the CUDA-core kernel for `shape`: `k` at most [`SHORT_K_MAX`], or at most
/// 32 with `C` of at most [`SHORT_K_TWO_COLUMNS_MAX_OUTPUTS`] elements, and `k` or `n` not a
/// multiple of 4 (rows of any alignment, where `sgemm` has no 16-byte path), on a grid CUDA can
/// launch.
pub fn takes_short_k(shape: MatmulShape) -> bool {
    let outputs = shape.m as u128 * shape.n as u128;
    let short = shape.k <= SHORT_K_MAX as usize
        || (shape.k <= kernels::matmul::short_k::MAX_K as usize && outputs <= SHORT_K_TWO_COLUMNS_MAX_OUTPUTS as u128);
    short
        && !kernels::matmul::sgemm::vector_path(
            shape.k.min(u32::MAX as usize) as u32,
            shape.n.min(u32::MAX as usize) as u32,
        )
        && short_k::plan(shape).is_ok()
}

/// The most rows of `C` for which `auto` under `medium` leaves a product whose `B` the TF32
/// tensor cores would take only as a copy (rows not whole 16-byte vectors, the TMA's stride
/// rule) to the FP32 kernels, which read `B` once as it lies ([`copied_b_reason`]): the copy
/// reads and writes all of `B`, more than the product's own traffic at so few rows. On the H200
/// (ms, `wgmma_tf32` and its copies against the FP32 kernels): 15x15019x6999 0.327 against 0.204,
/// 29x3987x15107 0.197 against 0.128, 24x13368x171 0.033 against 0.022. Not for BF16 or F16
/// operands, whose `sgemm` is slower than the copy and the tensor cores (29x3987x15107: 0.214
/// against 0.119).
///
/// ```
/// use hopper_kernels::matmul::plan::COPIED_B_MAX_M;
/// assert_eq!(COPIED_B_MAX_M, 32);
/// ```
pub const COPIED_B_MAX_M: usize = 32;

/// Why a product that one TF32 pass on the tensor cores could take is left to the FP32 kernels:
/// the reasons of [`narrow_or_short_reason`], or [`small_product_reason`] where rows of `A` or
/// `B` are not whole 16-byte vectors (`k` or `n` not a multiple of [`WHOLE_ROWS_ELEMENTS`]);
/// `None` where the tensor cores take it.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::plan::one_pass_cuda_core_reason;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape};
/// let why = |m, k, n| one_pass_cuda_core_reason(MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200);
/// assert_eq!(why(4096, 4096, 4096), None);
/// assert!(why(8841, 28, 6665).is_none(), "1.6e9 multiply-adds: the tensor cores");
/// assert!(why(5202, 3876, 1).unwrap().contains("n = 1 <= 16"));
/// assert!(why(5006, 6, 6049).unwrap().contains("k = 6 <= 16"));
/// assert!(why(100, 257, 255).unwrap().contains("6553500 multiply-adds"));
/// assert_eq!(why(255, 257, 255), None, "128 rows or more: the tensor cores");
/// assert_eq!(why(256, 256, 256), None, "whole 16-byte rows: the tensor cores at any size");
/// assert_eq!(why(64, 64, 64), None);
/// assert!(why(100, 256, 252).unwrap().contains("multiply-adds"), "n = 252: rows of B copied");
/// // Counted in u128: the largest shapes (sides up to u32::MAX) do not overflow.
/// let big = u32::MAX as usize;
/// assert_eq!(why(big, big, big), None);
/// # Ok(()) }
/// ```
pub fn one_pass_cuda_core_reason(shape: MatmulShape, device: MatmulDevice) -> Option<String> {
    one_pass_cuda_core_reason_with(shape, device, packed_rows_copied(shape))
}

/// Why a product that one tensor-core pass could take (TF32, BF16, F16) is left to the CUDA-core
/// kernels whatever its size: no tensor cores, a side of at most 16 (memory-bound: the narrow
/// kernels stream the large operand once), or `k` of at most [`SHORT_K_MAX`] (writing `C` bounds
/// the time); `None` otherwise. The `k` rule, on the H200 against the tensor cores (ms): BF16
/// 5006x6x6049 0.066 against 0.089, 1397x5x5919 0.021 against 0.030; TF32 1397x5x5919 0.020
/// against 0.025.
///
/// ```
/// use hopper_kernels::matmul::plan::narrow_or_short_reason;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape};
/// let why = |m, k, n| narrow_or_short_reason(MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200);
/// assert!(why(16, 4096, 4096).unwrap().contains("m = 16 <= 16"));
/// assert!(why(5006, 6, 6049).unwrap().contains("k = 6 <= 16"));
/// assert_eq!(why(100, 257, 255), None, "small, but no narrow side");
/// ```
pub fn narrow_or_short_reason(shape: MatmulShape, device: MatmulDevice) -> Option<String> {
    if !device.tensor_cores {
        Some("no tensor-core kernels on this device".into())
    } else if shape.m <= FEW_ROWS_MAX_M as usize {
        Some(format!("m = {} <= {FEW_ROWS_MAX_M}: memory-bound", shape.m))
    } else if shape.n <= FEW_COLS_MAX_N as usize {
        Some(format!("n = {} <= {FEW_COLS_MAX_N}: memory-bound", shape.n))
    } else if shape.k <= SHORT_K_MAX as usize {
        Some(format!("k = {} <= {SHORT_K_MAX}: writing C bounds the time", shape.k))
    } else {
        None
    }
}

/// Whether the tensor-core plan copies packed row-major operands of `shape` before its launch
/// (and the CUDA-core kernels, which read them as they lie, do not): `k` or `n` not a multiple
/// of [`WHOLE_ROWS_ELEMENTS`].
pub(super) fn packed_rows_copied(shape: MatmulShape) -> bool {
    !(shape.k.is_multiple_of(WHOLE_ROWS_ELEMENTS) && shape.n.is_multiple_of(WHOLE_ROWS_ELEMENTS))
}

/// [`one_pass_cuda_core_reason`] with its rule for small products decided by the caller:
/// `tensor_cores_copy_more`, the tensor-core plan converts more operands before its launch than
/// the CUDA-core kernels do (a `GemmDesc`'s layouts decide it; packed row-major operands are
/// [`one_pass_cuda_core_reason`]'s case).
///
/// ```
/// use hopper_kernels::matmul::plan::one_pass_cuda_core_reason_with;
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape};
/// let shape = MatmulShape::new(100, 256, 256).unwrap();
/// assert!(one_pass_cuda_core_reason_with(shape, MatmulDevice::H200, true).is_some());
/// assert_eq!(one_pass_cuda_core_reason_with(shape, MatmulDevice::H200, false), None);
/// ```
pub fn one_pass_cuda_core_reason_with(
    shape: MatmulShape,
    device: MatmulDevice,
    tensor_cores_copy_more: bool,
) -> Option<String> {
    narrow_or_short_reason(shape, device).or_else(|| small_product_reason(shape, tensor_cores_copy_more))
}

/// Why a TF32 product of at most [`CUDA_CORE_MAX_MACS`] multiply-adds, with fewer than
/// [`TF32_SMALL_MIN_M`] rows or [`TF32_SMALL_MIN_N`] columns, is left to the FP32 kernels where
/// the tensor-core plan would convert more operands before its launch than the CUDA-core kernels
/// (`tensor_cores_copy_more`); `None` otherwise.
///
/// ```
/// use hopper_kernels::matmul::plan::small_product_reason;
/// use hopper_kernels::matmul::MatmulShape;
/// let shape = MatmulShape::new(100, 250, 256).unwrap();
/// assert!(small_product_reason(shape, true).unwrap().starts_with("6400000 multiply-adds <= 33554432"));
/// assert_eq!(small_product_reason(shape, false), None);
/// assert_eq!(small_product_reason(MatmulShape::new(256, 250, 256).unwrap(), true), None);
/// assert_eq!(small_product_reason(MatmulShape::new(1024, 1024, 1024).unwrap(), true), None);
/// ```
pub fn small_product_reason(shape: MatmulShape, tensor_cores_copy_more: bool) -> Option<String> {
    let macs = shape.macs();
    let narrow = shape.m < TF32_SMALL_MIN_M || shape.n < TF32_SMALL_MIN_N;
    (tensor_cores_copy_more && narrow && macs <= CUDA_CORE_MAX_MACS as u128).then(|| {
        format!(
            "{macs} multiply-adds <= {CUDA_CORE_MAX_MACS} with {} rows and {} columns on operands the tensor-core \
             plan would first copy into 16-byte rows: its fixed costs outweigh its arithmetic",
            shape.m, shape.n
        )
    })
}

/// Why `auto` under `medium` leaves a product to the FP32 kernels rather than copy its `B` for
/// the TF32 tensor cores: at most [`COPIED_B_MAX_M`] rows and rows of `B` that are not whole
/// 16-byte vectors (`n` not a multiple of 4); `None` otherwise.
///
/// ```
/// use hopper_kernels::matmul::MatmulShape;
/// use hopper_kernels::matmul::plan::copied_b_reason;
/// let why = |m, k, n| copied_b_reason(MatmulShape::new(m, k, n).unwrap());
/// assert!(why(29, 3987, 15107).unwrap().contains("a copy of B"));
/// assert_eq!(why(29, 3987, 15108), None, "rows of 15108 floats are whole 16-byte vectors");
/// assert_eq!(why(33, 3987, 15107), None);
/// ```
pub fn copied_b_reason(shape: MatmulShape) -> Option<String> {
    (shape.m <= COPIED_B_MAX_M && !shape.n.is_multiple_of(4)).then(|| {
        format!(
            "m = {} <= {COPIED_B_MAX_M} and B's rows of {} floats are not whole 16-byte vectors: the tensor cores \
             would take a copy of B, the FP32 kernels read it once as it lies",
            shape.m, shape.n
        )
    })
}

/// A launch plan: which kernel, its grid, its split of `k`, the reduction that follows a split,
/// and for `wgmma_tf32x3` the FP32 plan its guard falls back to. Built only by the planner
/// ([`plan`], [`plan_with`]), for one shape: a launch refuses matrices of another.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let p = plan(MatmulVariant::Sgemm, MatmulShape::new(1000, 800, 1200)?, MatmulDevice::H100)?;
/// // 80 tiles of 128 x 128 leave most of the 264 block slots idle: k is split in 3.
/// let text = p.to_string();
/// assert!(text.starts_with("sgemm: grid 10x8x3 of 256 threads, split-K 3 x 272 columns of A"), "{text}");
/// assert!(p.reduce().is_some() && p.fallback().is_none());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MatmulPlan {
    variant: MatmulVariant,
    kernel: &'static str,
    shape: MatmulShape,
    launch: LaunchConfig,
    split: Option<SplitK>,
    reduce: Option<LaunchConfig>,
    fallback: Option<Box<MatmulPlan>>,
    reason: String,
    operands: OperandType,
}

impl MatmulPlan {
    /// The kernel family that runs (never `auto`).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// // `auto` plans a kernel family, never itself.
    /// let p = plan(MatmulVariant::Auto, MatmulShape::new(65_536, 4096, 1)?, MatmulDevice::H100)?;
    /// assert_eq!(p.variant(), MatmulVariant::FewCols);
    /// # Ok(()) }
    /// ```
    pub fn variant(&self) -> MatmulVariant {
        self.variant
    }

    /// Its PTX symbol (for `wgmma_tf32x3`, the product kernel after the scan and the split).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// // few_rows picks the kernel of its family that fits m = 5.
    /// let p = plan(MatmulVariant::FewRows, MatmulShape::new(5, 4096, 1000)?, MatmulDevice::H100)?;
    /// assert_eq!(p.kernel(), "matmul_few_rows_8");
    /// # Ok(()) }
    /// ```
    pub fn kernel(&self) -> &'static str {
        self.kernel
    }

    /// The shape the plan multiplies.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// let shape = MatmulShape::new(300, 200, 100)?;
    /// assert_eq!(plan(MatmulVariant::Naive, shape, MatmulDevice::H100)?.shape(), shape);
    /// # Ok(()) }
    /// ```
    pub fn shape(&self) -> MatmulShape {
        self.shape
    }

    /// Grid, block and dynamic shared memory of the kernel.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// let p = plan(MatmulVariant::Naive, MatmulShape::new(1000, 800, 1200)?, MatmulDevice::H100)?;
    /// let cfg = p.launch_config();
    /// // One thread per element of C in 16 x 16 blocks: 1200 columns on x, 1000 rows on y.
    /// assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((75, 63, 1), (16, 16, 1), 0));
    /// # Ok(()) }
    /// ```
    pub fn launch_config(&self) -> LaunchConfig {
        self.launch
    }

    /// The split of `k`, for the kernels that take one (`sgemm`, `sgemm_warp_tiled`,
    /// `few_rows`, `few_cols`, `decode_bf16`, and the tensor-core tile kernels `wgmma_bf16`,
    /// `wgmma_f16`, `wgmma_tf32` and `wgmma_tf32_transposed` in whole stages).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, SplitK, plan};
    /// let shape = MatmulShape::new(512, 512, 512)?;
    /// let auto = plan(MatmulVariant::Auto, shape, MatmulDevice::H100)?;
    /// assert_eq!(auto.split(), Some(SplitK { splits: 8, k_chunk: 64 }));
    /// assert_eq!(plan(MatmulVariant::Tiled16, shape, MatmulDevice::H100)?.split(), None); // takes no split
    /// // Three 128 x 64 tiles of wgmma_tf32 and a long k: 9 splits of 47 stages of 32 (each
    /// // tile's last work item reads every split's partial tile).
    /// let long = plan(MatmulVariant::WgmmaTf32, MatmulShape::new(24, 13_368, 171)?, MatmulDevice::H200)?;
    /// assert_eq!(long.split(), Some(SplitK { splits: 9, k_chunk: 1504 }));
    /// # Ok(()) }
    /// ```
    pub fn split(&self) -> Option<SplitK> {
        self.split
    }

    /// The launch of the reduction of the split's partial products, when there is more than one.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// let auto = |m, k, n| plan(MatmulVariant::Auto, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H100);
    /// assert!(auto(512, 512, 512)?.reduce().is_some()); // 8 splits to add up
    /// assert!(auto(65_536, 4096, 1)?.reduce().is_none()); // one split: the kernel writes C
    /// # Ok(()) }
    /// ```
    pub fn reduce(&self) -> Option<LaunchConfig> {
        self.reduce
    }

    /// Whether `k` is split in more than one range (the partial products added by
    /// [`Self::reduce`] or, for the tensor-core tile kernels, by each tile's last work item).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// let p = |v, m, k, n| plan(v, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200);
    /// let sgemm = p(MatmulVariant::Auto, 512, 512, 512)?;
    /// assert!(sgemm.is_split() && sgemm.reduce().is_some());
    /// // The tile kernels add their partial products in the same launch.
    /// let bf16 = p(MatmulVariant::WgmmaBf16, 64, 4096, 4096)?;
    /// assert!(bf16.is_split() && bf16.reduce().is_none());
    /// assert!(!p(MatmulVariant::WgmmaBf16, 4096, 4096, 4096)?.is_split());
    /// # Ok(()) }
    /// ```
    pub fn is_split(&self) -> bool {
        self.split.is_some_and(|s| s.splits > 1)
    }

    /// For `wgmma_tf32x3`: the FP32 plan that runs instead where its guard refuses the inputs
    /// (non-finite values, magnitudes outside the split's range, a `C` that might overflow).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// let p = plan(MatmulVariant::Auto, MatmulShape::new(2048, 2048, 2048)?, MatmulDevice::H100)?;
    /// assert_eq!(p.variant(), MatmulVariant::WgmmaTf32x3);
    /// // Where the guard refuses the inputs, the FP32 plan runs instead.
    /// assert_eq!(p.fallback().map(|f| f.precision().name()), Some("fp32"));
    /// # Ok(()) }
    /// ```
    pub fn fallback(&self) -> Option<&MatmulPlan> {
        self.fallback.as_deref()
    }

    /// Why the planner chose this, in a sentence.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// let p = plan(MatmulVariant::Auto, MatmulShape::new(4097, 129, 8193)?, MatmulDevice::H100)?;
    /// assert!(p.reason().starts_with("high: compute-bound on tensor cores, k = 129"), "{}", p.reason());
    /// # Ok(()) }
    /// ```
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// The plan with `reason` in place of the planner's (for a caller that chose the kernel by
    /// rules of its own, such as the GEMM descriptor's BF16 routing).
    pub(super) fn with_reason(self, reason: String) -> Self {
        Self { reason, ..self }
    }

    /// The same product on the `_ld` form of its 16-bit tile kernel of 128 x 64 or 128 x 128
    /// tiles ([`KERNEL_BF16_N64_LD`](kernels::matmul::wgmma::KERNEL_BF16_N64_LD)), whose producer
    /// warpgroup reads both operands as they lie instead of the TMA reading them from copies
    /// with rows of 16-byte multiples; `None` for a kernel without that form, a plan that
    /// splits `k` (the `_ld` kernels run the planner's unsplit products), or `k` past
    /// [`LD_MAX_K`].
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// let bf16 = plan(MatmulVariant::WgmmaBf16, MatmulShape::new(6185, 39, 102)?, MatmulDevice::H200)?;
    /// let p = bf16.with_ld(MatmulDevice::H200).unwrap();
    /// assert_eq!((p.kernel(), p.launch_config().block_dim), ("wgmma_bf16_n64_ld", (384, 1, 1)));
    /// // The 128 x 256 tiles have no such form.
    /// let wide = plan(MatmulVariant::WgmmaBf16, MatmulShape::new(4097, 4097, 4097)?, MatmulDevice::H200)?;
    /// assert!(wide.with_ld(MatmulDevice::H200).is_none());
    /// # Ok(()) }
    /// ```
    pub fn with_ld(&self, device: MatmulDevice) -> Option<Self> {
        let kernel = kernels::matmul::wgmma::ld_kernel(self.kernel)?;
        if self.split.is_some_and(|s| s.splits > 1) || self.cluster_blocks() > 1 || self.shape.k > LD_MAX_K {
            return None;
        }
        let launch = super::wgmma::plan_split(self.shape, device, kernel, 1).ok()?;
        let reason = format!(
            "{}; A' and B' read as they lie by a producer warpgroup (rows of any length), not copied into \
             rows of 16-byte multiples for the TMA",
            self.reason
        );
        Some(Self { kernel, launch, reason, ..self.clone() })
    }

    /// The same product on the unaligned-`A` form of its TF32 tile kernel
    /// ([`KERNEL_TF32_UNALIGNED_A`](kernels::matmul::wgmma::KERNEL_TF32_UNALIGNED_A)), which reads
    /// an `A` whose rows are not 16-byte multiples as it lies instead of from a copy, with the same
    /// tiles and split of `k`; `None` for a kernel without that form, where `A`'s rows are fewer
    /// than four of its tiles (the classes' tiles would be mostly empty), where the classes' extra
    /// tiles would add a wave of work items on the device's SMs, or where the split's chunks do
    /// not cover the `k + 3` columns the kernel counts (the classes' maps may start 3 columns
    /// early).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// let tf32 = plan(MatmulVariant::WgmmaTf32, MatmulShape::new(6358, 11_159, 27)?, MatmulDevice::H200)?;
    /// let p = tf32.with_unaligned_a(MatmulDevice::H200).unwrap();
    /// assert_eq!(p.kernel(), "wgmma_tf32_n64_unaligned_a");
    /// assert!(p.reason().contains("A read as it lies in four classes of rows"), "{}", p.reason());
    /// // 100 rows: under four tiles of 128.
    /// let small = plan(MatmulVariant::WgmmaTf32, MatmulShape::new(100, 1031, 300)?, MatmulDevice::H200)?;
    /// assert!(small.with_unaligned_a(MatmulDevice::H200).is_none());
    /// # Ok(()) }
    /// ```
    pub fn with_unaligned_a(&self, device: MatmulDevice) -> Option<Self> {
        use kernels::matmul::wgmma::{UNALIGNED_A_EXTRA_K, unaligned_a_kernel};
        let kernel = unaligned_a_kernel(self.kernel)?;
        let rows = super::wgmma::tile_of(kernel).0 as usize;
        if self.shape.m < 4 * rows {
            return None;
        }
        // The split stays the one planned (or asked for): where the 3 columns the classes may
        // start early would spill into one more chunk, A is copied instead.
        let stage_k = self.shape.k as u64 + UNALIGNED_A_EXTRA_K as u64;
        if self.split.is_some_and(|s| s.splits > 1 && (s.splits as u64) * (s.k_chunk as u64) < stage_k) {
            return None;
        }
        let split = self.split;
        // The classes' tiles (up to 3 more rows of tiles) must not add a wave of work items: on
        // the H200 604x1975x2142 (136 items of 128x128 against 85) ran 0.070 ms as it lies
        // against 0.041 through the copy, 7188x613x1600 (416 against 377 on 132 SMs) 0.077
        // against 0.066; 6358x11159x27 (52 against 50) 0.107 against 0.232.
        let splits = split.map_or(1, |s| s.splits);
        let sms = device.sm_count.max(1) as u64;
        let waves = |tiles: u64| (tiles * splits as u64).div_ceil(sms);
        if waves(super::wgmma::tiles(self.shape, kernel)) > waves(super::wgmma::tiles(self.shape, self.kernel)) {
            return None;
        }
        let launch = super::wgmma::plan_split(self.shape, device, kernel, splits).ok()?;
        let reason = format!(
            "{}; A read as it lies in four classes of rows (rows 4 apart start equally far past a 16-byte \
             boundary: a tensor map each), not copied",
            self.reason
        );
        Some(Self { kernel, launch, split, reason, ..self.clone() })
    }

    /// The element type of the operands its kernel reads: `f32`, but BF16 or F16 for the
    /// tensor-core kernels of those types and for CUDA-core plans made with
    /// [`MatmulPlan::on_operands`].
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, OperandType, plan};
    /// let p = plan(MatmulVariant::Sgemm, MatmulShape::new(64, 64, 64)?, MatmulDevice::H200)?;
    /// assert_eq!(p.operand_type(), OperandType::F32);
    /// assert_eq!(p.on_operands(OperandType::Bf16)?.operand_type(), OperandType::Bf16);
    /// # Ok(()) }
    /// ```
    pub fn operand_type(&self) -> OperandType {
        self.operands
    }

    /// The same plan on operands of type `t`: the CUDA-core kernels (`sgemm`, `few_rows`,
    /// `few_cols`) read BF16 and F16 operands as they lie and widen them exactly, so the launch
    /// split and the FP32 error bound stay the same, and so does the grid but for one row of
    /// `f32` on `matmul_gemv`, which becomes `matmul_few_rows_*_1` on its own grid (plan with
    /// [`PlanOptions::operands`] set to `t` for the split `few_rows` takes on that type). Other
    /// kernels read one type only: for another `t` an [`Error::Unsupported`].
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, OperandType, plan};
    /// let p = plan(MatmulVariant::Auto, MatmulShape::new(3, 4096, 4096)?, MatmulDevice::H200)?;
    /// assert_eq!(p.on_operands(OperandType::F16)?.kernel(), "matmul_few_rows_f16_4");
    /// let one = plan(MatmulVariant::FewRows, MatmulShape::new(1, 4096, 4096)?, MatmulDevice::H200)?;
    /// assert_eq!((one.kernel(), one.launch_config().block_dim), ("matmul_gemv", (512, 1, 1)));
    /// let bf16 = one.on_operands(OperandType::Bf16)?;
    /// assert_eq!((bf16.kernel(), bf16.launch_config().block_dim), ("matmul_few_rows_bf16_1", (128, 1, 1)));
    /// let wgmma = plan(MatmulVariant::WgmmaTf32, MatmulShape::new(256, 256, 256)?, MatmulDevice::H200)?;
    /// assert!(wgmma.on_operands(OperandType::Bf16).is_err());
    /// # Ok(()) }
    /// ```
    pub fn on_operands(self, t: OperandType) -> Result<Self> {
        if t == self.operands {
            return Ok(self);
        }
        let (m, k, n) = (self.shape.m as u32, self.shape.k.min(u32::MAX as usize) as u32, self.shape.n as u32);
        let kernel = match self.variant {
            MatmulVariant::Sgemm => sgemm::tile_of(self.kernel)
                .map(|tile| sgemm::kernel(tile, t))
                .or_else(|| sgemm_4x4::tile_of(self.kernel).map(|tile| sgemm_4x4::kernel(tile, t))),
            MatmulVariant::FewRows => few_rows_kernel_of(t, m),
            MatmulVariant::FewCols => few_cols_kernel_for(t, m, k, n),
            MatmulVariant::ShortK => Some(short_k::kernel(t)),
            _ => None,
        };
        let kernel = kernel.ok_or_else(|| {
            Error::Unsupported(format!(
                "{} reads {} operands only; the CUDA-core kernels sgemm, few_rows, few_cols and short_k read f32, BF16 \
                 and F16",
                self.variant,
                self.operands.name()
            ))
        })?;
        // matmul_gemv reads f32 only: its plan becomes few_rows_*_1's, on that kernel's grid
        // (same split and arguments).
        let launch = if self.kernel == GEMV_KERNEL {
            skinny::plan_few_rows(self.shape, self.split.unwrap_or(SplitK::none(self.shape.k)))?
        } else {
            self.launch
        };
        Ok(Self { kernel, operands: t, launch, ..self })
    }

    /// The precision of the planned kernel's products.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, Precision, plan};
    /// let p = plan(MatmulVariant::Auto, MatmulShape::new(4096, 4096, 4096)?, MatmulDevice::H200)?;
    /// assert_eq!(p.precision(), Precision::Tf32x3);
    /// // `high` keeps FP32's bound.
    /// assert!(p.precision().tolerance(4096) <= Precision::Fp32.tolerance(4096));
    /// # Ok(()) }
    /// ```
    pub fn precision(&self) -> super::Precision {
        self.variant.precision()
    }

    /// Blocks per thread-block cluster of the launch: the splits of `k` of a `_cluster` tensor-core
    /// kernel (each tile's splits run as one cluster and add their partial products through its
    /// distributed shared memory), otherwise 1.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// // 64 tiles of 128 x 64 in 2 splits: 64 clusters of 2 blocks, no workspace.
    /// let p = plan(MatmulVariant::WgmmaBf16, MatmulShape::new(128, 4096, 4096)?, MatmulDevice::H200)?;
    /// assert_eq!((p.kernel(), p.cluster_blocks(), p.workspace_floats()), ("wgmma_bf16_n64_cluster", 2, 0));
    /// // TF32 has no cluster kernel: each tile's last work item adds its 9 splits.
    /// let long = plan(MatmulVariant::WgmmaTf32, MatmulShape::new(24, 13_368, 171)?, MatmulDevice::H200)?;
    /// assert_eq!((long.kernel(), long.cluster_blocks()), ("wgmma_tf32_n64", 1));
    /// # Ok(()) }
    /// ```
    pub fn cluster_blocks(&self) -> u32 {
        super::wgmma::cluster_blocks(self.kernel, self.split.map_or(1, |s| s.splits))
    }

    /// Floats of split-K workspace the plan needs (0 without a split), its fallback's included.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
    /// // 8 splits of 512^3: 8 partial products of 512 x 512.
    /// let p = plan(MatmulVariant::Auto, MatmulShape::new(512, 512, 512)?, MatmulDevice::H100)?;
    /// assert_eq!(p.workspace_floats(), 8 * 512 * 512);
    /// # Ok(()) }
    /// ```
    pub fn workspace_floats(&self) -> usize {
        // A cluster's blocks add their partial products in shared memory.
        let own = self
            .split
            .filter(|_| self.cluster_blocks() == 1)
            .map_or(0, |s| s.workspace_floats(self.shape.m * self.shape.n));
        own.max(self.fallback.as_ref().map_or(0, |f| f.workspace_floats()))
    }
}

impl std::fmt::Display for MatmulPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (g, b) = (self.launch.grid_dim, self.launch.block_dim);
        // The tensor-core tile variants name the kernel of their tile width and epilogue.
        let name = match self.variant {
            MatmulVariant::WgmmaBf16 | MatmulVariant::WgmmaF16 | MatmulVariant::WgmmaTf32 => self.kernel,
            v => v.name(),
        };
        write!(f, "{name}: grid {}x{}x{} of {} threads", g.0, g.1, g.2, b.0 * b.1 * b.2)?;
        match (self.split, self.reduce) {
            (Some(s), Some(r)) => write!(
                f,
                ", split-K {} x {} columns of A, then {} ({} blocks)",
                s.splits,
                s.k_chunk,
                kernels::matmul::split_k::KERNEL,
                r.grid_dim.0
            )?,
            (Some(s), None) if s.splits > 1 && self.cluster_blocks() > 1 => write!(
                f,
                ", split-K {} x {} columns of A, added in clusters of {} blocks",
                s.splits,
                s.k_chunk,
                self.cluster_blocks()
            )?,
            (Some(s), None) if s.splits > 1 => {
                write!(f, ", split-K {} x {} columns of A, added by each tile's last work item", s.splits, s.k_chunk)?
            }
            _ if self.variant.splits_k() => write!(f, ", no split of k")?,
            _ => {}
        }
        write!(f, "; {}", self.reason)?;
        if let Some(fallback) = &self.fallback {
            write!(f, ". Where the guard refuses the inputs (found on the GPU): {fallback}")?;
        }
        Ok(())
    }
}

/// What a caller may ask of the planner besides the variant: the precision policy `auto` plans
/// under, and a forced split of `k` for the kernels that take one.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, PlanOptions, PrecisionPolicy, plan_with};
/// assert_eq!(PlanOptions::default().policy, PrecisionPolicy::High);
/// // `medium`: TF32 where `high` would run split-TF32.
/// let medium = PlanOptions { policy: PrecisionPolicy::Medium, split: None, tile: None, ..PlanOptions::default() };
/// let p = plan_with(MatmulVariant::Auto, MatmulShape::new(4096, 4096, 4096)?, MatmulDevice::H100, medium)?;
/// assert_eq!(p.variant(), MatmulVariant::WgmmaTf32);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanOptions {
    /// The arithmetic `auto` may use (explicit kernel variants keep their own).
    pub policy: PrecisionPolicy,
    /// A split of `k` instead of the planner's, for the kernels that take one (tests use it to
    /// run every configuration on every shape); checked against `k`.
    pub split: Option<SplitK>,
    /// The tile width of the tensor-core kernels that come in several, instead of the planner's
    /// choice (ignored by every other kernel).
    pub tile: Option<TileWidth>,
    /// The type of the operands the CUDA-core kernels will read ([`MatmulPlan::on_operands`]):
    /// `few_rows` splits `k` by the blocks its kernel of that type keeps on an SM. The plan
    /// itself names the `f32` kernel until `on_operands`.
    pub operands: OperandType,
}

/// Plans `variant` for `shape` on `device` under the default policy ([`PrecisionPolicy::High`])
/// by the rules in the [module documentation](self).
///
/// ```
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let p = plan(MatmulVariant::Auto, MatmulShape::new(4096, 4096, 4096)?, MatmulDevice::H200)?;
/// assert_eq!(p.variant(), MatmulVariant::WgmmaTf32x3);
/// assert_eq!(p.fallback().unwrap().variant(), MatmulVariant::SgemmWarpTiled);
/// # Ok::<(), hopper_kernels::Error>(())
/// ```
pub fn plan(variant: MatmulVariant, shape: MatmulShape, device: MatmulDevice) -> Result<MatmulPlan> {
    plan_with(variant, shape, device, PlanOptions::default())
}

/// As [`plan`], under `options`' policy and with its forced split.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, PlanOptions, SplitK, plan_with};
/// let shape = MatmulShape::new(100, 64, 100)?;
/// let forced = |split| PlanOptions { split: Some(split), ..PlanOptions::default() };
/// let p = plan_with(MatmulVariant::Sgemm, shape, MatmulDevice::H100, forced(SplitK { splits: 8, k_chunk: 8 }))?;
/// assert_eq!(p.launch_config().grid_dim.2, 8);
/// // A forced split is checked against k: 9 splits of 8 leave one past k = 64.
/// let err = plan_with(MatmulVariant::Sgemm, shape, MatmulDevice::H100, forced(SplitK { splits: 9, k_chunk: 8 }));
/// assert_eq!(err.unwrap_err().to_string(), "invalid argument: 9 splits of 8 columns leave splits past k = 64");
/// // A split forced on a kernel that takes none is refused, not ignored.
/// let err = plan_with(MatmulVariant::Naive, shape, MatmulDevice::H100, forced(SplitK { splits: 8, k_chunk: 8 }));
/// assert!(err.unwrap_err().to_string().starts_with("invalid argument: naive takes no split of k"));
/// // So is one on the kernel auto chooses: short_k for k <= 16.
/// let short = MatmulShape::new(100, 5, 101)?;
/// let err = plan_with(MatmulVariant::Auto, short, MatmulDevice::H100, forced(SplitK { splits: 2, k_chunk: 4 }));
/// assert!(err.unwrap_err().to_string().starts_with("invalid argument: short_k takes no split of k"));
/// # Ok(()) }
/// ```
pub fn plan_with(
    variant: MatmulVariant,
    shape: MatmulShape,
    device: MatmulDevice,
    options: PlanOptions,
) -> Result<MatmulPlan> {
    plan_with_copies(variant, shape, device, options, packed_rows_copied(shape))
}

/// [`plan_with`] with `auto`'s rule for small products under `medium` decided by the caller:
/// `tensor_cores_copy_more` as in [`one_pass_cuda_core_reason_with`] (a `GemmDesc`'s layouts
/// decide it; [`plan_with`] takes packed row-major operands, [`packed_rows_copied`]).
pub(super) fn plan_with_copies(
    variant: MatmulVariant,
    shape: MatmulShape,
    device: MatmulDevice,
    options: PlanOptions,
    tensor_cores_copy_more: bool,
) -> Result<MatmulPlan> {
    let plan = plan_forced(variant, shape, device, options, tensor_cores_copy_more)?;
    let forced = options.split.is_some_and(|s| s.splits > 1);
    if forced && plan.split().is_none() && plan.fallback().and_then(MatmulPlan::split).is_none() {
        return Err(Error::InvalidArgument(format!(
            "{} takes no split of k (sgemm, sgemm_warp_tiled, few_rows, few_cols, decode_bf16, decode_f16 and the \
             wgmma tile kernels do)",
            plan.variant().name()
        )));
    }
    Ok(plan)
}

/// [`plan_with`]'s plan, a forced split left out where the kernel takes none.
fn plan_forced(
    variant: MatmulVariant,
    shape: MatmulShape,
    device: MatmulDevice,
    options: PlanOptions,
    tensor_cores_copy_more: bool,
) -> Result<MatmulPlan> {
    let sm = device.sm_count.max(1);
    let (variant, why) = match variant {
        MatmulVariant::Auto => match options.policy {
            PrecisionPolicy::Highest => {
                let (v, why) = choose_kernel(shape, sm);
                (v, format!("highest: FP32 FMA; {why}"))
            }
            PrecisionPolicy::High => {
                choose_tensor_core(shape, device, MatmulVariant::WgmmaTf32x3, tensor_cores_copy_more)
            }
            PrecisionPolicy::Medium => {
                choose_tensor_core(shape, device, MatmulVariant::WgmmaTf32, tensor_cores_copy_more)
            }
        },
        v => (v, format!("{} requested", v.name())),
    };
    let split = options.split;
    if variant == MatmulVariant::WgmmaTf32x3 {
        // The FP32 plan the guard falls back to: auto's under `highest`, with the forced split.
        let fp32 = plan_forced(
            MatmulVariant::Auto,
            shape,
            device,
            PlanOptions { policy: PrecisionPolicy::Highest, split, tile: None, operands: OperandType::F32 },
            tensor_cores_copy_more,
        )?;
        let launch = super::wgmma::plan_tf32x3(shape, device)?;
        let kernel = kernels::matmul::wgmma::KERNEL_TF32_PROMOTED;
        let reason = format!(
            "{why}; guarded: a scan of A and B on the GPU picks this or, for non-finite inputs, magnitudes \
             outside the split's range or a C that could overflow, the FP32 plan"
        );
        let fallback = Some(Box::new(fp32));
        let operands = OperandType::F32;
        return Ok(MatmulPlan {
            variant,
            kernel,
            shape,
            launch,
            split: None,
            reduce: None,
            fallback,
            reason,
            operands,
        });
    }
    let mut kernel = match variant {
        MatmulVariant::FewRows => few_rows_kernel(shape.m as u32).unwrap_or(FEW_ROWS_KERNELS[4].1),
        MatmulVariant::FewCols => {
            let [m, k, n] = [shape.m, shape.k, shape.n].map(|x| x.min(u32::MAX as usize) as u32);
            few_cols_kernel_for(OperandType::F32, m, k, n).unwrap_or(FEW_COLS_KERNELS[4].1)
        }
        v => v.kernel().ok_or_else(|| Error::InvalidArgument(format!("{} names no kernel", v.name())))?,
    };
    let forced = |s: SplitK| (s, "split forced".to_string());
    let (launch, split, split_why) = match variant {
        MatmulVariant::Naive => (naive::plan(shape)?, None, String::new()),
        MatmulVariant::Tiled16 => (tiled::plan(16, shape)?, None, String::new()),
        MatmulVariant::Tiled32 => (tiled::plan(32, shape)?, None, String::new()),
        MatmulVariant::ShortK => (short_k::plan(shape)?, None, short_k::layout_reason(shape)),
        MatmulVariant::Sgemm if sgemm_4x4::takes(shape) => {
            let tile = sgemm_4x4::tile_for(shape);
            let (s, split_why) = split.map_or_else(|| sgemm_4x4::choose_split(shape, sm), forced);
            kernel = sgemm_4x4::kernel(tile, OperandType::F32);
            let why = format!(
                "{} multiply-adds <= {} and k <= {} sqrt(m n): {}x{} tiles of 4x4 a thread; {split_why}",
                shape.macs(),
                sgemm_4x4::MAX_MACS,
                sgemm_4x4::MAX_K_PER_SIDE,
                tile.block_m(),
                tile.block_n()
            );
            (sgemm_4x4::plan(shape, tile, s)?, Some(s), why)
        }
        MatmulVariant::Sgemm => {
            let (tile, s, why) = sgemm_tile_and_split(shape, sm, split);
            kernel = sgemm::kernel(tile, OperandType::F32);
            (sgemm::plan(shape, tile, s)?, Some(s), why)
        }
        MatmulVariant::SgemmWarpTiled => {
            let (s, why) = split.map_or_else(|| warp_tiled_split(shape, sm), forced);
            (sgemm_warp_tiled::plan(shape, s)?, Some(s), why)
        }
        MatmulVariant::FewRows if takes_gemv(shape, options.operands) => {
            kernel = GEMV_KERNEL;
            let blocks = skinny::gemv_blocks(shape);
            let (s, why) = split.map_or_else(|| gemv_split(shape.k, blocks, sm), forced);
            (skinny::plan_gemv(shape, s)?, Some(s), why)
        }
        MatmulVariant::FewRows => {
            let blocks = skinny::few_rows_blocks(shape);
            let m = shape.m.min(u32::MAX as usize) as u32;
            let panel = kernels::matmul::skinny::few_rows_uses_panel(m);
            // One wave where a thread's loads in flight are few (few_rows_blocks_per_sm has the
            // measurements); the f32 register-only kernels aim at NARROW_BLOCKS_PER_SM.
            let one_wave = if panel || options.operands != OperandType::F32 {
                few_rows_blocks_per_sm(options.operands, m)
            } else {
                None
            };
            let min_chunk = if panel { FEW_ROWS_PANEL_MIN_CHUNK } else { FEW_ROWS_MIN_CHUNK };
            // Ranges of the least length, the last one shorter (SplitK::up_to): short k is where
            // few_rows waits on its loads, and rounding the length up lost a third of the
            // splits (H200, f32: 3x151x11765 0.0112 ms in 7 splits of 24, 0.0097 in 10 of 16;
            // 6x186x6096 0.0115 in 8 of 24, 0.0100 in 12 of 16).
            let (s, why) =
                split.map_or_else(|| narrow_split(shape.k, blocks, sm, min_chunk, one_wave, SplitK::up_to), forced);
            (skinny::plan_few_rows(shape, s)?, Some(s), why)
        }
        MatmulVariant::FewCols => {
            let blocks = skinny::few_cols_blocks(shape);
            let (m, n) = (shape.m.min(u32::MAX as usize) as u32, shape.n.min(u32::MAX as usize) as u32);
            // The shared-B kernel: one block per SM at most (FEW_COLS_SHARED_MIN_CHUNK).
            let shares_b = kernels::matmul::skinny::few_cols_shares_b(m, n);
            let min_chunk = if shares_b {
                FEW_COLS_SHARED_MIN_CHUNK
            } else if blocks < sm as usize {
                FEW_COLS_FEW_BLOCKS_MIN_CHUNK
            } else {
                FEW_COLS_MIN_CHUNK
            };
            let one_wave = shares_b.then_some(1);
            let (s, why) =
                split.map_or_else(|| narrow_split(shape.k, blocks, sm, min_chunk, one_wave, SplitK::about), forced);
            (skinny::plan_few_cols(shape, s)?, Some(s), why)
        }
        MatmulVariant::WgmmaBf16
        | MatmulVariant::WgmmaF16
        | MatmulVariant::WgmmaTf32
        | MatmulVariant::WgmmaTf32Transposed => {
            let (chosen, s, why) = wgmma_tile_and_split(shape, device, variant, kernel, split, options.tile);
            kernel = chosen;
            let granule = variant.split_granule();
            if s.splits > 1 && !s.k_chunk.is_multiple_of(granule) {
                return Err(Error::InvalidArgument(format!(
                    "{} splits k in whole stages of {granule} columns: {} splits of {} columns (a k_chunk that is \
                     not a multiple of {granule})",
                    variant.name(),
                    s.splits,
                    s.k_chunk
                )));
            }
            check_split(shape, s)?;
            // The row-staged epilogue where the TMA cannot store C (rows not 16-byte aligned)
            // or a split writes partial products: whole rows per warp instruction.
            if s.splits > 1 || !shape.n.is_multiple_of(4) {
                kernel = kernels::matmul::wgmma::rows_kernel(kernel);
            }
            // A split of at most a cluster's blocks whose work items fit one wave: each tile's
            // splits run as one cluster and add up through each other's shared memory.
            let why = match cluster_form(shape, device, kernel, s.splits as u64) {
                Some(k) => {
                    kernel = k;
                    format!(
                        "{why}; each tile's {} splits run as one cluster and add their partial products \
                             through its shared memory",
                        s.splits
                    )
                }
                None => why,
            };
            (super::wgmma::plan_split(shape, device, kernel, s.splits)?, Some(s), why)
        }
        MatmulVariant::DecodeBf16 | MatmulVariant::DecodeF16 => {
            let (s, why) = split.map_or_else(|| super::decode::choose_split(shape, sm), forced);
            (super::decode::plan(shape, s)?, Some(s), why)
        }
        MatmulVariant::Auto | MatmulVariant::WgmmaTf32x3 => {
            return Err(Error::InvalidArgument(format!("{} is planned above", variant.name())));
        }
    };
    if let Some(s) = split {
        check_split(shape, s)?;
    }
    // The tensor-core kernels add their partial products themselves (each tile's last work item,
    // a decode strip's last block); the others leave them to matmul_split_k_reduce.
    let reduce =
        split.filter(|s| s.splits > 1 && !variant.adds_its_splits()).map(|s| reduce_plan(shape.m * shape.n, s.splits));
    let reason = if split_why.is_empty() { why } else { format!("{why}; {split_why}") };
    let operands = match variant {
        MatmulVariant::WgmmaBf16 | MatmulVariant::DecodeBf16 => OperandType::Bf16,
        MatmulVariant::WgmmaF16 | MatmulVariant::DecodeF16 => OperandType::F16,
        _ => OperandType::F32,
    };
    Ok(MatmulPlan { variant, kernel, shape, launch, split, reduce, fallback: None, reason, operands })
}

/// Checks a split of `k` against the shape: ranges of a positive multiple of
/// [`CHUNK_GRANULE`](super::split_k::CHUNK_GRANULE) that cover `k` with none empty, and with more
/// than one split, `m * n` within the reduction's `u32` length and the workspace's size.
fn check_split(shape: MatmulShape, s: SplitK) -> Result<()> {
    let granule = super::split_k::CHUNK_GRANULE;
    if s.splits == 0 || s.k_chunk == 0 || !s.k_chunk.is_multiple_of(granule) {
        return Err(Error::InvalidArgument(format!(
            "invalid split of k: {} splits of {} (a positive multiple of {granule})",
            s.splits, s.k_chunk
        )));
    }
    let (k, covered) = (shape.k as u64, s.splits as u64 * s.k_chunk as u64);
    if covered < k {
        return Err(Error::InvalidArgument(format!(
            "{} splits of {} columns cover {covered} of k = {k}: a split's length is a u32 multiple of {granule}, \
             at most {}, so this k needs at least {} splits",
            s.splits,
            s.k_chunk,
            super::split_k::MAX_CHUNK,
            k.div_ceil(super::split_k::MAX_CHUNK as u64)
        )));
    }
    if (s.splits as u64 - 1) * s.k_chunk as u64 >= k {
        return Err(Error::InvalidArgument(format!(
            "{} splits of {} columns leave splits past k = {k}",
            s.splits, s.k_chunk
        )));
    }
    let len = shape.m as u64 * shape.n as u64;
    if s.splits > 1 && len > u32::MAX as u64 {
        return Err(Error::InvalidArgument(format!(
            "a split of k for {shape}: the split-K reduction takes m * n = {len} outputs, at most {} (u32)",
            u32::MAX
        )));
    }
    Ok(())
}

/// The kernel family `auto` runs for `shape` on `sm` SMs, and why.
fn choose_kernel(shape: MatmulShape, sm: u32) -> (MatmulVariant, String) {
    // few_cols up to 16 columns, and up to 32 (sharing B) where C is at most
    // FEW_COLS_SHARED_MAX_TILES of sgemm's 512 x 32 tiles tall; with more the tiles multiply
    // faster (H200: 16384x16384x32 0.549 ms against few_cols_shared_32's 1.149), with fewer
    // they are mostly padding or split k into many partial sums (32x65536x32: 0.063 against
    // 0.022).
    let m = shape.m.min(u32::MAX as usize) as u32;
    let max_n = if m <= FEW_COLS_SHARED_MAX_TILES * Tile::TALL_32.block_m() {
        kernels::matmul::skinny::few_cols_max_n(m)
    } else {
        FEW_COLS_MAX_N
    };
    if shape.n <= max_n as usize {
        let n = shape.n as u32;
        let why = if kernels::matmul::skinny::few_cols_takes_short_k(shape.k.min(u32::MAX as usize) as u32) {
            format!(
                "n = {n} <= {max_n}: memory-bound; k = {} <= {}: a thread a row of A, the block's rows staged in \
                 shared memory",
                shape.k,
                kernels::matmul::skinny::FEW_COLS_SHORT_K_MAX_K
            )
        } else if kernels::matmul::skinny::few_cols_shares_b(m, n) {
            format!(
                "n = {n} <= {max_n}: memory-bound, stream A once, each step's slice of B shared through shared \
                 memory by {} rows",
                kernels::matmul::skinny::few_cols_shared_rows_per_block(n)
            )
        } else {
            format!("n = {n} <= {max_n}: memory-bound, stream A once")
        };
        (MatmulVariant::FewCols, why)
    } else if sgemm_4x4::takes_from_few_rows(shape) {
        let why = format!(
            "m = {} <= {FEW_ROWS_MAX_M}, but {} multiply-adds <= {}: too few to hide few_rows' copy of A into \
             shared memory",
            shape.m,
            shape.macs(),
            sgemm_4x4::FEW_ROWS_MAX_MACS
        );
        (MatmulVariant::Sgemm, why)
    } else if shape.m <= FEW_ROWS_MAX_M as usize {
        let why = format!("m = {} <= {FEW_ROWS_MAX_M}: memory-bound, stream B once", shape.m);
        (MatmulVariant::FewRows, why)
    } else if takes_short_k(shape) {
        let bound = if shape.k <= SHORT_K_MAX as usize {
            format!("k = {} <= {SHORT_K_MAX}", shape.k)
        } else {
            format!(
                "k = {} <= {} and {} elements of C <= {SHORT_K_TWO_COLUMNS_MAX_OUTPUTS}",
                shape.k,
                kernels::matmul::short_k::MAX_K,
                shape.m as u128 * shape.n as u128
            )
        };
        let why = format!(
            "{bound}, k or n not a multiple of 4: writing C bounds the time; 16-byte stores on rows of any alignment"
        );
        (MatmulVariant::ShortK, why)
    } else if sgemm::tile_for(shape) != Tile::SQUARE {
        let tile = sgemm::tile_for(shape);
        let why = format!(
            "a side of {} <= {} and k >= {}: sgemm on {}x{} tiles, the 128x128 tiles' padding left out",
            shape.m.min(shape.n),
            sgemm::NARROW_MAX_SIDE,
            sgemm::NARROW_MIN_K,
            tile.block_m(),
            tile.block_n()
        );
        (MatmulVariant::Sgemm, why)
    } else if shape.k < WARP_TILED_MIN_K {
        (
            MatmulVariant::Sgemm,
            format!("compute-bound, k = {} < {WARP_TILED_MIN_K}: 8x8 accumulators a thread", shape.k),
        )
    } else {
        let tiles = sgemm_warp_tiled::tiles(shape) as u64;
        let slots = sgemm_warp_tiled::BLOCKS_PER_SM as u64 * sm as u64;
        let splits = warp_tiled_split(shape, sm).0.splits;
        let fill = wave_fill(tiles * splits as u64, slots);
        let blocks = if splits > 1 {
            format!("{} in {splits} splits of k", count(tiles * splits as u64, "block"))
        } else {
            count(tiles, "tile")
        };
        let waves = format!("{blocks} on {slots} block slots fill {:.0}% of their waves", 100.0 * fill);
        if fill >= WARP_TILED_MIN_FILL {
            (MatmulVariant::SgemmWarpTiled, format!("compute-bound, k = {} and {waves}: warp-tiled", shape.k))
        } else {
            (
                MatmulVariant::Sgemm,
                format!("compute-bound, too few tiles to warp-tile ({waves}): 8x8 accumulators a thread"),
            )
        }
    }
}

/// The kernel family `auto` runs under `high` (`kernel` = `wgmma_tf32x3`) or `medium`
/// (`wgmma_tf32`). Split-TF32 on a device with tensor cores when the shape is wide on both sides,
/// `k` at least [`SPLIT_TF32_MIN_K`] and the tiles at least [`SPLIT_TF32_MIN_TILES`]; TF32 where
/// [`one_pass_cuda_core_reason`] gives no reason; otherwise the FP32 planner's choice, with why
/// not.
/// `auto`'s choice under `high` (`kernel` = `wgmma_tf32x3`) or `medium` (`wgmma_tf32`);
/// `tensor_cores_copy_more` as in [`one_pass_cuda_core_reason_with`].
fn choose_tensor_core(
    shape: MatmulShape,
    device: MatmulDevice,
    kernel: MatmulVariant,
    tensor_cores_copy_more: bool,
) -> (MatmulVariant, String) {
    let policy = if kernel == MatmulVariant::WgmmaTf32x3 { "high" } else { "medium" };
    let arithmetic = if kernel == MatmulVariant::WgmmaTf32x3 { "split-TF32" } else { "TF32" };
    // `wgmma_tf32_promoted` tiles `C^T`: BLOCK_M of `n` by PROMOTED_BLOCK_ROWS of `m`.
    let tiles = (shape.n as u64).div_ceil(wgmma_tiles::BLOCK_M as u64)
        * (shape.m as u64).div_ceil(wgmma_tiles::PROMOTED_BLOCK_ROWS as u64);
    let slots = device.sm_count.max(1) as u64;
    let fill = wave_fill(tiles, slots);
    let macs = shape.macs();
    let b_elements = shape.k as u128 * shape.n as u128;
    if kernel == MatmulVariant::WgmmaTf32
        && device.tensor_cores
        && (TF32_N16_MIN_M as usize..=wgmma_tiles::N16_BLOCK_ROWS as usize).contains(&shape.m)
        && shape.n > FEW_COLS_MAX_N as usize
        && b_elements >= N16_MIN_B_ELEMENTS as u128
        && shape.n.is_multiple_of(4)
    {
        let why = format!(
            "{policy}: m = {} of {TF32_N16_MIN_M}-{} and B of {b_elements} elements: B streamed through the TMA into \
             TF32 tensor cores",
            shape.m,
            wgmma_tiles::N16_BLOCK_ROWS,
        );
        return (kernel, why);
    }
    let why_not = if kernel == MatmulVariant::WgmmaTf32 {
        // One TF32 pass: the CUDA cores wherever they beat it.
        match one_pass_cuda_core_reason_with(shape, device, tensor_cores_copy_more).or_else(|| copied_b_reason(shape)) {
            Some(why) => why,
            None => {
                let why = format!("{policy}: {macs} multiply-adds on tensor cores: {arithmetic}");
                return (kernel, why);
            }
        }
    } else if !device.tensor_cores {
        "no tensor-core kernels on this device".to_string()
    } else if shape.m <= FEW_ROWS_MAX_M as usize || shape.n <= FEW_COLS_MAX_N as usize {
        "a narrow side: memory-bound".to_string()
    } else if shape.k < SPLIT_TF32_MIN_K {
        format!("k = {} < {SPLIT_TF32_MIN_K}", shape.k)
    } else if tiles < SPLIT_TF32_MIN_TILES as u64 {
        format!("{} of 128x128 < {SPLIT_TF32_MIN_TILES}", count(tiles, "tile"))
    } else if kernel == MatmulVariant::WgmmaTf32x3 && shape.m.min(shape.n) < SPLIT_TF32_MIN_SIDE {
        format!("a side of {} <= {}: the FP32 kernels are faster there", shape.m.min(shape.n), SPLIT_TF32_MIN_SIDE - 1)
    } else if kernel == MatmulVariant::WgmmaTf32x3 && macs < SPLIT_TF32_MIN_MACS as u128 {
        format!("{macs} multiply-adds < {SPLIT_TF32_MIN_MACS}: the split's fixed costs outweigh its gain")
    } else if kernel == MatmulVariant::WgmmaTf32x3 && fill < SPLIT_TF32_MIN_WAVE_FILL {
        format!(
            "{} of 128x128 fill {:.0}% of their {} on {slots} SMs, under {:.0}%: the FP32 kernels' smaller tiles fill them \
             better",
            count(tiles, "tile"),
            100.0 * fill,
            count(tiles.div_ceil(slots), "wave"),
            100.0 * SPLIT_TF32_MIN_WAVE_FILL
        )
    } else {
        let why = format!(
            "{policy}: compute-bound on tensor cores, k = {} and {} of 128x128: {arithmetic}",
            shape.k,
            count(tiles, "tile")
        );
        return (kernel, why);
    };
    let (variant, why) = choose_kernel(shape, device.sm_count.max(1));
    (variant, format!("{policy}, not {arithmetic} ({why_not}): FP32 FMA; {why}"))
}

/// The fraction of `ceil(tiles / slots)` full waves that `tiles` occupy.
pub(super) fn wave_fill(tiles: u64, slots: u64) -> f64 {
    tiles as f64 / (tiles.div_ceil(slots).max(1) * slots) as f64
}

/// `n thing` or `n things`.
fn count(n: u64, thing: &str) -> String {
    if n == 1 { format!("1 {thing}") } else { format!("{n} {thing}s") }
}

/// Splits for a narrow kernel with `blocks` blocks per split, each split at least `min_chunk`
/// long: toward at least `NARROW_BLOCKS_PER_SM` blocks per SM, or with `one_wave = Some(b)` (the
/// blocks an SM holds) at most `b` per SM, so that no block waits for a second wave; `split_of`
/// turns the splits wanted into ranges ([`SplitK::about`] or [`SplitK::up_to`]).
fn narrow_split(
    k: usize,
    blocks: usize,
    sm: u32,
    min_chunk: u32,
    one_wave: Option<u32>,
    split_of: fn(usize, u32, u32) -> SplitK,
) -> (SplitK, String) {
    let per_sm = one_wave.unwrap_or(NARROW_BLOCKS_PER_SM);
    let target = (per_sm as u64 * sm as u64).min(usize::MAX as u64) as usize;
    let blocks_per_split = blocks.max(1);
    let wanted = if one_wave.is_some() { target / blocks_per_split } else { target.div_ceil(blocks_per_split) }
        .min(u32::MAX as usize) as u32;
    let s = split_of(k, wanted, min_chunk);
    let why = if s.splits > 1 {
        let wave = if one_wave.is_some() { " (one wave)" } else { "" };
        format!("{} per split, under {per_sm} per SM{wave}: {} splits of k", count(blocks as u64, "block"), s.splits)
    } else {
        format!("{} per split: no split", count(blocks as u64, "block"))
    };
    (s, why)
}

/// Whether `few_rows` runs `matmul_gemv` on `shape`: one row of `f32` operands, rows of `B` that
/// start 16-byte aligned (`n % 4 == 0`), `k` of at least [`GEMV_MIN_K`] and `B` of at least
/// [`GEMV_MIN_B_ELEMENTS`]. Its scalar path, for other rows (and views off 16-byte boundaries),
/// ran behind `matmul_few_rows_1`'s on the H200 (ms: 1 x 3978 x 5845 0.031-0.033 against 0.030,
/// 1 x 4344 x 10925 0.056-0.061 against 0.052). (On BF16 and F16 operands `matmul_few_rows_*_1` keeps its measured
/// planning: its rows of `B` are 8-byte loads, and `matmul_gemv`'s row groups would read 64
/// bytes of a row each.)
fn takes_gemv(shape: MatmulShape, operands: OperandType) -> bool {
    shape.m == 1
        && operands == OperandType::F32
        && shape.n.is_multiple_of(4)
        && shape.k >= GEMV_MIN_K
        && shape.k as u128 * shape.n as u128 >= GEMV_MIN_B_ELEMENTS as u128
}

/// `matmul_gemv`'s split of `k`: [`narrow_split`] at one block an SM (none where its blocks, one
/// per 32 columns, give every SM one), each split at least one step of the block
/// ([`GEMV_STEP_ROWS`] rows). One block an SM keeps 64 KiB of `B` in flight there; on the H200
/// two (1 x 4096 x 4096 in two splits) took 0.025 ms against 0.023 unsplit.
fn gemv_split(k: usize, blocks: usize, sm: u32) -> (SplitK, String) {
    let (s, why) = narrow_split(k, blocks, sm, GEMV_STEP_ROWS, Some(1), SplitK::about);
    (s, format!("m = 1: matmul_gemv, k split among each block's {GEMV_ROW_GROUPS} row groups; {why}"))
}

/// `sgemm`'s tile and split of `k` (a forced split, or the planner's): where [`sgemm::tile_for`]
/// gives a narrow tile, that one; otherwise, each with its best split ([`sgemm_split`]), the
/// least [`sgemm_tile_time`] of the 128 x 128 tile, the 64 x 256 one [`sgemm::tile_on`] offers
/// (times [`SGEMM_WIDE_COST`]), the 64 x 128 one where `C` is at least as wide as tall (times
/// [`SGEMM_HALF_COST`]) and the 64 x 64 one (times [`SGEMM_QUARTER_COST`]).
fn sgemm_tile_and_split(shape: MatmulShape, sm: u32, forced: Option<SplitK>) -> (Tile, SplitK, String) {
    let square = sgemm::tile_for(shape);
    let split_of =
        |tile: Tile| forced.map_or_else(|| sgemm_split(shape, sm, tile), |s| (s, "split forced".to_string()));
    let (square_split, square_why) = split_of(square);
    if square != Tile::SQUARE {
        return (square, square_split, square_why);
    }
    let square_time = sgemm_tile_time(shape, sm, square, square_split);
    let offered = sgemm::tile_on(shape, sm);
    let mut others = vec![];
    if offered == Tile::WIDE_64 {
        let note = "half the transposing stores of A";
        others.push((offered, SGEMM_WIDE_COST, note));
    }
    if shape.n >= shape.m {
        others.push((Tile::HALF_WIDE, SGEMM_HALF_COST, "four blocks an SM"));
    }
    others.push((Tile::QUARTER, SGEMM_QUARTER_COST, "eight blocks an SM"));
    // A tile whose grid CUDA cannot launch (too many rows of tiles) is no candidate.
    let best = others
        .into_iter()
        .filter(|(tile, ..)| sgemm::plan(shape, *tile, SplitK::none(shape.k)).is_ok())
        .map(|(tile, factor, note)| {
            let (s, why) = split_of(tile);
            (tile, s, why, factor * sgemm_tile_time(shape, sm, tile, s), note)
        })
        .min_by(|a, b| a.3.total_cmp(&b.3));
    match best {
        Some((tile, s, why, time, note)) if time < square_time => {
            let why = format!(
                "{}x{} tiles ({note}): {:.0}% of 128x128's estimated time; {why}",
                tile.block_m(),
                tile.block_n(),
                100.0 * time / square_time
            );
            (tile, s, why)
        }
        _ => (square, square_split, square_why),
    }
}

/// The estimated time of `sgemm` on `tile` with the split `s` (module documentation), in
/// columns of `k` of one wave of 128 x 128 tiles.
fn sgemm_estimate(shape: MatmulShape, sm: u32, tile: Tile, s: SplitK) -> f64 {
    let tiles = sgemm::tiles(shape, tile) as u64;
    let slots = sgemm::blocks_per_sm(tile) as u64 * sm as u64;
    let values = shape.m as f64 * shape.n as f64;
    let waves = (tiles * s.splits as u64).div_ceil(slots) as f64;
    waves * (s.k_chunk.min(shape.k as u32) as f64 + SGEMM_BLOCK_OVERHEAD_K)
        + if s.splits > 1 { s.splits as f64 * values * SGEMM_REDUCE_K_PER_VALUE } else { 0.0 }
}

/// The time of `sgemm` on `tile` with the split `s` relative to other tiles', before the tile's
/// cost factor: the warps on the busiest SM (at least [`SGEMM_MIN_WARPS`]) times each block's
/// columns of `k` and fixed cost, plus the reduction of the splits. Where the wave estimate
/// ([`sgemm_split`]) counts a wave of 128 x 128 tiles as one however few of its slots are
/// filled, this counts the warps an SM runs, which is what sets a small grid's time.
fn sgemm_tile_time(shape: MatmulShape, sm: u32, tile: Tile, s: SplitK) -> f64 {
    // In f64: the planner meets shapes whose m * n overflows an integer before it refuses them.
    let blocks = sgemm::tiles(shape, tile) as f64 * s.splits as f64;
    let warps = (blocks / sm.max(1) as f64).ceil() * (tile.threads() / 32) as f64;
    let values = shape.m as f64 * shape.n as f64;
    warps.max(SGEMM_MIN_WARPS) * (s.k_chunk.min(shape.k as u32) as f64 + SGEMM_BLOCK_OVERHEAD_K)
        + if s.splits > 1 { s.splits as f64 * values * SGEMM_REDUCE_K_PER_VALUE * 16.0 } else { 0.0 }
}

/// The `sgemm` split of `tile`'s blocks with the fewest estimated waves-times-depth (module
/// documentation).
fn sgemm_split(shape: MatmulShape, sm: u32, tile: Tile) -> (SplitK, String) {
    let tiles = sgemm::tiles(shape, tile) as u64;
    let slots = sgemm::blocks_per_sm(tile) as u64 * sm as u64;
    if tiles >= slots {
        // A full wave: a split only evens out the last wave, and its pass over splits x m x n
        // partial sums ate that gain where measured (512x4096x11008, 344 tiles: 1.23 ms with 3
        // splits, 1.22 ms without).
        let why = format!("{} fill the {slots} block slots: no split", count(tiles, "tile"));
        return (SplitK::none(shape.k), why);
    }
    let cost = |s: SplitK| sgemm_estimate(shape, sm, tile, s);
    let rule = SplitRule {
        min_chunk: SGEMM_MIN_CHUNK,
        max_splits: super::split_k::MAX_SPLITS,
        slack: SGEMM_SPLIT_SLACK,
        gain: SGEMM_SPLIT_GAIN,
    };
    best_split(shape, tiles, slots, rule, cost, " (reduction included)")
}

/// The `sgemm_warp_tiled` split with the fewest estimated waves-times-depth (module
/// documentation): it evens out the last wave even when the tiles fill the first ones.
fn warp_tiled_split(shape: MatmulShape, sm: u32) -> (SplitK, String) {
    let tiles = sgemm_warp_tiled::tiles(shape) as u64;
    let slots = sgemm_warp_tiled::BLOCKS_PER_SM as u64 * sm as u64;
    let rule = SplitRule {
        min_chunk: WARP_TILED_MIN_CHUNK,
        max_splits: WARP_TILED_MAX_SPLITS,
        slack: WARP_TILED_SPLIT_SLACK,
        gain: WARP_TILED_SPLIT_GAIN,
    };
    // `s` splits take `ceil(tiles * s / slots) / s` of the unsplit time.
    let cost = |s: SplitK| (tiles * s.splits as u64).div_ceil(slots) as f64 / s.splits as f64;
    best_split(shape, tiles, slots, rule, cost, "")
}

/// The tensor-core kernel of `kernel`'s family and its split of `k` (module documentation): for
/// a family of several tile widths, the one with the lowest estimate ([`wgmma_split`]) unless `tile`
/// names one; `forced` replaces the planner's split.
fn wgmma_tile_and_split(
    shape: MatmulShape,
    device: MatmulDevice,
    variant: MatmulVariant,
    kernel: &'static str,
    forced: Option<SplitK>,
    tile: Option<TileWidth>,
) -> (&'static str, SplitK, String) {
    let widths = tile.map_or(TileWidth::ALL.to_vec(), |w| vec![w]);
    let mut choices: Vec<(&'static str, SplitK, String, f64)> = Vec::new();
    for w in widths {
        // The 16-row tile only where m fits it, unless asked for: above, its tiles multiply.
        if tile.is_none() && w == TileWidth::N16 && shape.m > wgmma_tiles::N16_BLOCK_ROWS as usize {
            continue;
        }
        let Some(k) = wgmma_tiles::with_tile(kernel, w.instruction_n()) else { continue };
        let (s, why, estimate) = match forced {
            Some(s) => {
                let per = s.k_chunk.div_ceil(variant.split_granule()).max(1) as u64;
                (s, "split forced".to_string(), wgmma_estimate(shape, device, k, s.splits as u64, per))
            }
            None => wgmma_split(shape, device, variant, k),
        };
        choices.push((k, s, why, estimate));
    }
    if choices.is_empty() {
        // A kernel of one width (wgmma_tf32_transposed): its own tiles, and the plan says so
        // where another width was asked for.
        let (s, why, _) = match forced {
            Some(s) => (s, "split forced".to_string(), 0.0),
            None => wgmma_split(shape, device, variant, kernel),
        };
        let why = match tile {
            Some(w) => {
                let (r, c) = super::wgmma::tile_of(kernel);
                format!("{kernel} has no {} tiles: its own of {r}x{c}; {why}", w.name())
            }
            None => why,
        };
        return (kernel, s, why);
    }
    // The cheaper estimate; the wide tile (listed first) on a tie.
    let best = (0..choices.len()).fold(0, |best, i| if choices[i].3 < choices[best].3 { i } else { best });
    let row_staged_n128 = (tile.is_none() && row_staged_store_bound(shape, variant, device))
        .then(|| choices.iter().position(|c| super::wgmma::tile_of(c.0).1 == 128))
        .flatten();
    let best = row_staged_n128.unwrap_or(best);
    let (chosen, s, why, estimate) = choices[best].clone();
    let tile_why = match tile {
        Some(w) => format!("{} tiles requested", w.name()),
        None if row_staged_n128.is_some() => format!(
            "tiles of 128x128: k = {} <= {} and rows of C of {} floats, which the TMA cannot store: the row-staged \
             epilogue's stores are the time, and 128-column tiles a row of tiles at a time store fastest",
            shape.k,
            kernels::matmul::wgmma::ROW_ORDER_MAX_K,
            shape.n
        ),
        None if choices.len() > 1 => {
            let (r, c) = super::wgmma::tile_of(chosen);
            let others: Vec<String> = (0..choices.len())
                .filter(|&i| i != best)
                .map(|i| {
                    let (or, oc) = super::wgmma::tile_of(choices[i].0);
                    format!("{:.1} for {or}x{oc}", choices[i].3)
                })
                .collect();
            format!(
                "tiles of {r}x{c}: an estimated {estimate:.1} stages of a 128x256 block against {}",
                others.join(", ")
            )
        }
        None => String::new(),
    };
    let why = if tile_why.is_empty() { why } else { format!("{tile_why}; {why}") };
    (chosen, s, why)
}

/// Whether a 16-bit tile product is store-bound with the row-staged epilogue: `k` at most
/// [`ROW_ORDER_MAX_K`](kernels::matmul::wgmma::ROW_ORDER_MAX_K) (the tiles' time is storing `C`),
/// rows of `C` that the TMA cannot store (no `C` map: `n % 4 != 0`), and 128 x 128 tiles at least filling
/// the SMs. There 128 x 128 tiles store fastest, whatever the estimate of the tiles' stages (H200,
/// BF16, ms, 128 x 256 / 128 x 128 / 128 x 64, tiles a row at a time: 8841x28x6665 0.149 / 0.125
/// / 0.132, 2455x19x3667 0.031 / 0.024 / 0.026, 7700x26x433 0.016 / 0.012 / 0.014, 4042x65x1243
/// 0.023 / 0.021 / 0.023); with fewer tiles than SMs the narrower tiles spread better
/// (950x108x270: 0.010 / 0.009 / 0.007).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan};
/// let bf16 = |m, k, n| plan(MatmulVariant::WgmmaBf16, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200);
/// assert_eq!(bf16(8841, 28, 6665)?.kernel(), "wgmma_bf16_n128_rows");
/// // Rows the TMA stores: the estimate's 128 x 256 tiles.
/// assert_eq!(bf16(8840, 28, 6664)?.kernel(), "wgmma_bf16");
/// # Ok(()) }
/// ```
fn row_staged_store_bound(shape: MatmulShape, variant: MatmulVariant, device: MatmulDevice) -> bool {
    let tiles_n128 = shape.m.div_ceil(wgmma_tiles::BLOCK_M as usize) * shape.n.div_ceil(128);
    matches!(variant, MatmulVariant::WgmmaBf16 | MatmulVariant::WgmmaF16)
        && shape.k <= kernels::matmul::wgmma::ROW_ORDER_MAX_K as usize
        && super::wgmma::c_map(shape).is_none()
        && tiles_n128 >= device.sm_count.max(1) as usize
}

/// The `_cluster` form of `kernel` for a split of `k` in `splits` on `device`, where it has one,
/// the split is of 2 to [`MAX_CLUSTER_SPLITS`](kernels::matmul::wgmma::MAX_CLUSTER_SPLITS)
/// (a cluster's blocks are one tile's splits) and every work item fits on the device at once in
/// such clusters ([`MatmulDevice::cluster_blocks`]): a cluster that waited for a second wave
/// would hold its tile's sum back (4 splits of 32 tiles, 128 blocks where 120 fit in clusters
/// of 4, ran 19% slower than the last-item sum on an H100).
fn cluster_form(shape: MatmulShape, device: MatmulDevice, kernel: &str, splits: u64) -> Option<&'static str> {
    let cluster = kernels::matmul::wgmma::cluster_kernel(kernel)?;
    if !(2..=kernels::matmul::wgmma::MAX_CLUSTER_SPLITS as u64).contains(&splits) {
        return None;
    }
    let at_once = device.cluster_blocks[splits as usize - 1].min(device.sm_count);
    (super::wgmma::tiles(shape, cluster).saturating_mul(splits) <= at_once as u64).then_some(cluster)
}

/// The estimated time of `kernel` on `shape` in `splits` splits of `per` stages, in stages of
/// one 128 x 256 block (module documentation): waves of work items, each its stages and its
/// overhead, then the reduction of the partial sums.
fn wgmma_estimate(shape: MatmulShape, device: MatmulDevice, kernel: &str, splits: u64, per: u64) -> f64 {
    let sm = device.sm_count.max(1);
    let tiles = super::wgmma::tiles(shape, kernel);
    let (rows, cols) = super::wgmma::tile_of(kernel);
    let stage_cost = if rows == wgmma_tiles::N16_BLOCK_ROWS {
        WGMMA_N16_STAGE_COST
    } else if rows as u64 * cols as u64 <= 128 * 64 {
        WGMMA_N64_STAGE_COST
    } else if rows as u64 * cols as u64 <= 128 * 128 {
        WGMMA_N128_STAGE_COST
    } else {
        1.0
    };
    let values = shape.m as f64 * shape.n as f64;
    // Saturating: a forced split is estimated before the launch plan refuses too many items.
    let waves = tiles.saturating_mul(splits).div_ceil(sm.max(1) as u64) as f64;
    // A tile's last work item reads every split's partial product; a cluster's blocks each read
    // a tile's worth, in parallel.
    let reduce = if cluster_form(shape, device, kernel, splits).is_some() {
        WGMMA_REDUCE_FIXED_STAGES + rows as f64 * cols as f64 * WGMMA_CLUSTER_SUM_STAGES_PER_TILE_VALUE
    } else if splits > 1 {
        // The tile's last work item reads every split's partial tile through its one SM; with
        // many tiles the memory's bandwidth bounds the reads of all of them together.
        let per_split =
            (rows as f64 * cols as f64 * WGMMA_TILE_SUM_STAGES_PER_VALUE).max(values * WGMMA_REDUCE_STAGES_PER_VALUE);
        WGMMA_REDUCE_FIXED_STAGES + splits as f64 * per_split
    } else {
        0.0
    };
    waves * (per as f64 * stage_cost + WGMMA_ITEM_OVERHEAD_STAGES) + reduce
}

/// The split of `k` for a tensor-core tile kernel (module documentation): whole stages of the
/// kernel's pipeline, toward one wave of work items on the SMs when the tiles leave SMs idle;
/// with the reason and the estimate ([`wgmma_estimate`]).
fn wgmma_split(
    shape: MatmulShape,
    device: MatmulDevice,
    variant: MatmulVariant,
    kernel: &str,
) -> (SplitK, String, f64) {
    let sm = device.sm_count.max(1);
    let (rows, cols) = super::wgmma::tile_of(kernel);
    let tiles = super::wgmma::tiles(shape, kernel);
    let granule = variant.split_granule();
    let stages = (shape.k as u64).div_ceil(granule as u64);
    let tile_text = format!("{} of {rows}x{cols}", count(tiles, "tile"));
    let cost = |splits: u64, per: u64| wgmma_estimate(shape, device, kernel, splits, per);
    let unsplit = cost(1, stages);
    if tiles >= sm as u64 {
        return (SplitK::none(shape.k), format!("{tile_text} give each of {sm} SMs a block: no split of k"), unsplit);
    }
    let values = shape.m as f64 * shape.n as f64;
    // Bytes per element: a stage is 128 bytes of k.
    let element_bytes = kernels::matmul::wgmma::BLOCK_K_BYTES as f64 / granule as f64;
    let operand_bytes = (shape.m as f64 + shape.n as f64) * shape.k as f64 * element_bytes;
    // Candidates: `per` stages per split (at least the shortest split), for every split count
    // up to MAX_SPLITS (MAX_CLUSTER_SPLITS for a family with clusters).
    let min_per = WGMMA_MIN_CHUNK_STAGES as u64;
    // A family with a `_cluster` form splits only into it (at most a cluster's blocks): each
    // tile's last work item summing the partial products alone ran slower than the cluster sum,
    // or than no split, on every shape measured on the H200 (BF16, median of 11 x 10 launches:
    // 975x3821x24 26.6 us in 15 splits against 20.5 us in a cluster of 8 on 128 x 256 tiles;
    // 1024^3 on 128 x 64 tiles 17.7 us in 2 against 9.6 us unsplit; 24x13368x171 23.0 us in 12
    // against 16.0 us in a cluster of 8).
    let clustered = kernels::matmul::wgmma::cluster_kernel(kernel).is_some();
    let max_splits = if clustered { kernels::matmul::wgmma::MAX_CLUSTER_SPLITS } else { super::split_k::MAX_SPLITS };
    let most = stages.div_ceil(min_per).min(max_splits as u64);
    let mut candidates: Vec<(u64, u64, f64)> = Vec::new();
    for wanted in 2..=most {
        let per = stages.div_ceil(wanted).max(min_per);
        let splits = stages.div_ceil(per);
        let partial_bytes = 4.0 * splits as f64 * values;
        let refused = if clustered {
            cluster_form(shape, device, kernel, splits).is_none()
        } else {
            partial_bytes > WGMMA_MAX_PARTIAL_FRACTION * operand_bytes
        };
        if splits < 2 || candidates.last().is_some_and(|c| c.0 == splits) || refused {
            continue;
        }
        candidates.push((splits, per, cost(splits, per)));
    }
    let least = candidates.iter().map(|c| c.2).fold(unsplit, f64::min);
    let best = candidates.iter().find(|c| c.2 <= WGMMA_SPLIT_SLACK * least);
    match best {
        Some(&(splits, per, estimate)) if estimate <= WGMMA_SPLIT_GAIN * unsplit => {
            let s = SplitK { splits: splits as u32, k_chunk: (per * granule as u64) as u32 };
            let why = format!(
                "{tile_text} for {sm} SMs: {} splits of k ({per} stages of {granule}) make {} work items, \
                 estimated {:.0}% of the unsplit time (their sum included)",
                s.splits,
                tiles * splits,
                100.0 * estimate / unsplit
            );
            (s, why, estimate)
        }
        _ => {
            let why = if most < 2 {
                format!(
                    "{tile_text} on {sm} SMs; k = {} is too short to split into {WGMMA_MIN_CHUNK_STAGES} stages of {granule}",
                    shape.k
                )
            } else {
                format!("{tile_text} on {sm} SMs: a split of k would not pay for its partial sums")
            };
            (SplitK::none(shape.k), why, unsplit)
        }
    }
}

/// A register-tiled kernel's bounds on its split of `k`.
struct SplitRule {
    /// Shortest split.
    min_chunk: u32,
    /// Most splits.
    max_splits: u32,
    /// The fewest splits whose estimate is within this factor of the least are taken: every
    /// split adds partial sums to write and read, which a wave count does not see.
    slack: f64,
    /// Split only when the estimate falls to this fraction of the unsplit one or less.
    gain: f64,
}

/// The split of `k` for `tiles` tiles on `slots` block slots under `rule`, by `cost`, an
/// estimate of a split's time (module documentation): the fewest splits within the rule's slack
/// of the least estimate, when that saves the rule's gain; `note` qualifies the estimate in the
/// reason.
fn best_split(
    shape: MatmulShape,
    tiles: u64,
    slots: u64,
    rule: SplitRule,
    cost: impl Fn(SplitK) -> f64,
    note: &str,
) -> (SplitK, String) {
    let most = (shape.k as u32 / rule.min_chunk).clamp(1, rule.max_splits);
    let candidates: Vec<(SplitK, f64)> =
        (1..=most).map(|s| SplitK::about(shape.k, s, rule.min_chunk)).map(|s| (s, cost(s))).collect();
    let least = candidates.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
    let unsplit = cost(SplitK::none(shape.k));
    let (best, estimate) = *candidates.iter().find(|c| c.1 <= rule.slack * least).expect("at least one split count");
    if best.splits > 1 && estimate <= rule.gain * unsplit {
        let why = format!(
            "{} on {slots} block slots: {} splits of k take {:.1}% of the unsplit time{note}",
            count(tiles, "tile"),
            best.splits,
            100.0 * estimate / unsplit
        );
        (best, why)
    } else {
        (SplitK::none(shape.k), format!("{} on {slots} block slots: no split", count(tiles, "tile")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `auto` under `highest`: the FP32 CUDA-core planner.
    fn auto_fp32(m: usize, k: usize, n: usize) -> MatmulPlan {
        auto_fp32_on(m, k, n, MatmulDevice::H100)
    }

    fn auto_fp32_on(m: usize, k: usize, n: usize, device: MatmulDevice) -> MatmulPlan {
        let options =
            PlanOptions { policy: PrecisionPolicy::Highest, split: None, tile: None, ..PlanOptions::default() };
        plan_with(MatmulVariant::Auto, MatmulShape::new(m, k, n).unwrap(), device, options).unwrap()
    }

    #[test]
    fn sgemm_takes_small_tiles_only_where_larger_ones_leave_the_sms_few_warps() {
        let sgemm =
            |m, k, n| plan(MatmulVariant::Sgemm, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200).unwrap();
        // 192 tiles of 128 x 128 on 132 SMs, k = 334: the busiest SM's 16 warps against 8 in
        // four blocks of 64 x 128.
        let p = sgemm(854, 334, 3510);
        assert_eq!((p.kernel(), p.launch_config().block_dim.0), ("sgemm_64x128", 128), "{p}");
        assert!(p.reason().contains("64x128 tiles (four blocks an SM)"), "{p}");
        assert_eq!(sgemm(15_128, 344, 177).kernel(), "sgemm_64x64");
        assert_eq!(sgemm(15_128, 344, 177).launch_config().block_dim.0, 64);
        // Small products take the 4 x 4 kernels' tiles (sgemm_4x4::takes).
        let p = sgemm(486, 114, 1008);
        assert_eq!((p.kernel(), p.launch_config().block_dim.0), ("sgemm_4x4_32x32", 64), "{p}");
        assert!(p.reason().contains("32x32 tiles of 4x4 a thread"), "{p}");
        assert_eq!(sgemm(12_426, 33, 19).kernel(), "sgemm_4x4_32x64");
        // Full waves of the larger tiles keep them: the small tiles' loads per multiply-add cost more.
        assert_eq!(sgemm(16_165, 300, 415).kernel(), "sgemm_64x256");
        assert_eq!(sgemm(2048, 2048, 2048).kernel(), "sgemm");
        // Narrow outputs keep their narrow tiles.
        assert_eq!(sgemm(16_384, 1000, 32).kernel(), "sgemm_512x32");
        // A forced split is kept whatever the tile.
        for (m, k, n) in [(486, 114, 1008), (854, 334, 3510)] {
            let forced = SplitK::about(k, 3, SGEMM_MIN_CHUNK);
            let options = PlanOptions { split: Some(forced), ..PlanOptions::default() };
            let shape = MatmulShape::new(m, k, n).unwrap();
            let p = plan_with(MatmulVariant::Sgemm, shape, MatmulDevice::H200, options).unwrap();
            assert_eq!(p.split(), Some(forced), "{p}");
        }
    }

    #[test]
    fn unaligned_a_keeps_the_split_asked_for_or_declines_where_its_chunks_miss_three_columns() {
        let shape = MatmulShape::new(975, 3839, 24).unwrap();
        let forced = |split| {
            let options = PlanOptions { split: Some(split), ..PlanOptions::default() };
            plan_with(MatmulVariant::WgmmaTf32, shape, MatmulDevice::H200, options).unwrap()
        };
        // Unsplit: the same split (the launch lets the one chunk run past k).
        let whole = forced(SplitK::none(3839));
        let p = whole.with_unaligned_a(MatmulDevice::H200).unwrap();
        assert_eq!(p.split(), whole.split());
        // 2 x 1952 columns cover 3839 + 3: kept.
        let two = forced(SplitK { splits: 2, k_chunk: 1952 });
        assert_eq!(two.with_unaligned_a(MatmulDevice::H200).unwrap().split(), two.split());
        // 3 x 1280 = 3840 covers k but not k + 3: A is copied rather than a fourth chunk added.
        let tight = forced(SplitK { splits: 3, k_chunk: 1280 });
        assert!(tight.with_unaligned_a(MatmulDevice::H200).is_none());
    }

    #[test]
    fn unaligned_a_declines_where_the_classes_tiles_add_a_wave() {
        let tf32 =
            |m, k, n| plan(MatmulVariant::WgmmaTf32, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200).unwrap();
        // 604 rows: 8 class tiles of 128 rows against 5, 136 work items against 85 on 132 SMs.
        assert!(tf32(604, 1975, 2142).with_unaligned_a(MatmulDevice::H200).is_none());
        // 7188 rows: 416 work items against 377, four waves against three.
        assert!(tf32(7188, 613, 1600).with_unaligned_a(MatmulDevice::H200).is_none());
        // Two more row tiles within the same wave: A read as it lies.
        assert!(tf32(6358, 11_159, 27).with_unaligned_a(MatmulDevice::H200).is_some());
        assert!(tf32(4741, 945, 826).with_unaligned_a(MatmulDevice::H200).is_some());
        for (m, k, n) in [(3156, 871, 86), (6750, 1483, 39), (975, 3821, 24), (5344, 181, 381), (2455, 19, 3667)] {
            assert!(tf32(m, k, n).with_unaligned_a(MatmulDevice::H200).is_some(), "{m}x{k}x{n}");
        }
    }

    #[test]
    fn auto_runs_guarded_split_tf32_on_wide_products_of_many_tiles_with_the_fp32_plan_as_fallback() {
        let h100 = |m, k, n| plan(MatmulVariant::Auto, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H100);
        // 100 to 4096 tiles of 128x128 filling 76-97% of their waves; k from 128; from 2^31
        // multiply-adds.
        for (m, k, n) in [
            (1280, 2048, 1280),
            (2048, 2048, 2048),
            (512, 4096, 11008),
            (3000, 3000, 3000),
            (4096, 4096, 4096),
            (4097, 129, 8193),
            (8192, 128, 8192),
            (8192, 8192, 8192),
        ] {
            let p = h100(m, k, n).unwrap();
            assert_eq!(
                (p.variant, p.kernel),
                (MatmulVariant::WgmmaTf32x3, kernels::matmul::wgmma::KERNEL_TF32_PROMOTED),
                "{p}"
            );
            assert!(p.reason.contains("split-TF32") && p.reason.contains("guarded"), "{p}");
            let (fallback, fp32) = (p.fallback().unwrap(), auto_fp32(m, k, n));
            assert_eq!((fallback.variant, fallback.kernel, fallback.split), (fp32.variant, fp32.kernel, fp32.split));
            assert!(p.to_string().contains("Where the guard refuses the inputs"), "{p}");
            assert_eq!(p.workspace_floats(), fp32.workspace_floats());
        }
        // Too few tiles (64, 16, 1) or too ragged a last wave, k too short, a narrow side: the FP32
        // planner's choice and why not.
        for (m, k, n, why) in [
            (1024, 1024, 1024, "64 tiles of 128x128 < 80"),
            (1000, 2048, 1200, "80 tiles of 128x128 fill 61% of their 1 wave"),
            (4741, 945, 826, "266 tiles of 128x128 fill 67% of their 3 waves"),
            (128, 4096, 14_336, "a side of 128 <= 128"),
            (512, 512, 512, "16 tiles of 128x128 < 80"),
            (64, 8192, 64, "1 tile of"),
            (128, 65_536, 128, "1 tile of"),
            (8192, 64, 8192, "k = 64 < 128"),
            (8192, 127, 8192, "k = 127 < 128"),
            (16, 16_384, 16_384, "narrow"),
            (65_536, 4096, 1, "narrow"),
            (3, 100_000, 5, "narrow"),
            (64, 16_384, 16_384, "a side of 64 <= 128"),
            (16_384, 16_384, 64, "a side of 64 <= 128"),
            (29, 3987, 15_107, "a side of 29 <= 128"),
            (1000, 800, 1200, "960000000 multiply-adds < 2147483648"),
            (5344, 181, 381, "multiply-adds < 2147483648"),
        ] {
            let (p, a) = (h100(m, k, n).unwrap(), auto_fp32(m, k, n));
            assert_eq!((p.variant, p.kernel, p.split), (a.variant, a.kernel, a.split), "{p}");
            assert!(p.reason.starts_with("high, not split-TF32") && p.reason.contains(why), "{p}");
            assert!(p.fallback().is_none());
        }
    }

    #[test]
    fn every_split_tf32_plan_auto_makes_is_within_fp32s_bound() {
        use super::super::Precision;
        for k in [SPLIT_TF32_MIN_K, 129, 1000, 4096, 1 << 20] {
            let p = plan(MatmulVariant::Auto, MatmulShape::new(8192, k, 8192).unwrap(), MatmulDevice::H200).unwrap();
            assert_eq!(p.precision(), Precision::Tf32x3);
            assert!(p.precision().tolerance(k) <= Precision::Fp32.tolerance(k), "k = {k}");
        }
    }

    #[test]
    fn medium_runs_tf32_where_high_runs_split_tf32_and_highest_never_the_tensor_cores() {
        let options = |policy| PlanOptions { policy, split: None, tile: None, ..PlanOptions::default() };
        let shape = MatmulShape::new(4096, 4096, 4096).unwrap();
        let medium =
            plan_with(MatmulVariant::Auto, shape, MatmulDevice::H200, options(PrecisionPolicy::Medium)).unwrap();
        assert_eq!((medium.variant, medium.kernel), (MatmulVariant::WgmmaTf32, kernels::matmul::wgmma::KERNEL_TF32));
        assert!(medium.reason.starts_with("medium"), "{medium}");
        let highest =
            plan_with(MatmulVariant::Auto, shape, MatmulDevice::H200, options(PrecisionPolicy::Highest)).unwrap();
        assert_eq!(highest.variant, MatmulVariant::SgemmWarpTiled);
        assert!(highest.reason.starts_with("highest"), "{highest}");
        // Medium runs one TF32 pass above CUDA_CORE_MAX_MACS where high keeps the FP32 kernels
        // (512^3 has too few tiles for split-TF32), and the FP32 kernels at or below it where
        // rows of A or B are not whole 16-byte vectors.
        let auto = |m, k, n, policy| {
            plan_with(MatmulVariant::Auto, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200, options(policy))
                .unwrap()
                .variant
        };
        assert_eq!(auto(512, 512, 512, PrecisionPolicy::Medium), MatmulVariant::WgmmaTf32);
        assert_eq!(auto(512, 512, 512, PrecisionPolicy::High), MatmulVariant::Sgemm);
        assert_eq!(auto(100, 250, 256, PrecisionPolicy::Medium), MatmulVariant::Sgemm);
        assert_eq!(auto(256, 250, 256, PrecisionPolicy::Medium), MatmulVariant::WgmmaTf32);
        assert_eq!(auto(256, 256, 256, PrecisionPolicy::Medium), MatmulVariant::WgmmaTf32);
        assert_eq!(auto(256, 256, 256, PrecisionPolicy::High), MatmulVariant::Sgemm);
        assert_eq!(auto(8841, 28, 6665, PrecisionPolicy::Medium), MatmulVariant::WgmmaTf32);
        assert_eq!(auto(5202, 3876, 1, PrecisionPolicy::Medium), MatmulVariant::FewCols);
        // m <= 16: TF32 from 2 rows on (wgmma_tf32_n16), few_rows for one and for small B.
        assert_eq!(auto(16, 4096, 14336, PrecisionPolicy::Medium), MatmulVariant::WgmmaTf32);
        assert_eq!(auto(2, 4096, 14336, PrecisionPolicy::Medium), MatmulVariant::WgmmaTf32);
        assert_eq!(auto(1, 4096, 14336, PrecisionPolicy::Medium), MatmulVariant::FewRows);
        assert_eq!(auto(16, 1024, 1024, PrecisionPolicy::Medium), MatmulVariant::FewRows);
        // ... and only where B's rows are whole 16-byte vectors: other rows would be copied.
        assert_eq!(auto(15, 15_019, 6999, PrecisionPolicy::Medium), MatmulVariant::FewRows);
        // A B the tensor cores would copy, under 33 rows: the FP32 kernels read it as it lies.
        assert_eq!(auto(29, 3987, 15_107, PrecisionPolicy::Medium), MatmulVariant::Sgemm);
        assert_eq!(auto(29, 3987, 15_108, PrecisionPolicy::Medium), MatmulVariant::WgmmaTf32);
        // k <= 16: writing C bounds the time, short_k writes it.
        assert_eq!(auto(5006, 6, 6049, PrecisionPolicy::Medium), MatmulVariant::ShortK);
        // No tensor cores: the FP32 kernels.
        let none = MatmulDevice { tensor_cores: false, ..MatmulDevice::H200 };
        let p = plan_with(MatmulVariant::Auto, shape, none, options(PrecisionPolicy::Medium)).unwrap();
        assert_eq!(p.variant, MatmulVariant::SgemmWarpTiled);
        // Explicit kernels keep their own arithmetic whatever the policy.
        let explicit =
            plan_with(MatmulVariant::WgmmaBf16, shape, MatmulDevice::H200, options(PrecisionPolicy::Highest)).unwrap();
        assert_eq!(explicit.variant, MatmulVariant::WgmmaBf16);
    }

    #[test]
    fn a_plan_refuses_matrices_of_another_shape_and_keeps_its_own() {
        let shape = MatmulShape::new(4096, 4096, 4096).unwrap();
        let p = plan(MatmulVariant::Sgemm, shape, MatmulDevice::H100).unwrap();
        assert_eq!(p.shape(), shape);
        assert_eq!(p.launch_config().block_dim, (kernels::matmul::sgemm::THREADS, 1, 1));
    }

    #[test]
    fn the_longest_k_plans_with_two_splits_or_refuses_one_with_the_limit_named() {
        let shape = MatmulShape::new(1, u32::MAX as usize, 1).unwrap();
        for v in [MatmulVariant::Sgemm, MatmulVariant::SgemmWarpTiled, MatmulVariant::FewRows, MatmulVariant::Auto] {
            let p = plan(v, shape, MatmulDevice::H100).unwrap();
            let s = p.split().unwrap();
            assert!(s.splits >= 2 && s.splits as u64 * s.k_chunk as u64 >= shape.k as u64, "{p}");
        }
        let one = PlanOptions { split: Some(SplitK::none(shape.k)), ..PlanOptions::default() };
        let err = plan_with(MatmulVariant::Sgemm, shape, MatmulDevice::H100, one).unwrap_err().to_string();
        assert!(
            err.contains("at least 2 splits") && err.contains(&super::super::split_k::MAX_CHUNK.to_string()),
            "{err}"
        );
    }

    #[test]
    fn a_split_of_more_outputs_than_the_reduction_counts_is_refused() {
        let shape = MatmulShape::new(70_000, 64, 70_000).unwrap();
        let two = PlanOptions { split: Some(SplitK::about(64, 2, 8)), ..PlanOptions::default() };
        let err = plan_with(MatmulVariant::Sgemm, shape, MatmulDevice::H100, two).unwrap_err().to_string();
        assert!(err.contains("m * n = 4900000000") && err.contains("4294967295"), "{err}");
    }

    #[test]
    fn auto_without_tensor_cores_runs_the_fp32_kernels() {
        let device = MatmulDevice { tensor_cores: false, ..MatmulDevice::H100 };
        for (m, k, n) in [(4096, 4096, 4096), (8192, 8192, 8192), (512, 4096, 11008)] {
            let shape = MatmulShape::new(m, k, n).unwrap();
            let (p, a) = (plan(MatmulVariant::Auto, shape, device).unwrap(), auto_fp32(m, k, n));
            assert_eq!((p.variant, p.split), (a.variant, a.split), "{p}");
            assert!(p.reason.contains("no tensor-core kernels on this device"), "{p}");
            assert!(p.fallback().is_none());
        }
    }

    #[test]
    fn auto_streams_a_for_thin_outputs_gemv_included() {
        let p = auto_fp32(65_536, 4096, 1);
        assert_eq!((p.variant, p.split.unwrap().splits, p.reduce.is_none()), (MatmulVariant::FewCols, 1, true));
        assert_eq!(p.kernel, "matmul_few_cols_1");
        // Three rows of A cannot fill the GPU: k is split, and the partials reduced.
        let p = auto_fp32(3, 100_000, 5);
        assert_eq!(p.variant, MatmulVariant::FewCols);
        assert!(p.split.unwrap().splits > 64 && p.reduce.is_some(), "{p}");
        assert_eq!(auto_fp32(100, 100, 4).variant, MatmulVariant::FewCols);
        // From 2 to 16 columns with more than 16 rows, a block's rows share B; one column, or
        // 16 rows or fewer, stream it from L1.
        let wide = auto_fp32(16_384, 16_384, 16);
        assert_eq!((wide.variant, wide.kernel), (MatmulVariant::FewCols, "matmul_few_cols_shared_16"));
        assert!(wide.reason.contains("shared through shared memory by 48 rows"), "{wide}");
        assert_eq!(auto_fp32(100, 100, 2).kernel, "matmul_few_cols_shared_8");
        assert_eq!(auto_fp32(16_384, 16_384, 1).kernel, "matmul_few_cols_1");
        assert_eq!(auto_fp32(16, 1000, 16).kernel, "matmul_few_cols_16");
        // From 17 columns on, sgemm's narrow tiles multiply faster than few_cols shares B.
        assert_eq!(auto_fp32(6358, 11_159, 27).kernel, "sgemm_512x32");
        assert_eq!(auto_fp32(100_000, 1024, 17).kernel, "sgemm_512x32");
        // Up to four 512-row tiles, few_cols shares B up to 32 columns.
        assert_eq!(auto_fp32(32, 65_536, 32).kernel, "matmul_few_cols_shared_32");
        assert_eq!(auto_fp32(511, 4096, 17).kernel, "matmul_few_cols_shared_32");
        assert_eq!(auto_fp32(2048, 4096, 17).kernel, "matmul_few_cols_shared_32");
        assert_eq!(auto_fp32(2049, 4096, 17).kernel, "sgemm_512x32");
        assert_eq!(auto_fp32(16, 1000, 27).variant, MatmulVariant::FewRows);
        assert_eq!(auto_fp32(6358, 11_159, 33).kernel, "sgemm_256x64");
        assert_eq!(auto_fp32(6358, 11_159, 65).variant, MatmulVariant::SgemmWarpTiled);
    }

    #[test]
    fn auto_streams_b_for_short_outputs() {
        let p = auto_fp32(1, 256, 65_536);
        assert_eq!((p.variant, p.kernel), (MatmulVariant::FewRows, "matmul_few_rows_1"));
        assert_eq!(auto_fp32(5, 4096, 1000).kernel, "matmul_few_rows_8");
        assert!(p.launch.grid_dim.0 as u64 * p.split.unwrap().splits as u64 >= 4 * 132);
        // One row with k of a block's step or more: matmul_gemv, unsplit from 132 blocks of 32
        // columns (4,224 columns), otherwise split to about one block per SM.
        for (k, n, grid) in [(4096, 65_536, (2048, 1, 1)), (4096, 4096, (128, 1, 1)), (4096, 1024, (32, 1, 4))] {
            let p = auto_fp32(1, k, n);
            assert_eq!((p.variant, p.kernel, p.launch.grid_dim), (MatmulVariant::FewRows, "matmul_gemv", grid), "{p}");
            assert_eq!(p.reduce.is_some(), grid.2 > 1, "{p}");
        }
        assert_eq!(auto_fp32(1, 511, 16_384).kernel, "matmul_few_rows_1");
        assert_eq!(auto_fp32(1, 4096, 1020).kernel, "matmul_few_rows_1");
        assert_eq!(auto_fp32(1, 4096, 4097).kernel, "matmul_few_rows_1");
        let p = auto_fp32(16, 16_384, 16_384);
        assert_eq!(p.variant, MatmulVariant::FewRows);
        assert!(p.split.unwrap().splits > 1);
        // 32 blocks per split: 16 splits fill the 528 slots of few_rows_8 (4 blocks per SM), 12
        // the 396 of few_rows_16 (3 per SM); one more would leave blocks to a second wave.
        for (m, splits) in [(8, 16), (12, 12), (16, 12)] {
            let p = auto_fp32(m, 16_384, 16_384);
            assert_eq!((p.launch.grid_dim.0, p.split.unwrap().splits), (32, splits), "{p}");
            assert!(p.to_string().contains("(one wave)"), "{p}");
        }
        // Small products: 8 blocks per split, 64 splits of 64 fill few_rows_8's 528 slots.
        assert_eq!(auto_fp32(8, 4096, 4096).split.unwrap(), SplitK { splits: 64, k_chunk: 64 });
        // One block per split: ranges of the shortest chunk, 16, so that every thread's steps
        // are few (163 of them, the last 13 long).
        assert_eq!(auto_fp32(4, 2605, 269).split.unwrap(), SplitK { splits: 163, k_chunk: 16 });
        // k = 151 in ranges of 16 (10), not 9 rounded up to ranges of 24 (7).
        assert_eq!(auto_fp32(3, 151, 11_765).split.unwrap(), SplitK { splits: 10, k_chunk: 16 });
        // A split only where k holds two ranges of 16: none at k = 27.
        assert!(auto_fp32(2, 27, 358).split.is_none_or(|s| s.splits == 1));
        assert!(auto_fp32(16, 4096, 4096).split.unwrap().splits * 8 <= 3 * 132);
        // The register-only kernels round up on f32: 128 blocks per split, 5 splits.
        assert_eq!(auto_fp32(2, 4096, 65_536).split.unwrap().splits, 5);
        assert_eq!(auto_fp32(4, 4096, 65_536).split.unwrap().splits, 5);
        // On 16-bit operands they fill one wave of their blocks: 9 per SM for few_rows_1, 6
        // for few_rows_4.
        let sixteen = PlanOptions { operands: OperandType::Bf16, ..PlanOptions::default() };
        let split = |m| {
            plan_with(MatmulVariant::FewRows, MatmulShape::new(m, 4096, 65_536).unwrap(), MatmulDevice::H200, sixteen)
        };
        assert_eq!(split(1).unwrap().split.unwrap().splits, 9);
        assert_eq!(split(4).unwrap().split.unwrap().splits, 6);
        let p = split(1).unwrap().on_operands(OperandType::Bf16).unwrap();
        assert_eq!((p.kernel, p.split.unwrap().splits), ("matmul_few_rows_bf16_1", 9));
    }

    #[test]
    fn auto_warp_tiles_large_squares_that_fill_their_waves() {
        for size in [2048, 4096, 8192] {
            let p = auto_fp32(size, size, size);
            assert_eq!((p.variant, p.split.unwrap().splits), (MatmulVariant::SgemmWarpTiled, 1), "{size}: {p}");
            assert!(p.reduce.is_none() && p.reason.contains("97% of their waves"), "{p}");
        }
    }

    #[test]
    fn auto_splits_k_of_the_warp_tiled_kernel_to_fill_its_waves() {
        // 512x4096x11008: 344 tiles, 1.3 waves unsplit (65%); 3 splits, 1032 blocks, 98%.
        let p = auto_fp32(512, 4096, 11_008);
        assert_eq!((p.variant, p.split.unwrap()), (MatmulVariant::SgemmWarpTiled, SplitK { splits: 3, k_chunk: 1368 }));
        assert!(p.reduce.is_some() && p.reason.contains("1032 blocks in 3 splits of k"), "{p}");
        // 3000^3: 576 tiles; 4 splits (2.25 waves) are within 5% of 5 (2.2).
        assert_eq!(auto_fp32(3000, 3000, 3000).split.unwrap().splits, 4);
        // 6000^3: 2209 tiles, 8.4 waves; 2 splits even out the last one (8.5 waves of half depth).
        assert_eq!(auto_fp32(6000, 6000, 6000).split.unwrap().splits, 2);
        // Under one wave, down to 256-long splits: 1024^3 in 4, 1000x800x1200 in 3.
        for ((m, k, n), splits) in [((1024, 1024, 1024), 4), ((1000, 800, 1200), 3)] {
            let p = auto_fp32(m, k, n);
            assert_eq!((p.variant, p.split.unwrap().splits), (MatmulVariant::SgemmWarpTiled, splits), "{p}");
        }
    }

    #[test]
    fn auto_runs_small_products_of_the_panel_few_rows_kernels_on_the_4x4_kernels() {
        for (m, k, n) in [(12, 24, 19), (15, 9, 257), (6, 82, 279), (8, 66, 592)] {
            let p = auto_fp32_on(m, k, n, MatmulDevice::H200);
            assert!(p.variant == MatmulVariant::Sgemm && p.kernel.starts_with("sgemm_4x4_"), "{p}");
            assert!(p.reason.contains("too few to hide few_rows' copy of A"), "{p}");
        }
        // Four rows or fewer (no panel), k under a slice, or too many multiply-adds: few_rows.
        for (m, k, n) in [(4, 18, 269), (12, 1, 73), (6, 186, 6096), (16, 2048, 4096)] {
            assert_eq!(auto_fp32_on(m, k, n, MatmulDevice::H200).variant, MatmulVariant::FewRows, "{m}x{k}x{n}");
        }
    }

    #[test]
    fn auto_keeps_eight_warp_blocks_for_short_k_and_for_too_few_tiles() {
        // Full waves but a short k.
        let p = auto_fp32(4097, 129, 8193);
        assert_eq!(p.variant, MatmulVariant::Sgemm);
        assert!(p.reason.contains("k = 129 < 512"), "{p}");
        // 16 tiles: even 2 splits of 256 fill 12% of a wave; sgemm splits deeper.
        let p = auto_fp32(512, 512, 512);
        assert_eq!(p.variant, MatmulVariant::Sgemm);
        assert!(p.reason.contains("32 blocks in 2 splits of k on 264 block slots fill 12%"), "{p}");
        assert_eq!(p.split.unwrap().splits, 8, "{p}");
        assert_eq!(auto_fp32(128, 65_536, 128).variant, MatmulVariant::Sgemm);
    }

    #[test]
    fn wave_fill_counts_the_last_partial_wave() {
        assert_eq!(wave_fill(264, 264), 1.0);
        assert_eq!(wave_fill(132, 264), 0.5);
        assert!((wave_fill(576, 264) - 576.0 / 792.0).abs() < 1e-12);
        assert_eq!(wave_fill(1, 264), 1.0 / 264.0);
    }

    #[test]
    fn a_smaller_device_needs_no_split_where_the_tiles_fill_its_waves() {
        // 3000^3 on 100 SMs: 576 tiles on 200 slots, 96% of 3 waves.
        let p = plan(
            MatmulVariant::Auto,
            MatmulShape::new(3000, 3000, 3000).unwrap(),
            MatmulDevice { sm_count: 100, tensor_cores: false, cluster_blocks: [0; 8] },
        )
        .unwrap();
        assert_eq!((p.variant, p.split.unwrap().splits), (MatmulVariant::SgemmWarpTiled, 1), "{p}");
    }

    #[test]
    fn auto_splits_k_of_sgemm_when_the_tiles_leave_sms_idle() {
        // One tile and a long k: many splits.
        let p = auto_fp32(64, 8192, 64);
        assert_eq!(p.variant, MatmulVariant::Sgemm);
        assert!(p.split.unwrap().splits >= 128, "{p}");
        let p = auto_fp32(128, 65_536, 128);
        assert!(p.split.unwrap().splits >= 128, "{p}");
        // 16 tiles, k = 512: 8 splits of 64, where the reduction of more splits costs more than
        // their shorter blocks save (measured: 0.017 ms against 0.019 with 16 splits of 32).
        assert_eq!(auto_fp32(512, 512, 512).split.unwrap(), SplitK { splits: 8, k_chunk: 64 });
        // A small product: the 4 x 4 kernels, their 16 tiles of 32 x 32 split 16 times.
        let p = auto_fp32(128, 128, 128);
        assert_eq!((p.kernel, p.split.unwrap().splits), ("sgemm_4x4_32x32", 16), "{p}");
        // Short k cannot be split below the shortest chunk.
        assert_eq!(auto_fp32(4097, 20, 8193).split.unwrap().splits, 1);
        // A full wave and a partial one (344 tiles): sgemm itself does not split, measured.
        let shape = MatmulShape::new(512, 4096, 11_008).unwrap();
        assert_eq!(plan(MatmulVariant::Sgemm, shape, MatmulDevice::H100).unwrap().split.unwrap().splits, 1);
        // The fewest splits near the least estimate: 3 rather than 13 for 80 tiles.
        let shape = MatmulShape::new(1000, 800, 1200).unwrap();
        assert_eq!(plan(MatmulVariant::Sgemm, shape, MatmulDevice::H100).unwrap().split.unwrap().splits, 3);
    }

    #[test]
    fn a_smaller_device_gets_fewer_splits() {
        let shape = MatmulShape::new(1024, 1024, 1024).unwrap();
        let small = plan(
            MatmulVariant::Auto,
            shape,
            MatmulDevice { sm_count: 16, tensor_cores: false, cluster_blocks: [0; 8] },
        )
        .unwrap();
        assert_eq!(small.split.unwrap().splits, 1, "{small}");
    }

    #[test]
    fn explicit_variants_keep_their_kernel_and_narrow_ones_refuse_wide_shapes() {
        let shape = MatmulShape::new(100, 64, 100).unwrap();
        for v in MatmulVariant::KERNELS {
            let p = plan(v, shape, MatmulDevice::H100);
            if v.supports(shape) {
                let p = p.unwrap();
                // The variant's kernel, or its sibling of another tile.
                let named = v.kernel().unwrap();
                assert_eq!(p.variant, v);
                let sibling =
                    TileWidth::ALL.iter().any(|w| wgmma_tiles::with_tile(named, w.instruction_n()) == Some(p.kernel))
                        || (v == MatmulVariant::Sgemm
                            && (sgemm::tile_of(p.kernel).is_some() || sgemm_4x4::tile_of(p.kernel).is_some()));
                assert!(p.kernel == named || sibling, "{p}");
                assert!(kernels::KERNEL_NAMES.contains(&p.kernel) || kernels::HOPPER_KERNEL_NAMES.contains(&p.kernel));
            } else {
                let e = p.unwrap_err().to_string();
                let refusals = ["at most 16", "few_cols multiplies at most 32", "short_k multiplies k = 64 > 32"];
                assert!(refusals.iter().any(|r| e.contains(r)), "{v}: {e}");
            }
        }
    }

    /// The tensor-core tile variants that split `k`.
    const WGMMA_TILES: [MatmulVariant; 4] = [
        MatmulVariant::WgmmaBf16,
        MatmulVariant::WgmmaF16,
        MatmulVariant::WgmmaTf32,
        MatmulVariant::WgmmaTf32Transposed,
    ];

    #[test]
    fn wgmma_splits_of_one_wave_and_at_most_a_clusters_blocks_are_added_in_clusters() {
        use kernels::matmul::wgmma::MAX_CLUSTER_SPLITS;
        // 32 tiles of 128 x 128 (64 x 4096 x 4096) in 2 to 8 splits; 256 in 2 (1024 x 4096 x 4096).
        for (m, k, n) in [(64, 4096, 4096), (1024, 4096, 4096), (130, 1031, 257)] {
            let shape = MatmulShape::new(m, k, n).unwrap();
            for v in [MatmulVariant::WgmmaBf16, MatmulVariant::WgmmaF16] {
                for wanted in 2..=MAX_CLUSTER_SPLITS + 2 {
                    let forced = SplitK::about_in(k, wanted, 1, v.split_granule());
                    let options =
                        PlanOptions { split: Some(forced), tile: Some(TileWidth::N128), ..Default::default() };
                    let p = plan_with(v, shape, MatmulDevice::H200, options).unwrap();
                    let tiles = super::super::wgmma::tiles(shape, p.kernel);
                    let clustered = forced.splits <= MAX_CLUSTER_SPLITS
                        && tiles * forced.splits as u64
                            <= MatmulDevice::H200.cluster_blocks[forced.splits as usize - 1] as u64;
                    assert_eq!(p.cluster_blocks() > 1, clustered, "{p}");
                    if clustered {
                        // A block per work item, in clusters of the splits; no workspace.
                        assert!(p.kernel.ends_with("_cluster"), "{p}");
                        assert_eq!(p.cluster_blocks(), forced.splits, "{p}");
                        assert_eq!(p.launch.grid_dim, ((tiles * forced.splits as u64) as u32, 1, 1), "{p}");
                        assert_eq!(p.workspace_floats(), 0, "{p}");
                        assert!(
                            p.to_string().contains(&format!("added in clusters of {} blocks", forced.splits)),
                            "{p}"
                        );
                    } else {
                        assert!(p.kernel.ends_with("_rows") && p.workspace_floats() > 0, "{p}");
                    }
                }
            }
        }
        // TF32 has no cluster kernel: its tile's last work item adds the splits.
        let shape = MatmulShape::new(64, 4096, 4096).unwrap();
        let p = plan(MatmulVariant::WgmmaTf32, shape, MatmulDevice::H200).unwrap();
        assert!(p.is_split() && p.cluster_blocks() == 1, "{p}");
    }

    #[test]
    fn wgmma_splits_k_of_small_outputs_with_long_k_toward_one_wave_of_whole_stages() {
        // The H200 sweep's worst shapes against cuBLASLt (m x k x n), all 1 to 41 tiles.
        for (m, k, n) in [
            (24, 13_368, 171),
            (8, 10_397, 3),
            (1, 8340, 1),
            (1, 7862, 3),
            (591, 7821, 8),
            (79, 8453, 1077),
            (119, 7460, 1650),
            (174, 4970, 21),
            (56, 3192, 89),
            (975, 3821, 24),
            (5202, 3876, 1),
            (3133, 1711, 1),
        ] {
            let shape = MatmulShape::new(m, k, n).unwrap();
            for v in WGMMA_TILES {
                let p = plan(v, shape, MatmulDevice::H200).unwrap();
                let s = p.split.unwrap();
                let tiles = super::super::wgmma::tiles(shape, p.kernel);
                let granule = v.split_granule();
                assert!(s.splits > 1 && p.is_split() && p.reduce.is_none(), "{p}");
                // Whole stages, at least the shortest split, covering k exactly once.
                assert!(s.k_chunk.is_multiple_of(granule) && s.k_chunk >= WGMMA_MIN_CHUNK_STAGES * granule, "{p}");
                assert_eq!(s.splits as usize, k.div_ceil(s.k_chunk as usize), "{p}");
                // One wave at most, and at least a quarter of the SMs busy (or every split the
                // shortest chunk allows, the most a cluster sums, or four splits or more).
                let items = tiles * s.splits as u64;
                assert!(items <= 132, "{p}");
                let most = (k as u64).div_ceil((WGMMA_MIN_CHUNK_STAGES * granule) as u64) * tiles;
                let full_cluster = p.cluster_blocks() == kernels::matmul::wgmma::MAX_CLUSTER_SPLITS;
                // Each tile's last work item reads every split's partial tile through one SM
                // (WGMMA_TILE_SUM_STAGES_PER_VALUE), so a lone tile stops at fewer splits.
                assert!(items >= 33 || items == most || full_cluster || s.splits >= 4, "{p}");
                assert_eq!(p.launch.grid_dim, (items as u32, 1, 1), "{p}");
                // The partials are in the workspace, or with at most a cluster's splits in
                // the cluster's shared memory, and the plan says why.
                let text = p.to_string();
                assert!(text.contains(&format!("split-K {} x {}", s.splits, s.k_chunk)), "{text}");
                assert!(text.contains("work items") && text.contains("their sum included"), "{text}");
                if p.cluster_blocks() > 1 {
                    assert_eq!(p.workspace_floats(), 0);
                    assert!(text.contains("added in clusters"), "{text}");
                } else {
                    assert_eq!(p.workspace_floats(), s.splits as usize * m * n);
                    assert!(text.contains("added by each tile's last work item"), "{text}");
                }
            }
        }
        // 24x13368x171 on the wide tiles: BF16 in a cluster of 8 splits of 27 stages of 64 (one
        // tile; the 16-bit kernels split only into clusters), TF32 in 7 of 60 stages of 32 (on
        // C^T: two tiles of 256 x 128, each tile's last work item adding them, a tile's worth of
        // partial sums through one SM per split).
        let shape = MatmulShape::new(24, 13_368, 171).unwrap();
        let wide = PlanOptions { tile: Some(TileWidth::N256), ..PlanOptions::default() };
        let bf16 = plan_with(MatmulVariant::WgmmaBf16, shape, MatmulDevice::H200, wide).unwrap();
        assert_eq!((bf16.kernel, bf16.split), ("wgmma_bf16_cluster", Some(SplitK { splits: 8, k_chunk: 1728 })));
        let tf32 = plan_with(MatmulVariant::WgmmaTf32, shape, MatmulDevice::H200, wide).unwrap();
        assert_eq!((tf32.split, tf32.launch.grid_dim.0), (Some(SplitK { splits: 7, k_chunk: 1920 }), 14));
        // The planner's: three tiles of 128 x 64 in clusters of 8 cost less than two of 128 x 128
        // or one of 128 x 256 (their cluster sums cost with the tile's area).
        let bf16 = plan(MatmulVariant::WgmmaBf16, shape, MatmulDevice::H200).unwrap();
        assert_eq!((bf16.kernel, bf16.split), ("wgmma_bf16_n64_cluster", Some(SplitK { splits: 8, k_chunk: 1728 })));
        assert!(bf16.reason.contains("tiles of 128x64: an estimated 17.1 stages"), "{bf16}");
    }

    /// Each tile's last work item reads every split's partial tile through its one SM: the
    /// estimate charges that, so few tiles take fewer splits and narrower tiles (H200, TF32:
    /// 975x3821x24 0.022 ms in 14 splits against 0.018 in 8; 79x8453x1077 0.050 on 13 splits of
    /// 128 x 128 tiles against 0.043 on 128 x 64).
    #[test]
    fn tensor_core_splits_summed_in_one_sm_pay_for_a_tile_per_split() {
        let tf32 = |m, k, n| plan(MatmulVariant::WgmmaTf32, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200);
        let p = tf32(975, 3821, 24).unwrap();
        assert_eq!(p.kernel, "wgmma_tf32_n64", "{p}");
        assert!((2..=8).contains(&p.split.unwrap().splits), "{p}");
        let p = tf32(79, 8453, 1077).unwrap();
        assert_eq!(p.kernel, "wgmma_tf32_n64", "{p}");
        assert!(p.split.unwrap().splits < 13, "{p}");
        // The charge per split grows with the tile's area.
        let device = MatmulDevice::H200;
        let shape = MatmulShape::new(24, 13_368, 171).unwrap();
        let sum = |kernel, splits| {
            wgmma_estimate(shape, device, kernel, splits, 16) - wgmma_estimate(shape, device, kernel, 1, 16)
        };
        assert!(sum("wgmma_tf32_n64", 8) < sum("wgmma_tf32_n128", 8));
        assert!(sum("wgmma_tf32_n128", 8) < sum("wgmma_tf32", 8));
    }

    /// TF32's 128 x 64 tiles (`wgmma_tf32_n64`) where the wider ones are mostly padding or too
    /// few for the SMs (H200: 463x2443x281 23 µs against 30 on 128 x 128, 1024^3 14 against
    /// 17), and the 256 x 128 tiles where those already fill the SMs.
    #[test]
    fn tf32_takes_128_x_64_tiles_for_narrow_outputs_and_mid_sized_squares() {
        let tf32 =
            |m, k, n| plan(MatmulVariant::WgmmaTf32, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200).unwrap();
        for (m, k, n) in [(463, 2443, 281), (3156, 871, 86), (8931, 191, 45), (512, 512, 512), (1024, 1024, 1024)] {
            let p = tf32(m, k, n);
            assert_eq!(p.kernel, "wgmma_tf32_n64", "{p}");
            assert!(p.reason.contains("tiles of 128x64"), "{p}");
        }
        for (m, k, n) in [(2048, 2048, 2048), (4096, 4096, 4096)] {
            assert_eq!(tf32(m, k, n).kernel, "wgmma_tf32");
        }
        // Asked for, the width is the plan's whatever the estimate.
        let n64 = PlanOptions { tile: Some(TileWidth::N64), ..PlanOptions::default() };
        let forced =
            plan_with(MatmulVariant::WgmmaTf32, MatmulShape::new(4096, 4096, 4096).unwrap(), MatmulDevice::H200, n64);
        assert_eq!(forced.unwrap().kernel, "wgmma_tf32_n64");
    }

    #[test]
    fn wgmma_keeps_k_whole_where_the_tiles_fill_the_sms_or_k_is_short() {
        for (m, k, n) in [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 14_336, 4096), (8192, 4096, 28_672)] {
            for v in WGMMA_TILES {
                let p = plan(v, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200).unwrap();
                assert_eq!((p.split.unwrap().splits, p.reduce.is_none()), (1, true), "{p}");
                assert_eq!(p.workspace_floats(), 0);
                assert!(p.to_string().contains("no split of k") && p.reason.contains("give each of 132 SMs"), "{p}");
            }
        }
        // Few tiles but k too short to split into two of 4 stages (k = 256 is 4 stages of 64).
        let p = plan(MatmulVariant::WgmmaBf16, MatmulShape::new(100, 256, 100).unwrap(), MatmulDevice::H200).unwrap();
        assert_eq!(p.split.unwrap().splits, 1, "{p}");
        assert!(p.reason.contains("too short to split"), "{p}");
        // 1024^3 (32 tiles, 16 stages) and 2048^3 (128 tiles): the partial sums would cost more
        // than the split saves.
        for size in [1024, 2048] {
            let p =
                plan(MatmulVariant::WgmmaF16, MatmulShape::new(size, size, size).unwrap(), MatmulDevice::H200).unwrap();
            assert_eq!(p.split.unwrap().splits, 1, "{p}");
            assert!(p.reason.contains("would not pay"), "{p}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 1024, ..Default::default() })]

        /// The planner splits a 16-bit tensor-core product on the tiles of 64 rows or more only
        /// into their cluster form: every such split plan of `wgmma_bf16` or `wgmma_f16` is a
        /// `_cluster` kernel whose clusters are the splits (2 to 8), all on the GPU at once, with
        /// no workspace. The 16-row tiles (`_n16`, `m <= 16`) have no cluster form: their split
        /// is added by each tile's last work item, through the workspace.
        #[test]
        fn sixteen_bit_tensor_core_splits_are_summed_in_clusters_that_fit_at_once_except_on_16_row_tiles(
            (m, k, n) in (1usize..=20_000, 1usize..=40_000, 1usize..=20_000),
            f16 in proptest::bool::ANY,
        ) {
            let v = if f16 { MatmulVariant::WgmmaF16 } else { MatmulVariant::WgmmaBf16 };
            let family = if f16 { "wgmma_f16" } else { "wgmma_bf16" };
            let shape = MatmulShape::new(m, k, n).unwrap();
            let p = plan(v, shape, MatmulDevice::H200).unwrap();
            let splits = p.split.map_or(1, |s| s.splits);
            proptest::prop_assert!(p.kernel.starts_with(family), "{}", p);
            if splits > 1 && p.kernel.ends_with("_n16") {
                proptest::prop_assert_eq!(p.cluster_blocks(), 1);
                proptest::prop_assert_eq!(p.workspace_floats(), splits as usize * m * n);
            } else if splits > 1 {
                proptest::prop_assert!(p.kernel.ends_with("_cluster"), "{}", p);
                proptest::prop_assert_eq!(p.cluster_blocks(), splits);
                proptest::prop_assert!(splits <= kernels::matmul::wgmma::MAX_CLUSTER_SPLITS);
                let items = super::super::wgmma::tiles(shape, p.kernel) * splits as u64;
                let at_once = MatmulDevice::H200.cluster_blocks[splits as usize - 1] as u64;
                proptest::prop_assert!(items <= at_once, "{} work items, {} at once: {}", items, at_once, p);
                proptest::prop_assert_eq!(p.workspace_floats(), 0);
            } else {
                proptest::prop_assert!(!p.kernel.ends_with("_cluster"), "{}", p);
            }
        }

        /// `auto` under `high` runs split-TF32 only on products it can fill: both sides over
        /// [`SPLIT_TF32_MIN_SIDE`] - 1, `k` from [`SPLIT_TF32_MIN_K`], at least
        /// [`SPLIT_TF32_MIN_MACS`] multiply-adds, [`SPLIT_TF32_MIN_TILES`] tiles of 128x128 that
        /// fill [`SPLIT_TF32_MIN_WAVE_FILL`] of their waves; everywhere else its plan is the FP32
        /// planner's, with no fallback.
        #[test]
        fn high_runs_split_tf32_only_on_wide_products_whose_tiles_fill_their_waves(
            (m, k, n) in (1usize..=20_000, 1usize..=20_000, 1usize..=20_000),
            h100 in proptest::bool::ANY,
        ) {
            let device = if h100 { MatmulDevice::H100 } else { MatmulDevice::H200 };
            let shape = MatmulShape::new(m, k, n).unwrap();
            let p = plan(MatmulVariant::Auto, shape, device).unwrap();
            let tiles = (n as u64).div_ceil(128) * (m as u64).div_ceil(128);
            let fill = wave_fill(tiles, device.sm_count as u64);
            if p.variant == MatmulVariant::WgmmaTf32x3 {
                proptest::prop_assert!(m.min(n) >= SPLIT_TF32_MIN_SIDE && k >= SPLIT_TF32_MIN_K, "{}", p);
                proptest::prop_assert!((m * k * n) as u64 >= SPLIT_TF32_MIN_MACS, "{}", p);
                proptest::prop_assert!(tiles >= SPLIT_TF32_MIN_TILES as u64, "{}", p);
                proptest::prop_assert!(fill >= SPLIT_TF32_MIN_WAVE_FILL, "{} tiles fill {}: {}", tiles, fill, p);
                proptest::prop_assert!(p.fallback().is_some(), "{}", p);
            } else {
                let fp32 = auto_fp32_on(m, k, n, device);
                proptest::prop_assert_eq!((p.variant, p.kernel, p.split), (fp32.variant, fp32.kernel, fp32.split));
                proptest::prop_assert!(p.fallback().is_none(), "{}", p);
            }
        }

        /// The same for the shapes the 16-row tiles take (`m <= 16`), which the draw above
        /// reaches rarely.
        #[test]
        fn sixteen_row_tensor_core_splits_are_added_through_the_workspace(
            (m, k, n) in (1usize..=16, 1usize..=40_000, 1usize..=20_000),
            f16 in proptest::bool::ANY,
        ) {
            let v = if f16 { MatmulVariant::WgmmaF16 } else { MatmulVariant::WgmmaBf16 };
            let p = plan(v, MatmulShape::new(m, k, n).unwrap(), MatmulDevice::H200).unwrap();
            let splits = p.split.map_or(1, |s| s.splits);
            if splits > 1 && p.kernel.ends_with("_n16") {
                proptest::prop_assert_eq!(p.cluster_blocks(), 1);
                proptest::prop_assert_eq!(p.workspace_floats(), splits as usize * m * n);
            } else if splits > 1 {
                proptest::prop_assert!(p.kernel.ends_with("_cluster") && p.cluster_blocks() == splits, "{}", p);
            }
        }
    }

    #[test]
    fn wgmma_forced_splits_are_taken_in_whole_stages_and_refused_past_k() {
        let shape = MatmulShape::new(100, 1000, 300).unwrap();
        let forced =
            |v, s| plan_with(v, shape, MatmulDevice::H200, PlanOptions { split: Some(s), ..Default::default() });
        for v in WGMMA_TILES {
            let g = v.split_granule();
            let s = SplitK::about_in(1000, 3, 1, g);
            let p = forced(v, s).unwrap();
            // Added in the kernel: no reduction launch.
            assert_eq!((p.split, p.is_split(), p.reduce.is_none()), (Some(s), true, true), "{p}");
            assert!(p.reason.contains("split forced"), "{p}");
            // BF16 and F16 add 3 splits of 3 tiles in clusters (no workspace), TF32 through it.
            let cluster = matches!(v, MatmulVariant::WgmmaBf16 | MatmulVariant::WgmmaF16);
            assert_eq!(p.cluster_blocks() > 1, cluster, "{p}");
            assert_eq!(p.workspace_floats(), if cluster { 0 } else { s.splits as usize * 100 * 300 });
            // Tiles x splits work items, one block per SM at most.
            let items = super::super::wgmma::tiles(shape, p.kernel) * s.splits as u64;
            assert_eq!(p.launch.grid_dim.0 as u64, items.min(132));
            // One split of at least k: no workspace, no reduction.
            let p = forced(v, SplitK::none(1000)).unwrap();
            assert!(p.reduce.is_none() && p.workspace_floats() == 0);
            // A range that is not whole stages.
            let err = forced(v, SplitK { splits: 3, k_chunk: g + 8 }).unwrap_err().to_string();
            assert!(err.contains(&format!("whole stages of {g} columns")), "{err}");
            // A split beyond k.
            let err = forced(v, SplitK { splits: 17, k_chunk: 64 }).unwrap_err().to_string();
            assert!(err.contains("leave splits past k = 1000"), "{err}");
            let err = forced(v, SplitK { splits: 2, k_chunk: 64 }).unwrap_err().to_string();
            assert!(err.contains("cover 128 of k = 1000"), "{err}");
        }
        // The most splits: every stage its own split, 32 of 32 for TF32 at k = 1000. Each tile's
        // last work item then reads 32 partial tiles, so the narrowest tiles cost least: 5 of
        // 128 x 64, 160 work items on 132 persistent blocks.
        let p = forced(MatmulVariant::WgmmaTf32, SplitK { splits: 32, k_chunk: 32 }).unwrap();
        assert_eq!((p.kernel, p.launch.grid_dim.0), ("wgmma_tf32_n64", 132), "{p}");
    }

    #[test]
    fn wgmma_split_work_items_past_the_kernels_u32_count_are_refused() {
        let shape = MatmulShape::new(1 << 20, 1 << 20, 1 << 20).unwrap();
        let s = SplitK::about_in(1 << 20, 256, 1, 64);
        let options = PlanOptions { split: Some(s), ..Default::default() };
        let err = plan_with(MatmulVariant::WgmmaBf16, shape, MatmulDevice::H200, options).unwrap_err().to_string();
        assert!(err.contains("work items") || err.contains("m * n"), "{err}");
    }

    #[test]
    fn forced_splits_are_checked_against_k() {
        let shape = MatmulShape::new(100, 64, 100).unwrap();
        let forced = |s| {
            plan_with(
                MatmulVariant::Sgemm,
                shape,
                MatmulDevice::H100,
                PlanOptions { split: Some(s), ..Default::default() },
            )
        };
        assert_eq!(forced(SplitK { splits: 8, k_chunk: 8 }).unwrap().reduce.unwrap().grid_dim.0, 20);
        assert!(forced(SplitK { splits: 9, k_chunk: 8 }).is_err());
        assert!(forced(SplitK { splits: 2, k_chunk: 6 }).is_err());
    }
}
