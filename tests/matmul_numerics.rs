//! FP32's contract, on every input, for every FP32-class variant: `auto` under `high` (the
//! default) and `highest`, the guarded `wgmma_tf32x3` on Hopper, and each FP32 CUDA-core kernel.
//! On inputs at every magnitude of the `f32` range, and with infinities and NaN, every element of
//! `C` has the class of the float64 product rounded to `f32` (NaN, +inf, -inf or finite), and
//! every finite element is within FP32's bound (`Precision::Fp32.bound`: `k` units of
//! `f32::EPSILON` of `sum |a b|`, plus one subnormal rounding per term). On Hopper the split-TF32
//! guard's decision is checked too: the split path (with its scales) for finite inputs whose range
//! it holds, the FP32 path for the rest.

use hopper_kernels::Gpu;
use hopper_kernels::matmul::{
    self, DeviceMatrices, GemmPlan, MatmulShape, MatmulVariant, PlanOptions, Precision, PrecisionPolicy,
};
use hopper_kernels::reference::{MatmulReference, random_matrix};
use kernels::matmul::tf32x3::{Decision, GUARD_DECISION};
use rand::Rng;
use support::{fresh_rng, gpu};

/// 80 tiles of 128 x 128 and `k >= 128`: where `auto` runs split-TF32 on Hopper.
const SHAPE: (usize, usize, usize) = (1280, 256, 1024);

/// The class of an `f32`: what FP32's contract fixes exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Nan,
    PosInf,
    NegInf,
    Finite,
}

impl Class {
    fn of(v: f32) -> Self {
        match v {
            v if v.is_nan() => Self::Nan,
            f32::INFINITY => Self::PosInf,
            f32::NEG_INFINITY => Self::NegInf,
            _ => Self::Finite,
        }
    }
}

/// Which path the guard of a split-TF32 plan is to take on a case's inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    Split,
    Fp32,
}

/// Every FP32-class plan for `shape` on `gpu`, named: `auto` under `high` and `highest`,
/// `wgmma_tf32x3` where the tensor-core kernels run (on a compute capability 9.0 GPU they must),
/// and each FP32 kernel that takes the shape.
fn fp32_class_plans(gpu: &Gpu, shape: MatmulShape) -> Vec<(String, GemmPlan)> {
    let tensor_cores = gpu.hopper_status().is_ok();
    if gpu.info().compute_capability == hopper_kernels::gpu::HOPPER_CAPABILITY
        && let Err(why) = gpu.hopper_status()
    {
        panic!("a Hopper GPU must run the split-TF32 kernels: {why}");
    }
    let mut plans = Vec::new();
    for policy in [PrecisionPolicy::High, PrecisionPolicy::Highest] {
        let plan = matmul::plan_gemm(gpu, MatmulVariant::Auto, shape, PlanOptions { policy, ..PlanOptions::default() })
            .unwrap();
        plans.push((format!("auto ({policy})"), plan));
    }
    let plan = |v| matmul::plan_gemm(gpu, v, shape, PlanOptions::default()).unwrap();
    if tensor_cores {
        plans.push(("wgmma_tf32x3".into(), plan(MatmulVariant::WgmmaTf32x3)));
    }
    for v in MatmulVariant::KERNELS {
        if v.precision() == Precision::Fp32 && v.supports(shape) {
            plans.push((v.name().into(), plan(v)));
        }
    }
    plans
}

/// Runs every FP32-class plan on `a` and `b` and asserts FP32's contract element by element;
/// on Hopper, also that the guard took `path`.
fn assert_fp32_contract(gpu: &Gpu, case: &str, a: &[f32], b: &[f32], path: Path) {
    let (m, k, n) = SHAPE;
    let shape = MatmulShape::new(m, k, n).unwrap();
    let reference = MatmulReference::new(a, b, m, k, n);
    let mut mats = DeviceMatrices::upload(gpu, shape, a, b).unwrap();
    let mut classes = [0usize; 4];
    for (name, plan) in fp32_class_plans(gpu, shape) {
        let c = matmul::run_plan(gpu, &plan, &mut mats).unwrap();
        for (i, &got) in c.iter().enumerate() {
            let (want, scale) = (reference.values[i], reference.scales[i]);
            let (r, col) = (i / n, i % n);
            let class = Class::of(want as f32);
            assert_eq!(
                Class::of(got),
                class,
                "{case}: {name} C[{r}][{col}] = {got:e}, the float64 product {want:e} ({plan})"
            );
            if class == Class::Finite {
                let bound = Precision::Fp32.bound(k, scale);
                assert!(
                    (got as f64 - want).abs() <= bound,
                    "{case}: {name} C[{r}][{col}] = {got:e}, want {want:e}: error {:.2e} > bound {bound:.2e} ({plan})",
                    (got as f64 - want).abs()
                );
            }
            if name == "wgmma_tf32x3" {
                classes[class as usize] += 1;
            }
        }
        if let Some(regions) = plan.tf32x3_regions() {
            let workspace = gpu.download(mats.workspace().unwrap()).unwrap();
            let guard: Vec<u32> = workspace[regions.guard..regions.guard + 4 * kernels::matmul::tf32x3::GUARD_WORDS]
                .chunks(4)
                .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect();
            let decision = Decision::from_word(guard[GUARD_DECISION]);
            let took = if matches!(decision, Decision::Split(_)) { Path::Split } else { Path::Fp32 };
            assert_eq!(took, path, "{case}: {name}'s guard decided {decision:?} (range words {:x?})", &guard[..4]);
            eprintln!("{case}: {name}: guard {decision:?}");
        }
    }
    eprintln!("{case}: NaN {}, +inf {}, -inf {}, finite {} elements", classes[0], classes[1], classes[2], classes[3]);
}

