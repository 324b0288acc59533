// Over 600 lines: the command line of five histogram features (weights, edges, channels, 2-D,
// segments), each a short run/check/print path sharing the argument checks and file readers
// here; splitting per feature would spread those shared helpers over five files.
//! `host histogram` with issue 22's features: `--weights`, `--edges`, `--channels`, and
//! `--segments` / `--segment-len` / `--offsets`, on random values (`--n`: checked against the
//! CPU, then timed) or a file (`--input`: bin edges and channels streamed, so the file may exceed
//! the GPU; weights and segments read whole). `--plan` prints the plan and why. The kernels'
//! tunables: `--threads`, `--copies`, `--packing`, `--blocks-per-sm`, `--aggregate` and `--tier
//! shared|global`.

use super::histogram::{
    H2D_PROBE, HistogramArgs, TierChoice, check_stream_flags, print_device, print_stream_report, stream_options,
};
use crate::arrays;
use crate::error::format_bytes;
use crate::gpu::Gpu;
use crate::histogram::channels::{self, ChannelLayout, ChannelsChunks};
use crate::histogram::device_values::DeviceValues;
use crate::histogram::edges::{self, BinEdges, DeviceEdges, EdgesChunks};
use crate::histogram::segmented::{self, DeviceSegments, Segments};
use crate::histogram::tuning::{self, LaunchRequest};
use crate::histogram::weighted;
use crate::histogram::{self, Binning, HistogramLimits, InputType, Values, ValuesBuf, first_count_difference};
use crate::io::{DataFile, ElementType, OutputFile};
use crate::reference::histogram_input_of;
use crate::stream;
use crate::timing::{Timing, rotation_sets, time_launches};
use anyhow::bail;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};

/// Where weights come from.
#[derive(Debug, Clone, PartialEq)]
pub enum WeightsSource {
    /// Uniform in (-1, 1), multiples of 2^-24 (so that every sum is exact in f64).
    Random,
    /// A float32 file of one weight per value.
    File(PathBuf),
}

/// How the input splits into segments.
#[derive(Debug, Clone, PartialEq)]
pub enum SegmentSpec {
    /// This many segments of equal length.
    Count(u64),
    /// Segments of this many values.
    Len(u64),
    /// Offsets from a file.
    Offsets(PathBuf),
}

/// The feature a command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Feature {
    /// `--weights`.
    Weights(WeightsSource),
    /// `--edges`, checked.
    Edges(BinEdges),
    /// `--channels` (and `--active-channels`).
    Channels(ChannelLayout),
    /// `--segments`, `--segment-len` or `--offsets`.
    Segments(SegmentSpec),
}

impl Feature {
    /// The flag that asked for it.
    fn flag(&self) -> &'static str {
        match self {
            Feature::Weights(_) => "--weights",
            Feature::Edges(_) => "--edges",
            Feature::Channels(_) => "--channels",
            Feature::Segments(_) => "segments",
        }
    }
}

/// The feature `args` asks for, if any; edges are read and checked here (before a GPU is opened),
/// and two features at once are refused.
pub fn feature_of(args: &HistogramArgs) -> anyhow::Result<Option<Feature>> {
    let mut found = Vec::new();
    if let Some(w) = &args.weights {
        found.push(Feature::Weights(if w == "random" { WeightsSource::Random } else { WeightsSource::File(w.into()) }));
    }
    if let Some(e) = &args.edges {
        let edges = arrays::read_edges(e)?;
        if let Some(b) = args.bins
            && b != edges.bins() as usize
        {
            bail!(
                "--bins {b} and {} edges: edges make one bin fewer than themselves ({})",
                edges.bins() + 1,
                edges.bins()
            );
        }
        if args.range.is_some() {
            bail!("--range and --edges: the edges set the bins (values outside them are left out)");
        }
        found.push(Feature::Edges(edges));
    }
    if let Some(c) = args.channels {
        found.push(Feature::Channels(ChannelLayout::new(c, args.active_channels.unwrap_or(c))?));
    }
    match (args.segments, args.segment_len, &args.offsets) {
        (Some(s), _, _) => found.push(Feature::Segments(SegmentSpec::Count(s))),
        (_, Some(l), _) => found.push(Feature::Segments(SegmentSpec::Len(l))),
        (_, _, Some(p)) => found.push(Feature::Segments(SegmentSpec::Offsets(p.clone()))),
        _ => {}
    }
    if found.len() > 1 {
        bail!(
            "{} and {} together: each run takes one of --weights, --edges, --channels and segments (their combinations have no kernels yet)",
            found[0].flag(),
            found[1].flag()
        );
    }
    Ok(found.pop())
}

