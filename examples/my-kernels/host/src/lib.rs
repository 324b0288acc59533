//! The host side of the example kernels: the PTX that `build.rs` compiled (through
//! `nvptx-builder`), embedded in the binary; a typed launch of `row_softmax`; and the CPU
//! reference it is checked against.

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DriverError};
use my_kernels::softmax::{BLOCK, row_softmax};
use nvptx_launch::{LaunchConfig, LaunchError, TypedKernel};
use std::sync::Arc;

/// The kernels crate's PTX, as `build.rs` wrote it into `OUT_DIR`.
///
/// ```
/// assert!(my_kernels_host::PTX.contains(".visible .entry row_softmax("));
/// ```
pub const PTX: &str = nvptx_launch::include_ptx!("my_kernels");

/// Largest relative error of the GPU softmax against the exact one, for inputs within 16 of
/// their row's maximum (see `my_kernels::softmax`, "Accuracy"): the hardware exponential's few
/// ulp, the rounding of `(x - max) * log2(e)` (at most 16 * 2^-24), the sums' roundings over at
/// most about 24 additions per element for rows up to 2^16, and one division and multiplication
/// add up to under 4e-6; this leaves a margin of more than 2x.
///
/// ```
/// let exact = my_kernels_host::softmax_cpu(&[0.0, 1.0], 1, 2)?;
/// let gpu_like = [exact[0] as f32, exact[1] as f32]; // rounded to f32: well within the tolerance
/// assert!(my_kernels_host::max_relative_error(&gpu_like, &exact) <= my_kernels_host::TOLERANCE);
/// # Ok::<(), my_kernels_host::Error>(())
/// ```
pub const TOLERANCE: f64 = 1e-5;

/// Why a softmax could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Opening the GPU, loading the PTX or launching failed.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// A CUDA driver call (allocation, copy) failed.
    #[error("CUDA driver error: {0}")]
    Driver(#[from] DriverError),
    /// The buffers do not hold a `rows x cols` matrix.
    #[error("a {rows} x {cols} matrix is {expected} values, but x holds {x} and y holds {y}")]
    Shape {
        /// Rows asked for.
        rows: usize,
        /// Columns asked for.
        cols: usize,
        /// `rows * cols`, saturated.
        expected: usize,
        /// Values in `x`.
        x: usize,
        /// Values in `y`.
        y: usize,
    },
    /// More rows or columns than the kernel's `u32` parameters and its one-block-per-row grid
    /// take.
    #[error("a {rows} x {cols} matrix: the kernel takes at most {} rows and {} columns", i32::MAX, u32::MAX)]
    TooLarge {
        /// Rows asked for.
        rows: usize,
        /// Columns asked for.
        cols: usize,
    },
}

/// Fails unless `x` and `y` hold `rows * cols` values each and the kernel takes that shape.
///
/// ```
/// assert!(my_kernels_host::check_shape(2, 3, 6, 6).is_ok());
/// assert!(my_kernels_host::check_shape(2, 3, 6, 5).is_err());
/// ```
pub fn check_shape(rows: usize, cols: usize, x: usize, y: usize) -> Result<(), Error> {
    if rows > i32::MAX as usize || cols > u32::MAX as usize {
        return Err(Error::TooLarge { rows, cols });
    }
    let expected = rows.saturating_mul(cols);
    if x != expected || y != expected {
        return Err(Error::Shape { rows, cols, expected, x, y });
    }
    Ok(())
}

/// `row_softmax`, loaded on one device.
///
/// ```no_run
/// let ctx = nvptx_launch::open_device(0)?;
/// let softmax = my_kernels_host::Softmax::load(&ctx)?;
/// let stream = ctx.new_stream()?;
/// let x = stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0])?;
/// let mut y = stream.alloc_zeros::<f32>(4)?;
/// softmax.run(&stream, &x, &mut y, 2, 2)?; // two rows of two
/// let y = stream.clone_dtoh(&y)?;
/// # Ok::<(), my_kernels_host::Error>(())
/// ```
pub struct Softmax {
    kernel: TypedKernel<row_softmax>,
}

impl Softmax {
    /// Loads the embedded PTX into `ctx` and finds the kernel (see [`Softmax`] for an example).
    pub fn load(ctx: &Arc<CudaContext>) -> Result<Self, Error> {
        let module = nvptx_launch::load_module(ctx, PTX)?;
        Ok(Self { kernel: TypedKernel::load(&module)? })
    }

