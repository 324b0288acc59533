//! Shared helpers of the integration tests: opening the GPU, fresh random inputs, and checks
//! that read as specifications.

use host::Gpu;
use rand::SeedableRng;
use rand::rngs::StdRng;

/// The GPU the tests run on; GPU tests are `#[ignore]`d, so this only runs where one was asked for.
pub fn gpu() -> Gpu {
    Gpu::open(0).unwrap_or_else(|e| panic!("GPU tests need a CUDA device: {e}"))
}

/// A random generator seeded afresh for every run; the seed is printed so a failure can be
/// replayed with `TEST_SEED=<seed>`.
pub fn fresh_rng(test: &str) -> StdRng {
    let seed = std::env::var("TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random::<u64>);
    eprintln!("{test}: TEST_SEED={seed}");
    StdRng::seed_from_u64(seed)
}
