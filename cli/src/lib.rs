//! The `host` command line and its benchmark, built on the `hopper-kernels` library: `host info`,
//! `host matmul`, `host histogram` and `host bench`, one module per subcommand ([`cli`]), the
//! whole ladder measured in one run ([`bench`](mod@bench)), CUDA-event timing ([`timing`]) and the cuBLAS
//! baselines ([`cublas`]), and the random input sets timing rotates through ([`inputs`]).

#![deny(missing_docs)]

pub mod bench;
pub mod cli;
pub mod cublas;
pub mod inputs;
pub mod timing;

// The library's modules under the paths this crate grew up with.
pub(crate) use hopper_kernels::histogram::stream;
pub(crate) use hopper_kernels::{Error, Result, arrays, error, gpu, histogram, io, matmul, ptx, reference};
