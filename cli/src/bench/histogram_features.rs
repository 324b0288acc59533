// Over 600 lines with its documentation: about 510 lines of code; the rest are doc comments with
// examples and 50 lines of unit tests.
//! The histogram features in `host bench`: one row per case of [`FEATURE_CASES`] (weights, bin
//! edges, channels, packed counters, 2-D pairs, segments, and the pipelined one-channel kernel),
//! each checked against its CPU reference before it is timed, read as GB/s of input and a fraction
//! of the copy ceiling, against our own related row in the same run where the issue's goal is a
//! ratio, and against torch/cupy peers timed on the same GPU by `scripts/histogram_peers.py`
//! (`--peers`): the keys of [`FEATURE_CASES`] are that script's.

use super::report::{CopyBandwidth, FeatureRow, FeatureSection, RowStatus, TimedName};
use crate::gpu::Gpu;
use crate::histogram::channels::{self, ChannelLayout};
use crate::histogram::device_values::DeviceValues;
use crate::histogram::edges::{self, BinEdges, DeviceEdges};
use crate::histogram::hist2d::{self, Bins2d};
use crate::histogram::segmented::{self, DeviceSegments, Segments};
use crate::histogram::tuning::LaunchRequest;
use crate::histogram::weighted;
use crate::histogram::{
    self, Binning, DeviceHistogram, InputType, PlanRequest, Values, ValuesBuf, binning_for, first_count_difference,
};
use crate::reference::{ValueDistribution, histogram_input_of};
use crate::timing::{Timing, time_launches};
use anyhow::Context;
use cudarc::driver::CudaSlice;
use indicatif::ProgressBar;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// One measured case: its key (shared with the peers script), feature, description and goal.
#[derive(Debug, Clone, Copy)]
pub struct FeatureCase {
    /// Key of the case in the peers file.
    pub key: &'static str,
    /// The feature.
    pub feature: &'static str,
    /// What runs, in words.
    pub case: &'static str,
    /// The issue's goal for it.
    pub target: &'static str,
}

