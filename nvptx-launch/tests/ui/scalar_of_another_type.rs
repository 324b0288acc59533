use cudarc::driver::{CudaSlice, CudaStream};
use nvptx_launch::{LaunchConfig, TypedKernel};

nvptx_std::kernel! {
    /// `y = a * x + y` over `n` values.
    pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {}
}

fn launch(kernel: &TypedKernel<saxpy>, stream: &CudaStream, config: &LaunchConfig, x: &CudaSlice<f32>, y: &mut CudaSlice<f32>) {
    // `n` is a u64: a u32 is not converted.
    let n: u32 = 1000;
    let _ = unsafe { kernel.launch(stream, config, (2.0f32, x, y, n)) };
}

fn main() {}
