// Over 600 lines with its documentation: about 440 lines of code; the rest are doc comments with
// examples and 200 lines of unit tests.
//! `host histogram`: plan, run and time the histogram, and compare it with the CPU exactly.

use crate::error::format_bytes;
use crate::gpu::{DeviceModel, Gpu};
use crate::histogram::{self, Binning, DeviceHistogram, HistogramPlan, HistogramTier, PlanRequest, ValuesBuf};
use crate::io::{DataFile, ElementType, OutputFile};
use crate::reference::{ValueDistribution, histogram_input_of};
use crate::stream::{self, ReadMode, StreamOptions};
use crate::timing::{Timing, rotation_sets, time_launches};
use anyhow::bail;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

/// `--tier`: the planner's choice, or a forced tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TierChoice {
    /// Shared, packed, sorted or global, by the bin count and the device.
    Auto,
    /// One block's shared memory.
    Shared,
    /// One block's shared memory, counters packed two or four to a word.
    Packed,
    /// Tiles sorted by bucket of bins, each bucket counted in shared memory, two passes.
    Sorted,
    /// A cluster's distributed shared memory.
    Cluster,
    /// Buckets of bins counted in shared memory, three passes.
    Bucketed,
    /// Global memory.
    Global,
}

impl TierChoice {
    /// The forced tier, if any.
    pub fn forced(self) -> Option<HistogramTier> {
        match self {
            Self::Auto => None,
            Self::Shared => Some(HistogramTier::Shared),
            Self::Packed => Some(HistogramTier::Packed),
            Self::Sorted => Some(HistogramTier::Sorted),
            Self::Cluster => Some(HistogramTier::Cluster),
            Self::Bucketed => Some(HistogramTier::Bucketed),
            Self::Global => Some(HistogramTier::Global),
        }
    }
}

