//! The problem every matmul kernel solves, and the grid arithmetic the planners share.

use crate::error::{Error, Result};

/// `C[m x n] = A[m x k] * B[k x n]`, row-major `f32`.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::MatmulShape;
/// // m, k, n (in the order of A and B; `GemmDesc::new` takes cuBLAS's m, n, k).
/// let s = MatmulShape::new(1000, 800, 1200)?;
/// assert_eq!((s.m, s.k, s.n), (1000, 800, 1200));
/// assert_eq!(s.to_string(), "1000x800x1200");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct MatmulShape {
    /// Rows of `A` and `C`.
    pub m: usize,
    /// Columns of `A`, rows of `B`.
    pub k: usize,
    /// Columns of `B` and `C`.
    pub n: usize,
}

impl MatmulShape {
    /// A shape whose sizes are all in `1..=u32::MAX` (the kernels take `u32` sizes).
    ///
    /// ```
    /// use hopper_kernels::{Error, matmul::MatmulShape};
    /// assert!(MatmulShape::new(1, 1, u32::MAX as usize).is_ok());
    /// assert!(matches!(MatmulShape::new(4, 0, 4), Err(Error::ZeroDimension { name: "k" })));
    /// let err = MatmulShape::new(1, 1, u32::MAX as usize + 1).unwrap_err();
    /// assert_eq!(err.to_string(), "n = 4294967296 exceeds the limit of 4294967295");
    /// ```
    pub fn new(m: usize, k: usize, n: usize) -> Result<Self> {
        for (name, v) in [("m", m), ("k", k), ("n", n)] {
            if v == 0 {
                return Err(Error::ZeroDimension { name });
            }
            if v > u32::MAX as usize {
                return Err(Error::LimitExceeded { what: name.into(), value: v as u64, limit: u32::MAX as u64 });
            }
        }
        Ok(Self { m, k, n })
    }

    /// Floating-point operations of one product: `2 * m * k * n`.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::MatmulShape;
    /// assert_eq!(MatmulShape::new(2, 3, 4)?.flops(), 48.0);
    /// // 2 * 4096^3 is about 137 GFLOP.
    /// assert_eq!(MatmulShape::new(4096, 4096, 4096)?.flops(), 2.0 * 4096f64.powi(3));
    /// # Ok(()) }
    /// ```
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.k as f64 * self.n as f64
    }

    /// Multiply-adds of the product, `m k n`, exact for every shape (a `u128` holds three `u32`
    /// sides' product).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::MatmulShape;
    /// assert_eq!(MatmulShape::new(2, 3, 4)?.macs(), 24);
    /// let huge = u32::MAX as usize;
    /// assert_eq!(MatmulShape::new(huge, huge, huge)?.macs(), (huge as u128).pow(3));
    /// # Ok(()) }
    /// ```
    pub fn macs(&self) -> u128 {
        self.m as u128 * self.k as u128 * self.n as u128
    }

    /// Bytes of `A`, `B` and `C` together: the device memory one product needs (`u64::MAX`
    /// where that overflows, which no device holds).
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::MatmulShape;
    /// // 4 bytes each of A (2 x 3), B (3 x 4) and C (2 x 4).
    /// assert_eq!(MatmulShape::new(2, 3, 4)?.bytes(), 4 * (6 + 12 + 8));
    /// let huge = u32::MAX as usize;
    /// assert_eq!(MatmulShape::new(huge, huge, huge)?.bytes(), u64::MAX);
    /// # Ok(()) }
    /// ```
    pub fn bytes(&self) -> u64 {
        let (m, k, n) = (self.m as u128, self.k as u128, self.n as u128);
        u64::try_from(4 * (m * k + k * n + m * n)).unwrap_or(u64::MAX)
    }

    /// Element counts of `A`, `B` and `C`.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::MatmulShape;
    /// assert_eq!(MatmulShape::new(2, 3, 4)?.lens(), (6, 12, 8));
    /// # Ok(()) }
    /// ```
    pub fn lens(&self) -> (usize, usize, usize) {
        (self.m * self.k, self.k * self.n, self.m * self.n)
    }

    /// Checks that host matrices have this shape's lengths.
    ///
    /// ```
    /// # fn main() -> hopper_kernels::Result<()> {
    /// use hopper_kernels::matmul::MatmulShape;
    /// let s = MatmulShape::new(2, 3, 4)?;
    /// assert!(s.check_lens(6, 12, 8).is_ok());
    /// let err = s.check_lens(6, 11, 8).unwrap_err().to_string();
    /// assert!(err.contains("matrix lengths A=6, B=11, C=8 do not match m=2, k=3, n=4"), "{err}");
    /// # Ok(()) }
    /// ```
    pub fn check_lens(&self, a: usize, b: usize, c: usize) -> Result<()> {
        let (la, lb, lc) = self.lens();
        if (a, b, c) != (la, lb, lc) {
            return Err(Error::InvalidArgument(format!(
                "matrix lengths A={a}, B={b}, C={c} do not match m={}, k={}, n={} (expected {la}, {lb}, {lc})",
                self.m, self.k, self.n
            )));
        }
        Ok(())
    }
}

