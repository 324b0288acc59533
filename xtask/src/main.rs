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
use std::process::{Command, ExitCode};

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

fn main() -> Result<ExitCode> {
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
        // The host's exit status passes through: the host has printed its own error, and a second
        // one from this task (with its backtrace) would only repeat it.
        Task::Run { args } => return run_host(&root, args),
        Task::Bench { args } => return run_host(&root, std::iter::once("bench".to_string()).chain(args).collect()),
    }
    Ok(ExitCode::SUCCESS)
}

/// The workspace root: the parent of this crate's manifest directory.
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives one level below the root").to_path_buf()
}

/// The cargo that runs this task (`$CARGO`), so nested builds use the same toolchain.
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Builds the release PTX (timings of a checked build would not be representative), then runs
/// the host binary in release mode with `args`; returns the host's exit status. `cargo run`
/// passes a failing program's status through without a message of its own, so the host's error
/// is the only one printed.
fn run_host(root: &Path, args: Vec<String>) -> Result<ExitCode> {
    ptx::build(root, &PtxArgs { arch: "sm_90".into(), release: true })?;
    let args: Vec<String> =
        ["run", "--release", "--quiet", "--package", "host", "--"].into_iter().map(String::from).chain(args).collect();
    let status =
        cargo().current_dir(root).args(&args).status().with_context(|| format!("running cargo {}", args.join(" ")))?;
    Ok(exit_code(status))
}

/// The exit code that reports `status`: its own code, or 1 for a program killed by a signal.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    }
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
        Some((name, capability)) => {
            println!("xtask test: CUDA device found ({name}): running the GPU tests too (--include-ignored)");
            args.extend(["--".into(), "--include-ignored".into()]);
            args.extend(hopper_skip(&capability));
        }
        None => println!("xtask test: no CUDA device found: GPU tests stay ignored"),
    }
    run_cargo(root, args)
}

/// The test-harness arguments that leave out the Hopper tests (`hopper_*`, which need the
/// `sm_90a` tensor-core kernels of compute capability 9.0 and fail elsewhere), saying so, on a
/// GPU of compute capability `capability` (`nvidia-smi`'s `9.0`).
fn hopper_skip(capability: &str) -> Vec<String> {
    if capability == "9.0" {
        return Vec::new();
    }
    println!("xtask test: compute capability {capability}, not 9.0: the hopper_* tests are skipped (--skip hopper_)");
    vec!["--skip".into(), "hopper_".into()]
}

/// The first GPU `nvidia-smi` lists and its compute capability, if the driver is installed and
/// sees one.
fn cuda_device() -> Option<(String, String)> {
    let out =
        Command::new("nvidia-smi").args(["--query-gpu=name,compute_cap", "--format=csv,noheader"]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (name, capability) = text.lines().next()?.split_once(',')?;
    out.status.success().then(|| (name.trim().to_string(), capability.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_host_status_passes_through_unchanged() {
        use std::os::unix::process::ExitStatusExt;
        // Raw wait statuses: the exit code sits in the second byte.
        assert_eq!(exit_code(std::process::ExitStatus::from_raw(0)), ExitCode::SUCCESS);
        assert_eq!(exit_code(std::process::ExitStatus::from_raw(2 << 8)), ExitCode::from(2));
        assert_eq!(exit_code(std::process::ExitStatus::from_raw(9)), ExitCode::FAILURE);
    }

    #[test]
    fn hopper_tests_are_skipped_with_a_message_off_compute_capability_9_0() {
        assert!(hopper_skip("9.0").is_empty());
        assert_eq!(hopper_skip("10.0"), ["--skip", "hopper_"]);
        assert_eq!(hopper_skip("8.9"), ["--skip", "hopper_"]);
    }

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
