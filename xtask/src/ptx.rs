//! `build-ptx`: this repository's two PTX modules (`kernels::PTX_MODULES`), built by
//! nvptx-builder as the library's build script builds them, for the resource report.
//!
//! Output, relative to the project root:
//! - `target/ptx/kernels.ptx`: the PTX module holding every kernel but the Hopper ones
//!   (`.target sm_90` by default, loadable on any GPU from compute capability 9.0);
//! - `target/ptx/kernels_sm90a.ptx`: the Hopper kernels (`kernels::HOPPER_KERNEL_NAMES`, built
//!   with the kernels crate's `hopper` feature and `-C target-cpu=sm_90a`): `wgmma` exists only
//!   on the `sm_90a` target, whose code loads only on compute capability 9.0 exactly;
//! - `target/ptx/kernels.json`, `target/ptx/kernels_sm90a.json`: their manifests (arch, profile,
//!   source fingerprint, entry points, ptxas resource report); `*.cubin` beside them when ptxas
//!   was found. The library embeds the PTX its own build script builds, not these files.
//!
//! Policy on top of the builder's: a release build fails on a register spill, a ptxas
//! performance loss, or a `few_rows` kernel whose registers hold fewer blocks on an SM than the
//! planner's `few_rows_blocks_per_sm` counts on (its split of `k` would spill into a second
//! wave): silent slowdowns; the checked build only warns (its bounds and overflow checks cost
//! registers, and neither changes a result).

use crate::PtxArgs;
use anyhow::{Context, Result};
use nvptx_builder::{Profile, PtxBuilder, PtxasCheck};
use std::path::{Path, PathBuf};

/// The builder of one module, writing into `target/ptx` with the nested target directory the
/// library's build script shares (`target/nvptx`, `target/nvptx-hopper`: a feature changes
/// every artifact).
fn builder(root: &Path, args: &PtxArgs, module: &kernels::PtxModule) -> PtxBuilder {
    let target_dir = match module.features {
        [] => root.join("target/nvptx"),
        features => root.join(format!("target/nvptx-{}", features.join("-"))),
    };
    let arch = if module.features.is_empty() { args.arch.as_str() } else { module.arch };
    let mut builder = PtxBuilder::new(root.join("kernels"))
        .arch(arch)
        .profile(if args.release { Profile::Release } else { Profile::Checked })
        .module_name(module.name)
        .out_dir(root.join("target/ptx"))
        .target_dir(target_dir)
        .expect_kernels(module.kernels.iter().copied())
        .ptxas(PtxasCheck::IfFound)
        .deny_spills(args.release)
        .cargo_directives(false);
    for feature in module.features {
        builder = builder.feature(feature);
    }
    let max_threads = if args.release { module.max_threads } else { module.checked_max_threads };
    for (kernel, threads) in max_threads {
        builder = builder.max_threads(kernel, *threads);
    }
    builder
}

/// The kernels whose registers hold fewer blocks on an SM than the planner's tables count on
/// (`few_rows_blocks_per_sm`, by which `few_rows` splits `k` into one wave: a block past the
/// wave costs a second pass), one line each.
fn planner_occupancy_shortfalls(report: &[nvptx_builder::ptxas::KernelResources]) -> Vec<String> {
    use kernels::matmul::element::OperandType;
    use kernels::matmul::skinny::{FEW_ROWS_MAX_M, FEW_ROWS_THREADS, few_rows_blocks_per_sm, few_rows_kernel_of};
    use kernels::occupancy::{SmResources, blocks_per_sm};
    let mut short = Vec::new();
    for t in OperandType::ALL {
        for m in 1..=FEW_ROWS_MAX_M {
            let (Some(kernel), Some(wanted)) = (few_rows_kernel_of(t, m), few_rows_blocks_per_sm(t, m)) else {
                continue;
            };
            let Some(r) = report.iter().find(|r| r.kernel == kernel) else { continue };
            let held = blocks_per_sm(SmResources::SM_90, r.registers, r.shared_bytes, FEW_ROWS_THREADS);
            let line =
                format!("{kernel}: {} registers hold {held} blocks an SM, the planner counts {wanted}", r.registers);
            if held < wanted && !short.contains(&line) {
                short.push(line);
            }
        }
    }
    short
}

/// Builds both PTX modules and their manifests; returns the main module's path.
pub fn build(root: &Path, args: &PtxArgs) -> Result<PathBuf> {
    let mut main = None;
    for module in kernels::PTX_MODULES {
        let built = builder(root, args, &module).build().with_context(|| format!("building {}", module.name))?;
        match &built.manifest.resources {
            Some(report) => {
                print!("{}", nvptx_builder::ptxas::report_table(report));
                let short = planner_occupancy_shortfalls(report);
                if !short.is_empty() && args.release {
                    anyhow::bail!("the planner's blocks per SM do not fit ptxas's registers:\n{}", short.join("\n"));
                }
                for line in short {
                    eprintln!("xtask build-ptx: warning (checked build): {line}");
                }
            }
            None => eprintln!(
                "xtask build-ptx: ptxas not found (set PTXAS, put it on PATH, or install the CUDA toolkit): no resource report"
            ),
        }
        println!(
            "xtask build-ptx: wrote {} ({} kernels)",
            built.ptx.strip_prefix(root).unwrap_or(&built.ptx).display(),
            built.manifest.entries.len()
        );
        main.get_or_insert(built.ptx);
    }
    Ok(main.expect("two modules"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_rows_kernel_with_too_many_registers_for_the_planners_wave_is_reported() {
        let kernel = |name: &str, registers| nvptx_builder::ptxas::KernelResources {
            kernel: name.to_string(),
            registers,
            ..Default::default()
        };
        assert!(planner_occupancy_shortfalls(&[kernel("matmul_few_rows_bf16_1", 56)]).is_empty());
        let short = planner_occupancy_shortfalls(&[kernel("matmul_few_rows_bf16_1", 64)]);
        assert_eq!(short, ["matmul_few_rows_bf16_1: 64 registers hold 8 blocks an SM, the planner counts 9"]);
    }
}
