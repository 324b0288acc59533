//! Launch planning for `kernels::matmul::sgemm`: the tile (128 x 128, a narrow one where a side
//! of `C` is at most 64, 64 x 256 for short `k`) and the grid.

use super::shape::{MatmulShape, grid_over_c};
use super::split_k::SplitK;
use crate::error::Result;
use cudarc::driver::LaunchConfig;
use kernels::matmul::element::OperandType;
use kernels::matmul::sgemm::{THREADS, TILE_KERNELS, Tile};

/// The widest narrow side the narrow tiles take: 64 (256 x 64 and 64 x 256).
///
/// ```
/// use hopper_kernels::matmul::sgemm::NARROW_MAX_SIDE;
/// assert_eq!(NARROW_MAX_SIDE, 64);
/// ```
pub const NARROW_MAX_SIDE: usize = 64;

/// Shortest `k` for which `sgemm` takes a narrow tile: below it a block's few slices leave its
/// prologue and epilogue exposed, and the square tile's four times as many blocks finish first
/// (H200, square against 512 x 32: 12426x33x19 0.0147 ms against 0.0237; 8931x191x45 0.0365
/// against 256 x 64's 0.0356).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm};
/// use kernels::matmul::sgemm::Tile;
/// assert_eq!(sgemm::tile_for(MatmulShape::new(12_426, sgemm::NARROW_MIN_K - 1, 19)?), Tile::SQUARE);
/// assert_eq!(sgemm::tile_for(MatmulShape::new(12_426, sgemm::NARROW_MIN_K, 19)?), Tile::TALL_32);
/// # Ok(()) }
/// ```
pub const NARROW_MIN_K: usize = 256;

/// The tile `sgemm` runs `shape` on: where the narrower side of `C` is at most 32 or 64 and `k`
/// at least [`NARROW_MIN_K`], the tile as wide (or tall) as that and 512 or 256 long on the
/// other side, so that no block multiplies more than 31 columns (rows) of padding; otherwise 128
/// x 128. Columns are taken first where both sides are narrow and equal.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm};
/// use kernels::matmul::sgemm::Tile;
/// assert_eq!(sgemm::tile_for(MatmulShape::new(16_384, 16_384, 32)?), Tile::TALL_32);
/// assert_eq!(sgemm::tile_for(MatmulShape::new(16_384, 16_384, 48)?), Tile::TALL_64);
/// assert_eq!(sgemm::tile_for(MatmulShape::new(29, 3987, 15_107)?), Tile::WIDE_32);
/// assert_eq!(sgemm::tile_for(MatmulShape::new(64, 4096, 4096)?), Tile::WIDE_64);
/// assert_eq!(sgemm::tile_for(MatmulShape::new(65, 4096, 65)?), Tile::SQUARE);
/// assert_eq!(sgemm::tile_for(MatmulShape::new(16_384, 33, 32)?), Tile::SQUARE);
/// # Ok(()) }
/// ```
pub fn tile_for(shape: MatmulShape) -> Tile {
    if shape.k < NARROW_MIN_K {
        return Tile::SQUARE;
    }
    // The narrow side's tile: (at most 32, at most 64) wide or tall.
    let narrow = |side: usize, (of_32, of_64): (Tile, Tile)| {
        if side <= 32 {
            of_32
        } else if side <= NARROW_MAX_SIDE {
            of_64
        } else {
            Tile::SQUARE
        }
    };
    if shape.n <= shape.m {
        narrow(shape.n, (Tile::TALL_32, Tile::TALL_64))
    } else {
        narrow(shape.m, (Tile::WIDE_32, Tile::WIDE_64))
    }
}

/// `k` from which `sgemm` keeps 128 x 128 tiles where [`tile_for`] gives them: below it a block's
/// few slices leave its prologue and epilogue a large share of its time, which 64 x 256 tiles
/// cut (half the transposing shared-memory stores of `A` per slice, and a warp's stores of `C`
/// 512 contiguous bytes); from it their extra loads of `B` cost more. Unsplit, on the H200, 64 x
/// 256 against 128 x 128 with as many blocks on the busiest SM: 8841x28x6665 0.178 ms against
/// 0.198, 4042x65x1243 0.044 against 0.050, 15128x344x177 0.088 against 0.096, 854x334x3510
/// 0.086 against 0.092, 16165x300x415 0.149 against 0.159; 2048^3 0.420 against 0.411,
/// 1000x800x1200 0.098 against 0.094.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm};
/// use kernels::matmul::sgemm::Tile;
/// let tile = |k| sgemm::tile_on(MatmulShape::new(854, k, 3510).unwrap(), 132);
/// assert_eq!((tile(sgemm::SQUARE_MIN_K - 1), tile(sgemm::SQUARE_MIN_K)), (Tile::WIDE_64, Tile::SQUARE));
/// # Ok(()) }
/// ```
pub const SQUARE_MIN_K: usize = 512;

