//! Launch planning for `kernels::sgemm`.

use crate::error::Result;
use crate::matmul::{MatmulShape, grid_over_c};
use cudarc::driver::LaunchConfig;
use kernels::sgemm::{BLOCK_M, BLOCK_N, THREADS};

/// One block of `THREADS` threads per `BLOCK_M x BLOCK_N` tile of `C`, columns on x; the tiles
/// live in static shared memory (`kernels::sgemm::SHARED_BYTES`), so no dynamic shared memory.
pub fn plan(shape: MatmulShape) -> Result<LaunchConfig> {
    Ok(LaunchConfig {
        grid_dim: grid_over_c(shape, BLOCK_N, BLOCK_M)?,
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sgemm_plan_gives_one_256_thread_block_per_128x128_tile_of_c() {
        let cfg = plan(MatmulShape::new(1000, 800, 1200).unwrap()).unwrap();
        assert_eq!(cfg.block_dim, (256, 1, 1));
        assert_eq!(cfg.grid_dim, (10, 8, 1)); // ceil(1200/128) columns, ceil(1000/128) rows
        assert_eq!(cfg.shared_mem_bytes, 0);
        assert_eq!(kernels::sgemm::SHARED_BYTES, 16_640);
    }

    #[test]
    fn sgemm_plan_covers_edges_one_past_a_tile_and_keeps_columns_on_x() {
        let wide = plan(MatmulShape::new(1, 1, 129).unwrap()).unwrap();
        assert_eq!(wide.grid_dim, (2, 1, 1));
        let tall = plan(MatmulShape::new(129, 1, 1).unwrap()).unwrap();
        assert_eq!(tall.grid_dim, (1, 2, 1));
        assert_eq!(plan(MatmulShape::new(4096, 4096, 4096).unwrap()).unwrap().grid_dim, (32, 32, 1));
    }

    #[test]
    fn sgemm_plan_refuses_more_block_rows_than_cuda_allows() {
        let too_tall = MatmulShape::new(128 * 65_536, 1, 1).unwrap();
        assert!(plan(too_tall).unwrap_err().to_string().contains("grid"));
        assert!(plan(MatmulShape::new(128 * 65_535, 1, 1).unwrap()).is_ok());
    }
}
