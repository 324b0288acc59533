//! Launch planning for `kernels::matmul::skinny` (`matmul_few_rows`, `matmul_few_cols`).

use super::shape::MatmulShape;
use super::split_k::SplitK;
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;
use kernels::matmul::skinny::{
    FEW_COLS_ROWS_PER_BLOCK, FEW_COLS_SHORT_K_THREADS, FEW_COLS_THREADS, FEW_ROWS_BLOCK_COLS, FEW_ROWS_MAX_M,
    FEW_ROWS_THREADS, GEMV_BLOCK_COLS, GEMV_THREADS, few_cols_shared_rows_per_block, few_cols_shared_threads,
    few_cols_shares_b, few_cols_takes_short_k,
};

/// Blocks along x of `matmul_few_rows` for `shape`: one per `FEW_ROWS_BLOCK_COLS` columns.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, skinny};
/// // 512 columns of C per block.
/// assert_eq!(skinny::few_rows_blocks(MatmulShape::new(1, 4096, 65_536)?), 128);
/// assert_eq!(skinny::few_rows_blocks(MatmulShape::new(16, 1, 513)?), 2);
/// # Ok(()) }
/// ```
pub fn few_rows_blocks(shape: MatmulShape) -> usize {
    shape.n.div_ceil(FEW_ROWS_BLOCK_COLS as usize)
}

/// Blocks along x of `matmul_few_cols` for `shape`: one per `FEW_COLS_ROWS_PER_BLOCK` rows, or
/// for `matmul_few_cols_shared` (`kernels::matmul::skinny::few_cols_shares_b`) one per
/// `few_cols_shared_rows_per_block(n)`.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, skinny};
/// // 8 rows of C per block, a warp each.
/// assert_eq!(skinny::few_cols_blocks(MatmulShape::new(65_536, 4096, 1)?), 8192);
/// assert_eq!(skinny::few_cols_blocks(MatmulShape::new(3, 100_000, 5)?), 1);
/// // 16 columns of 16,384 rows: B shared by 48 rows a block.
/// assert_eq!(skinny::few_cols_blocks(MatmulShape::new(16_384, 16_384, 16)?), 342);
/// # Ok(()) }
/// ```
pub fn few_cols_blocks(shape: MatmulShape) -> usize {
    shape.m.div_ceil(few_cols_block(shape).1 as usize)
}

/// Threads and rows of `C` per block of the `few_cols` kernel for `shape`.
fn few_cols_block(shape: MatmulShape) -> (u32, u32) {
    let [m, k, n] = [shape.m, shape.k, shape.n].map(|x| x.min(u32::MAX as usize) as u32);
    if few_cols_takes_short_k(k) {
        (FEW_COLS_SHORT_K_THREADS, FEW_COLS_SHORT_K_THREADS)
    } else if few_cols_shares_b(m, n) {
        (few_cols_shared_threads(n), few_cols_shared_rows_per_block(n))
    } else {
        (FEW_COLS_THREADS, FEW_COLS_ROWS_PER_BLOCK)
    }
}

fn grid_x(blocks: usize, what: &str, shape: MatmulShape) -> Result<u32> {
    u32::try_from(blocks).ok().filter(|&b| b <= i32::MAX as u32).ok_or_else(|| {
        Error::InvalidArgument(format!("{shape} needs {blocks} blocks of {what}; CUDA allows at most {}", i32::MAX))
    })
}

