//! The pinned nightly toolchain the kernels are compiled with, and child processes that run it
//! with none of the calling build's settings.
//!
//! A build script runs under the dependent's toolchain (possibly stable) with cargo's
//! environment set for *that* build: `RUSTC`, `RUSTC_WRAPPER`, `RUSTFLAGS`,
//! `CARGO_ENCODED_RUSTFLAGS`, `CARGO_TARGET_DIR`, `CARGO_BUILD_*`, the package's `CARGO_*`
//! variables... A nested cargo that inherited them would use the wrong compiler, the host's
//! flags, or the outer target directory (whose lock the outer cargo holds: a deadlock).

use crate::Error;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The nightly this version of the builder and `nvptx-std` are tested with.
pub const DEFAULT_TOOLCHAIN: &str = "nightly-2026-04-02";

/// The environment variable that overrides the toolchain (`NVPTX_TOOLCHAIN=nightly-...`).
pub const TOOLCHAIN_ENV: &str = "NVPTX_TOOLCHAIN";

/// The rustc target of the kernels.
pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// The toolchain to build with, and the file that named it, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// The rustup toolchain name, e.g. `nightly-2026-04-02`.
    pub name: String,
    /// The `rust-toolchain.toml` (or `rust-toolchain`) it came from.
    pub file: Option<PathBuf>,
}

impl Toolchain {
    /// The toolchain for a kernels crate at `crate_dir`: `explicit` if given, else
    /// `$NVPTX_TOOLCHAIN`, else the channel of the nearest `rust-toolchain.toml` or
    /// `rust-toolchain` at or above `crate_dir` that names a nightly (a file pinning a stable
    /// toolchain pins the host code's, not the kernels'), else [`DEFAULT_TOOLCHAIN`].
    ///
    /// ```
    /// use nvptx_builder::toolchain::Toolchain;
    /// let t = Toolchain::resolve(Some("nightly-2026-04-02"), std::path::Path::new("."));
    /// assert_eq!((t.name.as_str(), t.file), ("nightly-2026-04-02", None));
    /// ```
    pub fn resolve(explicit: Option<&str>, crate_dir: &Path) -> Self {
        if let Some(name) = explicit {
            return Self { name: name.to_string(), file: None };
        }
        if let Some(name) = std::env::var(TOOLCHAIN_ENV).ok().filter(|n| !n.trim().is_empty()) {
            return Self { name: name.trim().to_string(), file: None };
        }
        for dir in crate_dir.ancestors() {
            for file_name in ["rust-toolchain.toml", "rust-toolchain"] {
                let file = dir.join(file_name);
                if let Some(channel) = std::fs::read_to_string(&file).ok().and_then(|t| toolchain_channel(&t))
                    && channel.starts_with("nightly")
                {
                    return Self { name: channel, file: Some(file) };
                }
            }
        }
        Self { name: DEFAULT_TOOLCHAIN.to_string(), file: None }
    }

    /// The `rustup toolchain install` command that installs this toolchain with what the
    /// builder needs.
    ///
    /// ```
    /// use nvptx_builder::toolchain::Toolchain;
    /// let t = Toolchain { name: "nightly-2026-04-02".into(), file: None };
    /// assert_eq!(
    ///     t.install_command(),
    ///     "rustup toolchain install nightly-2026-04-02 --profile minimal --component rust-src --target nvptx64-nvidia-cuda"
    /// );
    /// ```
    pub fn install_command(&self) -> String {
        format!("rustup toolchain install {} --profile minimal --component rust-src --target {TARGET}", self.name)
    }

    /// A `rustup run <toolchain> <program>` command with the calling build's environment
    /// removed ([`clean_command`]), which does not install a missing toolchain on its own.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = clean_command("rustup");
        cmd.env("RUSTUP_AUTO_INSTALL", "0").args(["run", &self.name, program]);
        cmd
    }

    /// Fails with the exact command that fixes it when rustup, the toolchain, its `rust-src`
    /// component or its nvptx64 target is missing.
    pub fn check(&self) -> Result<(), Error> {
        let out = self
            .command("rustc")
            .args(["--print", "sysroot"])
            .output()
            .map_err(|source| Error::NoRustup { install: self.install_command(), source })?;
        if !out.status.success() {
            // rustup's first line says what is wrong; a backtrace (RUST_BACKTRACE) may follow.
            let stderr = String::from_utf8_lossy(&out.stderr);
            let first = stderr.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("rustup failed");
            return Err(Error::ToolchainMissing {
                toolchain: self.name.clone(),
                detail: first.trim_start_matches("error: ").to_string(),
                install: self.install_command(),
            });
        }
        let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if !sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml").is_file() {
            return Err(Error::RustSrcMissing { toolchain: self.name.clone() });
        }
        if !sysroot.join("lib/rustlib").join(TARGET).is_dir() {
            return Err(Error::TargetMissing { toolchain: self.name.clone() });
        }
        Ok(())
    }
}