/// The tile `sgemm` is offered for `shape` on `sm` SMs: [`tile_for`]'s narrow tile where it
/// gives one; for `k` under [`SQUARE_MIN_K`], 64 x 256 where its tiles put no more blocks on the
/// busiest SM than 128 x 128's (more would lengthen the launch: 5344x181x381, 168 tiles of 64 x
/// 256 against 126, ran 0.057 ms against 0.042 on the H200) and the grid holds its rows; 128 x
/// 128 otherwise. The planner keeps 64 x 256 where its split of `k` is estimated no slower
/// (`plan::SGEMM_WIDE_COST`).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm};
/// use kernels::matmul::sgemm::Tile;
/// let tile = |m, k, n| sgemm::tile_on(MatmulShape::new(m, k, n).unwrap(), 132);
/// assert_eq!(tile(15_128, 344, 177), Tile::WIDE_64); // 237 tiles against 238: 2 on the busiest SM
/// assert_eq!(tile(5344, 181, 381), Tile::SQUARE); // 168 against 126: 2 against 1
/// assert_eq!(tile(16_384, 1000, 32), Tile::TALL_32); // narrow
/// assert_eq!(tile(4096, 4096, 4096), Tile::SQUARE);
/// # Ok(()) }
/// ```
pub fn tile_on(shape: MatmulShape, sm: u32) -> Tile {
    let tile = tile_for(shape);
    if tile != Tile::SQUARE || shape.k >= SQUARE_MIN_K {
        return tile;
    }
    let wide = Tile::WIDE_64;
    let busiest = |t: Tile| tiles(shape, t).div_ceil(sm.max(1) as usize);
    if busiest(wide) <= busiest(Tile::SQUARE) && grid_over_c(shape, wide.block_n(), wide.block_m()).is_ok() {
        wide
    } else {
        Tile::SQUARE
    }
}

/// The tile of one of `sgemm`'s kernels (any operand type), from its PTX symbol.
///
/// ```
/// use hopper_kernels::matmul::sgemm;
/// use kernels::matmul::sgemm::Tile;
/// assert_eq!(sgemm::tile_of("sgemm_bf16_64x256"), Some(Tile::WIDE_64));
/// assert_eq!(sgemm::tile_of("sgemm"), Some(Tile::SQUARE));
/// assert_eq!(sgemm::tile_of("matmul_few_rows_1"), None);
/// ```
pub fn tile_of(kernel: &str) -> Option<Tile> {
    TILE_KERNELS.iter().find(|(_, names)| names.contains(&kernel)).map(|(tile, _)| *tile)
}

/// The PTX symbol of `sgemm`'s kernel for `tile` on operands of type `t`.
///
/// ```
/// use hopper_kernels::matmul::sgemm;
/// use kernels::matmul::{element::OperandType, sgemm::Tile};
/// assert_eq!(sgemm::kernel(Tile::SQUARE, OperandType::F32), "sgemm");
/// assert_eq!(sgemm::kernel(Tile::TALL_32, OperandType::Bf16), "sgemm_bf16_512x32");
/// ```
pub fn kernel(tile: Tile, t: OperandType) -> &'static str {
    // Every tile is one of Tile's constants, each in the table (the kernels crate's test
    // `every_tile_has_a_kernel_per_operand_type`); the square tile's row is never reached.
    let (_, names) = TILE_KERNELS.iter().find(|(k, _)| *k == tile).copied().unwrap_or(TILE_KERNELS[0]);
    names[t.index()]
}

/// Blocks of `sgemm` one SM keeps resident, every tile's `f32` kernel: 128 registers x 256
/// threads leave room for two (ptxas report of the release PTX; 65,536 registers per SM).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan, sgemm};
/// // 2 x 132 = 264 block slots: 256 tiles (2048^2 of C) fit in one wave, so k is not split.
/// let slots = sgemm::BLOCKS_PER_SM * MatmulDevice::H100.sm_count;
/// let shape = MatmulShape::new(2048, 1024, 2048)?;
/// assert!((sgemm::tiles(shape, sgemm::tile_on(shape, 132)) as u32) < slots);
/// let p = plan(MatmulVariant::Sgemm, shape, MatmulDevice::H100)?;
/// assert!(p.reason().ends_with("256 tiles on 264 block slots: no split"), "{}", p.reason());
/// # Ok(()) }
/// ```
pub const BLOCKS_PER_SM: u32 = 2;