/// Every case the bench measures, in report order.
pub const FEATURE_CASES: [FeatureCase; 18] = [
    FeatureCase {
        key: "u8-256-2^28",
        feature: "one channel",
        case: "u8, 2^28 values, 256 bins: the pipelined channels kernel (baseline: the planner's shared tier)",
        target: ">= 90% of the copy; faster than torch/cupy",
    },
    FeatureCase {
        key: "i32-256",
        feature: "one channel",
        case: "i32, 2^26 values, 256 bins: the pipelined channels kernel (baseline: the planner's shared tier)",
        target: "at or below the baseline",
    },
    FeatureCase {
        key: "f32-256",
        feature: "one channel",
        case: "f32 over [0, 256), 2^26 values, 256 bins: pipelined (baseline: i32 through the same kernel)",
        target: "<= 1.05x i32",
    },
    FeatureCase {
        key: "f32-16384",
        feature: "one channel",
        case: "f32 over [0, 16384), 2^26 values, 16,384 bins: pipelined (baseline: i32 through the same kernel)",
        target: "<= 1.05x i32",
    },
    FeatureCase {
        key: "packed-65536",
        feature: "packed counters",
        case: "i32 uniform, 2^26 values, 65,536 bins in 16-bit digits (baseline: the planner's choice, which is the packed tier)",
        target: ">= 40% of the copy",
    },
    FeatureCase {
        key: "packed-65536-zipf",
        feature: "packed counters",
        case: "i32 zipf, 2^26 values, 65,536 bins in 16-bit digits (baseline: the planner's choice, which is the packed tier)",
        target: ">= 40% of the copy",
    },
    FeatureCase {
        key: "packed-131072",
        feature: "packed counters",
        case: "i32 uniform, 2^26 values, 131,072 bins in plain 8-bit digits through the channels kernel (baseline: the planner's choice, the packed tier with a carry plane and warp-aggregated adds)",
        target: ">= 40% of the copy",
    },
    FeatureCase {
        key: "weights-i32-256",
        feature: "weights",
        case: "i32 + f32 weights, 2^26 values, 256 bins, f64 sums (baseline: the same values unweighted)",
        target: ">= 80% of the copy (values and weights read)",
    },
    FeatureCase {
        key: "weights-i32-8192",
        feature: "weights",
        case: "i32 + f32 weights, 2^26 values, 8,192 bins, the planner's f32 partials into f64 sums (baseline: the same values unweighted)",
        target: ">= 80% of the copy (values and weights read)",
    },
    FeatureCase {
        key: "weights-i32-8192-f64",
        feature: "weights",
        case: "i32 + f32 weights, 2^26 values, 8,192 bins, f64 sums forced (the f32 partials' predecessor; baseline: the same values unweighted)",
        target: "for comparison with weights-i32-8192",
    },
    FeatureCase {
        key: "weights-u8-256-2^28",
        feature: "weights",
        case: "u8 + f32 weights, 2^28 values, 256 bins, f64 sums (baseline: the same values unweighted)",
        target: ">= 80% of the copy (values and weights read)",
    },
    FeatureCase {
        key: "rgba-u8-2^28",
        feature: "channels",
        case: "RGBA u8 pixels, 2^28 bytes, 4 x 256 bins (baseline: the same bytes as one channel, planner)",
        target: ">= 85% of the copy",
    },
    FeatureCase {
        key: "edges-f32-256",
        feature: "edges",
        case: "f32, 2^26 values, 257 uneven edges (baseline: 256 even f32 bins, planner)",
        target: "<= 1.5x the even bins",
    },
    FeatureCase {
        key: "2d-256x256",
        feature: "2-D",
        case: "f32 pairs, 2^26 of them, 256 x 256 bins over [-1, 1]^2",
        target: ">= 70% of the copy",
    },
    FeatureCase {
        key: "2d-256x256-paired-flush",
        feature: "2-D",
        case: "f32 pairs, 2^26 of them, 256 x 256 bins over [-1, 1]^2, two counters per global atomic at the flush forced (no faster than the planner's one per counter on the H200)",
        target: "for comparison with 2d-256x256",
    },
    FeatureCase {
        key: "segments-4096x16384-256",
        feature: "segments",
        case: "i32, 4,096 segments of 16,384 values, 256 bins each (baseline: one histogram of all values, planner)",
        target: ">= 70% of the copy",
    },
    FeatureCase {
        key: "segments-4096x16384-256-single",
        feature: "segments",
        case: "i32, 4,096 segments of 16,384 values, 256 bins each, one set of counters forced (two barriers per piece: the double buffer's predecessor; baseline: one histogram of all values, planner)",
        target: "for comparison with segments-4096x16384-256",
    },
    FeatureCase {
        key: "segments-4096x16384-256-warp",
        feature: "segments",
        case: "i32, 4,096 segments of 16,384 values, 256 bins each, warp-private counters forced (no block barriers; baseline: one histogram of all values, planner)",
        target: "for comparison with segments-4096x16384-256",
    },
];

/// Values of the 2^26-value cases.
pub const FEATURE_VALUES: usize = 1 << 26;

/// The peers' times `scripts/histogram_peers.py` wrote: per case key, each peer's median.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PeersFile {
    /// The GPU the peers ran on.
    pub device: String,
    /// Library versions (`torch`, `cupy`, CUDA).
    #[serde(default)]
    pub versions: BTreeMap<String, String>,
    /// Per case key, the peers' medians.
    pub cases: BTreeMap<String, Vec<TimedName>>,
}

impl PeersFile {
    /// Reads a peers file.
    pub fn read(path: &std::path::Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{}: not a peers file of scripts/histogram_peers.py", path.display()))
    }

    /// Where these times came from, in words.
    pub fn source(&self, path: &str) -> String {
        let versions: Vec<String> = self.versions.iter().map(|(k, v)| format!("{k} {v}")).collect();
        format!("{path}: {} ({})", self.device, versions.join(", "))
    }
}

/// Attaches `peers`' times to the rows of `section` by key, replacing any.
pub fn attach_peers(section: &mut FeatureSection, peers: &PeersFile, source: String) {
    for row in &mut section.rows {
        row.peers = peers.cases.get(&row.key).cloned().unwrap_or_default();
    }
    section.peers_source = Some(source);
}

/// How a run of a case under some request came out.
pub enum CaseRun {
    /// Checked, then timed: the plan in words, the timing and how it was checked.
    Timed(String, Timing, String),
    /// No plan for this request on this device.
    NoPlan(crate::Error),
    /// The result differed from the CPU's: the plan and the difference (not timed).
    Mismatch(String, String),
}

