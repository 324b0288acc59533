// Over 600 lines with its documentation: about 570 lines of code; the rest are doc comments with
// examples and 180 lines of unit tests.
//! The benchmark's data model: everything one `host bench` run measured, with the device and the
//! PTX it ran on. It is what `--json` writes and what the table and the chart are rendered from,
//! so a saved report can be rendered again on a machine without a GPU.
//!
//! Derived numbers (GFLOP/s, GB/s, ratios) are stored beside the timings they come from, so that
//! a reader of the JSON needs no code to compare rows; the constructors here are the one place
//! that computes them.

use crate::gpu::DeviceInfo;
use crate::matmul::Precision;
use crate::matmul::{MatmulShape, MatmulVariant};
use crate::ptx::PtxInfo;
use crate::timing::Timing;
use serde::{Deserialize, Serialize};

/// Version of this layout; bumped when a field changes meaning, so old JSON is refused clearly.
pub const SCHEMA_VERSION: u32 = 1;

/// One benchmark run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchReport {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema: u32,
    /// When the run started, RFC 3339 in UTC.
    pub date: String,
    /// The command line that produced the report.
    pub command_line: Vec<String>,
    /// The GPU.
    pub device: DeviceInfo,
    /// The PTX the kernels came from.
    pub ptx: PtxInfo,
    /// The CPU the CPU rows ran on.
    pub host_cpu: HostCpu,
    /// How everything was measured.
    pub settings: Settings,
    /// Matrix products, absent when skipped.
    pub matmul: Option<MatmulSection>,
    /// Histograms, absent when skipped.
    pub histogram: Option<HistogramSection>,
    /// The shape suite (`auto` against cuBLAS), absent when skipped; reports written before the
    /// suite existed load without it.
    #[serde(default)]
    pub suite: Option<SuiteSection>,
    /// The histogram features (weights, edges, channels, packed counters, 2-D, segments) with
    /// their torch/cupy peers; absent when skipped and in reports written before them.
    #[serde(default)]
    pub features: Option<FeatureSection>,
    /// The random-shape sweep (`--sweep N`), absent when it did not run and in reports written
    /// before it existed.
    #[serde(default)]
    pub sweep: Option<SweepSection>,
}

impl BenchReport {
    /// Rows whose result failed its check, as `section size name: reason`; a run with any of
    /// these must not be mistaken for a good one.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        for shape in self.matmul.iter().flat_map(|m| &m.shapes) {
            for row in &shape.rows {
                if let RowStatus::Failed { reason } = &row.status {
                    out.push(format!("matmul {} {}: {reason}", shape.shape, row.name));
                }
            }
        }
        for bins in self.histogram.iter().flat_map(|h| &h.bins) {
            for row in &bins.rows {
                if let RowStatus::Failed { reason } = &row.status {
                    out.push(format!("histogram {} bins {}: {reason}", bins.bins, row.tier));
                }
            }
        }
        for row in self.features.iter().flat_map(|f| &f.rows) {
            if let RowStatus::Failed { reason } = &row.status {
                out.push(format!("feature {}: {reason}", row.key));
            }
        }
        for shape in self.suite.iter().flat_map(|s| &s.shapes) {
            for row in [&shape.auto, &shape.cublas] {
                if let RowStatus::Failed { reason } = &row.status {
                    out.push(format!("suite {} {}: {reason}", shape.shape, row.name));
                }
            }
        }
        for precision in self.sweep.iter().flat_map(|s| &s.precisions) {
            for shape in &precision.shapes {
                for row in shape.rows() {
                    if let RowStatus::Failed { reason } = &row.status {
                        out.push(format!("sweep {} {} {}: {reason}", precision.name, shape.shape, row.name));
                    }
                }
            }
        }
        out
    }
}

/// The host CPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostCpu {
    /// Model name from `/proc/cpuinfo`, where there is one.
    pub model: Option<String>,
    /// Threads the multithreaded CPU rows used.
    pub threads: usize,
}

/// How the run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Untimed GPU runs before timing.
    pub warmup: usize,
    /// Timed GPU runs (CUDA events, one pair per run); the median is reported.
    pub repeat: usize,
    /// Most timed runs of the multithreaded CPU SGEMM (fewer when one run is slow).
    pub cpu_sgemm_max_runs: usize,
    /// The triple loop runs only while its estimated time stays under this many seconds.
    pub cpu_loop_limit_s: f64,
    /// Above this many multiply-adds (`m * k * n`), results are checked on sampled rows.
    pub full_check_max_macs: f64,
    /// Rows checked when the check is sampled.
    pub sampled_check_rows: usize,
    /// Values per histogram.
    pub histogram_values: usize,
    /// Seed of every random input.
    pub seed: u64,
}

/// Every matrix size measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatmulSection {
    /// One entry per size, in the order asked for.
    pub shapes: Vec<MatmulShapeResult>,
    /// The host's cost of a planned launch beside cuBLAS's; absent in reports written before it
    /// was measured.
    #[serde(default)]
    pub launch_overhead: Option<LaunchOverhead>,
}

/// Host time per call, microseconds: the median, fastest and slowest batch's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerCall {
    /// The median batch's.
    pub median_us: f64,
    /// The fastest batch's.
    pub min_us: f64,
    /// The slowest batch's.
    pub max_us: f64,
}

/// The host's cost of enqueueing one planned GEMM (`GemmPlan::launch`: checks and launches)
/// against one cuBLAS SGEMM call, on the same buffers and stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchOverhead {
    /// The square product's side.
    pub side: usize,
    /// Calls timed per library.
    pub launches: usize,
    /// Calls per timed batch (the stream is drained, untimed, between batches).
    pub batch: usize,
    /// Our plan, in words (which kernels a launch enqueues).
    pub plan: String,
    /// Ours.
    pub ours: PerCall,
    /// cuBLAS's, if it could be loaded.
    pub cublas: Option<PerCall>,
    /// Why cuBLAS's is absent.
    pub cublas_missing: Option<String>,
    /// Our median over cuBLAS's.
    pub ratio: Option<f64>,
}

