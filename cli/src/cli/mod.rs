//! The `host` command line: `info`, `matmul`, `histogram`, `histogram2d` and `bench`, one module per
//! subcommand (`histogram_features`: `histogram`'s weights, edges, channels and segments).

pub mod bench;
pub mod histogram;
pub mod histogram2d;
pub mod histogram_features;
pub mod info;
pub mod matmul;

use clap::{Parser, Subcommand};

/// Runs the Rust-built GPU kernels, checks them against the CPU and times them.
#[derive(Parser, Debug)]
#[command(name = "host", version, about)]
pub struct Cli {
    /// CUDA device index.
    #[arg(long, global = true, default_value_t = 0)]
    pub device: usize,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Describe the GPU, the driver and the embedded PTX.
    Info,
    /// Multiply random matrices with each kernel variant, timed with CUDA events.
    Matmul(matmul::MatmulArgs),
    /// Histogram of random i32 values in block-shared, cluster-shared or global bins.
    Histogram(histogram::HistogramArgs),
    /// 2-D histogram of f32 pairs (numpy.histogram2d): counts, or weighted f64 sums.
    Histogram2d(histogram2d::Histogram2dArgs),
    /// Measure the whole ladder across sizes (CPU, each kernel, cuBLAS) and the histogram tiers
    /// across bin counts, and auto against cuBLAS on a suite of shapes; print tables, optionally JSON and a chart.
    Bench(bench::BenchArgs),
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Info => info::run(cli.device),
        Command::Matmul(args) => matmul::run(cli.device, &args),
        Command::Histogram(args) => histogram::run(cli.device, &args),
        Command::Histogram2d(args) => histogram2d::run(cli.device, &args),
        Command::Bench(args) => bench::run(cli.device, &args),
    }
}
