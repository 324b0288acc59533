//! The random-shape sweep (`host bench --sweep N --seed S`): `N` shapes with `m`, `k` and `n`
//! each drawn log-uniformly in `[1, 16384]` from a seeded generator, and at every shape, for
//! every precision of [`SWEEP_PRECISIONS`], our planner's choice against cuBLASLt (and `auto`
//! against cuBLAS FP32 too), each result checked against the float64 reference of its
//! precision before it is timed. The suite measures the shapes we chose; the sweep measures the
//! ones nobody chose, and its worst shape is the planner's hole.

use super::BenchConfig;
use super::matmul::{
    GpuTiming, check_method, cublas_name, cublaslt_name, measure_cublas_in, measure_cublaslt_in, measure_plan,
    plan_desc_or_skip, reference_for,
};
use super::report::{
    MatmulRow, MatmulRowKind, RowStatus, SweepPrecision, SweepSection, SweepShapeResult, SweepSummary,
};
use super::suite::suite_planner_name;
use crate::cublas::Sgemm;
use crate::gpu::Gpu;
use crate::inputs::InputSets;
use crate::matmul::{DType, GemmDesc, Layout, MatmulShape, Precision, PrecisionPolicy};
use crate::reference::SampledMatmulReference;
use crate::timing::UntrackedEvents;
use anyhow::Context;
use indicatif::ProgressBar;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The largest side drawn: `m`, `k` and `n` are each in `1..=MAX_SIDE`.
pub const MAX_SIDE: usize = 16384;

/// The cap on `m * k * n`: 2^35 multiply-adds (2^36 FLOPs, 4096 x 4096 x 2048). A draw above it
/// is drawn again (about 2% of draws), so the shapes are log-uniform on the part of the cube
/// `[1, 16384]^3` under the cap. At the cap the slowest row (FP32 at about 50 TFLOP/s) takes
/// 1.4 ms, and the float64 check of 64 sampled rows stays within seconds on the CPU: 200 shapes
/// run in a few minutes, most of it the 100 ms warm-up of each timed row.
pub const MAX_MACS: u64 = 1 << 35;

/// Timed samples per row under `--sweep` when `--repeat` is not given: the median of 10 samples
/// of at least 0.5 ms each is steady to a few percent, and the warm-up dominates a row's time.
pub const SWEEP_REPEAT: usize = 10;

/// What the sweep runs at one precision: our side and its baselines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepEntry {
    /// The name of the precision in the tables and the JSON.
    pub name: &'static str,
    /// Our side: the GEMM descriptor's `auto` on operands of this type, row-major.
    pub operands: DType,
    /// The policy `auto` plans under; `None`: the run's `--precision`.
    pub policy: Option<PrecisionPolicy>,
    /// The baselines' precision (cuBLASLt in it, heuristic best); every row is checked against
    /// the float64 reference of [`Precision::reference_precision`].
    pub precision: Precision,
    /// Whether cuBLAS (`cublasSgemm` in FP32, `cublasGemmEx` otherwise) is a baseline too.
    pub cublas: bool,
}

impl SweepEntry {
    /// Our side's descriptor at `shape` under the run's policy `run_policy`.
    pub fn desc(&self, shape: MatmulShape, run_policy: PrecisionPolicy) -> GemmDesc {
        let layout = Layout::row_major(self.operands);
        GemmDesc::new(shape.m, shape.n, shape.k).a(layout).b(layout).policy(self.policy.unwrap_or(run_policy))
    }

    /// Whether the precision's baselines run on tensor cores (BF16, FP16, TF32): without them the
    /// rows are skipped, saying why.
    pub fn needs_tensor_cores(&self) -> bool {
        self.precision != Precision::Fp32
    }
}

