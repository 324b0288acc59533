//! `row_softmax` on the GPU against the exact softmax on the CPU.

use my_kernels_host::{Softmax, TOLERANCE, max_relative_error, softmax_cpu};
use rand::{Rng, SeedableRng};

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn row_softmax_matches_the_cpu_on_every_shape_within_the_tolerance() {
    let ctx = nvptx_launch::open_device(0).expect("a GPU");
    let softmax = Softmax::load(&ctx).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    // One column; fewer, as many and more columns than a warp and than a block; ragged tails;
    // a long row (many columns per thread); many rows (many blocks).
    for (rows, cols) in
        [(1, 1), (3, 31), (2, 32), (5, 33), (4, 255), (3, 256), (7, 1000), (2, 4097), (1, 65_536), (20_000, 64)]
    {
        let x: Vec<f32> = (0..rows * cols).map(|_| rng.random_range(-8.0..8.0)).collect();
        let x_dev = stream.clone_htod(&x).unwrap();
        // NaN everywhere first: an element the kernel does not write fails the check.
        let mut y_dev = stream.clone_htod(&vec![f32::NAN; x.len()]).unwrap();
        softmax.run(&stream, &x_dev, &mut y_dev, rows, cols).unwrap();
        let got = stream.clone_dtoh(&y_dev).unwrap();
        let error = max_relative_error(&got, &softmax_cpu(&x, rows, cols).unwrap());
        assert!(error <= TOLERANCE, "{rows} x {cols}: relative error {error:e}");
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn rows_with_a_nan_or_only_minus_infinity_come_out_nan_as_on_the_cpu() {
    let ctx = nvptx_launch::open_device(0).expect("a GPU");
    let softmax = Softmax::load(&ctx).unwrap();
    let stream = ctx.new_stream().unwrap();
    let x = [1.0, f32::NAN, 2.0, f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY, 0.5, -1.0, f32::NEG_INFINITY];
    let x_dev = stream.clone_htod(&x).unwrap();
    let mut y_dev = stream.alloc_zeros::<f32>(x.len()).unwrap();
    softmax.run(&stream, &x_dev, &mut y_dev, 3, 3).unwrap();
    let got = stream.clone_dtoh(&y_dev).unwrap();
    assert!(got[..6].iter().all(|v| v.is_nan()), "{got:?}");
    assert_eq!(got[8], 0.0);
    assert!(max_relative_error(&got, &softmax_cpu(&x, 3, 3).unwrap()) <= TOLERANCE, "{got:?}");
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn buffers_too_small_for_the_matrix_are_refused_before_the_launch() {
    let ctx = nvptx_launch::open_device(0).expect("a GPU");
    let softmax = Softmax::load(&ctx).unwrap();
    let stream = ctx.new_stream().unwrap();
    let x = stream.alloc_zeros::<f32>(10).unwrap();
    let mut y = stream.alloc_zeros::<f32>(9).unwrap();
    let err = softmax.run(&stream, &x, &mut y, 2, 5).unwrap_err().to_string();
    assert!(err.contains("x holds 10 and y holds 9"), "{err}");
}
