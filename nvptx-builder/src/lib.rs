//! Compiles a `no_std` kernels crate to PTX with rustc's own `nvptx64-nvidia-cuda` backend, from
//! any crate's `build.rs` (the role of Rust-CUDA's `cuda_builder`).
//!
//! ```no_run
//! // The body of build.rs's main() in a host crate whose kernels live in ../kernels.
//! if let Err(e) = nvptx_builder::PtxBuilder::new("../kernels").arch("sm_90").build() {
//!     eprintln!("{e}");
//!     std::process::exit(1);
//! }
//! ```
//!
//! The host crate then embeds `$OUT_DIR/<crate>.ptx` (`include_str!`) and loads it with its
//! driver API. The builder writes, into `OUT_DIR` (or [`PtxBuilder::out_dir`]):
//! - `<module>.ptx`, the module (`.target` = the architecture);
//! - `<module>.json`, its [`Manifest`]: architecture, profile, source fingerprint, toolchain,
//!   features, entry points, and the `ptxas -v` resources of each kernel when ptxas was found;
//! - `<module>.cubin` when ptxas was found, the module assembled for that architecture.
//!
//! In a build script it prints `cargo:rerun-if-changed` for every source the PTX depends on
//! (the kernels crate and its local path dependencies, such as `nvptx-std`, and the toolchain
//! file) and `cargo:rerun-if-env-changed` for the variables it reads.
//!
//! # Profile
//! [`Profile::Release`] unless the caller sets one, or the environment variable `NVPTX_PROFILE`
//! is `checked` ([`PROFILE_ENV`]): a dependent gets release PTX in all its builds, and the
//! checked PTX (overflow checks and debug assertions compiled in as traps) only when it asks,
//! e.g. `NVPTX_PROFILE=checked cargo test`. Both are optimised, one codegen unit.
//!
//! # Toolchain
//! The kernels need a nightly with `rust-src` and the `nvptx64-nvidia-cuda` target; the build
//! script itself may run on any toolchain, stable included. The builder runs that nightly through
//! `rustup run` (rustup must be installed) with none of the calling build's cargo and rustc
//! settings (see [`toolchain::is_build_setting`]), in a target directory of its own under the
//! output directory, on a wrapper workspace of its own (see below). Which nightly:
//! [`PtxBuilder::toolchain`], else `$NVPTX_TOOLCHAIN`, else the nearest `rust-toolchain.toml`
//! at or above the kernels crate that pins a nightly, else [`toolchain::DEFAULT_TOOLCHAIN`]. A
//! missing toolchain, component or target is an error that names the `rustup` command to run.
//!
//! # The nested build
//! The kernels crate is compiled as a path dependency of a small workspace the builder writes
//! into its target directory, so that it builds the same whether it is a member of a workspace
//! whose other members have dependencies of their own, a read-only cargo git checkout, or a
//! standalone crate; the workspace fixes the profiles the PTX needs (one codegen unit, no debug
//! info) and starts its lock file from the kernels workspace's.
#![deny(missing_docs)]

mod error;
pub mod fingerprint;
mod manifest;
mod nested;
pub mod ptx;
pub mod ptxas;
pub mod toolchain;

use std::path::{Path, PathBuf};
use toolchain::Toolchain;

pub use error::Error;
pub use manifest::{Built, Manifest, Sources};
pub use ptxas::KernelResources;

/// The environment variable that picks the profile when the caller does not: `release` or
/// `checked`.
pub const PROFILE_ENV: &str = "NVPTX_PROFILE";

/// How the PTX is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// Optimised, without debug assertions: what runs and what is timed.
    #[default]
    Release,
    /// The same optimisation with overflow checks and debug assertions (every checked shared
    /// memory index, for one) compiled in: a failed check traps the kernel, and the launch
    /// reports an error. For tests.
    Checked,
}

