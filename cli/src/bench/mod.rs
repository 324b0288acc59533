//! `host bench`: the whole ladder measured in one process on the user's GPU. Matrix products
//! from the Guide's CPU triple loop through a multithreaded CPU SGEMM and each of our kernels to
//! cuBLAS, across sizes; histograms per tier across bin counts against a CPU histogram and the
//! device's copy bandwidth; and the shape suite, `auto` against cuBLAS from large squares to
//! GEMVs.
//!
//! Measuring ([`run`]) is split from presenting ([`table`], [`chart`]): both presenters take the
//! [`report::BenchReport`] only, so a report saved as JSON renders again without a GPU, and the
//! tests feed them a fixture.

pub mod chart;
pub mod cpu;
pub mod histogram;
pub mod histogram_features;
pub mod histogram_sweep;
pub mod matmul;
pub mod memcopy;
pub mod overhead;
pub mod report;
pub mod shape_sweep;
pub mod suite;
pub mod table;

use crate::gpu::Gpu;
use crate::matmul::{MatmulShape, MatmulVariant, PrecisionPolicy};
use crate::reference::{ValueDistribution, histogram_input};
use crate::timing::Timing;
use anyhow::Context;
use indicatif::ProgressBar;
use report::{BenchReport, CopyBandwidth, HistogramBinsResult, HistogramSection, HostCpu, Settings};

/// Sizes measured by default: squares from 256 to 8192 and the write-up's rectangular shape.
pub const DEFAULT_SIZES: &str = "256,512,1024,2048,4096,8192,1000x800x1200";
/// Sizes of `--quick`.
pub const QUICK_SIZES: &str = "256,1024,1000x800x1200";
/// Shapes of the suite: squares from 128 (latency) to 8192 (throughput), with 3000 and a
/// rectangle off the 128-wide tiles; skewed products (a short k, a long k, an LLM's MLP
/// projection); and the narrow shapes `auto` gives their own kernels: a few columns or rows of
/// `C`, a GEMV each way, and 16 rows of a large product.
pub const SUITE_SHAPES: &str = concat!(
    "128,256,512,1024,2048,3000,4096,8192,1000x800x1200,",
    "4097x129x8193,8192x64x8192,512x4096x11008,64x8192x64,128x65536x128,",
    "3x100000x5,1x4096x65536,65536x4096x1,16x16384x16384",
);
/// Shapes of the suite under `--quick`: one of each kind (a square, a rectangle, a split-K
/// product, a narrow one).
pub const QUICK_SUITE_SHAPES: &str = "256,1000x800x1200,64x8192x64,3x100000x5";
/// Bin counts measured by default: from a histogram that fits one block's shared memory many
/// times over to one that fits no cluster's, with one count in each packed form (16-bit, 8-bit
/// with a carry plane, 6-bit, 4-bit at its one-pass limit) and one between that limit and 2^20.
pub const DEFAULT_BINS: &str = "256,1024,4096,8192,16384,65536,131072,262144,389120,524288,1048576";
/// Bin counts of `--quick`.
pub const QUICK_BINS: &str = "256,8192,131072";
/// Values per histogram: 2^26 `i32`, 256 MiB, well beyond any L2.
pub const DEFAULT_HISTOGRAM_VALUES: usize = 1 << 26;
/// Bytes of the device-to-device copy that sets the bandwidth ceiling: 1 GiB, far beyond L2.
pub const COPY_BYTES: u64 = 1 << 30;
/// Above this many multiply-adds (2048^3) the float64 reference is computed for sampled rows
/// only: the full one would take minutes at 8192.
pub const FULL_CHECK_MAX_MACS: f64 = 2048.0 * 2048.0 * 2048.0;
/// Rows checked when the check is sampled.
pub const SAMPLED_CHECK_ROWS: usize = 64;
/// Timed runs of the CPU histogram per bin count (each reads 256 MiB on one thread).
pub const CPU_HISTOGRAM_RUNS: usize = 3;

