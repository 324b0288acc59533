//! The matmul section: at each size, every rung of the ladder on the same inputs, each result
//! checked against a float64 reference before it is timed.

use super::cpu::{self, SGEMM_BUDGET_S, TripleLoopBudget};
use super::report::{CheckMethod, MatmulRow, MatmulRowKind, MatmulSection, MatmulShapeResult, RowStatus};
use super::{BenchConfig, FULL_CHECK_MAX_MACS, SAMPLED_CHECK_ROWS};
use crate::cublas::Sgemm;
use crate::gpu::Gpu;
use crate::inputs::InputSets;
use crate::matmul::{self, DeviceMatrices, GemmDesc, GemmPlan, MatmulShape, MatmulVariant, PlanOptions, Precision};
use crate::reference::{SampledMatmulReference, matmul_cpu_triple_loop, sample_rows};
use crate::timing::{Timing, time_launches};
use anyhow::Context;
use indicatif::ProgressBar;
use rand::SeedableRng;

/// Row name of the Guide's triple loop.
pub const CPU_LOOP: &str = "cpu triple loop";
/// Row name of the multithreaded CPU SGEMM.
pub const CPU_SGEMM: &str = "cpu sgemm";
/// Row name of cuBLAS.
pub const CUBLAS: &str = "cublas";

/// Measures every size of `config`.
pub fn measure(gpu: &Gpu, config: &BenchConfig, progress: &ProgressBar) -> anyhow::Result<MatmulSection> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(config.seed);
    let sgemm = Sgemm::new(gpu).map_err(|e| e.to_string());
    let mut budget = TripleLoopBudget::new(config.cpu_loop_limit_s);
    let mut shapes = Vec::with_capacity(config.sizes.len());
    for &shape in &config.sizes {
        let result = measure_shape(gpu, sgemm.as_ref(), shape, config, &mut budget, &mut rng, progress)
            .with_context(|| format!("matmul {shape}"))?;
        shapes.push(result);
    }
    progress.set_message("matmul: host time per planned launch against cuBLAS's");
    let launch_overhead = Some(super::overhead::measure(gpu).context("launch overhead")?);
    progress.inc(1);
    Ok(MatmulSection { shapes, launch_overhead })
}

/// How the results at `shape` are checked: every element up to [`FULL_CHECK_MAX_MACS`]
/// multiply-adds, sampled rows above.
pub fn check_method(shape: MatmulShape) -> CheckMethod {
    if shape.m as f64 * shape.k as f64 * shape.n as f64 <= FULL_CHECK_MAX_MACS {
        CheckMethod::Full
    } else {
        CheckMethod::SampledRows { rows: SAMPLED_CHECK_ROWS.min(shape.m) }
    }
}

/// The float64 reference for `shape`'s inputs `a` and `b`, on the rows `check` names.
pub fn reference_for(a: &[f32], b: &[f32], shape: MatmulShape, check: CheckMethod) -> SampledMatmulReference {
    let rows_checked = match check {
        CheckMethod::Full => (0..shape.m).collect(),
        CheckMethod::SampledRows { rows } => sample_rows(shape.m, rows),
    };
    SampledMatmulReference::new(a, b, shape.m, shape.k, shape.n, rows_checked)
}

/// [`reference_for`] of the inputs as `precision` rounds them
/// ([`Precision::reference_inputs`]): the reference of the BF16 or FP16 rows.
fn rounded_reference_for(
    precision: Precision,
    a: &[f32],
    b: &[f32],
    shape: MatmulShape,
    check: CheckMethod,
) -> SampledMatmulReference {
    let (a, b) = (precision.reference_inputs(a), precision.reference_inputs(b));
    reference_for(&a, &b, shape, check)
}

/// The status of a row whose result has `error`: measured when within `tolerance`.
fn check_status(error: f64, tolerance: f64) -> RowStatus {
    if error <= tolerance {
        RowStatus::Measured
    } else {
        RowStatus::Failed {
            reason: format!(
                "error {error:.2e} exceeds the bound {tolerance:.2e} (k * f32::EPSILON; TF32 adds 2 * 2^-10 + 2^-20; TF32x3 3k * f32::EPSILON + 5 * 2^-22): not timed"
            ),
        }
    }
}

/// `variant`'s plan for `shape` on `device`; or, when the planner refuses the shape (a narrow
/// kernel past its narrow side, any kernel past CUDA's grid limits), the skipped status of its
/// row, with the planner's reason: a row that says why, not the end of the run.
pub fn plan_or_skip(
    gpu: &Gpu,
    variant: MatmulVariant,
    shape: MatmulShape,
    options: PlanOptions,
) -> Result<GemmPlan, RowStatus> {
    matmul::plan_gemm(gpu, variant, shape, options)
        .map_err(|refusal| RowStatus::Skipped { reason: refusal.to_string() })
}