/// Arguments of `host histogram`: random values (`--n`), or a file's (`--input`).
#[derive(Args, Debug)]
pub struct HistogramArgs {
    /// Number of random input values (0 is allowed: every count is 0).
    #[arg(long, required_unless_present = "input", conflicts_with = "input")]
    pub n: Option<usize>,
    /// Count the values of this file instead: a .npy file (its dtype picks the value type) or,
    /// with --type, a raw little-endian file. Streamed in chunks, so it may exceed the GPU's memory.
    #[arg(long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// The values' type: of the random values (default i32), or of a raw (headerless,
    /// little-endian) --input file. Integers count value v in bin v (clamped into the edge bins);
    /// f32 counts in even bins over --range.
    #[arg(long = "type")]
    pub value_type: Option<ElementType>,
    /// f32 only: LO,HI; values in [LO, HI] count (HI in the last bin), others and NaN are left out.
    #[arg(long, value_parser = parse_range, allow_hyphen_values = true)]
    pub range: Option<(f32, f32)>,
    /// Private copies of the histogram per block (shared tier; a power of two up to 32).
    #[arg(long)]
    pub copies: Option<u32>,
    /// Merge warp-uniform bins before adding (default: the planner's choice).
    #[arg(long)]
    pub aggregate: Option<bool>,
    /// --weights, shared tier: sum each block's weights in f32 partials (true) or f64 sums
    /// (false) before the f64 totals (default: the planner's choice, f32 where fewer than 8
    /// copies of f64 sums fit one block).
    #[arg(long)]
    pub f32_partials: Option<bool>,
    /// Segments: two sets of counters per block, one barrier per piece of a segment (true), or
    /// one set and two barriers (false) (default: true where two sets fit).
    #[arg(long)]
    pub double_buffer: Option<bool>,
    /// Segments: private counters per warp and no block barriers (true), or per block (false)
    /// (default: false; excludes --double-buffer).
    #[arg(long)]
    pub warp_private: Option<bool>,
    /// Bytes per streamed chunk of --input, e.g. 256MiB: a multiple of 64KiB (--read mapped or
    /// mixed, which lock pages in place) or of 16 bytes (copy, pinned) (default: 256 MiB, less if
    /// free device memory is short).
    #[arg(long, value_parser = stream::parse_bytes, value_name = "SIZE")]
    pub chunk: Option<u64>,
    /// CUDA streams the chunks of --input alternate over (2 to 16; default 2).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=16))]
    pub streams: Option<u32>,
    /// How --input reaches the GPU: copy (the mapped file copied into pinned buffers), pinned
    /// (read into pinned buffers), mapped (its pages page-locked in
    /// place, no CPU copy) or mixed (copy and mapped at once) (default: copy).
    #[arg(long)]
    pub read: Option<ReadMode>,
    /// Threads that page-lock chunks of --input in place, mapped and mixed (1 to 64; default 4).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub lockers: Option<u32>,
    /// Threads that each read or copy pieces of --input into pinned buffers, copy, pinned and
    /// mixed, each with two pinned buffers of a piece (1 to 64; default 12).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub readers: Option<u32>,
    /// Pieces of --input page-locked in place at once (at least --streams and --lockers;
    /// default 16).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=1024))]
    pub ahead: Option<u32>,
    /// Bytes per piece of a chunk of --input: what is locked, read and copied at once, where it
    /// divides --chunk (default 4 MiB).
    #[arg(long, value_parser = stream::parse_bytes, value_name = "SIZE")]
    pub piece: Option<u64>,
    /// Print where the streaming time of --input went (per phase, summed over threads).
    #[arg(long)]
    pub timings: bool,
    /// Check the counts of --input against the CPU's (a second read of the file).
    #[arg(long)]
    pub check: bool,
    /// Write the counts of --input to this .npy file (uint64, one per bin).
    #[arg(long, value_name = "COUNTS.npy")]
    pub out: Option<PathBuf>,
    /// Number of bins (with --edges: their count less one, which it may repeat).
    #[arg(long, required_unless_present = "edges")]
    pub bins: Option<usize>,
    /// Weights: each value adds its weight to its bin, summed in f64 (`numpy.histogram(weights=)`):
    /// `random` (with --n: uniform in (-1, 1)), or a float32 file of one weight per value (with
    /// --input; .npy or raw little-endian).
    #[arg(long, value_name = "FILE|random")]
    pub weights: Option<String>,
    /// Bin edges (`numpy.histogram(bins=edges)`): a .npy file of float32 edges (float64 ones that
    /// are all exactly float32 too), or a list such as -1,0,0.5,2. Left-closed bins, the last one
    /// closed; values outside and NaN are left out.
    #[arg(long, value_name = "FILE|LIST", allow_hyphen_values = true)]
    pub edges: Option<String>,
    /// Interleaved channels, 1 to 4 (4 for RGBA pixels): one histogram per channel from one read.
    #[arg(long)]
    pub channels: Option<u32>,
    /// Channels that get a histogram, the first ones (3 for the RGB of RGBA; default: all).
    #[arg(long, requires = "channels")]
    pub active_channels: Option<u32>,
    /// One histogram per segment: this many segments of equal length (the last ones shorter).
    #[arg(long, conflicts_with_all = ["segment_len", "offsets"])]
    pub segments: Option<u64>,
    /// One histogram per segment of this many values (the last one shorter).
    #[arg(long, conflicts_with = "offsets")]
    pub segment_len: Option<u64>,
    /// One histogram per segment, at these offsets: a .npy file of integers, 0 first and the
    /// input's length last (empty segments allowed).
    #[arg(long, value_name = "FILE")]
    pub offsets: Option<PathBuf>,
    /// Counters per 32-bit word of the channels and 2-D kernels, as log2: 0 (u32), 1 (16-bit) or
    /// 2 (8-bit) (default: the narrowest packing that fits one block).
    #[arg(long)]
    pub packing: Option<u32>,
    /// Resident blocks per SM the grid assumes, at most the occupancy query's (weights, edges,
    /// channels, segments; for sweeps).
    #[arg(long)]
    pub blocks_per_sm: Option<u32>,
    /// How the input values are drawn.
    #[arg(long, default_value_t = ValueDistribution::Uniform)]
    pub dist: ValueDistribution,
    /// Where the counters live: chosen by the planner, or forced.
    #[arg(long, value_enum, default_value_t = TierChoice::Auto)]
    pub tier: TierChoice,
    /// Blocks per cluster for the cluster tier (default: the smallest that holds the bins).
    #[arg(long)]
    pub cluster: Option<u32>,
    /// Threads per block (default: the planner's).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Buckets of 2^BITS bins (bucketed and sorted tiers; default: the planner's).
    #[arg(long, value_name = "BITS")]
    pub bucket_bits: Option<u32>,
    /// Waves of resident blocks the sorted tier's bins pass runs (1 to 8; default 2).
    #[arg(long)]
    pub waves: Option<u32>,
    /// Bits per counter of the packed tier: 16, 8 (with a carry plane), 6 or 4 (with a carry
    /// table; default: the widest that holds the bins).
    #[arg(long, value_name = "BITS")]
    pub counter_bits: Option<u32>,
    /// Print the plan and stop.
    #[arg(long)]
    pub plan: bool,
    /// With --plan: plan for this device model (h100, h200) without a GPU (the grid estimated
    /// from threads and shared memory, not the driver's occupancy query).
    #[arg(long, requires = "plan", value_name = "MODEL")]
    pub device_model: Option<DeviceModel>,
    /// Timed runs (the median is reported).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Seed for the input values (default: fresh each run).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// Parses `LO,HI` into two floats.
pub fn parse_range(text: &str) -> Result<(f32, f32), String> {
    let (lo, hi) = text.split_once(',').ok_or_else(|| format!("'{text}': expected LO,HI such as 0,1"))?;
    let parse = |s: &str| s.trim().parse::<f32>().map_err(|e| format!("'{}' in '{text}': {e}", s.trim()));
    Ok((parse(lo)?, parse(hi)?))
}

impl HistogramArgs {
    /// The bins: `--bins`, or with `--edges` (which the features path reads) 0 here.
    pub fn bins(&self) -> usize {
        self.bins.unwrap_or(0)
    }