impl Profile {
    /// The cargo profile: `release`, or `ptx-checked` (release with overflow checks and debug
    /// assertions), as the manifest records it.
    ///
    /// ```
    /// assert_eq!(nvptx_builder::Profile::Checked.cargo_profile(), "ptx-checked");
    /// ```
    pub fn cargo_profile(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Checked => "ptx-checked",
        }
    }

    /// A profile's name as [`PROFILE_ENV`] takes it: `release`, or `checked` (also
    /// `ptx-checked`).
    ///
    /// ```
    /// use nvptx_builder::Profile;
    /// assert_eq!(Profile::parse("checked").unwrap(), Profile::Checked);
    /// assert!(Profile::parse("debug").is_err());
    /// ```
    pub fn parse(name: &str) -> Result<Self, Error> {
        match name.trim() {
            "release" => Ok(Profile::Release),
            "checked" | "ptx-checked" => Ok(Profile::Checked),
            other => Err(Error::BadProfile { value: other.to_string() }),
        }
    }

    /// The profile [`PROFILE_ENV`] asks for, if it is set (and not empty).
    ///
    /// ```
    /// use nvptx_builder::{PROFILE_ENV, Profile};
    /// // Whatever this run's environment says (`cargo xtask test` sets checked), read the same way.
    /// let set = std::env::var(PROFILE_ENV).ok().filter(|v| !v.trim().is_empty());
    /// assert_eq!(Profile::from_env()?, set.map(|v| Profile::parse(&v)).transpose()?);
    /// // Unset, the builder's default applies: release.
    /// assert_eq!(Profile::default(), Profile::Release);
    /// # Ok::<(), nvptx_builder::Error>(())
    /// ```
    pub fn from_env() -> Result<Option<Self>, Error> {
        match std::env::var(PROFILE_ENV) {
            Ok(value) if !value.trim().is_empty() => Self::parse(&value).map(Some),
            _ => Ok(None),
        }
    }
}

/// Whether the builder runs `ptxas -v` on the PTX it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PtxasCheck {
    /// When [`ptxas::find`] finds one (the resources then go in the manifest).
    #[default]
    IfFound,
    /// Always: a build without ptxas fails.
    Require,
    /// Never.
    Skip,
}

/// Builds one PTX module from a kernels crate: configure, then [`PtxBuilder::build`].
///
/// ```no_run
/// use nvptx_builder::{Profile, PtxBuilder};
/// // The Hopper module of this repository: the `hopper` feature, sm_90a, one kernel capped at
/// // 384 threads, into target/ptx/kernels_sm90a.ptx.
/// let built = PtxBuilder::new("kernels")
///     .arch("sm_90a")
///     .feature("hopper")
///     .profile(Profile::Release)
///     .max_threads("wgmma_tf32", 384)
///     .module_name("kernels_sm90a")
///     .out_dir("target/ptx")
///     .build()?;
/// println!("{} kernels in {}", built.manifest.entries.len(), built.ptx.display());
/// # Ok::<(), nvptx_builder::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct PtxBuilder {
    crate_dir: PathBuf,
    arch: String,
    features: Vec<String>,
    default_features: bool,
    profile: Option<Profile>,
    max_threads: Vec<(String, u32)>,
    ptx_isa: Option<(u32, u32)>,
    expected: Vec<String>,
    toolchain: Option<String>,
    out_dir: Option<PathBuf>,
    target_dir: Option<PathBuf>,
    module_name: Option<String>,
    ptxas: PtxasCheck,
    deny_spills: bool,
    cargo_directives: Option<bool>,
}

impl PtxBuilder {
    /// A builder for the kernels crate in `crate_dir` (relative paths are taken from the current
    /// directory, which in a build script is the package's own directory), for `sm_90`.
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("../kernels");
    /// ```
    pub fn new(crate_dir: impl Into<PathBuf>) -> Self {
        Self {
            crate_dir: crate_dir.into(),
            arch: "sm_90".into(),
            features: Vec::new(),
            default_features: true,
            profile: None,
            max_threads: Vec::new(),
            ptx_isa: None,
            expected: Vec::new(),
            toolchain: None,
            out_dir: None,
            target_dir: None,
            module_name: None,
            ptxas: PtxasCheck::default(),
            deny_spills: false,
            cargo_directives: None,
        }
    }

    /// The GPU architecture: rustc's `-C target-cpu` and the PTX `.target`, `sm_XY` (loads on
    /// compute capability X.Y and later) or `sm_XYa` (architecture-specific instructions such as
    /// `wgmma`; loads on X.Y only). Default `sm_90`.
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").arch("sm_90a");
    /// ```
    pub fn arch(mut self, arch: &str) -> Self {
        self.arch = arch.to_string();
        self
    }

    /// Enables a feature of the kernels crate.
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").feature("hopper");
    /// ```
    pub fn feature(mut self, feature: &str) -> Self {
        self.features.push(feature.to_string());
        self
    }

    /// Builds the kernels crate without its default features.
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").no_default_features();
    /// ```
    pub fn no_default_features(mut self) -> Self {
        self.default_features = false;
        self
    }

