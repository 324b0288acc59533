//! A CPU model of `wgmma_tf32x3`'s arithmetic under its guard, as the kernels do it: the scan's
//! range words, the guard's scales (`tf32x3_scales`), the exact scaling and split, the tensor
//! cores' TF32 truncation of the operands and flush of subnormals to zero, their per-instruction
//! accumulation of 8 products aligned to the largest exponent and truncated (the pessimistic model
//! of Fasi, Higham, Mikaitis and Pranesh, 2021), the runs of 96 summands added into `f32`, and
//! the exact unscaling of `C`. On the input classes that broke the unguarded split (tiny,
//! subnormal, huge, mixed), every element the split path computes is within FP32's bound, and
//! inputs the split cannot honour are refused.

use host::matmul::Precision;
use kernels::matmul::tf32x3::{
    TF32_MASK, Tf32x3Scales, guard_words_of, power_of_two, scale_by_power_of_two, split_tf32, tf32x3_scales,
};
use proptest::prelude::*;

/// `x` as the tensor cores read a TF32 operand: mantissa truncated to 10 bits, subnormals
/// flushed to zero.
fn tensor_core_input(x: f32) -> f64 {
    let t = f32::from_bits(x.to_bits() & TF32_MASK);
    if t.abs() < f32::MIN_POSITIVE { 0.0 } else { t as f64 }
}

/// `x` truncated toward zero to a multiple of `2^unit_exp`.
fn truncate_to(x: f64, unit_exp: i32) -> f64 {
    let unit = 2f64.powi(unit_exp);
    (x / unit).trunc() * unit
}

/// One instruction's accumulation: the accumulator and 8 exact products aligned to the largest
/// exponent among them and truncated to 24 bits below it, summed, truncated to `f32`, and
/// flushed to zero below the normal range.
fn instruction(acc: f64, products: &[f64]) -> f64 {
    let terms: Vec<f64> = std::iter::once(acc).chain(products.iter().copied()).filter(|t| *t != 0.0).collect();
    let Some(emax) = terms.iter().map(|t| t.abs().log2().floor() as i32).max() else { return 0.0 };
    let sum: f64 = terms.iter().map(|&t| truncate_to(t, emax - 23)).sum();
    if sum == 0.0 {
        return 0.0;
    }
    let e = sum.abs().log2().floor() as i32;
    let result = truncate_to(sum, e - 23);
    if result.abs() < f32::MIN_POSITIVE as f64 { 0.0 } else { result }
}

/// `C = A B` (`m x k` by `k x n`) as the guarded split path computes it, or `None` where the
/// guard takes the FP32 path.
fn split_path_product(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize)) -> Option<Vec<f32>> {
    let words =
        |v: &[f32]| v.iter().fold([0u32, 0], |[h, l], &x| [h.max(guard_words_of(x).0), l.max(guard_words_of(x).1)]);
    let ([a_max, a_min], [b_max, b_min]) = (words(a), words(b));
    let Tf32x3Scales { a: sa, b: sb } = tf32x3_scales([a_max, a_min, b_max, b_min], k as u32)?;
    let split = |v: &[f32], s: i32| -> Vec<(f32, f32)> { v.iter().map(|&x| split_tf32(x * power_of_two(s))).collect() };
    let (a2, b2) = (split(a, sa), split(b, sb));
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            // The tripled k in the kernel's order: small A first, then small B, then both big.
            let products: Vec<f64> = (0..3 * k)
                .map(|t| {
                    let (block, kk) = (t / k, t % k);
                    let ((ab, asm), (bb, bsm)) = (a2[i * k + kk], b2[kk * n + j]);
                    let (x, y) = match block {
                        0 => (asm, bb),
                        1 => (ab, bsm),
                        _ => (ab, bb),
                    };
                    let p = tensor_core_input(x) * tensor_core_input(y);
                    if p.abs() < f32::MIN_POSITIVE as f64 { 0.0 } else { p }
                })
                .collect();
            let mut sum = 0.0f32;
            for run in products.chunks(96) {
                let acc = run.chunks(8).fold(0.0, instruction);
                sum += acc as f32;
            }
            c[i * n + j] = scale_by_power_of_two(sum, -(sa + sb));
        }
    }
    Some(c)
}