/// The kernels' tunables from the command line; `--tier` picks the shared or global tier where a
/// feature has both (weights), and the plain histogram's other tiers are refused with the reason.
pub fn launch_request(args: &HistogramArgs, feature: &Feature) -> anyhow::Result<LaunchRequest> {
    if args.cluster.is_some() || args.bucket_bits.is_some() || args.waves.is_some() {
        bail!(
            "--cluster, --bucket-bits and --waves apply to the plain histogram's cluster, bucketed and sorted tiers, not to {}",
            feature.flag()
        );
    }
    let weighted = matches!(feature, Feature::Weights(_));
    let global = match args.tier {
        TierChoice::Auto => None,
        TierChoice::Shared if weighted => Some(false),
        TierChoice::Shared => None,
        TierChoice::Global if weighted => Some(true),
        tier => bail!(
            "--tier {}: {} {}",
            format!("{tier:?}").to_lowercase(),
            feature.flag(),
            if weighted {
                "sums in the shared or global tier: the sorted and bucketed tiers carry only each value's bin through their scratch buffers, and the cluster tier would run its f64 compare-and-store loops across the cluster"
            } else {
                "counts in its own shared-memory kernel (no tier to choose)"
            }
        ),
    };
    if args.aggregate.is_some() && !weighted {
        bail!("--aggregate applies to the plain histogram and to --weights");
    }
    if args.f32_partials.is_some() && !weighted {
        bail!("--f32-partials applies to --weights");
    }
    if args.double_buffer.is_some() && !matches!(feature, Feature::Segments(_)) {
        bail!("--double-buffer applies to segments (--segments, --segment-len, --offsets)");
    }
    if args.warp_private.is_some() && !matches!(feature, Feature::Segments(_)) {
        bail!("--warp-private applies to segments (--segments, --segment-len, --offsets)");
    }
    Ok(LaunchRequest {
        threads_per_block: args.threads,
        copies: args.copies,
        blocks_per_sm: args.blocks_per_sm,
        packing: args.packing,
        global,
        aggregate: args.aggregate,
        f32_partials: args.f32_partials,
        double_buffer: args.double_buffer,
        warp_private: args.warp_private,
        paired_flush: None,
    })
}

/// Runs `host histogram` for `feature`.
pub fn run(device: usize, args: &HistogramArgs, feature: Feature) -> anyhow::Result<()> {
    let request = launch_request(args, &feature)?;
    request.check()?;
    match &args.input {
        Some(path) => run_file(device, args, &feature, request, path),
        None => {
            if let Some(flag) = args.file_only_flag() {
                bail!("{flag} applies to --input files only");
            }
            run_random(device, args, &feature, request)
        }
    }
}

/// The binning of the command line for `element` (`--bins`, `--range` for f32).
fn binning_of(args: &HistogramArgs, element: InputType) -> anyhow::Result<Binning> {
    Ok(histogram::binning_for(element, args.bins(), args.range)?)
}

/// The segments of `n` values `spec` describes, with the offsets it owns.
fn segments_of(spec: &SegmentSpec, n: u64) -> anyhow::Result<(Option<Vec<u64>>, Segments<'static>)> {
    Ok(match spec {
        SegmentSpec::Count(c) => (None, Segments::equal_count(n, *c)?),
        SegmentSpec::Len(l) => (None, Segments::equal_len(n, *l)?),
        SegmentSpec::Offsets(p) => {
            let offsets = arrays::read_offsets(p)?;
            Segments::Offsets(&offsets).check(n).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
            (Some(offsets), Segments::Equal { count: 0, len: 0 })
        }
    })
}

/// A plan of any feature, for printing and launching.
enum Planned {
    Weights(weighted::WeightedPlan),
    Edges(edges::EdgesPlan),
    Channels(channels::ChannelsPlan),
    Segments(segmented::SegmentsPlan),
}

impl Planned {
    fn describe(&self, limits: &HistogramLimits) -> (String, String) {
        match self {
            Planned::Weights(p) => (p.to_string(), p.reason(limits)),
            Planned::Edges(p) => (p.to_string(), p.reason(limits)),
            Planned::Channels(p) => (p.to_string(), p.reason(limits)),
            Planned::Segments(p) => (p.to_string(), p.reason(limits)),
        }
    }
}

/// With `--device-model` (and `--plan`), prints the plan made without a GPU for that model and
/// returns true.
fn print_model_plan(args: &HistogramArgs, planned: &Planned) -> bool {
    let Some(model) = args.device_model else { return false };
    let (text, why) = planned.describe(&HistogramLimits::of_model(model));
    println!("device model: {}", model.info().name);
    println!("plan: {text} (the grid estimated from threads, shared memory and 64 registers per thread)");
    println!("why: {why}");
    true
}