impl std::fmt::Display for MatmulShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}", self.m, self.k, self.n)
    }
}

/// Largest grid extent along y (and z) that CUDA accepts.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MAX_GRID_Y, MatmulShape, grid_over_c};
/// let rows = |m: usize| grid_over_c(MatmulShape::new(m, 1, 1).unwrap(), 16, 16);
/// assert_eq!(rows(16 * MAX_GRID_Y as usize)?.1, MAX_GRID_Y);
/// assert!(rows(16 * MAX_GRID_Y as usize + 1).is_err());
/// # Ok(()) }
/// ```
pub const MAX_GRID_Y: u32 = 65_535;

/// A 2-D grid of `block_x x block_y` blocks covering `n` columns and `m` rows of `C`.
///
/// ```
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::matmul::{MatmulShape, grid_over_c};
/// // 33 columns and 17 rows of C in 16 x 16 blocks: columns on x, ragged edges rounded up.
/// let shape = MatmulShape::new(17, 5, 33)?;
/// assert_eq!(grid_over_c(shape, 16, 16)?, (3, 2, 1));
/// # Ok(()) }
/// ```
pub fn grid_over_c(shape: MatmulShape, block_x: u32, block_y: u32) -> Result<(u32, u32, u32)> {
    let gx = shape.n.div_ceil(block_x as usize);
    let gy = shape.m.div_ceil(block_y as usize);
    if gy > MAX_GRID_Y as usize || gx > i32::MAX as usize {
        return Err(Error::InvalidArgument(format!(
            "{shape} needs a grid of {gx} x {gy} blocks; CUDA allows at most {} x {MAX_GRID_Y}",
            i32::MAX
        )));
    }
    Ok((gx as u32, gy as u32, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_rejects_zero_and_oversized_dimensions() {
        let err = MatmulShape::new(4, 0, 4).unwrap_err().to_string();
        assert!(err.contains("k is 0"), "{err}");
        assert!(MatmulShape::new(1, 1, u32::MAX as usize + 1).unwrap_err().to_string().contains("n ="));
        assert!(MatmulShape::new(1, 1, 1).is_ok());
    }

    #[test]
    fn shape_counts_flops_and_bytes() {
        let s = MatmulShape::new(1000, 800, 1200).unwrap();
        assert_eq!(s.flops(), 2.0 * 1000.0 * 800.0 * 1200.0);
        assert_eq!(s.bytes(), 4 * (1000 * 800 + 800 * 1200 + 1000 * 1200));
        assert!(s.check_lens(800_000, 960_000, 1_200_000).is_ok());
        assert!(s.check_lens(800_000, 960_001, 1_200_000).unwrap_err().to_string().contains("do not match"));
    }

    #[test]
    fn grid_covers_ragged_edges_with_columns_on_x() {
        let s = MatmulShape::new(17, 5, 33).unwrap();
        assert_eq!(grid_over_c(s, 16, 16).unwrap(), (3, 2, 1));
        let tall = MatmulShape::new(16 * 65_536, 1, 1).unwrap();
        assert!(grid_over_c(tall, 16, 16).unwrap_err().to_string().contains("grid"));
    }
}
