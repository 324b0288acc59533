//! Launch planning for `kernels::matmul_naive`.

use super::shape::{MatmulShape, grid_over_c};
use crate::error::Result;
use cudarc::driver::LaunchConfig;
use kernels::matmul::naive::{BLOCK_X, BLOCK_Y};

/// One thread per element of `C`: `BLOCK_X x BLOCK_Y` blocks over `C`, columns on x.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, naive};
/// let cfg = naive::plan(MatmulShape::new(1000, 800, 1200)?)?;
/// // 16 x 16 threads per block; 1200 columns of C on x (75 blocks), 1000 rows on y (63).
/// assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((75, 63, 1), (16, 16, 1), 0));
/// # Ok(()) }
/// ```
pub fn plan(shape: MatmulShape) -> Result<LaunchConfig> {
    Ok(LaunchConfig {
        grid_dim: grid_over_c(shape, BLOCK_X, BLOCK_Y)?,
        block_dim: (BLOCK_X, BLOCK_Y, 1),
        shared_mem_bytes: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naive_plan_gives_one_thread_per_output_on_rectangular_shapes() {
        let cfg = plan(MatmulShape::new(1000, 800, 1200).unwrap()).unwrap();
        assert_eq!(cfg.block_dim, (16, 16, 1));
        assert_eq!(cfg.grid_dim, (75, 63, 1)); // 1200/16 columns, ceil(1000/16) rows
        assert_eq!(cfg.shared_mem_bytes, 0);
    }
}