/// The feature's plan for `element` values (`n` of them, for segments): on the device model's
/// limits (`--device-model`, else the H100's) and a register estimate before a GPU is opened
/// (`gpu` `None`: argument checks and model plans), else the device's.
fn plan_feature(
    gpu: Option<&Gpu>,
    args: &HistogramArgs,
    feature: &Feature,
    element: InputType,
    n: u64,
    segments: u64,
    request: &LaunchRequest,
) -> anyhow::Result<Planned> {
    let limits = args.device_model.map_or(HistogramLimits::H100, HistogramLimits::of_model);
    let model = tuning::model_before_device(limits);
    Ok(match feature {
        Feature::Weights(_) => {
            let b = binning_of(args, element)?;
            Planned::Weights(match gpu {
                None => weighted::plan_weighted_for(&limits, &model, element, b, request)?,
                Some(gpu) => weighted::plan_weighted(gpu, element, b, request)?,
            })
        }
        Feature::Edges(e) => Planned::Edges(match gpu {
            None => edges::plan_edges_for(&limits, &model, element, e.bins(), request)?,
            Some(gpu) => edges::plan_edges(gpu, element, e.bins(), request)?,
        }),
        Feature::Channels(layout) => {
            let b = binning_of(args, element)?;
            Planned::Channels(match gpu {
                None => channels::plan_channels_for(&limits, &model, element, b, *layout, request)?,
                Some(gpu) => channels::plan_channels(gpu, element, b, *layout, request)?,
            })
        }
        Feature::Segments(_) => {
            let b = binning_of(args, element)?;
            Planned::Segments(match gpu {
                None => segmented::plan_segments_for(&limits, &model, element, b, segments, n, request)?,
                Some(gpu) => segmented::plan_segments(gpu, element, b, segments, n, request)?,
            })
        }
    })
}

/// Random weights for `n` values: uniform in (-1, 1) as multiples of 2^-24, so that every sum of
/// up to 2^29 of them is exact in f64 and the check can ask for the exact sums.
pub fn random_weights(seed: u64, n: usize) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5745_4947_4854);
    (0..n).map(|_| rng.random_range(-(1i32 << 24) + 1..(1 << 24)) as f32 * 2f32.powi(-24)).collect()
}

/// Random values of `element` for the feature: for edges, over the edges' span (the integer part
/// of it for integer types, with a margin either side so that some values fall outside).
fn random_values(args: &HistogramArgs, feature: &Feature, element: InputType, seed: u64, n: usize) -> ValuesBuf {
    match feature {
        Feature::Edges(e) => {
            let (lo, hi) = (e.lo() as f64, e.hi() as f64);
            let margin = (hi - lo) / 16.0;
            match element {
                InputType::F32 => {
                    let range = ((lo - margin) as f32, (hi + margin) as f32);
                    histogram_input_of(seed, n, 1 << 16, args.dist, element, Some(range))
                }
                _ => {
                    let top = (hi + margin).clamp(1.0, i32::MAX as f64) as usize;
                    histogram_input_of(seed, n, top, args.dist, element, None)
                }
            }
        }
        _ => histogram_input_of(seed, n, args.bins(), args.dist, element, args.range),
    }
}