impl LaunchOverhead {
    /// The measurement of `ours` and `cublas` (or why cuBLAS is missing), with their ratio.
    pub fn new(
        side: usize,
        launches: usize,
        batch: usize,
        plan: String,
        ours: PerCall,
        cublas: Result<PerCall, String>,
    ) -> Self {
        let (cublas, cublas_missing) = match cublas {
            Ok(c) => (Some(c), None),
            Err(why) => (None, Some(why)),
        };
        let ratio = cublas.map(|c| ours.median_us / c.median_us);
        Self { side, launches, batch, plan, ours, cublas, cublas_missing, ratio }
    }
}

/// How results were checked against the float64 reference.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum CheckMethod {
    /// Every element of `C`.
    Full,
    /// Every element of `rows` rows of `C` (first, last, evenly spaced between).
    SampledRows {
        /// Rows checked.
        rows: usize,
    },
}

impl std::fmt::Display for CheckMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Full => write!(f, "every element"),
            Self::SampledRows { rows } => write!(f, "{rows} sampled rows (first, last, evenly spaced)"),
        }
    }
}

/// The ladder at one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatmulShapeResult {
    /// `m x k x n`.
    pub shape: MatmulShape,
    /// `2 * m * k * n`.
    pub flops: f64,
    /// Input sets the GPU rows rotated through (more than one when they fit in L2).
    pub input_sets: usize,
    /// How results were checked.
    pub check: CheckMethod,
    /// Largest error (relative to `sum |a*b|`) a correct row may have.
    pub tolerance: f64,
    /// CPU triple loop, CPU SGEMM, each GPU variant, cuBLAS.
    pub rows: Vec<MatmulRow>,
}

impl MatmulShapeResult {
    /// The FP32 cuBLAS row's median, when it was measured.
    pub fn cublas_ms(&self) -> Option<f64> {
        self.cublas_ms_in(Precision::Fp32)
    }

    /// The median of the cuBLAS row in `precision`, when it was measured.
    pub fn cublas_ms_in(&self, precision: Precision) -> Option<f64> {
        self.median_of(MatmulRowKind::Cublas, precision)
    }

    /// The cuBLASLt row's median in `precision`, if measured.
    pub fn cublaslt_ms_in(&self, precision: Precision) -> Option<f64> {
        self.median_of(MatmulRowKind::CublasLt, precision)
    }

    fn median_of(&self, kind: MatmulRowKind, precision: Precision) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.kind == kind && r.precision == precision)
            .and_then(|r| r.timing)
            .map(|t| t.median_ms)
    }

    /// Sets every measured row's `ratio_to_cublas` (its median over that of the cuBLAS row of
    /// its precision's baseline, [`Precision::baseline`]: FP32 for split-TF32).
    pub fn fill_ratios(&mut self) {
        let baselines: Vec<(Precision, Option<f64>, Option<f64>)> =
            [Precision::Fp32, Precision::Bf16, Precision::Fp16, Precision::Tf32]
                .into_iter()
                .map(|p| (p, self.cublas_ms_in(p), self.cublaslt_ms_in(p)))
                .collect();
        for row in &mut self.rows {
            let (c, lt) = baselines
                .iter()
                .find(|(p, _, _)| *p == row.precision.baseline())
                .map_or((None, None), |(_, c, lt)| (*c, *lt));
            row.ratio_to_cublas = row.timing.zip(c).map(|(t, c)| t.median_ms / c);
            row.ratio_to_cublaslt = row.timing.zip(lt).map(|(t, lt)| t.median_ms / lt);
        }
    }
}

/// Which rung of the ladder a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatmulRowKind {
    /// The Guide's single-threaded triple loop.
    CpuLoop,
    /// A multithreaded, vectorised CPU SGEMM.
    CpuSgemm,
    /// One of our kernels.
    Gpu,
    /// cuBLAS SGEMM in FP32, the baseline.
    Cublas,
    /// cuBLASLt's matmul with its heuristic's best algorithm: the strongest NVIDIA number.
    CublasLt,
}

/// Whether a row has a measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RowStatus {
    /// Checked, then timed.
    Measured,
    /// Not run, on purpose.
    Skipped {
        /// Why (e.g. the estimated time of the triple loop).
        reason: String,
    },
    /// Ran but could not be measured, or its result was wrong.
    Failed {
        /// What went wrong.
        reason: String,
    },
}

/// One rung at one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatmulRow {
    /// `cpu triple loop`, `cpu sgemm`, a variant's name, or `cublas`.
    pub name: String,
    /// Which rung.
    pub kind: MatmulRowKind,
    /// How it was timed, in words (clock, runs, threads).
    pub method: String,
    /// Whether it was measured.
    pub status: RowStatus,
    /// Median, min and max, ms.
    pub timing: Option<Timing>,
    /// `flops / median`.
    pub gflops: Option<f64>,
    /// Median over cuBLAS's median (2.0 = twice as slow).
    pub ratio_to_cublas: Option<f64>,
    /// Median over cuBLASLt's median in the same baseline precision; absent in reports written
    /// before the cuBLASLt rows.
    #[serde(default)]
    pub ratio_to_cublaslt: Option<f64>,
    /// Largest error relative to `sum |a*b|` on the checked elements.
    pub max_error: Option<f64>,
    /// The launch plan in words (kernel, grid, split of `k`, why), for `auto`: which kernel it
    /// ran. Absent for the other rows, and in reports written before plans were recorded.
    #[serde(default)]
    pub plan: Option<String>,
    /// The precision of the row's products; its ratio is to the cuBLAS row of that precision's
    /// baseline. FP32 in reports written before the tensor-core rows.
    #[serde(default = "fp32")]
    pub precision: Precision,
}

