//! Launch planning for `kernels::matmul::sgemm`.

use super::shape::{MatmulShape, grid_over_c};
use super::split_k::SplitK;
use crate::error::Result;
use cudarc::driver::LaunchConfig;
use kernels::matmul::sgemm::{BLOCK_M, BLOCK_N, THREADS};

/// Blocks of `sgemm` one SM keeps resident: 126 registers x 256 threads leave room for two
/// (ptxas report of the release PTX; 65,536 registers per SM).
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulDevice, MatmulShape, MatmulVariant, plan, sgemm};
/// // 2 x 132 = 264 block slots: 256 tiles (2048^2 of C) fit in one wave, so k is not split.
/// let slots = sgemm::BLOCKS_PER_SM * MatmulDevice::H100.sm_count;
/// let shape = MatmulShape::new(2048, 1024, 2048)?;
/// assert!((sgemm::tiles(shape) as u32) < slots);
/// let p = plan(MatmulVariant::Sgemm, shape, MatmulDevice::H100)?;
/// assert!(p.reason().ends_with("256 tiles on 264 block slots: no split"), "{}", p.reason());
/// # Ok(()) }
/// ```
pub const BLOCKS_PER_SM: u32 = 2;

/// Tiles of `C` the grid's x and y cover.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, sgemm};
/// // 128 x 128 tiles: ceil(1000 / 128) x ceil(1200 / 128).
/// assert_eq!(sgemm::tiles(MatmulShape::new(1000, 800, 1200)?), 8 * 10);
/// # Ok(()) }
/// ```
pub fn tiles(shape: MatmulShape) -> usize {
    tile_count(shape, (BLOCK_M, BLOCK_N))
}

/// Tiles of `block_m x block_n` that cover `C`: the grid's x times y for both register-tiled
/// kernels.
pub(super) fn tile_count(shape: MatmulShape, (block_m, block_n): (u32, u32)) -> usize {
    shape.m.div_ceil(block_m as usize) * shape.n.div_ceil(block_n as usize)
}

/// One block of `THREADS` threads per `BLOCK_M x BLOCK_N` tile of `C`, columns on x, one z
/// index per split of `k`; the tiles live in static shared memory
/// (`kernels::matmul::sgemm::SHARED_BYTES`), so no dynamic shared memory.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, SplitK, sgemm};
/// let shape = MatmulShape::new(1000, 800, 1200)?;
/// let cfg = sgemm::plan(shape, SplitK::about(800, 3, 8))?;
/// // A block of 256 threads per tile, columns on x, a z index per split of k.
/// assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((10, 8, 3), (256, 1, 1), 0));
/// // CUDA allows at most 65,535 blocks along y.
/// assert!(sgemm::plan(MatmulShape::new(128 * 65_536, 1, 1)?, SplitK::none(1)).is_err());
/// # Ok(()) }
/// ```
pub fn plan(shape: MatmulShape, split: SplitK) -> Result<LaunchConfig> {
    tile_plan(shape, split, (BLOCK_M, BLOCK_N), THREADS)
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

    #[test]
    fn sgemm_plan_gives_one_256_thread_block_per_128x128_tile_of_c() {
        let shape = MatmulShape::new(1000, 800, 1200).unwrap();
        let cfg = plan(shape, SplitK::none(800)).unwrap();
        assert_eq!(cfg.block_dim, (256, 1, 1));
        assert_eq!(cfg.grid_dim, (10, 8, 1)); // ceil(1200/128) columns, ceil(1000/128) rows
        assert_eq!(cfg.shared_mem_bytes, 0);
        assert_eq!(kernels::matmul::sgemm::SHARED_BYTES, 16_640);
        assert_eq!(tiles(shape), 80);
    }

    #[test]
    fn sgemm_plan_puts_splits_of_k_on_z() {
        let shape = MatmulShape::new(64, 8192, 64).unwrap();
        assert_eq!(plan(shape, SplitK { splits: 16, k_chunk: 512 }).unwrap().grid_dim, (1, 1, 16));
    }

    #[test]
    fn sgemm_plan_covers_edges_one_past_a_tile_and_keeps_columns_on_x() {
        let wide = plan(MatmulShape::new(1, 1, 129).unwrap(), SplitK::none(1)).unwrap();
        assert_eq!(wide.grid_dim, (2, 1, 1));
        let tall = plan(MatmulShape::new(129, 1, 1).unwrap(), SplitK::none(1)).unwrap();
        assert_eq!(tall.grid_dim, (1, 2, 1));
        assert_eq!(
            plan(MatmulShape::new(4096, 4096, 4096).unwrap(), SplitK::none(4096)).unwrap().grid_dim,
            (32, 32, 1)
        );
    }

    #[test]
    fn sgemm_plan_refuses_more_block_rows_than_cuda_allows() {
        let too_tall = MatmulShape::new(128 * 65_536, 1, 1).unwrap();
        assert!(plan(too_tall, SplitK::none(1)).unwrap_err().to_string().contains("grid"));
        assert!(plan(MatmulShape::new(128 * 65_535, 1, 1).unwrap(), SplitK::none(1)).is_ok());
    }
}