/// The precisions the sweep measures, in report order. A new precision is one more line.
pub const SWEEP_PRECISIONS: &[SweepEntry] = &[
    SweepEntry { name: "bf16", operands: DType::Bf16, policy: None, precision: Precision::Bf16, cublas: false },
    SweepEntry { name: "fp16", operands: DType::F16, policy: None, precision: Precision::Fp16, cublas: false },
    SweepEntry {
        name: "tf32",
        operands: DType::F32,
        policy: Some(PrecisionPolicy::Medium),
        precision: Precision::Tf32,
        cublas: false,
    },
    SweepEntry { name: "auto", operands: DType::F32, policy: None, precision: Precision::Fp32, cublas: true },
];

/// The square sizes of `host bench --sweep-shapes llm`: 256 to 8192.
pub const LLM_SQUARES: [usize; 6] = [256, 512, 1024, 2048, 4096, 8192];
/// The token counts (`m`) of `--sweep-shapes llm`: one decoded token to a long prefill.
pub const LLM_TOKENS: [usize; 8] = [1, 16, 64, 128, 256, 1024, 4096, 8192];
/// The weights (`k x n`) of `--sweep-shapes llm`: attention and MLP projections of 7-70B models.
pub const LLM_WEIGHTS: [(usize, usize); 4] = [(4096, 4096), (4096, 14336), (14336, 4096), (8192, 28672)];

/// The shapes of `--sweep-shapes llm`: the squares [`LLM_SQUARES`], then every token count of
/// [`LLM_TOKENS`] against every weight of [`LLM_WEIGHTS`].
///
/// ```
/// use host::bench::shape_sweep::llm_shapes;
/// let shapes = llm_shapes();
/// assert_eq!(shapes.len(), 6 + 8 * 4);
/// assert_eq!(shapes[6].to_string(), "1x4096x4096");
/// ```
pub fn llm_shapes() -> Vec<MatmulShape> {
    let squares = LLM_SQUARES.iter().map(|&s| (s, s, s));
    let layers = LLM_WEIGHTS.iter().flat_map(|&(k, n)| LLM_TOKENS.iter().map(move |&m| (m, k, n)));
    squares.chain(layers).map(|(m, k, n)| MatmulShape::new(m, k, n).expect("positive sides")).collect()
}

/// Progress-bar steps per shape: the inputs and references, then every row of every precision.
pub fn steps_per_shape() -> usize {
    steps_per_shape_of(&[])
}

/// [`steps_per_shape`] for the precisions named (all where `names` is empty).
pub fn steps_per_shape_of(names: &[String]) -> usize {
    1 + selected(names).iter().map(|e| 2 + usize::from(e.cublas)).sum::<usize>()
}

/// The entries of [`SWEEP_PRECISIONS`] named in `names`, in table order; all where it is empty.
pub fn selected(names: &[String]) -> Vec<&'static SweepEntry> {
    SWEEP_PRECISIONS.iter().filter(|e| names.is_empty() || names.iter().any(|n| n == e.name)).collect()
}

/// The rule the shapes are drawn by, in words (recorded in the report).
pub fn draw_rule() -> String {
    format!(
        "m, k, n each log-uniform on the integers 1..={MAX_SIDE} (floor of e^U, U uniform on [0, ln {})), \
         ChaCha8 seeded with the run's seed; a shape with m*k*n above 2^{} is drawn again",
        MAX_SIDE + 1,
        MAX_MACS.trailing_zeros()
    )
}

/// One side drawn log-uniformly from `1..=MAX_SIDE`: `floor(e^U)` with `U` uniform on
/// `[0, ln(MAX_SIDE + 1))`, so that `P(side = s)` is `ln((s + 1) / s) / ln(MAX_SIDE + 1)` and
/// every octave `[2^i, 2^(i+1))` is equally likely.
pub fn draw_side(rng: &mut impl Rng) -> usize {
    let u: f64 = rng.random_range(0.0..((MAX_SIDE + 1) as f64).ln());
    (u.exp().floor() as usize).clamp(1, MAX_SIDE)
}

