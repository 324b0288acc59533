//! The nested build: a small workspace of the builder's own around the kernels crate, and the
//! pinned toolchain's cargo run on it.
//!
//! The kernels crate is built as a path dependency of that workspace rather than in its own
//! workspace, so that the build neither resolves the other members of the crate's workspace
//! (their dependencies may not be downloaded, or not even buildable for nvptx64), nor writes a
//! lock file or target directory into the crate's checkout (a cargo git checkout is not ours to
//! write), nor depends on that workspace's profiles: the wrapper fixes the ones the PTX needs.

use crate::toolchain::{TARGET, Toolchain};
use crate::{Error, Profile};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What `cargo metadata` says about a package.
#[derive(Deserialize, Debug)]
struct Package {
    name: String,
    manifest_path: PathBuf,
    source: Option<String>,
    targets: Vec<Target>,
}

#[derive(Deserialize, Debug)]
struct Target {
    name: String,
    kind: Vec<String>,
    src_path: PathBuf,
}

#[derive(Deserialize, Debug)]
struct Metadata {
    packages: Vec<Package>,
    workspace_root: PathBuf,
}

/// The kernels crate as cargo sees it.
#[derive(Debug, Clone)]
pub(crate) struct KernelCrate {
    /// Package name (`-p`).
    pub name: String,
    /// Library target name: rustc's crate name, the stem of the `.s` file.
    pub lib_name: String,
    /// The workspace it belongs to (where its lock file is).
    pub workspace_root: PathBuf,
}

