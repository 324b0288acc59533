//! `host bench --histogram-sweep`: the launch shapes of the histogram kernels swept on the GPU
//! that runs, in one device call, to pick the tunables there rather than from another GPU's
//! measurements. For each case ([`PLAIN_CASES`], [`FEATURE_SWEEP_CASES`]): every configuration of its grid (threads per
//! block, copies, packing, the sorted tier's waves and bucket bits), each checked against the CPU
//! and timed, with the planner's own choice (occupancy-driven: [`crate::histogram::tuning`])
//! marked, and the case's best and the planner's time as a multiple of the best.
//!
//! Reading it: where the planner's row is within a few percent of the best in every case, the
//! occupancy rule stands; where a fixed shape wins across a family (say 1,024-thread blocks for
//! every `u8` case), that is the constant or rule to change, with these rows as its measurement.

use super::histogram_features::{CaseRun, prepare};
use super::report::{CopyBandwidth, RowStatus};
use crate::gpu::{DeviceInfo, Gpu};
use crate::histogram::tuning::LaunchRequest;
use crate::histogram::{
    self, Binning, DeviceHistogram, HistogramTier, InputType, PlanRequest, binning_for, first_count_difference,
};
use crate::ptx::PtxInfo;
use crate::reference::{ValueDistribution, histogram_input_of};
use crate::timing::{Timing, time_launches};
use indicatif::ProgressBar;
use serde::{Deserialize, Serialize};

/// One case of the sweep: a key, what it measures, and which kernel family.
#[derive(Debug, Clone, Copy)]
pub struct SweepCase {
    /// Key (a feature case's key for the feature kernels).
    pub key: &'static str,
    /// What runs.
    pub what: &'static str,
}

/// The plain histogram's cases (the shared and sorted tiers).
pub const PLAIN_CASES: [SweepCase; 9] = [
    SweepCase { key: "shared-u8-256-2^28", what: "shared tier, u8, 2^28 values, 256 bins" },
    SweepCase { key: "shared-i32-256", what: "shared tier, i32, 2^26 values, 256 bins" },
    SweepCase { key: "shared-f32-256", what: "shared tier, f32 over [0, 256), 2^26 values, 256 bins" },
    SweepCase { key: "shared-f32-16384", what: "shared tier, f32 over [0, 16384), 2^26 values, 16,384 bins" },
    SweepCase { key: "shared-i32-16384", what: "shared tier, i32, 2^26 values, 16,384 bins" },
    SweepCase { key: "sorted-65536", what: "sorted tier, i32 uniform, 2^26 values, 65,536 bins" },
    SweepCase { key: "sorted-65536-zipf", what: "sorted tier, i32 zipf, 2^26 values, 65,536 bins" },
    SweepCase { key: "sorted-2^20", what: "sorted tier, i32 uniform, 2^26 values, 2^20 bins" },
    SweepCase { key: "sorted-2^20-zipf", what: "sorted tier, i32 zipf, 2^26 values, 2^20 bins" },
];

/// The feature kernels' cases (keys of [`super::histogram_features::FEATURE_CASES`]).
pub const FEATURE_SWEEP_CASES: [&str; 10] = [
    "u8-256-2^28",
    "f32-256",
    "packed-65536",
    "packed-65536-zipf",
    "rgba-u8-2^28",
    "weights-i32-256",
    "weights-i32-8192",
    "edges-f32-256",
    "2d-256x256",
    "segments-4096x16384-256",
];

/// The grid of one plain case: plan requests to try.
pub fn plain_grid(key: &str) -> Vec<PlanRequest> {
    let shared = |element: InputType, threads: &[u32], copies: &[u32]| {
        let mut v = Vec::new();
        for &t in threads {
            for &c in copies {
                v.push(PlanRequest {
                    tier: Some(HistogramTier::Shared),
                    threads_per_block: Some(t),
                    copies: Some(c),
                    element: Some(element),
                    ..PlanRequest::default()
                });
            }
        }
        v
    };
    let sorted = || {
        let base =
            PlanRequest { tier: Some(HistogramTier::Sorted), element: Some(InputType::I32), ..PlanRequest::default() };
        let mut v = Vec::new();
        for t in [256, 512, 1024] {
            for waves in [1, 2, 3] {
                v.push(PlanRequest { threads_per_block: Some(t), bins_pass_waves: Some(waves), ..base });
            }
        }
        for bits in [13, 15] {
            v.push(PlanRequest { bucket_shift: Some(bits), ..base });
        }
        v
    };
    match key {
        "shared-u8-256-2^28" => shared(InputType::U8, &[256, 512, 768, 1024], &[8, 16, 32]),
        "shared-i32-256" => shared(InputType::I32, &[256, 512, 768, 1024], &[8, 32]),
        "shared-f32-256" => shared(InputType::F32, &[256, 512, 768, 1024], &[8, 32]),
        "shared-f32-16384" => shared(InputType::F32, &[256, 512, 768, 1024], &[1, 2, 4]),
        "shared-i32-16384" => shared(InputType::I32, &[256, 512, 768, 1024], &[1, 2, 4]),
        _ => sorted(),
    }
}