    /// The first flag given that applies to `--input` files only.
    pub fn file_only_flag(&self) -> Option<&'static str> {
        let file_only = [
            ("--chunk", self.chunk.is_some()),
            ("--check", self.check),
            ("--out", self.out.is_some()),
            ("--streams", self.streams.is_some()),
            ("--read", self.read.is_some()),
            ("--lockers", self.lockers.is_some()),
            ("--readers", self.readers.is_some()),
            ("--ahead", self.ahead.is_some()),
            ("--piece", self.piece.is_some()),
            ("--timings", self.timings),
        ];
        file_only.iter().find(|(_, given)| *given).map(|(flag, _)| *flag)
    }

    /// What the planner may not choose alone.
    pub fn request(&self, element: ElementType) -> PlanRequest {
        PlanRequest {
            tier: self.tier.forced(),
            cluster_size: self.cluster,
            threads_per_block: self.threads,
            copies: self.copies,
            aggregate: self.aggregate,
            element: Some(element.input_type()),
            bucket_shift: self.bucket_bits,
            bins_pass_waves: self.waves,
            counter_bits: self.counter_bits,
        }
    }
}

/// The measured outcome of one histogram configuration.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HistogramOutcome {
    /// The plan that ran.
    pub plan: HistogramPlan,
    /// CUDA-event timings of zeroing the counters plus the kernel.
    pub timing: Timing,
    /// Input read rate at the median, GB/s (the input's bytes).
    pub input_gb_per_s: f64,
    /// Values not counted (f32 outside the range, NaN).
    pub left_out: u64,
    /// CPU histogram wall time, ms.
    pub cpu_ms: f64,
    /// Whether every count equals the CPU's.
    pub exact: bool,
}

/// Runs the command.
pub fn run(device: usize, args: &HistogramArgs) -> anyhow::Result<()> {
    // Weights, edges, channels and segments have their own kernels and planners.
    if let Some(feature) = super::histogram_features::feature_of(args)? {
        return super::histogram_features::run(device, args, feature);
    }
    if args.f32_partials.is_some() {
        bail!("--f32-partials applies to --weights");
    }
    if args.double_buffer.is_some() {
        bail!("--double-buffer applies to segments (--segments, --segment-len, --offsets)");
    }
    if args.warp_private.is_some() {
        bail!("--warp-private applies to segments (--segments, --segment-len, --offsets)");
    }
    for (flag, given) in [("--packing", args.packing.is_some()), ("--blocks-per-sm", args.blocks_per_sm.is_some())] {
        if given {
            bail!("{flag} applies to the kernels of --weights, --edges, --channels and segments");
        }
    }
    // Arguments are checked before the GPU is opened, so a bad one is reported as such anywhere.
    histogram::check_bins(args.bins())?;
    if let Some(path) = &args.input {
        return run_file(device, args, path);
    }
    if let Some(flag) = args.file_only_flag() {
        bail!("{flag} applies to --input files only");
    }
    let n = args.n.unwrap_or(0);
    let element = args.value_type.unwrap_or(ElementType::I32);
    let binning = histogram::binning_for(element.input_type(), args.bins(), args.range)?;
    let request = args.request(element);
    // Requests the planner refuses on any device (bad copies, threads) are reported before the
    // GPU is opened.
    histogram::plan_for(&histogram::HistogramLimits::H100, args.bins(), request)?;
    if let Some(model) = args.device_model {
        print_model_plan(model, args, request)?;
        return Ok(());
    }
    let gpu = Gpu::open(device)?;
    let plan = histogram::plan_with(&gpu, args.bins(), request)?;
    let limits = histogram::HistogramLimits::of(&gpu)?;
    print_device(&gpu);
    println!("plan: {plan}");
    println!("why: {}", plan.reason(&limits, args.tier.forced().is_some() || args.cluster.is_some()));
    if args.plan {
        return Ok(());
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let draw = Draw { seed, dist: args.dist, element, range: args.range };
    let values = histogram_input_of(seed, n, args.bins(), args.dist, element.input_type(), args.range);
    let timing = (args.warmup as usize, args.repeat as usize);
    let outcome = measure(&gpu, &plan, &values, binning, timing, draw)?;
    println!("{}", render(args, &outcome));
    if !outcome.exact {
        bail!("the GPU histogram differs from the CPU's");
    }
    Ok(())
}

/// Runs `stream`, feeding a progress bar over `bytes` (shown for inputs of 1 GiB or more) with
/// the bytes of each chunk as it is counted.
pub(crate) fn with_progress<T>(bytes: u64, stream: impl FnOnce(&mut dyn FnMut(u64)) -> T) -> T {
    let bar = (bytes >= 1 << 30).then(|| progress_bar(bytes));
    let mut progress = |n| {
        if let Some(bar) = &bar {
            bar.inc(n);
        }
    };
    let out = stream(&mut progress);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    out
}

/// A progress bar over `bytes` bytes.
fn progress_bar(bytes: u64) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(bytes);
    let template = "{bar:40} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec}, {eta} left";
    bar.set_style(indicatif::ProgressStyle::with_template(template).expect("a valid template"));
    bar
}

