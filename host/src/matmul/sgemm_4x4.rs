//! Launch planning for `kernels::matmul::sgemm_4x4`, the 4 x 4-per-thread kernels `sgemm` runs
//! small products on: which products ([`takes`]), the tile ([`tile_for`]), the split of `k`
//! ([`choose_split`]) and the grid ([`plan`]).
//!
//! Measured on the H200 (2026-11-30, the 57 products of the 200-shape sweep where `auto` ran
//! `sgemm` or `sgemm_warp_tiled`, each timed as a one-product CUDA graph on every tile and on 1
//! to 16 splits of `k`): these kernels took 0.65-0.95x the time of `auto`'s plan on every product
//! of at most [`MAX_MACS`] multiply-adds with `k` at most [`MAX_K_PER_SIDE`] times the square root
//! of `m n` (the geometric mean 0.835x with this module's choices of tile and split, 0.825x with
//! the fastest configuration of each product; `results/h200-sgemm-4x4.txt`), and 1.03-1.8x above those bounds, where `sgemm`'s 8 x 8 per thread do
//! twice the FMAs per shared-memory load and its narrow tiles split long `k` deeper. Products
//! `sgemm` gives a narrow tile keep it (two of the 22 were: 61x1260x524 and 48x363x75, 0.86x and
//! 0.74x here, left to a measurement of the narrow tiles on small products).

use super::shape::{MatmulShape, grid_over_c};
use super::split_k::SplitK;
use crate::error::Result;
use cudarc::driver::LaunchConfig;
use kernels::matmul::element::OperandType;
use kernels::matmul::sgemm_4x4::{KERNELS, Tile};

/// Most multiply-adds (`m k n`) of a product `sgemm` runs on these kernels: 10^8, past the
/// largest measured faster (68x550x2453, 91.7 million) and short of the smallest measured slower
/// (84x897x2412, 182 million).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm_4x4};
/// assert!(sgemm_4x4::takes(MatmulShape::new(68, 550, 2453)?));
/// assert!(!sgemm_4x4::takes(MatmulShape::new(84, 897, 2412)?));
/// # Ok(()) }
/// ```
pub const MAX_MACS: u64 = 100_000_000;

/// Longest `k`, as a multiple of `sqrt(m n)`, of a product `sgemm` runs on these kernels: longer,
/// its few outputs want `k` split deeper than a 32 x 32 tile's grid does well (H200:
/// 24x13368x171 0.036 ms against `sgemm_32x512`'s 0.020; 56x3192x89 0.0118 against 0.0117).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm_4x4};
/// assert!(sgemm_4x4::takes(MatmulShape::new(148, 548, 249)?)); // sqrt(m n) = 192: k <= 1535
/// assert!(!sgemm_4x4::takes(MatmulShape::new(100, 2000, 100)?)); // sqrt(m n) = 100: k > 800
/// # Ok(()) }
/// ```
pub const MAX_K_PER_SIDE: f64 = 8.0;

/// Whether `sgemm` runs `shape` on these kernels: at most [`MAX_MACS`] multiply-adds, `k` at
/// most [`MAX_K_PER_SIDE`] `sqrt(m n)`, and not a product `sgemm` gives a narrow tile
/// ([`super::sgemm::tile_for`]: a side of at most 64 and `k` from 256; none was measured in these
/// bounds).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm_4x4};
/// assert!(sgemm_4x4::takes(MatmulShape::new(950, 108, 270)?));
/// assert!(!sgemm_4x4::takes(MatmulShape::new(4096, 4096, 4096)?));
/// assert!(!sgemm_4x4::takes(MatmulShape::new(511, 256, 32)?)); // sgemm_512x32
/// # Ok(()) }
/// ```
pub fn takes(shape: MatmulShape) -> bool {
    shape.macs() <= MAX_MACS as u128
        && (shape.k as f64) <= MAX_K_PER_SIDE * (shape.m as f64 * shape.n as f64).sqrt()
        && super::sgemm::tile_for(shape) == kernels::matmul::sgemm::Tile::SQUARE
}

