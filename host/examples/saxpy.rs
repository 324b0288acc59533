//! `y = a * x + y` with the README's example kernel, through the `host` library.
//!
//! ```sh
//! cargo run --release --example saxpy
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let run = || -> hopper_kernels::Result<()> {
        let gpu = hopper_kernels::Gpu::open(0)?;
        let x: Vec<f32> = (0..1_000_000).map(|i| i as f32).collect();
        let y = vec![1.0f32; x.len()];
        let out = hopper_kernels::saxpy::saxpy(&gpu, 2.0, &x, &y)?;
        println!("saxpy of {} values on {}: y[3] = 2 * 3 + 1 = {}", x.len(), gpu.info().name, out[3]);
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
