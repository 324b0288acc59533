//! `ptxas -v`: assembles the PTX for a real architecture and reports per-kernel resources.

use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One kernel's line of the `ptxas -v` report.
#[derive(Serialize, Debug, PartialEq, Default)]
pub struct KernelResources {
    /// Kernel name.
    pub kernel: String,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory, bytes.
    pub shared_bytes: u32,
    /// Stack frame, bytes (local memory a kernel uses on purpose).
    pub stack_bytes: u32,
    /// Bytes of spill stores (registers that did not fit).
    pub spill_stores: u32,
    /// Bytes of spill loads.
    pub spill_loads: u32,
}

/// `ptxas` from `$PTXAS`, `PATH`, `$CUDA_HOME`/`$CUDA_PATH`, or `/usr/local/cuda`.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTXAS") {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH").into_iter().flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>());
    let toolkits =
        ["CUDA_HOME", "CUDA_PATH"].into_iter().filter_map(std::env::var_os).map(|p| PathBuf::from(p).join("bin"));
    on_path.chain(toolkits).chain([PathBuf::from("/usr/local/cuda/bin")]).map(|d| d.join("ptxas")).find(|p| p.is_file())
}

/// Runs `ptxas -arch=<arch> -v` on the PTX, writing the cubin; fails with ptxas's message when it
/// rejects the PTX. Returns the per-kernel report and ptxas's "Potential Performance Loss" lines
/// (e.g. `wgmma` serialised).
pub fn assemble(ptxas: &Path, ptx: &Path, arch: &str, cubin: &Path) -> Result<(Vec<KernelResources>, Vec<String>)> {
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
        .output()
        .with_context(|| format!("running {}", ptxas.display()))?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("ptxas rejected {}:\n{}", ptx.display(), log.trim());
    }
    Ok((parse_report(&log), performance_losses(&log)))
}

/// The lines of a ptxas log that report a performance loss.
pub fn performance_losses(log: &str) -> Vec<String> {
    log.lines().filter(|l| l.contains("Performance Loss")).map(|l| l.trim().to_string()).collect()
}

/// Parses the `ptxas info` lines: a "Function properties for K" block (stack, spills) and a
/// "Used N registers, ... N bytes smem" line after each "Compiling entry function 'K'".
pub fn parse_report(log: &str) -> Vec<KernelResources> {
    let mut kernels: Vec<KernelResources> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default();
            kernels.push(KernelResources { kernel: name.to_string(), ..Default::default() });
        } else if let Some(k) = kernels.last_mut() {
            if line.contains("bytes stack frame") {
                k.stack_bytes = number_before(line, "bytes stack frame");
                k.spill_stores = number_before(line, "bytes spill stores");
                k.spill_loads = number_before(line, "bytes spill loads");
            } else if line.contains("Used") && line.contains("registers") {
                k.registers = number_before(line, "registers");
                k.shared_bytes = number_before(line, "bytes smem");
            }
        }
    }
    kernels.sort_by(|a, b| a.kernel.cmp(&b.kernel));
    kernels
}

fn number_before(line: &str, marker: &str) -> u32 {
    if !line.contains(marker) {
        return 0;
    }
    line.split(marker)
        .next()
        .and_then(|head| head.split(|c: char| !c.is_ascii_digit()).rfind(|s| !s.is_empty()))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Prints the report as a table.
pub fn print_report(report: &[KernelResources]) {
    println!("{:<28} {:>9} {:>11} {:>7} {:>7}", "kernel (ptxas -v)", "registers", "smem bytes", "stack", "spills");
    for k in report {
        println!(
            "{:<28} {:>9} {:>11} {:>7} {:>7}",
            k.kernel,
            k.registers,
            k.shared_bytes,
            k.stack_bytes,
            k.spill_stores + k.spill_loads
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'matmul_tiled32' for 'sm_90'
ptxas info    : Function properties for matmul_tiled32
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 8192 bytes smem
ptxas info    : Compiling entry function 'matmul_naive' for 'sm_90'
ptxas info    : Function properties for matmul_naive
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 30 registers, used 0 barriers, 80 bytes cumulative stack size
";

    #[test]
    fn performance_losses_pick_the_wgmma_serialisation_lines() {
        let log = format!(
            "{LOG}ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized due to x in the function 'k'\n"
        );
        assert_eq!(performance_losses(LOG), Vec::<String>::new());
        let losses = performance_losses(&log);
        assert_eq!(losses.len(), 1);
        assert!(losses[0].starts_with("ptxas info    : (C7520)"));
    }

    #[test]
    fn parse_report_reads_registers_shared_memory_stack_and_spills() {
        let report = parse_report(LOG);
        assert_eq!(report.len(), 2);
        assert_eq!(report[0], KernelResources { kernel: "matmul_naive".into(), registers: 30, ..Default::default() });
        assert_eq!(
            report[1],
            KernelResources {
                kernel: "matmul_tiled32".into(),
                registers: 32,
                shared_bytes: 8192,
                stack_bytes: 8,
                spill_stores: 4,
                spill_loads: 12
            }
        );
    }
}