/// The grid of one feature case: launch requests to try.
pub fn feature_grid(key: &str) -> Vec<LaunchRequest> {
    let grid = |threads: &[u32], copies: &[Option<u32>], packing: &[Option<u32>], global: &[Option<bool>]| {
        let mut v = Vec::new();
        for &t in threads {
            for &c in copies {
                for &p in packing {
                    for &g in global {
                        v.push(LaunchRequest {
                            threads_per_block: Some(t),
                            copies: c,
                            packing: p,
                            global: g,
                            ..LaunchRequest::default()
                        });
                    }
                }
            }
        }
        v
    };
    let all = [256, 512, 768, 1024];
    match key {
        "u8-256-2^28" => grid(&all, &[Some(8), Some(16), Some(32)], &[None], &[None]),
        "f32-256" => grid(&all, &[Some(8), Some(32)], &[None], &[None]),
        "packed-65536" | "packed-65536-zipf" => grid(&all, &[Some(1)], &[Some(1), Some(2)], &[None]),
        "rgba-u8-2^28" => grid(&[256, 512, 1024], &[Some(4), Some(8), Some(16)], &[None], &[None]),
        "weights-i32-256" => grid(&[256, 512, 768], &[Some(4), Some(16), Some(32)], &[None], &[None]),
        "weights-i32-8192" | "weights-i32-8192-f64" => {
            let f64_sums = grid(&[256, 512, 768], &[Some(1), Some(2)], &[None], &[None]);
            let mut v: Vec<LaunchRequest> =
                f64_sums.into_iter().map(|r| LaunchRequest { f32_partials: Some(false), ..r }).collect();
            let f32_partials = grid(&[256, 512, 768, 1024], &[Some(1), Some(2), Some(4)], &[None], &[None]);
            v.extend(f32_partials.into_iter().map(|r| LaunchRequest { f32_partials: Some(true), ..r }));
            v.extend(grid(&[256, 512, 1024], &[None], &[None], &[Some(true)]));
            v
        }
        "edges-f32-256" => grid(&all, &[Some(4), Some(16), Some(32)], &[None], &[None]),
        "2d-256x256" | "2d-256x256-paired-flush" => {
            let g = grid(&all, &[Some(1)], &[Some(1), Some(2)], &[None]);
            [true, false]
                .into_iter()
                .flat_map(|p| g.iter().map(move |r| LaunchRequest { paired_flush: Some(p), ..*r }))
                .collect()
        }
        "segments-4096x16384-256" | "segments-4096x16384-256-single" | "segments-4096x16384-256-warp" => {
            let g = grid(&[256, 512, 1024], &[Some(1), Some(2), Some(4), Some(8), Some(16)], &[None], &[None]);
            let mut v: Vec<LaunchRequest> = [true, false]
                .into_iter()
                .flat_map(|d| g.iter().map(move |r| LaunchRequest { double_buffer: Some(d), ..*r }))
                .collect();
            // The warp-private kernel: copies per warp, no block barriers.
            let warp = grid(&[64, 128, 256, 512, 1024], &[Some(1), Some(2), Some(4)], &[None], &[None]);
            v.extend(warp.into_iter().map(|r| LaunchRequest { warp_private: Some(true), ..r }));
            v
        }
        _ => Vec::new(),
    }
}

/// A plan request in words, the parts it fixes.
fn plan_request_text(r: &PlanRequest) -> String {
    let mut parts = Vec::new();
    if let Some(t) = r.threads_per_block {
        parts.push(format!("threads {t}"));
    }
    if let Some(c) = r.copies {
        parts.push(format!("copies {c}"));
    }
    if let Some(w) = r.bins_pass_waves {
        parts.push(format!("waves {w}"));
    }
    if let Some(b) = r.bucket_shift {
        parts.push(format!("bucket bits {b}"));
    }
    if let Some(b) = r.counter_bits {
        parts.push(format!("{b}-bit counters"));
    }
    if parts.is_empty() { "planner's choice".into() } else { parts.join(", ") }
}