/// `matmul_few_rows`: one `FEW_ROWS_THREADS`-thread block per `FEW_ROWS_BLOCK_COLS` columns of
/// `C`, one z index per split; no dynamic shared memory (`matmul_few_rows_{8,16}` declare their
/// 32 KiB panel of `A` statically). Refuses `m > FEW_ROWS_MAX_M`.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, SplitK, skinny};
/// let cfg = skinny::plan_few_rows(MatmulShape::new(1, 4096, 65_536)?, SplitK { splits: 5, k_chunk: 824 })?;
/// assert_eq!((cfg.grid_dim, cfg.block_dim), ((128, 1, 5), (128, 1, 1)));
/// let err = skinny::plan_few_rows(MatmulShape::new(17, 4, 4)?, SplitK::none(4)).unwrap_err().to_string();
/// assert!(err.contains("few_rows multiplies at most 16 rows"), "{err}");
/// # Ok(()) }
/// ```
pub fn plan_few_rows(shape: MatmulShape, split: SplitK) -> Result<LaunchConfig> {
    let blocks = narrow_blocks(shape.m, FEW_ROWS_MAX_M, "few_rows", "rows", "m", few_rows_blocks(shape), shape)?;
    Ok(LaunchConfig { grid_dim: (blocks, 1, split.splits), block_dim: (FEW_ROWS_THREADS, 1, 1), shared_mem_bytes: 0 })
}

/// Blocks along x of `matmul_gemv` for `shape`: one per `GEMV_BLOCK_COLS` columns.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, skinny};
/// // 32 columns of C per block.
/// assert_eq!(skinny::gemv_blocks(MatmulShape::new(1, 4096, 4096)?), 128);
/// assert_eq!(skinny::gemv_blocks(MatmulShape::new(1, 4096, 33)?), 2);
/// # Ok(()) }
/// ```
pub fn gemv_blocks(shape: MatmulShape) -> usize {
    shape.n.div_ceil(GEMV_BLOCK_COLS as usize)
}

/// `matmul_gemv`: one `GEMV_THREADS`-thread block per `GEMV_BLOCK_COLS` columns of `C`, one z
/// index per split; no dynamic shared memory. Refuses `m > 1`.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, SplitK, skinny};
/// let cfg = skinny::plan_gemv(MatmulShape::new(1, 4096, 1024)?, SplitK { splits: 4, k_chunk: 1024 })?;
/// assert_eq!((cfg.grid_dim, cfg.block_dim), ((32, 1, 4), (512, 1, 1)));
/// let err = skinny::plan_gemv(MatmulShape::new(2, 4, 4)?, SplitK::none(4)).unwrap_err().to_string();
/// assert!(err.contains("gemv multiplies one row"), "{err}");
/// # Ok(()) }
/// ```
pub fn plan_gemv(shape: MatmulShape, split: SplitK) -> Result<LaunchConfig> {
    if shape.m != 1 {
        return Err(Error::InvalidArgument(format!(
            "gemv multiplies one row of A; {shape} has m = {}: use few_rows or auto",
            shape.m
        )));
    }
    let blocks = grid_x(gemv_blocks(shape), "gemv", shape)?;
    Ok(LaunchConfig { grid_dim: (blocks, 1, split.splits), block_dim: (GEMV_THREADS, 1, 1), shared_mem_bytes: 0 })
}

