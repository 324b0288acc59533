//! The matmul section: at each size, every rung of the ladder on the same inputs, each result
//! checked against a float64 reference before it is timed.

use super::cpu::{self, SGEMM_BUDGET_S, TripleLoopBudget};
use super::report::{CheckMethod, MatmulRow, MatmulRowKind, MatmulSection, MatmulShapeResult, RowStatus};
use super::{BenchConfig, FULL_CHECK_MAX_MACS, SAMPLED_CHECK_ROWS};
use crate::cublas::Sgemm;
use crate::gpu::Gpu;
use crate::matmul::{self, InputSets, MatmulShape, MatmulVariant};
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
    Ok(MatmulSection { shapes })
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

/// The status of a row whose result has `error`: measured when within `tolerance`.
fn check_status(error: f64, tolerance: f64) -> RowStatus {
    if error <= tolerance {
        RowStatus::Measured
    } else {
        RowStatus::Failed {
            reason: format!("error {error:.2e} exceeds the bound {tolerance:.2e} (k * f32::EPSILON): not timed"),
        }
    }
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
    let rows_checked = match check {
        CheckMethod::Full => (0..m).collect(),
        CheckMethod::SampledRows { rows } => sample_rows(m, rows),
    };
    let reference = SampledMatmulReference::new(&a, &b, m, k, n, rows_checked);
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

    let (warmup, repeat) = (config.warmup, config.repeat);
    let gpu_method =
        format!("CUDA events, median of {repeat} runs after {warmup} warm-ups, inputs rotated over {sets} set(s)");
    for variant in MatmulVariant::ALL {
        progress.set_message(format!("matmul {shape}: {}", variant.name()));
        let c = matmul::run(gpu, variant, &mut mats[0]).with_context(|| format!("running {}", variant.name()))?;
        let error = reference.max_error(&c);
        rows.push(match check_status(error, tolerance) {
            RowStatus::Measured => {
                let timing = time_launches(gpu, warmup, repeat, |i| matmul::launch(gpu, variant, &mut mats[i % sets]))
                    .with_context(|| format!("timing {}", variant.name()))?;
                MatmulRow::measured(variant.name(), MatmulRowKind::Gpu, gpu_method.clone(), flops, timing, Some(error))
            }
            failed => {
                MatmulRow::unmeasured(variant.name(), MatmulRowKind::Gpu, gpu_method.clone(), failed, Some(error))
            }
        });
        progress.inc(1);
    }

    progress.set_message(format!("matmul {shape}: {CUBLAS}"));
    let cublas_method = format!("cuBLAS SGEMM, FP32 (no TF32), {gpu_method}");
    rows.push(match sgemm {
        Ok(sgemm) => {
            let error = reference.max_error(&sgemm.run(gpu, &mut mats[0]).context("running cuBLAS")?);
            match check_status(error, tolerance) {
                RowStatus::Measured => {
                    let timing = time_launches(gpu, warmup, repeat, |i| sgemm.launch(&mut mats[i % sets]))
                        .context("timing cuBLAS")?;
                    MatmulRow::measured(CUBLAS, MatmulRowKind::Cublas, cublas_method, flops, timing, Some(error))
                }
                failed => MatmulRow::unmeasured(CUBLAS, MatmulRowKind::Cublas, cublas_method, failed, Some(error)),
            }
        }
        Err(reason) => MatmulRow::unmeasured(
            CUBLAS,
            MatmulRowKind::Cublas,
            cublas_method,
            RowStatus::Skipped { reason: format!("unavailable: {reason}") },
            None,
        ),
    });
    progress.inc(1);

    let mut result = MatmulShapeResult { shape, flops, input_sets: sets, check, tolerance, rows };
    result.fill_ratios();
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_result_over_the_bound_fails_and_says_it_was_not_timed() {
        assert_eq!(check_status(1e-6, 1e-4), RowStatus::Measured);
        let RowStatus::Failed { reason } = check_status(f64::INFINITY, 1e-4) else { panic!("not failed") };
        assert!(reason.contains("inf") && reason.contains("not timed"), "{reason}");
    }
}