/// A launch request in words, the parts it fixes.
fn launch_request_text(r: &LaunchRequest) -> String {
    let mut parts = Vec::new();
    if let Some(t) = r.threads_per_block {
        parts.push(format!("threads {t}"));
    }
    if let Some(c) = r.copies {
        parts.push(format!("copies {c}"));
    }
    if let Some(p) = r.packing {
        parts.push(format!("packing {p}"));
    }
    if r.global == Some(true) {
        parts.push("global".into());
    }
    match r.f32_partials {
        Some(true) => parts.push("f32 partials".into()),
        Some(false) => parts.push("f64 sums".into()),
        None => {}
    }
    match r.double_buffer {
        Some(true) => parts.push("2 sets".into()),
        Some(false) => parts.push("1 set".into()),
        None => {}
    }
    if r.warp_private == Some(true) {
        parts.push("warp-private".into());
    }
    match r.paired_flush {
        Some(true) => parts.push("paired flush".into()),
        Some(false) => parts.push("flush per counter".into()),
        None => {}
    }
    if parts.is_empty() { "planner's choice".into() } else { parts.join(", ") }
}

/// Everything one sweep measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepReport {
    /// When, RFC 3339.
    pub date: String,
    /// The GPU.
    pub device: DeviceInfo,
    /// The PTX.
    pub ptx: PtxInfo,
    /// The copy ceiling of the same run.
    pub copy: CopyBandwidth,
    /// Timed runs per configuration.
    pub repeat: usize,
    /// One entry per case.
    pub cases: Vec<SweepResult>,
}

/// One case's configurations.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepResult {
    /// The case's key.
    pub key: String,
    /// What it measures.
    pub what: String,
    /// Input bytes per run.
    pub bytes: u64,
    /// The planner's choice first, then the grid.
    pub rows: Vec<SweepRow>,
}

/// One configuration of one case.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepRow {
    /// The configuration the row fixes, in words (`planner's choice` for the first row).
    pub config: String,
    /// The plan that ran.
    pub plan: Option<String>,
    /// Whether it ran.
    pub status: RowStatus,
    /// Its timing.
    pub timing: Option<Timing>,
    /// GB/s of input read.
    pub gb_per_s: Option<f64>,
    /// Fraction of the copy ceiling.
    pub fraction_of_copy: Option<f64>,
}

impl SweepResult {
    /// The fastest measured row.
    pub fn best(&self) -> Option<&SweepRow> {
        self.rows.iter().filter(|r| r.timing.is_some()).min_by(|a, b| {
            a.timing
                .map(|t| t.median_ms)
                .unwrap_or(f64::MAX)
                .total_cmp(&b.timing.map(|t| t.median_ms).unwrap_or(f64::MAX))
        })
    }

    /// The planner's time over the best's (1.0: the planner's choice is the best).
    pub fn planner_over_best(&self) -> Option<f64> {
        Some(self.rows.first()?.timing?.median_ms / self.best()?.timing?.median_ms)
    }
}

fn row(config: String, run: CaseRun, bytes: u64, copy: &CopyBandwidth) -> SweepRow {
    match run {
        CaseRun::Timed(plan, t, _) => {
            let gb = bytes as f64 / (t.median_ms * 1e6);
            SweepRow {
                config,
                plan: Some(plan),
                status: RowStatus::Measured,
                timing: Some(t),
                gb_per_s: Some(gb),
                fraction_of_copy: Some(gb / copy.gb_per_s),
            }
        }
        CaseRun::NoPlan(e) => SweepRow {
            config,
            plan: None,
            status: RowStatus::Skipped { reason: format!("no plan: {e}") },
            timing: None,
            gb_per_s: None,
            fraction_of_copy: None,
        },
        CaseRun::Mismatch(plan, d) => SweepRow {
            config,
            plan: Some(plan),
            status: RowStatus::Failed { reason: format!("{d}: not timed") },
            timing: None,
            gb_per_s: None,
            fraction_of_copy: None,
        },
    }
}