    /// The profile, overriding [`PROFILE_ENV`] and the default ([`Profile::Release`]).
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").profile(nvptx_builder::Profile::Checked);
    /// ```
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// Declares `.maxntid threads, 1, 1` for `kernel` ([`ptx::add_maxntid`]): the most threads
    /// a block of it will have, which lets ptxas and the driver cap its registers to fit.
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").max_threads("wgmma_tf32", 384);
    /// ```
    pub fn max_threads(mut self, kernel: &str, threads: u32) -> Self {
        self.max_threads.push((kernel.to_string(), threads));
        self
    }

    /// The PTX ISA version to write (`.version`; `-C target-feature=+ptxXY`), when it must be
    /// newer than the oldest one the architecture allows, which rustc writes by default
    /// (`sm_90`: 7.8; `sm_90a`: 8.0). The TMA, bulk-copy and transaction-barrier instructions of
    /// `nvptx-std` need 8.0: on `sm_90`, ask for it.
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").arch("sm_90").ptx_isa(8, 0);
    /// ```
    pub fn ptx_isa(mut self, major: u32, minor: u32) -> Self {
        self.ptx_isa = Some((major, minor));
        self
    }

    /// Kernels the module must hold: the build fails when one has no `.entry`.
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").expect_kernels(["saxpy", "matmul_naive"]);
    /// ```
    pub fn expect_kernels<S: Into<String>>(mut self, kernels: impl IntoIterator<Item = S>) -> Self {
        self.expected.extend(kernels.into_iter().map(Into::into));
        self
    }

    /// The rustup toolchain to compile with (see the crate documentation for the default).
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").toolchain("nightly-2026-04-02");
    /// ```
    pub fn toolchain(mut self, toolchain: &str) -> Self {
        self.toolchain = Some(toolchain.to_string());
        self
    }

    /// Where the PTX, manifest and cubin go; default `$OUT_DIR` (set in build scripts).
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").out_dir("target/ptx");
    /// ```
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// The nested build's target directory; default `<out dir>/nvptx-target/<module>`. Never the
    /// calling build's own target directory: cargo holds its lock while build scripts run.
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").target_dir("target/nvptx");
    /// ```
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// The file stem of the module's files; default the kernels crate's library name.
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").module_name("kernels_sm90a");
    /// ```
    pub fn module_name(mut self, name: &str) -> Self {
        self.module_name = Some(name.to_string());
        self
    }

    /// Whether ptxas checks the PTX and reports its resources (default: when found).
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").ptxas(nvptx_builder::PtxasCheck::Require);
    /// ```
    pub fn ptxas(mut self, check: PtxasCheck) -> Self {
        self.ptxas = check;
        self
    }

    /// Fail when ptxas reports a register spill or a performance loss (both silent slowdowns);
    /// by default they are warnings.
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").deny_spills(true);
    /// ```
    pub fn deny_spills(mut self, deny: bool) -> Self {
        self.deny_spills = deny;
        self
    }

    /// Whether to print cargo's build-script directives (`cargo:rerun-if-changed`, warnings)
    /// rather than plain messages on stderr; default: when `OUT_DIR` is set, as in a build
    /// script.
    ///
    /// ```
    /// let builder = nvptx_builder::PtxBuilder::new("kernels").cargo_directives(false);
    /// ```
    pub fn cargo_directives(mut self, print: bool) -> Self {
        self.cargo_directives = Some(print);
        self
    }

    fn in_build_script(&self) -> bool {
        self.cargo_directives.unwrap_or_else(|| std::env::var_os("OUT_DIR").is_some())
    }

    fn crate_dir(&self) -> Result<PathBuf, Error> {
        self.crate_dir.canonicalize().map_err(|_| Error::NoCrate { dir: self.crate_dir.clone() })
    }

    /// Finds the kernels crate's sources and toolchain without compiling anything.
    ///
    /// ```no_run
    /// let sources = nvptx_builder::PtxBuilder::new("kernels").sources()?;
    /// println!("{} files, fingerprint {}", sources.files.len(), sources.fingerprint);
    /// # Ok::<(), nvptx_builder::Error>(())
    /// ```
    pub fn sources(&self) -> Result<Sources, Error> {
        let crate_dir = self.crate_dir()?;
        let toolchain = Toolchain::resolve(self.toolchain.as_deref(), &crate_dir);
        toolchain.check()?;
        let krate = nested::kernel_crate(&toolchain, &crate_dir)?;
        let wrapper = self.write_wrapper(&crate_dir, &krate)?;
        self.sources_of(&toolchain, &wrapper)
    }

    fn out_dir_path(&self) -> Result<PathBuf, Error> {
        match &self.out_dir {
            Some(dir) => Ok(dir.clone()),
            None => std::env::var_os("OUT_DIR").map(PathBuf::from).ok_or(Error::NoOutDir),
        }
    }

