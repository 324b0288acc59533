//! `saxpy` against the CPU: the README's worked example of adding a kernel, and its GPU test.

use hopper_kernels::reference::random_matrix;
use support::{fresh_rng, gpu};

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn saxpy_matches_the_cpu_on_ragged_and_grid_stride_lengths() {
    let (gpu, mut rng) = (gpu(), fresh_rng("saxpy"));
    // 1, a partial block, and more than MAX_BLOCKS * BLOCK (the grid-stride loop's second lap).
    for n in [1, 1000, 65_535 * 256 + 77] {
        let (x, y) = (random_matrix(&mut rng, n), random_matrix(&mut rng, n));
        let got = hopper_kernels::saxpy::saxpy(&gpu, 2.5, &x, &y).unwrap();
        let want: Vec<f32> = x.iter().zip(&y).map(|(x, y)| 2.5f32.mul_add(*x, *y)).collect();
        assert_eq!(got, want, "n = {n}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn saxpy_of_unequal_lengths_is_an_error() {
    let err = hopper_kernels::saxpy::saxpy(&gpu(), 1.0, &[1.0], &[1.0, 2.0]).unwrap_err().to_string();
    assert!(err.contains("x holds 1 values and y 2"), "{err}");
}