/// Prints the plan for a device model, which needs no GPU.
fn print_model_plan(model: DeviceModel, args: &HistogramArgs, request: PlanRequest) -> anyhow::Result<()> {
    let limits = histogram::HistogramLimits::of_model(model);
    let plan = histogram::plan_for(&limits, args.bins(), request)?;
    println!("device model: {}", model.info().name);
    println!("plan: {plan}");
    println!("why: {}", plan.reason(&limits, args.tier.forced().is_some() || args.cluster.is_some()));
    Ok(())
}

/// Pinned host-to-device copies timed for the ceiling of a streamed input: 8 of 256 MiB.
pub(crate) const H2D_PROBE: (u64, usize) = (256 << 20, 8);

/// `host histogram --input FILE`: checks the file, then streams it through the GPU and reports
/// the rate against the pinned host-to-device bandwidth measured in the same run.
fn run_file(device: usize, args: &HistogramArgs, path: &Path) -> anyhow::Result<()> {
    let file = DataFile::open(path, args.value_type)?;
    let binning = histogram::binning_for(file.element().input_type(), args.bins(), args.range)?;
    let request = args.request(file.element());
    histogram::plan_for(&histogram::HistogramLimits::H100, args.bins(), request)?;
    if let Some(model) = args.device_model {
        print_model_plan(model, args, request)?;
        return Ok(());
    }
    let read = check_stream_flags(args)?;
    let out = args.out.as_deref().map(OutputFile::create).transpose()?;
    let gpu = Gpu::open(device)?;
    let plan = histogram::plan_with(&gpu, args.bins(), request)?;
    print_device(&gpu);
    println!(
        "input: {}: {} {} values ({})",
        path.display(),
        file.len(),
        file.element().name(),
        format_bytes(file.bytes())
    );
    println!("plan: {plan}");
    if args.plan {
        return Ok(());
    }
    let (options, how) = stream_options(args, &gpu, read);
    let h2d = stream::pinned_h2d_gb_per_s(&gpu, H2D_PROBE.0, H2D_PROBE.1)?;
    let report = with_progress(file.bytes(), |progress| {
        stream::histogram_file_with_progress(&gpu, &plan, &file, binning, options, progress)
    })?;
    print_stream_report(args, &report, &file, &options, &how, h2d);
    let total: u64 = report.counts.iter().sum();
    let (top, top_count) = report.counts.iter().enumerate().max_by_key(|&(_, c)| c).map_or((0, 0), |(i, &c)| (i, c));
    println!("counts: {total} values in {} bins; the fullest is bin {top} with {top_count}", args.bins());
    if args.check {
        let start = std::time::Instant::now();
        let want = stream::histogram_file_cpu(&file, &binning)?;
        let exact = report.counts == want;
        println!(
            "CPU histogram of the file ({:.1} s): matches the GPU exactly: {}",
            start.elapsed().as_secs_f64(),
            if exact { "yes" } else { "NO" }
        );
        if !exact {
            let i = report.counts.iter().zip(&want).position(|(g, w)| g != w).unwrap_or(0);
            bail!(
                "the streamed histogram differs from the CPU's: bin {i} holds {} instead of {}",
                report.counts[i],
                want[i]
            );
        }
    }
    if let Some(out) = out {
        let path = out.path().display().to_string();
        out.write_npy(&[args.bins() as u64], &report.counts)?;
        println!("wrote the counts to {path}");
    }
    Ok(())
}