    fn target_dir_path(&self, module: &str) -> Result<PathBuf, Error> {
        match &self.target_dir {
            Some(dir) => Ok(dir.clone()),
            None => Ok(self.out_dir_path()?.join("nvptx-target").join(module)),
        }
    }

    fn write_wrapper(&self, crate_dir: &Path, krate: &nested::KernelCrate) -> Result<PathBuf, Error> {
        let module = self.module_name.clone().unwrap_or_else(|| krate.lib_name.clone());
        let target_dir = absolute(&self.target_dir_path(&module)?)?;
        nested::write_wrapper(&target_dir.join("wrapper"), krate, crate_dir, &self.features, self.default_features)
    }

    fn sources_of(&self, toolchain: &Toolchain, wrapper: &Path) -> Result<Sources, Error> {
        let (packages, lib_roots) = nested::local_packages(toolchain, wrapper)?;
        let mut files = Vec::new();
        for dir in &packages {
            files.extend(fingerprint::package_inputs(dir).map_err(|source| Error::Io { path: dir.clone(), source })?);
        }
        // A library whose root is not under src/ (`[lib] path = ...`): its directory too.
        for root in lib_roots {
            if let Some(dir) = root.parent()
                && !files.contains(&root)
            {
                files.extend(fingerprint::files_under(dir).map_err(|source| Error::Io { path: dir.into(), source })?);
            }
        }
        files.extend(toolchain.file.iter().cloned());
        files.sort();
        files.dedup();
        let fingerprint =
            fingerprint::fingerprint(&files).map_err(|source| Error::Io { path: wrapper.into(), source })?;
        Ok(Sources { files, packages, fingerprint, toolchain: toolchain.clone() })
    }

    /// Compiles the kernels crate and writes `<module>.ptx`, `<module>.json` and (with ptxas)
    /// `<module>.cubin` into the output directory.
    ///
    /// ```no_run
    /// let built = nvptx_builder::PtxBuilder::new("../kernels").build()?;
    /// let ptx = std::fs::read_to_string(&built.ptx).unwrap();
    /// # Ok::<(), nvptx_builder::Error>(())
    /// ```
    pub fn build(&self) -> Result<Built, Error> {
        let directives = self.in_build_script();
        if directives {
            for var in [PROFILE_ENV, toolchain::TOOLCHAIN_ENV, ptxas::PTXAS_ENV] {
                println!("cargo:rerun-if-env-changed={var}");
            }
        }
        check_arch(&self.arch)?;
        let profile = match self.profile {
            Some(p) => p,
            None => Profile::from_env()?.unwrap_or_default(),
        };
        let crate_dir = self.crate_dir()?;
        let toolchain = Toolchain::resolve(self.toolchain.as_deref(), &crate_dir);
        toolchain.check()?;
        let krate = nested::kernel_crate(&toolchain, &crate_dir)?;
        let module = self.module_name.clone().unwrap_or_else(|| krate.lib_name.clone());
        let out_dir = self.out_dir_path()?;
        std::fs::create_dir_all(&out_dir).map_err(|source| Error::Io { path: out_dir.clone(), source })?;
        let target_dir = absolute(&self.target_dir_path(&module)?)?;
        let wrapper = nested::write_wrapper(
            &target_dir.join("wrapper"),
            &krate,
            &crate_dir,
            &self.features,
            self.default_features,
        )?;
        let sources = self.sources_of(&toolchain, &wrapper)?;
        if directives {
            for file in &sources.files {
                println!("cargo:rerun-if-changed={}", file.display());
            }
            // A directory makes cargo scan it for new files as well.
            for dir in &sources.packages {
                println!("cargo:rerun-if-changed={}", dir.join("src").display());
            }
        }

        let mut rustflags =
            vec![format!("-Ctarget-cpu={}", self.arch), "-Cpanic=immediate-abort".into(), "-Zunstable-options".into()];
        if let Some((major, minor)) = self.ptx_isa {
            rustflags.push(format!("-Ctarget-feature=+ptx{major}{minor}"));
        }
        if !directives {
            eprintln!(
                "nvptx-builder: {module} -> {} ({}, profile {}, {})",
                toolchain::TARGET,
                self.arch,
                profile.cargo_profile(),
                toolchain.name
            );
        }
        let asm = nested::compile(&toolchain, &wrapper, &krate, profile, &target_dir, &rustflags, true, directives)?;
        let mut ptx = std::fs::read_to_string(&asm).map_err(|source| Error::Io { path: asm.clone(), source })?;
        if !self.max_threads.is_empty() {
            let caps: Vec<(&str, u32)> = self.max_threads.iter().map(|(k, t)| (k.as_str(), *t)).collect();
            ptx = ptx::add_maxntid(&ptx, &caps)?;
        }
        let expected: Vec<&str> = self.expected.iter().map(String::as_str).collect();
        let entries = ptx::check_ptx(&ptx, &self.arch, &expected)?;
        let ptx_path = out_dir.join(format!("{module}.ptx"));
        write(&ptx_path, ptx.as_bytes())?;

        let ptxas_path = match self.ptxas {
            PtxasCheck::Skip => None,
            PtxasCheck::IfFound => ptxas::find(),
            PtxasCheck::Require => Some(ptxas::find().ok_or(Error::NoPtxas)?),
        };
        let (resources, performance_losses, cubin) = match ptxas_path {
            Some(ptxas) => {
                let cubin = out_dir.join(format!("{module}.cubin"));
                let (report, losses) = ptxas::assemble(&ptxas, &ptx_path, &self.arch, &cubin)?;
                (Some(report), losses, Some(cubin))
            }
            None => (None, Vec::new(), None),
        };
        let manifest = Manifest {
            arch: self.arch.clone(),
            profile: profile.cargo_profile().into(),
            fingerprint: sources.fingerprint.clone(),
            entries,
            resources,
            toolchain: toolchain.name.clone(),
            features: self.features.clone(),
        };
        let manifest_path = out_dir.join(format!("{module}.json"));
        let json = serde_json::to_string_pretty(&manifest).expect("the manifest serialises");
        write(&manifest_path, json.as_bytes())?;

        let spilling = manifest.spilling_kernels().join(", ");
        if self.deny_spills && !performance_losses.is_empty() {
            return Err(Error::PerformanceLoss(performance_losses.join("\n")));
        }
        if self.deny_spills && !spilling.is_empty() {
            return Err(Error::Spills(spilling));
        }
        let mut warnings = Vec::new();
        if !performance_losses.is_empty() {
            warnings.push(format!("ptxas reports performance losses in {module}: {}", performance_losses.join("; ")));
        }
        if !spilling.is_empty() {
            warnings.push(format!("{module}: registers spill to local memory in {spilling}"));
        }
        for k in manifest.resources.iter().flatten().filter(|r| r.stack_bytes > 0) {
            warnings.push(format!("{} uses a {}-byte stack frame (local memory)", k.kernel, k.stack_bytes));
        }
        for warning in warnings {
            if directives {
                println!("cargo:warning=nvptx-builder: {warning}");
            } else {
                eprintln!("nvptx-builder: warning: {warning}");
            }
        }
        Ok(Built {
            ptx: ptx_path,
            manifest_path,
            manifest,
            cubin,
            performance_losses,
            sources: sources.files,
            toolchain,
        })
    }
}

