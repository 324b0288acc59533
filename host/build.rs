//! Embeds `target/ptx/kernels.ptx` and `target/ptx/kernels_sm90a.ptx` (written by `cargo xtask
//! build-ptx`) when they match the kernel sources; otherwise embeds the reason one cannot be
//! used, which the library reports as an error at run time. A missing or stale PTX is never
//! embedded silently.

#[path = "../xtask/src/fingerprint.rs"]
mod fingerprint;

use std::path::Path;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let root = Path::new(&manifest_dir).parent().unwrap();
    for input in fingerprint::kernel_inputs(root).unwrap_or_default() {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    println!("cargo:rerun-if-changed={}", root.join("kernels/src").display());
    let out = Path::new(&std::env::var("OUT_DIR").unwrap()).to_path_buf();
    for (stem, problem_file) in [("kernels", "ptx_problem.rs"), ("kernels_sm90a", "ptx_sm90a_problem.rs")] {
        let ptx_path = root.join(format!("target/ptx/{stem}.ptx"));
        let manifest_path = root.join(format!("target/ptx/{stem}.json"));
        println!("cargo:rerun-if-changed={}", ptx_path.display());
        println!("cargo:rerun-if-changed={}", manifest_path.display());
        let (ptx, manifest, problem) = match check(root, &ptx_path, &manifest_path) {
            Ok((ptx, manifest)) => (ptx, manifest, None),
            Err(problem) => (String::new(), "{}".to_string(), Some(problem)),
        };
        std::fs::write(out.join(format!("{stem}.ptx")), ptx).unwrap();
        std::fs::write(out.join(format!("{stem}.json")), manifest).unwrap();
        std::fs::write(out.join(problem_file), format!("{problem:?}")).unwrap();
    }
}

fn check(root: &Path, ptx_path: &Path, manifest_path: &Path) -> Result<(String, String), String> {
    let build = "run `cargo xtask build-ptx --release` and rebuild";
    let ptx = std::fs::read_to_string(ptx_path).map_err(|_| format!("no PTX at {}: {build}", ptx_path.display()))?;
    let manifest = std::fs::read_to_string(manifest_path)
        .map_err(|_| format!("no PTX manifest at {}: {build}", manifest_path.display()))?;
    let recorded: serde_json::Value =
        serde_json::from_str(&manifest).map_err(|e| format!("unreadable PTX manifest ({e}): {build}"))?;
    let current = fingerprint::kernel_fingerprint(root).map_err(|e| format!("cannot read the kernel sources: {e}"))?;
    if recorded["fingerprint"].as_str() != Some(current.as_str()) {
        return Err(format!("the PTX is stale: kernels/ changed after it was built; {build}"));
    }
    Ok((ptx, manifest))
}