fn fp32() -> Precision {
    Precision::Fp32
}

impl MatmulRow {
    /// A checked and timed row; `ratio_to_cublas` is set later by
    /// [`MatmulShapeResult::fill_ratios`].
    pub fn measured(
        name: impl Into<String>,
        kind: MatmulRowKind,
        method: impl Into<String>,
        flops: f64,
        timing: Timing,
        max_error: Option<f64>,
    ) -> Self {
        Self {
            name: name.into(),
            kind,
            method: method.into(),
            status: RowStatus::Measured,
            gflops: Some(flops / (timing.median_ms * 1e6)),
            timing: Some(timing),
            ratio_to_cublas: None,
            ratio_to_cublaslt: None,
            max_error,
            plan: None,
            precision: Precision::Fp32,
        }
    }

    /// A row without a timing: skipped or failed.
    pub fn unmeasured(
        name: impl Into<String>,
        kind: MatmulRowKind,
        method: impl Into<String>,
        status: RowStatus,
        max_error: Option<f64>,
    ) -> Self {
        Self {
            name: name.into(),
            kind,
            method: method.into(),
            status,
            timing: None,
            gflops: None,
            ratio_to_cublas: None,
            ratio_to_cublaslt: None,
            max_error,
            plan: None,
            precision: Precision::Fp32,
        }
    }

    /// The row with its products' `precision` recorded.
    pub fn with_precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// The row with `plan` recorded: what `auto` ran.
    pub fn with_plan(self, plan: impl Into<String>) -> Self {
        Self { plan: Some(plan.into()), ..self }
    }
}

/// The memory ceiling the histogram and memory-bound matmul shapes are compared with: a
/// device-to-device copy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CopyBandwidth {
    /// Bytes copied per run (read once and written once).
    pub bytes: u64,
    /// CUDA-event timing of the copy.
    pub timing: Timing,
    /// `2 * bytes / median` (read + write), GB/s.
    pub gb_per_s: f64,
}

impl CopyBandwidth {
    /// The ceiling from a copy of `bytes` timed as `timing`.
    pub fn new(bytes: u64, timing: Timing) -> Self {
        Self { bytes, timing, gb_per_s: 2.0 * bytes as f64 / (timing.median_ms * 1e6) }
    }
}

/// Every bin count measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramSection {
    /// Values per histogram (`i32`, so `4 * values` bytes read).
    pub values: usize,
    /// How the values were drawn.
    pub distribution: String,
    /// The ceiling, measured in the same run.
    pub copy: CopyBandwidth,
    /// How the CPU histogram was timed, in words.
    pub cpu_method: String,
    /// One entry per bin count, in the order asked for.
    pub bins: Vec<HistogramBinsResult>,
}

/// The tiers at one bin count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramBinsResult {
    /// Bins.
    pub bins: usize,
    /// The exact CPU histogram, wall clock.
    pub cpu: Timing,
    /// `4 * values / cpu median`, GB/s.
    pub cpu_gb_per_s: f64,
    /// One row per GPU tier.
    pub rows: Vec<HistogramRow>,
}

impl HistogramBinsResult {
    /// The CPU measurement at `bins`, with no GPU rows yet.
    pub fn new(bins: usize, values: usize, cpu: Timing) -> Self {
        Self { bins, cpu, cpu_gb_per_s: input_gb_per_s(values, cpu.median_ms), rows: Vec::new() }
    }
}

/// One GPU tier at one bin count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramRow {
    /// `shared`, `packed`, `sorted`, `cluster`, `bucketed` or `global`; or an input under the planner's plan: `zipf`,
    /// `constant` (skewed `i32`), `f32` (over a range), `u8 2^28`.
    pub tier: String,
    /// The launch plan in words (cluster size, blocks, threads, shared bytes, bins per block).
    pub plan: Option<String>,
    /// Whether it was measured.
    pub status: RowStatus,
    /// CUDA-event timing, ms.
    pub timing: Option<Timing>,
    /// Input read, `bytes of input / median`, GB/s.
    pub gb_per_s: Option<f64>,
    /// `gb_per_s` over the copy ceiling's.
    pub fraction_of_copy: Option<f64>,
    /// CPU median over this median (10.0 = ten times faster than the CPU).
    pub speedup_over_cpu: Option<f64>,
    /// Whether the counts equalled the CPU's exactly; absent when it did not run.
    pub exact_match: Option<bool>,
}

impl HistogramRow {
    /// A tier whose counts matched the CPU's and that was then timed.
    pub fn measured(
        tier: impl Into<String>,
        plan: impl Into<String>,
        timing: Timing,
        values: usize,
        copy: &CopyBandwidth,
        cpu: &Timing,
    ) -> Self {
        let gb_per_s = input_gb_per_s(values, timing.median_ms);
        Self {
            tier: tier.into(),
            plan: Some(plan.into()),
            status: RowStatus::Measured,
            timing: Some(timing),
            gb_per_s: Some(gb_per_s),
            fraction_of_copy: Some(gb_per_s / copy.gb_per_s),
            speedup_over_cpu: Some(cpu.median_ms / timing.median_ms),
            exact_match: Some(true),
        }
    }

    /// An input row (a type or a distribution under the planner's plan) that matched the CPU's
    /// counts and was then timed: `bytes` of input read, `cpu_ms` the CPU histogram of that input.
    pub fn measured_input(
        name: impl Into<String>,
        plan: impl Into<String>,
        timing: Timing,
        bytes: u64,
        copy: &CopyBandwidth,
        cpu_ms: f64,
    ) -> Self {
        let gb_per_s = bytes as f64 / (timing.median_ms * 1e6);
        Self {
            tier: name.into(),
            plan: Some(plan.into()),
            status: RowStatus::Measured,
            timing: Some(timing),
            gb_per_s: Some(gb_per_s),
            fraction_of_copy: Some(gb_per_s / copy.gb_per_s),
            speedup_over_cpu: Some(cpu_ms / timing.median_ms),
            exact_match: Some(true),
        }
    }

