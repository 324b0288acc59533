//! The fingerprint of everything a PTX module is compiled from: the manifests and sources of the
//! kernels crate and of every local (path) package it depends on, and the toolchain file. The
//! builder records it in the manifest and reruns when one of these files changes; a consumer
//! that embeds a PTX built elsewhere recomputes it to refuse a stale one.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The files of one package that decide its code: `Cargo.toml`, `build.rs` when there is one,
/// and every file under `src/`, sorted.
///
/// ```
/// let files = nvptx_builder::fingerprint::package_inputs(env!("CARGO_MANIFEST_DIR").as_ref())?;
/// assert!(files.iter().any(|f| f.ends_with("src/lib.rs")));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn package_inputs(package_dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = vec![package_dir.join("Cargo.toml")];
    let build_script = package_dir.join("build.rs");
    if build_script.is_file() {
        files.push(build_script);
    }
    files.extend(files_under(&package_dir.join("src"))?);
    files.sort();
    Ok(files)
}

/// Every file under `dir`, recursively, sorted; none when `dir` does not exist.
///
/// ```
/// let files = nvptx_builder::fingerprint::files_under(std::path::Path::new("no/such/dir"))?;
/// assert!(files.is_empty());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn files_under(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if !dir.is_dir() {
        return Ok(files);
    }
    let mut dirs = vec![dir.to_path_buf()];
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

/// The deepest directory that holds every one of `files`.
///
/// ```
/// use std::path::{Path, PathBuf};
/// let files = [PathBuf::from("/r/kernels/src/lib.rs"), PathBuf::from("/r/rust-toolchain.toml")];
/// assert_eq!(nvptx_builder::fingerprint::common_root(&files), Path::new("/r"));
/// ```
pub fn common_root(files: &[PathBuf]) -> PathBuf {
    let mut root = files.first().and_then(|f| f.parent()).map(Path::to_path_buf).unwrap_or_default();
    for file in files {
        while !file.starts_with(&root) {
            if !root.pop() {
                break;
            }
        }
    }
    root
}

/// SHA-256, as hex, over each file's path relative to the files' [`common_root`] and its
/// contents, in sorted order: the same sources give the same fingerprint wherever the checkout
/// lives.
///
/// ```
/// let dir = env!("CARGO_MANIFEST_DIR").as_ref();
/// let files = nvptx_builder::fingerprint::package_inputs(dir)?;
/// let fingerprint = nvptx_builder::fingerprint::fingerprint(&files)?;
/// assert_eq!(fingerprint.len(), 64);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn fingerprint(files: &[PathBuf]) -> std::io::Result<String> {
    let mut files = files.to_vec();
    files.sort();
    files.dedup();
    let root = common_root(&files);
    let mut hasher = Sha256::new();
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap_or(file);
        hasher.update(relative.to_string_lossy().replace('\\', "/").as_bytes());
        hasher.update([0]);
        let contents = std::fs::read(file)?;
        hasher.update((contents.len() as u64).to_le_bytes());
        hasher.update(&contents);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_changes_with_a_file_and_not_with_where_the_tree_lives() {
        let base = std::env::temp_dir().join(format!("nvptx-builder-fp-{}", std::process::id()));
        let trees = [base.join("a"), base.join("b/nested")];
        for tree in &trees {
            std::fs::create_dir_all(tree.join("k/src")).unwrap();
            std::fs::write(tree.join("k/Cargo.toml"), "[package]\nname = \"k\"\n").unwrap();
            std::fs::write(tree.join("k/src/lib.rs"), "#![no_std]\n").unwrap();
            std::fs::write(tree.join("rust-toolchain.toml"), "[toolchain]\n").unwrap();
        }
        let inputs = |tree: &Path| {
            let mut files = package_inputs(&tree.join("k")).unwrap();
            files.push(tree.join("rust-toolchain.toml"));
            files
        };
        let (a, b) = (fingerprint(&inputs(&trees[0])).unwrap(), fingerprint(&inputs(&trees[1])).unwrap());
        assert_eq!(a, b);
        std::fs::write(trees[1].join("k/src/lib.rs"), "#![no_std]\n// changed\n").unwrap();
        assert_ne!(a, fingerprint(&inputs(&trees[1])).unwrap());
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn common_root_of_nested_files_is_their_deepest_shared_directory() {
        let files = [PathBuf::from("/w/k/src/a.rs"), PathBuf::from("/w/k/src/m/b.rs")];
        assert_eq!(common_root(&files), Path::new("/w/k/src"));
        assert_eq!(common_root(&[]), PathBuf::new());
    }
}
