//! `build-ptx`: the kernels crate through rustc's nvptx64 backend, to one PTX file.
//!
//! Output, relative to the project root:
//! - `target/ptx/kernels.ptx`: the PTX module holding every kernel but the Hopper ones
//!   (`.target sm_90` by default, loadable on any GPU from compute capability 9.0);
//! - `target/ptx/kernels_sm90a.ptx`: the Hopper kernels (`kernels::HOPPER_KERNEL_NAMES`, built
//!   with the kernels crate's `hopper` feature and `-C target-cpu=sm_90a`): `wgmma` exists only
//!   on the `sm_90a` target, whose code loads only on compute capability 9.0 exactly;
//! - `target/ptx/kernels.json`, `target/ptx/kernels_sm90a.json`: their manifests (arch, profile,
//!   source fingerprint, entry points, ptxas resource report), which the host's build script
//!   checks before embedding the PTX.

use crate::{PtxArgs, cargo, fingerprint, ptxas};
use anyhow::{Context, Result, bail, ensure};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "nvptx64-nvidia-cuda";

/// What `target/ptx/kernels.json` records.
#[derive(Serialize)]
pub struct Manifest {
    /// `.target` of the PTX, e.g. `sm_90`.
    pub arch: String,
    /// `release` or `ptx-checked`.
    pub profile: String,
    /// [`fingerprint::kernel_fingerprint`] of the sources the PTX was built from.
    pub fingerprint: String,
    /// Every `.entry` in the PTX.
    pub entries: Vec<String>,
    /// `ptxas -v` per kernel, when ptxas was found.
    pub resources: Option<Vec<ptxas::KernelResources>>,
}

/// The `sm_90a` target of the Hopper module.
pub const HOPPER_ARCH: &str = "sm_90a";

/// One PTX module: its file stem, target, kernels-crate features and the kernels it must hold.
struct Module {
    stem: &'static str,
    arch: String,
    features: &'static str,
    kernels: &'static [&'static str],
    /// `.maxntid` per kernel (rustc has no attribute for it).
    max_threads: &'static [(&'static str, u32)],
}

/// Builds both PTX modules and their manifests; returns the main module's path.
pub fn build(root: &Path, args: &PtxArgs) -> Result<PathBuf> {
    check_toolchain(root)?;
    let main = Module {
        stem: "kernels",
        arch: args.arch.clone(),
        features: "",
        kernels: kernels::KERNEL_NAMES,
        max_threads: &[],
    };
    let path = build_module(root, args, &main)?;
    let hopper = Module {
        stem: "kernels_sm90a",
        arch: HOPPER_ARCH.into(),
        features: "hopper",
        kernels: kernels::HOPPER_KERNEL_NAMES,
        max_threads: if args.release {
            kernels::matmul::wgmma::MAX_THREADS
        } else {
            kernels::matmul::wgmma::CHECKED_MAX_THREADS
        },
    };
    build_module(root, args, &hopper)?;
    Ok(path)
}

