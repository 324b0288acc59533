//! `host histogram`: plan, run and time the histogram, and compare it with the CPU exactly.

use crate::gpu::Gpu;
use crate::histogram::{self, Binning, DeviceHistogram, HistogramPlan, HistogramTier, PlanRequest, ValuesBuf};
use crate::io::ElementType;
use crate::reference::{ValueDistribution, histogram_input_of};
use crate::timing::{Timing, rotation_sets, time_launches};
use anyhow::bail;
use clap::{Args, ValueEnum};

/// `--tier`: the planner's choice, or a forced tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TierChoice {
    /// Shared, cluster or global, by the bin count and the device.
    Auto,
    /// One block's shared memory.
    Shared,
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
            Self::Cluster => Some(HistogramTier::Cluster),
            Self::Bucketed => Some(HistogramTier::Bucketed),
            Self::Global => Some(HistogramTier::Global),
        }
    }
}

/// Arguments of `host histogram`.
#[derive(Args, Debug)]
pub struct HistogramArgs {
    /// Number of input values (0 is allowed: every count is 0).
    #[arg(long)]
    pub n: usize,
    /// Number of bins.
    #[arg(long)]
    pub bins: usize,
    /// How the input values are drawn.
    #[arg(long, value_enum, default_value_t = ValueDistribution::Uniform)]
    pub dist: ValueDistribution,
    /// Input element type: integers count value v in bin v (clamped into the edge bins); f32
    /// counts in even bins over --range.
    #[arg(long = "type", value_enum, default_value_t = ElementType::I32)]
    pub element: ElementType,
    /// f32 only: LO,HI; values in [LO, HI] count (HI in the last bin), others and NaN are left out.
    #[arg(long, value_parser = parse_range, allow_hyphen_values = true)]
    pub range: Option<(f32, f32)>,
    /// Private copies of the histogram per block (shared tier; a power of two up to 32).
    #[arg(long)]
    pub copies: Option<u32>,
    /// Merge equal bins within a warp before adding (default: the planner's choice).
    #[arg(long)]
    pub aggregate: Option<bool>,
    /// Where the counters live: chosen by the planner, or forced.
    #[arg(long, value_enum, default_value_t = TierChoice::Auto)]
    pub tier: TierChoice,
    /// Blocks per cluster for the cluster tier (default: the smallest that holds the bins).
    #[arg(long)]
    pub cluster: Option<u32>,
    /// Threads per block (default: the planner's).
    #[arg(long)]
    pub threads: Option<u32>,
    /// Print the plan and stop.
    #[arg(long)]
    pub plan: bool,
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
    // Arguments are checked before the GPU is opened, so a bad one is reported as such anywhere.
    let binning = histogram::binning_for(args.element.input_type(), args.bins, args.range)?;
    let request = PlanRequest {
        tier: args.tier.forced(),
        cluster_size: args.cluster,
        threads_per_block: args.threads,
        copies: args.copies,
        aggregate: args.aggregate,
    };
    // Requests the planner refuses on any device (bad copies, threads) are reported before the
    // GPU is opened.
    histogram::plan_for(&histogram::HistogramLimits::H100, args.bins, request)?;
    let gpu = Gpu::open(device)?;
    let plan = histogram::plan_with(&gpu, args.bins, request)?;
    let limits = histogram::HistogramLimits::of(&gpu)?;
    let info = gpu.info();
    println!(
        "device: {} ({} SMs); PTX {} ({} build)",
        info.name,
        info.sm_count,
        gpu.ptx_info().arch,
        gpu.ptx_info().profile
    );
    println!("plan: {plan}");
    println!("why: {}", plan.reason(&limits, args.tier.forced().is_some() || args.cluster.is_some()));
    if args.plan {
        return Ok(());
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let draw = Draw { seed, dist: args.dist, element: args.element, range: args.range };
    let values = histogram_input_of(seed, args.n, args.bins, args.dist, args.element.input_type(), args.range);
    let timing = (args.warmup as usize, args.repeat as usize);
    let outcome = measure(&gpu, &plan, &values, binning, timing, draw)?;
    println!("{}", render(args, &outcome));
    if !outcome.exact {
        bail!("the GPU histogram differs from the CPU's");
    }
    Ok(())
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
        args.n,
        args.element.name(),
        args.dist,
        args.range.map(|(lo, hi)| format!(", range [{lo}, {hi}]")).unwrap_or_default(),
        args.bins,
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
            (args.n, args.bins, args.dist, args.tier, args.cluster, args.plan),
            (1 << 26, 65_536, ValueDistribution::Zipf, TierChoice::Cluster, Some(4), true)
        );
        assert_eq!(TierChoice::Auto.forced(), None);
        assert!(Cli::try_parse_from(["host", "histogram", "--n", "10", "--bins", "4", "--tier", "l2"]).is_err());
        assert!(Cli::try_parse_from(["host", "histogram", "--n", "10", "--bins", "4", "--dist", "pareto"]).is_err());
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
        assert_eq!((args.element, args.range), (ElementType::F32, Some((-1.5, 2.0))));
        assert_eq!(parse(&["--type", "u8"]).unwrap().element, ElementType::U8);
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
}
