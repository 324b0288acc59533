//! Multiplies two matrices on the GPU through the `host` library, as a program of your own would.
//!
//! ```sh
//! cargo run --release --example matmul                       # random 1000x800 times 800x1200
//! cargo run --release --example matmul -- a.npy b.npy c.npy  # your float32 .npy files
//! ```

use hopper_kernels::io::{self, Matrix};
use hopper_kernels::reference::{MatmulReference, random_matrix};
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
    // Files first: a bad file is reported before the GPU is opened.
    let (a, b) = match args {
        [a, b] | [a, b, _] => (io::read_matrix(Path::new(a))?, io::read_matrix(Path::new(b))?),
        [] => {
            let mut rng = rand::rng();
            (
                Matrix::new(1000, 800, random_matrix(&mut rng, 800_000))?,
                Matrix::new(800, 1200, random_matrix(&mut rng, 960_000))?,
            )
        }
        _ => {
            return Err(hopper_kernels::Error::InvalidArgument(format!(
                "{} arguments: give none (random matrices), A.npy B.npy, or A.npy B.npy C.npy",
                args.len()
            )));
        }
    };
    // The output's temporary file is created before the work, so an unwritable one fails first.
    let out = args.get(2).map(|c| io::OutputFile::create(Path::new(c))).transpose()?;
    let gpu = hopper_kernels::Gpu::open(0)?;
    let c = hopper_kernels::matmul(&gpu, &a, &b)?;
    let reference = MatmulReference::new(&a.data, &b.data, a.rows, a.cols, b.cols);
    println!(
        "C = A ({}x{}) * B ({}x{}) on {}: largest error {:.1e} (bound {:.1e})",
        a.rows,
        a.cols,
        b.rows,
        b.cols,
        gpu.info().name,
        reference.max_error(&c.data),
        reference.tolerance()
    );
    if let Some(out) = out {
        let path = out.path().display().to_string();
        out.write_npy(&[c.rows as u64, c.cols as u64], &c.data)?;
        println!("wrote {path}");
    }
    Ok(())
}