/// The read mode of `--input` after checking `--chunk` and `--piece` against it.
pub(crate) fn check_stream_flags(args: &HistogramArgs) -> anyhow::Result<ReadMode> {
    let read = args.read.unwrap_or(StreamOptions::default().read);
    if let Some(bytes) = args.chunk {
        stream::check_chunk_bytes(bytes, read)?;
    }
    if let Some(bytes) = args.piece {
        stream::check_chunk_bytes(bytes, read).map_err(|e| anyhow::anyhow!("--piece: {e}"))?;
    }
    Ok(read)
}

/// How to stream a file from the command line's options (defaults for the rest, chunks sized to
/// the device's free memory), and the readers' part of it in words.
pub(crate) fn stream_options(args: &HistogramArgs, gpu: &Gpu, read: ReadMode) -> (StreamOptions, String) {
    let defaults = StreamOptions::default();
    let streams = args.streams.map_or(defaults.streams, |s| s as usize);
    let chunk_bytes = match args.chunk {
        Some(bytes) => bytes,
        None => stream::chunk_bytes_for(gpu.info().free_memory, streams),
    };
    let lockers = if read.locks() { args.lockers.map_or(defaults.lockers, |r| r as usize) } else { 0 };
    let readers = if read.reads() { args.readers.map_or(defaults.readers, |r| r as usize) } else { 0 };
    let ahead = args.ahead.map_or(defaults.ahead, |a| a as usize);
    let piece_bytes = stream::piece_bytes_for(chunk_bytes, args.piece.unwrap_or(defaults.piece_bytes));
    let options = StreamOptions { chunk_bytes, streams, lockers, readers, piece_bytes, ahead, read };
    let piece = format_bytes(piece_bytes);
    let how = match read {
        ReadMode::Mapped => format!("{lockers} lockers, pieces of {piece}, {ahead} page-locked in place at once"),
        ReadMode::Pinned => format!("{readers} readers into pinned buffers of {piece}"),
        ReadMode::Copy => format!("{readers} readers copying pieces of {piece} into pinned buffers"),
        ReadMode::Mixed => {
            format!("pieces of {piece}: {lockers} lockers ({ahead} pieces at once) and {readers} readers")
        }
    };
    (options, how)
}

/// The lines that say how a streamed run went: chunks, rate, where the time went (`--timings`)
/// and the rate against the pinned copy measured in the same run (`h2d`, GB/s).
pub(crate) fn print_stream_report(
    args: &HistogramArgs,
    report: &stream::StreamReport,
    file: &DataFile,
    options: &StreamOptions,
    how: &str,
    h2d: f64,
) {
    println!(
        "streamed {} in {} over {} streams, {how}: {:.3} s, {:.1} GB/s",
        format_bytes(report.bytes),
        chunks_text(report, file.element().size()),
        options.streams,
        report.seconds,
        report.gb_per_s()
    );
    if args.timings {
        println!("{}", phases_text(&report.phases));
    }
    println!(
        "pinned host-to-device copy, same run ({} x {}, CUDA events): {h2d:.1} GB/s; streamed at {:.2} of it",
        H2D_PROBE.1,
        format_bytes(H2D_PROBE.0),
        report.gb_per_s() / h2d
    );
}

/// Where a streamed run's time went, one line per path (summed over its threads).
fn phases_text(p: &stream::StreamPhases) -> String {
    format!(
        "timings (s, summed over threads): setup before the clock {:.3}; lock {:.3} over {} pieces (waiting for room {:.3}), unlock {:.3} (waiting for copies {:.3}); read {:.3} over {} pieces (waiting for buffers or chunk buffers {:.3}); main thread waiting for pieces {:.3}, enqueuing {:.3}",
        p.setup_s,
        p.lock_s,
        p.locked_pieces,
        p.lock_wait_s,
        p.unlock_s,
        p.copy_wait_s,
        p.read_s,
        p.read_pieces,
        p.read_wait_s,
        p.ready_wait_s,
        p.issue_s
    )
}