fn run_metadata(toolchain: &Toolchain, manifest: &Path, extra: &[&str]) -> Result<Metadata, Error> {
    let mut cmd = toolchain.command("cargo");
    cmd.args(["metadata", "--format-version", "1"]).args(extra).arg("--manifest-path").arg(manifest);
    let out = cmd.output().map_err(|source| Error::Spawn { program: "rustup".into(), source })?;
    if !out.status.success() {
        return Err(Error::Metadata {
            manifest: manifest.to_path_buf(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    serde_json::from_slice(&out.stdout).map_err(|e| Error::Metadata {
        manifest: manifest.to_path_buf(),
        message: format!("unreadable cargo metadata output: {e}"),
    })
}

/// Reads the kernels crate's name, library name and workspace (`cargo metadata --no-deps`: no
/// resolution, nothing written).
pub(crate) fn kernel_crate(toolchain: &Toolchain, crate_dir: &Path) -> Result<KernelCrate, Error> {
    let manifest = crate_dir.join("Cargo.toml");
    if !manifest.is_file() {
        return Err(Error::NoCrate { dir: crate_dir.to_path_buf() });
    }
    let metadata = run_metadata(toolchain, &manifest, &["--no-deps"])?;
    let package = metadata
        .packages
        .iter()
        .find(|p| p.manifest_path.canonicalize().ok().as_deref() == Some(manifest.as_path()))
        .ok_or_else(|| Error::Metadata {
            manifest: manifest.clone(),
            message: "cargo metadata does not list this package".into(),
        })?;
    let lib = package
        .targets
        .iter()
        .find(|t| t.kind.iter().any(|k| k == "lib" || k == "rlib" || k == "cdylib" || k == "staticlib"))
        .ok_or_else(|| Error::NoLibrary { manifest: manifest.clone() })?;
    Ok(KernelCrate {
        name: package.name.clone(),
        lib_name: lib.name.replace('-', "_"),
        workspace_root: metadata.workspace_root,
    })
}

/// Writes the wrapper workspace under `dir` (only what changed, so that cargo sees no change
/// when there is none) and returns its manifest. The first time, its lock file starts as a copy
/// of the kernels workspace's, so that dependencies resolve to the versions that workspace uses.
pub(crate) fn write_wrapper(
    dir: &Path,
    krate: &KernelCrate,
    crate_dir: &Path,
    features: &[String],
    default_features: bool,
) -> Result<PathBuf, Error> {
    let toml_string = |s: &str| serde_json::to_string(s).expect("a string serialises");
    let features: Vec<String> = features.iter().map(|f| toml_string(f)).collect();
    let manifest = format!(
        "# Written by nvptx-builder: a workspace of its own around {name}, so that building it needs\n\
         # neither {name}'s workspace (its other members, lock file, target directory and profiles)\n\
         # nor write access to its checkout.\n\
         [package]\nname = \"nvptx-builder-wrapper\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [lib]\npath = \"lib.rs\"\n\n\
         [dependencies]\n{key} = {{ path = {path}, default-features = {default_features}, features = [{features}] }}\n\n\
         [workspace]\n\n\
         [profile.release]\ncodegen-units = 1\ndebug = false\n\n\
         [profile.{checked}]\ninherits = \"release\"\ndebug-assertions = true\noverflow-checks = true\n",
        name = krate.name,
        key = toml_string(&krate.name),
        path = toml_string(&crate_dir.to_string_lossy()),
        features = features.join(", "),
        checked = Profile::Checked.cargo_profile(),
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest)?;
    write_if_changed(&dir.join("lib.rs"), "#![no_std]\n")?;
    let lock = dir.join("Cargo.lock");
    let seed = krate.workspace_root.join("Cargo.lock");
    if !lock.exists() && seed.is_file() {
        std::fs::copy(&seed, &lock).map_err(|source| Error::Io { path: lock.clone(), source })?;
    }
    Ok(dir.join("Cargo.toml"))
}

fn write_if_changed(path: &Path, contents: &str) -> Result<(), Error> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(contents) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
    }
    std::fs::write(path, contents).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// The directories of every local (path) package the kernels crate is built from, itself
/// included, and the source file of its library target: what the PTX depends on besides the
/// toolchain.
pub(crate) fn local_packages(toolchain: &Toolchain, wrapper: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), Error> {
    let metadata = run_metadata(toolchain, wrapper, &["--filter-platform", TARGET])?;
    let mut dirs = Vec::new();
    let mut lib_roots = Vec::new();
    for package in metadata.packages.iter().filter(|p| p.source.is_none() && p.name != "nvptx-builder-wrapper") {
        let dir = package.manifest_path.parent().unwrap_or(Path::new("/")).to_path_buf();
        let libs = package.targets.iter().filter(|t| t.kind.iter().any(|k| k.contains("lib")));
        lib_roots.extend(libs.map(|t| t.src_path.clone()));
        dirs.push(dir);
    }
    dirs.sort();
    Ok((dirs, lib_roots))
}

/// `cargo rustc ... -- --emit=asm` for the kernels crate in the wrapper workspace: rustc's
/// assembly output for nvptx64 is the PTX. `rustflags` go to the nvptx64 units only (with
/// `--target`, they do not reach build scripts or proc macros); stdout goes to `stderr` when the
/// builder runs in a build script, where cargo would read it as directives.
#[allow(clippy::too_many_arguments)]
pub(crate) fn compile(
    toolchain: &Toolchain,
    wrapper: &Path,
    krate: &KernelCrate,
    profile: Profile,
    target_dir: &Path,
    rustflags: &[String],
    quiet: bool,
    stdout_to_stderr: bool,
) -> Result<PathBuf, Error> {
    let mut cmd: Command = toolchain.command("cargo");
    cmd.env("CARGO_ENCODED_RUSTFLAGS", rustflags.join("\x1f"))
        .args(["rustc", "--manifest-path"])
        .arg(wrapper)
        .args(["--package", &krate.name, "--lib", "--crate-type", "rlib", "--target", TARGET, "-Zbuild-std=core"])
        .args(["--profile", profile.cargo_profile()])
        .arg("--target-dir")
        .arg(target_dir)
        .args(if quiet { &["--quiet"][..] } else { &[] })
        .args(["--", "--emit=asm"]);
    let described = format!("cargo +{} rustc --package {} --target {TARGET} ...", toolchain.name, krate.name);
    // Captured, then passed on: a build script's output is hidden unless the build fails, so the
    // error carries rustc's first messages itself.
    let out = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|source| Error::Spawn { program: "rustup".into(), source })?;
    {
        use std::io::Write;
        if stdout_to_stderr {
            let _ = std::io::stderr().write_all(&out.stdout);
        } else {
            let _ = std::io::stdout().write_all(&out.stdout);
        }
        let _ = std::io::stderr().write_all(&out.stderr);
    }
    if !out.status.success() {
        let messages = first_errors(&String::from_utf8_lossy(&out.stderr), COMPILE_ERROR_LINES);
        return Err(Error::Compile { command: described, status: out.status.to_string(), messages });
    }
    let deps = target_dir.join(TARGET).join(profile.cargo_profile()).join("deps");
    newest_asm(&deps, &krate.lib_name)
}

/// Lines of rustc's messages a [`Error::Compile`] carries.
const COMPILE_ERROR_LINES: usize = 16;

/// The first `limit` lines of `stderr` from its first `error` line on (rustc's first error and
/// where it points), or its last lines when no line starts with `error`.
pub(crate) fn first_errors(stderr: &str, limit: usize) -> String {
    let lines: Vec<&str> = stderr.lines().collect();
    let start = lines.iter().position(|l| l.starts_with("error")).unwrap_or(lines.len().saturating_sub(limit));
    lines[start..].iter().take(limit).copied().collect::<Vec<_>>().join("\n")
}

/// rustc names its `--emit=asm` output `<crate>-<hash>.s`; an older build may leave others.
fn newest_asm(deps: &Path, lib_name: &str) -> Result<PathBuf, Error> {
    let mut newest: Option<(std::time::SystemTime, PathBuf)> = None;
    let prefix = format!("{lib_name}-");
    let entries = std::fs::read_dir(deps).map_err(|source| Error::Io { path: deps.to_path_buf(), source })?;
    for entry in entries {
        let path = entry.map_err(|source| Error::Io { path: deps.to_path_buf(), source })?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if name.starts_with(&prefix) && name.ends_with(".s") {
            let modified = path
                .metadata()
                .and_then(|m| m.modified())
                .map_err(|source| Error::Io { path: path.clone(), source })?;
            if newest.as_ref().is_none_or(|(t, _)| modified > *t) {
                newest = Some((modified, path));
            }
        }
    }
    newest.map(|(_, p)| p).ok_or_else(|| Error::NoAssembly { dir: deps.to_path_buf(), lib_name: lib_name.to_string() })
}

#[cfg(test)]
mod first_errors_tests {
    #[test]
    fn a_failed_compile_carries_rustc_s_first_error() {
        let stderr = "   Compiling kernels v0.1.0\nwarning: unused\nerror[E0658]: attributes on expressions are experimental\n  --> src/a.rs:1:2\nerror: aborting\n";
        let got = super::first_errors(stderr, 2);
        assert_eq!(got, "error[E0658]: attributes on expressions are experimental\n  --> src/a.rs:1:2");
        assert_eq!(super::first_errors("a\nb\nc", 2), "b\nc");
    }
}
