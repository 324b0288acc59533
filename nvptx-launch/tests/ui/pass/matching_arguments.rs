use cudarc::driver::{CudaSlice, CudaStream};
use nvptx_launch::{LaunchConfig, TypedKernel};

nvptx_std::kernel! {
    /// `y = a * x + y` over `n` values.
    pub unsafe fn saxpy(a: f32, x: *const f32, y: *mut f32, n: u64) {}
}

fn launch(kernel: &TypedKernel<saxpy>, stream: &CudaStream, config: &LaunchConfig, x: &CudaSlice<f32>, y: &mut CudaSlice<f32>) {
    // SAFETY: not run (this file only has to compile).
    let _ = unsafe { kernel.launch(stream, config, (2.0f32, x, &mut *y, 1000u64)) };
    // Literals take the parameter's type.
    let _ = unsafe { kernel.launch(stream, config, (2.0, x, &mut *y, 1000)) };
    // A view of part of a buffer passes for a pointer too.
    let (head, _) = y.split_at_mut(500);
    let mut head = head;
    let _ = unsafe { kernel.launch(stream, config, (2.0f32, &x.slice(..500), &mut head, 500u64)) };
}

fn main() {
    let _ = launch;
}