/// Blocks of `tile`'s kernels one SM keeps resident, as the planner counts them: at 128 registers
/// a thread, [`BLOCKS_PER_SM`] of 256 threads, four of the 64 x 128 tile's 128, eight of the 64
/// x 64 tile's 64 (its BF16 and F16 kernels take 149 registers, six an SM: a difference the
/// planner leaves to its cost factor).
///
/// ```
/// use hopper_kernels::matmul::sgemm;
/// use kernels::matmul::sgemm::Tile;
/// assert_eq!(sgemm::blocks_per_sm(Tile::SQUARE), sgemm::BLOCKS_PER_SM);
/// assert_eq!(sgemm::blocks_per_sm(Tile::HALF_WIDE), 4);
/// assert_eq!(sgemm::blocks_per_sm(Tile::QUARTER), 8);
/// ```
pub const fn blocks_per_sm(tile: Tile) -> u32 {
    BLOCKS_PER_SM * THREADS / tile.threads()
}

/// Tiles of `C` the grid's x and y cover with `tile`.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm};
/// use kernels::matmul::sgemm::Tile;
/// // 128 x 128 tiles: ceil(1000 / 128) x ceil(1200 / 128).
/// assert_eq!(sgemm::tiles(MatmulShape::new(1000, 800, 1200)?, Tile::SQUARE), 8 * 10);
/// // 512 x 32 tiles: ceil(6358 / 512).
/// assert_eq!(sgemm::tiles(MatmulShape::new(6358, 11_159, 27)?, Tile::TALL_32), 13);
/// # Ok(()) }
/// ```
pub fn tiles(shape: MatmulShape, tile: Tile) -> usize {
    tile_count(shape, (tile.block_m(), tile.block_n()))
}

/// Tiles of `block_m x block_n` that cover `C`: the grid's x times y for both register-tiled
/// kernels.
pub(super) fn tile_count(shape: MatmulShape, (block_m, block_n): (u32, u32)) -> usize {
    shape.m.div_ceil(block_m as usize) * shape.n.div_ceil(block_n as usize)
}

/// One block of [`Tile::threads`](kernels::matmul::sgemm::Tile::threads) threads per `tile`
/// ([`tile_on`]) of `C`, columns on x, one z index per
/// split of `k`; the tiles live in static shared memory
/// ([`Tile::shared_bytes`](kernels::matmul::sgemm::Tile::shared_bytes)), so no dynamic shared
/// memory.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, SplitK, sgemm};
/// use kernels::matmul::sgemm::Tile;
/// let shape = MatmulShape::new(1000, 800, 1200)?;
/// let cfg = sgemm::plan(shape, Tile::SQUARE, SplitK::about(800, 3, 8))?;
/// // A block of 256 threads per tile, columns on x, a z index per split of k.
/// assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((10, 8, 3), (256, 1, 1), 0));
/// // CUDA allows at most 65,535 blocks along y.
/// assert!(sgemm::plan(MatmulShape::new(128 * 65_536, 1, 65)?, Tile::SQUARE, SplitK::none(1)).is_err());
/// // 64 x 64 tiles: a block of 64 threads each.
/// assert_eq!(sgemm::plan(shape, Tile::QUARTER, SplitK::none(800))?.block_dim, (64, 1, 1));
/// // 16,384 rows of 32 columns: 32 tiles of 512 x 32.
/// let narrow = MatmulShape::new(16_384, 4096, 32)?;
/// assert_eq!(sgemm::plan(narrow, Tile::TALL_32, SplitK::none(4096))?.grid_dim, (1, 32, 1));
/// # Ok(()) }
/// ```
pub fn plan(shape: MatmulShape, tile: Tile, split: SplitK) -> Result<LaunchConfig> {
    tile_plan(shape, split, (tile.block_m(), tile.block_n()), tile.threads())
}