/// What to measure and how.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Matmul shapes, in report order.
    pub sizes: Vec<MatmulShape>,
    /// Histogram bin counts, in report order.
    pub bins: Vec<usize>,
    /// Shapes of the suite, in report order.
    pub suite: Vec<MatmulShape>,
    /// The precision policy `auto` runs the suite under.
    pub suite_policy: PrecisionPolicy,
    /// Values per histogram.
    pub histogram_values: usize,
    /// Untimed GPU runs before timing.
    pub warmup: usize,
    /// Timed GPU runs.
    pub repeat: usize,
    /// Most timed runs of the CPU SGEMM.
    pub cpu_sgemm_max_runs: usize,
    /// Seconds the triple loop may be estimated to take at one size.
    pub cpu_loop_limit_s: f64,
    /// Seed of every random input.
    pub seed: u64,
    /// Leave out the matmul section.
    pub skip_matmul: bool,
    /// Leave out the histogram section.
    pub skip_histogram: bool,
    /// Leave out the suite.
    pub skip_suite: bool,
    /// Leave out the histogram features (weights, edges, channels, 2-D, segments).
    pub skip_features: bool,
    /// Shapes of the shape sweep ([`shape_sweep`]), drawn from `seed` unless `sweep_shapes`
    /// lists them; `None`: no sweep.
    pub sweep: Option<usize>,
    /// The sweep's shapes when they are given rather than drawn (`--sweep-shapes`).
    pub sweep_shapes: Option<Vec<MatmulShape>>,
    /// The names of the sweep's precisions to measure (`--sweep-precisions`); empty: all.
    pub sweep_precisions: Vec<String>,
    /// Seconds after which the sweep starts no further shape (`--time-limit`): the shapes left are
    /// reported as not measured, and the tables and files are written as for a whole run.
    pub sweep_time_limit_s: Option<f64>,
    /// The torch/cupy peers' times of the feature cases (`scripts/histogram_peers.py`), and
    /// where they came from.
    pub peers: Option<(histogram_features::PeersFile, String)>,
    /// Recorded in the report.
    pub command_line: Vec<String>,
}

impl BenchConfig {
    /// Progress-bar steps of a run: per size the inputs, two CPU rows, each variant (skipped
    /// ones too) and cuBLAS, then the launch overhead once; the copy, once for the histogram and the suite; per bin count its CPU
    /// histogram and tiers; per suite shape [`suite::STEPS_PER_SHAPE`]; per sweep shape
    /// [`shape_sweep::steps_per_shape`].
    pub fn steps(&self) -> u64 {
        let matmul = if self.skip_matmul { 0 } else { self.sizes.len() * (3 + MatmulVariant::ALL.len() + 2) + 1 };
        let copy = usize::from(self.needs_copy());
        let histogram = if self.skip_histogram { 0 } else { self.bins.len() };
        let features =
            if self.skip_histogram || self.skip_features { 0 } else { histogram_features::FEATURE_CASES.len() };
        let suite = if self.skip_suite { 0 } else { self.suite.len() * suite::STEPS_PER_SHAPE };
        let sweep = self.sweep.map_or(0, |shapes| shapes * shape_sweep::steps_per_shape_of(&self.sweep_precisions));
        (matmul + copy + histogram + features + suite + sweep) as u64
    }

    /// Whether a section that is read against the copy ceiling runs.
    fn needs_copy(&self) -> bool {
        !self.skip_histogram || !self.skip_suite
    }

    /// The settings the report records.
    pub fn settings(&self) -> Settings {
        Settings {
            warmup: self.warmup,
            repeat: self.repeat,
            cpu_sgemm_max_runs: self.cpu_sgemm_max_runs,
            cpu_loop_limit_s: self.cpu_loop_limit_s,
            full_check_max_macs: FULL_CHECK_MAX_MACS,
            sampled_check_rows: SAMPLED_CHECK_ROWS,
            histogram_values: self.histogram_values,
            seed: self.seed,
        }
    }
}

