//! Launches `kernels::saxpy` (`y = a * x + y`): the launcher of the README's worked example of
//! adding a kernel, and the repository's example of a typed launch: the argument tuple is
//! checked against the kernel's declared parameters at compile time (`nvptx-launch`).

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use kernels::saxpy::{BLOCK, KERNEL, MAX_BLOCKS};
use nvptx_launch::{ConfigError, LaunchConfig, TypedKernel};

/// The launch for `n` elements: one thread per element in blocks of [`BLOCK`], at most
/// [`MAX_BLOCKS`] blocks (the kernel's grid-stride loop covers the rest).
///
/// ```
/// use hopper_kernels::saxpy::launch_config;
/// let blocks = |n| launch_config(n).unwrap().grid().x;
/// // Blocks of 256 threads, at least one, at most 65,535 (a grid-stride loop covers the rest).
/// assert_eq!((blocks(0), blocks(256), blocks(257)), (1, 1, 2));
/// assert_eq!(blocks(1 << 30), 65_535);
/// assert_eq!(launch_config(1000).unwrap().block().x, 256);
/// ```
pub fn launch_config(n: usize) -> Result<LaunchConfig, ConfigError> {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, MAX_BLOCKS as usize) as u32;
    LaunchConfig::new(blocks, BLOCK)
}

/// `y = a * x + y` on the GPU; returns the new `y`. Fails unless `x` and `y` have one length.
///
/// ```no_run
/// # fn main() -> hopper_kernels::Result<()> {
/// use hopper_kernels::{Gpu, saxpy::saxpy};
/// let gpu = Gpu::open(0)?;
/// assert_eq!(saxpy(&gpu, 2.0, &[1.0, 2.0], &[10.0, 20.0])?, [12.0, 24.0]);
/// assert!(saxpy(&gpu, 2.0, &[1.0], &[1.0, 2.0]).is_err()); // one length
/// # Ok(()) }
/// ```
pub fn saxpy(gpu: &Gpu, a: f32, x: &[f32], y: &[f32]) -> Result<Vec<f32>> {
    if x.len() != y.len() {
        return Err(Error::InvalidArgument(format!(
            "x holds {} values and y {}: saxpy needs one length",
            x.len(),
            y.len()
        )));
    }
    if x.is_empty() {
        return Ok(Vec::new());
    }
    gpu.ensure_fits("saxpy's x and y", 8 * x.len() as u64)?;
    let (dx, mut dy) = (gpu.upload(x)?, gpu.upload(y)?);
    let kernel = TypedKernel::<kernels::saxpy::saxpy>::from_function(gpu.function(KERNEL)?);
    let config = launch_config(x.len()).map_err(nvptx_launch::LaunchError::from)?;
    let n = x.len() as u64;
    // SAFETY: kernel contract (kernels::saxpy): x and y hold n f32 each, separate allocations;
    // the function is saxpy's, from the PTX built from the same declaration.
    unsafe { kernel.launch(gpu.stream(), &config, (a, &dx, &mut dy, n)) }?;
    gpu.synchronize()?;
    gpu.download(&dy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_covers_every_element_up_to_the_block_limit() {
        let grid = |n| launch_config(n).unwrap().grid().x;
        assert_eq!((grid(0), grid(1), grid(256), grid(257)), (1, 1, 1, 2));
        assert_eq!(grid(1 << 30), MAX_BLOCKS);
        assert_eq!(launch_config(1000).unwrap().block(), BLOCK.into());
    }
}
