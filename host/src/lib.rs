//! Host side of the project: opens the GPU, loads the PTX that rustc's nvptx64 backend built
//! from `kernels/`, plans and launches each kernel through `cudarc`, times launches with CUDA
//! events, and checks results against CPU references.
//!
//! Layout mirrors `kernels/`: each kernel family's launch planning sits in the module of the same
//! name (`matmul::naive`, `matmul::tiled`, `matmul::sgemm`, `histogram`), and [`matmul::MatmulVariant`] is
//! the one table of variants that the CLI, the tests and the benchmarks iterate. [`mod@bench`]
//! measures the whole ladder in one run and renders it as tables, JSON and an SVG chart.

#![deny(missing_docs)]

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
pub mod timing;

pub use error::{HostError, Result};
pub use gpu::Gpu;