/// Runs a case under a launch request with `(warmup, repeat)`.
type RunCase<'a> = Box<dyn Fn(&LaunchRequest, (usize, usize)) -> anyhow::Result<CaseRun> + 'a>;

/// Times a case's baseline with `(warmup, repeat)`: its name and median.
type RunBaseline<'a> = Box<dyn Fn((usize, usize)) -> anyhow::Result<(String, f64)> + 'a>;

/// A case's inputs on the device and its CPU reference, ready to run under any launch request:
/// what the bench runs once with the default request and the sweep with many.
pub struct PreparedCase<'a> {
    /// Bytes of input one run reads.
    pub bytes: u64,
    run: RunCase<'a>,
    baseline: Option<RunBaseline<'a>>,
}

impl PreparedCase<'_> {
    /// Plans under `request`, runs once and checks, then times with `(warmup, repeat)`.
    pub fn run(&self, request: &LaunchRequest, timing: (usize, usize)) -> anyhow::Result<CaseRun> {
        (self.run)(request, timing)
    }

    /// Times the case's baseline (our own related row), if it has one: its name and median.
    pub fn baseline(&self, timing: (usize, usize)) -> anyhow::Result<Option<(String, f64)>> {
        self.baseline.as_ref().map(|b| b(timing)).transpose()
    }
}

/// Runs `launch(out)` once, checks `out` with `check`, then times `launch` (each run zeroes its
/// output itself).
fn check_then_time<O>(
    gpu: &Gpu,
    (warmup, repeat): (usize, usize),
    plan: String,
    out: &mut O,
    launch: impl Fn(&mut O) -> crate::Result<()>,
    check: impl FnOnce(&O) -> anyhow::Result<Result<String, String>>,
) -> anyhow::Result<CaseRun> {
    launch(out)?;
    gpu.synchronize()?;
    Ok(match check(out)? {
        Err(difference) => CaseRun::Mismatch(plan, difference),
        Ok(note) => CaseRun::Timed(plan, time_launches(gpu, warmup, repeat, |_| launch(out))?, note),
    })
}

/// The planner's plain histogram of `values`: its plan in words and median.
fn planner_ms(
    gpu: &Gpu,
    values: Values<'_>,
    binning: Binning,
    timing: (usize, usize),
) -> anyhow::Result<(String, f64)> {
    let request = PlanRequest { element: Some(values.element()), ..PlanRequest::default() };
    let plan = histogram::plan_with(gpu, binning.nbins as usize, request)?;
    let mut h = DeviceHistogram::upload_values(gpu, values, binning)?;
    let t = time_launches(gpu, timing.0, timing.1, |_| histogram::launch(gpu, &plan, &mut h))?;
    Ok((plan.to_string(), t.median_ms))
}

/// `values` on the device.
fn upload(gpu: &Gpu, values: Values<'_>) -> crate::Result<CudaSlice<u8>> {
    if values.is_empty() { gpu.zeros(16) } else { gpu.upload(values.bytes()) }
}

/// Exact comparison of counts, as a check's answer.
fn exact(got: &[u32], want: &[u32]) -> Result<String, String> {
    match first_count_difference(got, want) {
        None => Ok("exact".to_string()),
        Some(d) => Err(d),
    }
}

/// Measures every case under the default request; a case with no plan on this device is a
/// skipped row that says why, one whose result is wrong a failed row that is not timed.
pub fn measure(
    gpu: &Gpu,
    copy: &CopyBandwidth,
    seed: u64,
    timing: (usize, usize),
    peers: Option<(&PeersFile, String)>,
    progress: &ProgressBar,
) -> anyhow::Result<FeatureSection> {
    let mut rows = Vec::new();
    for case in FEATURE_CASES {
        progress.set_message(format!("histogram features: {}", case.key));
        let prepared = prepare(gpu, case.key, seed).with_context(|| format!("preparing feature case {}", case.key))?;
        let run =
            prepared.run(&LaunchRequest::default(), timing).with_context(|| format!("feature case {}", case.key))?;
        let row = match run {
            CaseRun::Timed(plan, t, note) => {
                let row = FeatureRow::measured(
                    case.key,
                    case.feature,
                    case.case.into(),
                    case.target,
                    plan,
                    t,
                    prepared.bytes,
                    copy,
                    note,
                );
                match prepared.baseline(timing)? {
                    Some((name, ms)) => row.with_baseline(name, ms),
                    None => row,
                }
            }
            CaseRun::NoPlan(e) => FeatureRow::unmeasured(
                case.key,
                case.feature,
                case.case.into(),
                case.target,
                None,
                RowStatus::Skipped { reason: format!("no plan: {e}") },
            ),
            CaseRun::Mismatch(plan, d) => FeatureRow::unmeasured(
                case.key,
                case.feature,
                case.case.into(),
                case.target,
                Some(plan),
                RowStatus::Failed { reason: format!("{d}: not timed") },
            ),
        };
        rows.push(row);
        progress.inc(1);
    }
    let mut section = FeatureSection { copy: copy.clone(), rows, peers_source: None };
    if let Some((peers, source)) = peers {
        attach_peers(&mut section, peers, source);
    }
    Ok(section)
}

