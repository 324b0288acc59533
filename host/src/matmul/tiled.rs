//! Launch planning for `kernels::matmul_tiled` (`matmul_tiled16`, `matmul_tiled32`).

use super::shape::{MatmulShape, grid_over_c};
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;

/// Tile sizes the PTX has a kernel for.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, tiled};
/// let shape = MatmulShape::new(64, 64, 64)?;
/// assert!(tiled::TILES.iter().all(|&t| tiled::plan(t, shape).is_ok()));
/// let err = tiled::plan(8, shape).unwrap_err().to_string();
/// assert_eq!(err, "invalid argument: no tiled kernel for tile 8; tiles: [16, 32]");
/// # Ok(()) }
/// ```
pub const TILES: [u32; 2] = [16, 32];

/// A `tile x tile` block per `tile x tile` tile of `C`, columns on x; the tiles live in static
/// shared memory (`kernels::matmul::tiled::shared_bytes`), so no dynamic shared memory.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, tiled};
/// let cfg = tiled::plan(32, MatmulShape::new(1000, 800, 1200)?)?;
/// // 32 x 32 blocks: ceil(1200 / 32) = 38 across, ceil(1000 / 32) = 32 down.
/// assert_eq!((cfg.grid_dim, cfg.block_dim), ((38, 32, 1), (32, 32, 1)));
/// # Ok(()) }
/// ```
pub fn plan(tile: u32, shape: MatmulShape) -> Result<LaunchConfig> {
    if !TILES.contains(&tile) {
        return Err(Error::InvalidArgument(format!("no tiled kernel for tile {tile}; tiles: {TILES:?}")));
    }
    Ok(LaunchConfig { grid_dim: grid_over_c(shape, tile, tile)?, block_dim: (tile, tile, 1), shared_mem_bytes: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiled_plan_uses_square_blocks_of_the_tile_and_ceil_grids() {
        let shape = MatmulShape::new(1000, 800, 1200).unwrap();
        let cfg16 = plan(16, shape).unwrap();
        assert_eq!((cfg16.grid_dim, cfg16.block_dim), ((75, 63, 1), (16, 16, 1)));
        let cfg32 = plan(32, shape).unwrap();
        assert_eq!((cfg32.grid_dim, cfg32.block_dim), ((38, 32, 1), (32, 32, 1)));
        assert_eq!(kernels::matmul::tiled::shared_bytes(32), 8192);
    }

    #[test]
    fn tiled_plan_rejects_tiles_without_a_kernel() {
        assert!(plan(8, MatmulShape::new(8, 8, 8).unwrap()).unwrap_err().to_string().contains("no tiled kernel"));
    }
}
