//! The fingerprint of everything the PTX is compiled from, recorded by `cargo xtask build-ptx`
//! in the PTX manifest and recomputed by the host's build script, which refuses a PTX whose
//! fingerprint differs (a stale PTX is never embedded silently).
//!
//! This file is compiled into both `xtask` and `host/build.rs` (`#[path]`), so the two cannot
//! disagree on what "the kernel sources" are.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Files, relative to the project root, whose contents decide the PTX: the manifests and sources
/// of the kernels crate and of the device API it uses (`nvptx-std`), and the pinned toolchain.
pub fn kernel_inputs(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files =
        vec![root.join("kernels/Cargo.toml"), root.join("nvptx-std/Cargo.toml"), root.join("rust-toolchain.toml")];
    let mut dirs = vec![root.join("kernels/src"), root.join("nvptx-std/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// SHA-256 over each input's path (relative to `root`) and contents, in sorted order.
pub fn kernel_fingerprint(root: &Path) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    for file in kernel_inputs(root)? {
        let relative = file.strip_prefix(root).unwrap_or(&file);
        hasher.update(relative.to_string_lossy().replace('\\', "/").as_bytes());
        hasher.update([0]);
        let contents = std::fs::read(&file)?;
        hasher.update((contents.len() as u64).to_le_bytes());
        hasher.update(&contents);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