/// `65 chunk(s) of 256.00 MiB (last 48.22 KiB)`: the chunks of a streamed file of `size`-byte
/// values, the last one named where it differs.
fn chunks_text(report: &stream::StreamReport, size: u64) -> String {
    let last = if report.chunks > 1 && report.last_chunk_values != report.chunk_values {
        format!(" (last {})", format_bytes(size * report.last_chunk_values))
    } else {
        String::new()
    };
    format!("{} chunk(s) of {}{last}", report.chunks, format_bytes(size * report.chunk_values))
}

/// How an input was drawn, so that rotated copies are drawn alike.
#[derive(Debug, Clone, Copy)]
pub struct Draw {
    /// Seed of the first copy.
    pub seed: u64,
    /// Distribution over the bins.
    pub dist: ValueDistribution,
    /// Element type.
    pub element: ElementType,
    /// `f32` range.
    pub range: Option<(f32, f32)>,
}

/// Checks the planned histogram of `values` against the CPU exactly (naming the first differing
/// bin), then times it (`(warmup, repeat)` runs); inputs that fit in L2 are rotated over fresh
/// copies drawn like `values` by `draw`.
pub fn measure(
    gpu: &Gpu,
    plan: &HistogramPlan,
    values: &ValuesBuf,
    binning: Binning,
    (warmup, repeat): (usize, usize),
    draw: Draw,
) -> anyhow::Result<HistogramOutcome> {
    let Draw { seed, dist, element, range } = draw;
    let values = values.as_values();
    let bins = binning.nbins as usize;
    let start = std::time::Instant::now();
    let expected = histogram::histogram_cpu_of(values, &binning);
    let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
    let counted: u64 = expected.iter().map(|&c| c as u64).sum();
    let mut sets = vec![DeviceHistogram::upload_values(gpu, values, binning)?];
    let got = histogram::run(gpu, plan, &mut sets[0])?;
    let difference = histogram::first_count_difference(&got, &expected);
    if let Some(d) = &difference {
        eprintln!("the GPU histogram differs from the CPU's: {d}");
    }
    let exact = difference.is_none();
    let rotation = rotation_sets(values.bytes().len() as u64, gpu.info().l2_bytes);
    for s in 1..rotation {
        let more =
            histogram_input_of(seed.wrapping_add(s as u64), values.len(), bins, dist, element.input_type(), range);
        sets.push(DeviceHistogram::upload_values(gpu, more.as_values(), binning)?);
    }
    let count = sets.len();
    let timing = time_launches(gpu, warmup, repeat, |i| histogram::launch(gpu, plan, &mut sets[i % count]))?;
    let input_gb_per_s = values.bytes().len() as f64 / (timing.median_ms * 1e6);
    let left_out = values.len() as u64 - counted;
    Ok(HistogramOutcome { plan: *plan, timing, input_gb_per_s, left_out, cpu_ms, exact })
}

/// The result lines of `host histogram`.
pub fn render(args: &HistogramArgs, o: &HistogramOutcome) -> String {
    let t = o.timing;
    format!(
        "histogram of {} {} values ({:?}{}) into {} bins: median {:.3} ms (min {:.3}, max {:.3}, {} runs), {:.1} GB/s input read\n\
         {} values left out (outside the range or NaN)\n\
         CPU histogram: {:.1} ms ({:.1}x the GPU time); matches the CPU exactly: {}",
        args.n.unwrap_or(0),
        args.value_type.unwrap_or(ElementType::I32).name(),
        args.dist,
        args.range.map(|(lo, hi)| format!(", range [{lo}, {hi}]")).unwrap_or_default(),
        args.bins(),
        t.median_ms,
        t.min_ms,
        t.max_ms,
        t.runs,
        o.input_gb_per_s,
        o.left_out,
        o.cpu_ms,
        o.cpu_ms / t.median_ms,
        if o.exact { "yes" } else { "NO" }
    )
}

