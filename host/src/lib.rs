//! GPU kernels written in Rust for NVIDIA Hopper (H100, H200), compiled to PTX by rustc's own
//! `nvptx64-nvidia-cuda` backend and launched through [`cudarc`]: GEMM (`f32` under a precision
//! policy, BF16, F16; any layout, transposes, leading dimensions, strided batches, alpha and beta)
//! and histograms, on device buffers and your own CUDA stream.
//!
//! Device-resident: plan once, enqueue many times, nothing synchronized behind your back.
//!
//! ```no_run
//! # fn main() -> hopper_kernels::Result<()> {
//! use hopper_kernels::Gpu;
//! use hopper_kernels::histogram::{Histogram, HistogramScratch, InputType};
//! use hopper_kernels::matmul::{DType, GemmDesc, GemmPlan, Layout};
//! // Your own cudarc context and stream (or `Gpu::open(0)`).
//! let ctx = cudarc::driver::CudaContext::new(0)?;
//! let gpu = Gpu::from_stream(ctx.new_stream()?)?;
//! let s = gpu.stream();
//! let (m, n, k) = (1024, 512, 256);
//! let a = s.clone_htod(&vec![1.0f32; m * k])?;
//! let b = s.clone_htod(&vec![0.5f32; k * n])?;
//! let mut d = s.alloc_zeros::<f32>(m * n)?;
//! // D = A B (f32, FP32's contract on every input: the default `high` policy).
//! let plan = GemmPlan::new(&gpu, GemmDesc::new(m, n, k))?;
//! let mut workspace = s.alloc_zeros::<u8>(plan.workspace_bytes().max(1))?;
//! plan.launch(&gpu, &a, &b, &mut d, &mut workspace)?;
//! // A histogram of D's values over [0, 256), into u64 counters.
//! let h = Histogram::new(&gpu, InputType::F32, 256, Some((0.0, 256.0)))?;
//! let mut counts = s.alloc_zeros::<u64>(256)?;
//! h.count_u64(&gpu, &d, &mut counts, &mut HistogramScratch::default())?;
//! assert_eq!(s.clone_dtoh(&counts)?[128], (m * n) as u64);
//! # let _ = (DType::Bf16, Layout::row_major(DType::Bf16));
//! # Ok(()) }
//! ```
//!
//! Host slices and files have conveniences: [`matmul()`], [`histogram()`], [`histogram_file`].
//! Every error is an [`Error`] whose variants carry what a caller matches on, and whose message
//! is the one the `host` command line prints.
//!
//! Modules mirror the concepts: [`gpu`] (context, stream, loaded kernels, device models),
//! [`matmul`](mod@matmul) (the GEMM descriptor, its plan and launch, the `auto` planner, one planner per
//! kernel family), [`histogram`](mod@histogram) (planner, launches, device-resident counting, streaming files
//! larger than the GPU), [`reference`](mod@reference) (CPU references and reproducible inputs for checking
//! results), [`io`] (`.npy` files), [`ptx`] (the embedded modules).

#![deny(missing_docs)]

/// Implements `FromStr` (by name, any case, with an error that lists the names) and `Display` for
/// an enum with `ALL` and `name()`: the CLI's and config files' way to name its values.
macro_rules! named_enum {
    ($ty:ty, $what:literal) => {
        impl std::str::FromStr for $ty {
            type Err = String;

            fn from_str(text: &str) -> std::result::Result<Self, String> {
                Self::ALL.into_iter().find(|v| v.name().eq_ignore_ascii_case(text)).ok_or_else(|| {
                    let names: Vec<&str> = Self::ALL.iter().map(|v| v.name()).collect();
                    format!("unknown {} `{text}`: choose from {}", $what, names.join(", "))
                })
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

mod api;
pub mod arrays;
pub mod error;
pub mod gpu;
pub mod histogram;
pub mod io;
pub mod matmul;
pub mod ptx;
pub mod reference;
pub mod saxpy;

pub use api::{
    histogram, histogram_file, histogram_file_channels, histogram_file_edges, histogram_file_over, histogram_of,
    matmul, matmul_shape, matmul_with,
};
pub use cudarc;
pub use error::{Error, Result};
pub use gpu::Gpu;
pub use io::Matrix;
