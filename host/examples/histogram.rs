//! Histograms on the GPU through the `host` library: of a slice in memory, and of a file streamed
//! in chunks (any size, larger than the GPU too).
//!
//! ```sh
//! cargo run --release --example histogram                      # random values, 256 bins
//! cargo run --release --example histogram -- values.npy 1024   # an int32 .npy file, 1024 bins
//! ```

use hopper_kernels::reference::{ValueDistribution, histogram_cpu, histogram_input};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run(&std::env::args().skip(1).collect::<Vec<_>>()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> hopper_kernels::Result<()> {
    if let [path, rest @ ..] = args {
        let bins = match rest.first() {
            Some(b) => {
                b.parse().map_err(|_| hopper_kernels::Error::InvalidArgument(format!("`{b}` is not a bin count")))?
            }
            None => 256,
        };
        // The file is checked before the GPU is opened, so a bad one is reported as such anywhere.
        hopper_kernels::io::DataFile::open(Path::new(path), None)?;
        let gpu = hopper_kernels::Gpu::open(0)?;
        let counts = hopper_kernels::histogram_file(&gpu, Path::new(path), None, bins)?;
        println!(
            "{path}: {} values in {bins} bins; first bins {:?}",
            counts.iter().sum::<u64>(),
            &counts[..bins.min(8)]
        );
        return Ok(());
    }
    let gpu = hopper_kernels::Gpu::open(0)?;
    let values = histogram_input(1, 1 << 24, 256, ValueDistribution::Normal);
    let counts = hopper_kernels::histogram(&gpu, &values, 256)?;
    let same = counts == histogram_cpu(&values, 256);
    println!("{} normal values in 256 bins on {}: equal to the CPU's: {same}", values.len(), gpu.info().name);
    Ok(())
}
