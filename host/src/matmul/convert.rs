//! Matrices converted between element types and layouts on the GPU, with the kernels the GEMM
//! plans prepare operands with (`kernels::matmul::convert`).

use super::desc::{GemmElement, Layout, Order};
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::{DevicePtr, DevicePtrMut, LaunchConfig, PushKernelArg};
use kernels::matmul::convert;

/// Enqueues `dst = convert(src)` for a `rows x cols` matrix on `gpu`'s stream: `src` in
/// `src_layout` (row- or column-major at its leading dimension), `dst` row-major at `dst_ld`
/// (elements; at least `cols`). Conversions to `f32` are exact, from `f32` to BF16 or F16 rounded
/// to nearest, ties to even (to F16, `|x| >= 65520` becomes an infinity); between equal types a
/// copy. `dst` may not overlap `src`.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{DType, Layout, convert_matrix};
/// let gpu = hopper_kernels::Gpu::open(0)?;
/// let a = gpu.stream().clone_htod(&vec![1.5f32; 64 * 32])?;
/// let mut a16 = gpu.stream().alloc_zeros::<half::bf16>(64 * 32)?;
/// convert_matrix(&gpu, &a, Layout::row_major(DType::F32), &mut a16, 32, (64, 32))?;
/// # Ok(()) }
/// ```
pub fn convert_matrix<S: GemmElement, D: GemmElement>(
    gpu: &Gpu,
    src: &impl DevicePtr<S>,
    src_layout: Layout,
    dst: &mut impl DevicePtrMut<D>,
    dst_ld: usize,
    (rows, cols): (usize, usize),
) -> Result<()> {
    if src_layout.dtype != S::DTYPE {
        return Err(Error::DTypeMismatch { operand: "src", expected: src_layout.dtype, got: S::DTYPE });
    }
    let kernel = convert::convert_kernel(S::DTYPE.name(), D::DTYPE.name())
        .ok_or_else(|| Error::Unsupported(format!("no conversion from {} to {}", S::DTYPE, D::DTYPE)))?;
    if rows == 0 || cols == 0 {
        return Err(Error::ZeroDimension { name: if rows == 0 { "rows" } else { "cols" } });
    }
    let min_src_ld = if src_layout.order == Order::RowMajor { cols } else { rows };
    let src_ld = src_layout.leading((rows, cols));
    if src_ld < min_src_ld {
        return Err(Error::LeadingDimension { operand: "src", ld: src_ld, min: min_src_ld });
    }
    if dst_ld < cols {
        return Err(Error::LeadingDimension { operand: "dst", ld: dst_ld, min: cols });
    }
    for (what, v) in [("rows", rows), ("cols", cols), ("src_ld", src_ld), ("dst_ld", dst_ld)] {
        if v > u32::MAX as usize {
            return Err(Error::LimitExceeded { what: what.into(), value: v as u64, limit: u32::MAX as u64 });
        }
    }
    let needed = src_layout.span((rows, cols));
    if src.len() < needed {
        return Err(Error::BufferTooSmall { buffer: "src", len: src.len(), needed });
    }
    let needed = (rows - 1) * dst_ld + cols;
    if dst.len() < needed {
        return Err(Error::BufferTooSmall { buffer: "dst", len: dst.len(), needed });
    }
    let (src_bytes, dst_bytes) = (src.len() * S::DTYPE.size(), dst.len() * D::DTYPE.size());
    let func = gpu.function(kernel)?;
    let stream = gpu.stream();
    let (src_ptr, _src_sync) = src.device_ptr(stream);
    let (dst_ptr, _dst_sync) = dst.device_ptr_mut(stream);
    if src_ptr < dst_ptr + dst_bytes as u64 && dst_ptr < src_ptr + src_bytes as u64 {
        return Err(Error::Overlap { written: "dst", read: "src" });
    }
    // The kernel reads the source row-major at its leading dimension, or transposed.
    let transposed = (src_layout.order == Order::ColMajor) as u32;
    let (r, c, sld, dld) = (rows as u32, cols as u32, src_ld as u32, dst_ld as u32);
    let mut builder = stream.launch_builder(&func);
    builder.arg(&src_ptr).arg(&dst_ptr).arg(&r).arg(&c).arg(&sld).arg(&transposed).arg(&dld);
    let cfg = convert_grid(rows, cols, transposed != 0);
    // SAFETY: the convert kernel's contract, checked above: the source holds the matrix at its
    // leading dimension, the destination (rows - 1) * dst_ld + cols elements, no overlap; the
    // block is TILE x TILE_ROWS.
    unsafe { builder.launch(cfg) }?;
    Ok(())
}

