//! The benchmark's data model: everything one `host bench` run measured, with the device and the
//! PTX it ran on. It is what `--json` writes and what the table and the chart are rendered from,
//! so a saved report can be rendered again on a machine without a GPU.
//!
//! Derived numbers (GFLOP/s, GB/s, ratios) are stored beside the timings they come from, so that
//! a reader of the JSON needs no code to compare rows; the constructors here are the one place
//! that computes them.

use crate::gpu::DeviceInfo;
use crate::matmul::MatmulShape;
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
    /// The cuBLAS row's median, when it was measured.
    pub fn cublas_ms(&self) -> Option<f64> {
        self.rows.iter().find(|r| r.kind == MatmulRowKind::Cublas).and_then(|r| r.timing).map(|t| t.median_ms)
    }

    /// Sets every measured row's `ratio_to_cublas` (its median over cuBLAS's).
    pub fn fill_ratios(&mut self) {
        let cublas = self.cublas_ms();
        for row in &mut self.rows {
            row.ratio_to_cublas = row.timing.zip(cublas).map(|(t, c)| t.median_ms / c);
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
    /// Largest error relative to `sum |a*b|` on the checked elements.
    pub max_error: Option<f64>,
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
            max_error,
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
            max_error,
        }
    }
}

/// The memory ceiling the histogram is compared with: a device-to-device copy.
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
    /// `shared`, `cluster` or `global`.
    pub tier: String,
    /// The launch plan in words (cluster size, blocks, threads, shared bytes, bins per block).
    pub plan: Option<String>,
    /// Whether it was measured.
    pub status: RowStatus,
    /// CUDA-event timing, ms.
    pub timing: Option<Timing>,
    /// Input read, `4 * values / median`, GB/s.
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
            ],
        };
        result.fill_ratios();
        let ratios: Vec<Option<f64>> = result.rows.iter().map(|r| r.ratio_to_cublas).collect();
        assert_eq!(ratios, vec![Some(8.0), None, Some(1.0)]);
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

    #[test]
    fn from_json_refuses_other_schemas_and_non_reports() {
        assert!(from_json(r#"{"schema": 99}"#).unwrap_err().to_string().contains("schema 99"));
        assert!(from_json(r#"{"rows": []}"#).unwrap_err().to_string().contains("no `schema`"));
        assert!(from_json("not json").is_err());
    }
}
