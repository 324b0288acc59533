//! Launch planning for `kernels::matmul::short_k` (`matmul_short_k` and its BF16 and F16 forms):
//! products with `k <= 16`, whose time is the writing of `C`.

use super::shape::{MatmulShape, grid_over_c};
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;
use kernels::matmul::element::OperandType;
use kernels::matmul::short_k::{BLOCK_M, BLOCK_N, KERNELS, MAX_K, THREADS};

/// The kernel on operands of type `t`.
///
/// ```
/// use hopper_kernels::matmul::short_k;
/// use kernels::matmul::element::OperandType;
/// assert_eq!(short_k::kernel(OperandType::F32), "matmul_short_k");
/// assert_eq!(short_k::kernel(OperandType::Bf16), "matmul_short_k_bf16");
/// ```
pub fn kernel(t: OperandType) -> &'static str {
    KERNELS[t.index()]
}

/// A block of 256 threads per tile of 16 rows by 512 columns of `C`, columns on x; `k` beyond
/// 16 is refused ([`Error::Unsupported`]): the kernel holds its columns of `B` in registers.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, short_k};
/// let cfg = short_k::plan(MatmulShape::new(7393, 1, 1103)?)?;
/// // ceil(1103 / 512) = 3 tiles across, ceil(7393 / 16) = 463 down.
/// assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((3, 463, 1), (256, 1, 1), 0));
/// let err = short_k::plan(MatmulShape::new(64, 17, 64)?).unwrap_err().to_string();
/// assert!(err.contains("k = 17 > 16"), "{err}");
/// # Ok(()) }
/// ```
pub fn plan(shape: MatmulShape) -> Result<LaunchConfig> {
    if shape.k > MAX_K as usize {
        return Err(Error::Unsupported(format!(
            "short_k multiplies k = {} > {MAX_K}: it holds each thread's columns of B in registers; use sgemm or auto",
            shape.k
        )));
    }
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
    fn short_k_plan_covers_c_with_16_by_512_tiles_one_past_an_edge_included() {
        let cfg = |m, k, n| plan(MatmulShape::new(m, k, n).unwrap()).unwrap().grid_dim;
        assert_eq!(cfg(16, 1, 512), (1, 1, 1));
        assert_eq!(cfg(17, 16, 513), (2, 2, 1));
        assert_eq!(cfg(150, 3, 14_397), (29, 10, 1));
        assert!(plan(MatmulShape::new(16, 17, 16).unwrap()).is_err());
    }

    #[test]
    fn short_k_has_a_kernel_per_operand_type_in_the_ptx() {
        for t in OperandType::ALL {
            assert!(kernels::KERNEL_NAMES.contains(&kernel(t)), "{}", kernel(t));
        }
    }
}