/// `--n`: random values checked against the CPU, then timed.
fn run_random(device: usize, args: &HistogramArgs, feature: &Feature, request: LaunchRequest) -> anyhow::Result<()> {
    let n = args.n.unwrap_or(0);
    let element = args.value_type.unwrap_or(ElementType::I32).input_type();
    if let Feature::Weights(WeightsSource::File(p)) = feature {
        bail!("--weights {}: a weights file goes with an --input file (with --n, use --weights random)", p.display());
    }
    if let Feature::Channels(layout) = feature {
        channels::check_whole_pixels(n as u64, *layout)?;
    }
    let (offsets, segments) = match feature {
        Feature::Segments(spec) => {
            let (o, s) = segments_of(spec, n as u64)?;
            (o, Some(s))
        }
        _ => (None, None),
    };
    let segment_count = offsets.as_ref().map_or(segments.map_or(0, |s| s.count()), |o| o.len() as u64 - 1);
    let planned = plan_feature(None, args, feature, element, n as u64, segment_count, &request)?;
    if print_model_plan(args, &planned) {
        return Ok(());
    }
    let gpu = Gpu::open(device)?;
    let planned = plan_feature(Some(&gpu), args, feature, element, n as u64, segment_count, &request)?;
    let limits = HistogramLimits::of(&gpu)?;
    print_device(&gpu);
    let (text, why) = planned.describe(&limits);
    println!("plan: {text}");
    println!("why: {why}");
    if args.plan {
        return Ok(());
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let draw = |s: u64| random_values(args, feature, element, seed.wrapping_add(s), n);
    let first = draw(0);
    let weights = matches!(feature, Feature::Weights(_)).then(|| random_weights(seed, n));
    let value_bytes = first.as_values().bytes().len() as u64;
    let input_bytes = value_bytes + weights.as_ref().map_or(0, |w| 4 * w.len() as u64);
    let sets = rotation_sets(input_bytes, gpu.info().l2_bytes);
    let inputs = std::iter::once(Ok(first.clone()))
        .chain((1..sets).map(|s| Ok(draw(s as u64))))
        .collect::<anyhow::Result<Vec<ValuesBuf>>>()?;
    let timing = (args.warmup as usize, args.repeat as usize);
    let segments = match (&offsets, segments) {
        (Some(o), _) => Some(Segments::Offsets(o)),
        (None, s) => s,
    };
    let outcome = measure(&gpu, &planned, feature, &inputs, weights.as_deref(), segments, timing)?;
    println!(
        "{} of {n} {} values ({:?}): median {:.3} ms (min {:.3}, max {:.3}, {} runs), {:.1} GB/s of input read ({})",
        what(feature),
        element.name(),
        args.dist,
        outcome.timing.median_ms,
        outcome.timing.min_ms,
        outcome.timing.max_ms,
        outcome.timing.runs,
        input_bytes as f64 / (outcome.timing.median_ms * 1e6),
        if weights.is_some() { "values and weights" } else { "values" }
    );
    println!("CPU reference: {:.1} ms; {}", outcome.cpu_ms, outcome.check);
    if !outcome.ok {
        bail!("the GPU result differs from the CPU's");
    }
    Ok(())
}

/// What the run computes, in words.
fn what(feature: &Feature) -> String {
    match feature {
        Feature::Weights(_) => "weighted histogram (f64 sums)".into(),
        Feature::Edges(e) => format!("histogram over {} edges", e.bins() + 1),
        Feature::Channels(l) => format!("histograms of {} of {} interleaved channels", l.active(), l.channels()),
        Feature::Segments(_) => "segmented histograms".into(),
    }
}

/// A checked and timed feature run.
pub struct FeatureOutcome {
    /// CUDA-event timing of zeroing the outputs and one launch.
    pub timing: Timing,
    /// The CPU reference's wall time, ms.
    pub cpu_ms: f64,
    /// Whether the GPU's result passed the check.
    pub ok: bool,
    /// The check in words.
    pub check: String,
}

/// Runs the planned feature on `inputs[0]`, checks it against the CPU, then times it over all
/// `inputs` (rotated); `weights` for weighted plans, `segments` for segmented ones.
fn measure(
    gpu: &Gpu,
    planned: &Planned,
    feature: &Feature,
    inputs: &[ValuesBuf],
    weights: Option<&[f32]>,
    segments: Option<Segments<'_>>,
    (warmup, repeat): (usize, usize),
) -> anyhow::Result<FeatureOutcome> {
    let n = inputs[0].as_values().len();
    let element = inputs[0].as_values().element();
    let devices = inputs
        .iter()
        .map(|v| {
            let bytes = v.as_values().bytes();
            if bytes.is_empty() { gpu.zeros::<u8>(16) } else { gpu.upload(bytes) }
        })
        .collect::<crate::Result<Vec<_>>>()?;
    let view = |i: usize| DeviceValues::from_bytes(devices[i % devices.len()].as_view(), element, n as u64);
    let start = std::time::Instant::now();
    let stream = gpu.stream();
    let outcome = match (planned, feature) {
        (Planned::Weights(plan), _) => {
            let weights = weights.expect("weights go with a weighted plan");
            let want = weighted::weighted_histogram_cpu(inputs[0].as_values(), weights, &plan.binning());
            let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
            let w = if weights.is_empty() { gpu.zeros::<f32>(4)? } else { gpu.upload(weights)? };
            let mut sums = gpu.zeros::<f64>(plan.bins() as usize)?;
            let launch = |i: usize, sums: &mut cudarc::driver::CudaSlice<f64>| -> crate::Result<()> {
                stream.memset_zeros(sums)?;
                weighted::launch_weighted(gpu, plan, stream, &view(i)?, &w.slice(0..n), &mut sums.as_view_mut())
            };
            launch(0, &mut sums)?;
            gpu.synchronize()?;
            let got = gpu.download(&sums)?;
            let difference = want.first_difference_by(&got, &plan.sum_bound(n as u64));
            let timing = time_launches(gpu, warmup, repeat, |i| launch(i, &mut sums))?;
            let exact =
                got.iter().zip(&want.sums).all(|(g, w)| g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()));
            let check = match &difference {
                None if exact => "every sum equals the exact sum".to_string(),
                None => format!(
                    "every sum within the stated bound of the exact sum ({} partial sums per bin{})",
                    plan.partial_sums(),
                    match plan.sum_bound(n as u64).f32_adds {
                        Some(q) => format!(", f32 partials of at most {q} adds"),
                        None => String::new(),
                    }
                ),
                Some(d) => format!("DIFFERS: {d}"),
            };
            FeatureOutcome { timing, cpu_ms, ok: difference.is_none(), check }
        }
        (Planned::Edges(plan), Feature::Edges(e)) => {
            let want = edges::edges_histogram_cpu(inputs[0].as_values(), e);
            let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
            let device_edges = DeviceEdges::new(gpu, e, element, plan.cells())?;
            let mut counts = gpu.zeros::<u32>(plan.bins() as usize)?;
            let launch = |i: usize, counts: &mut cudarc::driver::CudaSlice<u32>| -> crate::Result<()> {
                stream.memset_zeros(counts)?;
                edges::launch_edges(gpu, plan, stream, &view(i)?, &device_edges, &mut counts.as_view_mut())
            };
            counted(gpu, &launch, &mut counts, &want, cpu_ms, (warmup, repeat), n)?
        }
        (Planned::Channels(plan), _) => {
            let want = channels::channels_histogram_cpu(inputs[0].as_values(), &plan.binning(), plan.layout(), 0);
            let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
            let mut counts = gpu.zeros::<u32>(plan.counters() as usize)?;
            let launch = |i: usize, counts: &mut cudarc::driver::CudaSlice<u32>| -> crate::Result<()> {
                stream.memset_zeros(counts)?;
                channels::launch_channels(gpu, plan, stream, &view(i)?, 0, &mut counts.as_view_mut())
            };
            counted(gpu, &launch, &mut counts, &want, cpu_ms, (warmup, repeat), n)?
        }
        (Planned::Segments(plan), _) => {
            let segments = segments.expect("segments go with a segmented plan");
            let want = segmented::segmented_histogram_cpu(inputs[0].as_values(), &plan.binning(), segments);
            let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
            let offsets = match segments {
                Segments::Offsets(o) => Some(gpu.upload(o)?),
                Segments::Equal { .. } => None,
            };
            let device = match (segments, &offsets) {
                (Segments::Equal { count, len }, _) => DeviceSegments::Equal { count, len },
                (Segments::Offsets(_), Some(o)) => DeviceSegments::Offsets(o.as_view()),
                (Segments::Offsets(_), None) => unreachable!("uploaded above"),
            };
            let mut counts = gpu.zeros::<u32>(plan.counters() as usize)?;
            let launch = |i: usize, counts: &mut cudarc::driver::CudaSlice<u32>| -> crate::Result<()> {
                stream.memset_zeros(counts)?;
                segmented::launch_segments(gpu, plan, stream, &view(i)?, &device, &mut counts.as_view_mut())
            };
            counted(gpu, &launch, &mut counts, &want, cpu_ms, (warmup, repeat), n)?
        }
        (Planned::Edges(_), _) => unreachable!("an edges plan comes from --edges"),
    };
    Ok(outcome)
}