    /// A tier whose counts differed from the CPU's: not timed.
    pub fn mismatch(tier: impl Into<String>, plan: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            tier: tier.into(),
            plan: Some(plan.into()),
            status: RowStatus::Failed { reason: detail.into() },
            timing: None,
            gb_per_s: None,
            fraction_of_copy: None,
            speedup_over_cpu: None,
            exact_match: Some(false),
        }
    }

    /// A tier that did not run (no plan for this bin count, or a launch error).
    pub fn unmeasured(tier: impl Into<String>, plan: Option<String>, status: RowStatus) -> Self {
        Self {
            tier: tier.into(),
            plan,
            status,
            timing: None,
            gb_per_s: None,
            fraction_of_copy: None,
            speedup_over_cpu: None,
            exact_match: None,
        }
    }
}

/// The histogram features measured in one run, against the copy ceiling, our own related rows
/// (baselines) and torch/cupy peers measured on the same GPU by `scripts/histogram_peers.py`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureSection {
    /// The ceiling, measured in the same run.
    pub copy: CopyBandwidth,
    /// One row per case of [`super::histogram_features::FEATURE_CASES`].
    pub rows: Vec<FeatureRow>,
    /// Where the peers' times came from (the peers file, its device and library versions), if
    /// any were given.
    #[serde(default)]
    pub peers_source: Option<String>,
}

/// One feature case: ours, checked then timed, with what it is compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureRow {
    /// The case's key, shared with the peers script.
    pub key: String,
    /// The feature, e.g. `weights`.
    pub feature: String,
    /// The case in words (type, values, bins).
    pub case: String,
    /// The plan that ran.
    pub plan: Option<String>,
    /// Whether it was measured.
    pub status: RowStatus,
    /// CUDA-event timing of zeroing the output and one launch, ms.
    pub timing: Option<Timing>,
    /// Bytes of input read per run (values, weights, both coordinates).
    pub bytes_read: u64,
    /// `bytes_read / median`, GB/s.
    pub gb_per_s: Option<f64>,
    /// `gb_per_s` over the copy ceiling's.
    pub fraction_of_copy: Option<f64>,
    /// How the result was checked, in words.
    pub check: Option<String>,
    /// Our own row this one is read against (same run), when the goal is a ratio.
    pub baseline: Option<TimedName>,
    /// The goal the issue sets for this case, in words.
    pub target: String,
    /// Peers' times on the same GPU (`--peers`).
    #[serde(default)]
    pub peers: Vec<TimedName>,
}

impl FeatureRow {
    /// A row that did not run or failed its check.
    pub fn unmeasured(
        key: &str,
        feature: &str,
        case: String,
        target: &str,
        plan: Option<String>,
        status: RowStatus,
    ) -> Self {
        Self {
            key: key.into(),
            feature: feature.into(),
            case,
            plan,
            status,
            timing: None,
            bytes_read: 0,
            gb_per_s: None,
            fraction_of_copy: None,
            check: None,
            baseline: None,
            target: target.into(),
            peers: Vec::new(),
        }
    }

    /// A checked and timed row.
    #[allow(clippy::too_many_arguments)]
    pub fn measured(
        key: &str,
        feature: &str,
        case: String,
        target: &str,
        plan: String,
        timing: Timing,
        bytes_read: u64,
        copy: &CopyBandwidth,
        check: String,
    ) -> Self {
        let gb_per_s = bytes_read as f64 / (timing.median_ms * 1e6);
        Self {
            key: key.into(),
            feature: feature.into(),
            case,
            plan: Some(plan),
            status: RowStatus::Measured,
            timing: Some(timing),
            bytes_read,
            gb_per_s: Some(gb_per_s),
            fraction_of_copy: Some(gb_per_s / copy.gb_per_s),
            check: Some(check),
            baseline: None,
            target: target.into(),
            peers: Vec::new(),
        }
    }

    /// The row with `baseline` recorded.
    pub fn with_baseline(self, name: impl Into<String>, ms: f64) -> Self {
        Self { baseline: Some(TimedName { name: name.into(), ms }), ..self }
    }

    /// This row's median over its baseline's.
    pub fn ratio_to_baseline(&self) -> Option<f64> {
        Some(self.timing?.median_ms / self.baseline.as_ref()?.ms)
    }

    /// The fastest peer and how many times our median its time is (below 1: we are faster).
    pub fn against_fastest_peer(&self) -> Option<(&TimedName, f64)> {
        let ours = self.timing?.median_ms;
        let fastest = self.peers.iter().min_by(|a, b| a.ms.total_cmp(&b.ms))?;
        Some((fastest, ours / fastest.ms))
    }
}

/// Something timed, by name: a baseline row or a peer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimedName {
    /// What ran, e.g. `torch.bincount(weights=)`.
    pub name: String,
    /// Its median time, ms.
    pub ms: f64,
}

/// Arithmetic intensity (FLOP per byte of [`MatmulShape::bytes`]) below which a shape counts as
/// memory-bound: the ridge point of an H100-class part in FP32 without tensor cores, where the
/// time to stream the operands equals the time to multiply them (about 50 TFLOP/s, as cuBLAS
/// reaches at 4096^3, over the copy's 3 TB/s is 17; the data sheet's 67 TFLOP/s over
/// 3.35 TB/s is 20). A constant rather than a ratio of this run's measurements, so that a
/// shape's class does not change with noise and a report from another GPU still reads alike.
pub const RIDGE_FLOP_PER_BYTE: f64 = 16.0;