/// Runs the sweep: every case whose key starts with one of `only` (all when empty).
pub fn run(
    gpu: &Gpu,
    copy: CopyBandwidth,
    seed: u64,
    timing: (usize, usize),
    only: &[String],
    progress: &ProgressBar,
) -> anyhow::Result<SweepReport> {
    let wanted = |key: &str| only.is_empty() || only.iter().any(|p| key.starts_with(p.as_str()));
    let mut cases = Vec::new();
    for case in PLAIN_CASES.iter().filter(|c| wanted(c.key)) {
        progress.set_message(format!("sweep: {}", case.key));
        cases.push(plain_case(gpu, &copy, case, seed, timing, progress)?);
    }
    for key in FEATURE_SWEEP_CASES.iter().filter(|k| wanted(k)) {
        progress.set_message(format!("sweep: {key}"));
        let prepared = prepare(gpu, key, seed)?;
        let what = super::histogram_features::FEATURE_CASES
            .iter()
            .find(|c| c.key == *key)
            .map_or(String::new(), |c| c.case.to_string());
        let mut rows = vec![row(
            "planner's choice".into(),
            prepared.run(&LaunchRequest::default(), timing)?,
            prepared.bytes,
            &copy,
        )];
        for request in feature_grid(key) {
            rows.push(row(launch_request_text(&request), prepared.run(&request, timing)?, prepared.bytes, &copy));
            progress.tick();
        }
        cases.push(SweepResult { key: key.to_string(), what, bytes: prepared.bytes, rows });
        progress.inc(1);
    }
    Ok(SweepReport {
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        device: gpu.info().clone(),
        ptx: gpu.ptx_info().clone(),
        copy,
        repeat: timing.1,
        cases,
    })
}

/// Steps of the progress bar: one per case.
pub fn steps(only: &[String]) -> u64 {
    let wanted = |key: &str| only.is_empty() || only.iter().any(|p| key.starts_with(p.as_str()));
    (PLAIN_CASES.iter().filter(|c| wanted(c.key)).count() + FEATURE_SWEEP_CASES.iter().filter(|k| wanted(k)).count())
        as u64
}

fn plain_case(
    gpu: &Gpu,
    copy: &CopyBandwidth,
    case: &SweepCase,
    seed: u64,
    timing: (usize, usize),
    progress: &ProgressBar,
) -> anyhow::Result<SweepResult> {
    let (element, n, bins, dist) = match case.key {
        "shared-u8-256-2^28" => (InputType::U8, 1usize << 28, 256usize, ValueDistribution::Uniform),
        "shared-i32-256" => (InputType::I32, 1 << 26, 256, ValueDistribution::Uniform),
        "shared-f32-256" => (InputType::F32, 1 << 26, 256, ValueDistribution::Uniform),
        "shared-f32-16384" => (InputType::F32, 1 << 26, 16_384, ValueDistribution::Uniform),
        "shared-i32-16384" => (InputType::I32, 1 << 26, 16_384, ValueDistribution::Uniform),
        "sorted-65536" => (InputType::I32, 1 << 26, 65_536, ValueDistribution::Uniform),
        "sorted-65536-zipf" => (InputType::I32, 1 << 26, 65_536, ValueDistribution::Zipf),
        "sorted-2^20" => (InputType::I32, 1 << 26, 1 << 20, ValueDistribution::Uniform),
        _ => (InputType::I32, 1 << 26, 1 << 20, ValueDistribution::Zipf),
    };
    let range = (element == InputType::F32).then_some((0.0, bins as f32));
    let values = histogram_input_of(seed ^ bins as u64, n, bins, dist, element, range);
    let binning: Binning = binning_for(element, bins, range)?;
    let want = histogram::histogram_cpu_of(values.as_values(), &binning);
    let mut h = DeviceHistogram::upload_values(gpu, values.as_values(), binning)?;
    let bytes = values.as_values().bytes().len() as u64;
    drop(values);
    let mut measure = |request: PlanRequest| -> anyhow::Result<CaseRun> {
        let plan = match histogram::plan_with(gpu, bins, request) {
            Ok(p) => p,
            Err(e) => return Ok(CaseRun::NoPlan(e)),
        };
        let got = histogram::run(gpu, &plan, &mut h)?;
        if let Some(d) = first_count_difference(&got, &want) {
            return Ok(CaseRun::Mismatch(plan.to_string(), d));
        }
        let t = time_launches(gpu, timing.0, timing.1, |_| histogram::launch(gpu, &plan, &mut h))?;
        Ok(CaseRun::Timed(plan.to_string(), t, "exact".into()))
    };
    let default = PlanRequest { element: Some(element), ..PlanRequest::default() };
    let mut rows = vec![row("planner's choice".into(), measure(default)?, bytes, copy)];
    for request in plain_grid(case.key) {
        rows.push(row(plan_request_text(&request), measure(request)?, bytes, copy));
        progress.tick();
    }
    progress.inc(1);
    Ok(SweepResult { key: case.key.into(), what: case.what.into(), bytes, rows })
}