/// Runs `launch(0)`, compares its counts with `want` exactly, then times it.
fn counted(
    gpu: &Gpu,
    launch: &dyn Fn(usize, &mut cudarc::driver::CudaSlice<u32>) -> crate::Result<()>,
    counts: &mut cudarc::driver::CudaSlice<u32>,
    want: &[u32],
    cpu_ms: f64,
    (warmup, repeat): (usize, usize),
    n: usize,
) -> anyhow::Result<FeatureOutcome> {
    launch(0, counts)?;
    gpu.synchronize()?;
    let got = gpu.download(counts)?;
    let difference = first_count_difference(&got, want);
    let timing = time_launches(gpu, warmup, repeat, |i| launch(i, counts))?;
    let counted: u64 = want.iter().map(|&c| c as u64).sum();
    let check = match &difference {
        None => format!("matches the CPU exactly: yes ({} of {n} values counted)", counted),
        Some(d) => format!("matches the CPU exactly: NO: {d}"),
    };
    Ok(FeatureOutcome { timing, cpu_ms, ok: difference.is_none(), check })
}

/// `--input FILE`: bin edges and channels stream the file; weights and segments read it whole.
fn run_file(
    device: usize,
    args: &HistogramArgs,
    feature: &Feature,
    request: LaunchRequest,
    path: &Path,
) -> anyhow::Result<()> {
    let file = DataFile::open(path, args.value_type)?;
    let element = file.element().input_type();
    let n = file.len();
    if let Feature::Channels(layout) = feature {
        channels::check_whole_pixels(n, *layout).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    }
    let weights_path = match feature {
        Feature::Weights(WeightsSource::File(p)) => Some(p.clone()),
        Feature::Weights(WeightsSource::Random) => {
            bail!("--weights random goes with --n; with --input give a weights file of one float32 per value")
        }
        _ => None,
    };
    let (offsets, segments) = match feature {
        Feature::Segments(spec) => {
            let (o, s) = segments_of(spec, n)?;
            (o, Some(s))
        }
        _ => (None, None),
    };
    let segment_count = offsets.as_ref().map_or(segments.map_or(0, |s| s.count()), |o| o.len() as u64 - 1);
    let planned = plan_feature(None, args, feature, element, n, segment_count, &request)?;
    if print_model_plan(args, &planned) {
        return Ok(());
    }
    let streamed = matches!(feature, Feature::Edges(_) | Feature::Channels(_));
    let read = if streamed {
        check_stream_flags(args)?
    } else {
        for (flag, given) in [
            ("--chunk", args.chunk.is_some()),
            ("--streams", args.streams.is_some()),
            ("--read", args.read.is_some()),
            ("--lockers", args.lockers.is_some()),
            ("--readers", args.readers.is_some()),
            ("--ahead", args.ahead.is_some()),
            ("--piece", args.piece.is_some()),
            ("--timings", args.timings),
        ] {
            if given {
                bail!(
                    "{flag} applies to streamed files (--edges, --channels and the plain histogram); {} reads the file whole",
                    feature.flag()
                );
            }
        }
        stream::StreamOptions::default().read
    };
    let weights = weights_path.as_deref().map(arrays::read_f32_values).transpose()?;
    if let Some(w) = &weights
        && w.len() as u64 != n
    {
        bail!("{} holds {n} values and {} weights: give one weight per value", path.display(), w.len());
    }
    let out = args.out.as_deref().map(OutputFile::create).transpose()?;
    let gpu = Gpu::open(device)?;
    let planned = plan_feature(Some(&gpu), args, feature, element, n, segment_count, &request)?;
    let limits = HistogramLimits::of(&gpu)?;
    print_device(&gpu);
    println!("input: {}: {n} {} values ({})", path.display(), element.name(), format_bytes(file.bytes()));
    let (text, why) = planned.describe(&limits);
    println!("plan: {text}");
    println!("why: {why}");
    if args.plan {
        return Ok(());
    }
    match (&planned, feature) {
        (Planned::Edges(plan), Feature::Edges(e)) => {
            let device_edges = DeviceEdges::new(&gpu, e, element, plan.cells())?;
            let kernel = EdgesChunks { plan, edges: &device_edges };
            let counts = stream_file(args, &gpu, &file, read, &kernel)?;
            let check = || stream::file_counts_cpu(&file, e.bins() as usize, |_, v| edges::edges_histogram_cpu(v, e));
            finish_counts(args, &counts, check, &[e.bins() as u64], out)
        }
        (Planned::Channels(plan), Feature::Channels(layout)) => {
            let counts = stream_file(args, &gpu, &file, read, &ChannelsChunks { plan })?;
            let (b, c) = (plan.binning(), layout.channels() as u64);
            let check = || {
                stream::file_counts_cpu(&file, plan.counters() as usize, |first, v| {
                    channels::channels_histogram_cpu(v, &b, *layout, (first % c) as u32)
                })
            };
            finish_counts(args, &counts, check, &[layout.active() as u64, b.nbins as u64], out)
        }
        (Planned::Weights(plan), _) => {
            let values = arrays::read_all_values(&file)?;
            let weights = weights.expect("read above");
            let start = std::time::Instant::now();
            let sums = weighted_once(&gpu, plan, values.as_values(), &weights)?;
            println!("GPU: {:.3} s (upload, count, download)", start.elapsed().as_secs_f64());
            let total: f64 = sums.iter().sum();
            println!("sums: {total:e} in all over {} bins", sums.len());
            if args.check {
                let want = weighted::weighted_histogram_cpu(values.as_values(), &weights, &plan.binning());
                match want.first_difference_by(&sums, &plan.sum_bound(values.as_values().len() as u64)) {
                    None => println!("CPU reference (exact sums): every sum within the stated bound: yes"),
                    Some(d) => bail!("the weighted sums differ from the CPU's exact sums beyond the bound: {d}"),
                }
            }
            if let Some(out) = out {
                let path = out.path().display().to_string();
                out.write_npy(&[sums.len() as u64], &sums)?;
                println!("wrote the sums to {path}");
            }
            Ok(())
        }
        (Planned::Segments(plan), _) => {
            let values = arrays::read_all_values(&file)?;
            let segments = match (&offsets, segments) {
                (Some(o), _) => Segments::Offsets(o),
                (None, Some(s)) => s,
                (None, None) => unreachable!("a segmented plan comes from a segment flag"),
            };
            let start = std::time::Instant::now();
            let counts = segmented_once(&gpu, plan, values.as_values(), segments)?;
            println!("GPU: {:.3} s (upload, count, download)", start.elapsed().as_secs_f64());
            let counts: Vec<u64> = counts.into_iter().map(u64::from).collect();
            let check = || -> crate::Result<Vec<u64>> {
                Ok(segmented::segmented_histogram_cpu(values.as_values(), &plan.binning(), segments)
                    .into_iter()
                    .map(u64::from)
                    .collect())
            };
            finish_counts(args, &counts, check, &[plan.segments(), plan.binning().nbins as u64], out)
        }
        _ => unreachable!("each plan comes from its feature"),
    }
}