/// `count` shapes drawn from `seed` by [`draw_rule`]: the same shapes for the same seed on every
/// machine (ChaCha8's stream is fixed by its definition), each side in `1..=MAX_SIDE`, each
/// product at most `max_macs` (at least 1).
pub fn draw_shapes(count: usize, seed: u64, max_macs: u64) -> Vec<MatmulShape> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let max_macs = max_macs.max(1);
    let mut shapes = Vec::with_capacity(count);
    while shapes.len() < count {
        let (m, k, n) = (draw_side(&mut rng), draw_side(&mut rng), draw_side(&mut rng));
        if (m as u64) * (k as u64) * (n as u64) <= max_macs {
            shapes.push(MatmulShape::new(m, k, n).expect("sides in 1..=MAX_SIDE"));
        }
    }
    shapes
}

/// What our side is called in the rows of `entry`: `auto` under its policy, on its operands.
fn planner_name(entry: &SweepEntry, policy: PrecisionPolicy) -> String {
    let auto = suite_planner_name(entry.policy.unwrap_or(policy));
    match entry.operands {
        DType::F32 => auto,
        operands => format!("{auto} on {operands} operands"),
    }
}

/// Measures `count` shapes drawn from `config.seed` (see [`draw_shapes`]).
pub fn measure(gpu: &Gpu, config: &BenchConfig, count: usize, progress: &ProgressBar) -> anyhow::Result<SweepSection> {
    let (shapes, draw) = match &config.sweep_shapes {
        Some(listed) => (listed.clone(), "the shapes listed by --sweep-shapes, in that order".to_string()),
        None => (draw_shapes(count, config.seed, MAX_MACS), draw_rule()),
    };
    let count = shapes.len();
    // SAFETY: the sweep's buffers, launches and cuBLAS calls all go on gpu's one stream, which
    // orders them; the guard outlives them (declared before them, dropped after).
    let _one_stream = unsafe { UntrackedEvents::new(gpu) };
    // Inputs from a stream of their own, so that they do not depend on the shapes' draws.
    let mut rng = rand::rngs::StdRng::seed_from_u64(config.seed ^ 0x5357_4545_5000);
    let sgemm = Sgemm::new(gpu).map_err(|e| e.to_string());
    let entries = selected(&config.sweep_precisions);
    let mut results: Vec<Vec<SweepShapeResult>> = vec![Vec::with_capacity(count); entries.len()];
    let started = std::time::Instant::now();
    let mut stopped: Option<String> = None;
    for (i, &shape) in shapes.iter().enumerate() {
        if stopped.is_none()
            && let Some(limit) = config.sweep_time_limit_s
            && started.elapsed().as_secs_f64() >= limit
        {
            stopped = Some(time_limit_reason(limit, i, count));
        }
        let rows = match &stopped {
            Some(reason) => {
                progress.inc(steps_per_shape_of(&config.sweep_precisions) as u64);
                not_started(shape, &entries, config.suite_policy, reason)
            }
            None => measure_shape(gpu, sgemm.as_ref(), shape, config, &entries, &mut rng, progress)
                .with_context(|| format!("sweep shape {} of {count}, {shape}", i + 1))?,
        };
        for (per_precision, row) in results.iter_mut().zip(rows) {
            per_precision.push(row);
        }
    }
    let precisions = entries
        .iter()
        .zip(results)
        .map(|(entry, shapes)| summarize(entry, planner_name(entry, config.suite_policy), shapes))
        .collect();
    Ok(SweepSection { seed: config.seed, draw, max_side: MAX_SIDE, max_macs: MAX_MACS, shapes, precisions })
}

/// Why the shapes after the first `done` of `count` were not measured.
pub fn time_limit_reason(limit_s: f64, done: usize, count: usize) -> String {
    format!("not started: --time-limit of {limit_s} s ran out after {done} of {count} shapes")
}

