//! Launch planning for `kernels::matmul::sgemm_warp_tiled`.

use super::shape::MatmulShape;
use super::split_k::SplitK;
use crate::error::Result;
use cudarc::driver::LaunchConfig;
use kernels::matmul::sgemm_warp_tiled::{BLOCK_M, BLOCK_N, THREADS};

/// Blocks of `sgemm_warp_tiled` one SM keeps resident: 235 registers x 128 threads leave room
/// for two (ptxas report of the release PTX; 65,536 registers per SM).
pub const BLOCKS_PER_SM: u32 = 2;

/// Tiles of `C` the grid's x and y cover.
pub fn tiles(shape: MatmulShape) -> usize {
    super::sgemm::tile_count(shape, (BLOCK_M, BLOCK_N))
}

/// One block of `THREADS` threads per `BLOCK_M x BLOCK_N` tile of `C`, columns on x, one z
/// index per split of `k`; static shared memory only
/// (`kernels::matmul::sgemm_warp_tiled::SHARED_BYTES`).
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