/// The values of a one-channel case: `n` values of `element` for `bins` bins (f32 over
/// `[0, bins)`).
fn draw(seed: u64, n: usize, bins: usize, dist: ValueDistribution, element: InputType) -> ValuesBuf {
    let range = (element == InputType::F32).then_some((0.0, bins as f32));
    histogram_input_of(seed, n, bins, dist, element, range)
}

/// Uneven edges over `[0, 256]`: 255 random interior edges.
fn uneven_edges(seed: u64) -> BinEdges {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut interior: Vec<f32> = (0..255).map(|_| rng.random_range(0.001f32..255.999)).collect();
    interior.sort_by(f32::total_cmp);
    interior.dedup();
    let mut e = vec![0.0];
    e.extend(interior);
    e.push(256.0);
    BinEdges::new(e).expect("sorted and finite")
}

/// Draws the inputs of case `key`, uploads them and computes the CPU reference.
pub fn prepare<'a>(gpu: &'a Gpu, key: &str, seed: u64) -> anyhow::Result<PreparedCase<'a>> {
    let seed = seed ^ key.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(b as u64));
    let stream = gpu.stream();
    Ok(match key {
        "u8-256-2^28" | "i32-256" | "f32-256" | "f32-16384" | "packed-65536" | "packed-65536-zipf"
        | "packed-131072" => {
            let (element, n, bins, dist, packing) = match key {
                "u8-256-2^28" => (InputType::U8, 1 << 28, 256, ValueDistribution::Uniform, None),
                "i32-256" => (InputType::I32, FEATURE_VALUES, 256, ValueDistribution::Uniform, None),
                "f32-256" => (InputType::F32, FEATURE_VALUES, 256, ValueDistribution::Uniform, None),
                "f32-16384" => (InputType::F32, FEATURE_VALUES, 16_384, ValueDistribution::Uniform, None),
                "packed-65536" => (InputType::I32, FEATURE_VALUES, 65_536, ValueDistribution::Uniform, Some(1)),
                "packed-65536-zipf" => (InputType::I32, FEATURE_VALUES, 65_536, ValueDistribution::Zipf, Some(1)),
                _ => (InputType::I32, FEATURE_VALUES, 131_072, ValueDistribution::Uniform, Some(2)),
            };
            let values = draw(seed, n, bins, dist, element);
            let binning = binning_for(element, bins, (element == InputType::F32).then_some((0.0, bins as f32)))?;
            let want = histogram::histogram_cpu_of(values.as_values(), &binning);
            let input = upload(gpu, values.as_values())?;
            let bytes = values.as_values().bytes().len() as u64;
            let run = move |request: &LaunchRequest, timing: (usize, usize)| -> anyhow::Result<CaseRun> {
                let request = LaunchRequest { packing: request.packing.or(packing), ..*request };
                let plan = match channels::plan_channels(gpu, element, binning, ChannelLayout::ONE, &request) {
                    Ok(p) => p,
                    Err(e) => return Ok(CaseRun::NoPlan(e)),
                };
                let mut counts = gpu.zeros::<u32>(bins)?;
                check_then_time(
                    gpu,
                    timing,
                    plan.to_string(),
                    &mut counts,
                    |c| {
                        stream.memset_zeros(c)?;
                        let dv = DeviceValues::from_bytes(input.as_view(), element, n as u64)?;
                        channels::launch_channels(gpu, &plan, stream, &dv, 0, &mut c.as_view_mut())
                    },
                    |c| Ok(exact(&gpu.download(c)?, &want)),
                )
            };
            let baseline: RunBaseline = if element == InputType::F32 {
                // The goal is a ratio to i32 values through the same kernel.
                let ints = draw(seed, n, bins, ValueDistribution::Uniform, InputType::I32);
                let dints = upload(gpu, ints.as_values())?;
                let int_binning = Binning::integers(bins as u32);
                Box::new(move |timing| {
                    let plan = channels::plan_channels(
                        gpu,
                        InputType::I32,
                        int_binning,
                        ChannelLayout::ONE,
                        &LaunchRequest::default(),
                    )?;
                    let mut counts = gpu.zeros::<u32>(bins)?;
                    let t = time_launches(gpu, timing.0, timing.1, |_| {
                        stream.memset_zeros(&mut counts)?;
                        let dv = DeviceValues::from_bytes(dints.as_view(), InputType::I32, n as u64)?;
                        channels::launch_channels(gpu, &plan, stream, &dv, 0, &mut counts.as_view_mut())
                    })?;
                    Ok((format!("i32, {bins} bins, same kernel: {plan}"), t.median_ms))
                })
            } else {
                Box::new(move |timing| {
                    let (plan, ms) = planner_ms(gpu, values.as_values(), binning, timing)?;
                    Ok((format!("planner: {plan}"), ms))
                })
            };
            PreparedCase { bytes, run: Box::new(run), baseline: Some(baseline) }
        }
        "weights-i32-256" | "weights-i32-8192" | "weights-i32-8192-f64" | "weights-u8-256-2^28" => {
            // The -f64 case forces f64 sums unless the request names the partials.
            let f64_sums = key.ends_with("-f64").then_some(false);
            let (element, n, bins) = match key {
                "weights-i32-256" => (InputType::I32, FEATURE_VALUES, 256),
                "weights-i32-8192" | "weights-i32-8192-f64" => (InputType::I32, FEATURE_VALUES, 8192),
                _ => (InputType::U8, 1 << 28, 256),
            };
            let values = draw(seed, n, bins, ValueDistribution::Uniform, element);
            let binning = Binning::integers(bins as u32);
            let weights = crate::cli::histogram_features::random_weights(seed, n);
            let want = weighted::weighted_histogram_cpu(values.as_values(), &weights, &binning);
            let input = upload(gpu, values.as_values())?;
            let w = gpu.upload(&weights)?;
            drop(weights);
            let bytes = values.as_values().bytes().len() as u64 + 4 * n as u64;
            let run = move |request: &LaunchRequest, timing: (usize, usize)| -> anyhow::Result<CaseRun> {
                let plan = match weighted::plan_weighted(
                    gpu,
                    element,
                    binning,
                    &LaunchRequest { packing: None, f32_partials: request.f32_partials.or(f64_sums), ..*request },
                ) {
                    Ok(p) => p,
                    Err(e) => return Ok(CaseRun::NoPlan(e)),
                };
                let mut sums = gpu.zeros::<f64>(bins)?;
                check_then_time(
                    gpu,
                    timing,
                    plan.to_string(),
                    &mut sums,
                    |s| {
                        stream.memset_zeros(s)?;
                        let dv = DeviceValues::from_bytes(input.as_view(), element, n as u64)?;
                        weighted::launch_weighted(gpu, &plan, stream, &dv, &w.slice(0..n), &mut s.as_view_mut())
                    },
                    |s| {
                        let got = gpu.download(s)?;
                        Ok(match want.first_difference_by(&got, &plan.sum_bound(n as u64)) {
                            None if plan.f32_partials() => Ok("within the f32-partials bound of the exact sums".into()),
                            None => Ok("within the f64 bound of the exact sums (these are exact)".into()),
                            Some(d) => Err(d),
                        })
                    },
                )
            };
            let baseline = move |timing| {
                let (plan, ms) = planner_ms(gpu, values.as_values(), binning, timing)?;
                Ok((format!("unweighted, planner: {plan}"), ms))
            };
            PreparedCase { bytes, run: Box::new(run), baseline: Some(Box::new(baseline)) }
        }
        "rgba-u8-2^28" => {
            let n = 1 << 28;
            let values = draw(seed, n, 256, ValueDistribution::Uniform, InputType::U8);
            let binning = Binning::integers(256);
            let layout = ChannelLayout::new(4, 4)?;
            let want = channels::channels_histogram_cpu(values.as_values(), &binning, layout, 0);
            let input = upload(gpu, values.as_values())?;
            let run = move |request: &LaunchRequest, timing: (usize, usize)| -> anyhow::Result<CaseRun> {
                let plan = match channels::plan_channels(gpu, InputType::U8, binning, layout, request) {
                    Ok(p) => p,
                    Err(e) => return Ok(CaseRun::NoPlan(e)),
                };
                let mut counts = gpu.zeros::<u32>(4 * 256)?;
                check_then_time(
                    gpu,
                    timing,
                    plan.to_string(),
                    &mut counts,
                    |c| {
                        stream.memset_zeros(c)?;
                        let dv = DeviceValues::from_bytes(input.as_view(), InputType::U8, n as u64)?;
                        channels::launch_channels(gpu, &plan, stream, &dv, 0, &mut c.as_view_mut())
                    },
                    |c| Ok(exact(&gpu.download(c)?, &want)),
                )
            };
            let baseline = move |timing| {
                let (plan, ms) = planner_ms(gpu, values.as_values(), binning, timing)?;
                Ok((format!("one channel, planner: {plan}"), ms))
            };
            PreparedCase { bytes: n as u64, run: Box::new(run), baseline: Some(Box::new(baseline)) }
        }
        "edges-f32-256" => {
            let n = FEATURE_VALUES;
            let e = uneven_edges(seed);
            let values = draw(seed, n, 256, ValueDistribution::Uniform, InputType::F32);
            let want = edges::edges_histogram_cpu(values.as_values(), &e);
            let input = upload(gpu, values.as_values())?;
            let run = move |request: &LaunchRequest, timing: (usize, usize)| -> anyhow::Result<CaseRun> {
                let plan = match edges::plan_edges(gpu, InputType::F32, e.bins(), request) {
                    Ok(p) => p,
                    Err(err) => return Ok(CaseRun::NoPlan(err)),
                };
                let device_edges = DeviceEdges::new(gpu, &e, InputType::F32, plan.cells())?;
                let mut counts = gpu.zeros::<u32>(e.bins() as usize)?;
                check_then_time(
                    gpu,
                    timing,
                    plan.to_string(),
                    &mut counts,
                    |c| {
                        stream.memset_zeros(c)?;
                        let dv = DeviceValues::from_bytes(input.as_view(), InputType::F32, n as u64)?;
                        edges::launch_edges(gpu, &plan, stream, &dv, &device_edges, &mut c.as_view_mut())
                    },
                    |c| Ok(exact(&gpu.download(c)?, &want)),
                )
            };
            let baseline = move |timing| {
                let binning = binning_for(InputType::F32, 256, Some((0.0, 256.0)))?;
                let (plan, ms) = planner_ms(gpu, values.as_values(), binning, timing)?;
                Ok((format!("256 even f32 bins, planner: {plan}"), ms))
            };
            PreparedCase { bytes: 4 * n as u64, run: Box::new(run), baseline: Some(Box::new(baseline)) }
        }
        "2d-256x256" | "2d-256x256-paired-flush" => {
            // The -paired-flush case forces two counters per atomic unless the request names it.
            let forced = key.ends_with("-paired-flush").then_some(true);
            let n = FEATURE_VALUES;
            let bins = Bins2d::new(256, 256, (-1.0, 1.0), (-1.0, 1.0))?;
            let (x, y) = crate::cli::histogram2d::random_pairs(seed, n, &bins);
            let want = hist2d::histogram2d_cpu(&x, &y, &bins);
            let (dx, dy) = (gpu.upload(&x)?, gpu.upload(&y)?);
            let run = move |request: &LaunchRequest, timing: (usize, usize)| -> anyhow::Result<CaseRun> {
                let request = LaunchRequest { paired_flush: request.paired_flush.or(forced), ..*request };
                let plan = match hist2d::plan_2d(gpu, bins, false, &request) {
                    Ok(p) => p,
                    Err(e) => return Ok(CaseRun::NoPlan(e)),
                };
                let mut counts = gpu.zeros::<u32>(bins.bins() as usize)?;
                check_then_time(
                    gpu,
                    timing,
                    plan.to_string(),
                    &mut counts,
                    |c| {
                        stream.memset_zeros(c)?;
                        hist2d::launch_2d(gpu, &plan, stream, &dx.as_view(), &dy.as_view(), &mut c.as_view_mut())
                    },
                    |c| Ok(exact(&gpu.download(c)?, &want)),
                )
            };
            PreparedCase { bytes: 8 * n as u64, run: Box::new(run), baseline: None }
        }
        "segments-4096x16384-256" | "segments-4096x16384-256-single" | "segments-4096x16384-256-warp" => {
            // The -single case forces one set of counters, the -warp case the warp-private kernel,
            // unless the request names them.
            let single = key.ends_with("-single").then_some(false);
            let warp = key.ends_with("-warp").then_some(true);
            let n = 4096 * 16_384;
            let values = draw(seed, n, 256, ValueDistribution::Uniform, InputType::I32);
            let binning = Binning::integers(256);
            let segments = Segments::Equal { count: 4096, len: 16_384 };
            let want = segmented::segmented_histogram_cpu(values.as_values(), &binning, segments);
            let input = upload(gpu, values.as_values())?;
            let run = move |request: &LaunchRequest, timing: (usize, usize)| -> anyhow::Result<CaseRun> {
                let request = LaunchRequest {
                    double_buffer: request.double_buffer.or(single),
                    warp_private: request.warp_private.or(warp),
                    ..*request
                };
                let plan = match segmented::plan_segments(gpu, InputType::I32, binning, 4096, n as u64, &request) {
                    Ok(p) => p,
                    Err(e) => return Ok(CaseRun::NoPlan(e)),
                };
                let mut counts = gpu.zeros::<u32>(plan.counters() as usize)?;
                check_then_time(
                    gpu,
                    timing,
                    plan.to_string(),
                    &mut counts,
                    |c| {
                        stream.memset_zeros(c)?;
                        let dv = DeviceValues::from_bytes(input.as_view(), InputType::I32, n as u64)?;
                        let device = DeviceSegments::Equal { count: 4096, len: 16_384 };
                        segmented::launch_segments(gpu, &plan, stream, &dv, &device, &mut c.as_view_mut())
                    },
                    |c| Ok(exact(&gpu.download(c)?, &want)),
                )
            };
            let baseline = move |timing| {
                let (plan, ms) = planner_ms(gpu, values.as_values(), binning, timing)?;
                Ok((format!("one histogram of all values, planner: {plan}"), ms))
            };
            PreparedCase { bytes: 4 * n as u64, run: Box::new(run), baseline: Some(Box::new(baseline)) }
        }
        other => anyhow::bail!("no feature case {other}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_key_is_unique_and_the_peers_script_knows_it() {
        let script = include_str!("../../../scripts/histogram_peers.py");
        let mut keys: Vec<&str> = FEATURE_CASES.iter().map(|c| c.key).collect();
        for key in &keys {
            assert!(script.contains(&format!("\"{key}\"")), "scripts/histogram_peers.py has no case {key}");
        }
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), FEATURE_CASES.len());
    }

    #[test]
    fn peers_attach_to_rows_by_key_and_the_fastest_is_the_one_compared() {
        let copy = CopyBandwidth::new(1 << 30, Timing::from_samples(vec![0.5]).unwrap());
        let t = Timing::from_samples(vec![0.1]).unwrap();
        let row = FeatureRow::measured(
            "edges-f32-256",
            "edges",
            "c".into(),
            "t",
            "p".into(),
            t,
            1 << 28,
            &copy,
            "exact".into(),
        );
        let mut section = FeatureSection { copy, rows: vec![row], peers_source: None };
        let peers: PeersFile = serde_json::from_str(
            r#"{"device": "H200", "versions": {"torch": "2.11"}, "cases": {"edges-f32-256": [{"name": "a", "ms": 0.4}, {"name": "b", "ms": 0.2}]}}"#,
        )
        .unwrap();
        attach_peers(&mut section, &peers, peers.source("p.json"));
        let (fastest, ratio) = section.rows[0].against_fastest_peer().unwrap();
        assert_eq!((fastest.name.as_str(), ratio), ("b", 0.5));
        assert_eq!(section.peers_source.as_deref(), Some("p.json: H200 (torch 2.11)"));
        assert_eq!(section.rows[0].ratio_to_baseline(), None);
        let with = section.rows[0].clone().with_baseline("b", 0.05);
        assert_eq!(with.ratio_to_baseline(), Some(2.0));
    }
}