/// The rows of each of `entries` at a shape the sweep did not start, skipped for `reason`: in
/// the tables and the JSON as unmeasured, left out of the worst shape and the mean.
pub fn not_started(
    shape: MatmulShape,
    entries: &[&SweepEntry],
    policy: PrecisionPolicy,
    reason: &str,
) -> Vec<SweepShapeResult> {
    let skipped = |name: &str, kind: MatmulRowKind, p: Precision| {
        let status = RowStatus::Skipped { reason: reason.to_string() };
        MatmulRow::unmeasured(name, kind, "not timed", status, None).with_precision(p)
    };
    entries
        .iter()
        .map(|entry| {
            let p = entry.precision;
            let ours = skipped(&planner_name(entry, policy), MatmulRowKind::Gpu, p);
            let cublaslt = skipped(cublaslt_name(p), MatmulRowKind::CublasLt, p);
            let cublas = entry.cublas.then(|| skipped(cublas_name(p), MatmulRowKind::Cublas, p));
            SweepShapeResult::new(shape, 0, check_method(shape), None, ours, cublaslt, cublas)
        })
        .collect()
}

/// One precision's section from its shapes: the summaries against cuBLASLt and, where it is a
/// baseline, cuBLAS.
pub fn summarize(entry: &SweepEntry, planner: String, shapes: Vec<SweepShapeResult>) -> SweepPrecision {
    let x_cublaslt =
        SweepSummary::new(cublaslt_name(entry.precision), shapes.iter().map(|s| (s.shape, s.ours.ratio_to_cublaslt)));
    let x_cublas = entry.cublas.then(|| {
        SweepSummary::new(cublas_name(entry.precision), shapes.iter().map(|s| (s.shape, s.ours.ratio_to_cublas)))
    });
    SweepPrecision { name: entry.name.to_string(), precision: entry.precision, planner, shapes, x_cublaslt, x_cublas }
}

/// The rows of each of `entries` at `shape`, in their order, on one set of inputs.
fn measure_shape(
    gpu: &Gpu,
    sgemm: Result<&Sgemm, &String>,
    shape: MatmulShape,
    config: &BenchConfig,
    entries: &[&SweepEntry],
    rng: &mut rand::rngs::StdRng,
    progress: &ProgressBar,
) -> anyhow::Result<Vec<SweepShapeResult>> {
    let check = check_method(shape);
    progress.set_message(format!("sweep {shape}: inputs and float64 references ({check})"));
    let InputSets { a, b, sets: mut mats } = InputSets::upload(gpu, shape, rng)?;
    // One reference per reference precision the table needs (FP32's, BF16's), made once.
    let mut references: Vec<(Precision, SampledMatmulReference)> = Vec::new();
    for entry in entries {
        let p = entry.precision.reference_precision();
        if !references.iter().any(|(q, _)| *q == p) {
            let reference = reference_for(&p.reference_inputs(&a), &p.reference_inputs(&b), shape, check);
            references.push((p, reference));
        }
    }
    drop((a, b));
    let timing = GpuTiming::new(config, mats.len());
    progress.inc(1);

    let mut results = Vec::with_capacity(entries.len());
    for &entry in entries {
        let reference =
            &references.iter().find(|(p, _)| *p == entry.precision.reference_precision()).expect("made above").1;
        let planner = planner_name(entry, config.suite_policy);
        progress.set_message(format!("sweep {shape}: {planner}"));
        let tensor_cores = if entry.needs_tensor_cores() { gpu.hopper_status().err() } else { None };
        let (kernel, ours) = match tensor_cores {
            Some(why) => {
                let status = RowStatus::Skipped { reason: why.to_string() };
                (None, MatmulRow::unmeasured(&planner, MatmulRowKind::Gpu, timing.method.clone(), status, None))
            }
            None => match plan_desc_or_skip(gpu, entry.desc(shape, config.suite_policy)) {
                Ok(plan) => {
                    let row = measure_plan(gpu, &planner, &plan, &mut mats, reference, &timing);
                    let row = failed_on_error(row, &planner, MatmulRowKind::Gpu, &timing, plan.precision());
                    let kernel = plan.kernel_plan().variant().name().to_string();
                    (Some(kernel), row.with_plan(plan.kernel_plan().to_string()))
                }
                Err(skipped) => {
                    (None, MatmulRow::unmeasured(&planner, MatmulRowKind::Gpu, timing.method.clone(), skipped, None))
                }
            },
        };
        // A measured row carries its plan's precision (`auto`'s split-TF32, say); the others the
        // precision they would have run in.
        let ours = if ours.timing.is_some() { ours } else { ours.with_precision(entry.precision) };
        progress.inc(1);

        let (cublaslt, cublas) = match tensor_cores {
            // Without tensor cores there is nothing of ours to compare: the baselines say why.
            Some(why) => {
                let skipped = |name: &str| {
                    let status = RowStatus::Skipped { reason: why.to_string() };
                    let row = MatmulRow::unmeasured(name, MatmulRowKind::CublasLt, timing.method.clone(), status, None);
                    row.with_precision(entry.precision)
                };
                let cublaslt = skipped(cublaslt_name(entry.precision));
                let cublas = entry
                    .cublas
                    .then(|| MatmulRow { kind: MatmulRowKind::Cublas, ..skipped(cublas_name(entry.precision)) });
                (cublaslt, cublas)
            }
            None => {
                let p = entry.precision;
                let cublaslt = measure_cublaslt_in(gpu, sgemm, p, &mut mats, reference, &timing);
                let cublaslt = failed_on_error(cublaslt, cublaslt_name(p), MatmulRowKind::CublasLt, &timing, p);
                let cublas = entry.cublas.then(|| {
                    let row = measure_cublas_in(gpu, sgemm, p, &mut mats, reference, &timing);
                    failed_on_error(row, cublas_name(p), MatmulRowKind::Cublas, &timing, p)
                });
                (cublaslt, cublas)
            }
        };
        progress.inc(1 + u64::from(entry.cublas));
        results.push(SweepShapeResult::new(shape, mats.len(), check, kernel, ours, cublaslt, cublas));
    }
    Ok(results)
}

