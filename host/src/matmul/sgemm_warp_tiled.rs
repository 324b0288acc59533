//! Launch planning for `kernels::matmul::sgemm_warp_tiled`.

use super::shape::MatmulShape;
use super::split_k::SplitK;
use crate::error::Result;
use cudarc::driver::LaunchConfig;
use kernels::matmul::sgemm_warp_tiled::{BLOCK_M, BLOCK_N, THREADS};

/// Blocks of `sgemm_warp_tiled` one SM keeps resident: 235 registers x 128 threads leave room
/// for two (ptxas report of the release PTX; 65,536 registers per SM).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, PlanOptions, PrecisionPolicy, plan_with};
/// use hopper_kernels::matmul::sgemm_warp_tiled::{BLOCKS_PER_SM, tiles};
/// // 4096^2 of C is 1024 tiles: 3.9 waves of 2 x 132 blocks, 97% full, so it is warp-tiled.
/// let shape = MatmulShape::new(4096, 4096, 4096)?;
/// assert_eq!((tiles(shape), BLOCKS_PER_SM * 132), (1024, 264));
/// let fp32 = PlanOptions { policy: PrecisionPolicy::Highest, split: None, tile: None, ..PlanOptions::default() };
/// let p = plan_with(MatmulVariant::Auto, shape, MatmulDevice::H100, fp32)?;
/// assert!(p.reason().contains("1024 tiles on 264 block slots fill 97% of their waves"), "{}", p.reason());
/// # Ok(()) }
/// ```
pub const BLOCKS_PER_SM: u32 = 2;

/// Tiles of `C` the grid's x and y cover.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm, sgemm_warp_tiled};
/// use kernels::matmul::sgemm::Tile;
/// let shape = MatmulShape::new(1000, 800, 1200)?;
/// // The same 128 x 128 tiles as sgemm's square ones.
/// assert_eq!(sgemm_warp_tiled::tiles(shape), sgemm::tiles(shape, Tile::SQUARE));
/// # Ok(()) }
/// ```
pub fn tiles(shape: MatmulShape) -> usize {
    super::sgemm::tile_count(shape, (BLOCK_M, BLOCK_N))
}

/// One block of `THREADS` threads per `BLOCK_M x BLOCK_N` tile of `C`, columns on x, one z
/// index per split of `k`; static shared memory only
/// (`kernels::matmul::sgemm_warp_tiled::SHARED_BYTES`).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, SplitK, sgemm_warp_tiled};
/// let cfg = sgemm_warp_tiled::plan(MatmulShape::new(1000, 800, 1200)?, SplitK { splits: 3, k_chunk: 272 })?;
/// // Four warps per 128 x 128 tile.
/// assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((10, 8, 3), (128, 1, 1), 0));
/// # Ok(()) }
/// ```
pub fn plan(shape: MatmulShape, split: SplitK) -> Result<LaunchConfig> {
    super::sgemm::tile_plan(shape, split, (BLOCK_M, BLOCK_N), THREADS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warp_tiled_plan_gives_one_128_thread_block_per_128x128_tile_and_splits_on_z() {
        let shape = MatmulShape::new(1000, 800, 1200).unwrap();
        let cfg = plan(shape, SplitK { splits: 3, k_chunk: 272 }).unwrap();
        assert_eq!((cfg.block_dim, cfg.grid_dim, cfg.shared_mem_bytes), ((128, 1, 1), (10, 8, 3), 0));
        assert_eq!(kernels::matmul::sgemm_warp_tiled::SHARED_BYTES, 16_640);
        // The same tiles as sgemm, so the planner's wave arithmetic serves both.
        assert_eq!((BLOCK_M, BLOCK_N), (kernels::matmul::sgemm::BLOCK_M, kernels::matmul::sgemm::BLOCK_N));
    }
}
