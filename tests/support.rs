//! Shared helpers of the integration tests: opening the GPU, fresh random inputs, and checks
//! that read as specifications.

use host::Gpu;
use rand::SeedableRng;
use rand::rngs::StdRng;

/// The GPU the tests run on; GPU tests are `#[ignore]`d, so this only runs where one was asked for.
pub fn gpu() -> Gpu {
    Gpu::open(0).unwrap_or_else(|e| panic!("GPU tests need a CUDA device: {e}"))
}

/// The GPU and a fresh generator for a test of the Hopper tensor-core kernels (named `hopper_*`,
/// so that `cargo xtask test` can leave them out, saying so, on a GPU of another compute
/// capability). On any other GPU, or a Hopper GPU that cannot load the `sm_90a` module, the test
/// fails and says why: it never passes without running.
pub fn hopper_gpu(test: &str) -> (Gpu, StdRng) {
    let gpu = gpu();
    if let Err(why) = gpu.hopper_status() {
        panic!(
            "{test} needs the sm_90a tensor-core kernels on a compute capability 9.0 GPU: {why} (run with `--skip hopper_` elsewhere)"
        );
    }
    (gpu, fresh_rng(test))
}

/// A random generator seeded afresh for every run; the seed is printed so a failure can be
/// replayed with `TEST_SEED=<seed>`.
pub fn fresh_rng(test: &str) -> StdRng {
    let seed = std::env::var("TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random::<u64>);
    eprintln!("{test}: TEST_SEED={seed}");
    StdRng::seed_from_u64(seed)
}