fn build_module(root: &Path, args: &PtxArgs, module: &Module) -> Result<PathBuf> {
    let profile = if args.release { "release" } else { "ptx-checked" };
    // A target directory per module: the feature changes every artifact.
    let target_dir = root.join(if module.features.is_empty() {
        "target/nvptx".into()
    } else {
        format!("target/nvptx-{}", module.features)
    });
    let flags = format!("-Ctarget-cpu={} -Cpanic=immediate-abort -Zunstable-options", module.arch);
    eprintln!("xtask build-ptx: {} -> {TARGET} ({}, profile {profile})", module.stem, module.arch);
    let status = cargo()
        .current_dir(root)
        .env("CARGO_TARGET_NVPTX64_NVIDIA_CUDA_RUSTFLAGS", &flags)
        .args(["rustc", "--quiet", "--package", "kernels", "--lib", "--target", TARGET, "-Zbuild-std=core"])
        .args(["--profile", profile])
        .args(if module.features.is_empty() { vec![] } else { vec!["--features", module.features] })
        .arg("--target-dir")
        .arg(&target_dir)
        .args(["--", "--emit=asm"])
        .status()
        .context("running cargo rustc for the nvptx64 target")?;
    ensure!(status.success(), "compiling the kernels for {TARGET} failed ({status})");

    let deps = target_dir.join(TARGET).join(profile).join("deps");
    let asm = newest_kernels_asm(&deps)?;
    let mut ptx = std::fs::read_to_string(&asm).with_context(|| format!("reading {}", asm.display()))?;
    if !module.max_threads.is_empty() {
        ptx = add_maxntid(&ptx, module.max_threads)?;
    }
    let entries = check_ptx(&ptx, &module.arch, module.kernels)?;

    let out_dir = root.join("target/ptx");
    std::fs::create_dir_all(&out_dir)?;
    let ptx_path = out_dir.join(format!("{}.ptx", module.stem));
    std::fs::write(&ptx_path, &ptx)?;

    let resources = match ptxas::find() {
        Some(ptxas) => {
            let cubin = out_dir.join(format!("{}.cubin", module.stem));
            let (report, losses) = ptxas::assemble(&ptxas, &ptx_path, &module.arch, &cubin)?;
            ptxas::print_report(&report);
            if !losses.is_empty() {
                // ptxas serialising `wgmma` (C7520 and kin) costs most of the tensor cores' rate
                // without changing a result: as silent as a spill.
                if args.release {
                    bail!("ptxas reports performance losses:\n{}", losses.join("\n"));
                }
                eprintln!("xtask build-ptx: warning: ptxas reports performance losses:\n{}", losses.join("\n"));
            }
            let spilling: Vec<&str> =
                report.iter().filter(|r| r.spill_stores + r.spill_loads > 0).map(|r| r.kernel.as_str()).collect();
            if !spilling.is_empty() {
                // A spill means a kernel's registers went to local memory: a silent slowdown. The
                // checked build is for finding bugs, not for timing: its bounds and overflow
                // checks cost registers, and a spill there (sgemm_warp_tiled's 8x16 accumulators)
                // changes no result.
                if args.release {
                    bail!("kernels spill registers to local memory: {}", spilling.join(", "));
                }
                eprintln!(
                    "xtask build-ptx: warning: the checked build spills registers in {} (a release build fails on this)",
                    spilling.join(", ")
                );
            }
            for k in report.iter().filter(|r| r.stack_bytes > 0) {
                eprintln!(
                    "xtask build-ptx: warning: {} uses a {}-byte stack frame (local memory)",
                    k.kernel, k.stack_bytes
                );
            }
            Some(report)
        }
        None => {
            eprintln!(
                "xtask build-ptx: ptxas not found (set PTXAS, put it on PATH, or install the CUDA toolkit): no resource report"
            );
            None
        }
    };

    let manifest = Manifest {
        arch: module.arch.clone(),
        profile: profile.into(),
        fingerprint: fingerprint::kernel_fingerprint(root)?,
        entries,
        resources,
    };
    std::fs::write(out_dir.join(format!("{}.json", module.stem)), serde_json::to_string_pretty(&manifest)?)?;
    println!(
        "xtask build-ptx: wrote {} ({} kernels)",
        ptx_path.strip_prefix(root).unwrap_or(&ptx_path).display(),
        manifest.entries.len()
    );
    Ok(ptx_path)
}