/// `sm_` followed by digits and an optional `a`: what `-C target-cpu` takes for nvptx64.
fn check_arch(arch: &str) -> Result<(), Error> {
    let digits = arch.strip_prefix("sm_").map(|rest| rest.strip_suffix('a').unwrap_or(rest));
    match digits {
        Some(d) if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) => Ok(()),
        _ => Err(Error::BadArch { arch: arch.to_string() }),
    }
}

fn absolute(path: &Path) -> Result<PathBuf, Error> {
    std::path::absolute(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

fn write(path: &Path, contents: &[u8]) -> Result<(), Error> {
    std::fs::write(path, contents).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_are_sm_numbers_with_an_optional_a() {
        for good in ["sm_90", "sm_90a", "sm_100a", "sm_120"] {
            assert!(check_arch(good).is_ok(), "{good}");
        }
        for bad in ["sm90", "compute_90", "sm_", "sm_9x", "90"] {
            assert!(matches!(check_arch(bad), Err(Error::BadArch { .. })), "{bad}");
        }
    }

    #[test]
    fn a_profile_name_outside_release_and_checked_is_an_error_naming_it() {
        assert_eq!(Profile::parse(" release\n").unwrap(), Profile::Release);
        assert_eq!(Profile::parse("ptx-checked").unwrap(), Profile::Checked);
        let err = Profile::parse("debug").unwrap_err().to_string();
        assert!(err.contains("NVPTX_PROFILE=\"debug\"") && err.contains("release or checked"), "{err}");
    }

    #[test]
    fn outside_a_build_script_an_output_directory_is_required() {
        if std::env::var_os("OUT_DIR").is_none() {
            let err = PtxBuilder::new(".").out_dir_path().unwrap_err();
            assert!(matches!(err, Error::NoOutDir));
        }
    }
}
