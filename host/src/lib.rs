//! Host side of the project, and the library other crates use: open a GPU, multiply two
//! matrices, histogram a slice or a file larger than the GPU.
//!
//! ```no_run
//! # fn main() -> host::Result<()> {
//! let gpu = host::Gpu::open(0)?;
//! let a = host::io::read_matrix("a.npy".as_ref())?;
//! let b = host::io::read_matrix("b.npy".as_ref())?;
//! let c = host::matmul(&gpu, &a, &b)?; // the planner's best kernel
//! host::io::write_matrix("c.npy".as_ref(), &c)?;
//! let counts = host::histogram(&gpu, &[3, 1, 4, 1, 5], 8)?;
//! # Ok(()) }
//! ```
//!
//! Every error is a [`HostError`] whose message names the problem (and the file, for files);
//! the `host` CLI prints the same messages. `examples/` holds one runnable program per job.
//!
//! Inside: opens the GPU, loads the PTX that rustc's nvptx64 backend built
//! from `kernels/`, plans and launches each kernel through `cudarc`, times launches with CUDA
//! events, and checks results against CPU references.
//!
//! Layout mirrors `kernels/`: each kernel family's launch planning sits in the module of the same
//! name (`matmul::naive`, `matmul::tiled`, `matmul::sgemm`, `histogram`), and [`matmul::MatmulVariant`] is
//! the one table of variants that the CLI, the tests and the benchmarks iterate. [`mod@bench`]
//! measures the whole ladder in one run and renders it as tables, JSON and an SVG chart.

#![deny(missing_docs)]

mod api;
pub mod arrays;
pub mod bench;
pub mod cli;
pub mod cublas;
pub mod error;
pub mod gpu;
pub mod histogram;
pub mod io;
pub mod matmul;
pub mod ptx;
pub mod reference;
pub mod saxpy;
pub mod stream;
pub mod timing;

pub use api::{
    histogram, histogram_file, histogram_file_channels, histogram_file_edges, histogram_file_over, histogram_of,
    matmul, matmul_shape, matmul_with,
};
pub use error::{HostError, Result};
pub use gpu::Gpu;
pub use io::Matrix;