/// Most multiply-adds of a product of at most 16 rows that `auto` gives these kernels rather than
/// `few_rows`: 2^21. The `few_rows` kernels of 5 to 16 rows copy a 32 KiB panel of `A` into
/// shared memory before their first multiply-add, which a small product cannot hide (H200, us,
/// `f32`, `few_rows` against these kernels, BF16 in brackets: 12x24x19 7.5 against 3.1 (7.7
/// against 3.8), 15x9x257 6.2 against 2.8 (6.6, 3.2), 7x16x19 4.7 against 2.7 (4.9, 3.2),
/// 6x82x279 7.4 against 4.4 (7.2, 5.3), 8x66x592 7.7 against 4.8 (6.6, 6.0); above it,
/// 6x186x6096, 6.8 million, 7.8 against 7.6, and 3x151x11765, on `few_rows_4`'s registers alone,
/// 8.0 against 9.2; `results/h200-sgemm-4x4.txt`).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm_4x4};
/// assert!(sgemm_4x4::takes_from_few_rows(MatmulShape::new(8, 66, 592)?)); // 312,576
/// assert!(!sgemm_4x4::takes_from_few_rows(MatmulShape::new(6, 186, 6096)?)); // 6.8 million
/// # Ok(()) }
/// ```
pub const FEW_ROWS_MAX_MACS: u64 = 1 << 21;

/// Whether `auto` runs a product of at most 16 rows on these kernels rather than `few_rows`: a
/// `few_rows` kernel with a panel of `A` (`kernels::matmul::skinny::few_rows_uses_panel`), `k` of
/// at least one slice, at most [`FEW_ROWS_MAX_MACS`] multiply-adds, and [`takes`].
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm_4x4};
/// assert!(sgemm_4x4::takes_from_few_rows(MatmulShape::new(12, 24, 19)?));
/// assert!(!sgemm_4x4::takes_from_few_rows(MatmulShape::new(4, 18, 269)?)); // few_rows_4: no panel
/// assert!(!sgemm_4x4::takes_from_few_rows(MatmulShape::new(12, 1, 73)?)); // k under one slice
/// assert!(!sgemm_4x4::takes_from_few_rows(MatmulShape::new(17, 24, 19)?)); // not few_rows' rows
/// # Ok(()) }
/// ```
pub fn takes_from_few_rows(shape: MatmulShape) -> bool {
    shape.m <= kernels::matmul::skinny::FEW_ROWS_MAX_M as usize
        && kernels::matmul::skinny::few_rows_uses_panel(shape.m as u32)
        && shape.k >= kernels::matmul::sgemm_4x4::BLOCK_K as usize
        && shape.macs() <= FEW_ROWS_MAX_MACS as u128
        && takes(shape)
}

/// The tile for `shape`: 32 x 64 where `C` is at most 64 columns wide (a 32-column tile loads
/// each row of `A` twice for as much padding: 8830x45x55 0.0064 ms against 0.0069), 32 x 32
/// otherwise (the most blocks; 64 x 32 and 64 x 64 tiles, also measured, were at best 2% faster
/// on two products of the sweep and slower on the rest).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm_4x4};
/// use kernels::matmul::sgemm_4x4::Tile;
/// assert_eq!(sgemm_4x4::tile_for(MatmulShape::new(8830, 45, 55)?), Tile::T32X64);
/// assert_eq!(sgemm_4x4::tile_for(MatmulShape::new(950, 108, 270)?), Tile::T32X32);
/// # Ok(()) }
/// ```
pub fn tile_for(shape: MatmulShape) -> Tile {
    if shape.n <= 64 { Tile::T32X64 } else { Tile::T32X32 }
}

/// Fixed cost of a product, in estimated microseconds on the H200 ([`estimate_us`]).
pub const FIXED_US: f64 = 3.0;
/// Cost of one warp's 4 x 4 outputs over one column of `k`, in microseconds on the busiest SM.
pub const WARP_COLUMN_US: f64 = 0.006;
/// Fewest warps the estimate charges an SM: fewer still leave its schedulers waiting on
/// latency.
pub const MIN_WARPS: f64 = 6.0;
/// Fixed cost of a split of `k` (the reduction's launch), in microseconds.
pub const SPLIT_FIXED_US: f64 = 1.5;
/// Cost of one partial sum of a split, in microseconds.
pub const SPLIT_VALUE_US: f64 = 2e-6;
/// The splits of `k` [`choose_split`] weighs.
pub const SPLITS: [u32; 8] = [1, 2, 3, 4, 6, 8, 12, 16];