/// The one line that says which GPU and which PTX ran.
pub(crate) fn print_device(gpu: &Gpu) {
    let info = gpu.info();
    let ptx = gpu.ptx_info();
    println!("device: {} ({} SMs); PTX {}", info.name, info.sm_count, ptx.summary());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    #[test]
    fn histogram_command_line_parses_sizes_distribution_tier_and_plan() {
        let cli = Cli::try_parse_from([
            "host",
            "histogram",
            "--n",
            "67108864",
            "--bins",
            "65536",
            "--dist",
            "zipf",
            "--tier",
            "cluster",
            "--cluster",
            "4",
            "--plan",
        ])
        .unwrap();
        let Command::Histogram(args) = cli.command else { panic!("not histogram") };
        assert_eq!(
            (args.n, args.bins(), args.dist, args.tier, args.cluster, args.plan),
            (Some(1 << 26), 65_536, ValueDistribution::Zipf, TierChoice::Cluster, Some(4), true)
        );
        assert_eq!(TierChoice::Auto.forced(), None);
        assert!(Cli::try_parse_from(["host", "histogram", "--n", "10", "--bins", "4", "--tier", "l2"]).is_err());
        assert!(Cli::try_parse_from(["host", "histogram", "--n", "10", "--bins", "4", "--dist", "pareto"]).is_err());
    }

    fn histogram_args(argv: &[&str]) -> HistogramArgs {
        let cli = Cli::try_parse_from(["host", "histogram"].iter().chain(argv)).unwrap();
        let Command::Histogram(args) = cli.command else { unreachable!() };
        args
    }

    #[test]
    fn histogram_takes_a_file_with_its_type_chunk_and_output() {
        let args = histogram_args(&[
            "--input",
            "big.bin",
            "--type",
            "i32",
            "--bins",
            "256",
            "--chunk",
            "256MiB",
            "--streams",
            "3",
            "--check",
            "--out",
            "c.npy",
        ]);
        assert_eq!(args.input, Some(PathBuf::from("big.bin")));
        assert_eq!(
            (args.value_type, args.chunk, args.streams, args.check),
            (Some(ElementType::I32), Some(256 << 20), Some(3), true)
        );
        let parse = |argv: &[&str]| Cli::try_parse_from(["host", "histogram"].iter().chain(argv)).map(|_| ());
        assert!(parse(&["--n", "10", "--input", "a.npy", "--bins", "4"]).is_err(), "--n and --input");
        assert!(parse(&["--input", "a.npy", "--bins", "4", "--type", "f64"]).is_err(), "a type the kernels lack");
        assert!(parse(&["--input", "a.npy", "--bins", "4", "--chunk", "lots"]).is_err());
        assert!(parse(&["--input", "a.npy", "--bins", "4", "--streams", "1"]).is_err(), "one stream cannot overlap");
    }

    #[test]
    fn file_options_without_a_file_are_refused_before_a_gpu_is_needed() {
        let err = run(0, &histogram_args(&["--n", "10", "--bins", "4", "--out", "c.npy"])).unwrap_err().to_string();
        assert_eq!(err, "--out applies to --input files only");
        let err = run(0, &histogram_args(&["--n", "10", "--bins", "4", "--chunk", "1MiB"])).unwrap_err().to_string();
        assert!(err.starts_with("--chunk"), "{err}");
        for flag in [
            ["--streams", "3"],
            ["--read", "pinned"],
            ["--readers", "8"],
            ["--lockers", "2"],
            ["--ahead", "8"],
            ["--piece", "1MiB"],
        ] {
            let err = run(0, &histogram_args(&["--n", "10", "--bins", "4", flag[0], flag[1]])).unwrap_err().to_string();
            assert_eq!(err, format!("{} applies to --input files only", flag[0]));
        }
    }

    #[test]
    fn bad_input_files_are_reported_before_a_gpu_is_needed() {
        let dir = tempfile::tempdir().unwrap();
        let (input, out) = (dir.path().join("v.npy"), dir.path().join("counts.npy"));
        crate::io::write_npy(&input, &[2], &[1.0f64, 2.0]).unwrap();
        let path = input.to_str().unwrap();
        let err = run(0, &histogram_args(&["--input", path, "--bins", "4", "--out", out.to_str().unwrap()]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("v.npy") && err.contains("float64") && err.contains("i32 ('<i4')"), "{err}");
        assert!(!out.exists());
        std::fs::write(&input, [0u8; 7]).unwrap();
        let err = run(0, &histogram_args(&["--input", path, "--bins", "4", "--type", "i32"])).unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
    }

    #[test]
    fn type_and_range_parse_and_bad_ones_are_refused_before_a_gpu_is_needed() {
        let parse = |extra: &[&str]| {
            let mut argv = vec!["host", "histogram", "--n", "10", "--bins", "4"];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv).map(|cli| match cli.command {
                Command::Histogram(args) => args,
                _ => unreachable!(),
            })
        };
        let args = parse(&["--type", "f32", "--range", "-1.5,2"]).unwrap();
        assert_eq!((args.value_type, args.range), (Some(ElementType::F32), Some((-1.5, 2.0))));
        assert_eq!(parse(&["--type", "u8"]).unwrap().value_type, Some(ElementType::U8));
        assert!(parse(&["--type", "f64"]).is_err());
        assert!(parse(&["--range", "1"]).is_err());
        assert!(parse(&["--range", "a,b"]).is_err());
        let refused = |extra: &[&str]| run(0, &parse(extra).unwrap()).unwrap_err().to_string();
        assert!(refused(&["--type", "f32"]).contains("need a range"));
        assert!(refused(&["--type", "f32", "--range", "2,1"]).contains("LO must be below HI"));
        assert!(refused(&["--type", "u16", "--range", "0,1"]).contains("f32 values only"));
        assert!(refused(&["--copies", "3"]).contains("power of two"));
        assert!(refused(&["--tier", "global", "--copies", "2"]).contains("shared tier only"));
    }

    #[test]
    fn zero_bins_are_refused_before_a_gpu_is_needed() {
        let cli = Cli::try_parse_from(["host", "histogram", "--n", "10", "--bins", "0"]).unwrap();
        let Command::Histogram(args) = cli.command else { unreachable!() };
        let err = run(0, &args).unwrap_err().to_string();
        assert!(err.contains("bins is 0"), "{err}");
    }

    #[test]
    fn render_reports_time_rate_cpu_ratio_and_exactness() {
        let args = Cli::try_parse_from(["host", "histogram", "--n", "1000", "--bins", "256"]).unwrap();
        let Command::Histogram(args) = args.command else { unreachable!() };
        let plan = histogram::plan_for(&histogram::HistogramLimits::H100, 256, PlanRequest::default()).unwrap();
        let o = HistogramOutcome {
            plan,
            timing: Timing::from_samples(vec![0.5]).unwrap(),
            input_gb_per_s: 8e-3,
            left_out: 3,
            cpu_ms: 5.0,
            exact: true,
        };
        let text = render(&args, &o);
        assert!(text.contains("median 0.500 ms") && text.contains("10.0x") && text.contains("exactly: yes"), "{text}");
        assert!(text.contains("3 values left out") && text.contains("1000 i32 values"), "{text}");
    }

    #[test]
    fn a_bad_chunk_size_is_refused_before_a_gpu_is_needed() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("v.bin");
        std::fs::write(&input, [0u8; 64]).unwrap();
        let path = input.to_str().unwrap();
        let refused = |extra: &[&str]| {
            let mut argv = vec!["--input", path, "--type", "i32", "--bins", "4"];
            argv.extend_from_slice(extra);
            run(0, &histogram_args(&argv)).unwrap_err().to_string()
        };
        let err = refused(&["--chunk", "1000", "--read", "mapped"]);
        assert!(err.contains("a chunk of 1000 bytes") && err.contains("multiple of 65536"), "{err}");
        for read in ["copy", "pinned"] {
            let err = refused(&["--chunk", "1000", "--read", read]);
            assert!(err.contains("multiple of 16 bytes"), "{err}");
        }
        let err = refused(&["--chunk", "1000"]);
        assert!(err.contains("multiple of 16 bytes"), "the default copies: {err}");
        let err = refused(&["--piece", "1000", "--read", "mixed"]);
        assert!(err.starts_with("--piece") && err.contains("multiple of 65536"), "{err}");
    }

    #[test]
    fn the_chunk_line_names_the_true_last_chunk_when_the_first_is_shortened() {
        let report = |n: u64, chunk: u64, lead: u64| {
            let chunks = stream::plan_chunks(n, chunk, lead, stream::FLUSH_LIMIT).unwrap();
            stream::StreamReport {
                counts: vec![],
                values: n,
                bytes: 4 * n,
                chunks: chunks.len(),
                chunk_values: chunk,
                last_chunk_values: chunks.last().map_or(0, |c| c.len),
                seconds: 1.0,
                phases: stream::StreamPhases::default(),
            }
        };
        // Chunks of 5, 8 and 7 values: the last is 28 bytes, not 20 % 8 values' 16.
        assert_eq!(chunks_text(&report(20, 8, 3), 4), "3 chunk(s) of 32 B (last 28 B)");
        // Chunks of 5, 8 and 3 values: the last is short although 16 values are whole chunks.
        assert_eq!(chunks_text(&report(16, 8, 3), 4), "3 chunk(s) of 32 B (last 12 B)");
        assert_eq!(chunks_text(&report(16, 8, 0), 4), "2 chunk(s) of 32 B");
    }
}
