//! The shape suite: at each shape, `auto` (whichever kernel the planner picks) against cuBLAS on
//! the same inputs, both checked against the float64 reference as in the ladder before they are
//! timed. The ladder shows how each kernel fares on squares; the suite shows what a caller gets
//! from `auto` on the shapes that matter, narrow and skewed ones included.

use super::BenchConfig;
use super::matmul::{CUBLAS, GpuTiming, check_method, measure_cublas, measure_plan, plan_or_skip, reference_for};
use super::report::{CopyBandwidth, MatmulRow, MatmulRowKind, SuiteSection, SuiteShapeResult};
use crate::cublas::Sgemm;
use crate::gpu::Gpu;
use crate::inputs::InputSets;
use crate::matmul::{MatmulShape, MatmulVariant, PlanOptions, PrecisionPolicy};
use anyhow::Context;
use indicatif::ProgressBar;
use rand::SeedableRng;

/// Progress-bar steps per shape: the inputs and reference, the planner, cuBLAS.
pub const STEPS_PER_SHAPE: usize = 3;

/// Measures every shape of `config.suite`; memory-bound shapes are related to `copy`.
pub fn measure(
    gpu: &Gpu,
    config: &BenchConfig,
    copy: &CopyBandwidth,
    progress: &ProgressBar,
) -> anyhow::Result<SuiteSection> {
    // A seed of its own, so that the suite's inputs do not depend on whether the ladder ran.
    let mut rng = rand::rngs::StdRng::seed_from_u64(config.seed ^ 0x5355_4954_4500);
    let sgemm = Sgemm::new(gpu).map_err(|e| e.to_string());
    let mut shapes = Vec::with_capacity(config.suite.len());
    for &shape in &config.suite {
        let result = measure_shape(gpu, sgemm.as_ref(), shape, config, &mut rng, progress)
            .with_context(|| format!("suite {shape}"))?;
        shapes.push(result);
    }
    Ok(SuiteSection::new(copy.clone(), shapes).with_planner(&suite_planner_name(config.suite_policy)))
}

/// The suite's planner as the report names it: `auto` under the default policy, `auto <policy>`
/// under another.
pub fn suite_planner_name(policy: PrecisionPolicy) -> String {
    if policy == PrecisionPolicy::default() { "auto".to_string() } else { format!("auto {policy}") }
}

fn measure_shape(
    gpu: &Gpu,
    sgemm: Result<&Sgemm, &String>,
    shape: MatmulShape,
    config: &BenchConfig,
    rng: &mut rand::rngs::StdRng,
    progress: &ProgressBar,
) -> anyhow::Result<SuiteShapeResult> {
    let check = check_method(shape);
    progress.set_message(format!("suite {shape}: inputs and float64 reference ({check})"));
    let InputSets { a, b, sets: mut mats } = InputSets::upload(gpu, shape, rng)?;
    let reference = reference_for(&a, &b, shape, check);
    // No CPU row needs them: free the host copies (1 GiB of B at 16x16384x16384).
    drop((a, b));
    let timing = GpuTiming::new(config, mats.len());
    progress.inc(1);

    let planner = suite_planner_name(config.suite_policy);
    progress.set_message(format!("suite {shape}: {planner}"));
    let options = PlanOptions { policy: config.suite_policy, split: None, tile: None, ..PlanOptions::default() };
    let (kernel, auto) = match plan_or_skip(gpu, MatmulVariant::Auto, shape, options) {
        Ok(plan) => {
            let row = measure_plan(gpu, &planner, &plan, &mut mats, &reference, &timing)?;
            (Some(plan.kernel_plan().variant().name().to_string()), row.with_plan(plan.kernel_plan().to_string()))
        }
        Err(skipped) => {
            (None, MatmulRow::unmeasured(&planner, MatmulRowKind::Gpu, timing.method.clone(), skipped, None))
        }
    };
    progress.inc(1);

    progress.set_message(format!("suite {shape}: {CUBLAS}"));
    let cublas = measure_cublas(gpu, sgemm, &mut mats, &reference, &timing)?;
    progress.inc(1);

    Ok(SuiteShapeResult::new(shape, mats.len(), check, reference.tolerance(), kernel, auto, cublas))
}
