//! `ptxas -v`: assembles the PTX for a real architecture and reports per-kernel resources.

use crate::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One kernel's line of the `ptxas -v` report.
///
/// ```
/// let report = nvptx_builder::ptxas::parse_report(
///     "ptxas info    : Compiling entry function 'saxpy' for 'sm_90'\n\
///      ptxas info    : Used 10 registers, used 0 barriers, 0 bytes smem\n",
/// );
/// assert_eq!((report[0].kernel.as_str(), report[0].registers), ("saxpy", 10));
/// ```
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
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

/// The environment variable naming the `ptxas` to use.
pub const PTXAS_ENV: &str = "PTXAS";

/// `ptxas` from `$PTXAS`, `PATH`, `$CUDA_HOME`/`$CUDA_PATH`, or `/usr/local/cuda`.
///
/// ```
/// if let Some(ptxas) = nvptx_builder::ptxas::find() {
///     println!("assembling with {}", ptxas.display());
/// }
/// ```
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(PTXAS_ENV) {
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
///
/// ```no_run
/// use std::path::Path;
/// let ptxas = nvptx_builder::ptxas::find().expect("no ptxas");
/// let (report, losses) =
///     nvptx_builder::ptxas::assemble(&ptxas, Path::new("k.ptx"), "sm_90", Path::new("k.cubin"))?;
/// # Ok::<(), nvptx_builder::Error>(())
/// ```
pub fn assemble(
    ptxas: &Path,
    ptx: &Path,
    arch: &str,
    cubin: &Path,
) -> Result<(Vec<KernelResources>, Vec<String>), Error> {
    let out = Command::new(ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(ptx)
        .arg("-o")
        .arg(cubin)
        .output()
        .map_err(|source| Error::Spawn { program: ptxas.display().to_string(), source })?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(Error::PtxasRejected { ptx: ptx.to_path_buf(), log: log.trim().to_string() });
    }
    Ok((parse_report(&log), performance_losses(&log)))
}

/// The lines of a ptxas log that report a performance loss.
///
/// ```
/// let log = "ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized";
/// assert_eq!(nvptx_builder::ptxas::performance_losses(log).len(), 1);
/// ```
pub fn performance_losses(log: &str) -> Vec<String> {
    log.lines().filter(|l| l.contains("Performance Loss")).map(|l| l.trim().to_string()).collect()
}

/// Parses the `ptxas info` lines: a "Function properties for K" block (stack, spills) and a
/// "Used N registers, ... N bytes smem" line after each "Compiling entry function 'K'".
///
/// The properties of a function the kernels call out of line (`.func`) are ptxas's lines too,
/// printed between two kernels' blocks: they are not the kernel's, and reading them as its would
/// overwrite its spills with the function's.
///
/// ```
/// let log = "ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
///            ptxas info    : Function properties for k\n\
///                8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n\
///            ptxas info    : Used 40 registers, used 1 barriers, 4096 bytes smem\n";
/// let k = &nvptx_builder::ptxas::parse_report(log)[0];
/// assert_eq!((k.registers, k.shared_bytes, k.stack_bytes, k.spill_stores), (40, 4096, 8, 4));
/// ```
pub fn parse_report(log: &str) -> Vec<KernelResources> {
    let mut kernels: Vec<KernelResources> = Vec::new();
    // Whose "Function properties" block the next stack line belongs to.
    let mut properties_of = String::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default();
            kernels.push(KernelResources { kernel: name.to_string(), ..Default::default() });
        } else if let Some(name) = line.split("Function properties for ").nth(1) {
            properties_of = name.trim().to_string();
        } else if let Some(k) = kernels.last_mut() {
            if line.contains("bytes stack frame") {
                if properties_of == k.kernel {
                    k.stack_bytes = number_before(line, "bytes stack frame");
                    k.spill_stores = number_before(line, "bytes spill stores");
                    k.spill_loads = number_before(line, "bytes spill loads");
                }
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

/// The report as a table, one line per kernel under a header.
///
/// ```
/// use nvptx_builder::ptxas::{KernelResources, report_table};
/// let table = report_table(&[KernelResources { kernel: "saxpy".into(), registers: 10, ..Default::default() }]);
/// assert!(table.lines().nth(1).unwrap().starts_with("saxpy"));
/// ```
pub fn report_table(report: &[KernelResources]) -> String {
    let mut table =
        format!("{:<28} {:>9} {:>11} {:>7} {:>7}\n", "kernel (ptxas -v)", "registers", "smem bytes", "stack", "spills");
    for k in report {
        table += &format!(
            "{:<28} {:>9} {:>11} {:>7} {:>7}\n",
            k.kernel,
            k.registers,
            k.shared_bytes,
            k.stack_bytes,
            k.spill_stores + k.spill_loads
        );
    }
    table
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
    fn parse_report_keeps_a_kernels_spills_when_an_out_of_line_functions_properties_follow() {
        // ptxas 12.9 on the weighted histogram kernels, which call one cold function.
        let log = "ptxas info    : Compiling entry function 'histogram_weighted_partials_u16' for 'sm_90'
ptxas info    : Function properties for histogram_weighted_partials_u16
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 64 registers, used 1 barriers, 8 bytes cumulative stack size
ptxas info    : Compile time = 482.317 ms
ptxas info    : Function properties for _RNvNtNtNtCs46tZsAbb6ql_7kernels9histogram8weighted11device_code10add_global
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'histogram_weighted_i32' for 'sm_90'
ptxas info    : Function properties for histogram_weighted_i32
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 72 registers, used 1 barriers
";
        let report = parse_report(log);
        assert_eq!(
            report[1],
            KernelResources {
                kernel: "histogram_weighted_partials_u16".into(),
                registers: 64,
                stack_bytes: 8,
                spill_stores: 4,
                spill_loads: 4,
                ..Default::default()
            }
        );
        assert_eq!(
            report[0],
            KernelResources { kernel: "histogram_weighted_i32".into(), registers: 72, ..Default::default() }
        );
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