/// FLOPs of `shape` per byte it must move at least (`A` and `B` read once, `C` written once).
pub fn flop_per_byte(shape: MatmulShape) -> f64 {
    shape.flops() / shape.bytes() as f64
}

/// Whether `shape` is memory-bound: its [`flop_per_byte`] under [`RIDGE_FLOP_PER_BYTE`], so that
/// even a kernel at peak arithmetic waits on memory, and its speed is read against the copy.
pub fn is_memory_bound(shape: MatmulShape) -> bool {
    flop_per_byte(shape) < RIDGE_FLOP_PER_BYTE
}

/// The geometric mean of the positive, finite `values`, with how many there were; `None` when
/// there were none. The mean of ratios that treats 2x slower and 2x faster as cancelling out.
pub fn geometric_mean(values: impl IntoIterator<Item = f64>) -> Option<(f64, usize)> {
    let (sum, count) = values
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((0.0, 0usize), |(sum, count), v| (sum + v.ln(), count + 1));
    (count > 0).then(|| ((sum / count as f64).exp(), count))
}

/// The shape suite: `auto` (the planner's choice) against cuBLAS on shapes from large squares to
/// GEMVs, with memory-bound shapes read against the copy ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteSection {
    /// The copy ceiling, measured in the same run (the histogram section's, when both ran).
    pub copy: CopyBandwidth,
    /// [`RIDGE_FLOP_PER_BYTE`] as the run used it.
    pub ridge_flop_per_byte: f64,
    /// One entry per shape, in the order asked for.
    pub shapes: Vec<SuiteShapeResult>,
    /// Geometric mean of `x_cublas` over the shapes where both the planner and cuBLAS were
    /// measured.
    pub geomean_x_cublas: Option<f64>,
    /// Shapes in that mean.
    pub geomean_shapes: usize,
    /// The planner that ran: `auto` under the default policy, `auto highest` or `auto medium`
    /// under another (`auto_fp32` and `auto_tf32x3` in reports from before the policies); reports
    /// written before it was recorded ran `auto`.
    #[serde(default = "auto_planner")]
    pub planner: String,
}

/// The planner of a suite that does not name one.
fn auto_planner() -> String {
    MatmulVariant::Auto.name().to_string()
}

impl SuiteSection {
    /// The section from its shapes: sets each memory-bound shape's `fraction_of_copy` and the
    /// geometric mean of x cuBLAS.
    pub fn new(copy: CopyBandwidth, mut shapes: Vec<SuiteShapeResult>) -> Self {
        for shape in &mut shapes {
            shape.fraction_of_copy = shape.gb_per_s.filter(|_| shape.memory_bound).map(|g| g / copy.gb_per_s);
        }
        let mean = geometric_mean(shapes.iter().filter_map(|s| s.x_cublas));
        Self {
            copy,
            ridge_flop_per_byte: RIDGE_FLOP_PER_BYTE,
            shapes,
            geomean_x_cublas: mean.map(|m| m.0),
            geomean_shapes: mean.map_or(0, |m| m.1),
            planner: auto_planner(),
        }
    }

    /// The section as run by `planner` (`auto` under another policy, `auto highest`) rather
    /// than `auto`.
    pub fn with_planner(mut self, planner: &str) -> Self {
        self.planner = planner.to_string();
        self
    }
}

/// `auto` and cuBLAS at one shape of the suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteShapeResult {
    /// `m x k x n`.
    pub shape: MatmulShape,
    /// `2 * m * k * n`.
    pub flops: f64,
    /// The least traffic of any kernel: `A` and `B` read once, `C` written once.
    pub bytes: u64,
    /// `flops / bytes`.
    pub flop_per_byte: f64,
    /// `flop_per_byte` under the ridge ([`is_memory_bound`]).
    pub memory_bound: bool,
    /// Input sets the timed runs rotated through.
    pub input_sets: usize,
    /// How both results were checked.
    pub check: CheckMethod,
    /// Largest error (relative to `sum |a*b|`) a correct result may have.
    pub tolerance: f64,
    /// The kernel family `auto` ran (`few_cols`, `few_rows`, `sgemm`); absent when the planner
    /// refused the shape.
    pub kernel: Option<String>,
    /// `auto`'s row, with the planner's choice in its `plan`.
    pub auto: MatmulRow,
    /// cuBLAS's row.
    pub cublas: MatmulRow,
    /// `auto`'s median over cuBLAS's (1.10 = 10% slower than cuBLAS).
    pub x_cublas: Option<f64>,
    /// `bytes / auto's median`, GB/s: the rate at which `auto` moves the least traffic.
    pub gb_per_s: Option<f64>,
    /// `gb_per_s` over the copy ceiling's, for memory-bound shapes only (set by
    /// [`SuiteSection::new`]).
    pub fraction_of_copy: Option<f64>,
}

impl SuiteShapeResult {
    /// The result at `shape` from `auto`'s and cuBLAS's rows, with the ratios to cuBLAS and the
    /// rates derived; `fraction_of_copy` waits for the section's copy.
    pub fn new(
        shape: MatmulShape,
        input_sets: usize,
        check: CheckMethod,
        tolerance: f64,
        kernel: Option<String>,
        mut auto: MatmulRow,
        mut cublas: MatmulRow,
    ) -> Self {
        let cublas_ms = cublas.timing.map(|t| t.median_ms);
        for row in [&mut auto, &mut cublas] {
            row.ratio_to_cublas = row.timing.zip(cublas_ms).map(|(t, c)| t.median_ms / c);
        }
        let bytes = shape.bytes();
        Self {
            shape,
            flops: shape.flops(),
            bytes,
            flop_per_byte: flop_per_byte(shape),
            memory_bound: is_memory_bound(shape),
            input_sets,
            check,
            tolerance,
            kernel,
            x_cublas: auto.ratio_to_cublas,
            gb_per_s: auto.timing.map(|t| bytes as f64 / (t.median_ms * 1e6)),
            fraction_of_copy: None,
            auto,
            cublas,
        }
    }
}