/// `count` values `sign * 10^e` with `e` uniform in `lo..hi` and random signs when `signed`.
fn log_uniform(rng: &mut impl Rng, count: usize, (lo, hi): (f64, f64), signed: bool) -> Vec<f32> {
    (0..count)
        .map(|_| {
            let v = 10f64.powf(rng.random_range(lo..hi)) as f32;
            if signed && rng.random_bool(0.5) { -v } else { v }
        })
        .collect()
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn fp32_class_variants_give_fp32s_class_where_rows_of_a_hold_infinities() {
    let (gpu, mut rng) = (gpu(), fresh_rng("infinities"));
    let (m, k, n) = SHAPE;
    let mut a = random_matrix(&mut rng, m * k);
    a[3 * k + 5] = f32::INFINITY;
    a[7 * k + 9] = f32::NEG_INFINITY;
    // inf and -inf in one row: NaN wherever their terms have the same sign.
    a[11 * k] = f32::INFINITY;
    a[11 * k + 200] = f32::NEG_INFINITY;
    // B's values exact in TF32 (small integers, zeros among them: inf * 0 is NaN), then uniform.
    let integers: Vec<f32> = (0..k * n).map(|_| rng.random_range(-3..=3) as f32).collect();
    assert_fp32_contract(&gpu, "inf rows, integer B", &a, &integers, Path::Fp32);
    let uniform: Vec<f32> = (0..k * n).map(|_| rng.random_range(0.5..1.0)).collect();
    assert_fp32_contract(&gpu, "inf rows, B in [0.5, 1)", &a, &uniform, Path::Fp32);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn fp32_class_variants_give_fp32s_class_with_nan_anywhere() {
    let (gpu, mut rng) = (gpu(), fresh_rng("nan"));
    let (m, k, n) = SHAPE;
    let (mut a, mut b) = (random_matrix(&mut rng, m * k), random_matrix(&mut rng, k * n));
    a[9 * k + 1] = f32::NAN;
    // A NaN whose payload lies only in the bits TF32 drops: truncated, it would read as infinity.
    a[(m - 1) * k + k - 1] = f32::from_bits(0x7f80_0001);
    a[20 * k + 17] = f32::NEG_INFINITY;
    b[4 * n + 7] = f32::INFINITY;
    b[200 * n + 80] = -f32::NAN;
    assert_fp32_contract(&gpu, "NaN and infinities in both", &a, &b, Path::Fp32);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn fp32_class_variants_keep_products_just_below_f32_max_finite() {
    let gpu = gpu();
    let (m, k, n) = SHAPE;
    // One product per element of C: 2^64 (1 + 2^-11) times 2^64 (1 - 1.5 2^-11), finite just
    // below f32::MAX, where rounding the operands to TF32 first would overflow.
    let (x, y) = (f32::from_bits(0x5f80_1000), f32::from_bits(0x5f7f_d000));
    assert!((x as f64 * y as f64) < f32::MAX as f64);
    let mut a = vec![0.0f32; m * k];
    for i in 0..m {
        a[i * k + i % k] = x;
    }
    let b = vec![y; k * n];
    assert_fp32_contract(&gpu, "products near f32::MAX", &a, &b, Path::Fp32);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn fp32_class_variants_stay_within_fp32s_bound_on_subnormal_and_tiny_operands() {
    let (gpu, mut rng) = (gpu(), fresh_rng("subnormal and tiny"));
    let (m, k, n) = SHAPE;
    // A subnormal (1e-45 .. 1e-39), B in 1e3 .. 1e4.
    let a = log_uniform(&mut rng, m * k, (-45.0, -39.0), true);
    let b = log_uniform(&mut rng, k * n, (3.0, 4.0), true);
    assert_fp32_contract(&gpu, "A subnormal, B in 1e3..1e4", &a, &b, Path::Split);
    // A just above the normal range's bottom.
    let a = log_uniform(&mut rng, m * k, (-37.92, -37.0), true);
    let b = random_matrix(&mut rng, k * n);
    assert_fp32_contract(&gpu, "A in 1.2e-38..1e-37", &a, &b, Path::Split);
    // Both tiny: every product below f32's normal range.
    let (a, b) =
        (log_uniform(&mut rng, m * k, (-21.0, -19.0), true), log_uniform(&mut rng, k * n, (-21.0, -19.0), true));
    assert_fp32_contract(&gpu, "A and B about 1e-20", &a, &b, Path::Split);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn fp32_class_variants_stay_within_fp32s_bound_on_huge_and_mixed_operands() {
    let (gpu, mut rng) = (gpu(), fresh_rng("huge and mixed"));
    let (m, k, n) = SHAPE;
    // Huge: products about 1e34, sums of 256 of them well below f32::MAX.
    let (a, b) = (log_uniform(&mut rng, m * k, (16.0, 17.0), true), log_uniform(&mut rng, k * n, (16.0, 17.0), true));
    assert_fp32_contract(&gpu, "A and B about 1e17", &a, &b, Path::Split);
    // Rows of 1e30 and of 1e-30 in one A: a range no scale holds.
    let mut a = random_matrix(&mut rng, m * k);
    for (i, row) in a.chunks_mut(k).enumerate() {
        let scale = if i % 2 == 0 { 1e30 } else { 1e-30 };
        row.iter_mut().for_each(|v| *v *= scale);
    }
    let b = random_matrix(&mut rng, k * n);
    assert_fp32_contract(&gpu, "rows of 1e30 and 1e-30", &a, &b, Path::Fp32);
}