/// What a histogram tier measurement gets for one bin count: the input, the exact answer, and
/// the baselines its row is related to.
pub struct HistogramContext<'a> {
    /// The values (in `0..bins`).
    pub values: &'a [i32],
    /// Bins.
    pub bins: usize,
    /// The CPU's exact counts, which every tier must equal.
    pub cpu_counts: &'a [u32],
    /// The CPU histogram's timing.
    pub cpu: &'a Timing,
    /// The copy-bandwidth ceiling.
    pub copy: &'a CopyBandwidth,
    /// Untimed GPU runs before timing.
    pub warmup: usize,
    /// Timed GPU runs.
    pub repeat: usize,
}

/// Measures everything `config` asks for, advancing `progress` one step at a time.
pub fn run(gpu: &Gpu, config: &BenchConfig, progress: &ProgressBar) -> anyhow::Result<BenchReport> {
    let date = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let matmul = if config.skip_matmul { None } else { Some(matmul::measure(gpu, config, progress)?) };
    // One copy serves the histogram and the suite: both then read against the same ceiling.
    let copy = if config.needs_copy() {
        progress.set_message("device-to-device copy (bandwidth ceiling)");
        let copy = memcopy::measure(gpu, COPY_BYTES, config.warmup, config.repeat)?;
        progress.inc(1);
        Some(copy)
    } else {
        None
    };
    let histogram = match &copy {
        Some(copy) if !config.skip_histogram => Some(measure_histogram(gpu, config, copy, progress)?),
        _ => None,
    };
    let features = match &copy {
        Some(copy) if !config.skip_histogram && !config.skip_features => {
            let peers = config.peers.as_ref().map(|(p, source)| (p, source.clone()));
            let timing = (config.warmup, config.repeat);
            Some(histogram_features::measure(gpu, copy, config.seed, timing, peers, progress)?)
        }
        _ => None,
    };
    let suite = match &copy {
        Some(copy) if !config.skip_suite => Some(suite::measure(gpu, config, copy, progress)?),
        _ => None,
    };
    let sweep = match config.sweep {
        Some(shapes) => Some(shape_sweep::measure(gpu, config, shapes, progress)?),
        None => None,
    };
    Ok(BenchReport {
        schema: report::SCHEMA_VERSION,
        date,
        command_line: config.command_line.clone(),
        device: gpu.info().clone(),
        ptx: gpu.ptx_info().clone(),
        host_cpu: HostCpu { model: cpu::cpu_model(), threads: rayon::current_num_threads() },
        settings: config.settings(),
        matmul,
        histogram,
        suite,
        features,
        sweep,
    })
}