/// Asserts the split path's `C` within FP32's bound of the float64 product, element by element;
/// returns whether the guard took the split path.
fn assert_within_fp32s_bound(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize)) -> bool {
    let Some(c) = split_path_product(a, b, (m, k, n)) else { return false };
    for i in 0..m {
        for j in 0..n {
            let (mut want, mut magnitude) = (0.0f64, 0.0f64);
            for kk in 0..k {
                let p = a[i * k + kk] as f64 * b[kk * n + j] as f64;
                want += p;
                magnitude += p.abs();
            }
            let got = c[i * n + j];
            assert!(got.is_finite(), "C[{i}][{j}] = {got} on finite inputs the guard accepted");
            for precision in [Precision::Tf32x3, Precision::Fp32] {
                let bound = precision.bound(k, magnitude);
                assert!(
                    (got as f64 - want).abs() <= bound,
                    "C[{i}][{j}] = {got:e}, want {want:e}: error {:.2e} > {precision:?}'s bound {bound:.2e} (k = {k})",
                    (got as f64 - want).abs()
                );
            }
        }
    }
    true
}

/// Values `sign * 10^e`, `e` uniform in `lo..hi`.
fn magnitudes(count: usize, (lo, hi): (f64, f64)) -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec((lo..hi, any::<bool>()), count).prop_map(|v| {
        v.into_iter().map(|(e, neg)| if neg { -(10f64.powf(e) as f32) } else { 10f64.powf(e) as f32 }).collect()
    })
}

const SHAPE: (usize, usize, usize) = (4, 160, 3);

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn subnormal_a_times_thousands_is_split_within_fp32s_bound(
        a in magnitudes(SHAPE.0 * SHAPE.1, (-45.0, -39.0)),
        b in magnitudes(SHAPE.1 * SHAPE.2, (3.0, 4.0)),
    ) {
        prop_assert!(assert_within_fp32s_bound(&a, &b, SHAPE));
    }

    #[test]
    fn a_at_the_bottom_of_the_normal_range_is_split_within_fp32s_bound(
        a in magnitudes(SHAPE.0 * SHAPE.1, (-37.92, -37.0)),
        b in magnitudes(SHAPE.1 * SHAPE.2, (-1.0, 0.0)),
    ) {
        prop_assert!(assert_within_fp32s_bound(&a, &b, SHAPE));
    }

    #[test]
    fn tiny_and_huge_operands_are_split_within_fp32s_bound(
        a in magnitudes(SHAPE.0 * SHAPE.1, (-21.0, -19.0)),
        b in magnitudes(SHAPE.1 * SHAPE.2, (-21.0, -19.0)),
        c in magnitudes(SHAPE.0 * SHAPE.1, (16.0, 17.0)),
        d in magnitudes(SHAPE.1 * SHAPE.2, (16.0, 17.0)),
    ) {
        prop_assert!(assert_within_fp32s_bound(&a, &b, SHAPE));
        prop_assert!(assert_within_fp32s_bound(&c, &d, SHAPE));
    }

    #[test]
    fn any_finite_operands_are_split_within_fp32s_bound_or_refused(
        a in prop::collection::vec(any::<f32>().prop_filter("finite", |v| v.is_finite()), SHAPE.0 * SHAPE.1),
        b in prop::collection::vec(any::<f32>().prop_filter("finite", |v| v.is_finite()), SHAPE.1 * SHAPE.2),
    ) {
        assert_within_fp32s_bound(&a, &b, SHAPE);
    }

    #[test]
    fn operands_spanning_most_of_the_range_are_refused(
        a in magnitudes(SHAPE.0 * SHAPE.1, (-30.0, 30.0)),
        b in magnitudes(SHAPE.1 * SHAPE.2, (-30.0, 30.0)),
    ) {
        let mut a = a;
        a[0] = 1e30;
        a[1] = 1e-30;
        let mut b = b;
        b[0] = 1e30;
        b[1] = 1e-30;
        prop_assert!(!assert_within_fp32s_bound(&a, &b, SHAPE));
    }
}

#[test]
fn the_model_of_the_guarded_split_matches_fp32_on_ordinary_inputs_to_a_few_units() {
    let (m, k, n) = (3, 4096, 2);
    let a: Vec<f32> = (0..m * k).map(|i| ((i * 7919 % 1000) as f32 / 500.0) - 1.0).collect();
    let b: Vec<f32> = (0..k * n).map(|i| ((i * 104_729 % 1000) as f32 / 500.0) - 1.0).collect();
    assert!(assert_within_fp32s_bound(&a, &b, (m, k, n)));
}
