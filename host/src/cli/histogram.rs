//! `host histogram`: plan, run and time the histogram, and compare it with the CPU exactly.

use crate::gpu::Gpu;
use crate::histogram::{self, DeviceHistogram, HistogramPlan, HistogramTier, PlanRequest};
use crate::reference::{ValueDistribution, histogram_cpu, histogram_input};
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

/// The measured outcome of one histogram configuration.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HistogramOutcome {
    /// The plan that ran.
    pub plan: HistogramPlan,
    /// CUDA-event timings of zeroing the counters plus the kernel.
    pub timing: Timing,
    /// Input read rate at the median, GB/s (4 bytes per value).
    pub input_gb_per_s: f64,
    /// CPU histogram wall time, ms.
    pub cpu_ms: f64,
    /// Whether every count equals the CPU's.
    pub exact: bool,
}

/// Runs the command.
pub fn run(device: usize, args: &HistogramArgs) -> anyhow::Result<()> {
    // Arguments are checked before the GPU is opened, so a bad one is reported as such anywhere.
    histogram::check_bins(args.bins)?;
    let gpu = Gpu::open(device)?;
    let request = PlanRequest { tier: args.tier.forced(), cluster_size: args.cluster, threads_per_block: args.threads };
    let plan = histogram::plan_with(&gpu, args.bins, request)?;
    let info = gpu.info();
    println!(
        "device: {} ({} SMs); PTX {} ({} build)",
        info.name,
        info.sm_count,
        gpu.ptx_info().arch,
        gpu.ptx_info().profile
    );
    println!("plan: {plan}");
    if args.plan {
        return Ok(());
    }
    let seed = args.seed.unwrap_or_else(rand::random);
    let values = histogram_input(seed, args.n, args.bins, args.dist);
    let timing = (args.warmup as usize, args.repeat as usize);
    let outcome = measure(&gpu, &plan, &values, args.bins, timing, (seed, args.dist))?;
    println!("{}", render(args, &outcome));
    if !outcome.exact {
        bail!("the GPU histogram differs from the CPU's");
    }
    Ok(())
}

/// Checks the planned histogram of `values` against the CPU exactly (naming the first differing
/// bin), then times it (`(warmup, repeat)` runs); inputs that fit in L2 are rotated over fresh
/// copies drawn like `values` from `(seed, dist)`.
pub fn measure(
    gpu: &Gpu,
    plan: &HistogramPlan,
    values: &[i32],
    bins: usize,
    (warmup, repeat): (usize, usize),
    (seed, dist): (u64, ValueDistribution),
) -> anyhow::Result<HistogramOutcome> {
    let start = std::time::Instant::now();
    let expected = histogram_cpu(values, bins);
    let cpu_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut sets = vec![DeviceHistogram::upload(gpu, values, bins)?];
    let got = histogram::run(gpu, plan, &mut sets[0])?;
    let difference = histogram::first_count_difference(&got, &expected);
    if let Some(d) = &difference {
        eprintln!("the GPU histogram differs from the CPU's: {d}");
    }
    let exact = difference.is_none();
    let rotation = rotation_sets(4 * values.len() as u64, gpu.info().l2_bytes);
    for s in 1..rotation {
        let more = histogram_input(seed.wrapping_add(s as u64), values.len(), bins, dist);
        sets.push(DeviceHistogram::upload(gpu, &more, bins)?);
    }
    let count = sets.len();
    let timing = time_launches(gpu, warmup, repeat, |i| histogram::launch(gpu, plan, &mut sets[i % count]))?;
    let input_gb_per_s = crate::bench::report::input_gb_per_s(values.len(), timing.median_ms);
    Ok(HistogramOutcome { plan: *plan, timing, input_gb_per_s, cpu_ms, exact })
}

/// The result lines of `host histogram`.
pub fn render(args: &HistogramArgs, o: &HistogramOutcome) -> String {
    let t = o.timing;
    format!(
        "histogram of {} values ({:?}) into {} bins: median {:.3} ms (min {:.3}, max {:.3}, {} runs), {:.1} GB/s input read\n\
         CPU histogram: {:.1} ms ({:.1}x the GPU time); matches the CPU exactly: {}",
        args.n,
        args.dist,
        args.bins,
        t.median_ms,
        t.min_ms,
        t.max_ms,
        t.runs,
        o.input_gb_per_s,
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
            cpu_ms: 5.0,
            exact: true,
        };
        let text = render(&args, &o);
        assert!(text.contains("median 0.500 ms") && text.contains("10.0x") && text.contains("exactly: yes"), "{text}");
    }
}