/// The convert kernel's grid over a `rows x cols` destination: tiles of `TILE x TILE` when
/// transposed, else blocks of `TILE_ROWS` rows of `ROW_GROUP * TILE` columns (the kernel's
/// thread mapping); rows beyond CUDA's y limit are grid-strided.
pub(crate) fn convert_grid(rows: usize, cols: usize, transposed: bool) -> LaunchConfig {
    let tile = convert::TILE as usize;
    let (block_cols, block_rows) = if transposed {
        (tile, tile)
    } else {
        ((convert::ROW_GROUP * convert::TILE) as usize, convert::TILE_ROWS as usize)
    };
    let x = cols.div_ceil(block_cols).max(1) as u32;
    let y = rows.div_ceil(block_rows).clamp(1, super::MAX_GRID_Y as usize) as u32;
    LaunchConfig { grid_dim: (x, y, 1), block_dim: (convert::TILE, convert::TILE_ROWS, 1), shared_mem_bytes: 0 }
}

/// One launch of a pair kernel ([`convert::CONVERT_PAIR_KERNELS`]) for two operands, each `(rows,
/// cols, transposed)`: the blocks of each one's [`convert_grid`] one after the other along a 1-D
/// grid, and those grids (`[x_a, y_a, x_b, y_b]`) for the kernel; `None` where their sum passes
/// CUDA's grid limit (the operands then take a launch each).
pub(crate) fn convert_pair_grid(a: (usize, usize, bool), b: (usize, usize, bool)) -> Option<(LaunchConfig, [u32; 4])> {
    let (ga, gb) = (convert_grid(a.0, a.1, a.2).grid_dim, convert_grid(b.0, b.1, b.2).grid_dim);
    let blocks = ga.0 as u64 * ga.1 as u64 + gb.0 as u64 * gb.1 as u64;
    (blocks <= i32::MAX as u64).then(|| {
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (convert::TILE, convert::TILE_ROWS, 1),
            shared_mem_bytes: 0,
        };
        (cfg, [ga.0, ga.1, gb.0, gb.1])
    })
}

#[cfg(test)]
mod grid_tests {
    use super::*;

    #[test]
    fn the_convert_grid_covers_every_element_in_both_mappings() {
        for (rows, cols) in [(1, 1), (31, 33), (4344, 10925), (100_000_000, 3), (3, 1000)] {
            let t = convert_grid(rows, cols, true);
            assert!(t.grid_dim.0 as usize * convert::TILE as usize >= cols);
            // Rows past the grid's y are grid-strided by the kernel: the grid needs only one row of blocks.
            assert!(t.grid_dim.1 >= 1 && t.grid_dim.1 <= super::super::MAX_GRID_Y);
            let r = convert_grid(rows, cols, false);
            assert!(r.grid_dim.0 as usize * (convert::ROW_GROUP * convert::TILE) as usize >= cols);
            assert!(r.grid_dim.0 as usize * (convert::ROW_GROUP * convert::TILE) as usize - cols < 128);
            assert!(
                r.grid_dim.1 as usize
                    >= rows.div_ceil(convert::TILE_ROWS as usize).min(super::super::MAX_GRID_Y as usize)
            );
            assert_eq!(
                (r.block_dim, t.block_dim),
                ((convert::TILE, convert::TILE_ROWS, 1), (convert::TILE, convert::TILE_ROWS, 1))
            );
        }
    }

    #[test]
    fn the_pair_grid_gives_each_operand_its_own_grid_one_after_the_other() {
        let (a, b) = ((7700, 26, false), (26, 433, true));
        let (cfg, [xa, ya, xb, yb]) = convert_pair_grid(a, b).unwrap();
        assert_eq!((xa, ya), (convert_grid(7700, 26, false).grid_dim.0, convert_grid(7700, 26, false).grid_dim.1));
        assert_eq!((xb, yb), (convert_grid(26, 433, true).grid_dim.0, convert_grid(26, 433, true).grid_dim.1));
        assert_eq!(cfg.grid_dim, (xa * ya + xb * yb, 1, 1));
        assert_eq!(cfg.block_dim, (convert::TILE, convert::TILE_ROWS, 1));
        // Blocks past a 1-D grid's limit: a launch each.
        assert!(convert_pair_grid((1 << 20, 1 << 31, false), b).is_none());
    }
}
