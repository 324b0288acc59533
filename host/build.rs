//! Builds the kernels' two PTX modules (`kernels::PTX_MODULES`) with nvptx-builder, the way
//! Rust-CUDA's `cuda_builder` runs from a build script, and embeds them: a crate that depends on
//! this library (by path or git) gets release PTX with no step of its own, and checked PTX (bounds
//! and overflow checks compiled in) when it asks with `NVPTX_PROFILE=checked`.
//!
//! A module that cannot be built (no nightly toolchain with `rust-src` and the `nvptx64` target,
//! say) is not a build failure: the build prints the reason as a warning and embeds it, and the
//! library returns it as `Error::PtxUnavailable` when a GPU is opened. So `cargo check`, `cargo
//! doc` and the CPU-only tests work on any machine.
//!
//! Where the builder finds ptxas (`PTXAS`, on `PATH` or in a CUDA toolkit) each module is also
//! assembled for its architecture and the cubin embedded beside the PTX: on a GPU of that compute
//! capability the library loads the cubin, and the driver has no PTX to compile (about 90 s for
//! these modules on a first load).
//!
//! Inside this repository (`OUT_DIR` under its `target/`), the nested builds share
//! `target/nvptx*` with `cargo xtask build-ptx`, so the debug and release builds of the library
//! and the report reuse one compilation per profile. A dependent's builds stay under its own
//! `OUT_DIR`: nothing is written into this crate's checkout.

use nvptx_builder::{Profile, PtxBuilder, PtxasCheck};
use std::path::{Path, PathBuf};

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir.parent().expect("host/ sits in the repository").to_path_buf();
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let kernels_dir = root.join("kernels");
    // Also when a build fails before the builder prints its own.
    println!("cargo:rerun-if-changed={}", kernels_dir.display());
    println!("cargo:rerun-if-changed={}", root.join("nvptx-std").display());
    for var in [nvptx_builder::PROFILE_ENV, "NVPTX_TOOLCHAIN", "PTXAS"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let shared_target = out.starts_with(root.join("target")).then(|| root.join("target"));
    let profile = Profile::from_env();
    for module in kernels::PTX_MODULES {
        // A cubin left by an earlier build with ptxas must not outlive its PTX.
        let cubin = out.join(format!("{}.cubin", module.name));
        let _ = std::fs::remove_file(&cubin);
        let built = match &profile {
            Ok(profile) => build(&kernels_dir, &out, shared_target.as_deref(), module, profile.unwrap_or_default()),
            Err(e) => Err(e.to_string()),
        };
        // Without ptxas there is no cubin, and the library loads the PTX (an empty file: none).
        if !cubin.exists() {
            std::fs::write(&cubin, []).expect("OUT_DIR is writable");
        }
        let problem = built.err();
        if let Some(problem) = &problem {
            println!("cargo:warning=hopper-kernels: PTX module {} not built:", module.name);
            for line in problem.lines() {
                println!("cargo:warning={line}");
            }
            std::fs::write(out.join(format!("{}.ptx", module.name)), "").expect("OUT_DIR is writable");
            std::fs::write(out.join(format!("{}.json", module.name)), "{}").expect("OUT_DIR is writable");
        }
        std::fs::write(out.join(format!("{}_problem.rs", module.name)), format!("{problem:?}"))
            .expect("OUT_DIR is writable");
    }
}

/// Builds `module` into `out` (`<name>.ptx` and `<name>.json`, and `<name>.cubin` where ptxas was
/// found).
fn build(
    kernels_dir: &Path,
    out: &Path,
    shared_target: Option<&Path>,
    module: kernels::PtxModule,
    profile: Profile,
) -> Result<(), String> {
    let mut builder = PtxBuilder::new(kernels_dir)
        .arch(module.arch)
        .profile(profile)
        .module_name(module.name)
        .out_dir(out)
        .expect_kernels(module.kernels.iter().copied())
        .ptxas(PtxasCheck::IfFound);
    if let Some(target) = shared_target {
        builder = builder.target_dir(target_dir(target, module));
    }
    for feature in module.features {
        builder = builder.feature(feature);
    }
    let max_threads = match profile {
        Profile::Release => module.max_threads,
        Profile::Checked => module.checked_max_threads,
    };
    for (kernel, threads) in max_threads {
        builder = builder.max_threads(kernel, *threads);
    }
    builder.build().map(|_| ()).map_err(|e| e.to_string())
}

/// The nested target directory of `module` under `target/`: one per feature set (a feature
/// changes every artifact), as `cargo xtask build-ptx` names them.
fn target_dir(target: &Path, module: kernels::PtxModule) -> PathBuf {
    match module.features {
        [] => target.join("nvptx"),
        features => target.join(format!("nvptx-{}", features.join("-"))),
    }
}