/// `matmul_few_cols`: one `FEW_COLS_THREADS`-thread block (a warp per row) per
/// `FEW_COLS_ROWS_PER_BLOCK` rows of `C`, for `matmul_few_cols_shared` (above 16 rows, from 2
/// columns) one block of `few_cols_shared_threads(n)` threads per four rows a warp, and for
/// `matmul_few_cols_short_k` (`k` up to `FEW_COLS_SHORT_K_MAX_K`) one block of
/// `FEW_COLS_SHORT_K_THREADS` threads per as many rows; one z index per split; no dynamic shared
/// memory. Refuses `n > FEW_COLS_MAX_N` with 16 rows or fewer, `n > FEW_COLS_SHARED_MAX_N` above.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, SplitK, skinny};
/// let cfg = skinny::plan_few_cols(MatmulShape::new(65_536, 4096, 1)?, SplitK::none(4096))?;
/// assert_eq!((cfg.grid_dim, cfg.block_dim), ((8192, 1, 1), (256, 1, 1)));
/// // 16 columns: 12 warps of 4 rows a block.
/// let shared = skinny::plan_few_cols(MatmulShape::new(480, 4096, 16)?, SplitK::none(4096))?;
/// assert_eq!((shared.grid_dim, shared.block_dim), ((10, 1, 1), (384, 1, 1)));
/// let err = skinny::plan_few_cols(MatmulShape::new(4, 4, 17)?, SplitK::none(4)).unwrap_err().to_string();
/// assert!(err.contains("few_cols multiplies at most 16 columns"), "{err}");
/// // Above 16 rows, up to 32 columns: 12 warps of 2 rows.
/// assert_eq!(skinny::plan_few_cols(MatmulShape::new(480, 40, 32)?, SplitK::none(40))?.grid_dim, (20, 1, 1));
/// assert!(skinny::plan_few_cols(MatmulShape::new(480, 4, 33)?, SplitK::none(4)).is_err());
/// // Rows of A of at most 32 elements: a thread a row, 128 rows a block.
/// let short = skinny::plan_few_cols(MatmulShape::new(8098, 3, 1)?, SplitK::none(3))?;
/// assert_eq!((short.grid_dim, short.block_dim), ((64, 1, 1), (128, 1, 1)));
/// # Ok(()) }
/// ```
pub fn plan_few_cols(shape: MatmulShape, split: SplitK) -> Result<LaunchConfig> {
    let limit = kernels::matmul::skinny::few_cols_max_n(shape.m.min(u32::MAX as usize) as u32);
    let blocks = narrow_blocks(shape.n, limit, "few_cols", "columns", "n", few_cols_blocks(shape), shape)?;
    let threads = few_cols_block(shape).0;
    Ok(LaunchConfig { grid_dim: (blocks, 1, split.splits), block_dim: (threads, 1, 1), shared_mem_bytes: 0 })
}

/// The grid's x extent of a narrow kernel, after checking its narrow side (`side` = `len`)
/// against its limit.
fn narrow_blocks(
    len: usize,
    limit: u32,
    kernel: &str,
    what: &str,
    side: &str,
    blocks: usize,
    shape: MatmulShape,
) -> Result<u32> {
    if len > limit as usize {
        return Err(Error::InvalidArgument(format!(
            "{kernel} multiplies at most {limit} {what}; {shape} has {side} = {len}: use auto or sgemm"
        )));
    }
    grid_x(blocks, kernel, shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_rows_gives_a_block_per_512_columns_and_refuses_tall_shapes() {
        let s = MatmulShape::new(1, 4096, 65_536).unwrap();
        let cfg = plan_few_rows(s, SplitK { splits: 5, k_chunk: 824 }).unwrap();
        assert_eq!((cfg.grid_dim, cfg.block_dim), ((128, 1, 5), (128, 1, 1)));
        assert_eq!(plan_few_rows(MatmulShape::new(16, 1, 513).unwrap(), SplitK::none(1)).unwrap().grid_dim, (2, 1, 1));
        let err = plan_few_rows(MatmulShape::new(17, 4, 4).unwrap(), SplitK::none(4)).unwrap_err().to_string();
        assert!(err.contains("at most 16 rows"), "{err}");
    }

    #[test]
    fn few_cols_gives_a_warp_per_row_and_refuses_wide_shapes() {
        let s = MatmulShape::new(65_536, 4096, 1).unwrap();
        let cfg = plan_few_cols(s, SplitK::none(4096)).unwrap();
        assert_eq!((cfg.grid_dim, cfg.block_dim), ((8192, 1, 1), (256, 1, 1)));
        assert_eq!(plan_few_cols(MatmulShape::new(3, 100_000, 5).unwrap(), SplitK::none(1)).unwrap().grid_dim.0, 1);
        let err = plan_few_cols(MatmulShape::new(4, 4, 17).unwrap(), SplitK::none(4)).unwrap_err().to_string();
        assert!(err.contains("at most 16 columns"), "{err}");
    }
}
