//! Every way a PTX build fails.

use crate::PROFILE_ENV;
use std::path::PathBuf;

/// Why a PTX build failed; each message names the problem and, where there is one, the fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Neither an output directory nor `OUT_DIR`.
    #[error("OUT_DIR is not set: outside a build script, give the builder an output directory (out_dir)")]
    NoOutDir,
    /// `NVPTX_PROFILE` names no profile.
    #[error("{PROFILE_ENV}={value:?} names no PTX profile: use release or checked")]
    BadProfile {
        /// The value given.
        value: String,
    },
    /// An architecture rustc's nvptx64 backend does not take.
    #[error("{arch:?} is not a GPU architecture for the nvptx64 backend: use sm_XY or sm_XYa, e.g. sm_90 or sm_90a")]
    BadArch {
        /// The value given.
        arch: String,
    },
    /// The kernels crate's directory has no `Cargo.toml`.
    #[error("no Cargo.toml in {}: the builder takes the kernels crate's directory", dir.display())]
    NoCrate {
        /// The directory given.
        dir: PathBuf,
    },
    /// rustup could not be run.
    #[error(
        "cannot run rustup ({source}): the kernels are compiled with a pinned nightly through rustup; install rustup (https://rustup.rs), then run:\n  {install}"
    )]
    NoRustup {
        /// The command that installs the toolchain.
        install: String,
        /// Why rustup did not start.
        source: std::io::Error,
    },
    /// The toolchain is not installed (or not usable).
    #[error(
        "the toolchain {toolchain} that compiles the kernels is not installed ({detail}); install it with:\n  {install}"
    )]
    ToolchainMissing {
        /// The toolchain.
        toolchain: String,
        /// What rustup said.
        detail: String,
        /// The command that installs it.
        install: String,
    },
    /// The toolchain lacks `rust-src`.
    #[error(
        "the toolchain {toolchain} has no rust-src (-Zbuild-std=core needs it): rustup component add rust-src --toolchain {toolchain}"
    )]
    RustSrcMissing {
        /// The toolchain.
        toolchain: String,
    },
    /// The toolchain lacks the nvptx64 target.
    #[error(
        "the toolchain {toolchain} lacks the nvptx64-nvidia-cuda target: rustup target add nvptx64-nvidia-cuda --toolchain {toolchain}"
    )]
    TargetMissing {
        /// The toolchain.
        toolchain: String,
    },
    /// `cargo metadata` failed or said something unexpected.
    #[error("cargo metadata for {}: {message}", manifest.display())]
    Metadata {
        /// The manifest it ran on.
        manifest: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The kernels crate has no library target.
    #[error("{} has no library target: kernels live in a library crate", manifest.display())]
    NoLibrary {
        /// Its manifest.
        manifest: PathBuf,
    },
    /// A child process did not start.
    #[error("running {program}: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// rustc failed on the kernels (its messages are printed above this one, and the first of
    /// them are kept here).
    #[error("compiling the kernels for nvptx64-nvidia-cuda failed ({status}): {command}:\n{messages}")]
    Compile {
        /// The command, abridged.
        command: String,
        /// Its exit status.
        status: String,
        /// rustc's first error and the lines after it.
        messages: String,
    },
    /// rustc wrote no assembly file.
    #[error("rustc wrote no {lib_name}-*.s under {}", dir.display())]
    NoAssembly {
        /// Where it was looked for.
        dir: PathBuf,
        /// The crate name.
        lib_name: String,
    },
    /// The PTX targets another architecture.
    #[error("the PTX targets {found}, not {arch}")]
    WrongTarget {
        /// The architecture asked for.
        arch: String,
        /// Its `.target`.
        found: String,
    },
    /// An expected kernel (or one given a `.maxntid`) is not in the PTX.
    #[error("the PTX has no .entry {kernel}")]
    MissingEntry {
        /// The kernel.
        kernel: String,
    },
    /// The PTX calls a function it does not define: it would not load.
    #[error("the PTX calls a function it does not define ({declaration}): a kernel calls code that cannot be inlined")]
    ExternalCall {
        /// The `.extern .func` line.
        declaration: String,
    },
    /// ptxas rejected the PTX.
    #[error("ptxas rejected {}:\n{log}", ptx.display())]
    PtxasRejected {
        /// The PTX file.
        ptx: PathBuf,
        /// ptxas's messages.
        log: String,
    },
    /// [`PtxasCheck::Require`](crate::PtxasCheck::Require) and no ptxas found.
    #[error("no ptxas found (set PTXAS, put it on PATH, or install the CUDA toolkit) and this build requires one")]
    NoPtxas,
    /// ptxas reported a performance loss and [`PtxBuilder::deny_spills`](crate::PtxBuilder::deny_spills) is set.
    #[error("ptxas reports performance losses:\n{0}")]
    PerformanceLoss(String),
    /// Kernels spill registers and [`PtxBuilder::deny_spills`](crate::PtxBuilder::deny_spills) is set.
    #[error("kernels spill registers to local memory: {0}")]
    Spills(String),
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}