/// One block of `threads` threads per `block_m x block_n` tile of `C`, columns on x, one z index
/// per split of `k`, static shared memory only: the launch of both register-tiled kernels.
pub(super) fn tile_plan(
    shape: MatmulShape,
    split: SplitK,
    (block_m, block_n): (u32, u32),
    threads: u32,
) -> Result<LaunchConfig> {
    let (gx, gy, _) = grid_over_c(shape, block_n, block_m)?;
    Ok(LaunchConfig { grid_dim: (gx, gy, split.splits), block_dim: (threads, 1, 1), shared_mem_bytes: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`plan`] on the tile [`tile_for`] gives.
    fn plan_for(shape: MatmulShape, split: SplitK) -> Result<LaunchConfig> {
        plan(shape, tile_for(shape), split)
    }

    #[test]
    fn sgemm_plan_gives_one_256_thread_block_per_128x128_tile_of_c() {
        let shape = MatmulShape::new(1000, 800, 1200).unwrap();
        let cfg = plan(shape, Tile::SQUARE, SplitK::none(800)).unwrap();
        assert_eq!(cfg.block_dim, (256, 1, 1));
        assert_eq!(cfg.grid_dim, (10, 8, 1)); // ceil(1200/128) columns, ceil(1000/128) rows
        assert_eq!(cfg.shared_mem_bytes, 0);
        assert_eq!(kernels::matmul::sgemm::SHARED_BYTES, 16_640);
        assert_eq!(tiles(shape, Tile::SQUARE), 80);
    }

    #[test]
    fn sgemm_plan_puts_splits_of_k_on_z() {
        let shape = MatmulShape::new(64, 8192, 64).unwrap();
        assert_eq!(plan(shape, Tile::SQUARE, SplitK { splits: 16, k_chunk: 512 }).unwrap().grid_dim, (1, 1, 16));
    }

    #[test]
    fn sgemm_plan_covers_edges_one_past_a_tile_and_keeps_columns_on_x() {
        let wide = plan_for(MatmulShape::new(65, 1, 129).unwrap(), SplitK::none(1)).unwrap();
        assert_eq!(wide.grid_dim, (2, 1, 1));
        let tall = plan_for(MatmulShape::new(129, 1, 65).unwrap(), SplitK::none(1)).unwrap();
        assert_eq!(tall.grid_dim, (1, 2, 1));
        // The narrow tiles: two 32 x 512 tiles for a row of 513, two 512 x 32 for 513 x 1.
        assert_eq!(plan_for(MatmulShape::new(1, 256, 513).unwrap(), SplitK::none(256)).unwrap().grid_dim, (2, 1, 1));
        assert_eq!(plan_for(MatmulShape::new(513, 256, 1).unwrap(), SplitK::none(256)).unwrap().grid_dim, (1, 2, 1));
        // Short k keeps the square tile.
        assert_eq!(plan_for(MatmulShape::new(513, 255, 1).unwrap(), SplitK::none(255)).unwrap().grid_dim, (1, 5, 1));
        assert_eq!(
            plan_for(MatmulShape::new(4096, 4096, 4096).unwrap(), SplitK::none(4096)).unwrap().grid_dim,
            (32, 32, 1)
        );
    }

    #[test]
    fn sgemm_plan_refuses_more_block_rows_than_cuda_allows() {
        let too_tall = MatmulShape::new(128 * 65_536, 1, 65).unwrap();
        assert!(plan_for(too_tall, SplitK::none(1)).unwrap_err().to_string().contains("grid"));
        assert!(plan_for(MatmulShape::new(128 * 65_535, 1, 65).unwrap(), SplitK::none(1)).is_ok());
        // The 512-row tiles of a narrow product reach 4x further.
        assert!(plan_for(MatmulShape::new(512 * 65_535, 256, 1).unwrap(), SplitK::none(256)).is_ok());
        assert!(plan_for(MatmulShape::new(512 * 65_536, 256, 1).unwrap(), SplitK::none(256)).is_err());
    }

    #[test]
    fn narrow_products_take_the_tile_of_their_narrow_side() {
        let tile = |m, n| tile_for(MatmulShape::new(m, 1000, n).unwrap());
        for (m, n, want) in [
            (16_384, 1, Tile::TALL_32),
            (16_384, 32, Tile::TALL_32),
            (16_384, 33, Tile::TALL_64),
            (16_384, 64, Tile::TALL_64),
            (16_384, 65, Tile::SQUARE),
            (1, 16_384, Tile::WIDE_32),
            (33, 16_384, Tile::WIDE_64),
            (65, 16_384, Tile::SQUARE),
            (32, 32, Tile::TALL_32),
            (20, 40, Tile::WIDE_32),
            (1000, 1000, Tile::SQUARE),
        ] {
            assert_eq!(tile(m, n), want, "{m} x {n}");
        }
        // Every tile's kernels exist for every operand type, and the plan's grid covers C.
        for (t, names) in TILE_KERNELS {
            for op in OperandType::ALL {
                assert_eq!(kernel(t, op), names[op.index()]);
                assert!(kernels::KERNEL_NAMES.contains(&kernel(t, op)));
            }
        }
        let cfg = plan_for(MatmulShape::new(6358, 11_159, 27).unwrap(), SplitK::about(11_159, 20, 8)).unwrap();
        assert_eq!(cfg.grid_dim, (1, 13, 20));
        let cfg = plan_for(MatmulShape::new(29, 3987, 15_107).unwrap(), SplitK::none(3987)).unwrap();
        assert_eq!(cfg.grid_dim, (30, 1, 1));
    }
}
