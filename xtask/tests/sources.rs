//! host/build.rs fingerprints a fixed list of packages (`xtask/src/fingerprint.rs`); nvptx-builder
//! finds the kernels crate's local packages through cargo and records its fingerprint in the PTX
//! manifest. A PTX the host accepts must have been built from exactly those files.

#[path = "../src/fingerprint.rs"]
mod fingerprint;

use std::path::Path;

#[test]
fn the_builder_finds_the_sources_the_host_fingerprints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let sources = nvptx_builder::PtxBuilder::new(root.join("kernels"))
        .out_dir(root.join("target/ptx"))
        .target_dir(root.join("target/nvptx"))
        .sources()
        .unwrap();
    assert_eq!(sources.files, fingerprint::kernel_inputs(root).unwrap());
    assert_eq!(sources.fingerprint, fingerprint::kernel_fingerprint(root).unwrap());
}
