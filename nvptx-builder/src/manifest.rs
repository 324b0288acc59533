//! What a build writes and returns: the manifest beside each PTX module, and the paths.

use crate::KernelResources;
use crate::toolchain::Toolchain;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What `<module>.json` records about a PTX module.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// `.target` of the PTX, e.g. `sm_90`.
    pub arch: String,
    /// The cargo profile: `release` or `ptx-checked` ([`Profile::cargo_profile`](crate::Profile::cargo_profile)).
    pub profile: String,
    /// [`fingerprint::fingerprint`](crate::fingerprint::fingerprint) of the sources the PTX was built from.
    pub fingerprint: String,
    /// Every `.entry` in the PTX.
    pub entries: Vec<String>,
    /// `ptxas -v` per kernel, when ptxas ran.
    pub resources: Option<Vec<KernelResources>>,
    /// The toolchain that compiled it.
    #[serde(default)]
    pub toolchain: String,
    /// The kernels crate's features it was compiled with.
    #[serde(default)]
    pub features: Vec<String>,
}

impl Manifest {
    /// The kernels whose registers spill to local memory, per ptxas.
    ///
    /// ```
    /// use nvptx_builder::{KernelResources, Manifest};
    /// let spilling = KernelResources { kernel: "k".into(), spill_stores: 8, ..Default::default() };
    /// let m = Manifest { arch: "sm_90".into(), profile: "release".into(), fingerprint: String::new(),
    ///     entries: vec!["k".into()], resources: Some(vec![spilling]), toolchain: String::new(), features: vec![] };
    /// assert_eq!(m.spilling_kernels(), ["k"]);
    /// ```
    pub fn spilling_kernels(&self) -> Vec<&str> {
        let resources = self.resources.iter().flatten();
        resources.filter(|r| r.spill_stores + r.spill_loads > 0).map(|r| r.kernel.as_str()).collect()
    }
}

/// What [`PtxBuilder::build`](crate::PtxBuilder::build) wrote.
#[derive(Debug, Clone)]
pub struct Built {
    /// The PTX module.
    pub ptx: PathBuf,
    /// Its manifest (JSON).
    pub manifest_path: PathBuf,
    /// What the manifest records.
    pub manifest: Manifest,
    /// The module assembled by ptxas, when it ran.
    pub cubin: Option<PathBuf>,
    /// ptxas's "Potential Performance Loss" lines (e.g. `wgmma` serialised), when it ran.
    pub performance_losses: Vec<String>,
    /// The files the PTX was built from (what the fingerprint covers).
    pub sources: Vec<PathBuf>,
    /// The toolchain it was built with.
    pub toolchain: Toolchain,
}

/// The sources of a kernels crate, as the builder finds them: what the PTX depends on.
#[derive(Debug, Clone)]
pub struct Sources {
    /// Every input file, sorted: each local package's `Cargo.toml`, `build.rs` and `src/`, and
    /// the toolchain file.
    pub files: Vec<PathBuf>,
    /// The directories of the local packages (the kernels crate and its path dependencies).
    pub packages: Vec<PathBuf>,
    /// [`fingerprint::fingerprint`](crate::fingerprint::fingerprint) of `files`.
    pub fingerprint: String,
    /// The toolchain the crate is built with.
    pub toolchain: Toolchain,
}