/// The plan of `desc`, or a skipped row's status saying why there is none.
pub fn plan_desc_or_skip(gpu: &Gpu, desc: GemmDesc) -> Result<GemmPlan, RowStatus> {
    GemmPlan::new(gpu, desc).map_err(|refusal| RowStatus::Skipped { reason: refusal.to_string() })
}

/// How the GPU rows at one shape are timed: the run's settings, and the words the rows record.
pub struct GpuTiming {
    /// Untimed runs before timing.
    pub warmup: usize,
    /// Timed samples.
    pub repeat: usize,
    /// The method of the rows, in words.
    pub method: String,
}

impl GpuTiming {
    /// `config`'s warm-up and repeat, on `sets` rotated input sets.
    pub fn new(config: &BenchConfig, sets: usize) -> Self {
        let (warmup, repeat) = (config.warmup, config.repeat);
        let method =
            format!("CUDA events, median of {repeat} runs after {warmup} warm-ups, inputs rotated over {sets} set(s)");
        Self { warmup, repeat, method }
    }
}

/// The row `name` of a GPU kernel launched as `plan`: its result on the first input set checked
/// against `reference`, then, when within the bound, timed on the rotated sets. A result over the
/// bound is a failed row, not an error; a launch that fails is an error.
pub fn measure_plan(
    gpu: &Gpu,
    name: &str,
    plan: &GemmPlan,
    mats: &mut [DeviceMatrices],
    reference: &SampledMatmulReference,
    timing: &GpuTiming,
) -> anyhow::Result<MatmulRow> {
    let c = matmul::run_plan(gpu, plan, &mut mats[0]).with_context(|| format!("running {name}"))?;
    let error = reference.max_error(&c);
    drop(c);
    let method = timing.method.clone();
    let precision = plan.precision();
    let tolerance = precision.tolerance(mats[0].shape().k);
    // The plan is made once: planning before every launch would time the planner too.
    let row = checked_then_timed(gpu, name, MatmulRowKind::Gpu, method, mats, error, tolerance, timing, |mats| {
        Ok(matmul::launch_plan(gpu, plan, mats)?)
    })?;
    Ok(row.with_precision(precision))
}

/// The row of a GPU result whose error is `error`: timed on the rotated `mats` with `launch`
/// when within `reference`'s bound, else a failed row that is not timed.
#[allow(clippy::too_many_arguments)]
fn checked_then_timed(
    gpu: &Gpu,
    name: &str,
    kind: MatmulRowKind,
    method: String,
    mats: &mut [DeviceMatrices],
    error: f64,
    tolerance: f64,
    timing: &GpuTiming,
    mut launch: impl FnMut(&mut DeviceMatrices) -> anyhow::Result<()>,
) -> anyhow::Result<MatmulRow> {
    let flops = mats[0].shape().flops();
    let sets = mats.len();
    Ok(match check_status(error, tolerance) {
        RowStatus::Measured => {
            let t = time_launches(gpu, timing.warmup, timing.repeat, |i| launch(&mut mats[i % sets]))
                .with_context(|| format!("timing {name}"))?;
            MatmulRow::measured(name, kind, method, flops, t, Some(error))
        }
        failed => MatmulRow::unmeasured(name, kind, method, failed, Some(error)),
    })
}

/// cuBLAS's row, checked and timed like [`measure_plan`]'s; a skipped row that says why when
/// cuBLAS could not be loaded (`sgemm` is then the reason).
pub fn measure_cublas(
    gpu: &Gpu,
    sgemm: Result<&Sgemm, &String>,
    mats: &mut [DeviceMatrices],
    reference: &SampledMatmulReference,
    timing: &GpuTiming,
) -> anyhow::Result<MatmulRow> {
    measure_cublas_in(gpu, sgemm, Precision::Fp32, mats, reference, timing)
}

/// The name of the cuBLAS row in `precision` (split-TF32's is FP32's, its baseline).
pub fn cublas_name(precision: Precision) -> &'static str {
    match precision {
        Precision::Fp32 | Precision::Tf32x3 => CUBLAS,
        Precision::Bf16 => "cublas bf16",
        Precision::Fp16 => "cublas fp16",
        Precision::Tf32 => "cublas tf32",
    }
}

