//! Launch planning for `kernels::matmul::short_k` (`matmul_short_k` and its BF16 and F16 forms):
//! products with `k <= 32`, whose time is the writing of `C`.

use super::shape::{MAX_GRID_Y, MatmulShape};
use crate::error::{Error, Result};
use cudarc::driver::LaunchConfig;
use kernels::matmul::element::OperandType;
use kernels::matmul::short_k::{
    KERNELS, MAX_K, THREADS, cols_per_thread, column_groups, grid, row_period, rows_per_thread,
};

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

/// A block of 128 threads per tile of rows of one residue modulo `row_period` by up to 512
/// columns of `C` (256 for `k` above 16), columns on x ([`kernels::matmul::short_k::grid`]);
/// `k` beyond 32 is refused
/// ([`Error::Unsupported`]): the kernel holds its columns of `B` in registers.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, short_k};
/// let cfg = short_k::plan(MatmulShape::new(7393, 1, 1103)?)?;
/// // ceil((1103 + 3) / 512) = 3 tiles across; odd n: 4 residues of ceil(1849 / 16) = 116 down.
/// assert_eq!((cfg.grid_dim, cfg.block_dim, cfg.shared_mem_bytes), ((3, 464, 1), (128, 1, 1), 0));
/// let err = short_k::plan(MatmulShape::new(64, 33, 64)?).unwrap_err().to_string();
/// assert!(err.contains("k = 33 > 32"), "{err}");
/// # Ok(()) }
/// ```
pub fn plan(shape: MatmulShape) -> Result<LaunchConfig> {
    if shape.k > MAX_K as usize {
        return Err(Error::Unsupported(format!(
            "short_k multiplies k = {} > {MAX_K}: it holds each thread's columns of B in registers; use sgemm or auto",
            shape.k
        )));
    }
    // The kernel takes u32 sides: the checked constructor refuses a shape built past them by
    // its public fields, naming the side.
    let shape = MatmulShape::new(shape.m, shape.k, shape.n)?;
    let (gx, gy) = grid(shape.m as u32, shape.k as u32, shape.n as u32);
    if gy > MAX_GRID_Y || gx > i32::MAX as u32 {
        return Err(Error::InvalidArgument(format!(
            "{shape} needs a short_k grid of {gx} x {gy} blocks; CUDA allows at most {} x {MAX_GRID_Y}",
            i32::MAX
        )));
    }
    Ok(LaunchConfig { grid_dim: (gx, gy, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 })
}

/// How the kernel covers `C` for `shape`, in words (the plan's reason): the columns a thread
/// stores at once, the threads across a tile, the rows a thread, and how many alignments the
/// rows of `C` take.
///
/// ```
/// use hopper_kernels::matmul::{MatmulShape, short_k};
/// let why = short_k::layout_reason(MatmulShape::new(5006, 6, 6049).unwrap());
/// assert_eq!(why, "4 columns a thread in 16-byte stores, 128 threads across 512 columns, 16 rows a thread; rows of 4 alignments against 16 bytes (n = 6049)");
/// let why = short_k::layout_reason(MatmulShape::new(9807, 3, 28).unwrap());
/// assert!(why.contains("8 threads across 32 columns, 16 rows at once, 2 rows a thread"), "{why}");
/// ```
pub fn layout_reason(shape: MatmulShape) -> String {
    let (m, k, n) = (
        shape.m.min(u32::MAX as usize) as u32,
        shape.k.min(MAX_K as usize) as u32,
        shape.n.min(u32::MAX as usize) as u32,
    );
    let w = cols_per_thread(k);
    let groups = column_groups(n, w);
    let rows = rows_per_thread(m, k, n);
    let lanes = THREADS / groups;
    let at_once = if lanes > 1 { format!(", {lanes} rows at once") } else { String::new() };
    let period = row_period(n, w);
    let alignments = if period > 1 {
        format!("rows of {period} alignments against {} bytes (n = {n})", 4 * w)
    } else {
        format!("rows aligned alike (n = {n})")
    };
    format!(
        "{w} columns a thread in {}-byte stores, {groups} {} across {} columns{at_once}, {} a thread; {alignments}",
        4 * w,
        if groups == 1 { "thread" } else { "threads" },
        groups * w,
        if rows == 1 { "1 row".to_string() } else { format!("{rows} rows") }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels::matmul::short_k::{
        A_TILE_FLOATS, MAX_BLOCK_ROWS, MAX_ROWS_PER_THREAD, a_stride, block_row, block_rows, group_start, misalignment,
    };

    /// Replays the kernel's stores over its grid for `(m, k, n)` with `C` starting `c_offset`
    /// floats past a 16-byte boundary, as its guards and its `whole` decide: every element of
    /// `C` written exactly once, each vector store on a boundary of its width, every row a
    /// thread reads of the staged `A` inside its block's tile. The error names the first
    /// violation.
    fn replay_stores(m: u32, k: u32, n: u32, c_offset: u32) -> std::result::Result<(), String> {
        let w = cols_per_thread(k);
        let (gx, gy) = grid(m, k, n);
        let (p, groups, rows) = (row_period(n, w), column_groups(n, w), rows_per_thread(m, k, n));
        let (lanes, block_rows) = (THREADS / groups, block_rows(m, k, n));
        if block_rows > MAX_BLOCK_ROWS || rows > MAX_ROWS_PER_THREAD || block_rows * a_stride(k) > A_TILE_FLOATS {
            return Err(format!("{block_rows} rows a block, {rows} a thread: past the staged tile"));
        }
        let mut written = vec![0u8; m as usize * n as usize];
        for y in 0..gy {
            if block_row(y, 0, p, block_rows) >= m {
                continue;
            }
            let lead = misalignment(c_offset, block_row(y, 0, p, block_rows), n, w);
            for (x, t) in (0..gx).flat_map(|x| (0..THREADS).map(move |t| (x, t))) {
                let first = group_start(x, t % groups, groups, lead, w);
                for r in 0..rows {
                    let row = block_row(y, r * lanes + t / groups, p, block_rows);
                    if row >= m {
                        continue;
                    }
                    if misalignment(c_offset, row, n, w) != lead {
                        return Err(format!("row {row} of block row {y} aligned unlike its first"));
                    }
                    let address = c_offset as i64 + row as i64 * n as i64 + first;
                    if first >= 0 && first + w as i64 <= n as i64 && address % w as i64 != 0 {
                        return Err(format!("vector store of ({row}, {first}) off its boundary"));
                    }
                    for col in (first..first + w as i64).filter(|&c| c >= 0 && c < n as i64) {
                        written[row as usize * n as usize + col as usize] += 1;
                    }
                }
            }
        }
        match written.iter().position(|&w| w != 1) {
            Some(i) => Err(format!("element {i} written {} times", written[i])),
            None => Ok(()),
        }
    }

    #[test]
    fn short_k_stores_cover_c_once_on_their_boundaries_on_tile_edges_and_narrow_outputs() {
        let shapes = [(1, 1), (3, 5), (17, 510), (33, 511), (16, 512), (40, 513), (70, 1103), (5, 2049), (64, 3)];
        let narrow = [(300, 17), (1000, 28), (999, 29), (513, 66), (2000, 130), (4000, 200)];
        for (m, n) in shapes.into_iter().chain(narrow) {
            for k in [1, 16, 17, 32] {
                for c_offset in 0..4 {
                    assert_eq!(replay_stores(m, k, n, c_offset), Ok(()), "{m} x {k} x {n}, C {c_offset} floats off");
                }
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        /// For any shape and any 4-byte alignment of `C`, the kernel's grid writes every element
        /// of `C` once, its 16- and 8-byte stores each on its own boundary.
        #[test]
        fn short_k_stores_cover_any_c_once_on_their_boundaries(
            (m, k, n) in (1u32..=700, 1u32..=32, 1u32..=1500),
            c_offset in 0u32..4,
        ) {
            proptest::prop_assert_eq!(replay_stores(m, k, n, c_offset), Ok(()));
        }
    }

    #[test]
    fn short_k_plan_covers_c_with_tiles_of_one_row_residue_up_to_512_columns_wide() {
        let cfg = |m, k, n| plan(MatmulShape::new(m, k, n).unwrap()).unwrap().grid_dim;
        // Small outputs: a row a thread, for blocks enough to fill the GPU.
        assert_eq!(cfg(16, 1, 508), (1, 16, 1));
        assert_eq!(cfg(16, 1, 512), (2, 16, 1));
        assert_eq!(cfg(17, 16, 513), (2, 20, 1));
        // Sixteen rows a thread still give 29 x 12 = 348 blocks, more than the 256 the grid
        // reaches for: one wave of latency-bound blocks.
        assert_eq!(cfg(150, 3, 14_397), (29, 12, 1));
        // A narrow C: 8 groups of 4 columns, 16 rows at once, 2 rows a thread (307 blocks).
        assert_eq!(cfg(9807, 3, 28), (1, 307, 1));
        // Above k = 16, two columns a thread: 256 a block, rows of one residue modulo 2.
        assert_eq!(cfg(8841, 28, 6665), (27, 554, 1));
        assert!(plan(MatmulShape::new(16, 33, 16).unwrap()).is_err());
        // Sides past u32, through the public fields: refused, naming the side.
        let err = plan(MatmulShape { m: 16, k: 4, n: u32::MAX as usize + 1 }).unwrap_err();
        assert!(matches!(&err, Error::LimitExceeded { what, value: 4_294_967_296, .. } if what == "n"), "{err}");
    }

    #[test]
    fn short_k_has_a_kernel_per_operand_type_in_the_ptx() {
        for t in OperandType::ALL {
            assert!(kernels::KERNEL_NAMES.contains(&kernel(t)), "{}", kernel(t));
        }
    }
}