/// The sweep as text: per case its rows, the best marked, and a summary of planner against best.
pub fn render(report: &SweepReport) -> String {
    let mut out = format!(
        "host bench --histogram-sweep, {}\ndevice: {} ({} SMs); PTX {} ({} build); copy ceiling {:.0} GB/s (read + write); {} timed runs per row\n",
        report.date,
        report.device.name,
        report.device.sm_count,
        report.ptx.arch,
        report.ptx.profile,
        report.copy.gb_per_s,
        report.repeat
    );
    let mut summary = Vec::new();
    for case in &report.cases {
        out += &format!("\n{} ({}): {}\n", case.key, crate::error::format_bytes(case.bytes), case.what);
        let best = case.best().map(|b| b.config.clone());
        for r in &case.rows {
            let mark = if Some(&r.config) == best.as_ref() { "  <- best" } else { "" };
            match (&r.status, r.timing) {
                (RowStatus::Measured, Some(t)) => {
                    out += &format!(
                        "  {:<34} {:>8.4} ms  {:>6.0} GB/s  {:>5.1}% of copy  {}{mark}\n",
                        r.config,
                        t.median_ms,
                        r.gb_per_s.unwrap_or(0.0),
                        100.0 * r.fraction_of_copy.unwrap_or(0.0),
                        r.plan.as_deref().unwrap_or("")
                    )
                }
                (RowStatus::Skipped { reason } | RowStatus::Failed { reason }, _) => {
                    out += &format!("  {:<34} {reason}\n", r.config)
                }
                _ => {}
            }
        }
        if let (Some(b), Some(ratio)) = (case.best(), case.planner_over_best()) {
            summary.push(format!(
                "  {:<26} planner {:.3}x the best ({}, {:.1}% of copy)",
                case.key,
                ratio,
                b.config,
                100.0 * b.fraction_of_copy.unwrap_or(0.0)
            ));
        }
    }
    out += "\nsummary: the planner's choice against the best configuration of each case\n";
    out += &summary.join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grid_is_a_request_its_planner_takes_on_an_h100_or_says_why() {
        let h100 = crate::histogram::HistogramLimits::H100;
        for case in PLAIN_CASES {
            let grid = plain_grid(case.key);
            assert!(!grid.is_empty(), "{}", case.key);
            let bins = match case.key {
                k if k.ends_with("16384") => 16_384,
                k if k.contains("65536") => 65_536,
                k if k.contains("2^20") => 1 << 20,
                _ => 256,
            };
            for r in grid {
                // Every request is well formed; shapes past one block are the device's to refuse.
                if let Err(e) = histogram::plan_for(&h100, bins, r) {
                    assert!(e.to_string().contains("copies of"), "{}: {e}", case.key);
                }
            }
        }
        for key in FEATURE_SWEEP_CASES {
            let grid = feature_grid(key);
            assert!(!grid.is_empty(), "{key}");
            assert!(grid.iter().all(|r| r.check().is_ok()), "{key}");
            assert!(super::super::histogram_features::FEATURE_CASES.iter().any(|c| c.key == key), "{key}");
        }
        assert_eq!(steps(&[]), (PLAIN_CASES.len() + FEATURE_SWEEP_CASES.len()) as u64);
        assert_eq!(steps(&["sorted".into()]), 4);
    }

    #[test]
    fn requests_read_as_the_parts_they_fix() {
        let r = PlanRequest { threads_per_block: Some(512), bins_pass_waves: Some(2), ..PlanRequest::default() };
        assert_eq!(plan_request_text(&r), "threads 512, waves 2");
        assert_eq!(plan_request_text(&PlanRequest::default()), "planner's choice");
        let l = LaunchRequest { copies: Some(4), global: Some(true), ..LaunchRequest::default() };
        assert_eq!(launch_request_text(&l), "copies 4, global");
        let w = LaunchRequest { threads_per_block: Some(256), warp_private: Some(true), ..LaunchRequest::default() };
        assert_eq!(launch_request_text(&w), "threads 256, warp-private");
    }
}