/// The estimated time of `tile` with the split `s` on `sm` SMs, in microseconds on the H200: the
/// warps on the busiest SM (at least [`MIN_WARPS`]) times the split's columns of `k`, plus the
/// fixed costs and, with a split, the reduction. Fitted to the measurements in the module
/// documentation: the split it picks was within 10% of the fastest measured on its tile for
/// every product there that [`takes`] admits.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, SplitK, sgemm_4x4};
/// use kernels::matmul::sgemm_4x4::Tile;
/// let shape = MatmulShape::new(68, 550, 2453)?;
/// let t = |s| sgemm_4x4::estimate_us(shape, 132, Tile::T32X32, SplitK::about(550, s, 8));
/// assert!(t(4) < t(1) && t(4) < t(16));
/// # Ok(()) }
/// ```
pub fn estimate_us(shape: MatmulShape, sm: u32, tile: Tile, s: SplitK) -> f64 {
    let tiles = shape.m.div_ceil(tile.block_m() as usize) as f64 * shape.n.div_ceil(tile.block_n() as usize) as f64;
    let blocks = tiles * s.splits as f64;
    let warps = (blocks / sm.max(1) as f64).ceil() * (tile.threads() / 32) as f64;
    let columns = s.k_chunk.min(shape.k.min(u32::MAX as usize) as u32) as f64;
    let split = if s.splits > 1 {
        SPLIT_FIXED_US + SPLIT_VALUE_US * shape.m as f64 * shape.n as f64 * s.splits as f64
    } else {
        0.0
    };
    FIXED_US + WARP_COLUMN_US * warps.max(MIN_WARPS) * columns + split
}

