//! The fingerprint of everything this repository's PTX is compiled from, recorded by
//! nvptx-builder in the PTX manifest (`cargo xtask build-ptx`) and recomputed by the host's build
//! script, which refuses a PTX whose fingerprint differs (a stale PTX is never embedded
//! silently).
//!
//! This file is compiled into `host/build.rs` and xtask's `tests/sources.rs` (`#[path]`); the
//! hashing is nvptx-builder's, and that test checks that the builder finds the same files.

use std::path::{Path, PathBuf};

/// Files whose contents decide the PTX: the manifests and sources of the kernels crate and of
/// the device API it uses (`nvptx-std`), and the pinned toolchain.
pub fn kernel_inputs(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for package in ["kernels", "nvptx-std"] {
        files.extend(nvptx_builder::fingerprint::package_inputs(&root.join(package))?);
    }
    files.push(root.join("rust-toolchain.toml"));
    files.sort();
    Ok(files)
}

/// nvptx-builder's fingerprint of [`kernel_inputs`].
pub fn kernel_fingerprint(root: &Path) -> std::io::Result<String> {
    nvptx_builder::fingerprint::fingerprint(&kernel_inputs(root)?)
}
