//! `build-ptx`: this repository's two PTX modules, built by nvptx-builder.
//!
//! Output, relative to the project root:
//! - `target/ptx/kernels.ptx`: the PTX module holding every kernel but the Hopper ones
//!   (`.target sm_90` by default, loadable on any GPU from compute capability 9.0);
//! - `target/ptx/kernels_sm90a.ptx`: the Hopper kernels (`kernels::HOPPER_KERNEL_NAMES`, built
//!   with the kernels crate's `hopper` feature and `-C target-cpu=sm_90a`): `wgmma` exists only
//!   on the `sm_90a` target, whose code loads only on compute capability 9.0 exactly;
//! - `target/ptx/kernels.json`, `target/ptx/kernels_sm90a.json`: their manifests (arch, profile,
//!   source fingerprint, entry points, ptxas resource report), which the host's build script
//!   checks before embedding the PTX; `*.cubin` beside them when ptxas was found.
//!
//! Policy on top of the builder's: a release build fails on a register spill or a ptxas
//! performance loss (silent slowdowns); the checked build only warns (its bounds and overflow
//! checks cost registers, and a spill there changes no result).

use crate::PtxArgs;
use anyhow::{Context, Result};
use nvptx_builder::{Profile, PtxBuilder, PtxasCheck};
use std::path::{Path, PathBuf};

/// The `sm_90a` target of the Hopper module.
pub const HOPPER_ARCH: &str = "sm_90a";

/// One PTX module: its file stem, target, kernels-crate features and the kernels it must hold.
struct Module {
    stem: &'static str,
    arch: String,
    features: &'static [&'static str],
    kernels: &'static [&'static str],
    /// `.maxntid` per kernel (rustc has no attribute for it).
    max_threads: &'static [(&'static str, u32)],
}

/// The two modules of `args`.
fn modules(args: &PtxArgs) -> [Module; 2] {
    [
        Module {
            stem: "kernels",
            arch: args.arch.clone(),
            features: &[],
            kernels: kernels::KERNEL_NAMES,
            max_threads: &[],
        },
        Module {
            stem: "kernels_sm90a",
            arch: HOPPER_ARCH.into(),
            features: &["hopper"],
            kernels: kernels::HOPPER_KERNEL_NAMES,
            max_threads: if args.release {
                kernels::matmul::wgmma::MAX_THREADS
            } else {
                kernels::matmul::wgmma::CHECKED_MAX_THREADS
            },
        },
    ]
}

/// The builder of one module, writing into `target/ptx` with a nested target directory per
/// module (the feature changes every artifact).
fn builder(root: &Path, args: &PtxArgs, module: &Module) -> PtxBuilder {
    let target_dir = match module.features {
        [] => root.join("target/nvptx"),
        features => root.join(format!("target/nvptx-{}", features.join("-"))),
    };
    let mut builder = PtxBuilder::new(root.join("kernels"))
        .arch(&module.arch)
        .profile(if args.release { Profile::Release } else { Profile::Checked })
        .module_name(module.stem)
        .out_dir(root.join("target/ptx"))
        .target_dir(target_dir)
        .expect_kernels(module.kernels.iter().copied())
        .ptxas(PtxasCheck::IfFound)
        .deny_spills(args.release)
        .cargo_directives(false);
    for feature in module.features {
        builder = builder.feature(feature);
    }
    for (kernel, threads) in module.max_threads {
        builder = builder.max_threads(kernel, *threads);
    }
    builder
}

/// Builds both PTX modules and their manifests; returns the main module's path.
pub fn build(root: &Path, args: &PtxArgs) -> Result<PathBuf> {
    let mut main = None;
    for module in modules(args) {
        let built = builder(root, args, &module).build().with_context(|| format!("building {}", module.stem))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hopper_module_caps_every_kernel_it_lists_in_both_profiles() {
        for release in [true, false] {
            let args = PtxArgs { arch: "sm_90".into(), release };
            let [main, hopper] = modules(&args);
            assert!(main.max_threads.is_empty() && main.features.is_empty());
            assert_eq!(hopper.arch, "sm_90a");
            for (kernel, _) in hopper.max_threads {
                assert!(hopper.kernels.contains(kernel), "{kernel}");
            }
        }
    }
}
