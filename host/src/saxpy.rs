//! Launches `kernels::saxpy` (`y = a * x + y`): the launcher of the README's worked example of
//! adding a kernel.

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use cudarc::driver::{LaunchConfig, PushKernelArg};
use kernels::saxpy::{BLOCK, KERNEL, MAX_BLOCKS};

/// The launch for `n` elements: one thread per element in blocks of [`BLOCK`], at most
/// [`MAX_BLOCKS`] blocks (the kernel's grid-stride loop covers the rest).
pub fn launch_config(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, MAX_BLOCKS as usize) as u32;
    LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
}

/// `y = a * x + y` on the GPU; returns the new `y`. Fails unless `x` and `y` have one length.
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
    let func = gpu.function(KERNEL)?;
    let n = x.len() as u64;
    let mut launch = gpu.stream().launch_builder(&func);
    launch.arg(&a).arg(&dx).arg(&mut dy).arg(&n);
    // SAFETY: kernel contract (kernels::saxpy): x and y hold n f32 each, separate allocations.
    unsafe { launch.launch(launch_config(x.len())) }?;
    gpu.synchronize()?;
    gpu.download(&dy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_covers_every_element_up_to_the_block_limit() {
        assert_eq!(launch_config(1).grid_dim, (1, 1, 1));
        assert_eq!(launch_config(256).grid_dim, (1, 1, 1));
        assert_eq!(launch_config(257).grid_dim, (2, 1, 1));
        assert_eq!(launch_config(1 << 30).grid_dim, (MAX_BLOCKS, 1, 1));
        assert_eq!(launch_config(1000).block_dim, (BLOCK, 1, 1));
    }
}
