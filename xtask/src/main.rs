//! `cargo xtask <task>`: the project's tasks that plain cargo cannot express.
//!
//! - `build-ptx`: compiles `kernels/` with rustc's nvptx64 backend into `target/ptx/kernels.ptx`
//!   (with `target/ptx/kernels.json`, the manifest the host checks), then reports each kernel's
//!   registers, shared memory and spills from `ptxas -v` when ptxas is found.
//! - `test`: builds the PTX and runs every test; with a CUDA device present, the GPU tests too.
//! - `run`: builds the release PTX and runs the host binary in release mode with the given args.
//! - `bench`: builds the release PTX and runs `host bench` in release mode with the given args.

mod fingerprint;
mod ptx;
mod ptxas;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Project tasks: build-ptx, test, run, bench")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Compile the kernels to PTX (target/ptx/kernels.ptx) and report their resource use.
    BuildPtx(PtxArgs),
    /// Build the PTX and run every test; on a machine with a CUDA device, the GPU tests too.
    Test(PtxArgs),
    /// Build the release PTX, then run the host binary in release mode: `cargo xtask run -- info`.
    Run {
        /// Arguments for the host binary.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build the release PTX, then run `host bench` in release mode:
    /// `cargo xtask bench -- --json results/h100.json --chart results/h100.svg`.
    Bench {
        /// Arguments for `host bench`.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// How to build the PTX.
#[derive(Args, Clone)]
pub struct PtxArgs {
    /// Virtual architecture the PTX targets (`.target`), and the `-C target-cpu` of rustc.
    #[arg(long, default_value = "sm_90")]
    pub arch: String,
    /// Optimised build without debug assertions; otherwise every shared-memory index and integer
    /// overflow is checked, and a failed check traps the kernel.
    #[arg(long)]
    pub release: bool,
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let root = project_root();
    match cli.task {
        Task::BuildPtx(args) => {
            ptx::build(&root, &args)?;
        }
        Task::Test(args) => {
            ptx::build(&root, &args)?;
            test(&root)?;
        }
        Task::Run { args } => run_host(&root, args)?,
        // Timings of a checked PTX build would not be representative: always the release PTX.
        Task::Bench { args } => run_host(&root, std::iter::once("bench".to_string()).chain(args).collect())?,
    }
    Ok(())
}

/// The workspace root: the parent of this crate's manifest directory.
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives one level below the root").to_path_buf()
}

/// The cargo that runs this task (`$CARGO`), so nested builds use the same toolchain.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Builds the release PTX, then runs the host binary in release mode with `args`.
fn run_host(root: &Path, args: Vec<String>) -> Result<()> {
    ptx::build(root, &PtxArgs { arch: "sm_90".into(), release: true })?;
    run_cargo(
        root,
        ["run", "--release", "--quiet", "--package", "host", "--"].into_iter().map(String::from).chain(args),
    )
}

fn run_cargo(root: &Path, args: impl IntoIterator<Item = String>) -> Result<()> {
    let args: Vec<String> = args.into_iter().collect();
    let status =
        cargo().current_dir(root).args(&args).status().with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

fn test(root: &Path) -> Result<()> {
    let mut args: Vec<String> = ["test", "--workspace"].into_iter().map(String::from).collect();
    match cuda_device() {
        Some(name) => {
            println!("xtask test: CUDA device found ({name}): running the GPU tests too (--include-ignored)");
            args.extend(["--".into(), "--include-ignored".into()]);
        }
        None => println!("xtask test: no CUDA device found: GPU tests stay ignored"),
    }
    run_cargo(root, args)
}

/// The first GPU `nvidia-smi -L` lists, if the driver is installed and sees one.
fn cuda_device() -> Option<String> {
    let out = Command::new("nvidia-smi").arg("-L").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().find(|l| l.starts_with("GPU "))?;
    out.status.success().then(|| first.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_passes_every_argument_after_the_separator_to_host_bench() {
        let cli = Cli::try_parse_from(["xtask", "bench", "--", "--json", "results/h100.json", "--quick"]).unwrap();
        let Task::Bench { args } = cli.task else { panic!("not bench") };
        assert_eq!(args, ["--json", "results/h100.json", "--quick"]);
        let cli = Cli::try_parse_from(["xtask", "bench", "--sizes", "1024"]).unwrap();
        let Task::Bench { args } = cli.task else { panic!("not bench") };
        assert_eq!(args, ["--sizes", "1024"]);
    }
}