/// The shape sweep: shapes drawn from a seed (or listed by `--sweep-shapes`), and for each
/// precision our planner's choice against cuBLASLt (and, for `auto`, cuBLAS FP32) at every shape,
/// with the worst shape and the geometric mean of the ratios.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSection {
    /// The seed the shapes (and their inputs) were drawn from.
    pub seed: u64,
    /// How the shapes were drawn, in words (range, distribution, cap).
    pub draw: String,
    /// The largest side drawn.
    pub max_side: usize,
    /// The cap on `m * k * n` (multiply-adds); shapes above it were drawn again.
    pub max_macs: u64,
    /// The shapes, in the order drawn and measured.
    pub shapes: Vec<MatmulShape>,
    /// One entry per precision, in the order of the sweep's precision table.
    pub precisions: Vec<SweepPrecision>,
}

/// One precision of the sweep: every shape's rows and the summaries against each baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPrecision {
    /// The precision's name in the sweep (`bf16`, `tf32`, `auto`).
    pub name: String,
    /// The precision of the baselines, and of the reference every row is checked against.
    pub precision: Precision,
    /// What ran on our side: a variant, or `auto` (under its policy).
    pub planner: String,
    /// One entry per shape, in the order of [`SweepSection::shapes`].
    pub shapes: Vec<SweepShapeResult>,
    /// Ours against cuBLASLt over every shape where both were measured.
    pub x_cublaslt: SweepSummary,
    /// Ours against cuBLAS, where cuBLAS is a baseline of this precision (`auto`: cuBLAS FP32).
    pub x_cublas: Option<SweepSummary>,
}

/// Our row and the baselines' at one shape of one precision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepShapeResult {
    /// `m x k x n`.
    pub shape: MatmulShape,
    /// Input sets the timed runs rotated through.
    pub input_sets: usize,
    /// How every row was checked.
    pub check: CheckMethod,
    /// The kernel family our side ran (`auto`'s choice); absent when it was not planned.
    pub kernel: Option<String>,
    /// Ours, with `ratio_to_cublaslt` (and `ratio_to_cublas` when cuBLAS is a baseline) set.
    pub ours: MatmulRow,
    /// cuBLASLt's row (heuristic best algorithm).
    pub cublaslt: MatmulRow,
    /// cuBLAS's row, where it is a baseline.
    pub cublas: Option<MatmulRow>,
}

impl SweepShapeResult {
    /// The result from its rows, with our ratios to each measured baseline set.
    pub fn new(
        shape: MatmulShape,
        input_sets: usize,
        check: CheckMethod,
        kernel: Option<String>,
        mut ours: MatmulRow,
        cublaslt: MatmulRow,
        cublas: Option<MatmulRow>,
    ) -> Self {
        let ratio = |base: Option<&MatmulRow>| {
            ours.timing.zip(base.and_then(|b| b.timing)).map(|(o, b)| o.median_ms / b.median_ms)
        };
        (ours.ratio_to_cublaslt, ours.ratio_to_cublas) = (ratio(Some(&cublaslt)), ratio(cublas.as_ref()));
        Self { shape, input_sets, check, kernel, ours, cublaslt, cublas }
    }

    /// Every row: ours, cuBLASLt's, cuBLAS's where it ran.
    pub fn rows(&self) -> impl Iterator<Item = &MatmulRow> {
        [&self.ours, &self.cublaslt].into_iter().chain(&self.cublas)
    }
}

/// Our time over a baseline's across the sweep: the worst shape and the geometric mean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSummary {
    /// The baseline's row name (`cublaslt bf16`, `cublas`).
    pub baseline: String,
    /// Shapes with both rows measured: the ones the worst and the mean are over.
    pub measured: usize,
    /// Shapes left out because a row was skipped or failed its check.
    pub unmeasured: usize,
    /// The geometric mean of the ratios.
    pub geomean: Option<f64>,
    /// The shape with the largest ratio (the first of equals), and that ratio.
    pub worst: Option<SweepWorst>,
}

/// The sweep's worst shape against one baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SweepWorst {
    /// `m x k x n`.
    pub shape: MatmulShape,
    /// Our time over the baseline's there.
    pub ratio: f64,
}

impl SweepSummary {
    /// The summary of `ratios` (one per shape; `None` where a row was not measured) against
    /// `baseline`.
    pub fn new(baseline: &str, ratios: impl IntoIterator<Item = (MatmulShape, Option<f64>)>) -> Self {
        let (mut measured, mut unmeasured) = (Vec::new(), 0);
        for (shape, ratio) in ratios {
            match ratio.filter(|r| r.is_finite() && *r > 0.0) {
                Some(r) => measured.push((shape, r)),
                None => unmeasured += 1,
            }
        }
        let worst = measured.iter().fold(None, |worst: Option<SweepWorst>, &(shape, ratio)| match worst {
            Some(w) if w.ratio >= ratio => Some(w),
            _ => Some(SweepWorst { shape, ratio }),
        });
        Self {
            baseline: baseline.to_string(),
            measured: measured.len(),
            unmeasured,
            geomean: geometric_mean(measured.iter().map(|m| m.1)).map(|m| m.0),
            worst,
        }
    }
}

/// GB/s of reading `values` `i32`s in `ms`.
pub fn input_gb_per_s(values: usize, ms: f64) -> f64 {
    4.0 * values as f64 / (ms * 1e6)
}

