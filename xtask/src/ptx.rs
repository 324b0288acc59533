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
//! Policy on top of the builder's: a release build fails on a register spill or a ptxas
//! performance loss (silent slowdowns); the checked build only warns (its bounds and overflow
//! checks cost registers, and a spill there changes no result).

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

/// Builds both PTX modules and their manifests; returns the main module's path.
pub fn build(root: &Path, args: &PtxArgs) -> Result<PathBuf> {
    let mut main = None;
    for module in kernels::PTX_MODULES {
        let built = builder(root, args, &module).build().with_context(|| format!("building {}", module.name))?;
        match &built.manifest.resources {
            Some(report) => print!("{}", nvptx_builder::ptxas::report_table(report)),
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
