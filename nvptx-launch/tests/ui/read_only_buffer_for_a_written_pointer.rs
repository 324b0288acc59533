use cudarc::driver::{CudaSlice, CudaStream};
use nvptx_launch::{LaunchConfig, TypedKernel};

nvptx_std::kernel! {
    /// `y = a * x + y` over `n` values.
    pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {}
}

fn launch(kernel: &TypedKernel<saxpy>, stream: &CudaStream, config: &LaunchConfig, x: &CudaSlice<f32>, y: &mut CudaSlice<f32>) {
    // The kernel writes `y` (`*mut f32`): a shared reference to the buffer is refused.
    let _ = unsafe { kernel.launch(stream, config, (2.0f32, x, &*y, 1000u64)) };
}

fn main() {}