/// Streams `file` through `kernel` with the command line's streaming options; returns the counts.
fn stream_file(
    args: &HistogramArgs,
    gpu: &Gpu,
    file: &DataFile,
    read: stream::ReadMode,
    kernel: &dyn stream::ChunkKernel,
) -> anyhow::Result<Vec<u64>> {
    let (options, how) = stream_options(args, gpu, read);
    let h2d = stream::pinned_h2d_gb_per_s(gpu, H2D_PROBE.0, H2D_PROBE.1)?;
    let report = super::histogram::with_progress(file.bytes(), |progress| {
        stream::histogram_file_with(gpu, kernel, file, options, progress)
    })?;
    print_stream_report(args, &report, file, &options, &how, h2d);
    Ok(report.counts)
}

/// Prints the counts' total, checks them against `cpu()` with `--check`, writes them with `--out`
/// as a uint64 `.npy` of `shape`.
fn finish_counts(
    args: &HistogramArgs,
    counts: &[u64],
    cpu: impl FnOnce() -> crate::Result<Vec<u64>>,
    shape: &[u64],
    out: Option<OutputFile>,
) -> anyhow::Result<()> {
    let total: u64 = counts.iter().sum();
    println!("counts: {total} values counted in {} counters", counts.len());
    if args.check {
        let start = std::time::Instant::now();
        let want = cpu()?;
        let exact = counts == want.as_slice();
        println!(
            "CPU reference ({:.1} s): matches the GPU exactly: {}",
            start.elapsed().as_secs_f64(),
            if exact { "yes" } else { "NO" }
        );
        if !exact {
            let i = counts.iter().zip(&want).position(|(g, w)| g != w).unwrap_or(0);
            bail!("the GPU counts differ from the CPU's: counter {i} holds {} instead of {}", counts[i], want[i]);
        }
    }
    if let Some(out) = out {
        let path = out.path().display().to_string();
        out.write_npy(shape, counts)?;
        println!("wrote the counts to {path}");
    }
    Ok(())
}