/// Reads a report, refusing other schema versions with a message that says which.
pub fn from_json(text: &str) -> anyhow::Result<BenchReport> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    match value.get("schema").and_then(serde_json::Value::as_u64) {
        Some(v) if v == SCHEMA_VERSION as u64 => {}
        Some(v) => anyhow::bail!("benchmark report schema {v}, but this host reads schema {SCHEMA_VERSION}"),
        None => anyhow::bail!("not a benchmark report: no `schema` field"),
    }
    Ok(serde_json::from_value(value)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: f64) -> Timing {
        Timing { median_ms: ms, min_ms: ms * 0.9, max_ms: ms * 1.2, runs: 20, launches_per_sample: 1 }
    }

    #[test]
    fn measured_matmul_row_derives_gflops_from_the_median() {
        let row = MatmulRow::measured("tiled16", MatmulRowKind::Gpu, "events", 2e9, t(0.5), Some(1e-7));
        assert_eq!(row.gflops, Some(4000.0));
        assert_eq!(row.status, RowStatus::Measured);
    }

    #[test]
    fn ratios_to_cublas_are_filled_for_measured_rows_only() {
        let shape = MatmulShape::new(1024, 1024, 1024).unwrap();
        let mut result = MatmulShapeResult {
            shape,
            flops: shape.flops(),
            input_sets: 1,
            check: CheckMethod::Full,
            tolerance: 1e-4,
            rows: vec![
                MatmulRow::measured("naive", MatmulRowKind::Gpu, "", shape.flops(), t(0.4), None),
                MatmulRow::unmeasured(
                    "cpu",
                    MatmulRowKind::CpuLoop,
                    "",
                    RowStatus::Skipped { reason: "x".into() },
                    None,
                ),
                MatmulRow::measured("cublas", MatmulRowKind::Cublas, "", shape.flops(), t(0.05), None),
                MatmulRow::measured("wgmma_tf32x3", MatmulRowKind::Gpu, "", shape.flops(), t(0.025), None)
                    .with_precision(Precision::Tf32x3),
                MatmulRow::measured("wgmma_tf32", MatmulRowKind::Gpu, "", shape.flops(), t(0.01), None)
                    .with_precision(Precision::Tf32),
                MatmulRow::measured("cublaslt", MatmulRowKind::CublasLt, "", shape.flops(), t(0.1), None),
            ],
        };
        result.fill_ratios();
        let ratios: Vec<Option<f64>> = result.rows.iter().map(|r| r.ratio_to_cublas).collect();
        // Split-TF32 against cuBLAS FP32; TF32 has no cuBLAS TF32 row here, so no ratio.
        assert_eq!(ratios, vec![Some(8.0), None, Some(1.0), Some(0.5), None, Some(2.0)]);
        // cuBLASLt's FP32 row is the second baseline of FP32 and split-TF32 rows.
        let lt: Vec<Option<f64>> = result.rows.iter().map(|r| r.ratio_to_cublaslt).collect();
        assert_eq!(lt, vec![Some(4.0), None, Some(0.5), Some(0.25), None, Some(1.0)]);
    }

    #[test]
    fn histogram_row_relates_input_rate_to_copy_ceiling_and_cpu() {
        let copy = CopyBandwidth::new(1 << 30, t(0.727));
        assert!((copy.gb_per_s - 2953.6).abs() < 1.0, "{}", copy.gb_per_s);
        let row = HistogramRow::measured("shared", "plan", t(0.146), 1 << 26, &copy, &t(146.0));
        assert!((row.gb_per_s.unwrap() - 1838.6).abs() < 1.0);
        assert!((row.fraction_of_copy.unwrap() - 0.6225).abs() < 1e-3);
        assert!((row.speedup_over_cpu.unwrap() - 1000.0).abs() < 1e-9);
        assert_eq!(row.exact_match, Some(true));
    }

    fn shape(m: usize, k: usize, n: usize) -> MatmulShape {
        MatmulShape::new(m, k, n).unwrap()
    }

    #[test]
    fn geometric_mean_of_ratios_cancels_faster_against_slower() {
        let (mean, n) = geometric_mean([0.5, 2.0]).unwrap();
        assert!((mean - 1.0).abs() < 1e-12 && n == 2, "{mean}");
        let (mean, n) = geometric_mean([1.0, 4.0, 16.0]).unwrap();
        assert!((mean - 4.0).abs() < 1e-12 && n == 3, "{mean}");
        let (mean, _) = geometric_mean([1.05, 0.97, 0.90, 0.99]).unwrap();
        assert!((mean - (1.05f64 * 0.97 * 0.90 * 0.99).powf(0.25)).abs() < 1e-12);
        // Values a ratio cannot be are left out, and nothing gives no mean.
        assert_eq!(geometric_mean([2.0, 0.0, -1.0, f64::NAN, f64::INFINITY]), Some((2.0, 1)));
        assert_eq!(geometric_mean([]), None);
    }

    #[test]
    fn shapes_under_16_flop_per_byte_are_memory_bound() {
        for s in [
            shape(1, 4096, 65_536),
            shape(65_536, 4096, 1),
            shape(3, 100_000, 5),
            shape(16, 16_384, 16_384),
            shape(64, 8192, 64),
        ] {
            assert!(is_memory_bound(s), "{s}: {} FLOP/byte", flop_per_byte(s));
        }
        for s in [
            shape(4096, 4096, 4096),
            shape(128, 128, 128),
            shape(1000, 800, 1200),
            shape(8192, 64, 8192),
            shape(128, 65_536, 128),
            shape(4097, 129, 8193),
        ] {
            assert!(!is_memory_bound(s), "{s}: {} FLOP/byte", flop_per_byte(s));
        }
        // A GEMV does one multiply-add per float of the matrix: 2 FLOPs per 4 bytes.
        assert!((flop_per_byte(shape(65_536, 4096, 1)) - 0.5).abs() < 1e-3);
        assert!((flop_per_byte(shape(4096, 4096, 4096)) - 4096.0 / 6.0).abs() < 1e-9);
    }

    fn suite_shape(s: MatmulShape, auto_ms: Option<f64>, cublas_ms: f64) -> SuiteShapeResult {
        let auto = match auto_ms {
            Some(ms) => MatmulRow::measured("auto", MatmulRowKind::Gpu, "", s.flops(), t(ms), Some(1e-7)),
            None => MatmulRow::unmeasured(
                "auto",
                MatmulRowKind::Gpu,
                "",
                RowStatus::Failed { reason: "error 1e-2".into() },
                Some(1e-2),
            ),
        };
        let cublas = MatmulRow::measured("cublas", MatmulRowKind::Cublas, "", s.flops(), t(cublas_ms), Some(1e-7));
        SuiteShapeResult::new(s, 1, CheckMethod::Full, 1e-4, Some("sgemm".into()), auto, cublas)
    }

    #[test]
    fn suite_relates_auto_to_cublas_and_memory_bound_shapes_to_the_copy() {
        let copy = CopyBandwidth::new(1 << 30, t(0.727));
        let gemv = shape(1, 4096, 65_536);
        let section = SuiteSection::new(
            copy.clone(),
            vec![
                suite_shape(shape(4096, 4096, 4096), Some(2.793), 2.660),
                suite_shape(gemv, Some(0.405), 0.409),
                suite_shape(shape(1024, 1024, 1024), None, 0.06),
            ],
        );
        let [square, gemv_result, failed] = &section.shapes[..] else { panic!("three shapes") };
        assert!((square.x_cublas.unwrap() - 1.05).abs() < 1e-12);
        assert_eq!(square.auto.ratio_to_cublas, square.x_cublas);
        assert_eq!(square.cublas.ratio_to_cublas, Some(1.0));
        assert_eq!((square.memory_bound, square.fraction_of_copy), (false, None));
        assert!(square.gb_per_s.is_some(), "every measured shape has its GB/s");
        // 1x4096x65536 moves 4 * (4096 + 4096 * 65536 + 65536) bytes in 0.405 ms.
        assert_eq!(gemv_result.bytes, 4 * (4096 + 4096 * 65_536 + 65_536));
        let gb_per_s = gemv_result.bytes as f64 / 0.405e6;
        assert!((gemv_result.gb_per_s.unwrap() - gb_per_s).abs() < 1e-9);
        assert!(gemv_result.memory_bound);
        assert!((gemv_result.fraction_of_copy.unwrap() - gb_per_s / copy.gb_per_s).abs() < 1e-12);
        // A failed auto has no ratio, and stays out of the mean.
        assert_eq!((failed.x_cublas, failed.gb_per_s, failed.fraction_of_copy), (None, None, None));
        assert_eq!(section.geomean_shapes, 2);
        let mean = (1.05f64 * 0.405 / 0.409).sqrt();
        assert!((section.geomean_x_cublas.unwrap() - mean).abs() < 1e-12);
        assert_eq!(section.ridge_flop_per_byte, RIDGE_FLOP_PER_BYTE);
    }

    #[test]
    fn suite_records_its_planner_and_reads_auto_from_reports_that_name_none() {
        let copy = CopyBandwidth::new(1 << 30, t(0.727));
        let shapes = vec![suite_shape(shape(4096, 4096, 4096), Some(1.3), 2.66)];
        let section = SuiteSection::new(copy, shapes);
        assert_eq!(section.planner, "auto");
        let x3 = section.clone().with_planner("auto highest");
        assert_eq!(x3.planner, "auto highest");
        let mut json = serde_json::to_value(&x3).unwrap();
        assert_eq!(serde_json::from_value::<SuiteSection>(json.clone()).unwrap(), x3);
        json.as_object_mut().unwrap().remove("planner");
        assert_eq!(serde_json::from_value::<SuiteSection>(json).unwrap().planner, "auto");
        let table = crate::bench::table::render_suite(&x3);
        assert!(
            table.starts_with("matmul shape suite: auto highest (") && table.contains("auto highest ms"),
            "{table}"
        );
    }

    #[test]
    fn sweep_rows_relate_ours_to_each_baseline_and_survive_json() {
        let sweep = crate::bench::table::tests::sweep_fixture();
        let auto = &sweep.precisions[0];
        let first = &auto.shapes[0];
        assert!((first.ours.ratio_to_cublaslt.unwrap() - 2.2).abs() < 1e-12);
        assert!((first.ours.ratio_to_cublas.unwrap() - 2.0).abs() < 1e-12);
        // A failed baseline gives no ratio.
        assert_eq!(auto.shapes[1].ours.ratio_to_cublas, None);
        assert_eq!(auto.shapes[1].rows().count(), 3);
        let json = serde_json::to_value(&sweep).unwrap();
        assert_eq!(serde_json::from_value::<SweepSection>(json).unwrap(), sweep);
    }

    #[test]
    fn a_report_with_a_sweep_lists_its_failed_rows_and_reads_back_and_older_ones_load_without() {
        let fixture = include_str!("../../tests/fixtures/bench-report.json");
        let mut report = from_json(fixture).unwrap();
        assert_eq!(report.sweep, None, "a report from before the sweep loads without one");
        report.sweep = Some(crate::bench::table::tests::sweep_fixture());
        let failures = report.failures();
        assert!(failures.iter().any(|f| f.starts_with("sweep auto 333x777x555 cublas: error 1e-2")), "{failures:?}");
        let again = from_json(&serde_json::to_string(&report).unwrap()).unwrap();
        assert_eq!(again.sweep, report.sweep);
        assert!(crate::bench::table::render(&again).contains("sweep summary:"));
    }

    #[test]
    fn from_json_refuses_other_schemas_and_non_reports() {
        assert!(from_json(r#"{"schema": 99}"#).unwrap_err().to_string().contains("schema 99"));
        assert!(from_json(r#"{"rows": []}"#).unwrap_err().to_string().contains("no `schema`"));
        assert!(from_json("not json").is_err());
    }
}