/// The `channel` of a `rust-toolchain.toml`, or the one line of a legacy `rust-toolchain` file.
///
/// ```
/// use nvptx_builder::toolchain::toolchain_channel;
/// assert_eq!(toolchain_channel("[toolchain]\nchannel = \"nightly-2026-04-02\"\n").as_deref(), Some("nightly-2026-04-02"));
/// assert_eq!(toolchain_channel("nightly-2026-04-02\n").as_deref(), Some("nightly-2026-04-02"));
/// assert_eq!(toolchain_channel("[toolchain]\ncomponents = [\"rustfmt\"]\n"), None);
/// ```
pub fn toolchain_channel(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    if let [single] = lines.as_slice()
        && !single.contains('=')
        && !single.starts_with('[')
    {
        return Some(single.to_string());
    }
    lines.iter().find_map(|l| {
        let (key, value) = l.split_once('=')?;
        (key.trim() == "channel").then(|| value.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
    })
}

/// Whether a variable of the calling process's environment is left out of a child build: every
/// variable cargo sets for a build script or that steers a cargo or rustc invocation (`CARGO`,
/// `CARGO_*`, `RUSTC*`, `RUSTDOC*`, `RUSTFLAGS`, `RUSTUP_TOOLCHAIN`, `OUT_DIR`, `TARGET`, ...),
/// except where cargo keeps its home, its network and registry settings, the jobserver of the
/// outer build and a limit on parallel jobs, which change how, not what, it builds.
///
/// ```
/// use nvptx_builder::toolchain::is_build_setting;
/// assert!(is_build_setting("RUSTFLAGS") && is_build_setting("CARGO_TARGET_DIR") && is_build_setting("RUSTC_WRAPPER"));
/// assert!(!is_build_setting("CARGO_HOME") && !is_build_setting("CARGO_NET_OFFLINE") && !is_build_setting("PATH"));
/// ```
pub fn is_build_setting(name: &str) -> bool {
    const KEPT_PREFIXES: &[&str] =
        &["CARGO_HOME", "CARGO_NET_", "CARGO_HTTP_", "CARGO_REGISTRIES_", "CARGO_REGISTRY_", "CARGO_TERM_"];
    const KEPT: &[&str] = &["CARGO_MAKEFLAGS", "CARGO_BUILD_JOBS"];
    const BUILD_SCRIPT_VARS: &[&str] =
        &["CARGO", "OUT_DIR", "TARGET", "HOST", "NUM_JOBS", "OPT_LEVEL", "PROFILE", "DEBUG", "RUSTFLAGS", "DOCS_RS"];
    if KEPT.contains(&name) || KEPT_PREFIXES.iter().any(|p| name.starts_with(p)) {
        return false;
    }
    BUILD_SCRIPT_VARS.contains(&name)
        || name.starts_with("CARGO_")
        || name.starts_with("__CARGO")
        || name.starts_with("RUSTC")
        || name.starts_with("RUSTDOC")
        || name == "RUSTUP_TOOLCHAIN"
}

/// `program` with every [`is_build_setting`] variable of this process removed.
pub fn clean_command(program: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new(program);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(is_build_setting) {
            cmd.env_remove(&name);
        }
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolchain_files_pinning_stable_are_skipped_for_the_default() {
        let dir = std::env::temp_dir().join(format!("nvptx-builder-tc-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("kernels")).unwrap();
        std::fs::write(dir.join("rust-toolchain.toml"), "[toolchain]\nchannel = \"1.90\"\n").unwrap();
        if std::env::var_os(TOOLCHAIN_ENV).is_none() {
            let t = Toolchain::resolve(None, &dir.join("kernels"));
            assert_eq!(t, Toolchain { name: DEFAULT_TOOLCHAIN.into(), file: None });
            std::fs::write(dir.join("kernels/rust-toolchain"), "nightly-2030-01-01\n").unwrap();
            let t = Toolchain::resolve(None, &dir.join("kernels"));
            assert_eq!(t.name, "nightly-2030-01-01");
            assert_eq!(t.file, Some(dir.join("kernels/rust-toolchain")));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cargo_settings_of_the_outer_build_are_dropped_and_its_home_and_network_kept() {
        for dropped in [
            "RUSTC",
            "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER",
            "RUSTDOC",
            "RUSTFLAGS",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_TARGET",
            "CARGO_BUILD_RUSTFLAGS",
            "CARGO_PROFILE_RELEASE_DEBUG",
            "CARGO_TARGET_NVPTX64_NVIDIA_CUDA_RUSTFLAGS",
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_CFG_TARGET_OS",
            "CARGO_FEATURE_STD",
            "CARGO",
            "OUT_DIR",
            "TARGET",
            "PROFILE",
            "RUSTUP_TOOLCHAIN",
            "__CARGO_DEFAULT_LIB_METADATA",
        ] {
            assert!(is_build_setting(dropped), "{dropped}");
        }
        for kept in ["CARGO_HOME", "CARGO_MAKEFLAGS", "CARGO_BUILD_JOBS", "CARGO_NET_OFFLINE", "HOME", "PATH", "PTXAS"]
        {
            assert!(!is_build_setting(kept), "{kept}");
        }
    }
}