    /// Enqueues the softmax of each row of the row-major `rows x cols` matrix `x` into `y` on
    /// `stream`. Fails before enqueuing anything unless both hold `rows * cols` values (see
    /// [`Softmax`] for an example).
    pub fn run(
        &self,
        stream: &CudaStream,
        x: &CudaSlice<f32>,
        y: &mut CudaSlice<f32>,
        rows: usize,
        cols: usize,
    ) -> Result<(), Error> {
        check_shape(rows, cols, x.len(), y.len())?;
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        let config = LaunchConfig::new(rows as u32, BLOCK).map_err(LaunchError::from)?;
        // SAFETY: x and y hold rows * cols values (checked above) and are two allocations (one
        // borrowed shared, one exclusive); one block of BLOCK threads per row.
        unsafe { self.kernel.launch(stream, &config, (x, y, rows as u32, cols as u32)) }?;
        Ok(())
    }
}

/// The exact softmax of each row, in `f64`: the reference the GPU result is checked against.
/// A row holding a NaN or `+inf`, or only `-inf`, is NaN, as on the GPU.
///
/// Fails, as [`Softmax::run`] does, unless `x` holds `rows * cols` values.
///
/// ```
/// let y = my_kernels_host::softmax_cpu(&[0.0, 0.0, 1.0, 3.0], 2, 2)?;
/// assert_eq!(&y[..2], &[0.5, 0.5]);
/// assert!((y[2] + y[3] - 1.0).abs() < 1e-15);
/// # Ok::<(), my_kernels_host::Error>(())
/// ```
pub fn softmax_cpu(x: &[f32], rows: usize, cols: usize) -> Result<Vec<f64>, Error> {
    check_shape(rows, cols, x.len(), x.len())?;
    let mut y = Vec::with_capacity(x.len());
    for row in x.chunks(cols.max(1)).take(rows) {
        let max = row.iter().map(|&v| v as f64).fold(f64::NEG_INFINITY, f64::max);
        let exps: Vec<f64> = row.iter().map(|&v| (v as f64 - max).exp()).collect();
        let sum: f64 = exps.iter().sum();
        y.extend(exps.iter().map(|e| e / sum));
    }
    Ok(y)
}

/// The largest relative error of `got` against `want`; NaN where both are NaN counts as exact,
/// NaN in one only, or a different length, as infinite.
///
/// ```
/// assert_eq!(my_kernels_host::max_relative_error(&[1.0, f32::NAN], &[1.0, f64::NAN]), 0.0);
/// assert_eq!(my_kernels_host::max_relative_error(&[0.5], &[f64::NAN]), f64::INFINITY);
/// assert_eq!(my_kernels_host::max_relative_error(&[0.5], &[]), f64::INFINITY);
/// ```
pub fn max_relative_error(got: &[f32], want: &[f64]) -> f64 {
    if got.len() != want.len() {
        return f64::INFINITY;
    }
    got.iter()
        .zip(want)
        .map(|(&g, &w)| match (g.is_nan(), w.is_nan()) {
            (true, true) => 0.0,
            (true, false) | (false, true) => f64::INFINITY,
            _ if g as f64 == w => 0.0,
            _ => ((g as f64 - w) / w).abs(),
        })
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_rows_sum_to_one_and_ignore_a_shift() {
        let x: Vec<f32> = (0..40).map(|i| (i as f32 * 0.37).sin() * 8.0).collect();
        let shifted: Vec<f32> = x.iter().map(|v| v + 5.0).collect();
        let (y, z) = (softmax_cpu(&x, 4, 10).unwrap(), softmax_cpu(&shifted, 4, 10).unwrap());
        for row in y.chunks(10) {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
        assert!(y.iter().zip(&z).all(|(a, b)| (a - b).abs() < 1e-6));
    }

    #[test]
    fn a_row_with_a_nan_or_only_minus_infinity_is_nan_and_the_others_are_not() {
        let x = [1.0, f32::NAN, f32::NEG_INFINITY, f32::NEG_INFINITY, 1.0, f32::NEG_INFINITY];
        let y = softmax_cpu(&x, 3, 2).unwrap();
        assert!(y[0].is_nan() && y[1].is_nan() && y[2].is_nan() && y[3].is_nan());
        assert_eq!(&y[4..], &[1.0, 0.0]);
    }

    #[test]
    fn buffers_that_do_not_hold_the_matrix_are_refused_before_any_launch() {
        let err = check_shape(3, 4, 12, 11).unwrap_err().to_string();
        assert_eq!(err, "a 3 x 4 matrix is 12 values, but x holds 12 and y holds 11");
        assert!(matches!(check_shape(1 << 31, 1, 1 << 31, 1 << 31), Err(Error::TooLarge { .. })));
        assert!(matches!(check_shape(usize::MAX, 2, 0, 0), Err(Error::TooLarge { .. })));
        assert!(check_shape(0, 5, 0, 0).is_ok());
    }

    #[test]
    fn the_embedded_ptx_holds_the_kernel_for_sm_90() {
        assert!(PTX.lines().any(|l| l.trim() == ".target sm_90"));
        assert!(PTX.contains(".visible .entry row_softmax("));
        assert!(!PTX.contains(".extern .func"), "the PTX calls code outside the module");
    }
}