/// Fails with the command that fixes it when the pinned toolchain lacks rust-src or the target.
fn check_toolchain(root: &Path) -> Result<()> {
    let toolchain = std::fs::read_to_string(root.join("rust-toolchain.toml"))?
        .lines()
        .find_map(|l| l.strip_prefix("channel = ").map(|c| c.trim_matches('"').to_string()))
        .context("rust-toolchain.toml names no channel")?;
    let out = Command::new("rustc")
        .current_dir(root)
        .args(["--print", "sysroot"])
        .output()
        .context("running rustc: is rustup installed?")?;
    if !out.status.success() {
        bail!(
            "the pinned toolchain {toolchain} is not usable ({}): install it with\n  rustup toolchain install {toolchain} --component rust-src --target {TARGET}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let sysroot = PathBuf::from(String::from_utf8(out.stdout)?.trim());
    if !sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml").is_file() {
        bail!(
            "the toolchain {toolchain} has no rust-src (needed by -Zbuild-std=core): rustup component add rust-src --toolchain {toolchain}"
        );
    }
    if !sysroot.join("lib/rustlib").join(TARGET).is_dir() {
        bail!(
            "the toolchain {toolchain} lacks the {TARGET} target: rustup target add {TARGET} --toolchain {toolchain}"
        );
    }
    Ok(())
}

/// rustc names its `--emit=asm` output `kernels-<hash>.s`; an old build may leave others beside it.
fn newest_kernels_asm(deps: &Path) -> Result<PathBuf> {
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in std::fs::read_dir(deps).with_context(|| format!("reading {}", deps.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with("kernels-") && name.ends_with(".s") {
            let modified = path.metadata()?.modified()?;
            if newest.as_ref().is_none_or(|(t, _)| modified > *t) {
                newest = Some((modified, path));
            }
        }
    }
    newest.map(|(_, p)| p).with_context(|| format!("rustc wrote no kernels-*.s under {}", deps.display()))
}

/// Adds `.maxntid threads, 1, 1` to each named `.entry`: with it, ptxas (here and in the
/// driver's JIT) caps registers so that a block of `threads` fits an SM, instead of taking up to
/// 255 and failing the launch with "too many resources requested" (seen with the driver's JIT
/// of `wgmma_tf32` at 288 threads: 187 registers from the local ptxas, and warps are given
/// registers in groups of four, so 288 threads count as 384: at most 168 registers).
pub fn add_maxntid(ptx: &str, kernels: &[(&str, u32)]) -> Result<String> {
    let mut out = String::with_capacity(ptx.len() + 64);
    let mut pending: Option<u32> = None;
    let mut added = 0;
    for line in ptx.lines() {
        out.push_str(line);
        out.push('\n');
        let name = line.trim_start().strip_prefix(".visible .entry ").map(|r| r.split('(').next().unwrap_or("").trim());
        if let Some(name) = name {
            pending = kernels.iter().find(|(k, _)| *k == name).map(|(_, t)| *t);
            if !line.trim_end().ends_with(')') {
                continue;
            }
        } else if line.trim() != ")" {
            continue;
        }
        if let Some(threads) = pending.take() {
            out.push_str(&format!(".maxntid {threads}, 1, 1\n"));
            added += 1;
        }
    }
    ensure!(added == kernels.len(), "added .maxntid to {added} of the {} kernels named", kernels.len());
    Ok(out)
}

/// Checks what the host relies on: the `.target`, every kernel's `.entry`, and no call to a
/// function outside the module (such a module fails to load). Returns the entries.
pub fn check_ptx(ptx: &str, arch: &str, kernels: &[&str]) -> Result<Vec<String>> {
    ensure!(ptx.lines().any(|l| l.trim() == format!(".target {arch}")), "the PTX does not target {arch}");
    let entries: Vec<String> = ptx
        .lines()
        .filter_map(|l| l.trim().strip_prefix(".visible .entry "))
        .map(|rest| rest.trim_end_matches('(').trim().to_string())
        .collect();
    for name in kernels {
        ensure!(entries.iter().any(|e| e == name), "the PTX has no .entry {name}");
    }
    if let Some(ext) = ptx.lines().find(|l| l.trim_start().starts_with(".extern .func")) {
        bail!("the PTX calls a function it does not define ({}): a kernel calls non-inlinable code", ext.trim());
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::check_ptx;

    /// A module header with an `.entry` for every kernel the crate declares.
    fn complete_module() -> String {
        let entries: String = kernels::KERNEL_NAMES.iter().map(|k| format!(".visible .entry {k}(\n")).collect();
        format!(".version 7.8\n.target sm_90\n.address_size 64\n{entries}")
    }

    #[test]
    fn maxntid_goes_between_each_entrys_parameters_and_body() {
        let ptx = ".visible .entry k(\n\t.param .u64 p\n)\n{\n\tret;\n}\n.visible .entry j()\n{\n}\n\
                   .visible .entry other(\n\t.param .u64 p\n)\n{\n}\n";
        // rustc writes parameters one per line and closes the list on its own line; a kernel
        // without parameters closes it on the entry's line. Kernels not named are left alone.
        let out = super::add_maxntid(ptx, &[("k", 288), ("j", 384)]).unwrap();
        assert_eq!(out.matches(".maxntid").count(), 2);
        assert!(out.contains(".entry j()\n.maxntid 384, 1, 1\n{"), "{out}");
        assert!(out.contains(")\n.maxntid 288, 1, 1\n{\n\tret;"), "{out}");
        assert!(super::add_maxntid(".version 8.0\n", &[("k", 288)]).is_err());
    }

    #[test]
    fn check_ptx_lists_entries_of_a_complete_module() {
        let entries = check_ptx(&complete_module(), "sm_90", kernels::KERNEL_NAMES).unwrap();
        assert_eq!(entries.len(), kernels::KERNEL_NAMES.len());
        assert!(entries.contains(&"histogram_cluster_i32".to_string()));
    }

    #[test]
    fn check_ptx_rejects_wrong_target_missing_entry_and_extern_calls() {
        let good = complete_module();
        assert!(
            check_ptx(&good, "sm_80", kernels::KERNEL_NAMES).unwrap_err().to_string().contains("does not target sm_80")
        );
        let missing = good.replace("entry histogram_global_i32(", "entry other(");
        assert!(
            check_ptx(&missing, "sm_90", kernels::KERNEL_NAMES)
                .unwrap_err()
                .to_string()
                .contains("no .entry histogram_global_i32")
        );
        let external = format!("{good}.extern .func panic_bounds_check()\n");
        assert!(
            check_ptx(&external, "sm_90", kernels::KERNEL_NAMES).unwrap_err().to_string().contains("does not define")
        );
    }
}