/// [`measure_cublas`] in `precision` (`reference` is that precision's).
pub fn measure_cublas_in(
    gpu: &Gpu,
    sgemm: Result<&Sgemm, &String>,
    precision: Precision,
    mats: &mut [DeviceMatrices],
    reference: &SampledMatmulReference,
    timing: &GpuTiming,
) -> anyhow::Result<MatmulRow> {
    let what = match precision {
        Precision::Fp32 | Precision::Tf32x3 => "cuBLAS SGEMM, FP32 (no TF32)",
        Precision::Bf16 => "cublasGemmEx, BF16 inputs, FP32 compute",
        Precision::Fp16 => "cublasGemmEx, FP16 inputs, FP32 compute",
        Precision::Tf32 => "cublasGemmEx, CUBLAS_COMPUTE_32F_FAST_TF32",
    };
    let (name, method) = (cublas_name(precision), format!("{what}, {}", timing.method));
    let sgemm = match sgemm {
        Ok(sgemm) => sgemm,
        Err(reason) => {
            let status = RowStatus::Skipped { reason: format!("unavailable: {reason}") };
            return Ok(
                MatmulRow::unmeasured(name, MatmulRowKind::Cublas, method, status, None).with_precision(precision)
            );
        }
    };
    let c = sgemm.run_in(gpu, precision, &mut mats[0]).context("running cuBLAS")?;
    let error = reference.max_error(&c);
    let tolerance = precision.tolerance(mats[0].shape().k);
    let row = checked_then_timed(gpu, name, MatmulRowKind::Cublas, method, mats, error, tolerance, timing, |mats| {
        sgemm.launch_in(gpu, precision, mats)
    })?;
    Ok(row.with_precision(precision))
}

/// The name of the cuBLASLt row in `precision`.
pub fn cublaslt_name(precision: Precision) -> &'static str {
    match precision {
        Precision::Fp32 | Precision::Tf32x3 => "cublaslt",
        Precision::Bf16 => "cublaslt bf16",
        Precision::Fp16 => "cublaslt fp16",
        Precision::Tf32 => "cublaslt tf32",
    }
}

/// cuBLASLt's row in `precision` (its heuristic's best algorithm, 32 MiB of workspace), checked
/// and timed like [`measure_plan`]'s; skipped, saying why, without libcublasLt.
pub fn measure_cublaslt_in(
    gpu: &Gpu,
    sgemm: Result<&Sgemm, &String>,
    precision: Precision,
    mats: &mut [DeviceMatrices],
    reference: &SampledMatmulReference,
    timing: &GpuTiming,
) -> anyhow::Result<MatmulRow> {
    let what = match precision {
        Precision::Fp32 | Precision::Tf32x3 => "cublasLtMatmul, CUBLAS_COMPUTE_32F, heuristic best",
        Precision::Bf16 => "cublasLtMatmul, BF16 inputs, CUBLAS_COMPUTE_32F, heuristic best",
        Precision::Fp16 => "cublasLtMatmul, FP16 inputs, CUBLAS_COMPUTE_32F, heuristic best",
        Precision::Tf32 => "cublasLtMatmul, CUBLAS_COMPUTE_32F_FAST_TF32, heuristic best",
    };
    let (name, method) = (cublaslt_name(precision), format!("{what}, {}", timing.method));
    let sgemm = match sgemm {
        Ok(sgemm) if sgemm.has_lt() => sgemm,
        Ok(_) => {
            let status = RowStatus::Skipped { reason: "libcublasLt.so was not found".into() };
            let row = MatmulRow::unmeasured(name, MatmulRowKind::CublasLt, method, status, None);
            return Ok(row.with_precision(precision));
        }
        Err(reason) => {
            let status = RowStatus::Skipped { reason: format!("unavailable: {reason}") };
            let row = MatmulRow::unmeasured(name, MatmulRowKind::CublasLt, method, status, None);
            return Ok(row.with_precision(precision));
        }
    };
    let c = sgemm.run_lt(gpu, precision, &mut mats[0]).context("running cuBLASLt")?;
    let error = reference.max_error(&c);
    let tolerance = precision.tolerance(mats[0].shape().k);
    let row = checked_then_timed(gpu, name, MatmulRowKind::CublasLt, method, mats, error, tolerance, timing, |mats| {
        sgemm.launch_lt(gpu, precision, mats)
    })?;
    Ok(row.with_precision(precision))
}

