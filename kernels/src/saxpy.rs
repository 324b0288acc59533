//! `saxpy`: `y = a * x + y` on `f32` vectors, the smallest useful kernel, and the worked example
//! of the README's "Your own kernel" section.
//!
//! # Parameters
//! `a`; `x` and `y`: `n` `f32` each on the device; `y` is updated in place.
//!
//! # Thread mapping
//! One-dimensional grid of any size, [`BLOCK`] threads per block; a grid-stride loop gives each
//! thread the elements `index, index + grid size, ...`, so any grid covers any `n` (the host
//! launches about one thread per element, up to [`MAX_BLOCKS`] blocks).
//!
//! # Safety
//! `x` and `y` hold `n` values each and do not overlap.
//!
//! # Host
//! The kernel is declared outside `nvptx64`-only code, so that on the host this module holds
//! the type [`saxpy`] (its name and parameter types), from which `hopper_kernels::saxpy` launches it with
//! argument types the compiler checks (`nvptx-launch`).

/// PTX symbol of the kernel (the name of its function below).
pub const KERNEL: &str = "saxpy";
/// Threads per block.
pub const BLOCK: u32 = 256;
/// Most blocks the host launches: beyond this the grid-stride loop does the rest.
pub const MAX_BLOCKS: u32 = 65_535;

crate::gpu_kernel! {
    /// `y[i] = a * x[i] + y[i]` for every `i < n`; see the [module documentation](self).
    ///
    /// # Safety
    /// `x` and `y` hold `n` `f32` on the device and do not overlap.
    pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {
        use crate::device::{math::fma, thread};
        let stride = thread::grid_size_1d();
        let mut i = thread::index_1d();
        while i < n {
            // SAFETY: i < n, and this thread is the only one that touches element i.
            unsafe { *y.add(i as usize) = fma(a, *x.add(i as usize), *y.add(i as usize)) };
            i += stride;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::device::launch::Kernel;

    #[test]
    fn the_host_type_names_the_kernel_and_its_parameters() {
        assert_eq!(super::saxpy::NAME, super::KERNEL);
        use crate::device::launch::{ConstPtr, MutPtr};
        let _: fn(<super::saxpy as Kernel>::Params) = |_: (f32, ConstPtr<f32>, MutPtr<f32>, u64)| {};
    }
}
