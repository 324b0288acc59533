//! `cargo run --release`: the softmax of each row of a random matrix on the GPU, checked against
//! the exact softmax computed on the CPU. Without a GPU it says so and exits with status 1.
//!
//! ```sh
//! cargo run --release                 # 4096 rows of 1000 values
//! cargo run --release -- 100 100000   # rows, columns
//! ```

use my_kernels_host::{Error, Softmax, TOLERANCE, max_relative_error, softmax_cpu};
use rand::{Rng, SeedableRng};
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The shape from the command line (`ROWS COLS`), or 4096 x 1000.
fn shape() -> Result<(usize, usize), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => Ok((4096, 1000)),
        [rows, cols] => {
            let parse = |s: &str, what| s.parse::<usize>().map_err(|e| format!("{what} {s:?}: {e}"));
            Ok((parse(rows, "rows")?, parse(cols, "columns")?))
        }
        _ => Err("usage: my-kernels [ROWS COLS]".into()),
    }
}

fn run() -> Result<bool, Error> {
    let (rows, cols) = match shape() {
        Ok(shape) => shape,
        Err(usage) => {
            eprintln!("error: {usage}");
            return Ok(false);
        }
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(20);
    let x: Vec<f32> = (0..rows * cols).map(|_| rng.random_range(-8.0..8.0)).collect();
    let want = softmax_cpu(&x, rows, cols)?;

    let ctx = nvptx_launch::open_device(0)?;
    let softmax = Softmax::load(&ctx)?;
    let stream = ctx.new_stream()?;
    let x_dev = stream.clone_htod(&x)?;
    let mut y_dev = stream.alloc_zeros::<f32>(x.len())?;
    softmax.run(&stream, &x_dev, &mut y_dev, rows, cols)?;
    let got = stream.clone_dtoh(&y_dev)?;

    let error = max_relative_error(&got, &want);
    let name = ctx.name().unwrap_or_else(|_| "the GPU".into());
    println!(
        "row_softmax of {rows} x {cols} on {name}: largest relative error against the f64 CPU softmax {error:.2e}"
    );
    if error > TOLERANCE {
        eprintln!("error: above the tolerance of {TOLERANCE:.0e}");
        return Ok(false);
    }
    Ok(true)
}