/// One weighted launch of `plan` on host values, downloaded.
fn weighted_once(
    gpu: &Gpu,
    plan: &weighted::WeightedPlan,
    values: Values<'_>,
    weights: &[f32],
) -> anyhow::Result<Vec<f64>> {
    let n = values.len();
    let input = histogram::device_values::upload_values(
        gpu,
        values,
        4 * n as u64 + 8 * plan.bins() as u64,
        "a weighted histogram",
    )?;
    let w = if weights.is_empty() { gpu.zeros::<f32>(4)? } else { gpu.upload(weights)? };
    let mut sums = gpu.zeros::<f64>(plan.bins() as usize)?;
    let dv = DeviceValues::from_bytes(input.as_view(), values.element(), n as u64)?;
    weighted::launch_weighted(gpu, plan, gpu.stream(), &dv, &w.slice(0..n), &mut sums.as_view_mut())?;
    gpu.synchronize()?;
    Ok(gpu.download(&sums)?)
}

/// One segmented launch of `plan` on host values, downloaded.
fn segmented_once(
    gpu: &Gpu,
    plan: &segmented::SegmentsPlan,
    values: Values<'_>,
    segments: Segments<'_>,
) -> anyhow::Result<Vec<u32>> {
    let n = values.len() as u64;
    let input = histogram::device_values::upload_values(gpu, values, 4 * plan.counters(), "a segmented histogram")?;
    let mut counts = gpu.zeros::<u32>(plan.counters() as usize)?;
    let dv = DeviceValues::from_bytes(input.as_view(), values.element(), n)?;
    let offsets = match segments {
        Segments::Offsets(o) => Some(gpu.upload(o)?),
        Segments::Equal { .. } => None,
    };
    let device = match (segments, &offsets) {
        (Segments::Equal { count, len }, _) => DeviceSegments::Equal { count, len },
        (Segments::Offsets(_), Some(o)) => DeviceSegments::Offsets(o.as_view()),
        (Segments::Offsets(_), None) => unreachable!("uploaded above"),
    };
    segmented::launch_segments(gpu, plan, gpu.stream(), &dv, &device, &mut counts.as_view_mut())?;
    gpu.synchronize()?;
    Ok(gpu.download(&counts)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn args(argv: &[&str]) -> HistogramArgs {
        let cli = Cli::try_parse_from(["host", "histogram"].iter().chain(argv)).unwrap();
        let Command::Histogram(args) = cli.command else { unreachable!() };
        args
    }

    fn refused(argv: &[&str]) -> String {
        crate::cli::histogram::run(0, &args(argv)).unwrap_err().to_string()
    }

    #[test]
    fn each_feature_flag_names_its_feature_and_two_at_once_are_refused() {
        assert_eq!(feature_of(&args(&["--n", "8", "--bins", "4"])).unwrap(), None);
        let w = feature_of(&args(&["--n", "8", "--bins", "4", "--weights", "random"])).unwrap();
        assert_eq!(w, Some(Feature::Weights(WeightsSource::Random)));
        let e = feature_of(&args(&["--n", "8", "--edges", "-1,0,2.5"])).unwrap().unwrap();
        assert_eq!(e, Feature::Edges(BinEdges::new(vec![-1.0, 0.0, 2.5]).unwrap()));
        let c = feature_of(&args(&["--n", "8", "--bins", "256", "--channels", "4", "--active-channels", "3"])).unwrap();
        assert_eq!(c, Some(Feature::Channels(ChannelLayout::new(4, 3).unwrap())));
        let s = feature_of(&args(&["--n", "8", "--bins", "4", "--segment-len", "3"])).unwrap();
        assert_eq!(s, Some(Feature::Segments(SegmentSpec::Len(3))));
        let both = refused(&["--n", "8", "--bins", "4", "--weights", "random", "--channels", "2"]);
        assert!(both.contains("--weights and --channels together"), "{both}");
        assert!(
            Cli::try_parse_from([
                "host",
                "histogram",
                "--n",
                "8",
                "--bins",
                "4",
                "--segments",
                "2",
                "--offsets",
                "o.npy"
            ])
            .is_err()
        );
        assert!(
            Cli::try_parse_from(["host", "histogram", "--n", "8", "--bins", "4", "--active-channels", "2"]).is_err()
        );
        assert!(Cli::try_parse_from(["host", "histogram", "--n", "8"]).is_err(), "--bins or --edges is required");
    }

    #[test]
    fn bad_feature_arguments_are_refused_before_a_gpu_is_needed() {
        assert!(refused(&["--n", "8", "--edges", "0,1,1"]).contains("increase strictly"));
        assert!(refused(&["--n", "8", "--bins", "3", "--edges", "0,1,2"]).contains("edges make one bin fewer"));
        assert!(
            refused(&["--n", "8", "--edges", "0,1", "--type", "f32", "--range", "0,1"]).contains("--range and --edges")
        );
        assert!(refused(&["--n", "8", "--bins", "4", "--channels", "5"]).contains("1 to 4"));
        assert!(refused(&["--n", "7", "--bins", "4", "--channels", "2"]).contains("not whole pixels"));
        assert!(refused(&["--n", "8", "--bins", "4", "--segments", "0"]).contains("at least one"));
        assert!(refused(&["--n", "8", "--bins", "4", "--weights", "w.npy"]).contains("goes with an --input file"));
        let tier = refused(&["--n", "8", "--bins", "4", "--weights", "random", "--tier", "sorted"]);
        assert!(tier.contains("--tier sorted") && tier.contains("shared or global tier"), "{tier}");
        let tier = refused(&["--n", "8", "--bins", "4", "--channels", "2", "--tier", "global"]);
        assert!(tier.contains("no tier to choose"), "{tier}");
        assert!(refused(&["--n", "8", "--bins", "4", "--channels", "2", "--cluster", "2"]).contains("--cluster"));
        assert!(refused(&["--n", "8", "--bins", "4", "--channels", "2", "--copies", "3"]).contains("power of two"));
        assert!(
            refused(&["--n", "8", "--bins", "4", "--weights", "random", "--out", "o.npy"])
                .contains("--input files only")
        );
        let packed = refused(&["--n", "8", "--bins", "65536", "--channels", "2"]);
        assert!(packed.contains("packing applies to one channel only"), "{packed}");
        let edges_many =
            refused(&["--n", "8", "--edges", &(0..=30_000).map(|i| i.to_string()).collect::<Vec<_>>().join(",")]);
        assert!(edges_many.contains("at most"), "{edges_many}");
        assert!(refused(&["--n", "8", "--bins", "4", "--packing", "1"]).contains("--packing applies to the kernels"));
    }

    #[test]
    fn bad_feature_files_are_reported_before_a_gpu_is_needed() {
        let dir = tempfile::tempdir().unwrap();
        let values = dir.path().join("v.npy");
        crate::io::write_npy(&values, &[6], &[1i32, 2, 3, 4, 5, 6]).unwrap();
        let v = values.to_str().unwrap();
        let weights = dir.path().join("w.npy");
        crate::io::write_npy(&weights, &[5], &[1.0f32; 5]).unwrap();
        let err = refused(&["--input", v, "--bins", "8", "--weights", weights.to_str().unwrap()]);
        assert!(err.contains("6 values and 5 weights"), "{err}");
        let offsets = dir.path().join("o.npy");
        crate::io::write_npy(&offsets, &[3], &[0i64, 4, 5]).unwrap();
        let err = refused(&["--input", v, "--bins", "8", "--offsets", offsets.to_str().unwrap()]);
        assert!(err.contains("o.npy") && err.contains("from 0 to the input's 6"), "{err}");
        let err = refused(&["--input", v, "--bins", "8", "--segments", "2", "--chunk", "1MiB"]);
        assert!(err.contains("--chunk applies to streamed files"), "{err}");
        let err = refused(&["--input", v, "--bins", "8", "--weights", "random"]);
        assert!(err.contains("--weights random goes with --n"), "{err}");
        let err = refused(&["--input", v, "--bins", "8", "--channels", "4"]);
        assert!(err.contains("v.npy") && err.contains("not whole pixels"), "{err}");
    }

    #[test]
    fn plans_for_a_device_model_need_no_gpu() {
        let run = |argv: &[&str]| crate::cli::histogram::run(0, &args(argv));
        assert!(run(&["--n", "1024", "--bins", "256", "--channels", "4", "--plan", "--device-model", "h200"]).is_ok());
        assert!(run(&["--n", "1024", "--edges", "0,1,2", "--type", "f32", "--plan", "--device-model", "h100"]).is_ok());
        assert!(
            run(&["--n", "1024", "--bins", "300", "--weights", "random", "--plan", "--device-model", "h200"]).is_ok()
        );
        assert!(run(&["--n", "1024", "--bins", "256", "--segments", "4", "--plan", "--device-model", "h200"]).is_ok());
        let err = run(&["--n", "1026", "--bins", "65536", "--channels", "3", "--plan", "--device-model", "h200"]);
        assert!(err.unwrap_err().to_string().contains("packing applies to one channel only"));
    }

    #[test]
    fn random_weights_are_exact_multiples_of_2_pow_minus_24_inside_the_open_unit_interval() {
        let w = random_weights(3, 10_000);
        assert!(w.iter().all(|&x| x > -1.0 && x < 1.0 && (x * 2f32.powi(24)).fract() == 0.0));
        assert_eq!(random_weights(3, 5), random_weights(3, 5));
    }
}