/// The row, or for an error (a launch that failed, no cuBLASLt algorithm for the shape) a failed
/// row that says what it was: one shape's error is reported among the results, and the run goes
/// on, instead of ending a long sweep without its outputs. An error the context keeps (a kernel
/// that trapped) fails every later row too, each saying so; the first is the cause.
fn failed_on_error(
    row: anyhow::Result<MatmulRow>,
    name: &str,
    kind: MatmulRowKind,
    timing: &GpuTiming,
    precision: Precision,
) -> MatmulRow {
    row.unwrap_or_else(|e| {
        let status = RowStatus::Failed { reason: format!("{e:#}") };
        MatmulRow::unmeasured(name, kind, timing.method.clone(), status, None).with_precision(precision)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_precision_runs_the_descriptors_auto_on_its_operands() {
        let shape = MatmulShape::new(16, 4096, 4096).unwrap();
        let bf16 = SWEEP_PRECISIONS[0].desc(shape, PrecisionPolicy::High);
        assert_eq!(
            (bf16.a.dtype, bf16.b.dtype, bf16.variant),
            (DType::Bf16, DType::Bf16, crate::matmul::MatmulVariant::Auto)
        );
        assert_eq!(SWEEP_PRECISIONS[1].desc(shape, PrecisionPolicy::High).a.dtype, DType::F16);
        // TF32 is auto under medium whatever the run's policy; FP32 follows the run.
        assert_eq!(SWEEP_PRECISIONS[2].desc(shape, PrecisionPolicy::High).policy, PrecisionPolicy::Medium);
        assert_eq!(SWEEP_PRECISIONS[3].desc(shape, PrecisionPolicy::Highest).policy, PrecisionPolicy::Highest);
        assert_eq!(planner_name(&SWEEP_PRECISIONS[0], PrecisionPolicy::High), "auto on bf16 operands");
        assert_eq!(planner_name(&SWEEP_PRECISIONS[2], PrecisionPolicy::High), "auto medium");
    }

    #[test]
    fn the_same_seed_draws_the_same_shapes_and_another_seed_others() {
        let a = draw_shapes(200, 1, MAX_MACS);
        assert_eq!(a.len(), 200);
        assert_eq!(a, draw_shapes(200, 1, MAX_MACS));
        // A shorter run is the start of a longer one.
        assert_eq!(draw_shapes(20, 1, MAX_MACS)[..], a[..20]);
        assert_ne!(a, draw_shapes(200, 2, MAX_MACS));
    }

    #[test]
    fn shapes_are_pinned_by_the_seed_across_machines_and_releases() {
        // ChaCha8's stream is fixed by its definition, and rand 0.9's float sampling by its
        // lock file: these are the shapes of every `--seed 1`, here and on the GPU machine.
        let first: Vec<String> = draw_shapes(3, 1, MAX_MACS).iter().map(|s| s.to_string()).collect();
        assert_eq!(first, PINNED_SEED_1, "the shapes of --seed 1 changed: saved sweeps no longer rerun");
    }

    const PINNED_SEED_1: [&str; 3] = ["49x2x326", "8x15x988", "87x4x4860"];

    #[test]
    fn every_side_is_in_range_and_every_product_within_the_cap() {
        for seed in 0..20 {
            for s in draw_shapes(200, seed, MAX_MACS) {
                for side in [s.m, s.k, s.n] {
                    assert!((1..=MAX_SIDE).contains(&side), "{s}");
                }
                assert!((s.m * s.k * s.n) as u64 <= MAX_MACS, "{s}");
            }
        }
        // A tighter cap holds as well, down to the one shape 1x1x1.
        assert!(draw_shapes(100, 3, 1 << 20).iter().all(|s| s.m * s.k * s.n <= 1 << 20));
        assert!(draw_shapes(5, 3, 1).iter().all(|s| (s.m, s.k, s.n) == (1, 1, 1)));
    }

    #[test]
    fn sides_are_log_uniform_every_octave_equally_likely() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let draws = 140_000;
        let mut octaves = [0usize; 15];
        for _ in 0..draws {
            octaves[draw_side(&mut rng).ilog2() as usize] += 1;
        }
        // [2^i, 2^(i+1)) for i < 14 has probability ln 2 / ln 16385 each; 16384 itself almost none.
        let p = 2f64.ln() / ((MAX_SIDE + 1) as f64).ln();
        let expected = p * draws as f64;
        for (i, &count) in octaves[..14].iter().enumerate() {
            // About 84 standard deviations of a binomial: 5% is over 8 of them.
            assert!((count as f64 - expected).abs() < 0.05 * expected, "octave {i}: {count} of {expected:.0}");
        }
        assert!(octaves[14] < 10, "16384: {}", octaves[14]);
        // Over 200 shapes under the cap, the sides still reach both ends.
        let shapes = draw_shapes(200, 1, MAX_MACS);
        let sides: Vec<usize> = shapes.iter().flat_map(|s| [s.m, s.k, s.n]).collect();
        assert!(sides.contains(&1) && sides.iter().any(|&s| s >= 8192), "{sides:?}");
    }

    #[test]
    fn the_cap_redraws_few_shapes() {
        // Log-uniform sides put log2(m k n) near a sum of three uniforms on [0, 14]: above 35
        // with probability (0.5^3 / 6) = 2.1%, so 200 accepted shapes take about 204 draws.
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let over = (0..10_000)
            .filter(|_| {
                let (m, k, n) = (draw_side(&mut rng), draw_side(&mut rng), draw_side(&mut rng));
                (m * k * n) as u64 > MAX_MACS
            })
            .count();
        assert!((130..300).contains(&over), "{over} of 10000 over the cap");
    }

    fn shape(m: usize, k: usize, n: usize) -> MatmulShape {
        MatmulShape::new(m, k, n).unwrap()
    }

    #[test]
    fn summary_gives_the_worst_shape_and_the_geometric_mean_of_measured_ratios() {
        let ratios = [
            (shape(1, 2, 3), Some(0.5)),
            (shape(4, 5, 6), Some(2.0)),
            (shape(7, 8, 9), None),
            (shape(10, 11, 12), Some(1.0)),
            (shape(13, 14, 15), Some(2.0)),
        ];
        let s = SweepSummary::new("cublaslt bf16", ratios);
        assert_eq!((s.baseline.as_str(), s.measured, s.unmeasured), ("cublaslt bf16", 4, 1));
        // The first of two equal worst ratios.
        let worst = s.worst.unwrap();
        assert_eq!((worst.shape, worst.ratio), (shape(4, 5, 6), 2.0));
        assert!((s.geomean.unwrap() - 2f64.powf(0.25)).abs() < 1e-12, "{:?}", s.geomean);
        let none = SweepSummary::new("cublas", [(shape(1, 1, 1), None), (shape(2, 2, 2), Some(f64::NAN))]);
        assert_eq!((none.measured, none.unmeasured, none.geomean, none.worst), (0, 2, None, None));
    }

    #[test]
    fn an_error_is_a_failed_row_that_says_what_it_was_and_the_sweep_goes_on() {
        let timing = GpuTiming { warmup: 1, repeat: 1, method: "events".into() };
        let err = Err(anyhow::anyhow!("no algorithm").context("running cuBLASLt"));
        let row = failed_on_error(err, "cublaslt bf16", MatmulRowKind::CublasLt, &timing, Precision::Bf16);
        assert_eq!(row.status, RowStatus::Failed { reason: "running cuBLASLt: no algorithm".into() });
        assert_eq!(
            (row.name.as_str(), row.kind, row.precision),
            ("cublaslt bf16", MatmulRowKind::CublasLt, Precision::Bf16)
        );
        assert_eq!(row.timing, None);
    }

    #[test]
    fn shapes_past_the_time_limit_are_unmeasured_rows_that_say_so_and_leave_the_summary() {
        let entries = selected(&[]);
        let reason = time_limit_reason(150.0, 1, 2);
        assert_eq!(reason, "not started: --time-limit of 150 s ran out after 1 of 2 shapes");
        let rows = not_started(shape(6, 2552, 784), &entries, PrecisionPolicy::High, &reason);
        assert_eq!(rows.len(), entries.len());
        for (row, entry) in rows.iter().zip(&entries) {
            assert_eq!(row.kernel, None);
            assert_eq!(row.cublas.is_some(), entry.cublas, "{}", entry.name);
            for r in row.rows() {
                assert_eq!(r.status, RowStatus::Skipped { reason: reason.clone() }, "{}", r.name);
                assert_eq!((r.timing, r.precision), (None, entry.precision), "{}", r.name);
            }
            assert_eq!((row.ours.ratio_to_cublaslt, row.ours.ratio_to_cublas), (None, None));
        }
        // Beside a measured shape, the summary is over the measured one and counts the other.
        let p = summarize(entries[0], "auto on bf16 operands".into(), vec![rows[0].clone()]);
        assert_eq!((p.x_cublaslt.measured, p.x_cublaslt.unmeasured), (0, 1));
    }

    #[test]
    fn every_precision_has_a_reference_and_auto_alone_has_cublas() {
        let names: Vec<&str> = SWEEP_PRECISIONS.iter().map(|e| e.name).collect();
        assert_eq!(names, ["bf16", "fp16", "tf32", "auto"]);
        for e in SWEEP_PRECISIONS {
            assert_eq!(e.cublas, e.precision == Precision::Fp32, "{}", e.name);
            assert_eq!(e.needs_tensor_cores(), e.precision != Precision::Fp32, "{}", e.name);
        }
        assert_eq!(steps_per_shape(), 1 + 2 + 2 + 2 + 3);
        assert_eq!(steps_per_shape_of(&["auto".to_string()]), 1 + 3);
        let names: Vec<&str> = selected(&["tf32".to_string(), "bf16".to_string()]).iter().map(|e| e.name).collect();
        assert_eq!(names, ["bf16", "tf32"]);
    }
}