/// The split of `k` among [`SPLITS`] with the least [`estimate_us`], and why.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm_4x4};
/// // 270 tiles of 32 x 32 fill the SMs: no split.
/// let (s, why) = sgemm_4x4::choose_split(MatmulShape::new(950, 108, 270)?, 132);
/// assert_eq!(s.splits, 1, "{why}");
/// // 8 tiles and k = 1610: deep.
/// assert!(sgemm_4x4::choose_split(MatmulShape::new(105, 1610, 52)?, 132).0.splits >= 8);
/// # Ok(()) }
/// ```
pub fn choose_split(shape: MatmulShape, sm: u32) -> (SplitK, String) {
    let tile = tile_for(shape);
    let candidates = SPLITS.iter().map(|&s| SplitK::about(shape.k, s, 1));
    let (best, time) = candidates
        .map(|s| (s, estimate_us(shape, sm, tile, s)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("SPLITS is not empty");
    let unsplit = estimate_us(shape, sm, tile, SplitK::none(shape.k));
    let why = if best.splits > 1 {
        format!("{} splits of k: an estimated {time:.1} us against {unsplit:.1} unsplit", best.splits)
    } else {
        format!("no split: an estimated {time:.1} us")
    };
    (best, why)
}

/// One block of [`Tile::threads`] threads per `tile` of `C`, columns on x, one z index per split
/// of `k`; static shared memory only.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, SplitK, sgemm_4x4};
/// use kernels::matmul::sgemm_4x4::Tile;
/// let cfg = sgemm_4x4::plan(MatmulShape::new(950, 108, 270)?, Tile::T32X32, SplitK::about(108, 3, 8))?;
/// assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((9, 30, 3), (64, 1, 1), 0));
/// // CUDA allows at most 65,535 blocks along y.
/// assert!(sgemm_4x4::plan(MatmulShape::new(32 * 65_536, 1, 1)?, Tile::T32X32, SplitK::none(1)).is_err());
/// # Ok(()) }
/// ```
pub fn plan(shape: MatmulShape, tile: Tile, split: SplitK) -> Result<LaunchConfig> {
    let (gx, gy, _) = grid_over_c(shape, tile.block_n(), tile.block_m())?;
    Ok(LaunchConfig { grid_dim: (gx, gy, split.splits), block_dim: (tile.threads(), 1, 1), shared_mem_bytes: 0 })
}

/// The PTX symbol of the kernel for `tile` on operands of type `t`.
///
/// ```
/// use hopper_kernels::matmul::sgemm_4x4;
/// use kernels::matmul::{element::OperandType, sgemm_4x4::Tile};
/// assert_eq!(sgemm_4x4::kernel(Tile::T32X64, OperandType::Bf16), "sgemm_4x4_bf16_32x64");
/// ```
pub fn kernel(tile: Tile, t: OperandType) -> &'static str {
    // Every tile is one of Tile's constants, each in the table (tests below).
    let (_, names) = KERNELS.iter().find(|(k, _)| *k == tile).copied().unwrap_or(KERNELS[0]);
    names[t.index()]
}

/// The tile of one of these kernels (any operand type), from its PTX symbol.
///
/// ```
/// use hopper_kernels::matmul::sgemm_4x4;
/// use kernels::matmul::sgemm_4x4::Tile;
/// assert_eq!(sgemm_4x4::tile_of("sgemm_4x4_f16_32x32"), Some(Tile::T32X32));
/// assert_eq!(sgemm_4x4::tile_of("sgemm_64x64"), None);
/// ```
pub fn tile_of(kernel: &str) -> Option<Tile> {
    KERNELS.iter().find(|(_, names)| names.contains(&kernel)).map(|(tile, _)| *tile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tile_has_a_built_kernel_per_operand_type() {
        for (tile, names) in KERNELS {
            for t in OperandType::ALL {
                assert_eq!(kernel(tile, t), names[t.index()]);
                assert_eq!(tile_of(kernel(tile, t)), Some(tile));
                assert!(kernels::KERNEL_NAMES.contains(&kernel(tile, t)), "{}", kernel(tile, t));
            }
        }
    }

    #[test]
    fn small_products_with_k_not_far_beyond_their_outputs_side_take_these_kernels() {
        let takes = |m, k, n| takes(MatmulShape::new(m, k, n).unwrap());
        // The sweep's products measured faster here (module documentation).
        for (m, k, n) in [(950, 108, 270), (8931, 191, 45), (68, 550, 2453), (21, 51, 4834), (59, 34, 33)] {
            assert!(takes(m, k, n), "{m}x{k}x{n}");
        }
        // Slower here: past the multiply-adds, or k long for the outputs; and narrow products
        // of k from 256 keep sgemm's narrow tiles.
        for (m, k, n) in
            [(84, 897, 2412), (5344, 181, 381), (24, 13_368, 171), (28, 392, 35), (17, 3492, 1645), (511, 256, 32)]
        {
            assert!(!takes(m, k, n), "{m}x{k}x{n}");
        }
        // The bound on multiply-adds is inclusive, and k = 1 always fits the side bound.
        assert!(takes(1000, 100, 1000) && !takes(1000, 100, 1001));
        assert!(takes(1, 1, 1));
    }

    #[test]
    fn the_split_fills_the_sms_and_stays_unsplit_when_the_tiles_do() {
        for (m, k, n, want) in [(950, 108, 270, 1), (486, 114, 1008, 1), (68, 550, 2453, 4), (48, 363, 75, 16)] {
            let (s, why) = choose_split(MatmulShape::new(m, k, n).unwrap(), 132);
            assert_eq!(s.splits, want, "{m}x{k}x{n}: {why}");
            assert!(s.k_chunk as usize * s.splits as usize >= k && s.k_chunk.is_multiple_of(8));
        }
    }

    #[test]
    fn the_grid_covers_c_with_a_block_per_tile_and_a_layer_per_split() {
        let shape = MatmulShape::new(33, 7, 65).unwrap();
        for tile in Tile::ALL {
            let cfg = plan(shape, tile, SplitK::about(7, 1, 1)).unwrap();
            let (gx, gy, _) = cfg.grid_dim;
            assert!(gx * tile.block_n() >= 65 && (gx - 1) * tile.block_n() < 65, "{tile:?}");
            assert!(gy * tile.block_m() >= 33 && (gy - 1) * tile.block_m() < 33, "{tile:?}");
            assert_eq!(cfg.block_dim.0, tile.threads());
        }
    }
}
