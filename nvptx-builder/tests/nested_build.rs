//! The builder run as a dependent's build script runs it: with the calling build's cargo and
//! rustc settings in the environment, which the nested build must not inherit, on a kernels
//! crate that calls every wrapper of nvptx-std (so ptxas, where found, checks the PTX of each).
//!
//! One test per binary: it sets environment variables for the whole process.

use nvptx_builder::{Profile, PtxBuilder};
use std::path::Path;

/// What cargo and the user may have set for the outer build: each would break the nested
/// build (wrong compiler, host flags, the outer target directory, another toolchain).
const OUTER_BUILD_SETTINGS: &[(&str, &str)] = &[
    ("RUSTC", "/nonexistent/rustc"),
    ("RUSTC_WRAPPER", "/nonexistent/sccache"),
    ("RUSTC_WORKSPACE_WRAPPER", "/nonexistent/wrapper"),
    ("RUSTFLAGS", "-Cno-such-flag"),
    ("CARGO_ENCODED_RUSTFLAGS", "-Cno-such-flag"),
    ("CARGO_BUILD_RUSTFLAGS", "-Cno-such-flag"),
    ("CARGO_TARGET_DIR", "/proc/not-a-target-dir"),
    ("CARGO_BUILD_TARGET", "x86_64-unknown-linux-gnu"),
    ("CARGO_PROFILE_RELEASE_DEBUG", "true"),
    ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16"),
    ("RUSTUP_TOOLCHAIN", "stable"),
    ("CARGO", "/nonexistent/cargo"),
    ("CARGO_MANIFEST_DIR", "/nonexistent"),
];

#[test]
fn every_wrapper_builds_for_sm_90_and_sm_90a_whatever_the_calling_build_set() {
    for (name, value) in OUTER_BUILD_SETTINGS {
        // SAFETY: the only test of this binary, run before it starts any thread of its own.
        unsafe { std::env::set_var(name, value) };
    }
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/every-wrapper");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("every-wrapper");
    let ptxas = nvptx_builder::ptxas::find();
    for (arch, hopper, module, kernels) in [
        (
            "sm_90",
            false,
            "every_wrapper",
            &["every_thread_warp_math", "every_memory_access", "every_cluster_barrier_tma"][..],
        ),
        ("sm_90a", true, "every_wrapper_sm90a", &["every_wgmma"][..]),
    ] {
        let mut builder = PtxBuilder::new(&fixture)
            .arch(arch)
            .profile(Profile::Release)
            .module_name(module)
            .out_dir(&out)
            .expect_kernels(kernels.iter().copied())
            .cargo_directives(false);
        if hopper {
            builder = builder.feature("hopper").max_threads("every_wgmma", 384);
        } else {
            // TMA, bulk copies and transaction barriers need PTX ISA 8.0; sm_90 defaults to 7.8.
            builder = builder.ptx_isa(8, 0);
        }
        let built = builder.build().unwrap_or_else(|e| panic!("{module}: {e}"));
        assert_eq!(built.manifest.arch, arch);
        assert_eq!(built.manifest.entries.len(), kernels.len(), "{:?}", built.manifest.entries);
        let ptx = std::fs::read_to_string(&built.ptx).unwrap();
        // One codegen unit and no debug info, whatever CARGO_PROFILE_RELEASE_* said.
        let line_info = ptx.lines().any(|l| l.trim_start().starts_with(".loc\t") || l.starts_with(".file\t"));
        assert!(!line_info, "{module} has debug line info");
        assert!(built.sources.iter().any(|f| f.ends_with("nvptx-std/src/warp.rs")), "{:?}", built.sources);
        // ptxas assembled every kernel (it fails the build when it rejects the PTX).
        assert_eq!(built.manifest.resources.as_ref().map(Vec::len), ptxas.as_ref().map(|_| kernels.len()));
        if hopper {
            assert!(ptx.contains(".maxntid 384, 1, 1"));
        }
    }
}