fn measure_histogram(
    gpu: &Gpu,
    config: &BenchConfig,
    copy: &CopyBandwidth,
    progress: &ProgressBar,
) -> anyhow::Result<HistogramSection> {
    let n = config.histogram_values;
    let mut results = Vec::with_capacity(config.bins.len());
    for &bins in &config.bins {
        progress.set_message(format!("histogram, {bins} bins: CPU"));
        crate::histogram::check_bins(bins)?;
        // Uniform in 0..bins, every bin hit about equally: the case the tiers are compared on. A
        // seed of its own per bin count, so the inputs do not depend on what ran before.
        let values = histogram_input(config.seed ^ 0x4849_5354 ^ bins as u64, n, bins, ValueDistribution::Uniform);
        let (cpu_timing, counts) = cpu::time_histogram(&values, bins, CPU_HISTOGRAM_RUNS);
        let mut entry = HistogramBinsResult::new(bins, n, cpu_timing);
        let ctx = HistogramContext {
            values: &values,
            bins,
            cpu_counts: &counts,
            cpu: &cpu_timing,
            copy,
            warmup: config.warmup,
            repeat: config.repeat,
        };
        entry.rows =
            histogram::measure_tiers(gpu, &ctx, progress).with_context(|| format!("histogram with {bins} bins"))?;
        let inputs = histogram::measure_inputs(gpu, &ctx, config.seed ^ bins as u64, &entry.rows, progress)
            .with_context(|| format!("histogram inputs with {bins} bins"))?;
        entry.rows.extend(inputs);
        results.push(entry);
        progress.inc(1);
    }
    Ok(HistogramSection {
        values: n,
        distribution: "uniform in [0, bins); zipf and constant rows: skewed i32 under the planner's plan; f32: over [0, bins); u8: 2^28 values".into(),
        copy: copy.clone(),
        cpu_method: format!("exact CPU histogram, 1 thread, median of {CPU_HISTOGRAM_RUNS} runs, wall clock"),
        bins: results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> BenchConfig {
        BenchConfig {
            sizes: vec![MatmulShape::new(256, 256, 256).unwrap(), MatmulShape::new(1000, 800, 1200).unwrap()],
            bins: vec![256, 8192, 65536],
            suite: vec![MatmulShape::new(64, 8192, 64).unwrap(), MatmulShape::new(1, 4096, 65536).unwrap()],
            suite_policy: PrecisionPolicy::High,
            histogram_values: 1 << 10,
            warmup: 3,
            repeat: 20,
            cpu_sgemm_max_runs: 5,
            cpu_loop_limit_s: 30.0,
            seed: 1,
            skip_matmul: false,
            skip_histogram: false,
            skip_suite: false,
            skip_features: true,
            sweep: None,
            sweep_shapes: None,
            sweep_precisions: Vec::new(),
            sweep_time_limit_s: None,
            peers: None,
            command_line: vec!["host".into(), "bench".into()],
        }
    }

    #[test]
    fn steps_count_every_row_of_the_sections_that_run_and_the_copy_once() {
        let per_size = 3 + MatmulVariant::ALL.len() as u64 + 2;
        // The launch overhead, once after the sizes.
        let matmul = 2 * per_size + 1;
        let (copy, histogram, suite) = (1, 3, 2 * suite::STEPS_PER_SHAPE as u64);
        assert_eq!(config().steps(), matmul + copy + histogram + suite);
        assert_eq!(BenchConfig { skip_suite: true, ..config() }.steps(), matmul + copy + histogram);
        assert_eq!(BenchConfig { skip_histogram: true, ..config() }.steps(), matmul + copy + suite);
        assert_eq!(BenchConfig { skip_histogram: true, skip_suite: true, ..config() }.steps(), matmul);
        assert_eq!(BenchConfig { skip_matmul: true, ..config() }.steps(), copy + histogram + suite);
        let features = histogram_features::FEATURE_CASES.len() as u64;
        assert_eq!(
            BenchConfig { skip_features: false, ..config() }.steps(),
            matmul + copy + histogram + features + suite
        );
        // `--suite`: the copy, then the suite alone.
        let suite_only = BenchConfig { skip_matmul: true, skip_histogram: true, ..config() };
        assert_eq!(suite_only.steps(), copy + suite);
        // `--sweep 5`: the sweep alone, no copy.
        let sweep_only =
            BenchConfig { skip_matmul: true, skip_histogram: true, skip_suite: true, sweep: Some(5), ..config() };
        assert_eq!(sweep_only.steps(), 5 * shape_sweep::steps_per_shape() as u64);
    }

    #[test]
    fn default_and_quick_lists_parse() {
        for text in [DEFAULT_SIZES, QUICK_SIZES, SUITE_SHAPES, QUICK_SUITE_SHAPES] {
            assert!(crate::cli::bench::parse_sizes(text).is_ok(), "{text}");
        }
        for text in [DEFAULT_BINS, QUICK_BINS] {
            assert!(crate::cli::bench::parse_bins(text).is_ok(), "{text}");
        }
        assert_eq!(crate::cli::bench::parse_bins(DEFAULT_BINS).unwrap().0.len(), 11);
        assert_eq!(crate::cli::bench::parse_sizes(SUITE_SHAPES).unwrap().0.len(), 18);
    }

    #[test]
    fn every_suite_shape_is_planned_by_auto_on_an_h100() {
        let shapes = crate::cli::bench::parse_sizes(SUITE_SHAPES).unwrap().0;
        for shape in shapes {
            let plan = crate::matmul::plan(MatmulVariant::Auto, shape, crate::matmul::MatmulDevice::H100);
            assert!(plan.is_ok(), "{shape}: {}", plan.unwrap_err());
        }
    }
}