fn measure_shape(
    gpu: &Gpu,
    sgemm: Result<&Sgemm, &String>,
    shape: MatmulShape,
    config: &BenchConfig,
    budget: &mut TripleLoopBudget,
    rng: &mut rand::rngs::StdRng,
    progress: &ProgressBar,
) -> anyhow::Result<MatmulShapeResult> {
    let (m, k, n) = (shape.m, shape.k, shape.n);
    let flops = shape.flops();
    let check = check_method(shape);

    progress.set_message(format!("matmul {shape}: inputs and float64 reference ({check})"));
    let InputSets { a, b, sets: mut mats } = InputSets::upload(gpu, shape, rng)?;
    let sets = mats.len();
    let reference = reference_for(&a, &b, shape, check);
    let tolerance = reference.tolerance();
    progress.inc(1);

    let mut rows = Vec::with_capacity(3 + MatmulVariant::ALL.len());

    progress.set_message(format!("matmul {shape}: {CPU_LOOP}"));
    let loop_method = "Guide triple loop, 1 thread, 1 run, wall clock";
    if budget.limit_s() > 0.0 && budget.estimate_s(flops).is_none() {
        budget.calibrate(config.seed);
    }
    rows.push(match budget.permit(flops) {
        Ok(()) => {
            let (c, ms) = cpu::wall_ms(|| matmul_cpu_triple_loop(&a, &b, m, k, n));
            budget.record(flops, ms / 1e3);
            let error = reference.max_error(&c);
            match check_status(error, tolerance) {
                RowStatus::Measured => {
                    let timing = Timing::from_samples(vec![ms]).expect("one sample");
                    MatmulRow::measured(CPU_LOOP, MatmulRowKind::CpuLoop, loop_method, flops, timing, Some(error))
                }
                failed => MatmulRow::unmeasured(CPU_LOOP, MatmulRowKind::CpuLoop, loop_method, failed, Some(error)),
            }
        }
        Err(reason) => {
            MatmulRow::unmeasured(CPU_LOOP, MatmulRowKind::CpuLoop, loop_method, RowStatus::Skipped { reason }, None)
        }
    });
    progress.inc(1);

    progress.set_message(format!("matmul {shape}: {CPU_SGEMM}"));
    let (c, warmup_ms) = cpu::wall_ms(|| cpu::sgemm(&a, &b, m, k, n));
    let error = reference.max_error(&c);
    drop(c);
    let threads = rayon::current_num_threads();
    rows.push(match check_status(error, tolerance) {
        RowStatus::Measured => {
            let runs = cpu::sgemm_runs(warmup_ms / 1e3, config.cpu_sgemm_max_runs, SGEMM_BUDGET_S);
            let samples = (0..runs).map(|_| cpu::wall_ms(|| cpu::sgemm(&a, &b, m, k, n)).1).collect();
            let timing = Timing::from_samples(samples).expect("at least one run");
            let method = format!("gemm crate, {threads} threads, median of {runs} run(s) after 1 warm-up, wall clock");
            MatmulRow::measured(CPU_SGEMM, MatmulRowKind::CpuSgemm, method, flops, timing, Some(error))
        }
        failed => MatmulRow::unmeasured(CPU_SGEMM, MatmulRowKind::CpuSgemm, "gemm crate", failed, Some(error)),
    });
    progress.inc(1);

    let timing = GpuTiming::new(config, sets);
    // BF16 and FP16 rows are checked against the product of the inputs rounded to their type
    // (made when needed).
    let mut bf16_reference = None;
    let mut fp16_reference = None;
    for variant in MatmulVariant::ALL {
        progress.set_message(format!("matmul {shape}: {}", variant.name()));
        let precision = variant.precision();
        if let (true, Err(why)) = (variant.needs_tensor_cores(), gpu.hopper_status()) {
            let status = RowStatus::Skipped { reason: why.to_string() };
            let row = MatmulRow::unmeasured(variant.name(), MatmulRowKind::Gpu, timing.method.clone(), status, None);
            rows.push(row.with_precision(precision));
            progress.inc(1);
            continue;
        }
        let reference = match precision {
            Precision::Bf16 => {
                &*bf16_reference.get_or_insert_with(|| rounded_reference_for(precision, &a, &b, shape, check))
            }
            Precision::Fp16 => {
                &*fp16_reference.get_or_insert_with(|| rounded_reference_for(precision, &a, &b, shape, check))
            }
            Precision::Fp32 | Precision::Tf32 | Precision::Tf32x3 => &reference,
        };
        rows.push(match plan_or_skip(gpu, variant, shape, PlanOptions::default()) {
            Ok(plan) => {
                let row = measure_plan(gpu, variant.name(), &plan, &mut mats, reference, &timing)?;
                // Which kernel a planner ran, and why, is the point of its row; the others run
                // the kernel their name says, and say their plan where it split k.
                let split = plan.kernel_plan().is_split();
                if MatmulVariant::PLANNERS.contains(&variant) || split { row.with_plan(plan.to_string()) } else { row }
            }
            Err(skipped) => {
                MatmulRow::unmeasured(variant.name(), MatmulRowKind::Gpu, timing.method.clone(), skipped, None)
            }
        });
        progress.inc(1);
    }

    progress.set_message(format!("matmul {shape}: {CUBLAS}"));
    rows.push(measure_cublas(gpu, sgemm, &mut mats, &reference, &timing)?);
    progress.inc(1);
    let hopper = gpu.hopper_status().is_ok();
    if hopper {
        let bf16 = bf16_reference.get_or_insert_with(|| rounded_reference_for(Precision::Bf16, &a, &b, shape, check));
        rows.push(measure_cublas_in(gpu, sgemm, Precision::Bf16, &mut mats, bf16, &timing)?);
        let fp16 = fp16_reference.get_or_insert_with(|| rounded_reference_for(Precision::Fp16, &a, &b, shape, check));
        rows.push(measure_cublas_in(gpu, sgemm, Precision::Fp16, &mut mats, fp16, &timing)?);
        rows.push(measure_cublas_in(gpu, sgemm, Precision::Tf32, &mut mats, &reference, &timing)?);
    }
    rows.push(measure_cublaslt_in(gpu, sgemm, Precision::Fp32, &mut mats, &reference, &timing)?);
    if hopper {
        let bf16 = bf16_reference.get_or_insert_with(|| rounded_reference_for(Precision::Bf16, &a, &b, shape, check));
        rows.push(measure_cublaslt_in(gpu, sgemm, Precision::Bf16, &mut mats, bf16, &timing)?);
        let fp16 = fp16_reference.get_or_insert_with(|| rounded_reference_for(Precision::Fp16, &a, &b, shape, check));
        rows.push(measure_cublaslt_in(gpu, sgemm, Precision::Fp16, &mut mats, fp16, &timing)?);
        rows.push(measure_cublaslt_in(gpu, sgemm, Precision::Tf32, &mut mats, &reference, &timing)?);
    }
    progress.inc(1);

    let mut result = MatmulShapeResult { shape, flops, input_sets: sets, check, tolerance, rows };
    result.fill_ratios();
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matmul::MatmulDevice;

    #[test]
    fn check_is_full_up_to_2048_cubed_and_sampled_above() {
        assert_eq!(check_method(MatmulShape::new(2048, 2048, 2048).unwrap()), CheckMethod::Full);
        assert_eq!(check_method(MatmulShape::new(1000, 800, 1200).unwrap()), CheckMethod::Full);
        assert_eq!(
            check_method(MatmulShape::new(4096, 4096, 4096).unwrap()),
            CheckMethod::SampledRows { rows: SAMPLED_CHECK_ROWS }
        );
        assert_eq!(check_method(MatmulShape::new(8, 1 << 20, 1 << 20).unwrap()), CheckMethod::SampledRows { rows: 8 });
    }

    #[test]
    fn narrow_kernels_refuse_wide_shapes_with_the_reason_their_rows_record() {
        let square = MatmulShape::new(256, 256, 256).unwrap();
        for variant in MatmulVariant::ALL {
            match matmul::plan(variant, square, MatmulDevice::H100) {
                Ok(plan) => assert!(variant.supports(square), "{}: {plan}", variant.name()),
                Err(refusal) => assert!(!variant.supports(square), "{}: {refusal}", variant.name()),
            }
        }
        let reason = matmul::plan(MatmulVariant::FewRows, square, MatmulDevice::H100).unwrap_err().to_string();
        assert!(reason.contains("at most 16 rows"), "{reason}");
        // A GEMV row: few_rows runs it, few_cols cannot, auto picks few_rows.
        let gemv = MatmulShape::new(1, 4096, 65_536).unwrap();
        assert!(matmul::plan(MatmulVariant::FewRows, gemv, MatmulDevice::H100).is_ok());
        assert!(matmul::plan(MatmulVariant::FewCols, gemv, MatmulDevice::H100).is_err());
        let auto = matmul::plan(MatmulVariant::Auto, gemv, MatmulDevice::H100).unwrap();
        assert_eq!(auto.variant(), MatmulVariant::FewRows);
    }

    #[test]
    fn a_result_over_the_bound_fails_and_says_it_was_not_timed() {
        assert_eq!(check_status(1e-6, 1e-4), RowStatus::Measured);
        let RowStatus::Failed { reason } = check_status(f64::INFINITY, 1e-4) else { panic!("not failed") };
        assert!(reason.contains("inf") && reason.contains("not timed"), "{reason}");
    }
}
